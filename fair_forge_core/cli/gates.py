"""The gates of `fair-forge evaluate`.

Gates of `evaluate` (each failure printed with the gate, the figure it read and by how much;
all are checked). The figures are the readiness basis's (`aggregated_metrics.readiness.basis`):
per task (τ-bench: attempts of one task are not independent draws) when the conversations have
task ids and some task has k scored attempts, else over scored conversations. A gate whose
figure was not measured fails.

- readiness "insufficient_evidence" (more than `config.max_unscored_share`, default 0.10, of
  the conversations unscored) fails unless `--allow-unscored`; the failure counts the trace
  attempts left unjoined by the import, by cause (`aggregated_metrics.unscored_by_cause`);
- `--fail-under-pass-pow-k X`: pass^k is below X (per task: `per_task.pass_pow_k`; over
  conversations: the point estimate, the posterior mean in Bayesian mode);
- every line names the figure it read by its one name (`headline.figure_name`: `pass^3` per
  task, `pass^3 (pooled plug-in)` or `pass^3 (pooled posterior mean)` over conversations);
- `--fail-if-lower-bound METRIC<X` (METRIC `pass_at_k` or `pass_pow_k`, repeatable): the
  lower bound of the two-sided interval at the request's `config.statistical_mode.ci_level`
  (default 0.95) is below X. Per task: the Wilson bound over tasks `per_task` carries. Over
  conversations, Bayesian mode: the credible bound the result carries (`pass_at_k_ci_low`,
  `pass_pow_k_ci_low`); frequentist mode: the Wilson score bound L of the conversation
  success rate c/n (`stats.wilson_interval`) pushed through the metric, which is increasing
  in p: pass^k ≥ L^k and pass@k ≥ 1 − (1 − L)^k;
- `--max-unscored N`: more than N conversations are unscored.

**Adaptive attempts** (`aggregated_metrics.adaptive`, a recording of `fair-forge run
--until-decided`; docs/how-to/ci.md "Adaptive attempts and the gates"): stopping on the outcomes
biases the per-task estimators and their Wilson bounds, so the gates read the tasks' anytime-valid
confidence sequences instead. `--fail-if-lower-bound METRIC<X` reads the mean over the tasks of
L^k (pass_pow_k) or 1 − (1 − L)^k (pass_at_k), L a task's lower bound (`adaptive_result`);
`--min-task-pass-rate X` fails naming every task whose lower bound is below X; `--fail-under-pass-pow-k`
still reads the headline point, named "adaptive stopping: biased"; `--max-flaky-tasks` counts as
without adaptive attempts (a task with a pass and a failure is flaky whatever the stopping).

Gates on tasks (`check_task_gates`), read from `flakiness.task_stability` of the result's
per-conversation metrics, whatever `config.task_stability` says; not measured, and so failed,
when some task (of some assistant) has fewer than 2 scored attempts:

- `--max-flaky-tasks N`: more than N tasks are flaky (some but not all attempts passed);
- `--min-task-pass-rate X`: some labelled task's observed pass rate (passed / attempts) is
  below X; the failure names every such task.

"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TextIO

from fair_forge_core.cli.common import say

if TYPE_CHECKING:
    from fair_forge_core.schemas import AdaptiveResult, AggregatedMetrics, TaskStability

GateMetric = Literal["pass_at_k", "pass_pow_k", "corrected.pass_at_k", "corrected.pass_pow_k"]
GATE_METRICS: tuple[GateMetric, ...] = ("pass_at_k", "pass_pow_k", "corrected.pass_at_k", "corrected.pass_pow_k")
"""`corrected.…` reads `aggregated_metrics.judge_corrected` (`corrected_gate_figure`)."""


@dataclass(frozen=True)
class LowerBoundGate:
    """`--fail-if-lower-bound METRIC<X`: fail when the lower bound of METRIC is below X."""

    metric: GateMetric
    threshold: float

    def __str__(self) -> str:
        return f"{self.metric}<{self.threshold:g}"


def lower_bound(aggregated: AggregatedMetrics, metric: GateMetric, level: float) -> float | None:
    """The lower bound `--fail-if-lower-bound` reads: of the two-sided interval at `level`.

    Bayesian mode: the credible bound the result carries (`pass_at_k_ci_low` or
    `pass_pow_k_ci_low`, at the request's `ci_level`, which is `level`). Frequentist mode:
    with L the low end of `stats.wilson_interval(n, c, level)` for the n scored and c fully
    correct conversations, L^k for pass_pow_k and 1 − (1 − L)^k for pass_at_k (both
    increasing in p, so the bound of p gives the metric's). None when nothing was scored.
    """
    from fair_forge_core import stats

    if aggregated.total_conversations == 0:
        return None
    if aggregated.statistical_mode == "bayesian":
        return aggregated.pass_at_k_ci_low if metric == "pass_at_k" else aggregated.pass_pow_k_ci_low
    low, _ = stats.wilson_interval(aggregated.total_conversations, aggregated.fully_correct_conversations, level)
    k = aggregated.k
    return stats.at_least_one_of(low, k) if metric == "pass_at_k" else low**k


@dataclass(frozen=True)
class GateFigure:
    """What a gate reads of `metric`: the point and its lower bound (None where not measured),
    the figure's one name (`headline.figure_name`: `pass^3` per task, `pass^3 (pooled plug-in)`
    over conversations), what it is computed over, and how the bound is."""

    point: float | None
    bound: float | None
    label: str
    scope: str
    bound_method: str
    bound_label: str | None = None
    """The bound's own name when it is not the point's (adaptive attempts: the confidence sequences')."""


def gate_figure(aggregated: AggregatedMetrics, metric: GateMetric, level: float) -> GateFigure:
    """`metric` as the gates read it: the per-task figures when readiness is decided per task
    (their Wilson bound over tasks), else the figures over scored conversations (`lower_bound`),
    each under its name (`headline.figure_name`)."""
    from fair_forge_core.compare.verdict import level_text
    from fair_forge_core.headline import figure_name, headline_figure

    if metric == "corrected.pass_at_k" or metric == "corrected.pass_pow_k":
        return corrected_gate_figure(aggregated, metric)
    k = aggregated.k
    kind = headline_figure(aggregated)
    per_task, adaptive = aggregated.per_task, aggregated.adaptive
    if adaptive is not None:
        return adaptive_gate_figure(aggregated, adaptive, metric)
    if kind == "per_task" and per_task is not None:
        tasks = f"{per_task.tasks_with_k_attempts} task(s) with {k} or more attempts"
        return GateFigure(
            point=per_task.pass_at_k if metric == "pass_at_k" else per_task.pass_pow_k,
            bound=per_task.pass_at_k_ci_low if metric == "pass_at_k" else per_task.pass_pow_k_ci_low,
            label=figure_name(metric, k, kind),
            scope=f"per task, τ-bench, {tasks}",
            bound_method=f"{level_text(per_task.ci_level or level)} Wilson bound over {tasks}",
        )
    n, c = aggregated.total_conversations, aggregated.fully_correct_conversations
    return GateFigure(
        point=aggregated.pass_at_k if metric == "pass_at_k" else aggregated.pass_pow_k,
        bound=lower_bound(aggregated, metric, level),
        label=figure_name(metric, k, kind),
        scope=f"over {n} scored conversation(s)",
        bound_method=f"{level_text(level)} credible bound"
        if aggregated.statistical_mode == "bayesian"
        else f"from the {level_text(level)} Wilson bound of {c}/{n} conversations",
    )


def corrected_gate_figure(
    aggregated: AggregatedMetrics, metric: Literal["corrected.pass_at_k", "corrected.pass_pow_k"]
) -> GateFigure:
    """`corrected.pass_at_k` / `corrected.pass_pow_k`: the per-task figure corrected for the judge's
    error and its posterior lower bound (`aggregated_metrics.judge_corrected`); not measured (so a
    gate on it fails) without `--judge-error` / `config.judge_error`, or without a task of k attempts."""
    from fair_forge_core.compare.verdict import level_text
    from fair_forge_core.headline import CORRECTED_LABEL, symbol

    corrected, k = aggregated.judge_corrected, aggregated.k
    base: Literal["pass_at_k", "pass_pow_k"] = "pass_at_k" if metric == "corrected.pass_at_k" else "pass_pow_k"
    label = f"{symbol(base, k)} ({CORRECTED_LABEL})"
    if corrected is None:
        return GateFigure(None, None, label, "no --judge-error / config.judge_error", "not measured")
    at_k = base == "pass_at_k"
    return GateFigure(
        point=corrected.pass_at_k if at_k else corrected.pass_pow_k,
        bound=corrected.pass_at_k_ci_low if at_k else corrected.pass_pow_k_ci_low,
        label=label,
        scope=f"{corrected.tasks_with_k_attempts} task(s) with {k} or more attempts",
        bound_method=f"{level_text(corrected.ci_level)} posterior bound, TPR {corrected.tpr.successes}/{corrected.tpr.n}, "
        f"TNR {corrected.tnr.successes}/{corrected.tnr.n}",
    )


def adaptive_gate_figure(
    aggregated: AggregatedMetrics, adaptive: AdaptiveResult, metric: Literal["pass_at_k", "pass_pow_k"]
) -> GateFigure:
    """`metric` as the gates read it when attempts were adaptive (module docstring): the point is
    the headline figure, named "adaptive stopping: biased" where it is; the bound is the mean over
    the tasks of their confidence-sequence bounds mapped to the metric (`adaptive_result`)."""
    from fair_forge_core.headline import figure_name, headline_figure, symbol

    k, kind, per_task = aggregated.k, headline_figure(aggregated), aggregated.per_task
    if kind == "per_task" and per_task is not None:
        point = per_task.pass_at_k if metric == "pass_at_k" else per_task.pass_pow_k
    else:
        point = aggregated.pass_at_k if metric == "pass_at_k" else aggregated.pass_pow_k
    mapped = "1-(1-L)^k" if metric == "pass_at_k" else "L^k"
    return GateFigure(
        point=point,
        bound=adaptive.pass_at_k_lower if metric == "pass_at_k" else adaptive.pass_pow_k_lower,
        label=figure_name(metric, k, kind, adaptive=True),
        bound_label=f"{symbol(metric, k)} (per task, adaptive confidence sequences)",
        scope=f"adaptive attempts over {len(adaptive.tasks)} task(s)",
        bound_method=(
            f"the mean over {len(adaptive.tasks)} task(s) of {mapped}, L a task's anytime-valid "
            f"confidence-sequence lower bound at α = {adaptive.level:g}"
        ),
    )


def check_gates(args: argparse.Namespace, aggregated: AggregatedMetrics, level: float, stderr: TextIO) -> list[str]:
    """Every gate's failure as a line (`FAILED: …`, with the gate, the figure it read and by how
    much); the passed gates are printed as `gate met:` lines unless `--quiet`. A gate whose
    figure was not measured (nothing scored, no task with k attempts) fails: what was not
    measured never reads as a pass. Readiness "insufficient_evidence" fails unless
    `--allow-unscored`."""
    failures: list[str] = []
    passed: list[str] = []
    threshold = args.fail_under_pass_pow_k
    if threshold is not None:
        figure = gate_figure(aggregated, "pass_pow_k", level)
        gate = f"--fail-under-pass-pow-k {threshold:g}"
        line = f"{figure.label} = {figure.point:.4f} ({figure.scope})" if figure.point is not None else ""
        if figure.point is None:
            failures.append(f"{figure.label} ({figure.scope}) was not measured: {gate} cannot be met")
        elif figure.point < threshold:
            failures.append(f"{line} is below {gate} by {threshold - figure.point:.4f}")
        else:
            passed.append(f"{line} ≥ {gate}")
    for lower_gate in args.fail_if_lower_bound:
        figure = gate_figure(aggregated, lower_gate.metric, level)
        flag = f"--fail-if-lower-bound {lower_gate}"
        name = figure.bound_label or figure.label
        line = f"lower bound of {name} = {figure.bound:.4f} ({figure.bound_method})" if figure.bound is not None else ""
        if figure.bound is None:
            failures.append(f"the lower bound of {name} ({figure.scope}) was not measured: {flag} cannot be met")
        elif figure.bound < lower_gate.threshold:
            failures.append(
                f"{line} is below {lower_gate.threshold:g} by {lower_gate.threshold - figure.bound:.4f} ({flag})"
            )
        else:
            passed.append(f"{line} ≥ {lower_gate.threshold:g} ({flag})")
    unscored = aggregated.unscored_conversations
    if args.max_unscored is not None:
        if unscored > args.max_unscored:
            failures.append(
                f"{unscored} conversation(s) unscored, more than --max-unscored {args.max_unscored} "
                f"by {unscored - args.max_unscored}"
            )
        else:
            passed.append(f"{unscored} conversation(s) unscored, at most --max-unscored {args.max_unscored}")
    readiness = aggregated.readiness
    if readiness is not None and readiness.status == "insufficient_evidence":
        if args.allow_unscored:
            passed.append(
                f"readiness is insufficient_evidence ({unscored} conversation(s) unscored), allowed by --allow-unscored"
            )
        else:
            from fair_forge_core.tiers import unjoined_phrase

            # Attempts left unjoined by the import are named with their causes: the likeliest
            # surprise behind a failed gate on a run whose scored attempts all passed.
            why = f" ({unjoined_phrase(aggregated.unscored_by_cause)})" if aggregated.unscored_by_cause else ""
            failures.append(
                f"not enough evidence: {unscored} of {readiness.total} conversation(s) unscored{why}, more than "
                "config.max_unscored_share allows (pass --allow-unscored to accept a result with unscored data)"
            )
    if not args.quiet:
        for line in passed:
            say(stderr, f"gate met: {line}")
    return failures


def _task_list(tasks: list[str]) -> str:
    """At most 10 task ids, and how many more."""
    shown = ", ".join(tasks[:10])
    return shown if len(tasks) <= 10 else f"{shown} and {len(tasks) - 10} more"


def check_task_gates(
    args: argparse.Namespace, stability: TaskStability, stderr: TextIO, adaptive: AdaptiveResult | None = None
) -> list[str]:
    """The failures of `--max-flaky-tasks` and `--min-task-pass-rate` (module docstring), as
    `check_gates` reports its own. A task gate fails when some task (of some assistant) has fewer
    than 2 scored attempts, none included: its stability, or its pass rate, was not measured. When
    attempts were `adaptive`, `--min-task-pass-rate` reads the tasks' lower bounds instead
    (`adaptive_pass_rate_gate`). The passed gates are printed as `gate met:` lines unless `--quiet`."""
    from fair_forge_core.flakiness import MIN_ATTEMPTS, task_name

    failures: list[str] = []
    passed: list[str] = []
    if adaptive is not None and args.min_task_pass_rate is not None:
        failed, line = adaptive_pass_rate_gate(adaptive, args.min_task_pass_rate)
        (failures if failed else passed).append(line)
    tasks = stability.tasks
    total = len(tasks) + stability.unlabelled
    not_measured = (
        f"{stability.unlabelled} of {total} task(s) have fewer than {MIN_ATTEMPTS} scored attempts, "
        "so their stability was not measured"
    )
    if args.max_flaky_tasks is not None:
        gate = f"--max-flaky-tasks {args.max_flaky_tasks}"
        flaky = [task_name(t, stability) for t in tasks if t.label == "flaky"]
        if len(flaky) > args.max_flaky_tasks:
            failures.append(
                f"{len(flaky)} of {total} task(s) flaky, more than {gate} "
                f"by {len(flaky) - args.max_flaky_tasks}: {_task_list(flaky)}"
            )
        elif stability.unlabelled:
            failures.append(f"{not_measured}: {gate} cannot be met")
        else:
            passed.append(f"{len(flaky)} of {total} task(s) flaky, at most {gate}")
    threshold = args.min_task_pass_rate
    if threshold is not None and adaptive is None:
        gate = f"--min-task-pass-rate {threshold:g}"
        below = [t for t in tasks if t.pass_rate < threshold]
        if below:
            names = [f"{task_name(t, stability)} {t.passed}/{t.attempts}" for t in below]
            failures.append(f"{len(below)} of {total} task(s) pass less often than {gate}: {_task_list(names)}")
        elif stability.unlabelled:
            failures.append(f"{not_measured}: {gate} cannot be met")
        else:
            lowest = min(tasks, key=lambda t: t.pass_rate)
            passed.append(
                f"every one of {total} task(s) passes at least {gate} "
                f"(lowest: {task_name(lowest, stability)} {lowest.passed}/{lowest.attempts})"
            )
    if not args.quiet:
        for line in passed:
            say(stderr, f"gate met: {line}")
    return failures


def adaptive_pass_rate_gate(adaptive: AdaptiveResult, threshold: float) -> tuple[bool, str]:
    """`--min-task-pass-rate X` when attempts were adaptive: (failed, its line). It fails naming
    every task whose confidence-sequence lower bound on its per-attempt success rate is below X
    (not shown, at level α whatever the stopping, to pass at least X of the time); a task with no
    scored attempt has the bound 0."""
    gate = f"--min-task-pass-rate {threshold:g}"
    total = len(adaptive.tasks)
    below = [(task_id, task) for task_id, task in adaptive.tasks.items() if task.lower < threshold]
    if below:
        names = [
            f"{task_id} {task.successes}/{task.attempts} (lower bound {task.lower:.3f})" for task_id, task in below
        ]
        return True, (
            f"{len(below)} of {total} task(s) not shown to pass at least {gate} (confidence-sequence lower "
            f"bound below {threshold:g}, α = {adaptive.level:g}): {_task_list(names)}"
        )
    task_id, lowest = min(adaptive.tasks.items(), key=lambda item: item[1].lower)
    return False, (
        f"every one of {total} task(s) passes at least {gate} by its confidence-sequence lower bound "
        f"(lowest: {task_id} {lowest.lower:.3f}, α = {adaptive.level:g})"
    )
