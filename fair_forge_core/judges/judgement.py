"""What the judge of an evaluation says of one question (a turn's answer, a conversation's goal, a
criterion): a `TurnJudgement`, its score or why there is none, the why as a typed
`JudgementCause` set where the judge's exception is caught, never read back from its wording."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fair_forge_core.schemas import JudgeVote

JudgementCause = Literal["abstained", "batch_expired", "cost_cap", "deadline", "judge_error"]
"""Why a judgement gave no score: the judge declined (`judges.base.JudgeAbstained`, in any words),
the cost cap or the deadline stopped it before its call, the provider's batch ended before it answered
(`judges.batch`), or the judge failed (a provider that
failed after its retries, a reply that never parsed)."""

CAUSE_PRECEDENCE: tuple[JudgementCause, ...] = ("deadline", "cost_cap", "batch_expired", "abstained", "judge_error")
"""The order in which the causes of several failed judgements name the cause of the one they make
up (a panel's): what stopped the run before a judge could answer comes before the judge's own say."""


def first_cause(causes: list[JudgementCause]) -> JudgementCause:
    """The cause of a judgement made of judgements that failed for `causes` (at least one): the
    first of them in `CAUSE_PRECEDENCE`."""
    return min(causes, key=CAUSE_PRECEDENCE.index)


@dataclass(frozen=True)
class TurnJudgement:
    """What the judge said of one question: a score in [0, 1] and its reasoning, or why there is
    none (`error`, the message, and `cause`, its type).

    A score that is not a finite number in [0, 1] (NaN, 1.5, a bool) is a `ValueError`
    here: counted as wrong or right it would corrupt c silently. An unscored judgement without a
    `cause` is a judge error.
    """

    score: float | None
    reasoning: str | None = None
    error: str | None = None
    judged_by: Literal["offline", "llm"] | None = None
    """Under `config.judge_cascade`, the judge that decided the turn (`judges.cascade`); else None."""
    votes: tuple[JudgeVote, ...] | None = None
    """When the turn was judged more than once (`judges.panel`): each connector's judgements."""
    agreement: float | None = None
    """The share of those judgements on the side of the threshold `score` is on (None: unscored)."""
    cause: JudgementCause | None = None

    def __post_init__(self) -> None:
        score = self.score
        if score is None:
            if self.cause is None:
                object.__setattr__(self, "cause", "judge_error")
            return
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= score <= 1.0:
            raise ValueError(f"a judge score must be a number in [0, 1], got {score!r}")
