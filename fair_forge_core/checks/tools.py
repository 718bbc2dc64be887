"""`tool_correctness`: the tool rubric's verdict on each turn that expects tools
(docs/tool-rubric.md; `fair_forge_core.tools` is the engine), or, when the turn's tool policy has a
`trajectory_match`, the trajectory's verdict (docs/how-to/task-checks.md "Tool policies"). Required
under `config.require_tool_correctness`, advisory otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from fair_forge_core.checks.base import judged_outcome, one_line, register_check, result
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.schemas import (
    Batch,
    CheckResult,
    Dataset,
    EvaluationConfig,
    ToolCorrectnessScore,
    ToolPolicy,
    ToolPolicyCheck,
)
from fair_forge_core.tools import ToolScorer
from fair_forge_core.tools.policy import check_tool_policy, policy_of_turn, without_ignored_parameters

TurnTools = tuple[ToolPolicyCheck | None, ToolCorrectnessScore | None]
"""A turn's deterministic tool verdicts: its tool policy's check and the rubric's score (`check_turn_tools`)."""


def check_turn_tools(batch: Batch, scorer: ToolScorer, policy: ToolPolicy | None = None) -> TurnTools:
    """The tool `policy`'s check of the turn (None without a policy) and the rubric's score of its
    calls without the policy's `ignore_parameters` (None when the turn expects no tools)."""
    check = check_tool_policy(batch, policy) if policy is not None else None
    scored_batch = without_ignored_parameters(batch, policy.ignore_parameters) if policy is not None else batch
    return check, scorer.score_batch(scored_batch)


def tools_reason(score: ToolCorrectnessScore, policy: ToolPolicyCheck | None) -> str:
    """`tools: overall 0.400: <the rubric's reasoning>`, or the trajectory's verdict when the
    policy decided it."""
    if policy is not None and policy.trajectory_matches is not None:
        verb = "match" if policy.trajectory_matches else "do not match"
        return f"tools: the calls {verb} the expected trajectory (trajectory_match {policy.trajectory_match})"
    overall = "none" if score.overall_correctness is None else f"{score.overall_correctness:.3f}"
    return f"tools: overall {overall}: {one_line(score.reasoning)}"


@register_check
@dataclass(frozen=True)
class ToolsCheck:
    """Per turn with expected tools: passed / failed by the rubric's `is_correct` (or the
    trajectory's verdict, which replaces it); `not_measured` and advisory when the rubric decides
    nothing (every measured dimension without weight: `is_correct` null). One `ToolScorer` per
    evaluation: repeated turns are scored once.

    A turn's result follows from its calls, its expected calls (its tool policy among them), its
    answer, the conversation's tool policy and its index; equal tool data are one object in a
    request (`sharing`), so attempts of one task that repeat a turn give one key of identities,
    and its result is made once per check, that is per evaluation (`_made`: each entry holds
    the objects whose identities key it, so no other can take them while it lives)."""

    name: ClassVar[str] = "tool_correctness"
    required: bool
    scorer: ToolScorer = field(compare=False)
    _made: dict[tuple[Any, ...], tuple[tuple[Any, ...], CheckResult]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def for_config(cls, config: EvaluationConfig) -> ToolsCheck:
        return cls(required=config.require_tool_correctness, scorer=ToolScorer.for_config(config))

    def questions(self, dataset: Dataset) -> Sequence[JudgeQuestion]:
        return ()

    def check(self, dataset: Dataset, judged: Sequence[TurnJudgement]) -> list[CheckResult]:
        results = []
        made, conversation_policy = self._made, dataset.tool_policy
        for index, batch in enumerate(dataset.conversation):
            expected = batch.ground_truth_agentic
            if expected is None or not expected.has_expected_tools:
                continue  # no tool score (`ToolScorer.score_batch`): no result
            held = (batch.agentic, expected, conversation_policy)
            key = (*map(id, held), batch.assistant, index)
            found = made.get(key)
            if found is None:
                found = made[key] = (held, self._result(index, batch, conversation_policy))
            results.append(found[1])
        return results

    def _result(self, index: int, batch: Batch, conversation_policy: ToolPolicy | None) -> CheckResult:
        """The result of turn `index` (`batch`), which expects tools."""
        policy, score = check_turn_tools(batch, self.scorer, policy_of_turn(batch, conversation_policy))
        assert score is not None  # the turn expects tools
        verdict = score.is_correct
        if policy is not None and policy.trajectory_matches is not None:
            verdict = policy.trajectory_matches
        return result(
            self,
            turn=index,
            outcome=judged_outcome(verdict),
            reason=tools_reason(score, policy),
            required=self.required and verdict is not None,
            score=score.overall_correctness,
            cause="not_measured" if verdict is None else None,
            view=score,
        )

    def spec(self) -> dict[str, Any]:
        s = self.scorer
        return {
            "tool_weights": s.weights.model_dump(),
            "tool_threshold": s.tool_threshold,
            "tool_dimension_floor": s.dimension_floor,
            "require_tool_correctness": self.required,
        }
