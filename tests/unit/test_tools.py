"""Tests of the deterministic tool scoring (docs/tool-rubric.md, `fair_forge_core.tools`).

Every expected number is worked out by hand from the rules; the arithmetic is in
the comments.
"""

from __future__ import annotations

import copy
import itertools
import random
import subprocess
import sys
from collections import Counter
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from fair_forge_core.schemas import (
    AgenticTrace,
    ExpectedToolCall,
    GroundTruthAgentic,
    ToolCall,
    ToolCorrectnessScore,
    ToolWeights,
)
from fair_forge_core.tools import (
    MAX_RESULT_LEAVES,
    find_result_in_answer,
    parameter_agreement,
    score_tool_calls,
    tool_call_f1,
    values_agree,
)

BOUNDED = settings(max_examples=100, derandomize=True, deadline=None)


def used_call(name: str, step: int | None = None, result: Any = None, **parameters: Any) -> ToolCall:
    return ToolCall(tool_name=name, parameters=parameters, result=result, step=step)


def expected_call(name: str, step: int | None = None, **parameters: Any) -> ExpectedToolCall:
    return ExpectedToolCall(tool_name=name, parameters=parameters, step=step)


def score(
    used: list[ToolCall] | None,
    expected: list[ExpectedToolCall],
    *,
    ordered: bool = False,
    uses_tools: bool = True,
    answer: str = "",
    weights: ToolWeights | None = None,
    tool_threshold: float = 0.75,
    dimension_floor: float = 0.5,
) -> ToolCorrectnessScore:
    trace = None if used is None else AgenticTrace(tools_used=used, final_answer_uses_tools=uses_tools)
    return score_tool_calls(
        trace,
        GroundTruthAgentic(expected_tools=expected, tool_sequence_matters=ordered),
        answer=answer,
        weights=weights or ToolWeights(),
        tool_threshold=tool_threshold,
        dimension_floor=dimension_floor,
    )


# --------------------------------------------------------------------------- seed example


def test_seed_readme_calculator_example_scores_one() -> None:
    # The turn of seeds/001 (the Lambda README), given as request JSON.
    agentic = AgenticTrace.model_validate(
        {
            "tools_used": [
                {
                    "tool_name": "calculator",
                    "parameters": {"operation": "add", "a": 5, "b": 3},
                    "result": 8,
                    "step": 1,
                }
            ],
            "final_answer_uses_tools": True,
        }
    )
    ground_truth = GroundTruthAgentic.model_validate(
        {
            "expected_tools": [
                {"tool_name": "calculator", "parameters": {"operation": "add", "a": 5, "b": 3}, "step": 1}
            ],
            "tool_sequence_matters": False,
        }
    )
    result = score_tool_calls(
        agentic,
        ground_truth,
        answer="The result is 8.",
        weights=ToolWeights(),
        tool_threshold=0.75,
        dimension_floor=0.5,
    )
    assert result.tool_selection_correct == 1.0
    assert result.parameter_accuracy == 1.0
    assert result.sequence_correct == 1.0
    assert result.result_utilization == 1.0
    assert result.overall_correctness == pytest.approx(1.0)
    assert result.is_correct is True
    assert (result.precision, result.recall, result.f1) == (1.0, 1.0, 1.0)
    assert result.result_in_answer is True
    assert result.reasoning == "All tools used correctly."


# --------------------------------------------------------------------------- pairing


def test_two_correct_calls_of_one_tool_score_full_parameters() -> None:
    expected = [expected_call("calculator", a=1, b=2), expected_call("calculator", a=3, b=4)]
    used = [used_call("calculator", a=1, b=2), used_call("calculator", a=3, b=4)]
    result = score(used, expected)
    assert result.parameter_accuracy == 1.0
    assert result.tool_selection_correct == 1.0


def test_calls_listed_in_another_order_with_steps_are_in_sequence() -> None:
    expected = [expected_call("calculator", step=1, a=1), expected_call("calculator", step=2, a=3)]
    # Listed backwards, but the steps put a=1 first, as expected.
    used = [used_call("calculator", step=2, a=3), used_call("calculator", step=1, a=1)]
    result = score(used, expected, ordered=True)
    assert result.sequence_correct == 1.0
    assert result.parameter_accuracy == 1.0


def test_repeated_calls_in_swapped_order_are_paired_with_the_right_partner() -> None:
    # Pairing by position would compare paris with rome twice: 0/1 keys each → 0.0.
    expected = [expected_call("search", q="paris"), expected_call("search", q="rome")]
    used = [used_call("search", q="rome"), used_call("search", q="paris")]
    result = score(used, expected)
    assert result.parameter_accuracy == 1.0
    assert result.reasoning == "All tools used correctly."


def test_pairing_maximises_total_agreement_rather_than_pairing_greedily() -> None:
    # Agreement (expected × used), keys = union of both sides:
    #   e0 {q, lang} vs u0 {q}: q agrees → 1/2;  e0 vs u1 {}: 0/2
    #   e1 {q}       vs u0 {q}: 1/1;             e1 vs u1 {}: 0/1
    # Greedy e0→u0, e1→u1 totals 1/2; optimal e0→u1, e1→u0 totals 1. Mean 1/2.
    expected = [expected_call("search", q="x", lang="en"), expected_call("search", q="x")]
    used = [used_call("search", q="x"), used_call("search")]
    result = score(used, expected)
    assert result.parameter_accuracy == pytest.approx(0.5)
    assert "wrong parameters: search (lang, q)" in result.reasoning


def test_identical_repeated_calls_keep_their_order() -> None:
    # Any pairing agrees fully; the tie goes to first-with-first, so the order holds.
    expected = [expected_call("ping", step=1), expected_call("ping", step=2)]
    used = [used_call("ping", step=1), used_call("ping", step=2)]
    assert score(used, expected, ordered=True).sequence_correct == 1.0


def test_equally_good_pairings_are_broken_in_favour_of_the_order() -> None:
    # Agreement: each expected call has 0/2 with u0 {a: 9, b: 9} and 1/2 with
    # u1 {a: 1, b: 7} (a agrees). Both pairings total 1/2, so parameters = 1/4.
    # The tie goes to e0–u0, e1–u1, whose used order [e0, e1] is the expected one.
    expected = [expected_call("f", step=1, a=1, b=1), expected_call("f", step=2, a=1, b=2)]
    used = [used_call("f", step=1, a=9, b=9), used_call("f", step=2, a=1, b=7)]
    result = score(used, expected, ordered=True)
    assert result.parameter_accuracy == pytest.approx(0.25)
    assert result.sequence_correct == 1.0


