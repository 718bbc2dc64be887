"""The attempt-level test of a comparison (`fair_forge_core.compare.stratified`, issue #33):
checked against scipy's Fisher and binomial tests and a brute-force enumeration of every
relabelling of the attempts, the issue's golden cases, the tasks that changed, and the
smaller defects of item 9 (equal differences, tasks needed) on the faces that print them."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET
from fractions import Fraction

import pytest
from scipy import stats as sps

from fair_forge_core.cli.compare_text import format_comparison
from fair_forge_core.compare import Outcome, compare
from fair_forge_core.compare.stratified import attempt_floor, stratified_exact_test, task_p_value
from fair_forge_core.evaluate import build_result
from fair_forge_core.exports import junit_comparison, markdown_comparison
from fair_forge_core.schemas import EvaluationConfig, EvaluationResult
from fair_forge_testing.builders import scored_conversation


def side(spec: dict[str, tuple[int, int]]) -> list[Outcome]:
    """Outcomes from {task: (n, c)}: c successes then n − c failures."""
    return [(task, i < c) for task, (n, c) in spec.items() for i in range(n)]


def brute_force_p(tasks: list[tuple[int, int, int, int]]) -> float:
    """The two-sided doubled-tail p of T = Σ candidate successes, by enumerating, per task, every
    placing of its m successes among its N attempts (each equally likely under "no
    difference", given the totals), the candidate's attempts being the last n_c. Exact fractions."""
    per_task = []
    for n_b, c_b, n_c, c_c in tasks:
        counts: dict[int, int] = {}
        for chosen in itertools.combinations(range(n_b + n_c), c_b + c_c):
            x = sum(1 for i in chosen if i >= n_b)
            counts[x] = counts.get(x, 0) + 1
        total = sum(counts.values())
        per_task.append({x: Fraction(n, total) for x, n in counts.items()})
    t = sum(task[3] for task in tasks)
    lower = upper = Fraction(0)
    for combination in itertools.product(*(d.items() for d in per_task)):
        value = sum(x for x, _ in combination)
        probability = math.prod((p for _, p in combination), start=Fraction(1))
        lower += probability if value <= t else 0
        upper += probability if value >= t else 0
    return float(min(Fraction(1), 2 * min(lower, upper)))


# --------------------------------------------------------------------------- the test itself


@pytest.mark.parametrize(
    "task", [(3, 3, 3, 0), (5, 4, 7, 2), (2, 0, 4, 4), (10, 7, 10, 7), (6, 1, 3, 3), (4, 2, 4, 1), (1, 1, 1, 0)]
)
def test_one_task_is_the_doubled_tail_fisher_test(task: tuple[int, int, int, int]) -> None:
    n_b, c_b, n_c, c_c = task
    table = [[c_c, n_c - c_c], [c_b, n_b - c_b]]  # rows: candidate, baseline; columns: success, failure
    less = sps.fisher_exact(table, alternative="less").pvalue
    greater = sps.fisher_exact(table, alternative="greater").pvalue
    assert task_p_value(task) == pytest.approx(min(1.0, 2 * min(less, greater)), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    "tasks",
    [
        [(3, 3, 3, 0), (3, 2, 3, 2), (3, 1, 3, 3)],
        [(2, 1, 3, 0), (4, 4, 2, 1)],
        [(3, 0, 3, 0), (3, 3, 3, 3), (3, 2, 3, 1)],  # two degenerate tasks
        [(1, 1, 1, 0), (1, 0, 1, 1), (1, 1, 1, 0), (2, 1, 2, 2)],
        [(4, 3, 2, 0), (3, 1, 4, 4)],
    ],
)
def test_several_tasks_are_the_brute_force_enumeration(tasks: list[tuple[int, int, int, int]]) -> None:
    assert stratified_exact_test(tasks).p_value == pytest.approx(brute_force_p(tasks), rel=1e-12, abs=1e-15)


def test_one_attempt_a_side_is_mcnemars_exact_test() -> None:
    # b = 4 tasks baseline-only right, c = 11 candidate-only, 10 concordant
    tasks = [(1, 1, 1, 0)] * 4 + [(1, 0, 1, 1)] * 11 + [(1, 1, 1, 1)] * 6 + [(1, 0, 1, 0)] * 4
    result = stratified_exact_test(tasks)
    assert result.p_value == pytest.approx(sps.binomtest(4, 15, 0.5).pvalue, rel=1e-12)
    assert (result.informative_tasks, result.degenerate_tasks) == (15, 10)
    assert result.floor == pytest.approx(2 / 2**25, rel=1e-12)  # every task discordant, all one way


def test_the_floor_is_the_most_extreme_outcome() -> None:
    counts = [(3, 0, 3, 0), (2, 0, 4, 0), (1, 0, 5, 0)]
    floor = 2 / (math.comb(6, 3) * math.comb(6, 4) * math.comb(6, 5))
    assert attempt_floor(counts) == pytest.approx(floor, rel=1e-12)
    every_baseline_attempt_wins = [(n_b, n_b, n_c, 0) for n_b, _, n_c, _ in counts]
    every_candidate_attempt_wins = [(n_b, 0, n_c, n_c) for n_b, _, n_c, _ in counts]
    assert stratified_exact_test(every_baseline_attempt_wins).p_value == pytest.approx(floor, rel=1e-12)
    assert stratified_exact_test(every_candidate_attempt_wins).p_value == pytest.approx(floor, rel=1e-12)
    assert attempt_floor([(3, 0, 3, 0)]) == pytest.approx(0.1)  # 2/C(6, 3)
    assert stratified_exact_test([(3, 3, 3, 3), (2, 0, 2, 0)]).p_value == 1.0  # nothing informative


# --------------------------------------------------------------------------- the golden cases


def test_two_of_three_tasks_broken_is_regressed() -> None:
    base = side({"a": (3, 3), "b": (3, 3), "c": (3, 3)})
    cand = side({"a": (3, 0), "b": (3, 0), "c": (3, 3)})
    result = compare(base, cand, k=3)
    assert result.verdict == "regressed" and result.population == "attempts"
    assert result.attempt_test is not None
    # two informative tasks, each P(X = 0) = 1/C(6, 3) = 1/20: P(T ≤ 0) = 1/400, doubled
    assert result.attempt_test.p_value == pytest.approx(2 / 400, rel=1e-12)
    assert result.attempt_test.p_value == pytest.approx(brute_force_p([(3, 3, 3, 0), (3, 3, 3, 0)]), rel=1e-12)
    # the task-level tests cannot say anything on 3 tasks: what the issue saw
    assert result.task_level_verdict == "not_tested"
    assert compare(base, cand, k=3, population="tasks").verdict == "not_tested"


def test_one_of_three_tasks_broken_is_not_regressed_at_p_one_tenth() -> None:
    base = side({"a": (3, 3), "b": (3, 3), "c": (3, 3)})
    cand = side({"a": (3, 0), "b": (3, 3), "c": (3, 3)})
    result = compare(base, cand, k=3)
    assert result.attempt_test is not None
    assert result.attempt_test.p_value == 0.1  # 2 · 1/C(6, 3), exactly
    assert result.verdict == "inconclusive"
    assert [t.task for t in result.changed_tasks or []] == ["a"]


def test_the_changed_tasks_are_listed_worst_first_with_their_own_exact_p() -> None:
    base = side({"a": (3, 1), "b": (3, 3), "c": (3, 2), "d": (3, 3), "e": (4, 2), "f": (3, 3)})
    cand = side({"a": (3, 3), "b": (3, 0), "c": (3, 2), "d": (3, 1), "e": (4, 0), "f": (3, 0)})
    result = compare(base, cand, k=3)
    changed = result.changed_tasks or []
    # differences −1 (b, f: equal p, by name), −2/3 (d), −1/2 (e), +2/3 (a); c unchanged
    assert [t.task for t in changed] == ["b", "f", "d", "e", "a"]
    for t in changed:
        table = [[t.candidate_successes, t.candidate_attempts - t.candidate_successes]]
        table.append([t.baseline_successes, t.baseline_attempts - t.baseline_successes])
        fisher = min(1.0, 2 * min(sps.fisher_exact(table, "less").pvalue, sps.fisher_exact(table, "greater").pvalue))
        assert t.p_value == pytest.approx(fisher, rel=1e-12)
        assert t.difference == pytest.approx(
            t.candidate_successes / t.candidate_attempts - t.baseline_successes / t.baseline_attempts
        )
        assert t.significant_alone is (t.p_value <= 0.05)
    assert not any(t.significant_alone for t in changed)  # 3 attempts a side: 0.1 at best


def test_a_suite_that_cannot_show_a_difference_is_not_tested() -> None:
    # one task of 3 attempts a side: the floor is 0.1 > 0.05, whatever happened
    result = compare(side({"a": (3, 3)}), side({"a": (3, 0)}), k=3)
    assert result.verdict == "not_tested" and result.attempt_test is not None
    assert result.attempt_test.p_value is None and result.attempt_test.floor == pytest.approx(0.1)
    assert result.attempt_test.note is not None and "smallest p-value is 0.1" in result.attempt_test.note
    # at 85 % the floor 0.1 is within α = 0.15, and the one broken task reaches it
    assert compare(side({"a": (3, 3)}), side({"a": (3, 0)}), k=3, confidence=0.85).verdict == "regressed"


# --------------------------------------------------------------------------- item 9 and item 11


def test_equal_differences_have_no_variation_on_every_face() -> None:
    # c/n differences 2/3 − 1/3 and 1 − 2/3: equal, though not in floating point
    assert 2 / 3 - 1 / 3 != 1 - 2 / 3
    base = side({f"t{i}": (3, 1 if i % 2 else 2) for i in range(6)})
    cand = side({f"t{i}": (3, 2 if i % 2 else 3) for i in range(6)})
    result = compare(base, cand, k=1)
    pass1 = result.metrics[0]
    assert pass1.standard_error == 0.0 and pass1.minimum_detectable_effect is None
    text = format_comparison(result, "a", "b")
    assert "pass@1 n/a (no variation)" in text and "±0.000" not in text


def test_one_task_with_one_discordant_attempt_says_the_true_reason() -> None:
    result = compare([("t", True)], [("t", False)], k=1)
    text = format_comparison(result, "a", "b")
    assert "no difference was observed" not in text
    pass1 = result.metrics[0]
    assert pass1.difference == -1.0 and pass1.tasks_needed is None
    assert pass1.tasks_needed_reason is not None and pass1.tasks_needed_reason.startswith("one shared task")
    assert "at least 6 tasks" in pass1.tasks_needed_reason  # McNemar's 2/2⁶ ≤ 0.05, never contradicted


def test_tasks_needed_says_when_nothing_can_be_tested_at_this_confidence() -> None:
    # 12 tasks, five distinct metrics at 0.9999: the bootstrap's smallest Holm step is
    # 5/10,001 > 0.0001, and below 10 tasks the sign-flip test's 5·2/2⁹ is too: no size works
    base = side({f"t{i}": (3, (i % 3) + 1) for i in range(12)})
    cand = side({f"t{i}": (3, i % 3) for i in range(12)})
    result = compare(base, cand, k=3, confidence=0.9999, population="tasks")
    assert result.verdict == "not_tested"
    differing = [m for m in result.metrics if m.difference]
    assert differing and all(m.tasks_needed is None for m in differing)
    assert {m.tasks_needed_reason for m in differing} == {"cannot be tested at this confidence"}
    text = format_comparison(result, "a", "b")
    assert "cannot be tested at this confidence" in text and "tasks needed 41" not in text


def result_of(spec: dict[str, tuple[int, int]], assistant: str) -> EvaluationResult:
    """A result whose conversations are `side(spec)`'s outcomes, one conversation an attempt."""
    conversations = [
        scored_conversation(f"{assistant}-{n}", correct, task, assistant_id=assistant)
        for n, (task, correct) in enumerate(side(spec))
    ]
    return build_result(conversations, EvaluationConfig(k=3))


def test_the_library_compare_takes_results_and_dicts() -> None:
    # issue #33 item 11: compare(result, result) raised a TypeError
    base = result_of({"a": (3, 3), "b": (3, 3)}, "v1")
    cand_json = result_of({"a": (3, 0), "b": (3, 0)}, "v2").model_dump(mode="json")
    from_results = compare(base, cand_json, k=3)
    from_outcomes = compare(side({"a": (3, 3), "b": (3, 3)}), side({"a": (3, 0), "b": (3, 0)}), k=3)
    assert from_results == from_outcomes and from_results.verdict == "regressed"
    with pytest.raises(TypeError, match="outcomes_from_result"):
        compare({"aggregated_metrics": {}}, cand_json)  # type: ignore[arg-type]


def test_junit_messages_format_floats_to_three_decimals() -> None:
    base = side({f"t{i}": (3, 3) for i in range(12)})
    cand = side({f"t{i}": (3, 0 if i < 8 else 1) for i in range(12)})
    result = compare(base, cand, k=3, population="tasks")
    assert result.verdict == "regressed"
    root = ET.fromstring(junit_comparison(result))
    # the metrics' messages (the verdict's is its explanation, the same sentence on every face)
    messages = [f.attrib["message"] for f in root.iter("failure") if f.attrib["type"] == "metric"]
    assert messages, "a regressed metric fails"
    for message in messages:
        for number in re.findall(r"\d+\.\d+", message):
            assert len(number.split(".")[1]) <= 3, message
    cases = {c.attrib["name"]: c for c in root.iter("testcase")}
    assert cases["attempts"].find("failure") is not None  # the attempt-level test regressed too
    verdict_text = cases["verdict"].find("failure").text or ""  # type: ignore[union-attr]
    assert "tasks that changed (worst first):" in verdict_text and "t0: 3/3 → 0/3" in verdict_text


def test_markdown_lists_the_changed_tasks_and_qualifies_the_plug_in_figures() -> None:
    base = side({"a": (3, 3), "b": (3, 3), "c": (3, 3)})
    cand = side({"a": (3, 0), "b": (3, 0), "c": (3, 3)})
    text = markdown_comparison(compare(base, cand, k=3), "base", "cand")
    assert "### Tasks that changed (2 of 3)" in text
    assert "| a | 3/3 | 0/3 | -1.000 | 0.100 | no |" in text
    assert "pass^3 (per-task plug-in)" in text and "pass@3 (per-task plug-in)" in text
    assert "pass^3 unbiased" not in text


def test_assert_no_regression_can_pass_and_fail_on_a_three_task_suite() -> None:
    # issue #33: "A 3-task suite is always NOT TESTED, so assert_no_regression can never pass on it."
    from fair_forge_core.pytest_plugin import assert_no_regression

    spec = {"a": (3, 3), "b": (3, 2), "c": (3, 3)}
    same = assert_no_regression(result_of(spec, "v1"), result_of(spec, "v2"))
    assert same.verdict == "inconclusive" and same.changed_tasks == []
    with pytest.raises(AssertionError, match="regressed") as failure:
        assert_no_regression(result_of(spec, "v1"), result_of({"a": (3, 0), "b": (3, 2), "c": (3, 0)}, "v2"))
    assert "tasks that changed (2 of 3" in str(failure.value)


# --------------------------------------------------------------------------- an independent review's cases


def test_a_regression_task_by_task_is_explained_by_t_against_its_expectation_not_by_pooled_rates() -> None:
    # Simpson's paradox: the candidate spends its attempts on the easy tasks, so its pooled rate
    # rises (20/120 → 50/120) while every task got worse (easy 2/2 → 5/10, hard 0/10 → 0/2).
    from fair_forge_core.compare.attempts import attempt_test

    base = {**{f"e{i}": (2, 2) for i in range(10)}, **{f"h{i}": (10, 0) for i in range(10)}}
    cand = {**{f"e{i}": (10, 5) for i in range(10)}, **{f"h{i}": (2, 0) for i in range(10)}}
    test = attempt_test(base, cand, sorted(base), 0.95)
    assert test.verdict == "regressed" and test.statistic < test.expected
    assert test.difference is not None and test.difference > 0  # the pooled rates point the other way
    assert f"{test.statistic} successes where {test.expected:.3g} were expected" in test.verdict_explanation
    assert "less often task by task" in test.verdict_explanation


def test_a_p_value_equal_to_alpha_is_significant_at_a_confidence_of_0_9() -> None:
    # One task of 3 attempts a side, 3/3 → 0/3: p = 2/C(6, 3) = 0.1 exactly, and α = 1 − 0.9 = 0.1.
    from fair_forge_core.compare.attempts import attempt_test

    base = {f"t{i}": (3, 3) for i in range(3)}
    cand = {"t0": (3, 0), "t1": (3, 3), "t2": (3, 3)}
    test = attempt_test(base, cand, ["t0", "t1", "t2"], 0.9)
    assert test.p_value == pytest.approx(0.1, abs=1e-15)
    assert test.verdict == "regressed"


def test_differences_that_cancel_exactly_are_no_difference_and_need_no_tasks() -> None:
    # Task a: 1/3 → 2/3 (+1/3), task b: 3/3 → 2/3 (−1/3): the mean is 0 exactly (−2.8e-17 in floats).
    from fair_forge_core.compare import compare

    def outcomes(counts: dict[str, tuple[int, int]]) -> list[tuple[str, bool]]:
        return [(task, i < c) for task, (n, c) in counts.items() for i in range(n)]

    result = compare(outcomes({"a": (3, 1), "b": (3, 3)}), outcomes({"a": (3, 2), "b": (3, 2)}), k=1)
    pass_at_1 = result.metrics[0]
    assert pass_at_1.difference == 0.0
    assert pass_at_1.tasks_needed is None
