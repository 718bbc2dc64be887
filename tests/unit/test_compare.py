"""The paired comparison (`fair_forge_core.compare`) against scipy, exact fractions, Holm's
textbook example, an independent re-run of the bootstrap, and `fair_forge_core.stats`."""

from __future__ import annotations

import itertools
import math
import statistics
import subprocess
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from scipy.integrate import quad

from fair_forge_core import stats
from fair_forge_core.compare import (
    MIN_BOOTSTRAP_TASKS,
    Outcome,
    compare,
    holm_adjust,
    mcnemar,
    minimum_detectable_effect,
    minimum_tasks,
    outcomes_from_conversations,
    outcomes_from_result,
    per_task_values,
    probability_better,
    sign_flip_p_value,
    tasks_needed,
)
from fair_forge_core.schemas import Comparison, MetricComparison
from fair_forge_testing.builders import provenance_json, scored_conversation

Z_975, Z_80 = 1.959963984540054, 0.8416212335729143  # standard normal quantiles (tables)


def side(spec: dict[str, tuple[int, int]]) -> list[Outcome]:
    """Outcomes from {task: (n, c)}: c successes then n − c failures."""
    return [(task, i < c) for task, (n, c) in spec.items() for i in range(n)]


def compare_tasks(*args: Any, **kwargs: Any) -> Comparison:
    """`compare` gated by the task-level tests (`population="tasks"`): the rules these tests check."""
    return compare(*args, population="tasks", **kwargs)


def metric(result: Comparison, name: str) -> MetricComparison:
    return next(m for m in result.metrics if m.metric == name)


# --------------------------------------------------------------------------- McNemar


MCNEMAR_CASES = [(3, 9), (0, 5), (7, 7), (12, 1), (20, 5), (1, 0), (40, 22), (100, 130)]


@pytest.mark.parametrize(("b", "c"), MCNEMAR_CASES)
def test_mcnemar_exact_p_is_scipys_binomial_test(b: int, c: int) -> None:
    test = mcnemar(b, c, b + c + 10)
    assert test.exact_p_value == pytest.approx(sps.binomtest(b, b + c, 0.5).pvalue, abs=1e-9)


@pytest.mark.parametrize(("b", "c"), [case for case in MCNEMAR_CASES if case[0] != case[1]])
def test_mcnemar_chi2_is_the_continuity_corrected_statistic(b: int, c: int) -> None:
    test = mcnemar(b, c, b + c)
    statistic = (abs(b - c) - 1) ** 2 / (b + c)
    assert test.chi2_statistic == pytest.approx(statistic, abs=1e-12)
    assert test.chi2_p_value == pytest.approx(sps.chi2.sf(statistic, 1), abs=1e-9)


def test_mcnemar_without_disagreement_or_with_balance() -> None:
    none = mcnemar(0, 0, 10)
    assert (none.exact_p_value, none.chi2_statistic, none.chi2_p_value, none.p_value) == (1.0, None, None, 1.0)
    balanced = mcnemar(7, 7, 20)
    assert balanced.chi2_statistic == 0.0 and balanced.chi2_p_value == 1.0 and balanced.exact_p_value == 1.0


def test_mcnemar_decides_by_the_exact_test_at_any_size() -> None:
    # Issue #33 item 9: 60 tasks, b = 15, c = 29. The exact binomial p is 0.0488 (scipy's
    # binomtest), the continuity-corrected chi-square 0.0500: the exact one decides.
    test = mcnemar(15, 29, 60)
    exact = sps.binomtest(15, 44, 0.5).pvalue
    assert exact == pytest.approx(0.0488, abs=5e-5)
    assert test.method == "exact" and test.p_value == pytest.approx(exact, abs=1e-12)
    assert test.chi2_p_value == pytest.approx(sps.chi2.sf((29 - 15 - 1) ** 2 / 44, 1), abs=1e-12)
    assert test.chi2_p_value > 0.05  # still reported, never deciding
    many = mcnemar(100, 130, 300)
    assert many.method == "exact" and many.p_value == pytest.approx(sps.binomtest(100, 230).pvalue, abs=1e-12)


def test_mcnemar_b_15_c_29_on_60_tasks_is_improved() -> None:
    pattern = [(True, False)] * 15 + [(False, True)] * 29 + [(True, True)] * 10 + [(False, False)] * 6
    base = [(f"t{i}", x) for i, (x, _) in enumerate(pattern)]
    cand = [(f"t{i}", y) for i, (_, y) in enumerate(pattern)]
    for population in ("attempts", "tasks"):
        result = compare(base, cand, k=1, population=population)
        assert result.mcnemar is not None and result.mcnemar.p_value == pytest.approx(0.0488, abs=5e-5)
        assert result.verdict == "improved", population
    # at one attempt a side the attempt-level test is McNemar's exact test
    assert result.attempt_test is not None
    assert result.attempt_test.p_value == pytest.approx(sps.binomtest(15, 44).pvalue, abs=1e-12)


def test_mcnemar_paired_difference_and_its_standard_error() -> None:
    b, c, n = 4, 11, 40
    per_task = [-1.0] * b + [1.0] * c + [0.0] * (n - b - c)
    test = mcnemar(b, c, n)
    assert test.difference == pytest.approx((c - b) / n, abs=1e-15)
    assert test.standard_error == pytest.approx(float(np.std(per_task)) / math.sqrt(n), abs=1e-12)


