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

from fair_forge_core.compare import POWER
from fair_forge_core.report.charts import (
    BarChart,
    CurveChart,
    ForestPlot,
    bar_chart,
    curve_chart,
    forest_plot,
    metric_label,
)

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


def mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def judge_fact(usage: Mapping[str, Any]) -> str:
    """The judge and what it used, in one line: `judge gpt-4o-mini (prompt 1a2b3c4d): 12 calls,
    3,400 + 600 tokens, $0.0009` — the cost only when priced ("no price" otherwise), cache hits
    when the cache was on."""
    cost = "no price" if usage.get("cost_usd") is None else f"${usage['cost_usd']:.4f}"
    line = (
        f"judge {usage['model']} (prompt {str(usage['prompt_hash'])[:8]}): {plural(usage['calls'], 'call')}, "
        f"{usage['input_tokens']:,} + {usage['output_tokens']:,} tokens, {cost}"
    )
    if usage.get("cache_enabled"):
        line += f", cache {usage['cache_hits']} hit(s) / {usage['cache_misses']} miss(es)"
    if usage.get("cascade_settled_offline") is not None:
        line += (
            f", cascade {usage['cascade_settled_offline']} settled offline / "
            f"{usage['cascade_sent_to_llm']} sent to the connector"
        )
    return line


def consensus_fact(consensus: Mapping[str, Any]) -> str:
    """How often each turn was judged and how far the judgements agreed, in one line:
    `judge panel: 2 connectors × 3 samples, majority; 40/40 turns scored; samples unanimous on
    95.0%; connectors unanimous on 90.0%; mean agreement 97.5%` — the unscored turns and the
    connectors whose judgements failed when there are any."""
    parts = [
        f"judge panel: {plural(len(consensus['members']), 'connector')} × "
        f"{plural(consensus['samples'], 'sample')}, {consensus['vote']}",
        f"{consensus['scored_turns']}/{consensus['turns']} turns scored",
    ]
    rates = (
        ("samples unanimous on", "consistency_rate"),
        ("connectors unanimous on", "agreement_rate"),
        ("mean agreement", "mean_agreement"),
    )
    parts += [f"{label} {consensus[key]:.1%}" for label, key in rates if consensus.get(key) is not None]
    if consensus["unscored_turns"]:
        failed = ", ".join(f"connector[{i}] {n}" for i, n in enumerate(consensus["unscored_by_member"]) if n)
        parts.append(f"{plural(consensus['unscored_turns'], 'turn')} unscored by a failed judgement ({failed})")
    return "; ".join(parts)


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
    """A readiness tier badge; `value` is the tier's field in the result (None when nothing was scored)."""

    value: Value

    @property
    def css(self) -> str:
        return str(self.value.value or "none")

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


def answer_state(conversation: Mapping[str, Any], index: int) -> str:
    """pass, fail or unscored for the answer of turn `index` alone (`answer_correct`: its score
    against the threshold), whatever its tools did: a right answer on a turn failed by its
    tools is a passing answer of a failing turn. Without per-turn detail, from the score and
    the conversation's `threshold`, the rule `answer_correct` is made by."""
    interactions = conversation.get("interactions")
    if interactions is not None:
        correct = interactions[index]["answer_correct"]
        return "unscored" if correct is None else ("pass" if correct else "fail")
    score = conversation["correctness_scores"][index]
    if score is None:
        return "unscored"
    return "pass" if score >= conversation["threshold"] else "fail"


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

    @property
    def votes(self) -> str | None:
        """The turn's `judge_votes` in one line, when it was judged several times:
        `gpt-4o-mini 0.900, 0.850, 0.300 → 0.850; llama 1.000, 1.000 → 1.000 (agreement 83.3%)`; a failed
        judgement is "failed", a connector that failed "unscored"."""
        votes = self.interaction.get("judge_votes")
        if not votes:
            return None

        def score(value: float | None) -> str:
            return "failed" if value is None else format_number(value)

        parts = [
            f"{vote['model']} {', '.join(score(s) for s in vote['scores'])} → "
            f"{'unscored' if vote['score'] is None else format_number(vote['score'])}"
            for vote in votes
        ]
        agreement = self.interaction.get("judge_agreement")
        line = "; ".join(parts)
        return line if agreement is None else f"{line} (agreement {agreement:.1%})"