# --------------------------------------------------------------------------- sequence


def test_extra_leading_call_does_not_zero_the_sequence() -> None:
    expected = [expected_call("search", step=1, q="x"), expected_call("calculator", step=2, a=1)]
    used = [
        used_call("lookup", step=1, id=7),
        used_call("search", step=2, q="x"),
        used_call("calculator", step=3, a=1),
    ]
    result = score(used, expected, ordered=True)
    # Paired used order is [search, calculator] = the expected order: LCS 2 / 2.
    assert result.sequence_correct == 1.0
    # Selection: |{search, calculator}| / |{lookup, search, calculator}| = 2/3.
    assert result.tool_selection_correct == pytest.approx(2 / 3)
    assert result.parameter_accuracy == 1.0
    # Overall: (2/3 + 1 + 1 + 1) / 4 = 11/12.
    assert result.overall_correctness == pytest.approx(11 / 12)
    # F1: 2 matches; precision 2/3, recall 1, F1 = 2·(2/3)/(5/3) = 4/5.
    assert result.precision == pytest.approx(2 / 3)
    assert result.recall == 1.0
    assert result.f1 == pytest.approx(0.8)
    assert result.reasoning == "extra: lookup."


def test_swapped_order_of_two_calls_scores_one_half() -> None:
    expected = [expected_call("search", step=1), expected_call("calculator", step=2)]
    used = [used_call("calculator", step=1), used_call("search", step=2)]
    result = score(used, expected, ordered=True)
    # LCS([search, calculator], [calculator, search]) = 1, over 2 expected calls.
    assert result.sequence_correct == 0.5
    assert result.reasoning.startswith("out of order: ")


def test_swapped_order_without_steps_uses_list_order() -> None:
    expected = [expected_call("search"), expected_call("calculator")]
    used = [used_call("calculator"), used_call("search")]
    assert score(used, expected, ordered=True).sequence_correct == 0.5


def test_order_does_not_count_when_the_sequence_does_not_matter() -> None:
    expected = [expected_call("search", step=1), expected_call("calculator", step=2)]
    used = [used_call("calculator", step=1), used_call("search", step=2)]
    assert score(used, expected, ordered=False).sequence_correct == 1.0


def test_partial_steps_fall_back_to_list_order() -> None:
    # Only one call has a step: that cannot place the other, so list order decides: a, then b.
    expected = [expected_call("a"), expected_call("b", step=1)]
    assert score([used_call("a"), used_call("b")], expected, ordered=True).sequence_correct == 1.0
    assert score([used_call("b"), used_call("a")], expected, ordered=True).sequence_correct == 0.5
    # The review's case: expected [search, book] in order, used [search, book(step 2)] is in order.
    expected = [expected_call("search"), expected_call("book")]
    assert score([used_call("search"), used_call("book", step=2)], expected, ordered=True).sequence_correct == 1.0


def test_no_tool_used_earns_no_utilization_even_if_the_trace_claims_it() -> None:
    result = score([], [expected_call("calculator", a=5, b=3)], uses_tools=True)
    assert result.result_utilization == 0.0
    assert result.overall_correctness == pytest.approx(0.25)


def test_missing_call_lowers_the_sequence() -> None:
    expected = [expected_call("a", step=1), expected_call("b", step=2), expected_call("c", step=3)]
    used = [used_call("a", step=1), used_call("c", step=2)]
    # LCS([a, b, c], [a, c]) = 2, over 3 expected calls.
    assert score(used, expected, ordered=True).sequence_correct == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- nothing used


def test_expected_tools_but_none_used_is_a_failing_score() -> None:
    result = score([], [expected_call("calculator", a=5, b=3)], uses_tools=False)
    assert result.tool_selection_correct == 0.0
    assert result.parameter_accuracy == 0.0
    assert result.sequence_correct == 1.0  # order does not matter here
    assert result.result_utilization == 0.0
    # (0 + 0 + 1 + 0) / 4
    assert result.overall_correctness == pytest.approx(0.25)
    assert result.is_correct is False
    assert (result.precision, result.recall, result.f1) == (0.0, 0.0, 0.0)
    assert result.result_in_answer is None
    assert "missing: calculator" in result.reasoning
    assert "no tool was used" in result.reasoning


def test_no_agentic_trace_at_all_is_a_failing_score() -> None:
    result = score(None, [expected_call("calculator", a=5, b=3)], ordered=True)
    assert isinstance(result, ToolCorrectnessScore)
    assert result.tool_selection_correct == 0.0
    assert result.parameter_accuracy == 0.0
    assert result.sequence_correct == 0.0  # LCS 0 of 1 expected call
    assert result.result_utilization == 0.0
    assert result.overall_correctness == 0.0
    assert result.is_correct is False
    assert result.result_in_answer is None
    assert result.reasoning == (
        "missing: calculator; no tool was used, so no tool result could be used; "
        "below tool_dimension_floor 0.5: selection 0.00, parameters 0.00, sequence 0.00, utilization 0.00."
    )


def test_nothing_expected_and_nothing_used() -> None:
    result = score([], [])
    assert result.tool_selection_correct == 1.0
    assert result.parameter_accuracy == 1.0
    assert result.sequence_correct == 1.0
    assert (result.precision, result.recall, result.f1) == (1.0, 1.0, 1.0)
    assert result.reasoning == "All tools used correctly."


def test_nothing_expected_but_a_call_used() -> None:
    result = score([used_call("search", q="x")], [], ordered=True)
    assert result.tool_selection_correct == 0.0  # 0 / |{search}|
    assert result.parameter_accuracy == 0.0  # documented: used calls nobody asked for
    assert result.sequence_correct == 1.0  # nothing expected
    assert (result.precision, result.recall, result.f1) == (0.0, 0.0, 0.0)
    assert result.reasoning == "extra: search; below tool_dimension_floor 0.5: selection 0.00, parameters 0.00."


