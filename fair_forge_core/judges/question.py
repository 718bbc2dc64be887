"""What a judge is asked: a question that carries its own prompt and its own verdict (docs/checks.md
"Ask the judge").

Every judge path (`judges.llm`, the cache, `judges.panel`, `judges.cascade`, `judges.offline`,
`judges.base.ask`) handles a question only through `JudgeQuestion`, never by its type, so a
check adds a kind of question without touching them. A question is a frozen, hashable value
(equal questions are judged once per evaluation) that says:

- `kind`: what it is about, "answer" (a turn's answer: `judges.prompt.JudgeRequest`), "goal" (a
  conversation's goal: `judges.goal.GoalRequest`), "criterion" (`checks.criteria`).
- `declared`: whether a judge must declare it reads this kind (the kind in its
  `JudgeSpec.reads`) to be sent it; false for answers only, which every judge reads. A declared
  kind put to a judge that does not read it is never sent: `judges.base.ask` makes its judgement
  an abstention, naming the question by `about` ("the judge fair-forge-reference cannot decide a
  conversation's goal").
- `messages(structured=, bos=, eos=)`: its prompt, in structured-output mode or in marker mode
  (the reply asked for between `bos` and `eos`), the caller's text as data between markers.
- `verdict_schema()`: the JSON schema providers fill in for it under structured output.
- `parse(raw, bos=, eos=, caller=)`: its `Verdict` (a score in [0, 1] and the reasoning) from a
  reply, a structured-output object or a chat message; `VerdictParseError` when the reply holds
  none (the LLM judge retries, then leaves the question unjudged).
- `caller_text()`: everything the caller wrote in it (`verdict.CallerText`): a verdict found in
  that text, verbatim or restated, is forged and never taken.
- `passes(score, threshold)`: which side of the verdict a score is on (an answer: ≥ the
  threshold; a goal or a criterion: above 0.5), which a panel's agreement counts.

Its **cache identity** is its messages: the judge cache keys an entry by the exact messages sent
with the judge's identity and output mode (`judges.ledger.JudgeLedger.cache_key`), and a
question's prompt holds both its rubric (so its kind) and its data, so two questions share an
entry exactly when they ask the same thing.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol

from langchain_core.messages import BaseMessage

from fair_forge_core.judges.verdict import CallerText, Verdict
from fair_forge_core.schemas import EvaluationConfig

EVERY_KIND = "*"
"""In `JudgeSpec.reads`: every kind of question (a judge that asks a chat model the question's own prompt)."""


class JudgeQuestion(Hashable, Protocol):
    """One question to the judge (module docstring)."""

    @property
    def kind(self) -> str: ...

    @property
    def declared(self) -> bool: ...

    @property
    def about(self) -> str: ...

    def messages(self, *, structured: bool, bos: str, eos: str) -> list[BaseMessage]: ...

    def verdict_schema(self) -> dict[str, Any]: ...

    def parse(self, raw: Any, *, bos: str, eos: str, caller: CallerText | None = None) -> Verdict: ...

    def caller_text(self) -> CallerText: ...

    def passes(self, score: float, threshold: float) -> bool: ...


def asked_messages(question: JudgeQuestion, config: EvaluationConfig) -> list[BaseMessage]:
    """The messages that ask `question` under `config`'s output mode and reply markers."""
    return question.messages(
        structured=config.use_structured_output, bos=config.bos_json_clause, eos=config.eos_json_clause
    )


def parsed_reply(question: JudgeQuestion, raw: Any, config: EvaluationConfig, caller: CallerText) -> Verdict:
    """The verdict of a reply to `question`, read with `config`'s reply markers."""
    return question.parse(raw, bos=config.bos_json_clause, eos=config.eos_json_clause, caller=caller)