def test_single_attempts_are_tested_with_mcnemar() -> None:
    # 30 tasks: 18 both right, 2 only baseline right (b), 8 only candidate right (c), 2 both wrong.
    pattern = [(True, True)] * 18 + [(True, False)] * 2 + [(False, True)] * 8 + [(False, False)] * 2
    base = [(f"t{i}", x) for i, (x, _) in enumerate(pattern)]
    cand = [(f"t{i}", y) for i, (_, y) in enumerate(pattern)]
    result = compare(base, cand, k=3)
    assert result.mcnemar is not None and (result.mcnemar.b, result.mcnemar.c) == (2, 8)
    expected = sps.binomtest(2, 10, 0.5).pvalue
    pass1 = metric(result, "pass@1")
    assert pass1.p_value_method == "mcnemar_exact"
    assert pass1.p_value == pytest.approx(expected, abs=1e-9)
    # At one attempt a task pass@k and pass^k are pass@1: the same test, counted once by Holm.
    for name in ("pass@k", "pass^k"):
        assert metric(result, name).difference == pass1.difference
        assert metric(result, name).p_value == pass1.p_value
    assert pass1.p_value_holm == pass1.p_value
    for name in ("pass@k_unbiased", "pass^k_unbiased"):
        unbiased = metric(result, name)
        assert unbiased.tasks == 0 and unbiased.difference is None and unbiased.p_value is None
        assert unbiased.note is not None and "k = 3" in unbiased.note
    assert result.verdict == "inconclusive"  # p = 0.109


def test_more_than_one_attempt_has_no_mcnemar() -> None:
    result = compare(side({f"t{i}": (2, 1) for i in range(12)}), side({f"t{i}": (2, 1) for i in range(12)}))
    assert result.mcnemar is None
    assert metric(result, "pass@1").p_value_method == "bootstrap"


# --------------------------------------------------------------------------- Bayesian probability


def exact_probability(alpha_b: int, beta_b: int, alpha_c: int, beta_c: int) -> Fraction:
    """Evan Miller's sum, exactly: P(θ_C > θ_B) = Σ_{i<α_C} B(α_B + i, β_B + β_C) /
    ((β_C + i)·B(1 + i, β_C)·B(α_B, β_B)), with B(x, y) = (x−1)!(y−1)!/(x+y−1)! for integers."""

    def beta(x: int, y: int) -> Fraction:
        return Fraction(math.factorial(x - 1) * math.factorial(y - 1), math.factorial(x + y - 1))

    return sum(
        (
            beta(alpha_b + i, beta_b + beta_c) / ((beta_c + i) * beta(1 + i, beta_c) * beta(alpha_b, beta_b))
            for i in range(alpha_c)
        ),
        Fraction(0),
    )


@pytest.mark.parametrize(
    ("counts", "prior"),
    [
        ((10, 5, 12, 3), (1, 1)),
        ((0, 0, 0, 0), (1, 1)),
        ((3, 7, 3, 7), (2, 3)),
        ((0, 30, 30, 0), (1, 1)),
        ((30, 0, 0, 30), (1, 1)),
        ((90, 60, 85, 65), (1, 1)),
        ((150, 50, 160, 40), (1, 1)),
        ((400, 100, 380, 120), (1, 1)),
        ((1, 0, 0, 1), (5, 5)),
    ],
)
def test_probability_better_equals_evan_millers_exact_sum(
    counts: tuple[int, int, int, int], prior: tuple[int, int]
) -> None:
    sb, fb, sc, fc = counts
    a, b = prior
    expected = exact_probability(a + sb, b + fb, a + sc, b + fc)
    assert probability_better(sb, fb, sc, fc, (float(a), float(b))) == pytest.approx(float(expected), abs=1e-9)


def other_formulation(alpha_b: float, beta_b: float, alpha_c: float, beta_c: float) -> float:
    """P(θ_C > θ_B) = ∫ f_B(y)·(1 − F_C(y)) dy: the baseline's density and the candidate's
    survival function, scipy.stats on the baseline's range (its 1e-13 tails cut)."""
    low, high = sps.beta.ppf([1e-13, 1 - 1e-13], alpha_b, beta_b)
    value, _ = quad(
        lambda y: sps.beta.pdf(y, alpha_b, beta_b) * sps.beta.sf(y, alpha_c, beta_c),
        low,
        high,
        points=[alpha_b / (alpha_b + beta_b), alpha_c / (alpha_c + beta_c)],
        limit=500,
        epsabs=1e-13,
        epsrel=1e-12,
    )
    return float(value)


@pytest.mark.parametrize(
    ("counts", "prior"),
    [
        ((10, 5, 12, 3), (0.5, 0.5)),
        ((40, 10, 35, 15), (0.5, 0.5)),
        ((2, 9, 7, 1), (0.3, 2.7)),
        ((0, 3, 0, 3), (0.5, 0.5)),
    ],
)
def test_probability_better_with_a_fractional_prior_matches_another_integral(
    counts: tuple[int, int, int, int], prior: tuple[float, float]
) -> None:
    sb, fb, sc, fc = counts
    a, b = prior
    expected = other_formulation(a + sb, b + fb, a + sc, b + fc)
    assert probability_better(sb, fb, sc, fc, prior) == pytest.approx(expected, abs=1e-9)
    # Swapping the sides gives the complement (ties have probability 0).
    assert probability_better(sc, fc, sb, fb, prior) == pytest.approx(1 - expected, abs=1e-9)


# --------------------------------------------------------------------------- Holm


