"""The headline of a result in words, and the one name of each pass@k / pass^k figure.

The headline is what the CLI prints first on stderr, `make run` shows, the Markdown summary
opens with and the gates name: readiness (`AggregatedMetrics.readiness`: the tier the evidence
supports and whether it is enough) with the figures that tier was decided on, then the other
figures, each named by what it is, then the sample-size warning wherever a tier is shown.
Numbers have 3 decimals; a figure that does not exist says why ("n/a (no task has 3 scored
attempts)"). Pure: text from a result, no I/O.

One name per figure (docs/statistics.md, "Which pass^k is which"): the bare `pass^k` / `pass@k`
is the per-task figure (`per_task.pass_pow_k`, the τ-bench mean of C(c, k)/C(n, k) over the
tasks with k attempts), the headline whenever readiness is decided per task; every other
figure carries its qualifier — `pass^k (pooled plug-in)` (the aggregate's `pass_pow_k`, (c/n)^k
over the scored conversations; `pass^k (pooled posterior mean)` in Bayesian mode, where that
field is E[p^k]), `pass^k (pooled unbiased)` (`pass_pow_k_unbiased`), `pass^k (per-task
plug-in)` (the mean of (c/n)^k over tasks, `compare`'s) and `pass^k (per-conversation)` (a
conversation's turns as the k draws). Without a per-task basis the headline is the pooled
figure, named so. When the attempts were adaptive (`aggregated_metrics.adaptive`), the figures
adaptive stopping biases (`BIASED_FIGURES`) say so in their name (`pass^3 (per task, adaptive
stopping: biased)`), and the headline adds the tasks' decisions (`adaptive_line`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from fair_forge_core.schemas import (
    AdaptiveResult,
    AggregatedMetrics,
    ConversationMetrics,
    JudgeCorrected,
    NoiseDecomposition,
    PerTaskMetrics,
)

Metric = Literal["pass_at_k", "pass_pow_k"]
Figure = Literal[
    "per_task", "per_task_plug_in", "pooled_plug_in", "pooled_posterior_mean", "pooled_unbiased", "per_conversation"
]

QUALIFIERS: dict[Figure, str] = {
    "per_task": "",
    "per_task_plug_in": "per-task plug-in",
    "pooled_plug_in": "pooled plug-in",
    "pooled_posterior_mean": "pooled posterior mean",
    "pooled_unbiased": "pooled unbiased",
    "per_conversation": "per-conversation",
}
"""Each figure's qualifier, written after its symbol in parentheses; the per-task figure has none."""


ADAPTIVE_LABEL = "adaptive stopping: biased"
"""Added to the name of every figure adaptive stopping biases (docs/statistics.md "Adaptive attempts")."""
BIASED_FIGURES: frozenset[Figure] = frozenset({"per_task", "per_task_plug_in", "pooled_unbiased"})
"""The figures whose classical meaning (unbiased, or a mean over tasks with k attempts) adaptive
stopping breaks: the unbiased per-task and pooled estimators, and the per-task plug-in mean."""


def symbol(metric: Metric, k: int | str) -> str:
    """`pass@3` or `pass^3` (`k` may be a letter: `pass^K` for the curve)."""
    return f"pass@{k}" if metric == "pass_at_k" else f"pass^{k}"


def figure_name(metric: Metric, k: int | str, figure: Figure, adaptive: bool = False) -> str:
    """The one name of a figure: `pass^3` for the per-task one, `pass^3 (pooled plug-in)` and so
    on for the others (`QUALIFIERS`). When attempts were `adaptive`, a figure of `BIASED_FIGURES`
    says so: `pass^3 (per task, adaptive stopping: biased)`, `pass^3 (pooled unbiased, adaptive
    stopping: biased)`."""
    qualifier = QUALIFIERS[figure]
    if adaptive and figure in BIASED_FIGURES:
        qualifier = f"{qualifier or 'per task'}, {ADAPTIVE_LABEL}"
    return f"{symbol(metric, k)} ({qualifier})" if qualifier else symbol(metric, k)


