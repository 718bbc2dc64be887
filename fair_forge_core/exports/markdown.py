"""Markdown of an evaluation or a comparison: a CI job's step summary (GitHub's
`GITHUB_STEP_SUMMARY`) or a pull-request comment.

Evaluation (`markdown_evaluation`), in order:

1. the headline (`headline.headline_lines`: readiness with the figures it was decided on, the
   tier over conversations with its pooled figures, the figures corrected for the judge's error,
   the judge-noise line, the sample-size warning), one bullet each;
2. "Key figures", each under its one name (`headline.figure_name`, docs/statistics.md "Which
   pass^k is which"): the per-task pass@k and pass^k when the result has them (first when
   readiness is decided on them), pass@k and pass^k pooled over the scored conversations
   (`pass^k (pooled plug-in)`, or `(pooled posterior mean)` in Bayesian mode), the share of them
   fully correct, each to 3 decimals with its interval at the request's level: in Bayesian mode the credible interval
   the result carries; in frequentist mode Wilson's interval [L, U] of c/n
   (`stats.wilson_interval`), pushed through each metric (both increase with the rate:
   pass^k [L^k, U^k], pass@k [1 − (1 − L)^k, 1 − (1 − U)^k]; the low ends are the bounds
   `--fail-if-lower-bound` reads); per task, Wilson's interval over tasks the result carries;
   then how many conversations are unscored, and, when trace attempts were left unjoined by the
   import, how many and why (`tiers.unjoined_phrase` of `unscored_by_cause`);
3. "Assistants", when there are several: each one's counts, pooled figures and readiness;
4. "Tasks", when some task has 2 or more scored attempts (`flakiness.task_stability`): the
   summary line and each flaky and failing task with its passes and Clopper–Pearson interval;
5. "Worst cases": the failed cases (`cases.cases`), lowest share of passing attempts first,
   then the skipped ones, each with its first reason, at most `MAX_CASES` (the rest counted);
6. "Efficiency" (`efficiency.efficiency_line`) when the result has it; 7. the warnings.

Comparison: `exports.markdown_comparison.markdown_comparison`, with the same cells and rules.

Numbers have 3 decimals, a missing one is `—`. Every cell and line made from the data (names,
ids, reasons, warnings, notes, the title) goes through `cell`, which folds it to one line, cuts
reasons at `MAX_REASON` characters and escapes it for GitHub-flavoured Markdown and HTML
(`safe_text.markdown_text`): a task id or an agent's text renders as text, never as a tag, a
link, an image, a mention or a table break. Pure: text, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from fair_forge_core import stats
from fair_forge_core.exports.cases import Case, cases
from fair_forge_core.safe_text import markdown_text
from fair_forge_core.schemas import AggregatedMetrics, EvaluationResult

MAX_CASES = 10
"""How many worst cases the summary lists."""
MAX_REASON = 300
"""How many characters of a reason a table cell shows."""
MAX_WARNINGS = 10


def cell(text: str, limit: int | None = None) -> str:
    """`text` from the data fit for a table cell or a line of the summary: one line, cut at
    `limit` with `…`, escaped for GitHub-flavoured Markdown and HTML (`safe_text.markdown_text`:
    it renders as that text, never as a tag, link, image, mention or table break)."""
    return markdown_text(text, limit)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> list[str]:
    """A Markdown table; the columns at the indices `right` are right-aligned (numbers)."""
    align = ["---:" if i in right else "---" for i in range(len(header))]
    return [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(align) + " |",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def number_cell(value: float | None) -> str:
    """A figure as a table cell: three decimals, or "—" when there is none (None)."""
    return "—" if value is None else f"{value:.3f}"


def _interval(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _pair(low: float | None, high: float | None) -> tuple[float, float] | None:
    return None if low is None or high is None else (low, high)


def conversation_intervals(aggregated: AggregatedMetrics, level: float) -> dict[str, tuple[float, float] | None]:
    """The intervals of pass@k, pass^k and the success rate over scored conversations (module
    docstring, 2.); None where nothing was scored or the mode carries none."""
    n, c, k = aggregated.total_conversations, aggregated.fully_correct_conversations, aggregated.k
    if n == 0:
        return {"pass_at_k": None, "pass_pow_k": None, "success": None}
    low, high = stats.wilson_interval(n, c, level)
    if aggregated.statistical_mode == "bayesian":
        return {
            "pass_at_k": _pair(aggregated.pass_at_k_ci_low, aggregated.pass_at_k_ci_high),
            "pass_pow_k": _pair(aggregated.pass_pow_k_ci_low, aggregated.pass_pow_k_ci_high),
            "success": (low, high),
        }
    return {
        "pass_at_k": (stats.at_least_one_of(low, k), stats.at_least_one_of(high, k)),
        "pass_pow_k": (low**k, high**k),
        "success": (low, high),
    }


def _figure_rows(aggregated: AggregatedMetrics, level: float) -> list[list[str]]:
    """The "Key figures" rows (module docstring, 2.), each figure under its one name
    (`headline.figure_name`): the per-task pass@k and pass^k first when readiness is decided on
    them, then the pooled ones and the share of conversations fully correct."""
    from fair_forge_core.headline import figure_name, headline_figure, pooled_figure

    k, n = aggregated.k, aggregated.total_conversations
    intervals = conversation_intervals(aggregated, level)
    method = "credible" if aggregated.statistical_mode == "bayesian" else "Wilson"
    pooled = pooled_figure(aggregated.statistical_mode)

    def interval(name: str) -> str:
        bounds = intervals[name]
        return "—" if bounds is None else _interval(*bounds)

    over = f"{n} scored conversation(s)"
    rows = [
        [
            figure_name("pass_at_k", k, pooled),
            number_cell(aggregated.pass_at_k),
            interval("pass_at_k"),
            f"{over}, {method}",
        ],
        [
            figure_name("pass_pow_k", k, pooled),
            number_cell(aggregated.pass_pow_k),
            interval("pass_pow_k"),
            f"{over}, {method}",
        ],
        [
            "fully correct conversations",
            number_cell(aggregated.conversation_success_rate),
            interval("success"),
            f"{aggregated.fully_correct_conversations} of {over}, Wilson",
        ],
    ]
    per_task = aggregated.per_task
    if per_task is not None and per_task.pass_at_k is not None:
        over_tasks = f"per task: {per_task.tasks_with_k_attempts} of {per_task.tasks} task(s) with {k} attempts, Wilson over tasks"
        per_task_rows = [
            [
                figure_name("pass_at_k", k, "per_task", aggregated.adaptive is not None),
                number_cell(per_task.pass_at_k),
                _interval(per_task.pass_at_k_ci_low, per_task.pass_at_k_ci_high),
                over_tasks,
            ],
            [
                figure_name("pass_pow_k", k, "per_task", aggregated.adaptive is not None),
                number_cell(per_task.pass_pow_k),
                _interval(per_task.pass_pow_k_ci_low, per_task.pass_pow_k_ci_high),
                over_tasks,
            ],
        ]
        rows = per_task_rows + rows if headline_figure(aggregated) == "per_task" else rows + per_task_rows
    return rows


def _assistant_lines(aggregated: AggregatedMetrics) -> list[str]:
    from fair_forge_core.headline import figure_name, pooled_figure

    if not aggregated.by_assistant or len(aggregated.by_assistant) < 2:
        return []
    k = aggregated.k
    rows = [
        [
            cell(name),
            str(own.total_conversations),
            str(own.fully_correct_conversations),
            str(own.unscored_conversations),
            number_cell(own.pass_at_k),
            number_cell(own.pass_pow_k),
            cell(own.readiness.summary if own.readiness is not None else own.interpretation or "—"),
        ]
        for name, own in aggregated.by_assistant.items()
    ]
    pooled = pooled_figure(aggregated.statistical_mode)
    header = [
        "assistant",
        "scored",
        "fully correct",
        "unscored",
        figure_name("pass_at_k", k, pooled),
        figure_name("pass_pow_k", k, pooled),
        "readiness",
    ]
    return ["", "### Assistants", "", *markdown_table(header, rows, (1, 2, 3, 4, 5))]


def _task_lines(result: EvaluationResult, level: float) -> list[str]:
    from fair_forge_core.flakiness import summary, task_stability
    from fair_forge_core.headline import ADAPTIVE_LABEL
    from fair_forge_core.report.values import percent

    stability = task_stability(result.per_conversation_metrics, level)
    if not stability.tasks:
        return []
    if result.aggregated_metrics.judge_noise is not None:
        from fair_forge_core.judge_error_input import judge_flakiness

        stability = judge_flakiness(stability, result.aggregated_metrics.judge_noise)
    rows = [
        [
            cell(t.task_id),
            t.label if t.reason is None else f"{t.label}: mostly the judge's",
            f"{t.passed} of {t.attempts}",
            number_cell(t.pass_rate),
            _interval(t.ci_low, t.ci_high),
        ]
        for t in stability.tasks
        if t.label != "stable"
    ]
    lines = ["", "### Tasks", "", summary(stability) + " (stable tasks are counted, not listed)"]
    if rows:
        biased = f" ({ADAPTIVE_LABEL})" if result.aggregated_metrics.adaptive is not None else ""
        header = [
            "task",
            "label",
            "passed",
            f"pass rate{biased}",
            f"{percent(level)} interval (Clopper–Pearson){biased}",
        ]
        lines += ["", *markdown_table(header, rows, right=(2, 3, 4))]
    return lines


def worst_cases(all_cases: Sequence[Case]) -> list[Case]:
    """The failed cases, lowest share of passing scored attempts first (then by name), then the
    skipped ones by name."""
    failed = sorted((c for c in all_cases if c.outcome == "failed"), key=lambda c: (c.passed / c.scored, c.name))
    skipped = sorted((c for c in all_cases if c.outcome == "skipped"), key=lambda c: c.name)
    return failed + skipped


def _worst_lines(result: EvaluationResult) -> list[str]:
    all_cases = cases(result.per_conversation_metrics)
    worst = worst_cases(all_cases)
    if not worst:
        return ["", "### Worst cases", "", f"Every one of the {len(all_cases)} case(s) passed."]
    rows = [
        [
            cell(c.name),
            cell(c.assistant_id),
            c.outcome,
            f"{c.passed} of {c.scored}",
            cell(c.reasons[0] if c.reasons else "", MAX_REASON),
        ]
        for c in worst[:MAX_CASES]
    ]
    lines = [
        "",
        "### Worst cases",
        "",
        *markdown_table(["case", "assistant", "outcome", "passed", "first reason"], rows, (3,)),
    ]
    if len(worst) > MAX_CASES:
        lines += ["", f"… and {len(worst) - MAX_CASES} more failed or skipped case(s)."]
    return lines


def markdown_evaluation(result: EvaluationResult, ci_level: float, title: str = "Fair-Forge evaluation") -> str:
    """The Markdown summary of an evaluation (module docstring); `ci_level` is the request's
    `statistical_mode.ci_level`."""
    from fair_forge_core.report.values import percent

    agg = result.aggregated_metrics
    from fair_forge_core.headline import headline_lines

    lines = [f"## {cell(title)}", "", *(f"- {cell(line)}" for line in headline_lines(agg))]
    header = ["figure", "value", f"{percent(ci_level)} interval", "over"]
    lines += ["", "### Key figures", "", *markdown_table(header, _figure_rows(agg, ci_level), right=(1, 2))]
    if agg.unscored_conversations:
        lines += [
            "",
            f"{agg.unscored_conversations} of {agg.total_conversations + agg.unscored_conversations} "
            "conversation(s) unscored, left out of the figures.",
        ]
    if agg.unscored_by_cause:  # typed causes and counts, no text from the data
        from fair_forge_core.tiers import unjoined_phrase

        lines += ["", f"**{cell(unjoined_phrase(agg.unscored_by_cause))}**: kept as unscored conversations."]
    lines += _assistant_lines(agg)
    lines += _task_lines(result, ci_level)
    lines += _worst_lines(result)
    if agg.efficiency is not None:
        from fair_forge_core.efficiency import efficiency_line

        lines += ["", "### Efficiency", "", cell(efficiency_line(agg.efficiency))]
    if result.warnings:
        lines += ["", "### Warnings", "", *(f"- {cell(w, MAX_REASON)}" for w in result.warnings[:MAX_WARNINGS])]
        if len(result.warnings) > MAX_WARNINGS:
            lines.append(f"- … and {len(result.warnings) - MAX_WARNINGS} more")
    return "\n".join(lines) + "\n"
