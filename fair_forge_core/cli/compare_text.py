"""The readable report `fair-forge compare` prints (and `assert_no_regression` fails with):
`format_comparison`. The layout is on it; the rules are docs/compare.md's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fair_forge_core.schemas import Comparison

__all__ = ["VERDICT_HEADLINES", "format_comparison", "metric_label"]


def metric_label(metric: str, k: int) -> str:
    """`compare.labels.metric_label`, imported when called: importing the `compare` package
    loads the schemas (pydantic), and `fair-forge --help` imports this module."""
    from fair_forge_core.compare.labels import metric_label as label

    return label(metric, k)


def _value(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _p_value(p: float | None) -> str:
    if p is None:
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _probability(p: float) -> str:
    """`= p` to 3 decimals, or `> 0.999` / `< 0.001` rather than a rounded 1 or 0."""
    return "> 0.999" if p > 0.999 else "< 0.001" if p < 0.001 else f"= {p:.3f}"


def _detectable(metric: Any) -> str | None:
    """A metric's minimum detectable effect as printed: `±0.244`, `n/a (no variation)` when
    its per-task differences do not vary (standard error exactly 0), None when it has none
    (fewer than two tasks)."""
    if metric.minimum_detectable_effect is not None:
        return f"±{metric.minimum_detectable_effect:.3f}"
    return "n/a (no variation)" if metric.standard_error == 0.0 else None


def _aligned(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows as columns: the first left-aligned, the rest right-aligned, two spaces apart."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (
            indent
            + "  ".join([row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))])
        ).rstrip()
        for row in rows
    ]


def _table_lines(comparison: Comparison, level: str) -> list[str]:
    """One row per metric under a header, columns aligned (values to 3 decimals, p-values to 3
    or `<0.001`, `—` for none), a blank line, then each metric's note."""
    header = ("metric", "tasks", "baseline", "candidate", "difference", f"{level} interval", "p (Holm)", "significant")
    rows = [header]
    for m in comparison.metrics:
        interval = "—" if m.ci_low is None or m.ci_high is None else f"[{m.ci_low:+.3f}, {m.ci_high:+.3f}]"
        rows.append(
            (
                metric_label(m.metric, m.k),
                str(m.tasks),
                _value(m.baseline),
                _value(m.candidate),
                _value(m.difference, signed=True),
                interval,
                _p_value(m.p_value_holm),
                "yes" if m.significant else "no",
            )
        )
    lines = [*_aligned(rows), ""]
    for m in comparison.metrics:
        if m.note:
            lines.append(f"note: {metric_label(m.metric, m.k)}: {m.note}")
    return lines


VERDICT_HEADLINES = {
    "improved": "IMPROVED — the candidate is significantly better than the baseline",
    "regressed": "REGRESSED — the candidate is significantly worse than the baseline",
    "inconclusive": "INCONCLUSIVE — no significant difference either way",
    "not_tested": "NOT TESTED — too few shared tasks for any test to show a difference",
}


def _attempt_lines(comparison: Comparison, level: str) -> list[str]:
    """The attempt-level test in one line, and under `--population tasks` its own verdict."""
    test = comparison.attempt_test
    if test is None:
        return []
    p = "not tested" if test.p_value is None else f"p = {test.p_value:.3g}"
    lines = [
        f"attempt-level test (exact, stratified by task, two-sided): {p}, smallest possible p {test.floor:.3g}, "
        f"{test.informative_tasks} informative task(s) ({test.degenerate_tasks} all-pass or all-fail on both sides)"
    ]
    if comparison.population == "tasks":
        lines += [f"on these tasks: {VERDICT_HEADLINES[test.verdict]}", f"  {test.verdict_explanation}"]
    return lines


