"""The test cases of a result, as a CI system reads them: what passed, what failed and why,
what could not be scored and why. `junit` writes them as XML, `markdown` lists the worst.

Rule (one case per task, or per conversation):

- A case is a task when its conversations carry a `task_id`: the conversations of one
  assistant sharing a task_id are the attempts of one case (`flakiness.task_key`, per
  assistant). A conversation without a task_id is a case of its own.
- A case *failed* when any scored conversation is not fully correct: a task passes only
  when every scored attempt passed (pass^k's reading: an agent that sometimes fails a task
  is not reliable on it; a flaky task is a failure, as `--max-flaky-tasks 0` would make it).
  Its reasons are each failing attempt's (`failure_reasons`); its unscored attempts are
  noted (`notes`).
- Else it is *skipped* when any of its conversations is unscored (none scored, or some
  attempts not measured: what was not measured never reads as a pass); its reasons are its
  required unscored check results' (`unscored_reasons`).
- Else it *passed*.

Every reason is a check result's `reason` (`ConversationMetrics.checks`, docs/checks.md), on
one line; a turn's is prefixed with the turn, numbered from 1 ("turn 2 (q2): …"; the rows of
`rows` give the 0-based index of `interactions`). No check is named here: a plug-in check's
results read like the built-in ones'. Pure: text from a result, no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fair_forge_core.flakiness import task_key
from fair_forge_core.schemas import CheckResult, ConversationMetrics

Outcome = Literal["passed", "failed", "skipped"]
CaseKind = Literal["task", "conversation", "metric", "verdict"]
"""What a case is: a task's attempts, a conversation, and in a comparison a metric or the verdict."""


def _turn_name(index: int, conversation: ConversationMetrics) -> str:
    """`turn 2 (q2)`: the turn numbered from 1, with its qa_id when the result has per-turn detail."""
    interactions = conversation.interactions
    qa_id = interactions[index].qa_id if interactions is not None and index < len(interactions) else None
    return f"turn {index + 1}" + (f" ({qa_id})" if qa_id is not None else "")


def _one_line(text: str) -> str:
    """A reason on one line (newlines folded): each reason is one line of a JUnit failure's text."""
    return " ".join(text.split())


def _said(conversation: ConversationMetrics, result: CheckResult) -> str:
    """A result's reason as a case lists it: a turn's prefixed with the turn, the conversation's as it is."""
    reason = _one_line(result.reason) or result.outcome
    return reason if result.turn is None else f"{_turn_name(result.turn, conversation)}: {reason}"


def failure_reasons(conversation: ConversationMetrics) -> list[str]:
    """Why a scored conversation is not fully correct, in the order of its `checks`
    (`checks.ordered`: its turns' results, turn by turn, then its own):

    - on each wrong turn (one with a required result that failed), every result that failed —
      the advisory ones too, since they say what else went wrong in that turn (a wrong answer
      and advisory tools judged wrong both show);
    - then each of the conversation's own required results that failed (an advisory one
      decides nothing and is not a reason).

    Without per-turn detail (`interactions` null: the turn results were left out with it), each
    turn not in `correct_indices` is `turn N: not correct (the result has no per-turn detail)`.
    A conversation not fully correct with no failed result to show (a result written before
    `checks` existed) says `not fully correct`. Empty for a fully correct or an unscored
    conversation."""
    if not conversation.is_scored or conversation.is_fully_correct:
        return []
    results = conversation.checks
    wrong_turns = {r.turn for r in results if r.turn is not None and r.required and r.outcome == "failed"}
    reasons = []
    if conversation.interactions is None:
        correct = set(conversation.correct_indices)
        reasons += [
            f"turn {index + 1}: not correct (the result has no per-turn detail)"
            for index in range(conversation.total_interactions)
            if index not in correct
        ]
    reasons += [
        _said(conversation, r)
        for r in results
        if r.outcome == "failed" and (r.required if r.turn is None else r.turn in wrong_turns)
    ]
    return reasons or ["not fully correct"]


