"""pass@k and pass^k: plug-in, unbiased and Bayesian estimates (docs/statistics.md).

With n trials of which c succeeded:

- plug-in (the library and the paper): p = c/n, pass@k = 1 − (1 − p)^k, pass^k = p^k;
- unbiased (Chen et al. 2021, τ-bench): pass@k = 1 − C(n−c, k)/C(n, k),
  pass^k = C(c, k)/C(n, k), defined only for k ≤ n;
- Bayesian: p ~ Beta(a + c, b + n − c) with prior (a, b). The posterior means of
  p^k and 1 − (1 − p)^k have closed forms, and because both are monotone in p
  their equal-tailed credible bounds are the Beta quantiles pushed through the
  formula. No sampling: the same input always gives the same numbers.

Precision: 1 − (1 − x)^k is computed as −expm1(k·log1p(−x)), so a small value keeps
its digits (pass@1 equals pass^1 even at 1e-231). Where a tier depends on a point
estimate, `exact_point_estimates` gives it as a fraction (plug-in, and posterior
means with the prior read as the decimal it was written as), so a value exactly on a
boundary — E[p^6] = 1/2 for 5 of 5 with a uniform prior — falls on the side the
rule says, not on the side float rounding picks.

Pure functions, no I/O. `scipy.special` is imported only when a credible interval
is asked for, so the frequentist path pays nothing for it.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from fair_forge_core.schemas import CurvePoint, RateEstimate, StatisticalMode

CURVE_MIN_K = 10


def _check_counts(n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0 <= c <= n:
        raise ValueError(f"c must be between 0 and n={n}, got {c}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def at_least_one_of(p: float, k: int) -> float:
    """1 − (1 − p)^k, the chance of at least one success in k trials of probability p,
    computed as −expm1(k·log1p(−p)) so that a small result keeps its digits; p itself at
    k = 1, so that pass@1 and pass^1 are the same number."""
    if p >= 1.0:
        return 1.0
    if k == 1:
        return p
    return -math.expm1(k * math.log1p(-p))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Plug-in probability of at least one success in k attempts: 1 − (1 − c/n)^k.

    Raises ValueError unless n ≥ 1, 0 ≤ c ≤ n and k ≥ 1 (TypeError for non-ints).
    """
    _check_counts(n, c, k)
    return at_least_one_of(c / n, k)


def pass_pow_k(n: int, c: int, k: int) -> float:
    """Plug-in probability that all k attempts succeed: (c/n)^k. Same checks as `pass_at_k`."""
    _check_counts(n, c, k)
    return (c / n) ** k


def pass_at_k_unbiased(n: int, c: int, k: int) -> float | None:
    """Unbiased 1 − C(n−c, k)/C(n, k); None when k > n.

    Computed as 1 − ∏_{i=n−c+1}^{n} (1 − k/i) = −expm1(Σ log1p(−k/i)), which never
    forms a binomial coefficient and so neither overflows nor loses digits for large n.
    """
    _check_counts(n, c, k)
    if k > n:
        return None
    if n - c < k:
        return 1.0
    if k == 1:
        return c / n  # = pass_pow_k_unbiased(n, c, 1), to the last bit
    return -math.expm1(math.fsum(math.log1p(-k / i) for i in range(n - c + 1, n + 1)))


def pass_pow_k_unbiased(n: int, c: int, k: int) -> float | None:
    """Unbiased C(c, k)/C(n, k) = ∏_{i<k} (c − i)/(n − i); None when k > n, 0.0 when c < k."""
    _check_counts(n, c, k)
    if k > n:
        return None
    if c < k:
        return 0.0
    product = 1.0
    for i in range(k):
        product *= (c - i) / (n - i)
    return product


def posterior_mean_pass_pow_k(alpha: float, beta: float, k: int) -> float:
    """E[p^k] for p ~ Beta(alpha, beta): ∏_{i<k} (alpha + i)/(alpha + beta + i)."""
    product = 1.0
    for i in range(k):
        product *= (alpha + i) / (alpha + beta + i)
    return product


def posterior_mean_pass_at_k(alpha: float, beta: float, k: int) -> float:
    """E[1 − (1 − p)^k] for p ~ Beta(alpha, beta), using 1 − p ~ Beta(beta, alpha):
    1 − ∏_{i<k} (beta + i)/(alpha + beta + i) = −expm1(Σ log1p(−alpha/(alpha + beta + i)));
    at k = 1 the same number as `posterior_mean_pass_pow_k`, E[p]."""
    if k == 1:
        return posterior_mean_pass_pow_k(alpha, beta, 1)
    return -math.expm1(math.fsum(math.log1p(-alpha / (alpha + beta + i)) for i in range(k)))