@dataclass(frozen=True)
class ConversationRow:
    """One conversation of the conversations table. `answer_states` colour the answer-score
    chips (each answer's own verdict), `turn_states` the turns (answer and tools).
    `shows_rates`: its pass@k / pass^k are shown only with two turns or more; they treat the
    conversation's turns as the k draws, so for one turn they would only restate that turn."""

    index: int
    conversation: Mapping[str, Any]
    state: str
    label: str
    turn_states: list[str]
    answer_states: list[str]
    summary: str
    turns: list[Turn] | None
    shows_rates: bool


def conversation_row(index: int, conversation: Mapping[str, Any]) -> ConversationRow:
    state, label = conversation_status(conversation)
    turn_count = len(conversation["correctness_scores"])
    turn_states = [turn_state(conversation, t) for t in range(turn_count)]
    answer_states = [answer_state(conversation, t) for t in range(turn_count)]
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
    return ConversationRow(
        index, conversation, state, label, turn_states, answer_states, summary, turns, turn_count > 1
    )


COMPARISON: JsonPath = ("aggregated_metrics", "comparison")

P_VALUE_METHODS = {
    "bootstrap": "paired bootstrap",
    "mcnemar_exact": "McNemar exact",
    "mcnemar_chi2": "McNemar χ²",
    "sign_flip_exact": "exact sign-flip",
}

# The text mark of a forest-plot row by its state (`ForestRow.state`): significance is never told by colour alone.
COMPARISON_MARKS = {
    "higher": "▲ significant",
    "lower": "▼ significant",
    "not_significant": "not significant",
    "not_tested": "not tested",
    "not_computed": "",  # the plot says so where the dot would be
}


@dataclass(frozen=True)
class MetricRow:
    """One compared metric: its values tied to `aggregated_metrics.comparison.metrics[index]`,
    its state and text mark (`COMPARISON_MARKS`), and its note. `no_variation`: no minimum
    detectable effect because the per-task differences do not vary (standard error exactly
    0), which the page writes "n/a (no variation)" rather than a dash."""

    index: int
    label: str
    state: str
    mark: str
    computed: bool
    tasks: Value
    baseline: Value
    candidate: Value
    difference: Value
    ci_low: Value
    ci_high: Value
    p_value_holm: Value
    method: str
    significant: Value
    minimum_detectable_effect: Value
    tasks_needed: Value
    note: str | None
    no_variation: bool = False

    @property
    def direction(self) -> str:
        """For a significant difference, the side the candidate is on ("▲ higher", "▼ lower"); else an empty string."""
        return {"higher": "▲ higher", "lower": "▼ lower"}.get(self.state, "")


@dataclass(frozen=True)
class ComparisonView:
    """The comparison section: the verdict and its figures, the forest plot, one row per
    metric, the unmatched tasks and unscored conversations, the notes, and how the two sides
    were judged differently. `headline` is the pass@1 row (always compared), whose minimum
    detectable effect and tasks needed the summary states. `unsettled`: the verdict is
    inconclusive or not tested, so the tasks needed are shown."""

    verdict: Value
    explanation: Value
    confidence: Value
    shared_tasks: Value
    probability: Value
    baseline_attempts: Value
    baseline_successes: Value
    candidate_attempts: Value
    candidate_successes: Value
    baseline_unscored: Value
    candidate_unscored: Value
    unsettled: bool
    rows: list[MetricRow]
    headline: MetricRow | None
    plot: ForestPlot | None
    baseline_only_tasks: list[str]
    candidate_only_tasks: list[str]
    baseline_unscored_by_task: list[tuple[str, int]]
    candidate_unscored_by_task: list[tuple[str, int]]
    mcnemar: Mapping[str, Any] | None
    prior: list[float]
    notes: list[str]
    judging_differences: list[str]
    power: float = POWER

    @property
    def not_computed(self) -> list[MetricRow]:
        return [row for row in self.rows if not row.computed]

    @property
    def verdict_css(self) -> str:
        return str(self.verdict.value)


