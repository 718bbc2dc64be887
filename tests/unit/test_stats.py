"""pass@k / pass^k against the paper's table, the source README, math.comb and scipy.stats.beta."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from scipy.stats import beta as beta_dist

from fair_forge_core import stats
from fair_forge_core.schemas import StatisticalMode

FREQUENTIST = StatisticalMode()

# The white paper's table for n = 3, c = 2 (three decimals as printed).
PAPER_TABLE = {1: (0.667, 0.667), 2: (0.889, 0.444), 3: (0.963, 0.296), 4: (0.988, 0.198), 5: (0.996, 0.132)}


@pytest.mark.parametrize("k", sorted(PAPER_TABLE))
def test_plug_in_reproduces_the_papers_table(k: int) -> None:
    expected_at, expected_pow = PAPER_TABLE[k]
    assert round(stats.pass_at_k(3, 2, k), 3) == expected_at
    assert round(stats.pass_pow_k(3, 2, k), 3) == expected_pow


def test_plug_in_reproduces_the_lambda_readme() -> None:
    assert round(stats.pass_at_k(3, 2, 3), 4) == 0.9630
    assert round(stats.pass_pow_k(3, 2, 3), 4) == 0.2963


def test_library_docs_example_seven_of_ten() -> None:
    assert round(stats.pass_at_k(10, 7, 3), 3) == 0.973
    assert round(stats.pass_pow_k(10, 7, 3), 3) == 0.343


@pytest.mark.parametrize(("n", "c", "k"), [(0, 0, 1), (3, 4, 1), (3, -1, 1), (3, 2, 0)])
def test_arguments_are_validated(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        stats.pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        stats.pass_pow_k(n, c, k)


def test_non_integers_are_refused() -> None:
    with pytest.raises(TypeError):
        stats.pass_at_k(3.0, 2, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        stats.pass_pow_k(3, True, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("n", "c", "k"), [(3, 2, 1), (3, 2, 2), (3, 2, 3), (10, 3, 4), (50, 17, 10), (7, 0, 3), (7, 7, 7)]
)
def test_unbiased_estimators_match_math_comb(n: int, c: int, k: int) -> None:
    assert stats.pass_at_k_unbiased(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)
    assert stats.pass_pow_k_unbiased(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)


def test_unbiased_estimators_are_null_when_k_exceeds_n() -> None:
    assert stats.pass_at_k_unbiased(3, 2, 4) is None
    assert stats.pass_pow_k_unbiased(3, 2, 4) is None


def test_unbiased_estimator_is_stable_for_large_n() -> None:
    # C(5000, 100) overflows a float; the product form must not.
    exact = 1 - math.comb(3000, 100) / math.comb(5000, 100)
    assert stats.pass_at_k_unbiased(5000, 2000, 100) == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize(
    ("n", "c", "k", "prior", "level"),
    [(3, 2, 3, (1, 1), 0.95), (20, 15, 5, (2, 3), 0.9), (5, 0, 2, (1, 1), 0.8)],
)
def test_bayesian_intervals_are_beta_quantiles_pushed_through_the_formula(n, c, k, prior, level) -> None:
    rates = stats.estimate_rates(n, c, k, StatisticalMode(mode="bayesian", ci_level=level, prior=prior))
    posterior = beta_dist(prior[0] + c, prior[1] + n - c)
    low, high = posterior.ppf((1 - level) / 2), posterior.ppf((1 + level) / 2)
    assert rates.pass_pow_k_ci_low == pytest.approx(low**k, rel=1e-9)
    assert rates.pass_pow_k_ci_high == pytest.approx(high**k, rel=1e-9)
    assert rates.pass_at_k_ci_low == pytest.approx(1 - (1 - low) ** k, rel=1e-9)
    assert rates.pass_at_k_ci_high == pytest.approx(1 - (1 - high) ** k, rel=1e-9)
    # Posterior means: E[p^k] is the k-th raw moment of the Beta distribution.
    assert rates.pass_pow_k == pytest.approx(posterior.moment(k), rel=1e-9)
    expected_at = 1 - beta_dist(prior[1] + n - c, prior[0] + c).moment(k)
    assert rates.pass_at_k == pytest.approx(expected_at, rel=1e-9)


def test_frequentist_mode_has_no_intervals() -> None:
    rates = stats.estimate_rates(3, 2, 3, FREQUENTIST)
    assert rates.pass_at_k_ci_low is None and rates.pass_pow_k_ci_high is None
    assert rates.pass_at_k == stats.pass_at_k(3, 2, 3)
    assert rates.pass_pow_k == (2 / 3) ** 3
    assert stats.estimate_rates(3, 2, 3, FREQUENTIST) is rates  # one frozen answer per question


@pytest.mark.parametrize("mode", ["frequentist", "bayesian"])
def test_the_memos_never_answer_a_bool_for_an_int(mode: str) -> None:
    statistical = StatisticalMode(mode=mode)  # type: ignore[arg-type]
    stats.estimate_rates(1, 1, 1, statistical)  # 1's answer memoised first
    for n, c, k in ((True, 1, 1), (1, True, 1), (1, 1, True)):
        with pytest.raises(TypeError):
            stats.estimate_rates(n, c, k, statistical)


def test_curve_runs_to_at_least_ten_and_to_k() -> None:
    assert [p.k for p in stats.pass_curve(3, 2, 3, FREQUENTIST)] == list(range(1, 11))
    curve = stats.pass_curve(20, 10, 12, FREQUENTIST)
    assert [p.k for p in curve] == list(range(1, 13))
    assert curve[4].pass_pow_k == pytest.approx(0.5**5)
    assert curve[11].pass_at_k_unbiased == pytest.approx(1 - math.comb(10, 12) / math.comb(20, 12))


counts = st.integers(min_value=1, max_value=200).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(min_value=0, max_value=n), st.integers(min_value=1, max_value=30))
)


@settings(max_examples=100, derandomize=True)
@given(counts)
def test_properties_of_plug_in_and_unbiased_estimates(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    at, pow_ = stats.pass_at_k(n, c, k), stats.pass_pow_k(n, c, k)
    assert 0.0 <= pow_ <= at + 1e-12 <= 1.0 + 1e-12
    assert stats.pass_at_k(n, c, k + 1) >= at - 1e-12  # more attempts: more chance of one success
    assert stats.pass_pow_k(n, c, k + 1) <= pow_ + 1e-12  # more attempts: less chance all succeed
    if c < n:
        assert stats.pass_at_k(n, c + 1, k) >= at - 1e-12
        assert stats.pass_pow_k(n, c + 1, k) >= pow_ - 1e-12
    unbiased_at, unbiased_pow = stats.pass_at_k_unbiased(n, c, k), stats.pass_pow_k_unbiased(n, c, k)
    if k <= n:
        assert unbiased_at is not None and unbiased_pow is not None
        assert 0.0 <= unbiased_pow <= unbiased_at + 1e-12 <= 1.0 + 1e-12


@settings(max_examples=60, derandomize=True)
@given(counts, st.floats(min_value=0.5, max_value=0.99))
def test_bayesian_estimates_are_ordered(nck: tuple[int, int, int], level: float) -> None:
    # The posterior mean of p^k may lie outside the equal-tailed interval for large k
    # (a heavy right tail), so only the bounds' order and range are properties.
    n, c, k = nck
    rates = stats.estimate_rates(n, c, k, StatisticalMode(mode="bayesian", ci_level=level))
    assert 0.0 <= rates.pass_at_k_ci_low <= rates.pass_at_k_ci_high <= 1.0
    assert 0.0 <= rates.pass_pow_k_ci_low <= rates.pass_pow_k_ci_high <= 1.0
    assert 0.0 <= rates.pass_pow_k <= rates.pass_at_k + 1e-12 <= 1.0 + 1e-12
    shuffled = stats.estimate_rates(n, c, k, StatisticalMode(mode="bayesian", ci_level=level))
    assert shuffled == rates  # exact and reproducible: no sampling


def test_curve_carries_the_credible_bounds_of_each_k_in_bayesian_mode_only() -> None:
    bayesian = StatisticalMode(mode="bayesian", ci_level=0.9)
    for point in stats.pass_curve(16, 13, 3, bayesian):
        rates = stats.estimate_rates(16, 13, point.k, bayesian)
        assert (point.pass_at_k_ci_low, point.pass_at_k_ci_high) == (rates.pass_at_k_ci_low, rates.pass_at_k_ci_high)
        assert (point.pass_pow_k_ci_low, point.pass_pow_k_ci_high) == (
            rates.pass_pow_k_ci_low,
            rates.pass_pow_k_ci_high,
        )
    for point in stats.pass_curve(16, 13, 3, FREQUENTIST):
        assert point.pass_at_k_ci_low is point.pass_at_k_ci_high is point.pass_pow_k_ci_low is None
        assert point.pass_pow_k_ci_high is None


# --------------------------------------------------------------------------- audit: precision and priors


def _closed_form_at_least_one(p: Decimal, k: int) -> Decimal:
    """1 − (1 − p)^k at 60 digits, as an independent reference for the float formulas."""
    with localcontext() as context:
        context.prec = 60
        return 1 - (1 - p) ** k


def test_small_plug_in_and_unbiased_values_keep_their_digits() -> None:
    # n = 10^6, c = 1, k = 1: both are exactly 1e-6; 1 − (1 − 1e-6) in floats is 9.999999999177334e-07.
    assert stats.pass_at_k(10**6, 1, 1) == pytest.approx(1e-6, rel=1e-14, abs=0)
    assert stats.pass_at_k_unbiased(10**6, 1, 1) == pytest.approx(1e-6, rel=1e-14, abs=0)
    # k = 3: 1 − (1 − 10^-6)^3, from 60-digit decimals.
    reference = float(_closed_form_at_least_one(Decimal(1) / Decimal(10**6), 3))
    assert stats.pass_at_k(10**6, 1, 3) == pytest.approx(reference, rel=1e-14, abs=0)


def test_credible_bound_of_pass_at_k_keeps_its_digits() -> None:
    # c = 0 with a uniform prior: p ~ Beta(1, n + 1), whose CDF is 1 − (1 − x)^(n+1), so the lower
    # bound of pass@k is exactly 1 − (1 − tail)^(k/(n+1)) (tail = (1 − level)/2). 60-digit reference.
    n, level = 10**6, 0.99
    mode = StatisticalMode(mode="bayesian", ci_level=level)
    for k in (1, 3, 1000):
        with localcontext() as context:
            context.prec = 60
            tail = (1 - Decimal(repr(level))) / 2
            reference = 1 - ((1 - tail).ln() * k / (n + 1)).exp()
        assert stats.estimate_rates(n, 0, k, mode).pass_at_k_ci_low == pytest.approx(float(reference), rel=1e-12, abs=0)


def test_pass_at_1_and_pass_pow_1_bounds_are_equal_even_when_tiny() -> None:
    # For k = 1 both are the Beta quantile itself; a prior of 0.01 puts it near 1e-231.
    mode = StatisticalMode(mode="bayesian", ci_level=0.99, prior=[0.01, 1.0])
    rates = stats.estimate_rates(100, 0, 1, mode)
    assert 0.0 < rates.pass_pow_k_ci_low < 1e-100
    assert rates.pass_at_k_ci_low == pytest.approx(rates.pass_pow_k_ci_low, rel=1e-15, abs=0)


def test_exact_point_estimates_are_the_closed_forms() -> None:
    # 5 of 5 with a uniform prior, k = 6: E[p^6] = ∏_{i<6} (6 + i)/(7 + i) = 6/12 (telescoping) and
    # E[1 − (1 − p)^6] = 1 − ∏_{i<6} (1 + i)/(7 + i) = 1 − 6!·6!/12! = 1 − 1/924.
    at_k, pow_k = stats.exact_point_estimates(5, 5, 6, StatisticalMode(mode="bayesian"))
    assert (at_k, pow_k) == (1 - Fraction(1, 924), Fraction(1, 2))
    # The prior as written: 0.1 is 1/10. Beta(0.1 + 3, 0.37 + 4), k = 2: ∏ (3.1 + i)/(7.47 + i).
    at_k, pow_k = stats.exact_point_estimates(7, 3, 2, StatisticalMode(mode="bayesian", prior=[0.1, 0.37]))
    assert pow_k == Fraction(31, 10) * Fraction(41, 10) / (Fraction(747, 100) * Fraction(847, 100))
    assert at_k == 1 - Fraction(437, 100) * Fraction(537, 100) / (Fraction(747, 100) * Fraction(847, 100))
    # Frequentist: (c/n)^k.
    assert stats.exact_point_estimates(3, 2, 3, FREQUENTIST) == (Fraction(26, 27), Fraction(8, 27))


def test_a_credible_interval_is_never_nan() -> None:
    with pytest.raises(ValueError, match="no credible interval"):
        stats.beta_credible_interval(1.0, 0.0, 0.95)  # scipy gives NaN for both bounds


@pytest.mark.parametrize("prior", [[1e-300, 1.0], [1.0, 1e300], [0.0009, 1.0], [1.0, 2e6]])
def test_extreme_priors_are_refused(prior: list[float]) -> None:
    with pytest.raises(ValidationError, match="prior"):
        StatisticalMode(mode="bayesian", prior=prior)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    n=st.integers(1, 60),
    data=st.data(),
    k=st.integers(1, 25),
    bayesian=st.booleans(),
    level=st.sampled_from([0.5, 0.9, 0.95]),
    prior=st.tuples(st.sampled_from([0.5, 1.0, 2.5]), st.sampled_from([0.5, 1.0, 3.0])),
)
def test_the_curve_is_the_point_estimates_at_every_k(n, data, k, bayesian, level, prior) -> None:
    # The curve is computed incrementally in k; every point must equal the one-k functions.
    c = data.draw(st.integers(0, n))
    mode = StatisticalMode(mode="bayesian" if bayesian else "frequentist", ci_level=level, prior=list(prior))
    for point in stats.pass_curve(n, c, k, mode):
        rates = stats.estimate_rates(n, c, point.k, mode)
        expected = {
            **rates.model_dump(),
            "pass_at_k_unbiased": stats.pass_at_k_unbiased(n, c, point.k),
            "pass_pow_k_unbiased": stats.pass_pow_k_unbiased(n, c, point.k),
        }
        for name, value in expected.items():
            got = getattr(point, name)
            assert (got is None) == (value is None), name
            if value is not None:
                assert got == pytest.approx(value, rel=1e-12, abs=0) or got == value == 0.0, (name, point.k)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    n=st.integers(1, 200), data=st.data(), bayesian=st.booleans(), prior=st.sampled_from([[0.5, 0.5], [1, 1], [2, 3]])
)
def test_pass_at_1_is_pass_pow_1_to_the_last_bit(n: int, data, bayesian: bool, prior: list[float]) -> None:
    # 1 − (1 − p)^1 and p^1 are the same number; computed two ways they could differ by an ulp.
    c = data.draw(st.integers(0, n))
    mode = StatisticalMode(mode="bayesian" if bayesian else "frequentist", prior=prior)
    rates = stats.estimate_rates(n, c, 1, mode)
    assert rates.pass_at_k == rates.pass_pow_k
    assert rates.pass_at_k_ci_low == rates.pass_pow_k_ci_low and rates.pass_at_k_ci_high == rates.pass_pow_k_ci_high
    assert stats.pass_at_k_unbiased(n, c, 1) == stats.pass_pow_k_unbiased(n, c, 1)
    first = stats.pass_curve(n, c, 1, mode)[0]
    assert first.pass_at_k == first.pass_pow_k and first.pass_at_k_unbiased == first.pass_pow_k_unbiased


def test_a_tiny_credible_level_gives_an_interval_not_an_error() -> None:
    # The two quantiles meet, and rounding may swap them; the interval is their span.
    for prior, level in (([1e6, 1.0], 1e-12), ([1e6, 1e6], 1e-15)):
        rates = stats.estimate_rates(1000, 1, 3, StatisticalMode(mode="bayesian", prior=prior, ci_level=level))
        assert rates.pass_pow_k_ci_low <= rates.pass_pow_k_ci_high
