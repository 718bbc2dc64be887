"""The comparison section of the report (`view.py`): a run compared with a baseline, each
metric's difference, test and verdict, read from ``aggregated_metrics.comparison``.

Plain data for the templates, like the rest of the report's view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fair_forge_core.compare import POWER
from fair_forge_core.compare.labels import POPULATION_QUESTIONS, counts, metric_label
from fair_forge_core.report.charts import ForestPlot, forest_plot
from fair_forge_core.report.values import JsonPath, Value, value_at

COMPARISON: JsonPath = ("aggregated_metrics", "comparison")

P_VALUE_METHODS = {
    "bootstrap": "paired bootstrap",
    "mcnemar_exact": "McNemar exact",
    "mcnemar_chi2": "McNemar χ²",  # only in comparisons written before McNemar was exact at any size
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
    tasks_needed_reason: str | None = None

    @property
    def direction(self) -> str:
        """For a significant difference, the side the candidate is on ("▲ higher", "▼ lower"); else an empty string."""
        return {"higher": "▲ higher", "lower": "▼ lower"}.get(self.state, "")


@dataclass(frozen=True)
class ChangedRow:
    """A task that changed (`aggregated_metrics.comparison.changed_tasks[index]`): both sides'
    counts as c/n, the difference and its own exact p tied to the JSON, and whether that p is
    significant alone."""

    task: str
    baseline: str
    candidate: str
    difference: Value
    p_value: Value
    significant_alone: bool


@dataclass(frozen=True)
class AttemptView:
    """The attempt-level test: its verdict and explanation, p-value and floor, tied to
    `aggregated_metrics.comparison.attempt_test`."""

    verdict: Value
    explanation: Value
    p_value: Value
    floor: Value
    informative_tasks: Value


@dataclass(frozen=True)
class ComparisonView:
    """The comparison section: the verdict and its figures, the forest plot, one row per
    metric, the unmatched tasks and unscored conversations, the notes, and how the two sides
    were judged differently. `headline` is the pass@1 row (always compared), whose minimum
    detectable effect and tasks needed the summary states. `unsettled`: the task-level verdict is
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
    population: str = "tasks"
    question: str = POPULATION_QUESTIONS["tasks"]
    attempt: AttemptView | None = None
    task_level_verdict: Value | None = None
    task_level_explanation: Value | None = None
    changed: tuple[ChangedRow, ...] = ()
    power: float = POWER
    judge_corrected: tuple[str, list[str]] | None = None
    """The comparison corrected for the judge's error, when either side was: (heading, lines) as
    every face words them (`compare.corrected.corrected_lines`)."""
    within_judge_error: bool = False

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
                tasks_needed_reason=metric.get("tasks_needed_reason"),
            )
        )
    population = comparison.get("population") or "tasks"
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
        unsettled=(comparison.get("task_level_verdict") or comparison["verdict"]) in ("inconclusive", "not_tested"),
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
        population=population,
        question=POPULATION_QUESTIONS[population],
        attempt=_attempt_view(comparison, at),
        task_level_verdict=at("task_level_verdict", style="verdict") if comparison.get("task_level_verdict") else None,
        task_level_explanation=at("task_level_explanation") if comparison.get("task_level_explanation") else None,
        changed=tuple(
            ChangedRow(
                task=t["task"],
                baseline=counts(t["baseline_successes"], t["baseline_attempts"]),
                candidate=counts(t["candidate_successes"], t["candidate_attempts"]),
                difference=at("changed_tasks", i, "difference", style="signed"),
                p_value=at("changed_tasks", i, "p_value", style="p"),
                significant_alone=bool(t["significant_alone"]),
            )
            for i, t in enumerate(comparison.get("changed_tasks") or [])
        ),
        judge_corrected=_corrected_view(comparison),
        within_judge_error=bool((comparison.get("judge_corrected") or {}).get("within_judge_error")),
    )


def _corrected_view(comparison: Mapping[str, Any]) -> tuple[str, list[str]] | None:
    """The judge-corrected comparison's (heading, lines), None when neither side was corrected."""
    if not comparison.get("judge_corrected"):
        return None
    from fair_forge_core.compare.corrected import corrected_lines
    from fair_forge_core.schemas import JudgeCorrectedComparison

    return corrected_lines(JudgeCorrectedComparison.model_validate(comparison["judge_corrected"]))


def _attempt_view(comparison: Mapping[str, Any], at: Any) -> AttemptView | None:
    """The attempt-level test's view, None in a comparison written before it existed."""
    if not comparison.get("attempt_test"):
        return None
    return AttemptView(
        verdict=at("attempt_test", "verdict", style="verdict"),
        explanation=at("attempt_test", "verdict_explanation"),
        p_value=at("attempt_test", "p_value", style="p"),
        floor=at("attempt_test", "floor", style="p"),
        informative_tasks=at("attempt_test", "informative_tasks"),
    )
