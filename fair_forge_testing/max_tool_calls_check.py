"""A plug-in check in one file, as docs/checks.md "Write a check" shows: at most `max_calls` tool
calls in a conversation (pydantic-evals' `MaxToolCalls`). Loaded by listing this module in
`FAIR_FORGE_EXTRA_CHECKS`; on with `"config": {"checks": {"max_tool_calls": {"max_calls": N}}}`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from fair_forge_core.checks import register_check, result
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.schemas import CheckResult, Dataset, EvaluationConfig


@register_check
@dataclass(frozen=True)
class MaxToolCalls:
    """Passed when the conversation's turns made at most `max_calls` tool calls in all, else
    failed; required. Off unless `config.checks` names it."""

    name: ClassVar[str] = "max_tool_calls"
    max_calls: int

    @classmethod
    def for_config(cls, config: EvaluationConfig) -> MaxToolCalls | None:
        settings = (config.checks or {}).get(cls.name)
        if settings is None:
            return None
        limit = settings.get("max_calls")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"max_calls must be a whole number ≥ 0, got {limit!r}")
        return cls(max_calls=limit)

    def questions(self, dataset: Dataset) -> Sequence[JudgeQuestion]:
        return ()

    def check(self, dataset: Dataset, judged: Sequence[TurnJudgement]) -> list[CheckResult]:
        calls = sum(len(turn.agentic.tools_used) for turn in dataset.conversation if turn.agentic is not None)
        return [
            result(
                self,
                outcome="passed" if calls <= self.max_calls else "failed",
                reason=f"{calls} tool call(s), at most {self.max_calls} allowed",
                required=True,
                score=None,
            )
        ]

    def spec(self) -> dict[str, Any]:
        return {"max_calls": self.max_calls}
