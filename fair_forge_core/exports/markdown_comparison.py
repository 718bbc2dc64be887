"""Markdown of a comparison: a CI job's step summary (GitHub's `GITHUB_STEP_SUMMARY`) or the
pull-request comment the Action posts (`markdown_comparison`), in order:

1. the verdict that decides (`population`'s) and its explanation, and what it asked;
2. both sides' counts and headline pass^k (per-task unbiased), the shared tasks, k, confidence;
3. the attempt-level test (its p-value and floor) and, beside it, the other population's verdict;
   then, when either side was corrected for its judge's error, "Corrected for the judge's error"
   (whether the verdict is within the judge's error band, or that it was not measured);
4. "Tasks that changed": per task both sides' c/n, the difference of per-attempt success, its
   own exact p, "yes" when significant alone — worst first, at most `labels.MAX_CHANGED_TASKS`;
5. "Task-level tests": one row per metric (`fair-forge compare`'s columns, the metrics named as
   on every face: `labels.metric_label`), then the tasks that would settle an unsettled verdict;
6. the efficiency comparison when there is one; 7. notes: what was left unpaired and how the two
   sides were judged differently.

The cells follow `exports.markdown`: 3 decimals, `—` for none, data through `cell`.
"""

from __future__ import annotations

from fair_forge_core.compare.labels import (
    MAX_CHANGED_TASKS,
    POPULATION_QUESTIONS,
    counts,
    metric_label,
    side_headlines,
)
from fair_forge_core.exports.markdown import MAX_REASON, cell, markdown_table, number_cell
from fair_forge_core.schemas import Comparison


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3f}"


def _p(value: float | None) -> str:
    return "—" if value is None else "<0.001" if value < 0.001 else f"{value:.3f}"


def _comparison_rows(comparison: Comparison) -> list[list[str]]:
    return [
        [
            metric_label(m.metric, m.k),
            str(m.tasks),
            number_cell(m.baseline),
            number_cell(m.candidate),
            _signed(m.difference),
            "—" if m.ci_low is None or m.ci_high is None else f"[{m.ci_low:+.3f}, {m.ci_high:+.3f}]",
            _p(m.p_value_holm),
            "yes" if m.significant else "no" if m.p_value is not None else "not tested",
        ]
        for m in comparison.metrics
    ]


def _efficiency_comparison_lines(comparison: Comparison) -> list[str]:
    if not comparison.efficiency:
        return []
    rows = [
        [
            e.measure,
            str(e.tasks),
            number_cell(e.baseline),
            number_cell(e.candidate),
            _signed(e.difference),
            "—" if e.ci_low is None or e.ci_high is None else f"[{e.ci_low:+.3f}, {e.ci_high:+.3f}]",
            _p(e.p_value),
        ]
        for e in comparison.efficiency
        if e.difference is not None
    ]
    header = ["measure", "tasks", "baseline", "candidate", "difference", "interval", "p"]
    return [
        "",
        "### Efficiency (per-task means; not part of the verdict)",
        "",
        *markdown_table(header, rows, range(1, 7)),
    ]


def _changed_lines(comparison: Comparison) -> list[str]:
    changed = comparison.changed_tasks or []
    if not changed:
        return ["", "### Tasks that changed", "", f"None of the {comparison.shared_tasks} shared task(s)."]
    rows = [
        [
            cell(t.task),
            counts(t.baseline_successes, t.baseline_attempts),
            counts(t.candidate_successes, t.candidate_attempts),
            _signed(t.difference),
            _p(t.p_value),
            "yes" if t.significant_alone else "no",
        ]
        for t in changed[:MAX_CHANGED_TASKS]
    ]
    header = ["task", "baseline", "candidate", "difference", "p (this task alone)", "significant alone"]
    lines = [
        "",
        f"### Tasks that changed ({len(changed)} of {comparison.shared_tasks})",
        "",
        "Per-attempt success c/n, worst first; p is the exact test on the task alone, unadjusted.",
        "",
        *markdown_table(header, rows, range(1, 5)),
    ]
    if len(changed) > MAX_CHANGED_TASKS:
        lines += ["", f"… and {len(changed) - MAX_CHANGED_TASKS} more (all in the comparison JSON)."]
    return lines