def test_holm_wikipedia_example() -> None:
    # Wikipedia, "Holm–Bonferroni method", example: four hypotheses at α = 0.05. Sorted
    # 0.005, 0.01, 0.03, 0.04 against 0.05/4, 0.05/3, 0.05/2: the first two are rejected,
    # 0.03 > 0.025 stops. Adjusted by hand: 4·0.005 = 0.02, 3·0.01 = 0.03, 2·0.03 = 0.06,
    # max(0.06, 1·0.04) = 0.06.
    adjusted = holm_adjust([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    assert [p <= 0.05 for p in adjusted] == [True, False, False, True]


def test_holm_is_monotone_and_capped() -> None:
    # 3·0.01 = 0.03, 2·0.02 = 0.04, 1·0.03 = 0.03 → raised to 0.04; 2·0.5 = 1, 0.6 → 1.
    assert holm_adjust([0.02, 0.03, 0.01]) == pytest.approx([0.04, 0.04, 0.03], abs=1e-15)
    assert holm_adjust([0.5, 0.6]) == [1.0, 1.0]
    assert holm_adjust([]) == []
    with pytest.raises(ValueError):
        holm_adjust([0.5, 1.5])


def test_compare_holm_adjusts_the_distinct_tested_p_values() -> None:
    base = side({f"t{i}": (4, i % 5) for i in range(30)})
    cand = side({f"t{i}": (4, min(4, i % 5 + (i % 3 == 0))) for i in range(30)})
    result = compare(base, cand, k=2, resamples=2000, seed=3)
    tested = [m for m in result.metrics if m.p_value is not None]
    assert len(tested) == 5
    expected = holm_adjust([m.p_value for m in tested if m.p_value is not None])
    assert [m.p_value_holm for m in tested] == pytest.approx(expected, abs=1e-15)


# --------------------------------------------------------------------------- bootstrap


def spread(drop: float = 0.08) -> tuple[list[Outcome], list[Outcome]]:
    """40 tasks of 3 attempts, the candidate's chance lower by `drop` on each."""
    rng = np.random.default_rng(11)
    truth = rng.uniform(0.2, 0.95, 40)
    base = [(f"t{t}", bool(rng.random() < truth[t])) for t in range(40) for _ in range(3)]
    cand = [(f"t{t}", bool(rng.random() < truth[t] - drop)) for t in range(40) for _ in range(3)]
    return base, cand


def test_bootstrap_is_reproducible_with_a_seed_and_changes_with_another() -> None:
    base, cand = spread()
    first, again = compare(base, cand, seed=7), compare(base, cand, seed=7)
    other = compare(base, cand, seed=8)
    assert first == again
    for name in ("pass@1", "pass^k"):
        assert (metric(first, name).ci_low, metric(first, name).ci_high) != (
            metric(other, name).ci_low,
            metric(other, name).ci_high,
        )
        assert metric(first, name).difference == metric(other, name).difference


def test_bootstrap_matches_an_independent_resampling() -> None:
    # The docstring's rule, recomputed here: default_rng(seed).integers(0, T, (B, T)) picks
    # the tasks of each replicate (one block, as T·B is small), the replicate is the mean of
    # the picked tasks' differences, the interval its 2.5 and 97.5 percentiles, and
    # p = (1 + #{|D* − D| ≥ |D|})/(B + 1).
    base, cand = spread()
    result = compare(base, cand, k=3, resamples=4000, seed=5)
    tasks = sorted({t for t, _ in base})
    n = {t: sum(1 for u, _ in base if u == t) for t in tasks}
    cb = {t: sum(1 for u, x in base if u == t and x) for t in tasks}
    cc = {t: sum(1 for u, x in cand if u == t and x) for t in tasks}
    picks = np.random.default_rng(5).integers(0, len(tasks), size=(4000, len(tasks)))
    for name, value in (("pass@1", lambda n, c: c / n), ("pass^k", lambda n, c: (c / n) ** 3)):
        d = np.array([value(n[t], cc[t]) - value(n[t], cb[t]) for t in tasks])
        replicates = d[picks].mean(axis=1)
        observed = d.mean()
        m = metric(result, name)
        assert m.difference == pytest.approx(observed, abs=1e-12)
        assert m.ci_low == pytest.approx(np.percentile(replicates, 2.5), abs=1e-12)
        assert m.ci_high == pytest.approx(np.percentile(replicates, 97.5), abs=1e-12)
        exceed = np.sum(np.abs(replicates - observed) >= abs(observed) - 1e-12)
        assert m.bootstrap_p_value == pytest.approx((1 + exceed) / 4001, abs=1e-12)


def test_interval_contains_the_observed_difference() -> None:
    base, cand = spread()
    for seed in range(3):
        for m in compare(base, cand, seed=seed).metrics:
            assert m.ci_low is not None and m.ci_high is not None and m.difference is not None
            assert m.ci_low <= m.difference <= m.ci_high


def test_a_candidate_identical_to_the_baseline_is_inconclusive() -> None:
    base, _ = spread()
    result = compare(base, list(base))
    assert result.verdict == "inconclusive"
    for m in result.metrics:
        assert m.difference == 0.0 and m.ci_low == 0.0 and m.ci_high == 0.0
        assert m.p_value == 1.0 and not m.significant and m.tasks_needed is None
    assert result.probability_candidate_better == pytest.approx(0.5, abs=1e-9)


def test_a_strong_regression_is_regressed() -> None:
    rng = np.random.default_rng(2)
    base = [(f"t{t}", bool(rng.random() < 0.9)) for t in range(40) for _ in range(3)]
    cand = [(f"t{t}", bool(rng.random() < 0.4)) for t in range(40) for _ in range(3)]
    result = compare(base, cand)
    assert result.verdict == "regressed"
    assert metric(result, "pass@1").significant and metric(result, "pass@1").difference < -0.3  # type: ignore[operator]
    assert result.probability_candidate_better is not None and result.probability_candidate_better < 1e-6
    assert all(m.tasks_needed is None for m in result.metrics)  # only for an inconclusive verdict
    mirrored = compare(cand, base)
    assert mirrored.verdict == "improved"
    assert mirrored.probability_candidate_better == pytest.approx(1 - result.probability_candidate_better, abs=1e-9)


def test_any_significantly_lower_metric_means_regressed_even_if_another_is_higher() -> None:
    # Baseline: every task 2 of 3 (pass@3 ≈ 0.963, pass^3 ≈ 0.296). Candidate: half the tasks
    # 3 of 3, half 0 of 3 (pass@3 = pass^3 = 0.5): less reach, more consistency.
    base = side({f"t{i}": (3, 2) for i in range(100)})
    cand = side({f"t{i}": (3, 3 if i % 2 else 0) for i in range(100)})
    result = compare_tasks(base, cand, k=3, seed=1)
    assert metric(result, "pass@k").significant and metric(result, "pass@k").difference < 0  # type: ignore[operator]
    assert metric(result, "pass^k").significant and metric(result, "pass^k").difference > 0  # type: ignore[operator]
    assert result.verdict == "regressed"
    assert "pass^3 (per-task plug-in)" in result.verdict_explanation and "higher" in result.verdict_explanation


# --------------------------------------------------------------------------- pairing


def test_unmatched_tasks_and_unscored_conversations_are_reported() -> None:
    base = [*side({"a": (2, 1), "b": (2, 2), "only-base": (1, 1)}), ("a", None), ("never-scored", None)]
    cand = [*side({"a": (2, 2), "b": (3, 1), "only-cand": (2, 0)}), ("b", None), ("b", None), ("only-base", None)]
    result = compare(base, cand, k=1)
    assert result.shared_tasks == 2
    assert result.baseline_only_tasks == ["only-base"]  # the candidate's attempt was unscored
    assert result.candidate_only_tasks == ["only-cand"]
    assert result.baseline_unscored_conversations == 2
    assert result.baseline_unscored_by_task == {"a": 1, "never-scored": 1}
    assert result.candidate_unscored_conversations == 3
    assert result.candidate_unscored_by_task == {"b": 2, "only-base": 1}
    assert (result.baseline_attempts, result.baseline_successes) == (4, 3)
    assert (result.candidate_attempts, result.candidate_successes) == (5, 3)
    assert any("only for the baseline" in note for note in result.notes)
    assert any("3 unscored candidate" in note for note in result.notes)
    pass1 = metric(result, "pass@1")
    assert pass1.baseline == pytest.approx((1 / 2 + 1) / 2) and pass1.candidate == pytest.approx((1 + 1 / 3) / 2)


def test_nothing_shared_is_not_tested_with_a_note() -> None:
    result = compare(side({"a": (2, 2)}), side({"b": (2, 0)}))
    assert result.shared_tasks == 0 and result.verdict == "not_tested"
    assert result.verdict_explanation == "not tested: no task was scored on both sides"
    assert result.probability_candidate_better is None
    assert all(m.difference is None and m.p_value is None for m in result.metrics)
    assert any("no task was scored on both sides" in note for note in result.notes)


# --------------------------------------------------------------------------- estimators


@pytest.mark.parametrize(("n", "c", "k"), [(5, 2, 3), (3, 3, 3), (4, 0, 2), (2, 1, 3), (7, 5, 1)])
def test_per_task_values_agree_with_stats(n: int, c: int, k: int) -> None:
    values = per_task_values(n, c, k)
    assert values["pass@1"] == c / n
    assert values["pass@k"] == pytest.approx(1 - (1 - c / n) ** k, abs=1e-15)
    assert values["pass^k"] == pytest.approx((c / n) ** k, abs=1e-15)
    assert values["pass@k_unbiased"] == stats.pass_at_k_unbiased(n, c, k)
    assert values["pass^k_unbiased"] == stats.pass_pow_k_unbiased(n, c, k)
    if k <= n:
        assert values["pass@k_unbiased"] == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)
        assert values["pass^k_unbiased"] == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)