def _changed_lines(comparison: Comparison, level: str) -> list[str]:
    """The tasks that changed, worst first, at most `MAX_CHANGED_TASKS` (the rest counted)."""
    from fair_forge_core.compare.labels import MAX_CHANGED_TASKS, counts

    changed = comparison.changed_tasks or []
    if not changed:
        return ["", f"tasks that changed: none of the {comparison.shared_tasks} shared tasks"]
    alpha = 1.0 - comparison.confidence
    rows: list[tuple[str, ...]] = [("task", "baseline", "candidate", "difference", "p (alone)", "")]
    for t in changed[:MAX_CHANGED_TASKS]:
        rows.append(
            (
                t.task,
                counts(t.baseline_successes, t.baseline_attempts),
                counts(t.candidate_successes, t.candidate_attempts),
                _value(t.difference, signed=True),
                _p_value(t.p_value),
                "significant alone" if t.significant_alone else "",
            )
        )
    lines = [
        "",
        f"tasks that changed ({len(changed)} of {comparison.shared_tasks}; per-attempt success, worst first; "
        f"p: the exact test on that task alone, significant alone when ≤ {alpha:.3g}):",
        *_aligned(rows, "  "),
    ]
    if len(changed) > MAX_CHANGED_TASKS:
        lines.append(f"  … and {len(changed) - MAX_CHANGED_TASKS} more (all in the JSON)")
    return lines


def _verdict_lines(comparison: Comparison) -> list[str]:
    """The verdict that decides (the gate's, `population`) and why, and what it asked."""
    from fair_forge_core.compare.labels import POPULATION_QUESTIONS

    population = comparison.population or "tasks"
    return [
        f"verdict: {VERDICT_HEADLINES[comparison.verdict]}",
        f"  {comparison.verdict_explanation}",
        f"  (--population {population}: {POPULATION_QUESTIONS[population]} "
        f"{'the attempt-level test' if population == 'attempts' else 'the task-level tests'})",
    ]


def _corrected_lines(comparison: Comparison) -> list[str]:
    """When either side was corrected for its judge's error: the corrected comparison's heading
    and lines (`compare.corrected.corrected_lines`), indented."""
    if comparison.judge_corrected is None:
        return []
    from fair_forge_core.compare.corrected import corrected_lines

    heading, lines = corrected_lines(comparison.judge_corrected)
    return [heading, *(f"  {line}" for line in lines)]


def _needed_text(comparison: Comparison) -> str:
    """The tasks that would settle an unsettled task-level verdict, per metric, or why none is given."""
    needed = [
        f"{metric_label(m.metric, m.k)} {m.tasks_needed} (difference {m.difference:+.3f})"
        for m in comparison.metrics
        if m.tasks_needed is not None and m.difference is not None
    ]
    reasons = {m.tasks_needed_reason for m in comparison.metrics if m.tasks_needed is None and m.tasks_needed_reason}
    if not needed and reasons == {"no difference was observed"}:
        return "shared tasks needed to settle it: none would — no difference was observed"
    if not needed and reasons == {"cannot be tested at this confidence"}:
        return "shared tasks needed to settle it: none — the task-level tests cannot be tested at this confidence"
    unexplained = [
        f"{metric_label(m.metric, m.k)}: {m.tasks_needed_reason}"
        for m in comparison.metrics
        if m.tasks_needed is None and m.tasks_needed_reason and m.tasks_needed_reason != "no difference was observed"
    ]
    head = "shared tasks needed to settle it (80% power at the observed difference): "
    return head + "; ".join([", ".join(needed)] * bool(needed) + unexplained)


def _task_level_lines(comparison: Comparison, level: str) -> list[str]:
    """The task-level tests: their table, notes, their verdict (under `--population attempts`),
    the minimum detectable effect, and the tasks that would settle an unsettled verdict."""
    from fair_forge_core.compare.labels import POPULATION_QUESTIONS

    lines = ["", f"task-level tests — {POPULATION_QUESTIONS['tasks']} (Holm-adjusted across the metrics):"]
    lines += _table_lines(comparison, level)
    task_verdict = comparison.task_level_verdict or comparison.verdict
    if comparison.population == "attempts" and comparison.task_level_explanation is not None:
        lines += [
            f"task-level verdict: {VERDICT_HEADLINES[task_verdict]}",
            f"  {comparison.task_level_explanation}",
        ]
    detectable = [
        f"{metric_label(m.metric, m.k)} {shown}" for m in comparison.metrics if (shown := _detectable(m)) is not None
    ]
    if detectable:
        lines.append(f"minimum detectable effect (80% power, {level}): {', '.join(detectable)}")
    if task_verdict in ("inconclusive", "not_tested"):
        lines.append(_needed_text(comparison))
    return lines


