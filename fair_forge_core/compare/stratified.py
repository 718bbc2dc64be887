"""The attempt-level test of a comparison: is the candidate worse (or better) on THESE tasks?
An exact test on per-attempt success stratified by task, conditional on each task's totals
(the exact Cochran–Mantel–Haenszel / stratified permutation test), its floor, and the same
test on each task alone (docs/compare.md#the-attempt-level-test). Pure: numpy is imported
inside the function that needs it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

TaskCounts = tuple[int, int, int, int]
"""One task's (baseline attempts n_b, baseline successes c_b, candidate attempts n_c,
candidate successes c_c), each side scored at least once."""

NEGLIGIBLE = 1e-300
"""Probabilities below this are dropped from the ends of the null distribution while it is
built: what they could add to a tail is below the float resolution of any p-value."""


def _check(task: TaskCounts) -> None:
    n_b, c_b, n_c, c_c = task
    if not (n_b >= 1 and n_c >= 1 and 0 <= c_b <= n_b and 0 <= c_c <= n_c):
        raise ValueError(f"task counts must have n ≥ 1 and 0 ≤ c ≤ n on each side, got {task}")


def hypergeometric_pmf(n_b: int, n_c: int, m: int) -> tuple[int, list[float]]:
    """The distribution of the candidate's successes X in one task under "no difference",
    conditional on its m successes in N = n_b + n_c attempts: X ~ Hypergeometric(N, m, n_c),
    P(X = x) = C(n_c, x)·C(n_b, m − x) / C(N, m), as (its smallest value, the probabilities
    of max(0, m − n_b) … min(m, n_c)). Exact integer ratios, each rounded once to a float."""
    low, high = max(0, m - n_b), min(m, n_c)
    total = math.comb(n_b + n_c, m)
    return low, [math.comb(n_c, x) * math.comb(n_b, m - x) / total for x in range(low, high + 1)]


def doubled_tail_p(lower: float, upper: float) -> float:
    """The two-sided p-value from the two tails P(T ≤ t) and P(T ≥ t): min(1, 2·min(lower, upper))."""
    return min(1.0, 2.0 * min(lower, upper))


@dataclass(frozen=True)
class StratifiedTest:
    """The attempt-level test's numbers: `statistic` t (the candidate's successes over the
    informative tasks) against its null mean `expected`, the two-sided p-value and its floor,
    and how many tasks carried information."""

    statistic: int
    expected: float
    p_value: float
    floor: float
    informative_tasks: int
    degenerate_tasks: int


def stratified_exact_test(tasks: Sequence[TaskCounts]) -> StratifiedTest:
    """The exact stratified test of per-attempt success, conditional on each task's totals.

    Per task: baseline n_b attempts with c_b successes, candidate n_c with c_c. Conditional
    on its m = c_b + c_c successes of N = n_b + n_c attempts, under "no difference" the
    candidate's successes are X ~ Hypergeometric(N, m, n_c) (`hypergeometric_pmf`), the tasks
    independent. The statistic is T = Σ X over the tasks, observed t = Σ c_c; its exact null
    distribution is the convolution of the tasks' pmfs (`numpy.convolve`, in floats, the
    probabilities below `NEGLIGIBLE` dropped from its ends). A task with m = 0 or m = N
    (every attempt of both sides failed, or every one succeeded) is degenerate: X is fixed,
    it adds nothing, and it is only counted.

    Two-sided p = min(1, 2·min(P(T ≤ t), P(T ≥ t))), the doubling rule (`doubled_tail_p`):
    for one task it is the doubled-tail Fisher exact test, and when every task has one
    attempt per side it is McNemar's exact test (a discordant task's X is Binomial(1, 1/2),
    a concordant one's is fixed). T takes integer values, so the tails are sums over whole
    points of its support and there are no ties to break; each tail is clipped to [0, 1].
    1 when no task is informative.

    Floor: the smallest p-value any outcome with these attempt counts could give, at the most
    extreme one (every baseline attempt succeeds and every candidate attempt fails, or the
    reverse): min(1, 2·Π 1/C(N_t, n_c,t)) over every task (`attempt_floor`).
    ValueError for counts outside n ≥ 1, 0 ≤ c ≤ n.
    """
    import numpy as np

    for task in tasks:
        _check(task)
    distribution = np.ones(1)
    offset = statistic = degenerate = 0
    expected = 0.0
    for n_b, c_b, n_c, c_c in tasks:
        m = c_b + c_c
        if m in (0, n_b + n_c):
            degenerate += 1
            continue
        low, pmf = hypergeometric_pmf(n_b, n_c, m)
        distribution = np.convolve(distribution, np.asarray(pmf))
        offset += low
        statistic += c_c
        expected += m * n_c / (n_b + n_c)
        kept = np.flatnonzero(distribution >= NEGLIGIBLE)
        offset += int(kept[0])
        distribution = distribution[kept[0] : kept[-1] + 1]
    informative = len(tasks) - degenerate
    floor = attempt_floor(tasks)
    if informative == 0:
        return StratifiedTest(0, 0.0, 1.0, floor, 0, degenerate)
    index = statistic - offset  # may fall outside what was kept: that tail is below NEGLIGIBLE
    lower = math.fsum(distribution[: max(0, index + 1)].tolist())
    upper = math.fsum(distribution[max(0, index) :].tolist())
    p = doubled_tail_p(min(1.0, lower), min(1.0, upper))
    return StratifiedTest(statistic, expected, p, floor, informative, degenerate)


def attempt_floor(tasks: Sequence[TaskCounts]) -> float:
    """The attempt-level test's floor for these attempt counts: min(1, 2·Π_t 1/C(N_t, n_c,t)),
    the p-value of every baseline attempt succeeding and every candidate attempt failing (or
    the reverse): then m = n_b (or n_c) in each task and X its most extreme value, of
    probability 1/C(N, n_c). Summed in logs, so it may underflow to 0.0 (any level reaches it).
    At one attempt a side it is McNemar's 2/2^T; one task of 3 attempts a side gives 0.1."""
    log_floor = math.log(2.0) - math.fsum(math.log(math.comb(n_b + n_c, n_c)) for n_b, _, n_c, _ in tasks)
    return min(1.0, math.exp(log_floor))


def task_p_value(task: TaskCounts) -> float:
    """The same test on one task alone: the doubled-tail Fisher exact test of its 2 × 2 table."""
    return stratified_exact_test([task]).p_value
