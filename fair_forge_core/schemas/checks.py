"""`CheckResult`: one part of a conversation's verdict, as every output reads it (docs/checks.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, PrivateAttr

from fair_forge_core.schemas.agent_error import AgentErrorCause
from fair_forge_core.schemas.base import ResultModel

CheckScope = Literal["turn", "conversation"]
CheckOutcome = Literal["passed", "failed", "unscored"]
CheckCause = Literal[
    "abstained",
    "batch_expired",
    "cost_cap",
    "deadline",
    "judge_error",
    "not_measured",
    "not_joined",
    "state_not_reported",
    "turns_differ",
    AgentErrorCause,
]
"""Why a result is `unscored`: a judgement's cause (`judges.judgement.JudgementCause`: the judge
abstained, the cost cap or the deadline stopped it, the provider's batch ended first, the judge failed), `not_measured` (the input
held no evidence to decide on: tools whose every measured dimension has no weight), or the cause
of a conversation unscored before judging (`schemas.UnscoredCause`, an agent run's failed attempt's
`AgentErrorCause` among them)."""


class CheckResult(ResultModel):
    """One part of a verdict (docs/checks.md "The verdict").

    `name` is what it is exported as (`gen_ai.evaluation.name`); `scope` and `turn` (0-based,
    null for a conversation's) where it applies; `outcome` passed / failed, or unscored with a
    typed `cause`; `required` whether it decides the verdict (an advisory result is reported and
    decides nothing); `score` in [0, 1] when the check has one; `reason`, the one sentence every
    output prints; `detail`, a check's rich view when no other field of the result carries it
    (the built-in checks' views are today's fields: `interactions[i]`, `tool_correctness_scores`,
    `tool_policy`, `state_check`, `goal_check`)."""

    model_config = ConfigDict(frozen=True)

    name: str
    scope: CheckScope
    turn: int | None
    outcome: CheckOutcome
    required: bool
    score: float | None
    reason: str
    cause: CheckCause | None
    detail: dict[str, Any] | None
    _view: Any = PrivateAttr(default=None)
    """The built-in check's rich object (a `TurnJudgement`, a `ToolCorrectnessScore`, …) that the
    conversation's wire fields are filled from (`metrics.conversation_metrics`); not serialised:
    those fields carry it."""

    def __eq__(self, other: object) -> bool:
        """Equal fields (the private view is how a result was made, not what it says)."""
        if not isinstance(other, CheckResult):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = ResultModel.__hash__

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def unscored(self) -> bool:
        return self.outcome == "unscored"
