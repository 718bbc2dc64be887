"""The values the report shows (`view.py`), each tied to its JSON path, and how numbers,
probabilities, verdicts and percentages are written; tiers, the readiness badge and
intervals.

Everything here is plain data for the templates; nothing is markup and nothing is
escaped: the Jinja2 environment escapes every value it writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fair_forge_core.efficiency import short_number

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


def format_significant(value: Any) -> str:
    """A measure that may be small or large (tokens, seconds, USD): a float as
    `efficiency.short_number` writes it (0.0066, 3.8, 1970), other values as `format_number` does."""
    return short_number(value) if isinstance(value, float) else format_number(value)


VERDICT_LABELS = {
    "improved": "Improved",
    "regressed": "Regressed",
    "inconclusive": "Inconclusive",
    "not_tested": "Not tested",
}


def format_signed(value: float | None) -> str:
    """A difference: 3 decimals with its sign (+0.583, -0.250), 0 as 0.000, None as an em dash."""
    if value is None:
        return "—"
    return "0.000" if value == 0 else f"{value:+.3f}"


def format_p(value: float | None) -> str:
    """A p-value: 3 significant digits (`{:.3g}`, as `verdict_explanation` writes them:
    0.0005, 0.0045, 0.05, 1), None as an em dash."""
    return "—" if value is None else f"{value:.3g}"


def format_probability(value: float | None) -> str:
    """A probability: 3 decimals, except that values strictly between 0.999 and 1 read
    "> 0.999" and strictly between 0 and 0.001 "< 0.001" (never a rounded 1.000 or
    0.000 that is not one); None as an em dash."""
    if value is None:
        return "—"
    if 0.999 < value < 1:
        return "> 0.999"
    if 0 < value < 0.001:
        return "< 0.001"
    return f"{value:.3f}"


def format_verdict(value: Any) -> str:
    """A comparison's verdict in words: Improved, Regressed, Inconclusive, Not tested."""
    return VERDICT_LABELS.get(str(value), str(value))


def format_percent(value: Any) -> str:
    """A confidence level as a percentage (`percent`), None as an em dash."""
    return "—" if value is None else percent(value)


FORMATS = {
    "number": format_number,
    "significant": format_significant,
    "signed": format_signed,
    "p": format_p,
    "probability": format_probability,
    "percent": format_percent,
    "verdict": format_verdict,
}
"""How a tied value is written, by its `Value.style`: the page's `data-format` names the
style when it is not "number", and the visible text is `FORMATS[style](data-value)`."""


def to_json(value: Any) -> str:
    """`value` as the JSON text of a `data-*` attribute, for tests to compare with the result exactly."""
    return json.dumps(value)


def percent(level: float) -> str:
    """A credible level as a percentage: 0.9 → "90%", 0.975 → "97.5%"."""
    return f"{level * 100:.4g}%"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are there (None: not measured, left out); None without any."""
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None


@dataclass(frozen=True)
class Value:
    """One value of the result and where it is in the JSON (`data-field` / `data-value` in the
    page), and how it is written (`style`, a key of `FORMATS`; `data-format` unless "number")."""

    path: JsonPath
    value: Any
    style: str = "number"

    @property
    def field_json(self) -> str:
        return to_json(list(self.path))

    @property
    def value_json(self) -> str:
        return to_json(self.value)

    @property
    def text(self) -> str:
        return FORMATS[self.style](self.value)


def value_at(data: Mapping[str, Any], path: JsonPath, style: str = "number") -> Value:
    """The `Value` at `path` of the result `data`, written in `style`."""
    found: Any = data
    for key in path:
        found = found[key]
    return Value(path, found, style)


@dataclass(frozen=True)
class Tier:
    """A tier badge; `value` is the tier's field in the result (None when nothing was scored).
    In its tier's colour only when `coloured` (the evidence behind it is sufficient), else the
    neutral badge: a green "Reliable" never stands beside a preliminary readiness."""

    value: Value
    coloured: bool = True

    @property
    def css(self) -> str:
        return str(self.value.value or "none") if self.coloured else "neutral"

    @property
    def label(self) -> str:
        return TIER_LABELS.get(self.value.value or "", "Not scored")


@dataclass(frozen=True)
class ReadinessBadge:
    """The headline badge (`aggregated_metrics.readiness`). Coloured by its tier only when the
    evidence is sufficient: "preliminary" shows the tier in a neutral, dashed badge ("Reliable ·
    preliminary"), "insufficient_evidence" reads "Not enough evidence", never a tier's colour."""

    readiness: Mapping[str, Any]

    @property
    def state(self) -> str:
        status, tier = self.readiness["status"], self.readiness["tier"]
        if status == "insufficient_evidence":
            return "insufficient"
        if tier is None:
            return "none"
        return str(tier) if status == "sufficient" else "preliminary"

    @property
    def label(self) -> str:
        tier = TIER_LABELS.get(self.readiness["tier"] or "", "Not scored")
        if self.readiness["status"] == "insufficient_evidence":
            return "Not enough evidence"
        return f"{tier} · preliminary" if self.readiness["status"] == "preliminary" else tier


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