def _needed_lines(comparison: Comparison) -> list[str]:
    if (comparison.task_level_verdict or comparison.verdict) not in ("inconclusive", "not_tested"):
        return []
    parts = [
        f"{metric_label(m.metric, m.k)}: {m.tasks_needed if m.tasks_needed is not None else m.tasks_needed_reason}"
        for m in comparison.metrics
        if m.tasks_needed is not None or m.tasks_needed_reason
    ]
    return ["", "Shared tasks needed to settle the task-level tests (80% power): " + "; ".join(parts)] if parts else []


def _attempt_lines(comparison: Comparison) -> list[str]:
    test = comparison.attempt_test
    if test is None:
        return []
    p = "not tested" if test.p_value is None else f"p = {test.p_value:.3g}"
    lines = [f"- attempt-level test (exact, stratified by task, two-sided): {p}, smallest possible p {test.floor:.3g}"]
    if comparison.population == "tasks":
        lines.append(f"- on these tasks (attempt-level): **{test.verdict}** — {cell(test.verdict_explanation)}")
    elif comparison.task_level_verdict is not None:
        lines.append(
            f"- would it generalise to new tasks (task-level): **{comparison.task_level_verdict}** — "
            f"{cell(comparison.task_level_explanation or '')}"
        )
    return lines


def _corrected_markdown(comparison: Comparison) -> list[str]:
    """When either side was corrected for its judge's error: a section with the corrected
    comparison's heading and lines (`compare.corrected.corrected_lines`)."""
    if comparison.judge_corrected is None:
        return []
    from fair_forge_core.compare.corrected import corrected_lines

    heading, lines = corrected_lines(comparison.judge_corrected)
    return ["", "### Corrected for the judge's error", "", cell(heading), "", *(f"- {cell(line)}" for line in lines)]


def markdown_comparison(comparison: Comparison, baseline: str, candidate: str) -> str:
    """The Markdown summary of a comparison (module docstring); `baseline` and `candidate` name
    the sides as `fair-forge compare` prints them."""
    from fair_forge_core.report.values import format_verdict, percent

    level = percent(comparison.confidence)
    population = comparison.population or "tasks"
    base_headline, cand_headline = side_headlines(comparison)
    lines = [
        f"## Fair-Forge comparison: {format_verdict(comparison.verdict)}",
        "",
        f"**Verdict: {comparison.verdict}** — {cell(comparison.verdict_explanation)}",
        "",
        f"- decided by `--population {population}`: {POPULATION_QUESTIONS[population]}",
        f"- baseline: {cell(baseline)} — {comparison.baseline_successes} of {comparison.baseline_attempts} "
        f"attempts fully correct on the shared tasks{base_headline}",
        f"- candidate: {cell(candidate)} — {comparison.candidate_successes} of {comparison.candidate_attempts} "
        f"attempts fully correct on the shared tasks{cand_headline}",
        f"- {comparison.shared_tasks} shared task(s), k = {comparison.k}, confidence {level}",
        *_attempt_lines(comparison),
    ]
    lines += _corrected_markdown(comparison)
    lines += _changed_lines(comparison)
    lines += [
        "",
        "### Task-level tests (would it generalise to new tasks?)",
        "",
        *markdown_table(
            ["metric", "tasks", "baseline", "candidate", "difference", f"{level} interval", "p (Holm)", "significant"],
            _comparison_rows(comparison),
            range(1, 7),
        ),
    ]
    lines += _needed_lines(comparison)
    notes = [f"{metric_label(m.metric, m.k)}: {m.note}" for m in comparison.metrics if m.note]
    lines += _efficiency_comparison_lines(comparison)
    unpaired = [
        f"{len(tasks)} task(s) scored only for the {side}, not compared"
        for side, tasks in (
            ("baseline", comparison.baseline_only_tasks),
            ("candidate", comparison.candidate_only_tasks),
        )
        if tasks
    ]
    unpaired += [
        f"{count} unscored {side} conversation(s) left out"
        for side, count in (
            ("baseline", comparison.baseline_unscored_conversations),
            ("candidate", comparison.candidate_unscored_conversations),
        )
        if count
    ]
    extra = notes + unpaired + [f"judged differently: {d}" for d in comparison.judging_differences]
    if extra:
        lines += ["", "### Notes", "", *(f"- {cell(line, MAX_REASON)}" for line in extra)]
    return "\n".join(lines) + "\n"