def test_unbiased_averages_use_only_tasks_with_k_attempts_on_both_sides() -> None:
    base_spec = {f"t{i}": (4, i % 5) for i in range(12)} | {"short-base": (2, 1), "short-cand": (5, 3)}
    cand_spec = {f"t{i}": (3, (i * 7) % 4) for i in range(12)} | {"short-base": (4, 4), "short-cand": (2, 2)}
    result = compare(side(base_spec), side(cand_spec), k=3, resamples=500)
    eligible = [f"t{i}" for i in range(12)]
    for name, estimator in (
        ("pass@k_unbiased", stats.pass_at_k_unbiased),
        ("pass^k_unbiased", stats.pass_pow_k_unbiased),
    ):
        m = metric(result, name)
        assert m.tasks == 12
        assert m.baseline == pytest.approx(statistics.fmean(estimator(*base_spec[t], 3) for t in eligible), abs=1e-15)  # type: ignore[misc]
        assert m.candidate == pytest.approx(statistics.fmean(estimator(*cand_spec[t], 3) for t in eligible), abs=1e-15)  # type: ignore[misc]
    plug_in = metric(result, "pass@k")
    assert plug_in.tasks == 14
    assert plug_in.baseline == pytest.approx(statistics.fmean(stats.pass_at_k(n, c, 3) for n, c in base_spec.values()))


def test_standard_error_minimum_detectable_effect_and_tasks_needed() -> None:
    base, cand = spread(drop=0.02)
    result = compare(base, cand, k=1)
    assert result.verdict == "inconclusive"
    pass1 = metric(result, "pass@1")
    tasks = sorted({t for t, _ in base})
    d = [
        sum(x for u, x in cand if u == t) / 3 - sum(x for u, x in base if u == t) / 3 for t in tasks
    ]  # per-task differences of pass@1
    se = statistics.stdev(d) / math.sqrt(len(d))
    assert pass1.standard_error == pytest.approx(se, abs=1e-12)
    assert pass1.minimum_detectable_effect == pytest.approx((Z_975 + Z_80) * se, abs=1e-9)
    assert pass1.tasks_needed == math.ceil(40 * ((Z_975 + Z_80) * se / abs(statistics.fmean(d))) ** 2)
    assert minimum_detectable_effect(0.1, 0.9) == pytest.approx((1.6448536269514722 + Z_80) * 0.1, abs=1e-12)
    assert tasks_needed(50, 0.05, 0.0) is None
    assert tasks_needed(50, 0.05, 0.1) == math.ceil(50 * ((Z_975 + Z_80) * 0.05 / 0.1) ** 2)


