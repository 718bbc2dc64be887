"""fair_forge_core/judge_error.py: the measurement model's formulas against independent
computations (exact enumeration with fractions, brute force over subsets, mpmath quadrature), the
identity at perfect calibration counts, the refusal of an unidentifiable judge, clipping and seeding
(the variance decomposition: test_judge_noise.py)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from fair_forge_core import judge_error
from fair_forge_core.judge_error import (
    JudgedAttempt,
    attempt_weight,
    check_identifiable,
    correct_suite,
    corrected_pass_at_k,
    corrected_pass_pow_k,
    elementary_symmetric,
    observed_success,
    unidentified_mass,
)
from fair_forge_core.metrics import per_task_metrics
from fair_forge_core.schemas import Counts, JudgeErrorInput
from fair_forge_core.schemas.result import ConversationMetrics

TPR, TNR = Fraction(9, 10), Fraction(17, 20)


def judge(tpr: tuple[int, int], tnr: tuple[int, int], level: str = "turn") -> JudgeErrorInput:
    return JudgeErrorInput(
        judge="judge-hash",
        level=level,  # type: ignore[arg-type]
        tpr=Counts(successes=tpr[0], n=tpr[1]),
        tnr=Counts(successes=tnr[0], n=tnr[1]),
    )


def reading_probability(truth: tuple[int, ...], reading: tuple[int, ...]) -> Fraction:
    """P(the judge reads `reading` | `truth`), turn by turn, exactly."""
    p = Fraction(1)
    for t, r in zip(truth, reading, strict=True):
        p *= (TPR if r else 1 - TPR) if t else (1 - TNR if r else TNR)
    return p


# --------------------------------------------------------------------------- the model


def test_the_weight_is_an_unbiased_reading_of_the_truth_whatever_the_turns_dependence() -> None:
    # Two turns, strongly dependent (the agent fails both or neither more often than chance), and
    # a deterministic check failing in 1/10 of the attempts: E[w] over truth and readings, by
    # exact enumeration, must be P(truly fully correct).
    truth_law = {(1, 1): Fraction(5, 10), (1, 0): Fraction(1, 20), (0, 1): Fraction(1, 20), (0, 0): Fraction(3, 10)}
    check_fails = Fraction(1, 10)
    expected = Fraction(0)
    for truth, p_truth in truth_law.items():
        for reading in itertools.product((0, 1), repeat=2):
            attempt = JudgedAttempt(True, sum(reading), 2)
            w = attempt_weight(attempt, float(TPR), float(TNR))
            expected += (1 - check_fails) * p_truth * reading_probability(truth, reading) * Fraction(w)
    assert float(expected) == pytest.approx(float((1 - check_fails) * truth_law[(1, 1)]), abs=1e-12)
    assert attempt_weight(JudgedAttempt(False, 2, 2), 0.9, 0.85) == 0.0


def test_one_turn_is_rogan_gladen() -> None:
    # n attempts of one turn, q of them judged correct: mean w = (q + TNR − 1)/(TPR + TNR − 1).
    verdicts = [True] * 7 + [False] * 3
    weights = [attempt_weight(JudgedAttempt(True, int(v), 1), 0.9, 0.85) for v in verdicts]
    assert sum(weights) / len(weights) == pytest.approx((0.7 + 0.85 - 1) / (0.9 + 0.85 - 1), abs=1e-15)


def test_observed_success_of_an_attempt() -> None:
    assert observed_success([True, True, True], 0.9, 0.85) == pytest.approx(0.9**3)
    assert observed_success([True, False, False], 0.9, 0.85) == pytest.approx(0.9 * 0.15**2)
    # Independent turns of rate θ: the attempt is judged fully correct w.p. (θ·TPR + (1 − θ)(1 − TNR))^m.
    theta = 0.7
    total = sum(
        math.prod(theta if t else 1 - theta for t in truth) * observed_success(truth, 0.9, 0.85)
        for truth in itertools.product((True, False), repeat=3)
    )
    assert total == pytest.approx((theta * 0.9 + 0.3 * 0.15) ** 3, abs=1e-15)


def test_conversation_level_reads_an_attempt_once() -> None:
    assert JudgedAttempt(True, 3, 3).signature("conversation") == (1, 0)
    assert JudgedAttempt(True, 2, 3).signature("conversation") == (0, 1)
    assert JudgedAttempt(True, 2, 3).signature("turn") == (2, 1)
    assert JudgedAttempt(False, 3, 3).signature("turn") is None


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_elementary_symmetric_is_the_sum_over_subsets(k: int) -> None:
    weights = [1.3, -0.2, 0.7, 2.0]
    brute = sum(math.prod(subset) for subset in itertools.combinations(weights, k))
    assert float(elementary_symmetric(weights, k)) == pytest.approx(brute, abs=1e-12)
    assert float(elementary_symmetric(weights, 5)) == 0.0


def test_corrected_estimators_are_the_unbiased_ones_at_a_perfect_judge() -> None:
    weights = [1.0, 0.0, 1.0, 1.0, 0.0]  # c = 3 of n = 5
    assert float(corrected_pass_pow_k(weights, 2)) == pytest.approx(math.comb(3, 2) / math.comb(5, 2))
    assert float(corrected_pass_at_k(weights, 2)) == pytest.approx(1 - math.comb(2, 2) / math.comb(5, 2))


def test_corrected_pass_pow_k_is_unbiased_for_p_to_the_k() -> None:
    # Three attempts of one turn each, truly correct w.p. 0.6, k = 2: E over every truth and reading.
    p = Fraction(3, 5)
    expected_pow = expected_at = Fraction(0)
    for truths in itertools.product((0, 1), repeat=3):
        p_truth = math.prod(p if t else 1 - p for t in truths)
        for reading in itertools.product((0, 1), repeat=3):
            chance = p_truth * math.prod(reading_probability((t,), (r,)) for t, r in zip(truths, reading, strict=True))
            weights = [attempt_weight(JudgedAttempt(True, r, 1), float(TPR), float(TNR)) for r in reading]
            expected_pow += chance * Fraction(float(corrected_pass_pow_k(weights, 2)))
            expected_at += chance * Fraction(float(corrected_pass_at_k(weights, 2)))
    assert float(expected_pow) == pytest.approx(float(p**2), abs=1e-12)
    assert float(expected_at) == pytest.approx(float(1 - (1 - p) ** 2), abs=1e-12)


# --------------------------------------------------------------------------- identifiability


def test_a_judge_no_better_than_chance_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match=r"TPR \+ TNR = 30/50 \+ 20/50 = 1.0000 ≤ 1"):
        check_identifiable(Counts(successes=30, n=50), Counts(successes=20, n=50))
    with pytest.raises(ValueError, match="no information"):
        correct_suite({"t": [JudgedAttempt(True, 1, 1)]}, 1, judge((10, 50), (20, 50)))


def test_a_calibration_too_small_to_tell_the_judge_from_chance_is_refused() -> None:
    # 0.75 + 0.75 > 1, but 3 of 4 each leaves much of the posterior at TPR + TNR ≤ 1.
    with pytest.raises(ValueError, match="too small to tell the judge from chance"):
        check_identifiable(Counts(successes=3, n=4), Counts(successes=3, n=4))
    check_identifiable(Counts(successes=45, n=50), Counts(successes=42, n=50))


@pytest.mark.parametrize(
    ("tpr", "tnr"), [((3, 4), (3, 4)), ((9, 12), (5, 9)), ((45, 50), (42, 50)), ((540, 1000), (500, 1000))]
)
def test_unidentified_mass_matches_mpmath(tpr: tuple[int, int], tnr: tuple[int, int]) -> None:
    mpmath.mp.dps = 20
    a1, b1 = tpr[0] + 0.5, tpr[1] - tpr[0] + 0.5
    a2, b2 = tnr[0] + 0.5, tnr[1] - tnr[0] + 0.5

    def integrand(t: mpmath.mpf) -> mpmath.mpf:
        density = t ** (a1 - 1) * (1 - t) ** (b1 - 1) / mpmath.beta(a1, b1)
        return density * mpmath.betainc(a2, b2, 0, 1 - t, regularized=True)

    mean, sd = a1 / (a1 + b1), math.sqrt(a1 * b1 / ((a1 + b1) ** 2 * (a1 + b1 + 1)))
    cuts = sorted({0.0, 1.0, *(min(max(mean + d * sd, 1e-9), 1 - 1e-9) for d in range(-8, 9, 2))})
    reference = float(mpmath.quad(integrand, cuts))
    assert unidentified_mass(Counts(successes=tpr[0], n=tpr[1]), Counts(successes=tnr[0], n=tnr[1])) == pytest.approx(
        reference, abs=1e-10
    )


# --------------------------------------------------------------------------- the suite


def suite_attempts() -> dict[str, list[JudgedAttempt]]:
    patterns = [(3, 3, 3, 3, 2), (3, 2, 3, 1, 3), (0, 1, 3, 3, 3), (3, 3, 3, 3, 3), (2, 3, 3, 0, 3)]
    return {f"t{t}": [JudgedAttempt(s != 0 or t % 2 == 0, s, 3) for s in pattern] for t, pattern in enumerate(patterns)}


def test_perfect_counts_give_todays_figures_exactly() -> None:
    tasks = suite_attempts()
    corrected = correct_suite(tasks, 3, judge((40, 40), (60, 60)))
    rows = [
        ConversationMetrics.model_construct(
            task_id=name,
            assistant_id="a",
            is_scored=True,
            is_fully_correct=a.deterministic_passed and a.judged_correct == 3,
        )
        for name, attempts in tasks.items()
        for a in attempts
    ]
    today = per_task_metrics(rows, 3, 0.95)
    assert corrected.method == "identity" and corrected.interval_method == "task_wilson"
    for field in (
        "pass_at_k",
        "pass_pow_k",
        "pass_at_k_ci_low",
        "pass_at_k_ci_high",
        "pass_pow_k_ci_low",
        "pass_pow_k_ci_high",
    ):
        assert getattr(corrected, field) == getattr(today, field), field
    first = corrected.per_task[0]  # 4 of 5 fully correct
    assert (first.correct, first.rate, first.pass_pow_k) == (4, 0.8, math.comb(4, 3) / math.comb(5, 3))
    assert corrected.draws is None and corrected.monte_carlo_error is None and corrected.clipped_tasks == []


def test_a_negative_rogan_gladen_rate_is_clipped_and_reported() -> None:
    tasks = {"bad": [JudgedAttempt(True, 0, 1)] * 4, "good": [JudgedAttempt(True, 1, 1)] * 4}
    corrected = correct_suite(tasks, 2, judge((45, 50), (42, 50)), draws=2000)
    bad, good = corrected.per_task
    tnr, j = 42 / 50, 45 / 50 + 42 / 50 - 1
    assert bad.rate_raw == pytest.approx(-(1 - tnr) / j) and bad.rate == 0.0 and bad.rate_clipped
    assert good.rate_raw == pytest.approx(tnr / j) and good.rate == 1.0 and good.rate_clipped
    assert corrected.clipped_tasks == ["bad", "good"]
    assert 0.0 < bad.clipped_draws < 1.0


def test_the_posterior_mean_matches_quadrature() -> None:
    # One task, one turn an attempt: 50 judged correct, 30 judged incorrect, 20 failed checks. Rate =
    # π_correct·x + π_incorrect·y with π ~ Dirichlet(counts + 1/3) independent of (x, y), so
    # E[rate] = E[π_correct]·E[x] + E[π_incorrect]·E[y] when no draw is clipped; E[x], E[y] by
    # mpmath over the Beta posteriors (conditioned on J > 0, whose complement is negligible here).
    attempts = [JudgedAttempt(True, 1, 1)] * 50 + [JudgedAttempt(True, 0, 1)] * 30 + [JudgedAttempt(False, 0, 1)] * 20
    draws = 20_000
    corrected = correct_suite({"t": attempts}, 1, judge((90, 100), (85, 100)), draws=draws)
    task = corrected.per_task[0]
    assert task.clipped_draws == 0.0
    mpmath.mp.dps = 15
    a1, b1, a2, b2 = 90.5, 10.5, 85.5, 15.5

    def expectation(f: object) -> float:
        def inner(t: mpmath.mpf, u: mpmath.mpf) -> mpmath.mpf:
            dens = t ** (a1 - 1) * (1 - t) ** (b1 - 1) * u ** (a2 - 1) * (1 - u) ** (b2 - 1)
            return dens * f(t, u)  # type: ignore[operator]

        norm = mpmath.beta(a1, b1) * mpmath.beta(a2, b2)
        points = [0.6, 0.75, 0.8, 0.85, 0.9, 0.95, 1]  # split where the posteriors peak: quad needs it
        return float(mpmath.quad(inner, points, points) / norm)

    ex = expectation(lambda t, u: u / (t + u - 1))
    ey = expectation(lambda t, u: -(1 - u) / (t + u - 1))
    expected = (50 + 1 / 3) / (100 + 1) * ex + (30 + 1 / 3) / (100 + 1) * ey
    # k = 1: pass^1 is the posterior mean of the rate; 4 standard errors of a mean of draws ≤ 1.
    assert task.pass_pow_k == pytest.approx(expected, abs=4 * 0.2 / math.sqrt(draws))
    assert task.rate_ci_low < task.rate < task.rate_ci_high


def test_the_same_seed_gives_the_same_figures_and_another_seed_others() -> None:
    tasks, error = suite_attempts(), judge((45, 50), (42, 50))
    first = correct_suite(tasks, 3, error, draws=1000, seed=7)
    assert first == correct_suite(tasks, 3, error, draws=1000, seed=7)
    other = correct_suite(tasks, 3, error, draws=1000, seed=8)
    assert other.pass_pow_k_ci_low != first.pass_pow_k_ci_low
    assert first.method == "monte_carlo" and first.seed == 7
    assert first.monte_carlo_error == pytest.approx(2 * math.sqrt(0.025 * 0.975 / 1000))


def test_the_suite_reads_only_tasks_with_k_attempts() -> None:
    tasks = {**suite_attempts(), "short": [JudgedAttempt(True, 3, 3)] * 2}
    corrected = correct_suite(tasks, 3, judge((45, 50), (42, 50)), draws=1000)
    assert (corrected.tasks, corrected.tasks_with_k_attempts) == (6, 5)
    assert corrected.per_task[-1].pass_pow_k is None
    assert corrected.pass_pow_k is not None and corrected.pass_pow_k_ci_low is not None
    assert corrected.pass_pow_k_ci_low <= corrected.pass_pow_k <= corrected.pass_pow_k_ci_high  # type: ignore[operator]
    none = correct_suite({"short": [JudgedAttempt(True, 3, 3)]}, 3, judge((45, 50), (42, 50)), draws=1000)
    assert none.pass_pow_k is None and none.pass_pow_k_ci_low is None


def test_the_curve_at_each_k_is_the_suite_corrected_at_that_k() -> None:
    # Every task has 10 attempts, so every k ≤ 10 reads the same tasks and the same draws.
    tasks = {name: attempts * 2 for name, attempts in suite_attempts().items()}
    error = judge((45, 50), (42, 50))
    curve = correct_suite(tasks, 3, error, draws=1000).curve
    assert [p.k for p in curve] == list(range(1, 11))
    for k in (1, 3, 6, 10):
        alone = correct_suite(tasks, k, error, draws=1000)
        assert curve[k - 1].pass_pow_k == pytest.approx(alone.pass_pow_k, rel=1e-12)
        assert curve[k - 1].pass_at_k == pytest.approx(alone.pass_at_k, rel=1e-12)
        assert curve[k - 1].pass_pow_k_ci_low == pytest.approx(alone.pass_pow_k_ci_low, rel=1e-12)
    pow_k = [p.pass_pow_k for p in curve]
    at_k = [p.pass_at_k for p in curve]
    assert pow_k == sorted(pow_k, reverse=True) and at_k == sorted(at_k)  # E[p^K] falls, E[1 − (1 − p)^K] rises
    assert correct_suite(tasks, 3, judge((40, 40), (60, 60))).curve == []  # identity: today's figures, no band


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="has no attempt"):
        correct_suite({"t": []}, 1, judge((45, 50), (42, 50)))
    with pytest.raises(ValueError, match="k must be"):
        correct_suite({"t": [JudgedAttempt(True, 1, 1)]}, 0, judge((45, 50), (42, 50)))
    with pytest.raises(ValueError, match="successes"):
        Counts(successes=5, n=4)


def test_draws_are_numpy_seeded() -> None:
    rng = np.random.default_rng(0)
    assert judge_error.posterior_draws(Counts(successes=9, n=10), 5, rng).shape == (5,)