def _test_lines(comparison: Comparison) -> list[str]:
    """The metrics the exact sign-flip test decided, McNemar's test when it ran, and
    P(candidate better) when the comparison has it."""
    from fair_forge_core.compare import MIN_BOOTSTRAP_TASKS

    lines = []
    exact = [metric_label(m.metric, m.k) for m in comparison.metrics if m.p_value_method == "sign_flip_exact"]
    if exact:
        lines.append(
            f"exact sign-flip test over the per-task differences (fewer than {MIN_BOOTSTRAP_TASKS} tasks): "
            + ", ".join(exact)
        )
    if comparison.mcnemar is not None:
        test = comparison.mcnemar
        chi2 = "" if test.chi2_p_value is None else f" (chi-square p = {_p_value(test.chi2_p_value)}, not used)"
        lines.append(
            f"McNemar (exact): baseline-only successes b = {test.b}, candidate-only c = {test.c}, "
            f"p = {_p_value(test.p_value)}{chi2}"
        )
    if comparison.probability_candidate_better is not None:
        a, b = comparison.prior
        lines.append(
            f"P(candidate's per-attempt success rate is higher) {_probability(comparison.probability_candidate_better)} "
            f"(Beta({a:g}, {b:g}) prior)"
        )
    return lines


def _side_line(name: str, label: str, successes: int, attempts: int, headline: str) -> str:
    return f"{label} {name} — {successes}/{attempts} attempts fully correct on the shared tasks{headline}"


def format_comparison(comparison: Comparison, baseline: str, candidate: str) -> str:
    """The readable report `compare` prints: a header (each side's fully correct attempts and
    headline pass^k), the verdict that decides (`population`'s) and why, the attempt-level
    test, the tasks that changed (worst first, each with its own exact p), the task-level
    tests (one table row per metric: values to 3 decimals, p-values to 3 or `<0.001`, `—` for
    none; the notes; their verdict; the minimum detectable effect, `n/a (no variation)`
    without variation; the tasks that would settle it, or why none can be given), the metrics
    the exact sign-flip test decided, McNemar's test when it ran, and P(candidate better)."""
    from fair_forge_core.compare.labels import side_headlines
    from fair_forge_core.compare.verdict import level_text  # here: `fair-forge --help` imports no pydantic

    level = level_text(comparison.confidence)
    base_headline, cand_headline = side_headlines(comparison)
    lines = [
        _side_line(baseline, "baseline: ", comparison.baseline_successes, comparison.baseline_attempts, base_headline),
        _side_line(
            candidate, "candidate:", comparison.candidate_successes, comparison.candidate_attempts, cand_headline
        ),
        f"{comparison.shared_tasks} shared tasks, k = {comparison.k}, confidence {level}, "
        f"{comparison.bootstrap_resamples} bootstrap resamples (seed {comparison.seed})",
        "",
    ]
    lines += _verdict_lines(comparison)
    lines += _corrected_lines(comparison)
    lines += _attempt_lines(comparison, level)
    lines += _changed_lines(comparison, level)
    lines += _task_level_lines(comparison, level)
    lines += _test_lines(comparison)
    lines += _efficiency_lines(comparison, level)
    return "\n".join(lines) + "\n"


def _efficiency_lines(comparison: Comparison, level: str) -> list[str]:
    """When the comparison has `efficiency`: a blank line, a heading, and one line per measure
    compared on some task (the means per side, the difference with its interval, p and its
    test); never part of the verdict."""
    if not comparison.efficiency:
        return []
    lines = ["", f"efficiency (per-task means, candidate − baseline, {level} interval; not part of the verdict):"]
    for e in comparison.efficiency:
        if e.difference is None:
            continue
        interval = "—" if e.ci_low is None or e.ci_high is None else f"[{e.ci_low:+.3f}, {e.ci_high:+.3f}]"
        test = {"sign_flip_exact": "sign-flip", "bootstrap": "bootstrap", None: "—"}[e.p_value_method]
        lines.append(
            f"  {e.measure}: {_value(e.baseline)} → {_value(e.candidate)}, difference {_value(e.difference, signed=True)} "
            f"{interval}, p = {_p_value(e.p_value)} ({test}, {e.tasks} tasks)"
        )
    return lines