# --------------------------------------------------------------------------- input


def conversation_json(session: str, assistant: str, task: str | None, correct: bool | None) -> dict[str, object]:
    return {"session_id": session, "assistant_id": assistant, "task_id": task, "is_fully_correct": correct, "k": 3}


def test_outcomes_from_a_result_file() -> None:
    result = {
        "per_conversation_metrics": [
            conversation_json("s1", "A", "t1", True),
            conversation_json("s2", "A", None, False),
            conversation_json("s3", "B", "t1", None),
        ]
    }
    assert outcomes_from_result(result) == [("t1", True), ("s2", False), ("t1", None)]
    assert outcomes_from_result(result, "B") == [("t1", None)]
    with pytest.raises(ValueError, match="assistants present"):
        outcomes_from_result(result, "C")
    with pytest.raises(ValueError, match="per_conversation_metrics"):
        outcomes_from_result({"aggregated_metrics": {}})
    with pytest.raises(ValueError, match="conversation 0: is_fully_correct"):
        outcomes_from_conversations([conversation_json("s1", "A", "t1", "yes")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="missing field 'task_id'"):
        outcomes_from_conversations([{"session_id": "s", "assistant_id": "A", "is_fully_correct": True}])


def test_outcomes_from_conversation_metrics_models() -> None:
    from fair_forge_core.schemas import ConversationMetrics

    def model(session: str, task: str | None, correct: bool | None) -> ConversationMetrics:
        return scored_conversation(session, correct, task, assistant_id="A")

    models = [model("s1", "t1", True), model("s2", None, None)]
    assert outcomes_from_conversations(models, "A") == [("t1", True), ("s2", None)]


@pytest.mark.parametrize(
    "options",
    [{"k": 0}, {"confidence": 1.0}, {"confidence": 0.0}, {"resamples": 0}, {"seed": -1}, {"prior": (0.0, 1.0)}],
)
def test_bad_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        compare([("t", True)], [("t", False)], **options)  # type: ignore[arg-type]


def test_malformed_outcomes_are_refused() -> None:
    with pytest.raises(TypeError, match="candidate outcome 1"):
        compare([("t", True)], [("t", True), ("t", 1)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="baseline outcome 0"):
        compare([(3, True)], [])  # type: ignore[list-item]


def test_importing_the_module_does_not_import_numpy_or_scipy() -> None:
    code = "import sys, fair_forge_core.compare; print(sorted({'numpy', 'scipy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_default_number_of_resamples_bounds_the_task_draws() -> None:
    from fair_forge_core.compare import bootstrap_resamples

    assert [bootstrap_resamples(t) for t in (0, 1, 400, 401, 2_000, 100_000)] == [
        10_000,
        10_000,
        10_000,
        9_975,
        2_000,
        2_000,
    ]
    outcomes = [(f"t{n}", n % 2 == 0) for n in range(1_000)]
    assert compare(outcomes, outcomes, k=1).bootstrap_resamples == 4_000
    assert compare(outcomes, outcomes, k=1, resamples=500).bootstrap_resamples == 500


# --------------------------------------------------------------------------- small samples (issue: headlines a CI can trust)


def exact_values(n: int, c: int, k: int) -> dict[str, Fraction]:
    """Every metric of one task as an exact fraction, from the textbook formulas (not `stats`)."""
    p = Fraction(c, n)
    return {
        "pass@1": p,
        "pass@k": 1 - (1 - p) ** k,
        "pass^k": p**k,
        "pass@k_unbiased": 1 - Fraction(math.comb(n - c, k), math.comb(n, k)),
        "pass^k_unbiased": Fraction(math.comb(c, k), math.comb(n, k)),
    }


def enumerated_p(differences: list[Fraction]) -> Fraction:
    """The sign-flip test by brute force over itertools.product, in exact arithmetic:
    #{s ∈ {±1}^T : |Σ s_i d_i| ≥ |Σ d_i|} / 2^T."""
    observed = abs(sum(differences, Fraction(0)))
    hits = sum(
        1
        for signs in itertools.product((1, -1), repeat=len(differences))
        if abs(sum((s * d for s, d in zip(signs, differences, strict=True)), Fraction(0))) >= observed
    )
    return Fraction(hits, 2 ** len(differences))


def test_the_issues_22_of_24_against_8_of_24_over_8_tasks_is_regressed() -> None:
    # The issue: v1 6 tasks at 3/3 and 2 at 2/3 (22/24), v2 8 tasks at 1/3 (8/24), k = 3.
    # Today's code called it inconclusive: nothing was tested below 10 tasks.
    base_spec = {f"t{i}": (3, 3 if i < 6 else 2) for i in range(8)}
    cand_spec = {f"t{i}": (3, 1) for i in range(8)}
    result = compare(side(base_spec), side(cand_spec), k=3)
    assert (result.baseline_successes, result.candidate_successes) == (22, 8)
    assert metric(result, "pass^k").baseline == pytest.approx(0.82, abs=0.005)
    assert metric(result, "pass^k").candidate == pytest.approx(0.04, abs=0.005)
    expected = {}
    for name in ("pass@1", "pass@k", "pass^k", "pass@k_unbiased", "pass^k_unbiased"):
        d = [exact_values(*cand_spec[t], 3)[name] - exact_values(*base_spec[t], 3)[name] for t in sorted(base_spec)]
        expected[name] = enumerated_p(d)
        m = metric(result, name)
        assert m.p_value_method == "sign_flip_exact", name
        assert m.p_value == pytest.approx(float(expected[name]), abs=1e-12), name
        assert m.note is None, name  # tested: nothing to excuse
    # By hand: pass@1, pass@3, pass^3 lose on all 8 tasks: p = 2/256; pass^3 unbiased loses on
    # the 6 tasks at 3/3 and ties on 2: p = 2·2²/2⁸ = 8/256; pass@3 unbiased is 1 on every task
    # for both sides: p = 1.
    assert [expected[n] for n in ("pass@1", "pass@k", "pass^k")] == [Fraction(2, 256)] * 3
    assert expected["pass^k_unbiased"] == Fraction(8, 256) and expected["pass@k_unbiased"] == 1
    # Holm over the five distinct tests: 5·2/256 = 10/256 for the three smallest (4·2/256 and
    # 3·2/256 are raised to it), then 2·8/256 = 16/256, then 1.
    holm = {m.metric: m.p_value_holm for m in result.metrics}
    assert holm == pytest.approx(
        {"pass@1": 10 / 256, "pass@k": 10 / 256, "pass^k": 10 / 256, "pass^k_unbiased": 16 / 256, "pass@k_unbiased": 1}
    )
    assert {m.metric for m in result.metrics if m.significant} == {"pass@1", "pass@k", "pass^k"}
    assert result.verdict == "regressed"
    assert all(m.tasks_needed is None for m in result.metrics)


def test_eight_of_eight_tasks_worse_is_regressed_at_p_2_over_256() -> None:
    result = compare(side({f"t{i}": (2, 2) for i in range(8)}), side({f"t{i}": (2, 1) for i in range(8)}), k=1)
    pass1 = metric(result, "pass@1")
    assert pass1.p_value == 2 / 256 and pass1.p_value_holm == 2 / 256 and pass1.p_value_method == "sign_flip_exact"
    assert result.verdict == "regressed"


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_p_value_matches_scipys_exact_permutation_test(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tasks = int(rng.integers(2, 10))
    # values of c/n with small n, so that ties between sums are frequent
    differences = [float(x) for x in rng.integers(-3, 4, tasks) / 3]
    expected = sps.permutation_test(
        (np.array(differences),),
        np.mean,
        permutation_type="samples",
        alternative="two-sided",
        n_resamples=10_000,
    ).pvalue
    fractions = [Fraction(round(3 * d), 3) for d in differences]
    assert sign_flip_p_value(differences) == pytest.approx(float(enumerated_p(fractions)), abs=1e-12)
    if sum(fractions) == 0:
        # scipy's tie tolerance is relative to the observed mean, here a float residue of 0:
        # it misses ties that exact arithmetic has. Every assignment reaches |Σ| ≥ 0.
        assert sign_flip_p_value(differences) == 1.0
    else:
        assert sign_flip_p_value(differences) == pytest.approx(min(1.0, expected), abs=1e-12)


def test_sign_flip_p_value_edge_cases() -> None:
    assert sign_flip_p_value([0.0, 0.0, 0.0]) == 1.0
    assert sign_flip_p_value([-0.5] * 5) == 2 / 32
    # float sums that are equal in exact arithmetic count as ties: 0.1 + 0.2 against 0.3
    assert sign_flip_p_value([0.1, 0.2, -0.3]) == float(
        enumerated_p([Fraction(1, 10), Fraction(2, 10), Fraction(-3, 10)])
    )
    with pytest.raises(ValueError):
        sign_flip_p_value([])
    with pytest.raises(ValueError):
        sign_flip_p_value([0.1] * 17)


def test_a_mcnemar_test_that_ran_carries_no_not_tested_note() -> None:
    # The issue's defect: 6 tasks, one attempt each, the baseline all wrong and the candidate
    # all right printed "p 0.031 yes IMPROVED … not tested".
    result = compare([(f"t{i}", False) for i in range(6)], [(f"t{i}", True) for i in range(6)], k=3)
    pass1 = metric(result, "pass@1")
    assert pass1.p_value_method == "mcnemar_exact"
    assert pass1.p_value == pytest.approx(sps.binomtest(0, 6, 0.5).pvalue, abs=1e-12) == 2 / 64
    assert pass1.significant and result.verdict == "improved"
    for m in result.metrics:
        assert m.note is None or "not tested" not in m.note, (m.metric, m.note)


def test_five_tasks_cannot_be_tested_and_the_note_says_why() -> None:
    # Five tasks, all lost: the sign-flip test's smallest p-value is 2/2⁵ = 0.0625 > 0.05.
    result = compare_tasks(side({f"t{i}": (3, 3) for i in range(5)}), side({f"t{i}": (3, 0) for i in range(5)}))
    assert result.verdict == "not_tested"
    assert result.verdict_explanation.startswith("not tested")
    pass1 = metric(result, "pass@1")
    assert pass1.difference == -1.0 and pass1.bootstrap_p_value == pytest.approx(1 / 10_001)
    assert pass1.p_value is None and pass1.p_value_method is None and pass1.p_value_holm is None
    assert (
        pass1.note == "5 tasks cannot show a difference at 95%: the exact sign-flip test's smallest p-value is 0.0625"
    )
    assert not any(m.significant for m in result.metrics)
    # every per-task difference is −1: no variation, no minimum detectable effect
    assert pass1.standard_error == 0.0 and pass1.minimum_detectable_effect is None
    # All five metrics have the same per-task data (1 → 0): one test. The tasks needed are
    # the fewest at which it can reject, 6 (2/2⁶ ≤ 0.05), not the normal approximation's 0.
    assert {m.tasks_needed for m in result.metrics} == {minimum_tasks(0.95)} == {6}


def test_one_attempt_on_five_tasks_cannot_be_tested_by_mcnemar() -> None:
    # McNemar on 5 tasks, all discordant one way: 2/2⁵ = 0.0625 > 0.05. Counted as not tested.
    result = compare([(f"t{i}", True) for i in range(5)], [(f"t{i}", False) for i in range(5)], k=1)
    pass1 = metric(result, "pass@1")
    assert result.mcnemar is not None and result.mcnemar.p_value == pytest.approx(sps.binomtest(5, 5).pvalue)
    assert pass1.p_value is None and result.verdict == "not_tested"
    assert pass1.note == "5 tasks cannot show a difference at 95%: McNemar's exact test's smallest p-value is 0.0625"


def test_a_test_that_cannot_survive_holm_is_not_tested() -> None:
    # 6 tasks × 3 attempts, each lost 3/3 → 1/3: four distinct tests of smallest p 2/64, so
    # Holm's first step can at best reach 4·2/64 = 0.125 > 0.05. No metric can be
    # significant: not tested, rather than an inconclusive verdict no data could change.
    result = compare_tasks(side({f"t{i}": (3, 3) for i in range(6)}), side({f"t{i}": (3, 1) for i in range(6)}), k=3)
    assert result.verdict == "not_tested"
    tested_alone = compare_tasks(
        side({f"t{i}": (3, 3) for i in range(6)}), side({f"t{i}": (3, 1) for i in range(6)}), k=1
    )
    assert tested_alone.verdict == "regressed"  # pass@1 alone: 2/64 ≤ 0.05
    for m in result.metrics:
        assert m.p_value is None and m.note is not None and "6 tasks cannot show a difference at 95%" in m.note
        # 8 tasks are the fewest at which 5 tests can reach significance (5·2/2⁸ ≤ 0.05 < 5·2/2⁷)
        assert m.tasks_needed is None if m.difference == 0 else m.tasks_needed == 8, m.metric


@pytest.mark.parametrize(
    ("confidence", "tests", "expected"),
    [(0.95, 1, 6), (0.9, 1, 5), (0.99, 1, 8), (0.75, 1, 3), (0.95, 5, 8), (0.95, 2, 7), (0.95, 4, 8)],
)
def test_minimum_tasks_is_the_fewest_at_which_an_exact_test_can_reject(
    confidence: float, tests: int, expected: int
) -> None:
    alpha = 1 - confidence
    assert minimum_tasks(confidence, tests) == expected
    assert tests * 2 / 2**expected <= alpha + 1e-15 < tests * 2 / 2 ** (expected - 1)


def test_tasks_needed_never_contradicts_the_tests_minimum_or_the_tasks_given() -> None:
    # The issue: "1 shared task needed to settle it" for 8 shared tasks. The normal
    # approximation gives ceil(T·(MDE/d)²), tiny for a large difference with a small spread.
    assert tasks_needed(8, 0.01, -0.5) == 1
    assert tasks_needed(8, 0.01, -0.5, minimum=9) == 9
    assert tasks_needed(8, 0.0, -0.5, minimum=6) == 6
    assert tasks_needed(8, 0.01, 0.0, minimum=9) is None
    # In a comparison: six tasks, the candidate losing 4/4 → 0/4 on five and winning 3/4 →
    # 4/4 on one (d = −1 ×5, +0.25): a large difference, a small spread (t ≈ 3.8), yet the
    # exact test's p is 4/64 = 0.0625 (only the five −1 of one sign reach |Σ| ≥ 4.75, with
    # either sign of 0.25): inconclusive. The normal approximation says 4 tasks.
    base = side({f"t{i}": (4, 4) for i in range(5)} | {"t5": (4, 3)})
    cand = side({f"t{i}": (4, 0) for i in range(5)} | {"t5": (4, 4)})
    result = compare_tasks(base, cand, k=1)
    pass1 = metric(result, "pass@1")
    d = [Fraction(-1)] * 5 + [Fraction(1, 4)]
    assert pass1.p_value == float(enumerated_p(d)) == 4 / 64 and result.verdict == "inconclusive"
    floats = [float(x) for x in d]
    normal = math.ceil(
        6 * ((Z_975 + Z_80) * statistics.stdev(floats) / math.sqrt(6) / abs(statistics.fmean(floats))) ** 2
    )
    assert normal == 4
    assert pass1.tasks_needed == 7  # the 6 tasks given + 1 (one test: 6 would be its minimum)


# --------------------------------------------------------------------------- judged alike?


def test_judging_differences_names_each_field_and_both_values() -> None:
    from fair_forge_core.compare import judging_differences
    from fair_forge_core.schemas import Provenance

    base = Provenance.model_validate(provenance_json())
    # what does not decide a verdict differently is not compared: version, datasets
    assert judging_differences(base, Provenance.model_validate(provenance_json(version="2", datasets_hash="d"))) == []
    other_judge = {"class_path": "langchain_openai.ChatOpenAI", "model": "gpt-4o", "identity": "e" * 64}
    changed = Provenance.model_validate(
        provenance_json(
            judges=[other_judge],
            prompt_hash="f" * 64,
            threshold=0.75,
            tool_threshold=0.9,
            tool_dimension_floor=0.25,
            k=5,
        )
    )
    assert judging_differences(base, changed) == [
        f"different judges (identity): baseline [fair_forge_core.judges.ReferenceJudge reference {'a' * 12}] "
        f"vs candidate [langchain_openai.ChatOpenAI gpt-4o {'e' * 12}]",
        f"different prompt_hash: baseline {'b' * 12} vs candidate {'f' * 12}",
        "different threshold: baseline 0.7 vs candidate 0.75",
        "different tool_threshold: baseline 0.8 vs candidate 0.9",
        "different tool_dimension_floor: baseline 0.5 vs candidate 0.25",
        "different k: baseline 3 vs candidate 5",
    ]
    # an ensemble against one of its members: the identity lists differ
    ensemble = Provenance.model_validate(provenance_json(judges=[provenance_json()["judges"][0], other_judge]))  # type: ignore[index]
    assert [line.split(":")[0] for line in judging_differences(base, ensemble)] == ["different judges (identity)"]
    assert judging_differences(None, base) == [
        "the baseline's result has no provenance: how it was judged cannot be checked"
    ]
    # goals: judged on one side only, or under another rule or prompt
    goals = Provenance.model_validate(provenance_json(require_goal=True, goal_prompt_hash="9" * 64))
    assert judging_differences(base, goals) == [
        "different require_goal: baseline None vs candidate True",
        f"different goal_prompt_hash: baseline None vs candidate {'9' * 12}",
    ]
    relaxed = Provenance.model_validate(provenance_json(require_goal=False, goal_prompt_hash="9" * 64))
    assert judging_differences(goals, relaxed) == ["different require_goal: baseline True vs candidate False"]
    assert judging_differences(None, None) == [
        "the baseline's result has no provenance: how it was judged cannot be checked",
        "the candidate's result has no provenance: how it was judged cannot be checked",
    ]


@pytest.mark.parametrize(
    ("field", "value", "line"),
    [
        ("tool_weights", {"selection": 1.0}, 'different tool_weights: baseline {} vs candidate {"selection":1.0}'),
        ("require_tool_correctness", True, "different require_tool_correctness: baseline False vs candidate True"),
        ("statistical_mode", {"method": "bayesian"}, "different statistical_mode: baseline"),
        ("judge_samples", 3, "different judge_samples: baseline 1 vs candidate 3"),
        ("judge_vote", "mean", "different judge_vote: baseline majority vs candidate mean"),
        ("judge_cascade", True, "different judge_cascade: baseline False vs candidate True"),
        ("max_unscored_share", 0.5, "different max_unscored_share: baseline None vs candidate 0.5"),
    ],
)
def test_every_recorded_rule_is_compared(field: str, value: Any, line: str) -> None:
    # Issue #32: provenance recorded these, and the comparison ignored them.
    from fair_forge_core.compare import judging_differences
    from fair_forge_core.schemas import Provenance

    base = Provenance.model_validate(provenance_json())
    (difference,) = judging_differences(base, Provenance.model_validate(provenance_json(**{field: value})))
    assert difference.startswith(line)


def test_the_comparison_carries_the_judging_differences() -> None:
    outcomes = [(f"t{i}", i % 2 == 0) for i in range(12)]
    assert compare(outcomes, outcomes, k=1).judging_differences == []
    assert compare(outcomes, outcomes, k=1, judging=["k: baseline 3 vs candidate 5"]).judging_differences == [
        "k: baseline 3 vs candidate 5"
    ]


def test_the_sign_flip_test_decides_below_ten_tasks_and_the_bootstrap_from_ten() -> None:
    for tasks, method in ((MIN_BOOTSTRAP_TASKS - 1, "sign_flip_exact"), (MIN_BOOTSTRAP_TASKS, "bootstrap")):
        base = side({f"t{i}": (2, 2 if i % 3 else 1) for i in range(tasks)})
        cand = side({f"t{i}": (2, 1 if i % 2 else 2) for i in range(tasks)})
        pass1 = metric(compare(base, cand, k=1, resamples=2000), "pass@1")
        assert pass1.p_value_method == method
        assert pass1.bootstrap_p_value is not None  # reported either way
        if method == "bootstrap":
            assert pass1.p_value == pass1.bootstrap_p_value
        else:
            d = [Fraction(1 if i % 2 else 2, 2) - Fraction(2 if i % 3 else 1, 2) for i in range(tasks)]
            assert pass1.p_value == pytest.approx(float(enumerated_p(d)), abs=1e-12)


def test_criteria_defaults_are_recorded_and_compared_only_where_criteria_are_asked() -> None:
    # Issue #34: the criteria check's settings are in provenance once it judges something, so two
    # results judged under other default criteria are not "judged alike".
    from fair_forge_core.checks.criteria import criteria_prompt_hash
    from fair_forge_core.compare import judging_differences
    from fair_forge_core.judges import ReferenceJudge
    from fair_forge_core.provenance import provenance_of
    from fair_forge_core.schemas import EvaluationConfig
    from fair_forge_testing.builders import conversation, datasets, turn

    plain = datasets(conversation("s1", [turn("q1", "What is 2+2?", "4", "4")]))
    polite = {"turn": [{"name": "polite", "rule": "The answer is polite."}]}
    terse = {"turn": [{"name": "terse", "rule": "The answer is one sentence."}]}
    judge = [ReferenceJudge()]

    def provenance(settings: dict[str, Any] | None, data: Any = plain) -> Any:
        return provenance_of(judge, EvaluationConfig(checks=None if settings is None else {"criteria": settings}), data)

    # no criteria asked: nothing recorded, so a result without criteria reads as it always has
    assert provenance(None).checks is None
    recorded = provenance(polite).checks
    assert recorded is not None and [c["name"] for c in recorded["criteria"]["turn"]] == ["polite"]
    assert recorded["criteria"]["criteria_prompt_hash"] == criteria_prompt_hash()
    differences = judging_differences(provenance(polite), provenance(terse))
    assert len(differences) == 1 and differences[0].startswith("different checks: baseline"), differences
    assert judging_differences(provenance(polite), provenance(polite)) == []