def comparison_view(data: Mapping[str, Any]) -> ComparisonView | None:
    """The comparison section of the result `data`, None when it has no comparison."""
    comparison = data["aggregated_metrics"].get("comparison")
    if comparison is None:
        return None
    plot = forest_plot(comparison)

    def at(*keys: str | int, style: str = "number") -> Value:
        return value_at(data, (*COMPARISON, *keys), style)

    rows = []
    for index, metric in enumerate(comparison["metrics"]):
        # without a plot no metric has a difference
        state = plot.rows[index].state if plot is not None else "not_computed"

        def field(name: str, style: str = "number", index: int = index) -> Value:
            return at("metrics", index, name, style=style)

        rows.append(
            MetricRow(
                index=index,
                label=metric_label(metric["metric"], comparison["k"]),
                state=state,
                mark=COMPARISON_MARKS[state],
                computed=metric["difference"] is not None,
                tasks=field("tasks"),
                baseline=field("baseline"),
                candidate=field("candidate"),
                difference=field("difference", "signed"),
                ci_low=field("ci_low", "signed"),
                ci_high=field("ci_high", "signed"),
                p_value_holm=field("p_value_holm", "p"),
                method=P_VALUE_METHODS.get(metric["p_value_method"] or "", "not tested"),
                significant=field("significant"),
                minimum_detectable_effect=field("minimum_detectable_effect"),
                tasks_needed=field("tasks_needed"),
                note=metric["note"],
                no_variation=metric["minimum_detectable_effect"] is None and metric["standard_error"] == 0.0,
            )
        )
    return ComparisonView(
        verdict=at("verdict", style="verdict"),
        explanation=at("verdict_explanation"),
        confidence=at("confidence", style="percent"),
        shared_tasks=at("shared_tasks"),
        probability=at("probability_candidate_better", style="probability"),
        baseline_attempts=at("baseline_attempts"),
        baseline_successes=at("baseline_successes"),
        candidate_attempts=at("candidate_attempts"),
        candidate_successes=at("candidate_successes"),
        baseline_unscored=at("baseline_unscored_conversations"),
        candidate_unscored=at("candidate_unscored_conversations"),
        unsettled=comparison["verdict"] in ("inconclusive", "not_tested"),
        rows=rows,
        headline=next(
            (row for row, m in zip(rows, comparison["metrics"], strict=True) if m["metric"] == "pass@1"), None
        ),
        plot=plot,
        baseline_only_tasks=list(comparison["baseline_only_tasks"]),
        candidate_only_tasks=list(comparison["candidate_only_tasks"]),
        baseline_unscored_by_task=list(comparison["baseline_unscored_by_task"].items()),
        candidate_unscored_by_task=list(comparison["candidate_unscored_by_task"].items()),
        mcnemar=comparison["mcnemar"],
        prior=list(comparison["prior"]),
        notes=list(comparison["notes"]),
        judging_differences=list(comparison.get("judging_differences", [])),
    )


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

    @property
    def readiness(self) -> ReadinessBadge | None:
        """The readiness badge; None for a result written before readiness existed."""
        readiness = self.agg.get("readiness")
        return ReadinessBadge(readiness) if readiness else None

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
        usage = self.agg.get("judge_usage")
        if usage:
            facts.append(judge_fact(usage))
        consensus = self.agg.get("judge_consensus")
        if consensus:
            facts.append(consensus_fact(consensus))
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
    def comparison(self) -> ComparisonView | None:
        return comparison_view(self.data)

    @functools.cached_property
    def conversation_rows(self) -> list[ConversationRow]:
        return [conversation_row(index, c) for index, c in enumerate(self.conversations)]

    @functools.cached_property
    def thresholds(self) -> str:
        return ", ".join(format_number(t) for t in sorted({c["threshold"] for c in self.conversations})) or "—"
