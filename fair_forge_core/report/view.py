"""What the report shows, read from a validated result: values tied to their JSON paths, states, labels, charts.

Everything here is plain data for the templates; nothing is markup and nothing is
escaped — the Jinja2 environment escapes every value it writes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fair_forge_core.headline import Figure, Metric, figure_name, headline_figure_of, pooled_figure
from fair_forge_core.report.charts import (
    BarChart,
    CurveChart,
    bar_chart,
    curve_chart,
)
from fair_forge_core.report.check_views import CheckView, check_views
from fair_forge_core.report.comparison import ComparisonView, comparison_view
from fair_forge_core.report.judge_views import CorrectedFigures, corrected_figures, judge_noise_line
from fair_forge_core.report.values import (
    TOOL_DIMENSIONS,
    Interval,
    JsonPath,
    ReadinessBadge,
    Tier,
    Value,
    format_number,
    interval,
    mean,
    percent,
    plural,
    value_at,
)
from fair_forge_core.schemas import TaskStability


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


STABILITY_PILLS = {"stable": "pass", "flaky": "unscored", "failing": "fail"}
"""The pill colour of each task label: green, amber, red."""


def stability_level(data: Mapping[str, Any]) -> float:
    """The level of the tasks' intervals: the result's own `task_stability`'s when it carries one,
    else the request's `statistical_mode.ci_level` as `provenance` records it, else the aggregate's
    `ci_level` (Bayesian mode), else the default 0.95."""
    agg = data["aggregated_metrics"]
    provenance = data.get("provenance") or {}
    for level in (
        (agg.get("task_stability") or {}).get("ci_level"),
        (provenance.get("statistical_mode") or {}).get("ci_level"),
        agg.get("ci_level"),
    ):
        if level is not None:
            return float(level)
    return 0.95


@dataclass(frozen=True)
class _Attempt:
    """The fields of a conversation's JSON that `flakiness.task_stability` reads."""

    assistant_id: str
    task_id: str | None
    is_scored: bool
    is_fully_correct: bool | None


def task_stability_of(data: Mapping[str, Any]) -> TaskStability | None:
    """The "Task stability" section's tasks: `flakiness.task_stability` of the result's
    conversations at `stability_level`, as `fair-forge evaluate` lists them; None when no task
    has 2 scored attempts."""
    from fair_forge_core.flakiness import task_stability

    conversations = [
        _Attempt(c["assistant_id"], c.get("task_id"), c["is_scored"], c["is_fully_correct"])
        for c in data["per_conversation_metrics"]
    ]
    stability = task_stability(conversations, stability_level(data))
    return stability if stability.tasks else None


@dataclass(frozen=True)
class HeatCell:
    key: str
    mean: float | None
    """None: the dimension was measured on none of the conversation's turns."""


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
    # A dimension's mean is over the turns where it was measured (utilization may not be: docs/tool-rubric.md).
    means = [
        (key, label, mean(s[key] for s in scores), sum(1 for s in scores if s[key] is not None))
        for key, label, _ in TOOL_DIMENSIONS
    ]
    rows = [
        ToolRow(
            index,
            conversation["session_id"],
            len(own),
            [HeatCell(key, mean(s[key] for s in own)) for key, _, _ in TOOL_DIMENSIONS],
        )
        for index, conversation in enumerate(conversations)
        if (own := tool_scores(conversation))
    ]
    return ToolFigure(
        len(scores), sum(1 for s in scores if s["is_correct"]), bar_chart(means, "overall_correctness"), rows
    )


def sufficient(data: Mapping[str, Any], metrics: JsonPath) -> bool:
    """Whether the aggregate at `metrics` has readiness with status `sufficient`: the only case
    in which a tier is shown in its colour."""
    readiness = value_at(data, metrics).value.get("readiness")
    return bool(readiness) and readiness["status"] == "sufficient"


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
                Tier(value_at(data, (*metrics, "interpretation")), coloured=sufficient(data, metrics)),
                interval(data, metrics, "pass_at_k"),
                interval(data, metrics, "pass_pow_k"),
                tool_mean,
            )
        )
    return rows


