"""`tool_policy`: each turn's calls under its tool policy (docs/how-to/task-checks.md "Tool
policies"; `fair_forge_core.tools.policy` is the engine). Required: a broken rule makes a turn wrong,
whatever `config.require_tool_correctness` says."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from fair_forge_core.checks.base import judged_outcome, register_check, result
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.schemas import CheckResult, Dataset, EvaluationConfig, ToolPolicyCheck
from fair_forge_core.tools.policy import check_tool_policy, policy_of_turn


def policy_reason(check: ToolPolicyCheck) -> str:
    """`tool policy: <each broken rule's sentence>` (joined by "; "), or that every rule was kept."""
    if check.passed:
        return "tool policy: every rule kept"
    return "tool policy: " + "; ".join(violation.message for violation in check.violations)


@register_check
@dataclass(frozen=True)
class PolicyCheck:
    """Per turn with a policy (the conversation's, the turn's, or both: `effective_policy`):
    passed when no rule is broken, else failed."""

    name: ClassVar[str] = "tool_policy"

    @classmethod
    def for_config(cls, config: EvaluationConfig) -> PolicyCheck:
        return cls()

    def questions(self, dataset: Dataset) -> Sequence[JudgeQuestion]:
        return ()

    def check(self, dataset: Dataset, judged: Sequence[TurnJudgement]) -> list[CheckResult]:
        results = []
        for index, batch in enumerate(dataset.conversation):
            policy = policy_of_turn(batch, dataset.tool_policy)
            if policy is None:
                continue
            check = check_tool_policy(batch, policy)
            outcome = judged_outcome(check.passed)
            results.append(
                result(self, turn=index, outcome=outcome, reason=policy_reason(check), required=True, view=check)
            )
        return results

    def spec(self) -> dict[str, Any]:
        return {}
