"""The comparison corrected for the judge's error (`compare.corrected`, `judge_error.task_rate_draws`;
docs/statistics.md "Correcting for the judge's error", bullet "compare").

The difference's posterior is checked against an independent computation: one task per side,
single-turn attempts, so that given the judge (TPR, TNR) each side's rate has the Dirichlet
moments μ = α·w/α₀ and σ² = (α·w²/α₀ − μ²)/(α₀ + 1), w = (0, y, x) the weights of a failed
check, a turn judged incorrect and one judged correct; the judge's posterior Beta(s + ½, n − s + ½)
is integrated by Gauss–Legendre quadrature. With one calibration both sides share the judge:
E[Δ] = E_J[μ_c − μ_b], Var[Δ] = E_J[σ_b² + σ_c²] + Var_J(μ_c − μ_b); with two, independent judges:
Var[Δ] = E[σ_b²] + Var(μ_b) + E[σ_c²] + Var(μ_c). The rates are kept far from 0 and 1, so that
clipping (below 10⁻⁴ of the draws) does not move these moments."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats as scipy_stats

from fair_forge_core.compare.corrected import (
    calibration_notes,
    corrected_verdict,
    same_calibration,
    side_draws,
    within_judge_error,
)
from fair_forge_core.judge_error import JudgedAttempt, correct_suite, task_rate_draws
from fair_forge_core.schemas import CorrectedDifference, Counts, JudgeErrorInput

JUDGE = "a" * 64
DRAWS = 200_000


def calibration(tpr: tuple[int, int], tnr: tuple[int, int], judge: str = JUDGE) -> JudgeErrorInput:
    return JudgeErrorInput(judge=judge, tpr=Counts(successes=tpr[0], n=tpr[1]), tnr=Counts(successes=tnr[0], n=tnr[1]))


def single_turn(correct: int, attempts: int) -> list[JudgedAttempt]:
    """`attempts` attempts of one judged turn, `correct` of them judged correct, no check failed."""
    return [JudgedAttempt(True, int(i < correct), 1) for i in range(attempts)]


def beta_nodes(counts: Counts, nodes: int = 600) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes on [0, 1] and their weights times the Jeffreys posterior's density."""
    t, w = np.polynomial.legendre.leggauss(nodes)
    t, w = (t + 1.0) / 2.0, w / 2.0
    return t, w * scipy_stats.beta.pdf(t, counts.successes + 0.5, counts.n - counts.successes + 0.5)


def moments_given_judge(correct: int, attempts: int, tpr: np.ndarray, tnr: np.ndarray) -> tuple[np.ndarray, ...]:
    """(μ, σ²) of the task's rate at each (TPR, TNR): the Dirichlet's over its 3 reading patterns."""
    j = tpr + tnr - 1.0
    x, y = tnr / j, -(1.0 - tnr) / j
    prior = 1.0 / 3.0
    a_correct, a_incorrect, total = correct + prior, attempts - correct + prior, attempts + 1.0
    mu = (a_correct * x + a_incorrect * y) / total
    second = (a_correct * x * x + a_incorrect * y * y) / total
    return mu, (second - mu * mu) / (total + 1.0)