# --------------------------------------------------------------------------- overall


@pytest.mark.parametrize(
    "weights",
    [
        (0.7, 0.1, 0.1, 0.1),
        (0.1, 0.1, 0.1, 0.3),  # normalised, these sum to 0.9999999999999999 in floats
        (0.1, 0.1, 0.3, 0.2),  # and these to 1.0000000000000002
    ],
)
def test_perfect_call_passes_threshold_one_with_uneven_weights(
    weights: tuple[float, float, float, float],
) -> None:
    selection, parameters, sequence, utilization = weights
    result = score(
        [used_call("calculator", a=5, b=3)],
        [expected_call("calculator", a=5, b=3)],
        ordered=True,
        weights=ToolWeights(selection=selection, parameters=parameters, sequence=sequence, utilization=utilization),
        tool_threshold=1.0,
    )
    assert result.overall_correctness == pytest.approx(1.0)
    assert result.overall_correctness <= 1.0
    assert result.is_correct is True


def test_weights_are_normalised() -> None:
    # Selection 1/2 ({a} ∩ {a, b} over union), everything else 1; weights 2:0:0:2
    # normalise to 1/2 each → 1/2 · 1/2 + 1/2 · 1 = 3/4.
    weights = ToolWeights(selection=2, parameters=0, sequence=0, utilization=2)
    result = score([used_call("a"), used_call("b")], [expected_call("a")], weights=weights)
    assert result.overall_correctness == pytest.approx(0.75)
    assert result.is_correct is True  # 0.75 ≥ 0.75


def test_just_below_threshold_fails() -> None:
    # Parameters 1/2 (b wrong) → overall (1 + 1/2 + 1 + 1) / 4 = 7/8.
    used = [used_call("calculator", a=5, b=4)]
    expected = [expected_call("calculator", a=5, b=3)]
    assert score(used, expected, tool_threshold=0.875).is_correct is True
    assert score(used, expected, tool_threshold=0.9).is_correct is False


# --------------------------------------------------------------------------- parameters


def test_wrong_parameter_is_named() -> None:
    result = score([used_call("calculator", a=5, b=4)], [expected_call("calculator", a=5, b=3)])
    assert result.parameter_accuracy == 0.5  # a agrees, b does not
    assert result.reasoning == "wrong parameters: calculator (b)."


def test_extra_and_missing_keys_count_against_the_call() -> None:
    # Union {a, b, c}: a and b agree, c exists only on the used side → 2/3.
    assert parameter_agreement({"a": 5, "b": 3}, {"a": 5, "b": 3, "c": 1}) == (2 / 3, ["c"])
    # Union {a, b}: b is missing on the used side → 1/2.
    assert parameter_agreement({"a": 5, "b": 3}, {"a": 5}) == (0.5, ["b"])


def test_no_parameters_on_either_side_agree() -> None:
    assert parameter_agreement({}, {}) == (1.0, [])
    assert score([used_call("now")], [expected_call("now")]).parameter_accuracy == 1.0


def test_unpaired_expected_call_scores_zero() -> None:
    expected = [expected_call("a", x=1), expected_call("b", y=2)]
    # a fully right, b never called → (1 + 0) / 2.
    assert score([used_call("a", x=1)], expected).parameter_accuracy == 0.5


def test_string_five_and_number_five_disagree() -> None:
    assert values_agree("5", 5) is False
    assert values_agree(5, "5") is False
    assert score([used_call("f", n="5")], [expected_call("f", n=5)]).parameter_accuracy == 0.0


def test_float_and_int_of_equal_value_agree() -> None:
    assert values_agree(5, 5.0) is True
    assert values_agree(5.0, 5) is True
    assert values_agree(5, 5.5) is False
    assert score([used_call("f", n=5.0)], [expected_call("f", n=5)]).parameter_accuracy == 1.0


def test_bools_are_not_numbers() -> None:
    assert values_agree(True, 1) is False
    assert values_agree(1, True) is False
    assert values_agree(False, 0) is False
    assert values_agree(True, True) is True
    assert score([used_call("f", flag=1)], [expected_call("f", flag=True)]).parameter_accuracy == 0.0


def test_none_agrees_only_with_none() -> None:
    assert values_agree(None, None) is True
    assert values_agree(None, 0) is False
    assert values_agree("", None) is False


def test_nested_dicts_in_another_key_order_agree() -> None:
    expected = {"filter": {"city": "Paris", "range": {"from": 1, "to": 2}}, "limit": 10}
    used = {"limit": 10.0, "filter": {"range": {"to": 2, "from": 1}, "city": "Paris"}}
    assert values_agree(expected, used) is True
    assert score([used_call("find", **used)], [expected_call("find", **expected)]).parameter_accuracy == 1.0


def test_nested_dicts_with_different_keys_or_values_disagree() -> None:
    assert values_agree({"a": {"b": 1}}, {"a": {"b": 2}}) is False
    assert values_agree({"a": {"b": 1}}, {"a": {"b": 1, "c": 1}}) is False
    assert values_agree({"a": 1}, [("a", 1)]) is False


def test_lists_are_ordered_and_compared_recursively() -> None:
    assert values_agree([1, {"x": 2}], [1.0, {"x": 2.0}]) is True
    assert values_agree([1, 2], [2, 1]) is False
    assert values_agree([1, 2], [1, 2, 3]) is False
    assert values_agree([True], [1]) is False


# --------------------------------------------------------------------------- rules


def test_any_of_rule() -> None:
    rule = {"$any_of": ["NYC", "New York", 5]}
    assert values_agree(rule, "NYC") is True
    assert values_agree(rule, "New York") is True
    assert values_agree(rule, 5.0) is True
    assert values_agree(rule, "Boston") is False
    assert values_agree(rule, "nyc") is False  # each option compares exactly


def test_approx_rule_with_absolute_tolerance() -> None:
    rule = {"$approx": 3.14, "tol": 0.01}
    assert values_agree(rule, 3.1415) is True
    assert values_agree(rule, 3.15) is True  # the bound is inclusive
    assert values_agree(rule, 3.13) is True
    assert values_agree(rule, 3.2) is False
    assert values_agree(rule, "3.14") is False
    assert values_agree({"$approx": 1, "tol": 0.5}, True) is False  # bools are not numbers