def unscored_reasons(conversation: ConversationMetrics) -> list[str]:
    """Why a conversation is unscored: for one unscored before judging (an attempt left unjoined),
    its cause and detail alone; else each of its required results that is unscored, in the order
    of its `checks` (a turn's prefixed with the turn). Without per-turn detail, the count of its
    unscored turns comes first (`N turn(s) unscored (the result has no per-turn detail)`), then
    its own unscored required results. Empty for a scored conversation."""
    if conversation.is_scored:
        return []
    if conversation.unscored is not None:  # unscored before judging: its cause, not its results'
        return [f"{conversation.unscored.cause}: {conversation.unscored.detail}"]
    reasons = []
    if conversation.interactions is None and conversation.unscored_interactions:
        reasons.append(f"{conversation.unscored_interactions} turn(s) unscored (the result has no per-turn detail)")
    reasons += [_said(conversation, r) for r in conversation.checks if r.required and r.outcome == "unscored"]
    return reasons or ["unscored"]


@dataclass(frozen=True)
class Case:
    """One test case: a task's attempts or one conversation (module docstring); in a comparison
    (`junit.junit_comparison`) a metric or the verdict, with no conversations."""

    assistant_id: str
    kind: CaseKind
    name: str
    conversations: tuple[ConversationMetrics, ...]
    outcome: Outcome
    reasons: tuple[str, ...]
    """Failed: each failing attempt's reasons; skipped: why nothing was scored; passed: none."""
    notes: tuple[str, ...]
    """Of a task with scored attempts: its unscored attempts, with why."""

    @property
    def scored(self) -> int:
        return sum(1 for c in self.conversations if c.is_scored)

    @property
    def passed(self) -> int:
        return sum(1 for c in self.conversations if c.is_scored and c.is_fully_correct)

    @property
    def message(self) -> str:
        """One line: what happened, and the first reason."""
        first = self.reasons[0] if self.reasons else ""
        if self.outcome == "skipped":
            return f"unscored: {first}"
        if self.outcome == "passed":
            return f"{self.passed} of {self.scored} scored attempt(s) passed" if self.kind == "task" else "passed"
        if self.kind == "task":
            return f"{self.passed} of {self.scored} scored attempt(s) passed; {first}"
        return first


def _case(
    assistant: str, kind: Literal["task", "conversation"], name: str, members: Sequence[ConversationMetrics]
) -> Case:
    scored = [c for c in members if c.is_scored]
    several = len(members) > 1

    def labelled(conversation: ConversationMetrics, reasons: list[str]) -> list[str]:
        # A task's reasons name the attempt they belong to.
        return [f"{conversation.session_id}: {reason}" if several else reason for reason in reasons]

    failing = [c for c in scored if not c.is_fully_correct]
    if not failing and len(scored) < len(members):
        reasons = [r for c in members if not c.is_scored for r in labelled(c, unscored_reasons(c))]
        return Case(assistant, kind, name, tuple(members), "skipped", tuple(reasons), ())
    reasons = [r for c in failing for r in labelled(c, failure_reasons(c))]
    notes = [
        f"{c.session_id}: unscored: {reason}" for c in members if not c.is_scored for reason in unscored_reasons(c)
    ]
    return Case(assistant, kind, name, tuple(members), "failed" if failing else "passed", tuple(reasons), tuple(notes))


def cases(conversations: Sequence[ConversationMetrics]) -> list[Case]:
    """The cases of a result's conversations, in the order their first conversation comes
    (module docstring). Names are `task <task_id>` and `conversation <session_id>`; a
    conversation whose session_id another conversation of its assistant shares is named with
    its position too (`conversation s1 [4]`), so that no two cases of a suite share a name."""
    groups: dict[tuple[str, str | int], list[ConversationMetrics]] = {}
    for index, conversation in enumerate(conversations):
        groups.setdefault((conversation.assistant_id, task_key(index, conversation)), []).append(conversation)
    sessions: Counter[tuple[str, str]] = Counter(
        (c.assistant_id, c.session_id) for c in conversations if c.task_id is None
    )
    result = []
    for (assistant, key), members in groups.items():
        if isinstance(key, str):
            result.append(_case(assistant, "task", f"task {key}", members))
            continue
        session = members[0].session_id
        name = f"conversation {session}" + (f" [{key}]" if sessions[(assistant, session)] > 1 else "")
        result.append(_case(assistant, "conversation", name, members))
    return result
