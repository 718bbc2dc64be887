"""The paired comparison (`fair_forge_core.compare`) against scipy, exact fractions, Holm's
textbook example, an independent re-run of the bootstrap, and `fair_forge_core.stats`."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as sps
from scipy.integrate import quad

from fair_forge_core import stats
from fair_forge_core.compare import (
    EXACT_MCNEMAR_MAX_DISCORDANT,
    MIN_BOOTSTRAP_TASKS,
    Outcome,
    compare,
    holm_adjust,
    mcnemar,
    minimum_detectable_effect,
    outcomes_from_conversations,
    outcomes_from_result,
    per_task_values,
    probability_better,
    tasks_needed,
)
from fair_forge_core.schemas import Comparison, MetricComparison

Z_975, Z_80 = 1.959963984540054, 0.8416212335729143  # standard normal quantiles (tables)


def side(spec: dict[str, tuple[int, int]]) -> list[Outcome]:
    """Outcomes from {task: (n, c)}: c successes then n − c failures."""
    return [(task, i < c) for task, (n, c) in spec.items() for i in range(n)]


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


def test_mcnemar_uses_the_exact_test_up_to_the_threshold() -> None:
    at = mcnemar(5, EXACT_MCNEMAR_MAX_DISCORDANT - 5, 100)
    above = mcnemar(5, EXACT_MCNEMAR_MAX_DISCORDANT - 4, 100)
    assert at.method == "exact" and at.p_value == at.exact_p_value
    assert above.method == "chi2" and above.p_value == above.chi2_p_value
    assert above.exact_p_value != above.chi2_p_value  # both reported, and they do differ


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
    result = compare(base, cand, k=3, seed=1)
    assert metric(result, "pass@k").significant and metric(result, "pass@k").difference < 0  # type: ignore[operator]
    assert metric(result, "pass^k").significant and metric(result, "pass^k").difference > 0  # type: ignore[operator]
    assert result.verdict == "regressed"
    assert "pass^k" in result.verdict_explanation and "higher" in result.verdict_explanation


def test_too_few_tasks_are_not_tested() -> None:
    # Five tasks, all lost: every resample is the observed difference, so the bootstrap
    # p-value is 1/(B + 1), but five tasks cannot say so: no test, inconclusive.
    result = compare(side({f"t{i}": (3, 3) for i in range(5)}), side({f"t{i}": (3, 0) for i in range(5)}))
    pass1 = metric(result, "pass@1")
    assert pass1.difference == -1.0 and pass1.bootstrap_p_value == pytest.approx(1 / 10_001)
    assert pass1.p_value is None and pass1.note is not None and str(MIN_BOOTSTRAP_TASKS) in pass1.note
    assert result.verdict == "inconclusive"


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


def test_nothing_shared_is_inconclusive_with_a_note() -> None:
    result = compare(side({"a": (2, 2)}), side({"b": (2, 0)}))
    assert result.shared_tasks == 0 and result.verdict == "inconclusive"
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
        return ConversationMetrics(
            session_id=session,
            assistant_id="A",
            task_id=task,
            total_interactions=1,
            correct_interactions=int(bool(correct)),
            unscored_interactions=int(correct is None),
            is_scored=correct is not None,
            is_fully_correct=correct,
            threshold=0.7,
            correctness_scores=[None if correct is None else float(correct)],
            correct_indices=[0] if correct else [],
            tool_correctness_scores=[None],
            k=3,
            pass_at_k=None,
            pass_pow_k=None,
            interactions=None,
        )

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
