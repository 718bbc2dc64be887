"""How every face names a compared metric (the CLI, the Markdown, the JUnit, the HTML report).

One name per figure (docs/statistics.md, the glossary): "pass^k" alone is the per-task unbiased
mean over tasks — the headline figure readiness and the gates read — and the plug-in figures
carry their qualifier. The JSON names stay (`pass^k` is the plug-in one, `pass^k_unbiased` the
headline)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fair_forge_core.headline import Figure, Metric, figure_name

if TYPE_CHECKING:
    from fair_forge_core.schemas import Comparison

METRIC_FIGURES: dict[str, tuple[Metric, Figure]] = {
    "pass@k": ("pass_at_k", "per_task_plug_in"),
    "pass^k": ("pass_pow_k", "per_task_plug_in"),
    "pass@k_unbiased": ("pass_at_k", "per_task"),
    "pass^k_unbiased": ("pass_pow_k", "per_task"),
}
"""Which figure of the glossary (`headline.figure_name`) each compared metric's JSON name is;
pass@1 is named as it is."""

HEADLINE_METRIC = "pass^k_unbiased"
"""The metric each side's headline pass^k is (at k = 1: pass@1)."""


def metric_label(metric: str, k: int) -> str:
    """How a compared metric is named at `k`: "pass@1", "pass^3" (per-task unbiased, the
    headline), "pass@3", "pass^3 (per-task plug-in)", "pass@3 (per-task plug-in)"; an unknown
    name as it is."""
    if metric not in METRIC_FIGURES:
        return metric
    symbol, figure = METRIC_FIGURES[metric]
    return figure_name(symbol, k, figure)


def side_headlines(comparison: Comparison) -> tuple[str, str]:
    """Each side's headline pass^k (per-task unbiased; pass@1 at k = 1) as `, pass^3 0.833`,
    followed by ` over N task(s)` when it is over fewer tasks than are shared (the unbiased
    figure needs k scored attempts on both sides); ("", "") when it was not computed."""
    wanted = "pass@1" if comparison.k == 1 else HEADLINE_METRIC
    metric = next((m for m in comparison.metrics if m.metric == wanted), None)
    if metric is None or metric.baseline is None or metric.candidate is None:
        return "", ""
    label = metric_label(metric.metric, metric.k)
    over = f" over {metric.tasks} task(s)" if metric.tasks != comparison.shared_tasks else ""
    return f", {label} {metric.baseline:.3f}{over}", f", {label} {metric.candidate:.3f}{over}"


MAX_CHANGED_TASKS = 20
"""How many of the tasks that changed the CLI, the Markdown and the JUnit list (worst first; the
rest are counted; the JSON and the HTML report hold them all)."""

POPULATION_QUESTIONS = {
    "attempts": "is the candidate worse on these tasks?",
    "tasks": "would the difference generalise to new tasks?",
}
"""What each `--population` asks, as every face words it."""


def counts(successes: int, attempts: int) -> str:
    """A side's count of one task as the faces print it: c/n."""
    return f"{successes}/{attempts}"
