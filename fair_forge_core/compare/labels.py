"""How every face names a compared metric (the CLI, the Markdown, the JUnit, the HTML report).

One name per figure (docs/statistics.md, the glossary): "pass^k" alone is the per-task unbiased
mean over tasks — the headline figure readiness and the gates read — and the plug-in figures
carry their qualifier. The JSON names stay (`pass^k` is the plug-in one, `pass^k_unbiased` the
headline)."""

from __future__ import annotations

METRIC_LABELS = {
    "pass@1": "pass@1",
    "pass@k": "pass@{k} (per-task plug-in)",
    "pass^k": "pass^{k} (per-task plug-in)",
    "pass@k_unbiased": "pass@{k}",
    "pass^k_unbiased": "pass^{k}",
}
"""Label templates by the metric's JSON name, `{k}` its k."""

HEADLINE_METRIC = "pass^k_unbiased"
"""The metric each side's headline pass^k is (at k = 1: pass@1)."""


def metric_label(metric: str, k: int) -> str:
    """How a compared metric is named at `k`: "pass@1", "pass^3" (per-task unbiased, the
    headline), "pass@3", "pass^3 (per-task plug-in)", "pass@3 (per-task plug-in)"; an unknown
    name as it is."""
    return METRIC_LABELS.get(metric, metric).format(k=k)


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