def test_approx_rule_with_relative_tolerance() -> None:
    rule = {"$approx": 100, "rel": 0.05}
    assert values_agree(rule, 104) is True
    assert values_agree(rule, 106) is False


def test_approx_rule_without_tolerance_is_numeric_equality() -> None:
    assert values_agree({"$approx": 2}, 2.0) is True
    assert values_agree({"$approx": 2}, 2.001) is False


def test_text_rule() -> None:
    rule = {"$text": "New York"}
    assert values_agree(rule, "  new   YORK\n") is True
    assert values_agree(rule, "NewYork") is False
    assert values_agree(rule, "New York City") is False
    assert values_agree(rule, 5) is False


def test_any_rule_needs_the_key_to_be_present() -> None:
    expected = {"request_id": {"$any": True}, "q": "x"}
    assert parameter_agreement(expected, {"request_id": "r-81", "q": "x"}) == (1.0, [])
    assert parameter_agreement(expected, {"request_id": None, "q": "x"}) == (1.0, [])
    # Union {request_id, q}: request_id is missing → 1/2.
    assert parameter_agreement(expected, {"q": "x"}) == (0.5, ["request_id"])


def test_rules_apply_inside_nested_values() -> None:
    expected = {"where": {"city": {"$text": "paris"}}, "ids": [1, {"$any": True}]}
    assert values_agree(expected, {"where": {"city": "PARIS "}, "ids": [1, 99]}) is True
    assert values_agree(expected, {"where": {"city": "Lyon"}, "ids": [1, 99]}) is False
    assert values_agree({"$any_of": [{"$approx": 1, "tol": 0.1}, "one"]}, 1.05) is True


def test_dicts_that_are_not_exactly_a_rule_are_plain_values() -> None:
    not_rules = [{"$text": 5}, {"$any": True, "x": 1}, {"$any": False}, {"$approx": "3"}, {"$any_of": "ab"}]
    for value in not_rules:
        assert values_agree(value, copy.deepcopy(value)) is True
    assert values_agree({"$any": True, "x": 1}, 7) is False
    assert values_agree({"$text": 5}, "5") is False


def test_rules_score_through_the_entry_point() -> None:
    expected = [expected_call("weather", city={"$text": "New York"}, days={"$approx": 3, "tol": 0.5})]
    good = score([used_call("weather", city="new york", days=3.2)], expected)
    bad = score([used_call("weather", city="Boston", days=3.2)], expected)
    assert good.parameter_accuracy == 1.0
    assert good.f1 == 1.0
    assert bad.parameter_accuracy == 0.5  # days agrees, city does not
    assert bad.f1 == 0.0


# --------------------------------------------------------------------------- selection


def test_selection_is_multiset_jaccard() -> None:
    expected = [expected_call("a"), expected_call("a"), expected_call("b")]
    used = [used_call("a"), used_call("b"), used_call("c")]
    result = score(used, expected)
    # E ∩ U = {a, b} (2), E ∪ U = {a, a, b, c} (4).
    assert result.tool_selection_correct == 0.5
    # One expected a is unpaired → (1 + 0 + 1) / 3.
    assert result.parameter_accuracy == pytest.approx(2 / 3)
    assert result.reasoning == "missing: a; extra: c."


def test_selection_counts_duplicates_of_the_used_side() -> None:
    # E ∩ U = {a} (1), E ∪ U = {a, a, a} (3).
    result = score([used_call("a"), used_call("a"), used_call("a")], [expected_call("a")])
    assert result.tool_selection_correct == pytest.approx(1 / 3)
    assert result.reasoning == "extra: a ×2; below tool_dimension_floor 0.5: selection 0.33."


# --------------------------------------------------------------------------- F1


def test_f1_with_a_wrong_and_an_extra_call() -> None:
    expected = [expected_call("calc", a=1), expected_call("calc", a=2)]
    used = [used_call("calc", a=1), used_call("calc", a=3), used_call("search", q="x")]
    # One match: precision 1/3, recall 1/2, F1 = 2·(1/6)/(5/6) = 2/5.
    assert tool_call_f1(expected, used) == pytest.approx((1 / 3, 1 / 2, 2 / 5))


def test_f1_counts_multisets_not_sets() -> None:
    # Ragas' sets would make this 1.0; a repeated expected call counts twice here.
    # precision 1/1, recall 1/2, F1 = 2·(1/2)/(3/2) = 2/3.
    assert tool_call_f1([expected_call("ping"), expected_call("ping")], [used_call("ping")]) == pytest.approx(
        (1.0, 0.5, 2 / 3)
    )


def test_f1_ignores_order_and_key_order() -> None:
    expected = [expected_call("a", opts={"x": 1, "y": 2}), expected_call("b", n=5)]
    used = [used_call("b", n=5.0), used_call("a", opts={"y": 2, "x": 1})]
    assert tool_call_f1(expected, used) == (1.0, 1.0, 1.0)


def test_f1_matches_rules_one_to_one_optimally() -> None:
    # Greedy in list order would give the any_of call the used x=1 and leave the
    # plain x=1 unmatched (1 match); the optimal matching finds 2.
    expected = [expected_call("f", x={"$any_of": [1, 2]}), expected_call("f", x=1)]
    used = [used_call("f", x=1), used_call("f", x=2)]
    assert tool_call_f1(expected, used) == (1.0, 1.0, 1.0)
    assert score(used, expected).parameter_accuracy == 1.0


def test_f1_edge_cases() -> None:
    assert tool_call_f1([], []) == (1.0, 1.0, 1.0)
    assert tool_call_f1([expected_call("a")], []) == (0.0, 0.0, 0.0)
    assert tool_call_f1([], [used_call("a")]) == (0.0, 0.0, 0.0)
    assert tool_call_f1([expected_call("a", x=1)], [used_call("a", x=2)]) == (0.0, 0.0, 0.0)


# --------------------------------------------------------------------------- result in answer


