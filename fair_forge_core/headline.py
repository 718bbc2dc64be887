"""The headline of a result in words: what the CLI prints on stderr and `make run` shows.

Readiness comes first (`AggregatedMetrics.readiness`: the tier the evidence supports and
whether it is enough), then the figures the tier was decided on, then the sample-size
warning wherever a tier is shown. Numbers have 3 decimals; a figure that does not exist
says why ("n/a (no task has 3 attempts)"). Pure: text from a result, no I/O.
"""

from __future__ import annotations

from fair_forge_core.schemas import AggregatedMetrics, PerTaskMetrics


def figure(value: float | None, missing: str = "n/a") -> str:
    """A rate to 3 decimals, or `missing` when it does not exist."""
    return missing if value is None else f"{value:.3f}"


def per_task_line(per_task: PerTaskMetrics, k: int) -> str:
    """The per-task figures with their intervals, or why there are none."""
    if per_task.pass_at_k is None or per_task.pass_pow_k is None:
        return f"per task: n/a (no task has {k} scored attempts; {per_task.tasks} task(s))"
    level = f"{(per_task.ci_level or 0.95) * 100:g}%"
    return (
        f"per task (τ-bench, {per_task.tasks_with_k_attempts} of {per_task.tasks} task(s) with {k} or more attempts): "
        f"pass@{k} = {per_task.pass_at_k:.3f} [{figure(per_task.pass_at_k_ci_low)}, {figure(per_task.pass_at_k_ci_high)}], "
        f"pass^{k} = {per_task.pass_pow_k:.3f} [{figure(per_task.pass_pow_k_ci_low)}, {figure(per_task.pass_pow_k_ci_high)}] "
        f"({level} Wilson interval over tasks)"
    )


def headline_lines(aggregated: AggregatedMetrics) -> list[str]:
    """The headline of `aggregated`, one line each:

    - `readiness: <summary>` (`Readiness.summary`);
    - `tier: <interpretation> — pass@k = …, pass^k = … (c/n conversations fully correct)`, the
      seeds' tier over scored conversations, labelled as not the headline when readiness is
      per task; `n/a` figures when nothing was scored;
    - the per-task line (`per_task_line`) when the result has `per_task`;
    - `warning: <sample_size_warning>` when there is one.
    """
    k = aggregated.k
    lines = []
    readiness = aggregated.readiness
    if readiness is not None:
        lines.append(f"readiness: {readiness.summary}")
    label = "tier over conversations" if readiness is not None and readiness.basis == "per_task" else "tier"
    lines.append(
        f"{label}: {aggregated.interpretation or 'none (nothing scored)'} — pass@{k} = {figure(aggregated.pass_at_k)}, "
        f"pass^{k} = {figure(aggregated.pass_pow_k)} "
        f"({aggregated.fully_correct_conversations}/{aggregated.total_conversations} scored conversations fully correct)"
    )
    if aggregated.per_task is not None:
        lines.append(per_task_line(aggregated.per_task, k))
    if aggregated.sample_size_warning:
        lines.append(f"warning: {aggregated.sample_size_warning}")
    return lines
