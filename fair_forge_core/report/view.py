"""What the report shows, read from a validated result: values tied to their JSON paths, states, labels, charts.

Everything here is plain data for the templates; nothing is markup and nothing is
escaped — the Jinja2 environment escapes every value it writes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fair_forge_core.report.charts import BarChart, CurveChart, bar_chart, curve_chart

JsonPath = tuple[str | int, ...]

# (field of ToolCorrectnessScore, label in the bar chart, column of the per-conversation table)
TOOL_DIMENSIONS: tuple[tuple[str, str, str], ...] = (
    ("tool_selection_correct", "Selection", "Selection"),
    ("parameter_accuracy", "Parameters", "Params"),
    ("sequence_correct", "Sequence", "Sequence"),
    ("result_utilization", "Utilization", "Utilization"),
    ("overall_correctness", "Overall", "Overall"),
    ("f1", "Tool-call F1", "F1"),
)

TIER_LABELS = {
    "reliable": "Reliable",
    "functional": "Functional",
    "inconsistent": "Inconsistent",
    "needs_improvement": "Needs improvement",
}


def format_number(value: Any) -> str:
    """How the report prints a value: floats with 3 decimals, None as an em dash, the rest as is."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def to_json(value: Any) -> str:
    """`value` as the JSON text of a `data-*` attribute, for tests to compare with the result exactly."""
    return json.dumps(value)


def percent(level: float) -> str:
    """A credible level as a percentage: 0.9 → "90%", 0.975 → "97.5%"."""
    return f"{level * 100:.4g}%"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Value:
    """One value of the result and where it is in the JSON (`data-field` / `data-value` in the page)."""

    path: JsonPath
    value: Any

    @property
    def field_json(self) -> str:
        return to_json(list(self.path))

    @property
    def value_json(self) -> str:
        return to_json(self.value)

    @property
    def text(self) -> str:
        return format_number(self.value)


def value_at(data: Mapping[str, Any], path: JsonPath) -> Value:
    """The `Value` at `path` of the result `data`."""
    found: Any = data
    for key in path:
        found = found[key]
    return Value(path, found)


@dataclass(frozen=True)
class Tier:
    """A readiness tier badge; `value` is the tier's field in the result (None when nothing was scored)."""

    value: Value

    @property
    def css(self) -> str:
        return str(self.value.value or "none")

    @property
    def label(self) -> str:
        return TIER_LABELS.get(self.value.value or "", "Not scored")


@dataclass(frozen=True)
class Interval:
    """A Bayesian credible interval, e.g. "90% CrI " low – high."""

    label: str
    low: Value
    high: Value


def interval(data: Mapping[str, Any], metrics: JsonPath, metric: str) -> Interval | None:
    """The credible interval of `metric` in the metrics object at `metrics`, None outside Bayesian mode."""
    low, high = value_at(data, (*metrics, f"{metric}_ci_low")), value_at(data, (*metrics, f"{metric}_ci_high"))
    if low.value is None or high.value is None:
        return None
    level = value_at(data, metrics).value.get("ci_level")
    return Interval(f"{percent(level)} CrI " if isinstance(level, float) else "CrI ", low, high)


