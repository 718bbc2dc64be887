"""The deterministic checks of a conversation: everything of its verdict that needs no judge (the
tool rubric, tool policies, the end state). Pure: no I/O. `metrics.conversation_metrics` combines
them with the judge's verdicts; `evaluate.evaluate_conversations` computes them before any judge
call, so the request's deadline bounds only the judge calls that follow (docs/limits.md "Time
budget")."""

from __future__ import annotations

from dataclasses import dataclass

from fair_forge_core.schemas import (
    Batch,
    Dataset,
    EvaluationConfig,
    StateCheck,
    ToolCorrectnessScore,
    ToolPolicy,
    ToolPolicyCheck,
)
from fair_forge_core.state import compare_state
from fair_forge_core.tools import ToolScorer
from fair_forge_core.tools.policy import check_tool_policy, policy_of_turn, without_ignored_parameters

TurnTools = tuple[ToolPolicyCheck | None, ToolCorrectnessScore | None]
"""A turn's deterministic tool verdicts: its tool policy's check and the rubric's score (`check_turn_tools`)."""


def check_turn_tools(
    batch: Batch, config: EvaluationConfig, tool_scorer: ToolScorer | None = None, policy: ToolPolicy | None = None
) -> TurnTools:
    """The tool `policy`'s check of the turn (None without a policy) and the rubric's score of its
    calls without the policy's `ignore_parameters` (None when the turn expects no tools)."""
    check = check_tool_policy(batch, policy) if policy is not None else None
    scored_batch = without_ignored_parameters(batch, policy.ignore_parameters) if policy is not None else batch
    return check, (tool_scorer or ToolScorer.for_config(config)).score_batch(scored_batch)


@dataclass(frozen=True)
class DeterministicChecks:
    """Everything of a conversation's verdict that needs no judge: each turn's `TurnTools` and the
    end state's comparison. `evaluate_conversations` computes them before any judge call, so the
    request's deadline bounds only the judge calls that follow."""

    tools: list[TurnTools]
    state: StateCheck | None


def deterministic_checks(
    dataset: Dataset, config: EvaluationConfig, tool_scorer: ToolScorer | None = None
) -> DeterministicChecks:
    """The `DeterministicChecks` of `dataset` (one `tool_scorer` may serve every conversation)."""
    scorer = tool_scorer or ToolScorer.for_config(config)
    tools = [check_turn_tools(b, config, scorer, policy_of_turn(b, dataset.tool_policy)) for b in dataset.conversation]
    state = compare_state(dataset.expected_state, dataset.final_state) if dataset.checks_state else None
    return DeterministicChecks(tools=tools, state=state)
