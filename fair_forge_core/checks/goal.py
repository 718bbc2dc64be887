"""`goal`: the judge's verdict on a conversation's `goal` as a whole (docs/how-to/task-checks.md
"Judge the goal"; `judges.goal` holds its question and prompt). Required under
`config.require_goal`, advisory otherwise: an unjudged advisory goal leaves the conversation scored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from fair_forge_core.checks.base import judged_outcome, one_line, register_check, result
from fair_forge_core.judges.goal import GoalRequest, goal_achieved, goal_prompt_hash, goal_request
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.schemas import CheckResult, Dataset, EvaluationConfig, GoalCheck


def goal_check(goal: str, judgement: TurnJudgement, required: bool) -> GoalCheck:
    """The `GoalCheck` of a conversation's goal from its judgement: achieved when its combined
    score is above 0.5 (`judges.goal.goal_achieved`)."""
    return GoalCheck(
        goal=goal,
        goal_achieved=None if judgement.score is None else goal_achieved(judgement.score),
        score=judgement.score,
        reasoning=judgement.reasoning,
        error=judgement.error,
        required=required,
        judged_by=judgement.judged_by,
        judge_votes=None if judgement.votes is None else list(judgement.votes),
        judge_agreement=judgement.agreement,
    )


def goal_reason(check: GoalCheck) -> str:
    """`goal achieved (score 1.000): <reasoning>`, `goal not achieved (…): …`, or, unjudged, the
    judgement's error as it is."""
    if check.goal_achieved is None:
        return check.error or "not judged"
    said = "goal achieved" if check.goal_achieved else "goal not achieved"
    score = "none" if check.score is None else f"{check.score:.3f}"
    return f"{said} (score {score}): {one_line(check.reasoning)}"


@register_check
@dataclass(frozen=True)
class GoalJudgementCheck:
    """A conversation with a `goal`: one question to the evaluation's judges (`goal_request`);
    passed when achieved, failed when not, unscored (with the judgement's cause) when unjudged."""

    name: ClassVar[str] = "goal"
    required: bool

    @classmethod
    def for_config(cls, config: EvaluationConfig) -> GoalJudgementCheck:
        return cls(required=config.require_goal)

    def questions(self, dataset: Dataset) -> Sequence[GoalRequest]:
        return [goal_request(dataset)] if dataset.goal is not None else []

    def check(self, dataset: Dataset, judged: Sequence[TurnJudgement]) -> list[CheckResult]:
        if dataset.goal is None:
            return []
        check = goal_check(dataset.goal, judged[0], self.required)
        return [
            result(
                self,
                outcome=judged_outcome(check.goal_achieved),
                reason=goal_reason(check),
                required=self.required,
                score=check.score,
                cause=judged[0].cause if check.goal_achieved is None else None,
                view=check,
            )
        ]

    def spec(self) -> dict[str, Any]:
        return {"require_goal": self.required, "goal_prompt_hash": goal_prompt_hash()}
