"""The result side of `config.efficiency` (`fair_forge_core.efficiency`: the rules), apart from
`result` so that each module stays short; `result` uses these models."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fair_forge_core.schemas.base import ResultModel
from fair_forge_core.schemas.request import MAX_USAGE_COST_USD, MAX_USAGE_LATENCY_S, MAX_USAGE_TOKENS

EfficiencyMeasure = Literal[
    "turns",
    "steps",
    "tool_calls",
    "failed_tool_calls",
    "repeated_tool_calls",
    "input_tokens",
    "output_tokens",
    "latency_s",
    "cost_usd",
]
"""The measures of `ConversationEfficiency`, in the order results list them."""


MAX_CONVERSATION_TURNS = 10**6
"""The most turns one conversation can have (a job's whole limit): with `AgentUsage`'s per-turn
bounds, what bounds a conversation's sums, so that a result file read back (`compare`) cannot hold
a value that overflows what is computed from it."""
_COUNT = Field(ge=0, le=1_000 * MAX_CONVERSATION_TURNS)


class ConversationEfficiency(ResultModel):
    """What one conversation spent (`fair_forge_core.efficiency.conversation_efficiency`, whose
    docstring is the rule): turns, steps (tool calls + turns), tool calls, failed ones, repeated
    ones; and the agent's tokens, latency (s) and cost (USD) summed over the turns, null unless
    every turn reports that measure in its `agent_usage`. Each is bounded (`MAX_CONVERSATION_TURNS`
    times a turn's bound): a result file with a larger value is refused when it is read."""

    turns: int = _COUNT
    steps: int = _COUNT
    tool_calls: int = _COUNT
    failed_tool_calls: int = _COUNT
    repeated_tool_calls: int = _COUNT
    input_tokens: int | None = Field(ge=0, le=MAX_USAGE_TOKENS * MAX_CONVERSATION_TURNS)
    output_tokens: int | None = Field(ge=0, le=MAX_USAGE_TOKENS * MAX_CONVERSATION_TURNS)
    latency_s: float | None = Field(ge=0, le=MAX_USAGE_LATENCY_S * MAX_CONVERSATION_TURNS)
    cost_usd: float | None = Field(ge=0, le=MAX_USAGE_COST_USD * MAX_CONVERSATION_TURNS)


class EfficiencySpread(ResultModel):
    """One efficiency measure over the conversations that have it: how many, and its median and
    95th percentile (linear interpolation between closest ranks: `efficiency.quantile`); null
    when none has it."""

    conversations: int
    median: float | None
    p95: float | None


class EfficiencyAggregate(ResultModel):
    """Efficiency across conversations (`fair_forge_core.efficiency.aggregate_efficiency`, whose
    docstring is the rule): each measure's `EfficiencySpread`; the agents' total cost over the
    scored conversations and, divided by the fully correct ones, `cost_per_successful_task`
    (null with `cost_note` saying why: a scored conversation without a cost, or no success)."""

    conversations: int
    turns: EfficiencySpread
    steps: EfficiencySpread
    tool_calls: EfficiencySpread
    failed_tool_calls: EfficiencySpread
    repeated_tool_calls: EfficiencySpread
    input_tokens: EfficiencySpread
    output_tokens: EfficiencySpread
    latency_s: EfficiencySpread
    cost_usd: EfficiencySpread
    scored_conversations: int
    successful_conversations: int
    total_cost_usd: float | None
    cost_per_successful_task: float | None
    cost_note: str | None = None


class EfficiencyComparison(ResultModel):
    """One efficiency measure compared (`fair_forge_core.compare.efficiency`): over the shared
    tasks where both sides have it, the mean per side of the per-task means, the mean paired
    difference candidate − baseline with the comparison's paired-bootstrap interval, and its
    p-value by the pass metrics' rule (the exact sign-flip test under 10 tasks, else the
    bootstrap p-value; not Holm-adjusted). Never part of the verdict. Values are null without
    such a task (`note`)."""

    measure: EfficiencyMeasure
    tasks: int
    baseline: float | None
    candidate: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    p_value_method: Literal["bootstrap", "sign_flip_exact"] | None
    standard_error: float | None
    note: str | None = None