@pytest.mark.parametrize(
    ("result", "answer", "found"),
    [
        (8, "The result is 8.", True),
        (8.0, "8", True),
        (8, "The result is 8.0", True),
        (8, "The result is 18.", False),
        (8, "The result is 8.5", False),
        (1000, "It costs 1,000 dollars.", True),
        (-3, "The answer is -3.", True),
        (0.1 + 0.2, "That is 0.3.", True),
        ("Paris", "The capital is paris.", True),
        ("New  York", "It is new york today.", True),
        ("Rome", "The capital is Paris.", False),
        ("", "Anything at all.", None),  # nothing that could be evidence
        ("ok", "I booked your flight.", False),  # whole words only
        ("C", "Sorry, I cannot help.", None),  # one character is no evidence
        # Structured results appear through their leaf values (docs/tool-rubric.md).
        ({"temp": 20}, "It is 20 degrees.", True),
        ({"temp_c": 18, "condition": "cloudy"}, "It's 18°C and cloudy", True),
        ({"refund_id": "R-77"}, "I opened refund R-77 for you.", True),
        ({"refund_id": "R-77"}, "I opened a refund for you.", False),
        ({"items": [{"sku": "A1", "qty": 3}]}, "Ordered 3 of them.", True),
        ({"items": [{"sku": "A1", "qty": 3}]}, "Ordered some.", False),
        ([1, 2], "The list is [1, 2].", True),
        # Bools and None are no evidence: "true" or "null" turn up in unrelated answers.
        (True, "That is true.", None),
        ({"ok": True, "note": None}, "ok: true, note: null", None),
    ],
)
def test_result_in_answer(result: Any, answer: str, found: bool | None) -> None:
    assert find_result_in_answer([used_call("tool", result=result)], answer) is found


def test_result_in_answer_is_none_without_results() -> None:
    assert find_result_in_answer([], "8") is None
    assert find_result_in_answer([used_call("tool"), used_call("tool", result=None)], "8") is None
    assert score([used_call("a")], [expected_call("a")], answer="8").result_in_answer is None


def test_result_in_answer_when_any_result_appears() -> None:
    calls = [used_call("a", result="nowhere"), used_call("b", result=42)]
    assert find_result_in_answer(calls, "It is 42.") is True


def test_result_not_in_answer_is_noted_but_not_scored() -> None:
    result = score([used_call("a", result=8)], [expected_call("a")], answer="It is eight.")
    assert result.result_in_answer is False
    assert result.overall_correctness == pytest.approx(1.0)
    assert result.reasoning == "All tools used correctly. Note: no tool result appears in the answer."


# --------------------------------------------------------------------------- reasoning


def test_reasoning_names_missing_and_extra_tools_sorted() -> None:
    expected = [expected_call("search"), expected_call("lookup")]
    first = score([used_call("weather"), used_call("calculator")], expected)
    second = score([used_call("calculator"), used_call("weather")], list(reversed(expected)))
    assert first.reasoning == (
        "missing: lookup, search; extra: calculator, weather; "
        "below tool_dimension_floor 0.5: selection 0.00, parameters 0.00."
    )
    assert second.reasoning == first.reasoning


def test_reasoning_lists_every_kind_of_problem() -> None:
    expected = [
        expected_call("search", step=1, q="x"),
        expected_call("calculator", step=2, a=1, b=2),
        expected_call("lookup", step=3),
    ]
    used = [
        used_call("calculator", step=1, a=1, b=3),
        used_call("search", step=2, q="x"),
        used_call("weather", step=3),
    ]
    result = score(used, expected, ordered=True, uses_tools=False)
    text = result.reasoning
    assert text.startswith("missing: lookup; extra: weather; wrong parameters: calculator (b); out of order: ")
    assert text.endswith(
        "; final answer does not use tool results; below tool_dimension_floor 0.5: sequence 0.33, utilization 0.00."
    )


def test_reasoning_says_when_utilization_is_not_measured() -> None:
    trace = AgenticTrace(tools_used=[used_call("a")])  # final_answer_uses_tools left out, no result
    result = score_tool_calls(
        trace,
        GroundTruthAgentic(expected_tools=[expected_call("a")]),
        answer="",
        weights=ToolWeights(),
        tool_threshold=0.75,
        dimension_floor=0.5,
    )
    assert result.result_utilization is None  # no evidence either way: not measured, not 0
    assert result.is_correct is True
    assert result.reasoning == (
        "utilization not measured: final_answer_uses_tools not reported, and no tool returned a result "
        "to look for in the answer (left out of overall, the weights renormalised over the other dimensions)."
    )


def test_import_does_not_import_scipy() -> None:
    code = "import sys, fair_forge_core.tools; sys.exit('scipy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# --------------------------------------------------------------------------- properties

NAMES = st.sampled_from(["a", "b", "c"])
STEPS = st.none() | st.integers(min_value=1, max_value=4)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=3)
    | st.floats(min_value=-3, max_value=3, allow_nan=False)
    | st.text(alphabet="xyXY ", max_size=3)
)
PLAIN_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(alphabet="uv", min_size=1, max_size=2), inner, max_size=2)
    ),
    max_leaves=4,
)
RULES = (
    st.builds(lambda options: {"$any_of": options}, st.lists(PLAIN_VALUES, max_size=2))
    | st.builds(
        lambda x, tol: {"$approx": x, "tol": tol},
        st.integers(min_value=-3, max_value=3),
        st.floats(min_value=0, max_value=2),
    )
    | st.builds(lambda text: {"$text": text}, st.text(alphabet="xyXY ", max_size=3))
    | st.just({"$any": True})
)
KEYS = st.sampled_from(["p", "q", "r"])


def calls_of(
    values: st.SearchStrategy[Any], cls: type[ExpectedToolCall] | type[ToolCall]
) -> st.SearchStrategy[list[Any]]:
    call = st.builds(cls, tool_name=NAMES, parameters=st.dictionaries(KEYS, values, max_size=3), step=STEPS)
    return st.lists(call, max_size=4)


def used_calls_with_results() -> st.SearchStrategy[list[ToolCall]]:
    call = st.builds(
        ToolCall,
        tool_name=NAMES,
        parameters=st.dictionaries(KEYS, PLAIN_VALUES, max_size=3),
        step=STEPS,
        result=SCALARS,
    )
    return st.lists(call, max_size=4)


WEIGHTS = st.builds(
    ToolWeights,
    selection=st.integers(0, 3),
    parameters=st.integers(0, 3),
    sequence=st.integers(0, 3),
    utilization=st.integers(1, 3),
)