def judge_expectation(error: JudgeErrorInput, values: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> float:
    """E over the judge's posterior (conditioned on J > 0) of values(TPR, TNR), by quadrature."""
    t1, w1 = beta_nodes(error.tpr)
    t2, w2 = beta_nodes(error.tnr)
    tpr, tnr = np.meshgrid(t1, t2, indexing="ij")
    weight = np.outer(w1, w2) * (tpr + tnr > 1.0)
    safe_tnr = np.where(tpr + tnr > 1.0, tnr, 1.0)  # no division by J ≤ 0 where the weight is 0
    safe_tpr = np.where(tpr + tnr > 1.0, tpr, 1.0)
    return float((weight * values(safe_tpr, safe_tnr)).sum() / weight.sum())


def exact_difference(
    base: tuple[int, int], cand: tuple[int, int], base_error: JudgeErrorInput, cand_error: JudgeErrorInput
) -> tuple[float, float]:
    """E[Δ] and Var[Δ] of the difference of the rates (k = 1), shared or independent judges."""
    if base_error == cand_error:
        mean = judge_expectation(
            base_error, lambda a, b: moments_given_judge(*cand, a, b)[0] - moments_given_judge(*base, a, b)[0]
        )
        second = judge_expectation(
            base_error,
            lambda a, b: (
                (moments_given_judge(*cand, a, b)[0] - moments_given_judge(*base, a, b)[0]) ** 2
                + moments_given_judge(*cand, a, b)[1]
                + moments_given_judge(*base, a, b)[1]
            ),
        )
        return mean, second - mean * mean
    parts = []
    for side, error in ((base, base_error), (cand, cand_error)):
        mu = judge_expectation(error, lambda a, b, side=side: moments_given_judge(*side, a, b)[0])
        mu2 = judge_expectation(
            error,
            lambda a, b, side=side: moments_given_judge(*side, a, b)[0] ** 2 + moments_given_judge(*side, a, b)[1],
        )
        parts.append((mu, mu2 - mu * mu))
    return parts[1][0] - parts[0][0], parts[0][1] + parts[1][1]


ONE = calibration((90, 100), (90, 100))
OTHER = calibration((88, 100), (91, 100))


@pytest.mark.parametrize(
    ("base", "cand", "cand_error"),
    [
        ((32, 80), (48, 80), ONE),  # one calibration: shared judge draws
        ((32, 80), (32, 80), ONE),  # the same data: only the tasks' noise differs
        ((32, 80), (48, 80), OTHER),  # two calibrations: independent judges
    ],
)
def test_the_difference_posterior_matches_the_exact_moments(
    base: tuple[int, int], cand: tuple[int, int], cand_error: JudgeErrorInput
) -> None:
    b, c, shared = side_draws(
        ({"t": single_turn(*base)}, ONE), ({"t": single_turn(*cand)}, cand_error), draws=DRAWS, seed=7
    )
    assert shared == (cand_error == ONE)
    difference = c[0] - b[0]
    assert np.count_nonzero((b == 0) | (b == 1) | (c == 0) | (c == 1)) < DRAWS * 1e-4  # clipping negligible
    mean, variance = exact_difference(base, cand, ONE, cand_error)
    assert abs(difference.mean() - mean) < 4 * math.sqrt(variance / DRAWS)
    assert difference.var() == pytest.approx(variance, rel=0.02)


def test_sharing_the_judge_removes_its_error_from_the_difference() -> None:
    """The exact variances with one judge and with two differ by far more than the tolerance
    above: the test of sharing is not vacuous, and the independent one is wider."""
    shared = exact_difference((32, 80), (48, 80), ONE, ONE)[1]
    independent = exact_difference((32, 80), (48, 80), ONE, calibration((90, 100), (90, 100), "b" * 64))[1]
    assert independent > 1.1 * shared


def test_one_calibration_shares_its_judge_draws_but_not_the_tasks_noise() -> None:
    """Identical data on both sides: the difference is not 0 draw by draw (two noise streams),
    and its variance is the tasks' alone, 2 E[σ²], without the judge's."""
    b, c, _ = side_draws(({"t": single_turn(32, 80)}, ONE), ({"t": single_turn(32, 80)}, ONE), draws=DRAWS, seed=3)
    assert np.count_nonzero(b == c) == 0
    tasks_only = 2 * judge_expectation(ONE, lambda a, t: moments_given_judge(32, 80, a, t)[1])
    assert (c[0] - b[0]).var() == pytest.approx(tasks_only, rel=0.02)


def test_at_stream_1_the_draws_are_correct_suites() -> None:
    tasks = {
        "a": single_turn(3, 5),
        "b": [JudgedAttempt(True, 2, 2), JudgedAttempt(False, 1, 2), JudgedAttempt(True, 1, 2)],
        "c": single_turn(5, 5),
    }
    error = calibration((25, 29), (24, 26))
    corrected = correct_suite(tasks, 3, error, 0.9, draws=2_000, seed=11)
    rates = task_rate_draws(tasks, error, 2_000, 11, 1)
    suite = np.mean([r**3 for r in rates.values()], axis=0)
    assert suite.mean() == pytest.approx(corrected.pass_pow_k, rel=1e-12)
    for task in corrected.per_task:
        low, high = np.quantile(rates[task.task], [0.05, 0.95])
        assert (low, high) == pytest.approx((task.rate_ci_low, task.rate_ci_high), rel=1e-12)
    other = task_rate_draws(tasks, error, 2_000, 11, 2)
    assert not np.array_equal(other["a"], rates["a"])


def test_a_perfect_calibration_is_the_dirichlet_posterior_of_the_judged_rate() -> None:
    """n of n: the judge is read as exact (x = 1, y = 0), so the rate is Beta(c + ⅓, n − c + ⅔)."""
    exact = calibration((29, 29), (26, 26))
    rates = task_rate_draws({"t": single_turn(4, 10)}, exact, DRAWS, 0, 1)["t"]
    a, b = 4 + 1 / 3, 6 + 2 / 3
    mean, variance = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert abs(rates.mean() - mean) < 4 * math.sqrt(variance / DRAWS)
    assert rates.var() == pytest.approx(variance, rel=0.02)


def difference(low: float, high: float) -> CorrectedDifference:
    return CorrectedDifference(
        metric="pass^k",
        baseline=0.5,
        candidate=0.5,
        difference=(low + high) / 2,
        ci_low=low,
        ci_high=high,
        probability_lower=0.5,
    )


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.01, 0.3, "improved"),
        (-0.3, -0.01, "regressed"),
        (-0.1, 0.2, "no_detectable_change"),
        (0.0, 0.2, "no_detectable_change"),
    ],
)
def test_the_corrected_verdict_is_whether_the_interval_excludes_0(low: float, high: float, verdict: str) -> None:
    assert corrected_verdict(difference(low, high)) == verdict


@pytest.mark.parametrize(
    ("observed", "corrected", "identity", "within"),
    [
        ("improved", "improved", False, False),
        ("regressed", "regressed", False, False),
        ("inconclusive", "no_detectable_change", False, False),
        ("improved", "no_detectable_change", False, True),  # the interval includes 0: could reverse
        ("regressed", "no_detectable_change", False, True),
        ("regressed", "improved", False, True),
        ("inconclusive", "improved", False, True),  # the verdicts disagree
        ("improved", "no_detectable_change", True, False),  # exact judges: no judge error
        ("not_tested", "improved", False, None),  # nothing to reverse
    ],
)
def test_within_the_judges_error_band(observed: str, corrected: str, identity: bool, within: bool | None) -> None:
    assert within_judge_error(observed, corrected, identity) is within  # type: ignore[arg-type]


def test_calibrations_alike_or_not() -> None:
    assert same_calibration(ONE, ONE.model_copy(update={"source": "elsewhere.json"}))
    assert not same_calibration(ONE, OTHER)
    assert not same_calibration(ONE, ONE.model_copy(update={"level": "conversation"}))
    assert calibration_notes(ONE, ONE) == []
    assert "two different calibrations of one judge" in calibration_notes(ONE, OTHER)[0]
    different = calibration_notes(ONE, calibration((90, 100), (90, 100), "b" * 64))[0]
    assert "different judges" in different and "two different calibrations" in different
