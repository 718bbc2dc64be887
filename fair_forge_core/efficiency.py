"""What an agent spent to get its answers (`config.efficiency`). Pure: no I/O. Docs: docs/how-to/task-checks.md
"Efficiency and cost".

Per conversation (`conversation_efficiency`), counted over all its turns:

- `turns`: the turns of the conversation.
- `tool_calls`: the calls in the turns' `agentic.tools_used` (a turn without `agentic` has none).
- `failed_tool_calls`: those with `is_error` true (the trace marked the call as failed).
- `repeated_tool_calls`: those equal to an earlier call of the same conversation (in any earlier
  turn, or earlier in the same turn); the first of equal calls is not a repeat, so three equal
  calls are two repeats. Two calls are equal when their `tool_name`s are equal, their
  `parameters` have the same canonical JSON (`canonical_json`: keys sorted, no spaces, so key
  order does not matter but 5 and 5.0, or true and 1, differ) and their `unparsed_arguments`
  are equal. Whether the call failed, and its result, do not matter: calling again what was
  already called is the repeat.
- `steps` = `tool_calls` + `turns`: each tool call is a step, and each turn ends in one more,
  its answer.
- `input_tokens`, `output_tokens`, `latency_s`, `cost_usd`: the sums over the turns of the
  turns' `agent_usage`, null unless every turn reports that measure (a sum over some turns only
  would read as the conversation's total when it is not). Floats are summed by `math.fsum`.
  Nothing here can overflow: `AgentUsage` bounds each turn's values (10¹² tokens, 10⁶ s, $10⁶),
  so a conversation's sums stay below 10¹⁸ tokens and 10¹² s or USD over even the largest job.

Across conversations (`aggregate_efficiency`), over the conversations that carry `efficiency`:

- for each measure, the number of conversations that have it (not null), and its median and
  95th percentile over them by `quantile` (linear interpolation between closest ranks:
  Hyndman & Fan's type 7, numpy's default); null when none has it.
- `cost_per_successful_task`: the total `cost_usd` of the *scored* conversations, failed ones
  included (a failed attempt costs too), divided by the number of fully correct ones. A
  successful task is a fully correct conversation, one run of the agent, also when conversations
  share a `task_id`: a deployment pays for every run, and counting a task once however many of
  its attempts succeeded would credit retries a deployment does not get. Null, with
  `cost_note` saying why, when no conversation was scored, when some scored conversation
  reports no cost (the total would be partial: `total_cost_usd` is null too), or when none
  succeeded (`total_cost_usd` is still given). Unscored conversations count in the spreads
  (they spent what they spent) but not in the cost per success (their outcome is unknown).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, get_args

from fair_forge_core.schemas import (
    ConversationEfficiency,
    ConversationMetrics,
    Dataset,
    EfficiencyAggregate,
    EfficiencyMeasure,
    EfficiencySpread,
    ToolCall,
)

MEASURES: tuple[EfficiencyMeasure, ...] = get_args(EfficiencyMeasure)
"""Every measure of `ConversationEfficiency`, in its field order (the literal's, named once)."""


def canonical_json(value: Any) -> str:
    """`value` as JSON with sorted keys and no spaces (non-ASCII kept): equal for equal values.
    A value JSON has no form for (a library caller's datetime) is written as its `str`."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _call_key(call: ToolCall) -> tuple[str, str, str | None]:
    return call.tool_name, canonical_json(call.parameters), call.unparsed_arguments


def _reported(dataset: Dataset, measure: str) -> list[Any] | None:
    """`measure` of every turn's `agent_usage`, None unless every turn reports it."""
    values = [getattr(turn.agent_usage, measure, None) for turn in dataset.conversation]
    return None if any(value is None for value in values) else values


def _token_sum(dataset: Dataset, measure: str) -> int | None:
    values = _reported(dataset, measure)
    return None if values is None else sum(values)  # ints: exact


def _float_sum(dataset: Dataset, measure: str) -> float | None:
    values = _reported(dataset, measure)
    return None if values is None else math.fsum(values)


def conversation_efficiency(dataset: Dataset) -> ConversationEfficiency:
    """What one conversation spent (the module docstring is the rule)."""
    calls = [call for turn in dataset.conversation if turn.agentic is not None for call in turn.agentic.tools_used]
    seen: set[tuple[str, str, str | None]] = set()
    repeated = 0
    for call in calls:
        key = _call_key(call)
        repeated += key in seen
        seen.add(key)
    turns = len(dataset.conversation)
    return ConversationEfficiency(
        turns=turns,
        steps=len(calls) + turns,
        tool_calls=len(calls),
        failed_tool_calls=sum(1 for call in calls if call.is_error),
        repeated_tool_calls=repeated,
        input_tokens=_token_sum(dataset, "input_tokens"),
        output_tokens=_token_sum(dataset, "output_tokens"),
        latency_s=_float_sum(dataset, "latency_s"),
        cost_usd=_float_sum(dataset, "cost_usd"),
    )


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0 ≤ q ≤ 1) of `values` by linear interpolation between closest ranks
    (Hyndman & Fan type 7, numpy's default): with x sorted and h = (n − 1)·q, x[⌊h⌋] +
    (h − ⌊h⌋)·(x[⌊h⌋ + 1] − x[⌊h⌋]). ValueError for no values or q outside [0, 1]."""
    if not values:
        raise ValueError("the quantile of no values is undefined")
    if not 0.0 <= q <= 1.0:
        raise ValueError("q must be between 0 and 1")
    ordered = sorted(values)
    h = (len(ordered) - 1) * q
    low = math.floor(h)
    if low + 1 >= len(ordered):
        return float(ordered[-1])
    return float(ordered[low] + (h - low) * (ordered[low + 1] - ordered[low]))


def spread(values: Sequence[float]) -> EfficiencySpread:
    """How many `values`, their median and their 95th percentile (`quantile`); null without values."""
    if not values:
        return EfficiencySpread(conversations=0, median=None, p95=None)
    return EfficiencySpread(conversations=len(values), median=quantile(values, 0.5), p95=quantile(values, 0.95))


def _cost_per_success(conversations: Sequence[ConversationMetrics]) -> dict[str, Any]:
    """`total_cost_usd`, `cost_per_successful_task` and `cost_note` (the module docstring's rule)."""
    scored = [m for m in conversations if m.is_scored]
    successes = sum(1 for m in scored if m.is_fully_correct)
    counts = {"scored_conversations": len(scored), "successful_conversations": successes}
    costs = [m.efficiency.cost_usd if m.efficiency is not None else None for m in scored]
    missing = sum(1 for cost in costs if cost is None)
    if not scored:
        note = "no conversation was scored"
        return {**counts, "total_cost_usd": None, "cost_per_successful_task": None, "cost_note": note}
    if missing:
        note = f"{missing} of {len(scored)} scored conversation(s) report no cost_usd on every turn: the total would be partial"
        return {**counts, "total_cost_usd": None, "cost_per_successful_task": None, "cost_note": note}
    total = math.fsum(cost for cost in costs if cost is not None)
    if not successes:
        note = "no scored conversation is fully correct: nothing was bought with the cost"
        return {**counts, "total_cost_usd": total, "cost_per_successful_task": None, "cost_note": note}
    return {**counts, "total_cost_usd": total, "cost_per_successful_task": total / successes}


def aggregate_efficiency(conversations: Sequence[ConversationMetrics]) -> EfficiencyAggregate:
    """Efficiency across `conversations` (the module docstring is the rule)."""
    carrying = [m.efficiency for m in conversations if m.efficiency is not None]
    spreads = {name: spread([value for e in carrying if (value := getattr(e, name)) is not None]) for name in MEASURES}
    return EfficiencyAggregate.model_validate(
        {"conversations": len(carrying), **spreads, **_cost_per_success(conversations)}
    )


_LABELS: dict[EfficiencyMeasure, str] = {
    "turns": "turns",
    "steps": "steps",
    "tool_calls": "tool calls",
    "failed_tool_calls": "failed",
    "repeated_tool_calls": "repeated",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "latency_s": "latency (s)",
    "cost_usd": "cost (USD)",
}


def short_number(value: float) -> str:
    """A measure as people read it: 4 significant digits below 1000 (0.0066, 3.8, 0.9), whole
    numbers from 1000 on (1970, 25000: never an exponent for a token count)."""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def efficiency_line(aggregate: EfficiencyAggregate) -> str:
    """The one line `fair-forge evaluate` and `make run` print: each measure some conversation
    has as `median / p95` (`short_number`), then the cost per successful task, or why there is
    none."""
    parts = []
    for name in MEASURES:
        measure: EfficiencySpread = getattr(aggregate, name)
        if measure.median is not None and measure.p95 is not None:
            parts.append(f"{_LABELS[name]} {short_number(measure.median)} / {short_number(measure.p95)}")
    line = "efficiency (median / p95 per conversation): " + (", ".join(parts) or "nothing reported")
    if aggregate.cost_per_successful_task is not None:
        return (
            f"{line}; cost per successful task ${short_number(aggregate.cost_per_successful_task)} "
            f"({aggregate.successful_conversations} of {aggregate.scored_conversations} scored conversations fully correct)"
        )
    return f"{line}; cost per successful task: none ({aggregate.cost_note})"