def exact_point_estimates(n: int, c: int, k: int, mode: StatisticalMode) -> tuple[Fraction, Fraction]:
    """(pass@k, pass^k) of `estimate_rates` as exact fractions, for decisions on boundaries.

    Frequentist: 1 − (1 − c/n)^k and (c/n)^k. Bayesian: the posterior means, with each
    prior parameter read as the shortest decimal of its float (the 0.1 a caller wrote
    is 1/10, not the binary float nearest to it).
    """
    _check_counts(n, c, k)
    if mode.mode == "frequentist":
        p = Fraction(c, n)
        return 1 - (1 - p) ** k, p**k
    # With a = A/D and b = B/D over one denominator, every factor is a ratio of integers:
    # (a + c + i)/(a + b + n + i) = (A + D(c + i))/(A + B + D(n + i)). One gcd at the end.
    a, b = (Fraction(repr(value)) for value in mode.prior)
    d = math.lcm(a.denominator, b.denominator)
    big_a, big_b = a.numerator * (d // a.denominator), b.numerator * (d // b.denominator)
    totals = math.prod(big_a + big_b + d * (n + i) for i in range(k))
    pow_k = Fraction(math.prod(big_a + d * (c + i) for i in range(k)), totals)
    none_in_k = Fraction(math.prod(big_b + d * (n - c + i) for i in range(k)), totals)
    return 1 - none_in_k, pow_k


def beta_credible_interval(alpha: float, beta: float, level: float) -> tuple[float, float]:
    """Equal-tailed `level` credible interval of Beta(alpha, beta): its (1−level)/2 and (1+level)/2 quantiles."""
    from scipy.special import betaincinv

    tail = (1.0 - level) / 2.0
    low, high = float(betaincinv(alpha, beta, tail)), float(betaincinv(alpha, beta, 1.0 - tail))
    # At a tiny level the two quantiles meet, and rounding may swap them: the interval is their span.
    low, high = min(low, high), max(low, high)
    if not (0.0 <= low <= high <= 1.0):  # NaN included: never a bound, nor a tier, from it
        raise ValueError(f"no credible interval for Beta({alpha:g}, {beta:g}) at level {level:g}")
    return low, high


def wilson_interval(n: int, c: int, level: float) -> tuple[float, float]:
    """Wilson's score interval for a success rate, c successes in n trials, at two-sided `level`.

    With p̂ = c/n and z = z_{(1+level)/2} (the standard normal quantile, `statistics.NormalDist`):
    (p̂ + z²/2n ± z·sqrt(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n), clipped to [0, 1] (the low bound
    is 0 at c = 0 and the high bound 1 at c = n, exactly). Same checks on n and c as
    `pass_at_k`; ValueError unless 0 < level < 1. Pure standard library.
    """
    _check_counts(n, c, 1)
    return wilson_interval_of_mean(c / n, n, level)


def clopper_pearson_interval(n: int, c: int, level: float) -> tuple[float, float]:
    """The Clopper–Pearson ("exact") interval for a success probability, c successes in n
    trials, at two-sided `level`: with α = 1 − level, the low bound is the α/2 quantile of
    Beta(c, n − c + 1) (0 when c = 0) and the high bound the 1 − α/2 quantile of
    Beta(c + 1, n − c) (1 when c = n). It inverts the two one-sided binomial tests, so its
    coverage is at least `level` for every p. Same checks on n and c as `pass_at_k`;
    ValueError unless 0 < level < 1."""
    from scipy.special import betaincinv

    _check_counts(n, c, 1)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    tail = (1.0 - level) / 2.0
    low = 0.0 if c == 0 else float(betaincinv(c, n - c + 1, tail))
    high = 1.0 if c == n else float(betaincinv(c + 1, n - c, 1.0 - tail))
    return low, high


def wilson_interval_of_mean(mean: float, n: int, level: float) -> tuple[float, float]:
    """`wilson_interval` with p̂ = `mean`, the mean of n values in [0, 1] (not only 0s and 1s).

    A value in [0, 1] with mean μ has variance at most μ(1 − μ), the variance of a 0/1 value
    with that mean, so the interval is Wilson's for a proportion, and conservative when the
    values vary less than 0s and 1s would. The low bound is 0 at mean 0 and the high bound 1
    at mean 1, exactly. ValueError unless n ≥ 1, 0 ≤ mean ≤ 1 and 0 < level < 1.
    """
    import statistics

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an int of at least 1, got {n!r}")
    if not 0.0 <= mean <= 1.0:
        raise ValueError(f"mean must be between 0 and 1, got {mean}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    z = statistics.NormalDist().inv_cdf((1.0 + level) / 2.0)
    p = mean
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1.0 - p) / n + z * z / (4 * n * n))
    denominator = 1.0 + z * z / n
    low = 0.0 if p == 0.0 else max(0.0, (centre - spread) / denominator)
    high = 1.0 if p == 1.0 else min(1.0, (centre + spread) / denominator)
    return low, high


