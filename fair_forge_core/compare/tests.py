"""The statistical tests of a comparison, each stated on its function: Holm's adjustment,
McNemar's test, the exact sign-flip test and its floor, the fewest tasks that can show a
difference, the Bayesian probability that the candidate is better, the normal approximation's
detectable effect and tasks needed, and the task-level paired bootstrap. Pure: numpy and scipy
are imported inside the functions that need them, so importing this module costs nothing."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

from fair_forge_core.schemas import PRIOR_RANGE, McNemarTest

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

DEFAULT_RESAMPLES = 10_000
MIN_RESAMPLES = 2_000
MAX_TASK_DRAWS = 4_000_000


def bootstrap_resamples(tasks: int) -> int:
    """Bootstrap replicates for `tasks` shared tasks when the caller names none: 10,000,
    fewer when B × T would pass 4,000,000 task draws (about a second of CPU), never fewer
    than 2,000 (the percentile interval's Monte Carlo error stays under a point of coverage:
    `bench_compare` measures 93.8–95.6 % at 2,000)."""
    return max(MIN_RESAMPLES, min(DEFAULT_RESAMPLES, MAX_TASK_DRAWS // max(tasks, 1)))


P_TOLERANCE = 1e-9
"""The relative tolerance of "p ≤ α" (`significance_level`)."""


def significance_level(confidence: float) -> float:
    """The level every "p ≤ α" of a comparison is tested at: α = 1 − confidence, subtracted in
    decimal (1 − 0.9 is 0.1 as the user means it, where float subtraction gives
    0.09999999999999998), times 1 + `P_TOLERANCE`. The tolerance is for the p-values: one that
    is α in exact arithmetic (2/C(6, 3) = 0.1, or a sum of hypergeometric terms equal to 0.05)
    can come out of float sums a few ulps above it; a p-value within a billionth of α above it
    counts as α."""
    return float(Decimal(1) - Decimal(repr(confidence))) * (1.0 + P_TOLERANCE)


POWER = 0.8
"""The power at which `minimum_detectable_effect` and `tasks_needed` are stated."""

MIN_BOOTSTRAP_TASKS = 10
"""A bootstrap p-value enters the verdict only for a metric averaged over at least 10 tasks.
With fewer, the task-level bootstrap cannot see the spread between tasks (at one task, or
any few tasks with equal differences, every resample is the observed difference and the
p-value is 1/(B + 1)): the metric is tested by the exact sign-flip test
(`sign_flip_p_value`) instead; the bootstrap interval and p-value are still reported."""

MAX_SIGN_FLIP_TASKS = 16
"""`sign_flip_p_value` enumerates 2^T sign assignments: at most 2^16 (an 8 MB matrix).
`compare` calls it only below `MIN_BOOTSTRAP_TASKS`, at most 2^9 = 512 assignments."""

PValueMethod = Literal["bootstrap", "mcnemar_exact", "mcnemar_chi2", "sign_flip_exact"]


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's (1979) step-down adjusted p-values, in the order given.

    With the m p-values sorted p_(1) ≤ … ≤ p_(m): p̃_(i) = max_{j ≤ i} min(1, (m − j + 1)·p_(j)).
    Rejecting every hypothesis with p̃ ≤ α is Holm's procedure, which keeps the family-wise
    error rate at α under any dependence between the tests. Ties get equal adjusted values
    whatever their order; an empty list gives []. ValueError for a p-value outside [0, 1].
    """
    if any(not 0.0 <= p <= 1.0 for p in p_values):  # NaN included
        raise ValueError("p-values must be between 0 and 1")
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def mcnemar(b: int, c: int, tasks: int) -> McNemarTest:
    """McNemar's test of `tasks` paired single attempts, b of them baseline right and
    candidate wrong, c the reverse.

    - exact: two-sided binomial p = min(1, 2·P(X ≤ min(b, c))), X ~ Binomial(b + c, 1/2);
      1 when b + c = 0;
    - chi-square with continuity correction: χ² = max(0, |b − c| − 1)² / (b + c) on one
      degree of freedom (the correction never pushes past zero, so b = c gives χ² = 0 and
      p = 1); None when b + c = 0;
    - `method`/`p_value`: always the exact one, at any b + c (the chi-square p-value is
      reported beside it and never decides);
    - the paired difference (c − b)/tasks and its standard error
      sqrt((b + c)/tasks − ((c − b)/tasks)²)/sqrt(tasks), the plug-in standard deviation of
      the per-task differences (each −1, 0 or 1) over sqrt(tasks).
    """
    from scipy.stats import binom, chi2

    for name, value in (("b", b), ("c", c), ("tasks", tasks)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int")
    if tasks < 1 or b + c > tasks:
        raise ValueError("tasks must be at least 1 and at least b + c")
    discordant = b + c
    exact = 1.0 if discordant == 0 else min(1.0, 2.0 * float(binom.cdf(min(b, c), discordant, 0.5)))
    statistic = p_chi2 = None
    if discordant:
        statistic = max(0, abs(b - c) - 1) ** 2 / discordant
        p_chi2 = float(chi2.sf(statistic, 1))
    difference = (c - b) / tasks
    variance = max(0.0, discordant / tasks - difference**2)
    return McNemarTest(
        tasks=tasks,
        b=b,
        c=c,
        exact_p_value=exact,
        chi2_statistic=statistic,
        chi2_p_value=p_chi2,
        method="exact",
        p_value=exact,
        difference=difference,
        standard_error=math.sqrt(variance / tasks),
    )


def sign_flip_p_value(differences: Sequence[float]) -> float:
    """Fisher's randomisation test of paired differences d_1 … d_T (the exact sign-flip
    permutation test): under "no difference" each d_i is as likely to have had the other
    sign, so the two-sided p-value is

        p = #{s ∈ {±1}^T : |Σ s_i·d_i| ≥ |Σ d_i| − 1e-9·Σ|d_i|} / 2^T,

    enumerated exactly (the tolerance makes float sums that are equal in exact arithmetic,
    such as 0.1 + 0.2 and 0.3, count as ties). It is 1 when every d_i is 0, and never below
    2/2^T (s and −s reach the same |Σ|), which it is when every d_i has one sign and none
    is 0. On differences in {−1, 0, 1} it is McNemar's exact test. ValueError unless
    1 ≤ T ≤ `MAX_SIGN_FLIP_TASKS`.
    """
    import numpy as np

    tasks = len(differences)
    if not 1 <= tasks <= MAX_SIGN_FLIP_TASKS:
        raise ValueError(f"the sign-flip test takes 1 to {MAX_SIGN_FLIP_TASKS} differences, got {tasks}")
    values = np.asarray(differences, dtype=np.float64)
    # row r of `signs` is assignment r: bit i of r set flips the sign of d_i
    signs = 1 - 2 * ((np.arange(1 << tasks)[:, None] >> np.arange(tasks)) & 1)
    sums = np.abs(signs @ values)
    observed = abs(math.fsum(differences))
    tolerance = 1e-9 * math.fsum(abs(d) for d in differences)
    return int(np.count_nonzero(sums >= observed - tolerance)) / (1 << tasks)


def smallest_exact_p(tasks: int) -> float:
    """The smallest two-sided p-value an exact test of `tasks` paired tasks can give, at its
    most extreme outcome (every task differs, all one way): 2/2^T, for the sign-flip test
    and for McNemar's exact test (`mcnemar`) alike, at any T (it underflows to 0.0 past
    about 1,075 tasks, which any level reaches)."""
    return 2.0 ** (1 - tasks) if tasks < 1075 else 0.0


def minimum_tasks(confidence: float = 0.95, tests: int = 1, resamples: int | None = None) -> int | None:
    """The fewest tasks at which one of `tests` metrics, Holm-adjusted together, can be
    significant at α = 1 − confidence; None when no number of tasks can be.

    Without `resamples` (McNemar's exact test, at any number of tasks): the smallest T with
    tests·2/2^T ≤ α (an exact test's smallest p-value, `smallest_exact_p`, times the factor of
    Holm's first step). With `resamples` the metrics are tested by the exact sign-flip test
    below `MIN_BOOTSTRAP_TASKS` tasks and by the bootstrap from there on, whose smallest Holm
    step is tests/(resamples + 1): the smallest T < `MIN_BOOTSTRAP_TASKS` with tests·2/2^T ≤ α,
    else `MIN_BOOTSTRAP_TASKS` when tests/(resamples + 1) ≤ α, else None (e.g. at confidence
    0.9999 with five tests: 5·2/2⁹ and 5/10,001 are both above 0.0001). At α = 0.05: 6 for
    one test, 7 for two or three, 8 for four to six."""
    alpha = significance_level(confidence)
    if resamples is None:
        tasks = 1
        while tests * smallest_exact_p(tasks) > alpha:
            tasks += 1
        return tasks
    for tasks in range(1, MIN_BOOTSTRAP_TASKS):
        if tests * smallest_exact_p(tasks) <= alpha:
            return tasks
    return MIN_BOOTSTRAP_TASKS if tests / (resamples + 1) <= alpha else None


def probability_better(
    baseline_successes: int,
    baseline_failures: int,
    candidate_successes: int,
    candidate_failures: int,
    prior: Sequence[float] = (1.0, 1.0),
) -> float:
    """P(θ_cand > θ_base) for independent θ_side ~ Beta(a + successes, b + failures), prior (a, b).

    Exact numerical integration, no sampling: with f_C the candidate's density and I_x the
    baseline's CDF (the regularised incomplete beta), P = ∫₀¹ f_C(x)·I_x(α_B, β_B) dx, by
    `scipy.integrate.quad` over the interval between the candidate's 1e-15 and 1 − 1e-15
    quantiles (the mass left out changes P by at most 2e-15), with both posteriors' means and
    the baseline's central quantiles as break points so the quadrature sees where the CDF
    rises however concentrated either posterior is. Clipped to [0, 1]. ValueError for a
    negative count or a prior outside `PRIOR_RANGE`.
    """
    from scipy.integrate import quad
    from scipy.special import betainc, betaincinv, betaln, xlog1py, xlogy

    a, b = check_prior(prior)
    for value in (baseline_successes, baseline_failures, candidate_successes, candidate_failures):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("successes and failures must be non-negative ints")
    alpha_b, beta_b = a + baseline_successes, b + baseline_failures
    alpha_c, beta_c = a + candidate_successes, b + candidate_failures
    tail = 1e-15
    low = float(betaincinv(alpha_c, beta_c, tail))
    high = float(betaincinv(alpha_c, beta_c, 1.0 - tail))
    if not low < high:  # a posterior too concentrated for the quantiles to part: its mean
        mean_c = alpha_c / (alpha_c + beta_c)
        return float(betainc(alpha_b, beta_b, mean_c))
    breaks = [alpha_b / (alpha_b + beta_b), alpha_c / (alpha_c + beta_c)]
    breaks += [float(betaincinv(alpha_b, beta_b, q)) for q in (1e-6, 0.01, 0.5, 0.99, 1 - 1e-6)]
    points = sorted({x for x in breaks if low < x < high})

    log_norm = float(betaln(alpha_c, beta_c))

    def integrand(x: float) -> float:
        density = math.exp(float(xlogy(alpha_c - 1.0, x)) + float(xlog1py(beta_c - 1.0, -x)) - log_norm)
        return density * float(betainc(alpha_b, beta_b, x))

    value, _ = quad(integrand, low, high, points=points or None, limit=500, epsabs=1e-14, epsrel=1e-12)
    return min(1.0, max(0.0, float(value)))


def check_prior(prior: Sequence[float]) -> tuple[float, float]:
    """The Beta prior (a, b) as floats; ValueError unless two numbers within `PRIOR_RANGE`."""
    values = list(prior)
    low, high = PRIOR_RANGE
    if len(values) != 2 or not all(isinstance(v, int | float) and low <= v <= high for v in values):
        raise ValueError(f"prior must be two numbers between {low:g} and {high:g}")
    return float(values[0]), float(values[1])


def z_value(confidence: float) -> float:
    """z_{1−α/2} with α = 1 − confidence: the two-sided standard normal critical value."""
    return statistics.NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def minimum_detectable_effect(standard_error: float, confidence: float = 0.95, power: float = POWER) -> float:
    """(z_{1−α/2} + z_power)·SE: the true difference a two-sided test at level α = 1 −
    confidence detects with probability `power`, by the normal approximation."""
    return (z_value(confidence) + statistics.NormalDist().inv_cdf(power)) * standard_error


def tasks_needed(
    tasks: int,
    standard_error: float,
    difference: float,
    confidence: float = 0.95,
    power: float = POWER,
    *,
    minimum: int = 1,
) -> int | None:
    """Shared tasks that would detect a true difference of size |difference| with probability
    `power`: ⌈tasks·(minimum_detectable_effect(SE)/|difference|)²⌉, the standard error
    shrinking as 1/sqrt(tasks), and never fewer than `minimum` (`compare` passes the fewest
    tasks its tests can reject with, and one more than the tasks given; it never calls this
    when no number of tasks can be tested). None when the difference is 0."""
    if difference == 0:
        return None
    normal = math.ceil(tasks * (minimum_detectable_effect(standard_error, confidence, power) / abs(difference)) ** 2)
    return max(minimum, normal)


EQUAL_DIFFERENCES = 1e-12
"""Per-task differences within this of each other are equal (`paired_standard_error`), and a
metric's mean difference within this of 0 is 0 (`compare`): 1/3 and −1/3 computed in floats
average to −2.8e-17, not 0."""


def paired_standard_error(differences: Sequence[float]) -> float | None:
    """The standard error of the mean of paired per-task `differences`: their sample standard
    deviation (n − 1) over sqrt(n); None under two differences, exactly 0.0 when they are all
    equal (no variation, not a rounding residue). Equal means within `EQUAL_DIFFERENCES`:
    per-task values are rationals computed in floats, so differences equal in exact
    arithmetic can differ in the last bit (2/3 − 1/3 = 0.3333333333333333 and 1 − 2/3 =
    0.33333333333333337, whose spread would be a standard error of 3.9e-17, not 0); two
    distinct differences of counts are at least 1/(n_b·n_c)^k apart, far above it."""
    tasks = len(differences)
    if tasks < 2:
        return None
    if max(differences) - min(differences) <= EQUAL_DIFFERENCES:
        return 0.0
    mean = math.fsum(differences) / tasks
    spread = math.fsum((x - mean) ** 2 for x in differences) / (tasks - 1)
    return math.sqrt(spread / tasks)


def percentile_interval(replicates: NDArray[np.float64], alpha: float) -> tuple[float, float]:
    """The bootstrap percentile interval at level 1 − α: the α/2 and 1 − α/2 quantiles (numpy's
    linear interpolation) of `replicates` (none NaN, at least one)."""
    import numpy as np

    low, high = np.quantile(replicates, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def bootstrap_p_value(replicates: NDArray[np.float64], difference: float) -> float:
    """The two-sided bootstrap p-value of an observed mean difference D from its replicates
    D*_b (none NaN), centred on D: p = (1 + #{b : |D*_b − D| ≥ |D|}) / (B + 1); 1 when D = 0."""
    import numpy as np

    exceed = int(np.count_nonzero(np.abs(replicates - difference) >= abs(difference)))
    return (1 + exceed) / (len(replicates) + 1)


def bootstrap_replicates(
    differences: NDArray[np.float64], eligible: NDArray[np.float64], resamples: int, seed: int
) -> NDArray[np.float64]:
    """Bootstrap replicates of every metric's mean difference: `resamples` × metrics.

    Each replicate draws T of the T shared tasks with replacement — every attempt of a task,
    both sides, together — as `numpy.random.default_rng(seed).integers(0, T, (B, T))`, in
    blocks of rows, turned into counts per task; a metric's replicate is Σ count·eligible·difference / Σ count·eligible over its tasks,
    NaN when the draw holds none of them. All metrics share the draws.
    """
    import numpy as np

    metrics, tasks = differences.shape
    rng = np.random.default_rng(seed)
    rows = max(1, 1_000_000 // tasks)  # memory of one block of draws and counts: at most 16 MB
    weighted = (differences * eligible).T
    out = np.empty((resamples, metrics))
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        draws = rng.integers(0, tasks, size=(stop - start, tasks))
        draws += np.arange(stop - start)[:, None] * tasks  # row r's task j is cell r·T + j
        counts = np.bincount(draws.ravel(), minlength=(stop - start) * tasks).reshape(stop - start, tasks)
        counts = counts.astype(np.float64)
        denominator = counts @ eligible.T
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:stop] = np.where(denominator > 0, (counts @ weighted) / denominator, np.nan)
    return out