@dataclass(frozen=True)
class Turn:
    """One turn in a conversation's detail table, with its check results (`results`)."""

    index: int
    state: str
    interaction: Mapping[str, Any]
    tool: Mapping[str, Any] | None
    results: list[CheckView]

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
    results: list[CheckView]
    """The conversation's own check results (scope conversation), shown under its turns."""


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
    base: JsonPath = ("per_conversation_metrics", index)
    turns = None
    if interactions is not None:
        turns = [
            Turn(
                t,
                turn_states[t],
                interaction,
                conversation["tool_correctness_scores"][t],
                check_views(conversation, base, t),
            )
            for t, interaction in enumerate(interactions)
        ]
    return ConversationRow(
        index,
        conversation,
        state,
        label,
        turn_states,
        answer_states,
        summary,
        turns,
        turn_count > 1,
        check_views(conversation, base, None),
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

    def at(self, base: JsonPath, *keys: str | int, style: str = "number") -> Value:
        """The value at `base` + `keys` (written in `style`, a key of `FORMATS`): templates
        cannot splice a path before further arguments."""
        return value_at(self.data, (*base, *keys), style)

    def tier(self, base: JsonPath, *keys: str | int) -> Tier:
        """The tier at `base` + `keys`, coloured only when the result's readiness is sufficient."""
        return Tier(self.at(base, *keys), coloured=sufficient(self.data, ("aggregated_metrics",)))

    @functools.cached_property
    def headline_figure(self) -> Figure:
        """The figure readiness was decided on (`headline.headline_figure_of`): the big tiles'."""
        readiness = self.agg.get("readiness") or {}
        return headline_figure_of(
            readiness.get("basis"), self.agg.get("per_task") is not None, self.agg["statistical_mode"]
        )

    @property
    def pooled_figure(self) -> Figure:
        """What the aggregate's pass@k / pass^k are (`headline.pooled_figure`)."""
        return pooled_figure(self.agg["statistical_mode"])

    @property
    def adaptive_line(self) -> str | None:
        """The adaptive attempts in one line (`headline.adaptive_line`), or None when the
        result's attempts were not adaptive."""
        from fair_forge_core.headline import adaptive_line
        from fair_forge_core.schemas import AdaptiveResult

        adaptive = self.agg.get("adaptive")
        return None if adaptive is None else adaptive_line(AdaptiveResult.model_validate(adaptive), self.agg["k"])

    def name(self, metric: Metric, figure: Figure, k: int | str | None = None) -> str:
        """A figure's one name (`headline.figure_name`), at the result's k unless given; labelled
        "adaptive stopping: biased" when the result's attempts were adaptive."""
        adaptive = self.agg.get("adaptive") is not None
        return figure_name(metric, self.agg["k"] if k is None else k, figure, adaptive)

    def headline_interval(self, metric: str) -> Interval | None:
        """The interval of a big tile: per task, the Wilson interval over tasks `per_task`
        carries; pooled, the credible interval (None in frequentist mode)."""
        if self.headline_figure != "per_task":
            return self.interval(metric)
        base: JsonPath = ("aggregated_metrics", "per_task")
        low, high = self.at(base, f"{metric}_ci_low"), self.at(base, f"{metric}_ci_high")
        if low.value is None or high.value is None:
            return None
        level = self.agg["per_task"].get("ci_level") or 0.95
        return Interval(f"{percent(level)} Wilson ", low, high)

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
        """Figure 1, with the corrected curve (`judge_corrected.curve`) over it when the result has one."""
        corrected = (self.agg.get("judge_corrected") or {}).get("curve") or ()
        return curve_chart(self.agg["curve"], self.agg["k"], corrected) if self.agg["curve"] else None

    @functools.cached_property
    def corrected(self) -> CorrectedFigures | None:
        return corrected_figures(self.data)

    @functools.cached_property
    def judge_noise_line(self) -> str | None:
        return judge_noise_line(self.data)

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
    def task_stability(self) -> TaskStability | None:
        return task_stability_of(self.data)

    @functools.cached_property
    def conversation_rows(self) -> list[ConversationRow]:
        return [conversation_row(index, c) for index, c in enumerate(self.conversations)]

    @functools.cached_property
    def thresholds(self) -> str:
        return ", ".join(format_number(t) for t in sorted({c["threshold"] for c in self.conversations})) or "—"
