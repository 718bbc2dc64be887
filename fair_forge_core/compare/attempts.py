"""The attempt-level side of a comparison: the exact stratified test over the shared tasks as an
`AttemptTest` with its verdict, and the tasks that changed (`ChangedTask`), worst first. The
test itself is `stratified`; the rules are on the functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from fair_forge_core.compare.stratified import stratified_exact_test, task_p_value
from fair_forge_core.compare.tests import significance_level
from fair_forge_core.compare.verdict import level_text
from fair_forge_core.schemas import AttemptTest, ChangedTask
from fair_forge_core.schemas.comparison import Verdict

Counts = Mapping[str, tuple[int, int]]
"""One side's (scored attempts, successes) by task."""


def attempt_test(base: Counts, cand: Counts, shared: Sequence[str], confidence: float) -> AttemptTest:
    """The attempt-level test of the shared tasks (`stratified.stratified_exact_test`) and what
    it alone decides, at α = 1 − confidence:

    - `not_tested` when there is no shared task, or when its floor (the smallest p-value these
      attempt counts could give) is above α: no outcome could be significant, so no p-value is
      reported and `note` says why in numbers. It is one test (per-attempt success), so Holm's
      adjustment leaves its p-value as it is and the floor is compared with α itself.
    - else `regressed` when p ≤ α and the candidate's successes are below their expectation
      under "no difference" (`statistic < expected`), `improved` when p ≤ α and above it, and
      `inconclusive` otherwise.
    """
    alpha = significance_level(confidence)
    tasks = [(*base[t], *cand[t]) for t in shared]
    result = stratified_exact_test(tasks)
    n_b, c_b = sum(t[0] for t in tasks), sum(t[1] for t in tasks)
    n_c, c_c = sum(t[2] for t in tasks), sum(t[3] for t in tasks)
    rate_b = c_b / n_b if n_b else None
    rate_c = c_c / n_c if n_c else None
    difference = None if rate_b is None or rate_c is None else rate_c - rate_b
    level = level_text(confidence)
    counts = f"{c_b}/{n_b} → {c_c}/{n_c} attempts fully correct"
    note = None
    p: float | None = result.p_value
    verdict: Verdict
    if not shared:
        verdict, p, note = "not_tested", None, "no task was scored on both sides"
        explanation = "not tested: no task was scored on both sides"
    elif result.floor > alpha:
        verdict, p = "not_tested", None
        note = (
            f"{len(shared)} task(s) with these attempts cannot show a difference at {level}: "
            f"the exact stratified test's smallest p-value is {result.floor:.3g}"
        )
        explanation = f"not tested: {note}"
    else:
        significant = result.p_value <= alpha and result.statistic != result.expected
        worse = result.statistic < result.expected
        verdict = ("regressed" if worse else "improved") if significant else "inconclusive"
        which = "less" if worse else "more"
        explanation = (
            f"{verdict}: on these {len(shared)} tasks the candidate's attempts succeed "
            f"{which} often task by task ({result.statistic} successes where "
            f"{result.expected:.3g} were expected with no difference; pooled {counts}; "
            f"exact stratified p = {result.p_value:.3g} ≤ {alpha:.3g})"
            if significant
            else f"inconclusive: no significant difference in per-attempt success on these {len(shared)} tasks "
            f"at {level} ({counts}, exact stratified p = {result.p_value:.3g})"
        )
    return AttemptTest(
        statistic=result.statistic,
        expected=result.expected,
        baseline_success_rate=rate_b,
        candidate_success_rate=rate_c,
        difference=difference,
        p_value=p,
        floor=result.floor,
        significant=verdict in ("regressed", "improved"),
        informative_tasks=result.informative_tasks,
        degenerate_tasks=result.degenerate_tasks,
        verdict=verdict,
        verdict_explanation=explanation,
        note=note,
    )


def changed_tasks(base: Counts, cand: Counts, shared: Sequence[str], confidence: float) -> list[ChangedTask]:
    """The shared tasks whose per-attempt success rate c/n differs between the sides (compared
    exactly, as fractions), each with both sides' counts, the difference candidate − baseline,
    the exact test on that task alone (`stratified.task_p_value`: the doubled-tail Fisher test)
    and whether that p alone is ≤ α = 1 − confidence (no adjustment for the other tasks).
    Worst first: the most negative difference, then the smallest p, then the task's name."""
    alpha = significance_level(confidence)
    rows = []
    for task in shared:
        (n_b, c_b), (n_c, c_c) = base[task], cand[task]
        exact = Fraction(c_c, n_c) - Fraction(c_b, n_b)
        if exact == 0:
            continue
        p = task_p_value((n_b, c_b, n_c, c_c))
        rows.append(
            (
                exact,
                p,
                task,
                ChangedTask(
                    task=task,
                    baseline_attempts=n_b,
                    baseline_successes=c_b,
                    candidate_attempts=n_c,
                    candidate_successes=c_c,
                    difference=float(exact),
                    p_value=p,
                    significant_alone=p <= alpha,
                ),
            )
        )
    rows.sort(key=lambda row: (row[0], row[1], row[2]))
    return [row[3] for row in rows]