def estimate_rates(n: int, c: int, k: int, mode: StatisticalMode) -> RateEstimate:
    """pass@k and pass^k of n trials with c successes under `mode`.

    Frequentist: the plug-in values, credible bounds None. Bayesian: the posterior
    means, and bounds from the Beta quantiles q_low, q_high as
    [1 − (1 − q_low)^k, 1 − (1 − q_high)^k] and [q_low^k, q_high^k].
    """
    _check_counts(n, c, k)  # before the memos: True would find 1's answer there
    if mode.mode == "frequentist":
        return _plugin_rates(n, c, k)
    return _posterior_rates(n, c, k, mode.prior[0], mode.prior[1], mode.ci_level)


@functools.lru_cache(maxsize=4096)
def _plugin_rates(n: int, c: int, k: int) -> RateEstimate:
    # Memoised like `_posterior_rates`: one frozen instance per (n, c, k), not one validated
    # model per conversation (10,000 conversations of 5 turns ask about at most 20 distinct ones).
    return RateEstimate(pass_at_k=pass_at_k(n, c, k), pass_pow_k=pass_pow_k(n, c, k))


@functools.lru_cache(maxsize=4096)
def _posterior_rates(n: int, c: int, k: int, prior_a: float, prior_b: float, level: float) -> RateEstimate:
    # Memoised: every conversation asks for its (n, c), and an evaluation has few distinct
    # ones, while each answer costs O(k) (2,000 conversations at k = 1000: 1.3 s of CPU).
    alpha, beta = prior_a + c, prior_b + (n - c)  # not (b + n) − c: that loses a small b
    low, high = beta_credible_interval(alpha, beta, level)
    return RateEstimate(
        pass_at_k=posterior_mean_pass_at_k(alpha, beta, k),
        pass_pow_k=posterior_mean_pass_pow_k(alpha, beta, k),
        pass_at_k_ci_low=at_least_one_of(low, k),
        pass_at_k_ci_high=at_least_one_of(high, k),
        pass_pow_k_ci_low=low**k,
        pass_pow_k_ci_high=high**k,
    )


def pass_curve(n: int, c: int, k: int, mode: StatisticalMode) -> list[CurvePoint]:
    """One point per k' = 1 … max(k, 10): the estimate of `mode` (with its credible bounds in
    Bayesian mode, the bands of the report's curves) and the unbiased estimators.

    The same numbers as calling `estimate_rates`, `pass_at_k_unbiased` and
    `pass_pow_k_unbiased` at every k', in O(max(k, 10)) arithmetic: each product over k'
    grows by one factor per point, and the Beta quantiles do not depend on k'.
    """
    _check_counts(n, c, k)
    bayesian = mode.mode == "bayesian"
    if bayesian:
        alpha, beta = mode.prior[0] + c, mode.prior[1] + (n - c)
        low, high = beta_credible_interval(alpha, beta, mode.ci_level)
    points = []
    # Running over j = k' − 1: log C(n−c, k')/C(n, k') and C(c, k')/C(n, k') (unbiased), the
    # posterior products E[p^k'] and log E[(1 − p)^k'].
    log_none_unbiased, all_unbiased = 0.0, 1.0
    mean_pow, log_mean_none = 1.0, 0.0
    for k_prime in range(1, max(k, CURVE_MIN_K) + 1):
        j = k_prime - 1
        if k_prime <= n:
            log_none_unbiased += math.log1p(-c / (n - j)) if n - c - j > 0 else -math.inf
            all_unbiased *= max(c - j, 0) / (n - j)
        if bayesian:
            mean_pow *= (alpha + j) / (alpha + beta + j)
            log_mean_none += math.log1p(-alpha / (alpha + beta + j))
            rates = RateEstimate(
                pass_at_k=mean_pow if k_prime == 1 else -math.expm1(log_mean_none),
                pass_pow_k=mean_pow,
                pass_at_k_ci_low=at_least_one_of(low, k_prime),
                pass_at_k_ci_high=at_least_one_of(high, k_prime),
                pass_pow_k_ci_low=low**k_prime,
                pass_pow_k_ci_high=high**k_prime,
            )
        else:
            rates = RateEstimate(pass_at_k=at_least_one_of(c / n, k_prime), pass_pow_k=(c / n) ** k_prime)
        points.append(
            CurvePoint(
                k=k_prime,
                **rates.model_dump(),
                pass_at_k_unbiased=(all_unbiased if k_prime == 1 else -math.expm1(log_none_unbiased))
                if k_prime <= n
                else None,
                pass_pow_k_unbiased=all_unbiased if k_prime <= n else None,
            )
        )
    return points