@BOUNDED
@given(
    expected=calls_of(PLAIN_VALUES | RULES, ExpectedToolCall),
    used=used_calls_with_results(),
    ordered=st.booleans(),
    uses_tools=st.booleans(),
    weights=WEIGHTS,
    answer=st.text(alphabet="0123456789 .,-xy", max_size=12),
)
def test_every_score_lies_in_the_unit_interval(
    expected: list[ExpectedToolCall],
    used: list[ToolCall],
    ordered: bool,
    uses_tools: bool,
    weights: ToolWeights,
    answer: str,
) -> None:
    result = score(used, expected, ordered=ordered, uses_tools=uses_tools, answer=answer, weights=weights)
    for value in (
        result.tool_selection_correct,
        result.parameter_accuracy,
        result.sequence_correct,
        result.result_utilization,
        result.overall_correctness,
        result.precision,
        result.recall,
        result.f1,
    ):
        assert 0.0 <= value <= 1.0


@BOUNDED
@given(expected=calls_of(PLAIN_VALUES, ExpectedToolCall), ordered=st.booleans())
def test_expected_calls_scored_against_themselves_are_perfect(expected: list[ExpectedToolCall], ordered: bool) -> None:
    used = [
        ToolCall(tool_name=call.tool_name, parameters=copy.deepcopy(call.parameters), step=call.step)
        for call in expected
    ]
    result = score(used, expected, ordered=ordered, uses_tools=True, tool_threshold=1.0)
    assert result.tool_selection_correct == 1.0
    assert result.parameter_accuracy == 1.0
    assert result.sequence_correct == 1.0
    assert result.result_utilization == 1.0
    assert result.overall_correctness == 1.0
    assert result.is_correct is True
    assert (result.precision, result.recall, result.f1) == (1.0, 1.0, 1.0)
    assert result.reasoning == "All tools used correctly."


@BOUNDED
@given(
    expected=calls_of(PLAIN_VALUES | RULES, ExpectedToolCall),
    used=used_calls_with_results(),
    data=st.data(),
)
def test_permuting_used_calls_does_not_change_an_unordered_score(
    expected: list[ExpectedToolCall], used: list[ToolCall], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(used))
    before = score(used, expected, answer="1 2 x")
    after = score(shuffled, expected, answer="1 2 x")
    assert after.tool_selection_correct == before.tool_selection_correct
    assert after.parameter_accuracy == pytest.approx(before.parameter_accuracy)
    assert after.sequence_correct == before.sequence_correct
    assert after.overall_correctness == pytest.approx(before.overall_correctness)
    assert (after.precision, after.recall, after.f1) == (before.precision, before.recall, before.f1)
    assert after.result_in_answer == before.result_in_answer


