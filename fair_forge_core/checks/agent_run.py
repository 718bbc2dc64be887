"""`agent_run`: an attempt recorded by the agent runner whose agent failed (`Dataset.agent_error`,
set by `fair_forge_core.agents.runner`) fails its conversation, with the failure's detail as the
reason. Required: a failed attempt counts as a failure, never dropped. Pure: no I/O.
Docs: docs/checks.md "The built-in checks", docs/agent-contract.md "Failures and their causes".

Rule: a conversation with an `agent_error` gets one conversation result, `failed`, reason
``agent_timeout: <detail>`` (its cause, then its detail); any other conversation gets none, so a
request that no runner recorded reads exactly as before. The other checks still run on such a
conversation (its failed turn's answer is empty, so it is also judged wrong); whatever they say,
this required failure keeps the conversation from being fully correct. An attempt the runner kept
unscored instead (`agent_errors="unscored"`) carries `Dataset.unscored`, and no check runs on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from fair_forge_core.checks.base import register_check, result
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.schemas import CheckResult, Dataset, EvaluationConfig


@register_check
@dataclass(frozen=True)
class AgentRunCheck:
    """A conversation whose agent failed (`Dataset.agent_error`): failed, its cause and detail as
    the reason; none for any other (module docstring)."""

    name: ClassVar[str] = "agent_run"

    @classmethod
    def for_config(cls, config: EvaluationConfig) -> AgentRunCheck:
        return cls()

    def questions(self, dataset: Dataset) -> Sequence[JudgeQuestion]:
        return ()

    def check(self, dataset: Dataset, judged: Sequence[TurnJudgement]) -> list[CheckResult]:
        failure = dataset.agent_error
        if failure is None:
            return []
        return [result(self, outcome="failed", reason=f"{failure.cause}: {failure.detail}", required=True)]

    def spec(self) -> dict[str, Any]:
        return {}