def pooled_figure(statistical_mode: str) -> Figure:
    """What the aggregate's `pass_at_k` / `pass_pow_k` are: the plug-in (c/n)^k, or in Bayesian
    mode the posterior mean E[p^k]."""
    return "pooled_posterior_mean" if statistical_mode == "bayesian" else "pooled_plug_in"


def headline_figure_of(basis: str | None, has_per_task: bool, statistical_mode: str) -> Figure:
    """The figure readiness was decided on, from its `basis` (None without readiness): `per_task`
    when the basis is per task and the result has `per_task`, else the pooled one (`pooled_figure`)."""
    return "per_task" if basis == "per_task" and has_per_task else pooled_figure(statistical_mode)


def headline_figure(aggregated: AggregatedMetrics) -> Figure:
    """`headline_figure_of` an aggregate: the figure its readiness was decided on."""
    readiness = aggregated.readiness
    return headline_figure_of(
        None if readiness is None else readiness.basis, aggregated.per_task is not None, aggregated.statistical_mode
    )


def figure(value: float | None, missing: str = "n/a") -> str:
    """A rate to 3 decimals, or `missing` when it does not exist."""
    return missing if value is None else f"{value:.3f}"


def _bounds(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"


def per_task_figures(per_task: PerTaskMetrics, k: int, adaptive: bool = False) -> str:
    """The per-task figures with their intervals and what they are over, or why there are none:
    `pass@3 = 1.000 [0.758, 1.000], pass^3 = 0.833 [0.552, 0.953] (per task, τ-bench: 12 of 12
    task(s) with 3 or more attempts, 95% Wilson interval over tasks)`; named `pass^3 (per task,
    adaptive stopping: biased)` when attempts were `adaptive` (`figure_name`)."""
    at_k, pow_k = figure_name("pass_at_k", k, "per_task", adaptive), figure_name("pass_pow_k", k, "per_task", adaptive)
    if per_task.pass_at_k is None or per_task.pass_pow_k is None:
        return f"{at_k}, {pow_k}: n/a (no task has {k} scored attempts; {per_task.tasks} task(s))"
    level = f"{(per_task.ci_level or 0.95) * 100:g}%"
    return (
        f"{at_k} = {per_task.pass_at_k:.3f}{_bounds(per_task.pass_at_k_ci_low, per_task.pass_at_k_ci_high)}, "
        f"{pow_k} = {per_task.pass_pow_k:.3f}{_bounds(per_task.pass_pow_k_ci_low, per_task.pass_pow_k_ci_high)} "
        f"(per task, τ-bench: {per_task.tasks_with_k_attempts} of {per_task.tasks} task(s) with {k} or more attempts, "
        f"{level} Wilson interval over tasks)"
    )


def pooled_figures(aggregated: AggregatedMetrics) -> str:
    """The aggregate's pass@k and pass^k under their names, the credible intervals in Bayesian
    mode, and the count they are over: `pass@3 (pooled plug-in) = 1.000, pass^3 (pooled plug-in)
    = 0.842 (34/36 scored conversations fully correct)`."""
    k, pooled = aggregated.k, pooled_figure(aggregated.statistical_mode)
    return (
        f"{figure_name('pass_at_k', k, pooled)} = {figure(aggregated.pass_at_k)}"
        f"{_bounds(aggregated.pass_at_k_ci_low, aggregated.pass_at_k_ci_high)}, "
        f"{figure_name('pass_pow_k', k, pooled)} = {figure(aggregated.pass_pow_k)}"
        f"{_bounds(aggregated.pass_pow_k_ci_low, aggregated.pass_pow_k_ci_high)} "
        f"({aggregated.fully_correct_conversations}/{aggregated.total_conversations} scored conversations fully correct)"
    )


def headline_lines(aggregated: AggregatedMetrics) -> list[str]:
    """The headline of `aggregated`, one line each:

    - `readiness: <summary>; <the figures readiness was decided on>`: per task
      (`per_task_figures`) under the per-task basis, else the pooled ones (`pooled_figures`);
    - under the per-task basis, `tier over conversations: <interpretation> — <pooled figures>`,
      the seeds' tier over the scored conversations, each figure qualified;
    - when conversations carry task ids but no task has k attempts, the per-task line saying so;
    - when attempts were adaptive, `adaptive_line` (and the per-task figures labelled biased);
    - `warning: <sample_size_warning>` when there is one.

    A result without readiness (written before it existed) opens with `tier: <interpretation>
    — <pooled figures>`. Nothing scored reads `none (nothing scored)` with `n/a` figures.
    """
    k = aggregated.k
    readiness, per_task = aggregated.readiness, aggregated.per_task
    adaptive = aggregated.adaptive is not None
    tier = aggregated.interpretation or "none (nothing scored)"
    lines = []
    if readiness is None:
        lines.append(f"tier: {tier} — {pooled_figures(aggregated)}")
    elif headline_figure(aggregated) == "per_task" and per_task is not None:
        lines.append(f"readiness: {readiness.summary}; {per_task_figures(per_task, k, adaptive)}")
        lines.append(f"tier over conversations: {tier} — {pooled_figures(aggregated)}")
    else:
        lines.append(f"readiness: {readiness.summary}; {pooled_figures(aggregated)}")
    if per_task is not None and headline_figure(aggregated) != "per_task":
        lines.append(f"per task: {per_task_figures(per_task, k, adaptive)}")
    if aggregated.adaptive is not None:
        lines.append(adaptive_line(aggregated.adaptive, k))
    if aggregated.judge_corrected is not None:
        lines.append(judge_corrected_line(aggregated.judge_corrected, per_task))
    if aggregated.judge_noise is not None:
        lines.append(judge_noise_line(aggregated.judge_noise))
    if aggregated.sample_size_warning:
        lines.append(f"warning: {aggregated.sample_size_warning}")
    return lines


CORRECTED_LABEL = "per task, corrected for the judge's error"
"""The qualifier of the figures of `aggregated_metrics.judge_corrected`: `pass^3 (per task, corrected for the judge's error)`."""


def calibration_counts(corrected: JudgeCorrected) -> str:
    """What the correction was measured on: `TPR 25/29, TNR 26/26, calibration.json` (successes/n
    of each; the source only when the calibration names one)."""
    source = f", {corrected.source}" if corrected.source else ""
    return f"TPR {corrected.tpr.successes}/{corrected.tpr.n}, TNR {corrected.tnr.successes}/{corrected.tnr.n}{source}"


def corrected_method(corrected: JudgeCorrected) -> str:
    """How the corrected figures were drawn: `posterior, 4000 seeded draws; 2 task(s) clipped to
    [0, 1]` (the clipped tasks only when there are any), or, under "identity" (a perfect
    calibration), `exact judge: today's figures`."""
    if corrected.method == "identity":
        return "exact judge: today's figures"
    clipped = f"; {len(corrected.clipped_tasks)} task(s) clipped to [0, 1]" if corrected.clipped_tasks else ""
    return f"posterior, {corrected.draws} seeded draws{clipped}"


def judge_corrected_line(corrected: JudgeCorrected, per_task: PerTaskMetrics | None) -> str:
    """The corrected figures in one line, beside the observed per-task pass^k: `corrected for the
    judge's error (TPR 21/24, TNR 15/18, calibration.json): pass^3 (per task, corrected for the
    judge's error) = 0.412 [0.201, 0.650], pass@3 … = 0.903 [0.801, 0.970]; observed pass^3 = 0.500
    (posterior, 4000 seeded draws; 2 task(s) clipped to [0, 1])` (`calibration_counts`,
    `corrected_method`)."""
    k = corrected.k
    head = f"corrected for the judge's error ({calibration_counts(corrected)})"
    if corrected.pass_pow_k is None or corrected.pass_at_k is None:
        return f"{head}: not measured (no task with {k} or more attempts)"
    pow_name, at_name = (f"{symbol(m, k)} ({CORRECTED_LABEL})" for m in ("pass_pow_k", "pass_at_k"))
    observed = (
        ""
        if per_task is None or per_task.pass_pow_k is None
        else f"; observed {symbol('pass_pow_k', k)} = {per_task.pass_pow_k:.3f}"
    )
    return (
        f"{head}: {pow_name} = {corrected.pass_pow_k:.3f} [{corrected.pass_pow_k_ci_low:.3f}, "
        f"{corrected.pass_pow_k_ci_high:.3f}], {at_name} = {corrected.pass_at_k:.3f} "
        f"[{corrected.pass_at_k_ci_low:.3f}, {corrected.pass_at_k_ci_high:.3f}]{observed} ({corrected_method(corrected)})"
    )


NOISE_ESTIMATORS = {"latent_class": "latent class", "one_way_anova": "one-way ANOVA"}
"""Each `NoiseDecomposition.estimator` in words."""


def judge_noise_line(noise: NoiseDecomposition) -> str:
    """`aggregated_metrics.judge_noise` in one line: `judge noise: 64 % of the variance in judged
    success is between the judge's samples of one transcript (latent class, 3 task(s)); agent
    36 %`, or why it was not measured."""
    how = f"{NOISE_ESTIMATORS[noise.estimator]}, {noise.tasks} task(s)"
    if noise.judge_share is None or noise.agent_share is None:
        return f"judge noise: not measured ({how}: no task with 2 read attempts and any variance)"
    return (
        f"judge noise: {noise.judge_share:.0%} of the variance in judged success is between the judge's samples"
        f" of one transcript ({how}); agent {noise.agent_share:.0%}"
    )


def adaptive_line(adaptive: AdaptiveResult, k: int) -> str:
    """The adaptive attempts in one line: `adaptive attempts (p>=0.5, boundary p* = 0.500): 3
    task(s): 1 above, 1 below, 1 undecided (anytime-valid confidence sequences, α = 0.05, at most 20
    attempts a task); lower bounds pass@3 ≥ 0.420, pass^3 ≥ 0.101 (mean over tasks)`."""
    tasks = len(adaptive.tasks)
    line = (
        f"adaptive attempts ({adaptive.question}, boundary p* = {adaptive.boundary:.3f}): {tasks} task(s): "
        f"{adaptive.above} above, {adaptive.below} below, {adaptive.undecided} undecided "
        f"(anytime-valid confidence sequences, α = {adaptive.level:g}, at most {adaptive.max_attempts} attempts a task)"
    )
    if adaptive.pass_at_k_lower is None or adaptive.pass_pow_k_lower is None:
        return line
    return (
        f"{line}; lower bounds {symbol('pass_at_k', k)} ≥ {adaptive.pass_at_k_lower:.3f}, "
        f"{symbol('pass_pow_k', k)} ≥ {adaptive.pass_pow_k_lower:.3f} (mean over tasks)"
    )


def adaptive_task_lines(adaptive: AdaptiveResult) -> list[str]:
    """Each task of adaptive attempts, one line: `  above: t-easy, 8 of 8 scored attempts passed
    (confidence sequence 0.522 to 1.000)`, in the run's task order."""
    return [
        f"  {task.decided}: {task_id}, {task.successes} of {task.attempts} scored attempts passed "
        f"(confidence sequence {task.lower:.3f} to {task.upper:.3f})"
        for task_id, task in adaptive.tasks.items()
    ]


def goal_line(conversations: Sequence[ConversationMetrics]) -> str | None:
    """What the judge said of the conversations' goals (`goal_check`), or None when no
    conversation has a goal: `goals: 3 conversation(s) with a goal — 1 achieved, 1 not
    achieved, 1 not judged (the offline judge abstains on goals); required to pass`. The
    reason of the goals not judged is named when they share one; `required to pass` (or
    `reported, not required`, or how many of them are required) is `config.require_goal`."""
    checks = [c.goal_check for c in conversations if c.goal_check is not None]
    if not checks:
        return None
    achieved = sum(1 for g in checks if g.goal_achieved is True)
    missed = sum(1 for g in checks if g.goal_achieved is False)
    unjudged = [g.error or "no reason given" for g in checks if g.goal_achieved is None]
    line = f"goals: {len(checks)} conversation(s) with a goal — {achieved} achieved, {missed} not achieved, "
    line += f"{len(unjudged)} not judged"
    reasons = Counter(unjudged)
    if len(reasons) == 1:
        line += f" ({next(iter(reasons))})"
    required = sum(1 for g in checks if g.required)
    if required == len(checks):
        return line + "; required to pass"
    return line + ("; reported, not required" if required == 0 else f"; {required} of them required to pass")
