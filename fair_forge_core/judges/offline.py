"""The offline judge as a plain judge: the reference rules (`judges.reference.rules.score_answer`)
applied to a turn's query, answer and ground truth, with no prompt written and read back, no
retries and no limiter.

`ReferenceJudge` (the LangChain chat model a request names to get the offline judge) stays the
connector: the registry gives chat models of that class this judge (`register_judge`). Its
verdicts are the ones `ReferenceJudge` gives through the LLM judge's path (the same rules on the
same three texts), and so is what the evaluation counts:

- a scored turn counts one judge call, without token usage (`JudgeLedger.record(None)`), as
  `ReferenceJudge`'s reply did; an abstention (`JudgeAbstained`, the rules cannot decide)
  counts none, as before: it raised before a reply;
- the judge cache, when the evaluation has one: the same entries as before (the key is the
  messages the LLM path would have sent, so they are built then, and only then), read first;
- the deadline: once it has passed, a turn not in the cache is unscored with "time budget
  exhausted before this turn could be judged", as every judge's;
- the cost cap: the offline judge costs nothing, so it reserves nothing;
- any question but a turn's answer (a conversation's goal, a criterion: `judges.question`): no
  rule of its decides one; its spec `reads` answers only, so `judges.base.ask` makes every other
  question an abstention;
- a long turn (over `INLINE_MAX_CHARS` characters) is scored in a worker thread, so that it
  does not hold the event loop.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from langchain_core.language_models.chat_models import BaseChatModel

from fair_forge_core.judges.base import (
    DEADLINE_PHRASE,
    JudgeAbstained,
    JudgeDeadlineReached,
    JudgeSpec,
    RunContext,
    register_judge,
)
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.prompt import JudgeRequest
from fair_forge_core.judges.question import asked_messages
from fair_forge_core.judges.reference.model import ABSTAIN_MESSAGE, INLINE_MAX_CHARS, ReferenceJudge
from fair_forge_core.judges.reference.rules import score_answer
from fair_forge_core.judges.usage import judge_model_name
from fair_forge_core.judges.verdict import Verdict
from fair_forge_core.schemas import EvaluationConfig


@dataclass
class RulesJudge:
    """The offline judge (module docstring). `model` is the name its votes and usage carry."""

    config: EvaluationConfig
    context: RunContext
    model: str = "fair-forge-reference"

    def spec(self) -> JudgeSpec:
        return JudgeSpec(kind="reference", model=self.model, offline=True)

    async def judge(self, request: JudgeQuestion, sample: int = 0) -> Verdict:
        # Its spec reads answers only: no other question is put to it (`judges.base.ask`).
        assert isinstance(request, JudgeRequest), "only answers are put to it (`judges.base.ask`)"
        context, ledger = self.context, self.context.ledger
        key = None
        if ledger is not None and ledger.cache is not None:
            key = ledger.cache_key(asked_messages(request, self.config), sample)
            cached = await ledger.lookup(key)
            if cached is not None:
                return cached
        if context.deadline is not None and time.monotonic() >= context.deadline:
            context.telemetry.errors += 1
            raise JudgeDeadlineReached(f"{DEADLINE_PHRASE} before this turn could be judged")
        context.telemetry.calls += 1
        if len(request.query) + len(request.answer) + len(request.ground_truth) <= INLINE_MAX_CHARS:
            score, reasoning = score_answer(request.query, request.answer, request.ground_truth)
        else:
            score, reasoning = await asyncio.to_thread(
                score_answer, request.query, request.answer, request.ground_truth
            )
        if score is None:  # not a failure of the judge's: telemetry counts no error, as for the chat model
            raise JudgeAbstained(ABSTAIN_MESSAGE, reasoning)
        verdict = Verdict(score=score, reasoning=reasoning)
        if ledger is not None:
            ledger.record(None)  # one call that replied, with no token usage: what the chat model reported
            if key is not None:
                await ledger.store(key, verdict)
        return verdict


@register_judge("reference", model_class=ReferenceJudge, offline=True)
def rules_judge(model: BaseChatModel, config: EvaluationConfig, context: RunContext) -> RulesJudge:
    """The offline judge of a `ReferenceJudge` connector (its model name, its rules)."""
    return RulesJudge(config=config, context=context, model=judge_model_name(model))