def _hashable(value: Any) -> Any:
    """Seed 004's canonical form (dicts → frozensets, lists → tuples), keeping bools apart."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)  # 5 and 5.0 are equal and hash alike
    if isinstance(value, dict):
        return ("dict", frozenset((key, _hashable(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("list", tuple(_hashable(item) for item in value))
    return ("other", value)


@BOUNDED
@given(expected=calls_of(PLAIN_VALUES, ExpectedToolCall), used=calls_of(PLAIN_VALUES, ToolCall))
def test_f1_on_plain_values_is_multiset_intersection_of_canonical_calls(
    expected: list[ExpectedToolCall], used: list[ToolCall]
) -> None:
    def bag(calls: list[Any]) -> Counter[Any]:
        return Counter((call.tool_name, _hashable(call.parameters)) for call in calls)

    matches = sum((bag(expected) & bag(used)).values())
    precision, recall, _ = tool_call_f1(expected, used)
    if used:
        assert precision == pytest.approx(matches / len(used))
    if expected:
        assert recall == pytest.approx(matches / len(expected))


def test_no_tools_expected_and_none_used_is_perfect() -> None:
    # The ground truth says "answer without tools"; the agent did: every dimension 1.0.
    for used in (None, AgenticTrace(tools_used=[], final_answer_uses_tools=False)):
        score = score_tool_calls(
            used,
            GroundTruthAgentic(expected_tools=[]),
            answer="Paris",
            weights=ToolWeights(),
            tool_threshold=1.0,
            dimension_floor=0.5,
        )
        assert score.overall_correctness == 1.0 and score.is_correct


def test_integers_beyond_the_float_range_do_not_crash() -> None:
    huge = 10**400
    rule = {"$approx": huge, "tol": 1}
    with pytest.raises(ValidationError, match="approx needs a finite number, not a number beyond the float range"):
        expected_call("calc", y=rule)  # a request refuses it (`rule_shapes`); the rubric alone does not crash
    unchecked = ExpectedToolCall.model_construct(tool_name="calc", parameters={"x": huge, "y": rule}, step=None)
    result = score([used_call("calc", x=huge, y=huge + 1, result=huge)], [unchecked])
    assert result.parameter_accuracy == 0.5  # x agrees exactly; y's rule cannot apply to a non-float target
    assert result.result_in_answer is None  # beyond the float range: no number token to compare with


def test_the_memo_tells_negative_zero_from_zero() -> None:
    from fair_forge_core.tools import ToolScorer

    expected = GroundTruthAgentic(expected_tools=[expected_call("calc")])
    scorer = ToolScorer(ToolWeights(), 0.75, 0.5)
    for value in (0.0, -0.0):
        trace = AgenticTrace(tools_used=[used_call("calc", result=value)], final_answer_uses_tools=True)
        direct = score_tool_calls(
            trace, expected, answer="It is -0.0", weights=ToolWeights(), tool_threshold=0.75, dimension_floor=0.5
        )
        assert scorer.score(trace, expected, answer="It is -0.0") == direct


# --------------------------------------------------------------------------- audit: verdicts that were wrong


def reported(used: list[ToolCall], uses_tools: bool | None) -> AgenticTrace:
    """A trace that reports `final_answer_uses_tools`, or leaves it out when None."""
    if uses_tools is None:
        return AgenticTrace(tools_used=used)
    return AgenticTrace(tools_used=used, final_answer_uses_tools=uses_tools)


def test_right_tool_with_every_argument_wrong_fails_by_default() -> None:
    # selection 1, parameters 0/3, sequence 1, utilization 1 → overall 3/4 = tool_threshold, but
    # parameters 0 is below the default floor 0.5.
    result = score(
        [used_call("calculator", operation="subtract", a=100, b=-7)],
        [expected_call("calculator", operation="add", a=5, b=3)],
    )
    assert result.parameter_accuracy == 0.0
    assert result.overall_correctness == 0.75
    assert result.is_correct is False
    assert result.reasoning.endswith("below tool_dimension_floor 0.5: parameters 0.00.")
    # A floor of 0 is the sources' rule: overall alone decides.
    assert score(
        [used_call("calculator", operation="subtract", a=100, b=-7)],
        [expected_call("calculator", operation="add", a=5, b=3)],
        dimension_floor=0.0,
    ).is_correct


def test_the_source_readme_minor_parameter_deviation_still_passes() -> None:
    # parameters 1/2 (b differs), the rest 1 → overall (1 + 0.5 + 1 + 1)/4 = 0.875; 0.5 is not below 0.5.
    result = score([used_call("calculator", a=5, b=4)], [expected_call("calculator", a=5, b=3)])
    assert (result.parameter_accuracy, result.overall_correctness, result.is_correct) == (0.5, 0.875, True)


def test_one_of_two_expected_calls_passes_with_the_defaults_and_fails_a_stricter_floor() -> None:
    # selection |{a}|/|{a, b}| = 1/2, parameters (1 + 0)/2 = 1/2, sequence 1, utilization 1 → 0.75.
    used, expected = [used_call("a", x=1)], [expected_call("a", x=1), expected_call("b")]
    default = score(used, expected)
    assert (default.tool_selection_correct, default.parameter_accuracy, default.overall_correctness) == (
        0.5,
        0.5,
        0.75,
    )
    assert default.is_correct
    assert not score(used, expected, dimension_floor=0.75).is_correct


def test_the_floor_ignores_a_dimension_of_zero_weight() -> None:
    weights = ToolWeights(selection=1, parameters=1, sequence=1, utilization=0)
    result = score([used_call("a", x=1)], [expected_call("a", x=1)], uses_tools=False, weights=weights)
    assert result.result_utilization == 0.0 and result.overall_correctness == 1.0
    assert result.is_correct


@pytest.mark.parametrize(
    ("uses_tools", "result", "answer", "utilization"),
    [
        (None, {"temp_c": 18, "condition": "cloudy"}, "It's 18°C and cloudy", 1.0),  # read from the answer
        (None, {"refund_id": "R-77"}, "I opened refund R-77.", 1.0),
        (None, {"refund_id": "R-77"}, "I opened a refund.", 0.0),
        (None, None, "Done.", None),  # nothing reported, no result to look for: not measured
        (True, None, "Done.", 1.0),  # the report decides where there is one
        (False, {"refund_id": "R-77"}, "I opened refund R-77.", 0.0),
    ],
)
def test_utilization_comes_from_result_in_answer_where_not_reported(
    uses_tools: bool | None, result: Any, answer: str, utilization: float | None
) -> None:
    trace = reported([used_call("tool", result=result)], uses_tools)
    scored = score_tool_calls(
        trace,
        GroundTruthAgentic(expected_tools=[expected_call("tool")]),
        answer=answer,
        weights=ToolWeights(),
        tool_threshold=0.75,
        dimension_floor=0.5,
    )
    assert scored.result_utilization == utilization
    assert scored.is_correct is (utilization != 0.0)  # an unmeasured dimension fails nothing


def test_a_turn_that_omits_the_report_and_shows_no_result_fails() -> None:
    # utilization 0 → overall 0.75 passed before; the floor fails it, and the reasoning says why.
    trace = reported([used_call("calculator", result=8, a=5, b=3)], None)
    scored = score_tool_calls(
        trace,
        GroundTruthAgentic(expected_tools=[expected_call("calculator", a=5, b=3)]),
        answer="I could not compute it.",
        weights=ToolWeights(),
        tool_threshold=0.75,
        dimension_floor=0.5,
    )
    assert (scored.result_utilization, scored.overall_correctness, scored.is_correct) == (0.0, 0.75, False)
    assert "final_answer_uses_tools not reported, and no tool result appears in the answer" in scored.reasoning
    assert "Note:" not in scored.reasoning  # the note is for a report the answer contradicts


def test_pairing_among_equals_keeps_calls_in_order() -> None:
    # The issue's example: expected [a, b, c], used [c, b, a, b, c]. Pairing b and c with their later
    # calls keeps a, b, c in order: LCS 3 of 3. The earlier ones would give [c, b, a]: 1/3.
    result = score(
        [used_call("c"), used_call("b"), used_call("a"), used_call("b"), used_call("c")],
        [expected_call("a"), expected_call("b"), expected_call("c")],
        ordered=True,
    )
    assert result.sequence_correct == 1.0


def test_pairing_is_exact_where_an_epsilon_bonus_was_not() -> None:
    # Two expected calls of `t`: E1 has keys k0..k(N-1), E2 has only `x`. U1 agrees with E1 on N-1 of
    # N keys, U2 on all N of its N+1 keys; neither has `x`. Pairing E1-U2 totals N/(N+1), E1-U1 totals
    # (N-1)/N: a real advantage of 1/(N(N+1)) ≈ 6e-10, below the old 1e-9 bonus for "k-th with k-th".
    n = 40_000
    e1 = {f"k{i}": 0 for i in range(n)}
    u1 = {**e1, f"k{n - 1}": 1}
    u2 = {**e1, "extra": 0}
    result = score(
        [ToolCall(tool_name="t", parameters=u1), ToolCall(tool_name="t", parameters=u2)],
        [ExpectedToolCall(tool_name="t", parameters=e1), ExpectedToolCall(tool_name="t", parameters={"x": 1})],
    )
    assert result.parameter_accuracy == (n / (n + 1) + 0.0) / 2


@pytest.mark.parametrize(
    ("target", "rule", "used", "agrees"),
    [
        (1_000_000, {"tol": 0.01}, 1_000_000.01, True),  # on the bound, written in decimal
        (1_000_000, {"tol": 0.01}, 1_000_000.02, False),
        (1e15, {"tol": 0.01}, 1e15 + 100, False),  # a real difference, not rounding
        (0, {"tol": 0}, 1e-13, False),
        (0, {"tol": 0}, 0.0, True),
        (0.3, {"tol": 0.1}, 0.4, True),  # 0.4 - 0.3 is 0.10000000000000003 in floats
        (100, {"rel": 0.01}, 101, True),  # rel × max(|u|, |x|) = 1.01
        (100, {"rel": 0.01}, 101.1, False),
    ],
)
def test_approx_bounds_scale_with_the_magnitudes(
    target: float, rule: dict[str, float], used: float, agrees: bool
) -> None:
    assert values_agree({"$approx": target, **rule}, used) is agrees


# --------------------------------------------------------------------------- pairing against brute force


def _lcs_length(first: list[int], second: list[int]) -> int:
    lengths = [[0] * (len(second) + 1) for _ in range(len(first) + 1)]
    for i, a in enumerate(first):
        for j, b in enumerate(second):
            lengths[i + 1][j + 1] = lengths[i][j] + 1 if a == b else max(lengths[i][j + 1], lengths[i + 1][j])
    return lengths[-1][-1]


def _share(expected: dict[str, Any], used: dict[str, Any]) -> Fraction:
    keys = set(expected) | set(used)
    if not keys:
        return Fraction(1)
    return Fraction(sum(1 for k in keys if k in expected and k in used and expected[k] == used[k]), len(keys))


def _brute_force_best(expected: list[ExpectedToolCall], used: list[ToolCall]) -> tuple[Fraction, int]:
    """(max total agreement, then max LCS) over every pairing of min(#E, #U) calls per name."""
    per_name = []
    for name in sorted({call.tool_name for call in expected}):
        e = [i for i, call in enumerate(expected) if call.tool_name == name]
        u = [j for j, call in enumerate(used) if call.tool_name == name]
        if len(e) <= len(u):
            options = [list(zip(e, chosen, strict=True)) for chosen in itertools.permutations(u, len(e))]
        else:
            options = [list(zip(chosen, u, strict=True)) for chosen in itertools.permutations(e, len(u))]
        per_name.append(options)
    best = (Fraction(-1), -1)
    for combination in itertools.product(*per_name):
        pairs = [pair for option in combination for pair in option]
        total = sum((_share(expected[i].parameters, used[j].parameters) for i, j in pairs), Fraction(0))
        partner = dict((j, i) for i, j in pairs)
        order = [partner[j] for j in range(len(used)) if j in partner]
        best = max(best, (total, _lcs_length(list(range(len(expected))), order)))
    return best


_NAMES = st.sampled_from("abc")
_PARAMS = st.dictionaries(st.sampled_from("xyz"), st.sampled_from([1, 2]), max_size=2)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(
    st.lists(st.tuples(_NAMES, _PARAMS), max_size=5),
    st.lists(st.tuples(_NAMES, _PARAMS), max_size=5),
)
def test_pairing_matches_brute_force_on_agreement_then_order(
    expected_spec: list[tuple[str, dict[str, int]]], used_spec: list[tuple[str, dict[str, int]]]
) -> None:
    # Independent oracle: enumerate every pairing; the scorer's parameter accuracy must carry the
    # maximal total agreement, and its sequence score the longest in-order run among those pairings.
    expected = [ExpectedToolCall(tool_name=name, parameters=p) for name, p in expected_spec]
    used = [ToolCall(tool_name=name, parameters=p) for name, p in used_spec]
    best_total, best_lcs = _brute_force_best(expected, used)
    result = score(used, expected, ordered=True)
    if expected:
        assert result.parameter_accuracy == pytest.approx(float(best_total / len(expected)), abs=1e-12)
        assert result.sequence_correct == pytest.approx(best_lcs / len(expected), abs=1e-12)


def test_pairing_of_many_calls_of_one_tool_still_maximises_agreement() -> None:
    # Seven calls of one tool (7! = 5040 pairings, beyond the exhaustive search): the integer-weighted
    # assignment must still reach the brute-force maximum.
    rng = random.Random(7)
    for _ in range(5):
        expected = [
            ExpectedToolCall(tool_name="t", parameters={k: rng.randint(1, 3) for k in rng.sample("wxyz", 3)})
            for _ in range(7)
        ]
        used = [
            ToolCall(tool_name="t", parameters={k: rng.randint(1, 3) for k in rng.sample("wxyz", rng.randint(1, 4))})
            for _ in range(7)
        ]
        best = max(
            sum((_share(expected[i].parameters, used[j].parameters) for i, j in enumerate(chosen)), Fraction(0))
            for chosen in itertools.permutations(range(7))
        )
        assert score(used, expected).parameter_accuracy == pytest.approx(float(best / 7), abs=1e-12)


def test_result_in_answer_looks_at_the_first_256_leaves_of_a_turn() -> None:
    # The bound on its work: 256 scans of the answer at most. A match at leaf 256 (0-based 255) counts,
    # one at leaf 257 does not.
    def calls_with_match_at(position: int) -> list[ToolCall]:
        leaves = [f"absent-{i}" for i in range(300)]
        leaves[position] = "R-77"
        return [used_call("lookup", result={"ids": leaves[:150]}), used_call("lookup", result={"ids": leaves[150:]})]

    assert MAX_RESULT_LEAVES == 256
    assert find_result_in_answer(calls_with_match_at(255), "refund R-77") is True
    assert find_result_in_answer(calls_with_match_at(256), "refund R-77") is False


def test_the_note_is_for_a_claim_the_answer_does_not_bear_out() -> None:
    used = [used_call("lookup", result={"refund_id": "R-77"})]
    claimed = score(used, [expected_call("lookup")], uses_tools=True, answer="Done.")
    assert claimed.reasoning.endswith("Note: no tool result appears in the answer.")
    denied = score(used, [expected_call("lookup")], uses_tools=False, answer="Done.")
    assert "Note:" not in denied.reasoning  # the agent said so itself


def test_approx_between_integers_has_no_rounding_slack() -> None:
    assert values_agree({"$approx": 2**60, "tol": 0}, 2**60)
    assert not values_agree({"$approx": 2**60, "tol": 0}, 2**60 + 200)
    assert values_agree({"$approx": 2**60, "tol": 200}, 2**60 + 200)