def tool_scores(conversation: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [s for s in conversation["tool_correctness_scores"] if s is not None]


def turn_state(conversation: Mapping[str, Any], index: int) -> str:
    """pass, fail or unscored for turn `index`, from the per-turn detail or, without it, the scores."""
    interactions = conversation.get("interactions")
    if interactions is not None:
        correct = interactions[index]["is_correct"]
        return "unscored" if correct is None else ("pass" if correct else "fail")
    if conversation["correctness_scores"][index] is None:
        return "unscored"
    return "pass" if index in conversation["correct_indices"] else "fail"


def conversation_status(conversation: Mapping[str, Any]) -> tuple[str, str]:
    """(css class, label) of a conversation: pass, fail or unscored."""
    if not conversation["is_scored"]:
        return "unscored", "Unscored"
    return ("pass", "Pass") if conversation["is_fully_correct"] else ("fail", "Fail")


# --------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class HeatCell:
    key: str
    mean: float


@dataclass(frozen=True)
class ToolRow:
    index: int
    session_id: str
    turns: int
    cells: list[HeatCell]


@dataclass(frozen=True)
class ToolFigure:
    turns: int
    correct_turns: int
    bars: BarChart
    rows: list[ToolRow]


def tool_figure(conversations: Sequence[Mapping[str, Any]]) -> ToolFigure | None:
    """Figure 2, or None when no turn had expected tools."""
    scores = [s for c in conversations for s in tool_scores(c)]
    if not scores:
        return None
    means = [(key, label, mean(s[key] for s in scores) or 0.0, len(scores)) for key, label, _ in TOOL_DIMENSIONS]
    rows = [
        ToolRow(
            index,
            conversation["session_id"],
            len(own),
            [HeatCell(key, mean(s[key] for s in own) or 0.0) for key, _, _ in TOOL_DIMENSIONS],
        )
        for index, conversation in enumerate(conversations)
        if (own := tool_scores(conversation))
    ]
    return ToolFigure(
        len(scores), sum(1 for s in scores if s["is_correct"]), bar_chart(means, "overall_correctness"), rows
    )


@dataclass(frozen=True)
class AssistantRow:
    name: str
    metrics: JsonPath
    tier: Tier
    pass_at_k_interval: Interval | None
    pass_pow_k_interval: Interval | None
    tool_mean: float | None


def assistant_rows(data: Mapping[str, Any]) -> list[AssistantRow]:
    """One row per assistant of `by_assistant`; none when the result has a single assistant."""
    conversations = data["per_conversation_metrics"]
    rows = []
    for name in data["aggregated_metrics"].get("by_assistant") or {}:
        metrics: JsonPath = ("aggregated_metrics", "by_assistant", name)
        tool_mean = mean(
            s["overall_correctness"] for c in conversations if c["assistant_id"] == name for s in tool_scores(c)
        )
        rows.append(
            AssistantRow(
                name,
                metrics,
                Tier(value_at(data, (*metrics, "interpretation"))),
                interval(data, metrics, "pass_at_k"),
                interval(data, metrics, "pass_pow_k"),
                tool_mean,
            )
        )
    return rows


@dataclass(frozen=True)
class Turn:
    """One turn in a conversation's detail table."""

    index: int
    state: str
    interaction: Mapping[str, Any]
    tool: Mapping[str, Any] | None


@dataclass(frozen=True)
class ConversationRow:
    index: int
    conversation: Mapping[str, Any]
    state: str
    label: str
    turn_states: list[str]
    summary: str
    turns: list[Turn] | None


def conversation_row(index: int, conversation: Mapping[str, Any]) -> ConversationRow:
    state, label = conversation_status(conversation)
    turn_states = [turn_state(conversation, t) for t in range(len(conversation["correctness_scores"]))]
    failing = sum(1 for s in turn_states if s != "pass")
    summary = plural(conversation["total_interactions"], "turn")
    if failing:
        summary += f" · {failing} not passing"
    interactions = conversation.get("interactions")
    turns = None
    if interactions is not None:
        turns = [
            Turn(t, turn_states[t], interaction, conversation["tool_correctness_scores"][t])
            for t, interaction in enumerate(interactions)
        ]
    return ConversationRow(index, conversation, state, label, turn_states, summary, turns)


@dataclass(frozen=True)
class Report:
    """Everything the templates need for one result; what they read more than once is computed once."""

    title: str
    request_id: str | None
    data: Mapping[str, Any]

    @property
    def agg(self) -> Mapping[str, Any]:
        aggregated: Mapping[str, Any] = self.data["aggregated_metrics"]
        return aggregated

    @property
    def conversations(self) -> Sequence[Mapping[str, Any]]:
        conversations: Sequence[Mapping[str, Any]] = self.data["per_conversation_metrics"]
        return conversations

    @property
    def bayesian(self) -> bool:
        return bool(self.agg["statistical_mode"] == "bayesian")

    def at(self, base: JsonPath, *keys: str | int) -> Value:
        """The value at `base` + `keys`: templates cannot splice a path before further arguments."""
        return value_at(self.data, (*base, *keys))

    def tier(self, base: JsonPath, *keys: str | int) -> Tier:
        return Tier(self.at(base, *keys))

    def interval(self, metric: str) -> Interval | None:
        return interval(self.data, ("aggregated_metrics",), metric)

    @functools.cached_property
    def facts(self) -> list[str]:
        assistants = {c["assistant_id"] for c in self.conversations}
        mode = f"Bayesian, {percent(self.agg['ci_level'])} credible intervals" if self.bayesian else "frequentist"
        facts = [
            plural(len(self.conversations), "conversation"),
            plural(len(assistants), "assistant"),
            f"k = {self.agg['k']}",
            mode,
        ]
        if self.request_id:
            facts.append(f"request {self.request_id}")
        return facts

    @functools.cached_property
    def warnings(self) -> list[str]:
        sample_size = self.agg.get("sample_size_warning")
        return [*self.data["warnings"], *([sample_size] if sample_size else [])]

    @functools.cached_property
    def curve_chart(self) -> CurveChart | None:
        return curve_chart(self.agg["curve"], self.agg["k"]) if self.agg["curve"] else None

    @functools.cached_property
    def curve_table_indices(self) -> list[int]:
        """The curve points tabulated under Figure 1: K ≤ 10, and the configured k."""
        return [i for i, p in enumerate(self.agg["curve"]) if p["k"] <= 10 or p["k"] == self.agg["k"]]

    @functools.cached_property
    def tool_figure(self) -> ToolFigure | None:
        return tool_figure(self.conversations)

    @functools.cached_property
    def assistant_rows(self) -> list[AssistantRow]:
        return assistant_rows(self.data)

    @functools.cached_property
    def conversation_rows(self) -> list[ConversationRow]:
        return [conversation_row(index, c) for index, c in enumerate(self.conversations)]

    @functools.cached_property
    def thresholds(self) -> str:
        return ", ".join(format_number(t) for t in sorted({c["threshold"] for c in self.conversations})) or "—"
