"""Mistyped argument rules are refused, never read silently as plain values (#33 item 11,
`fair_forge_core.rule_shapes`), and the shapes it accepts are exactly the rules
`fair_forge_core.tools.rules` applies."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from fair_forge_core.rule_shapes import RULE_OPERATORS, rule_problem
from fair_forge_core.schemas import Dataset, ExpectedToolCall
from fair_forge_core.tools import values_agree
from fair_forge_core.tools.rules import is_rule


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"$approx": "x"}, "$approx needs a finite number, not a string"),
        ({"$approx": True}, "$approx needs a finite number, not a bool"),
        ({"$approx": 1, "tol": -0.5}, "$approx's tol needs a finite number ≥ 0, not a negative number"),
        ({"$approx": 1, "rel": "1%"}, "$approx's rel needs a finite number ≥ 0, not a string"),
        ({"$approx": 1, "tolerance": 0.1}, "$approx takes only tol and rel besides it, not tolerance"),
        ({"$text": 5}, "$text needs a string, not a number"),
        ({"$any": False}, "$any needs true, not false"),
        ({"$any": True, "x": 1}, "$any takes no other key, not x"),
        ({"$any_of": "USD"}, "$any_of needs a list of options, not a string"),
        ({"$text": "a", "$any": True}, "one rule per object, not $any and $text"),
        ({"$aprox": 20}, "$aprox is no rule (did you mean $approx?)"),
        ({"$regex": "^a"}, "$regex is no rule"),
        ({"order": {"total": {"$approx": "20"}}}, "at /order/total: $approx needs a finite number"),
        ({"$any_of": [1, {"$text": None}]}, "at /$any_of/1: $text needs a string, not null"),
        ([{"a/b": {"$any": 1}}], "at /0/a~1b: $any needs true, not a number"),
    ],
)
def test_a_mistyped_rule_is_named(value: Any, problem: str) -> None:
    found = rule_problem(value)
    assert found is not None and found.startswith(problem)


@pytest.mark.parametrize(
    "value",
    [
        {"$approx": 59.9, "tol": 0.01, "rel": 0.001},
        {"$any_of": ["USD", {"$text": "us dollars"}, {"$approx": 1}]},
        {"$text": "New York"},
        {"$any": True},
        {"$literal": {"$gt": 5, "$anything": ["goes"]}},  # the escape: nothing inside is read
        {"tol": 1, "rel": 2, "order": [{"id": 1}]},  # no "$" key: plain data
        "$approx",
        None,
    ],
)
def test_well_formed_rules_and_plain_values_pass(value: Any) -> None:
    assert rule_problem(value) is None


def test_the_request_refuses_it_naming_the_field() -> None:
    with pytest.raises(ValidationError) as raised:
        ExpectedToolCall.model_validate({"tool_name": "t", "parameters": {"amount": {"$approx": "x"}}})
    (error,) = raised.value.errors()
    assert error["loc"] == ("parameters", "amount")
    assert "a mistyped argument rule: $approx needs a finite number, not a string" in error["msg"]
    with pytest.raises(ValidationError) as raised:
        Dataset.model_validate(
            {
                "session_id": "s",
                "assistant_id": "a",
                "conversation": [{"qa_id": "q", "query": "q", "assistant": "a", "ground_truth_assistant": "a"}],
                "expected_state": {"order": {"$any": "yes"}},
                "final_state": {},
            }
        )
    (error,) = raised.value.errors()
    assert error["loc"] == ("expected_state",)
    assert "at /order: $any needs true, not a string" in error["msg"]


def test_a_literal_matches_its_value_as_plain_data() -> None:
    literal = {"$literal": {"$gt": 5}}
    assert values_agree(literal, {"$gt": 5.0})  # 5 == 5.0, as for any plain value
    assert not values_agree(literal, {"$gt": 6})
    assert not values_agree({"$literal": {"$any": True}}, 3)  # an $any inside is a key, not a rule
    assert values_agree({"q": {"$literal": {"$any": True}}}, {"q": {"$any": True}})


SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) | st.text(max_size=2)
RULE_KEYS = st.sampled_from([*RULE_OPERATORS, "tol", "rel", "x", "$approxx"])
RULE_LIKE = st.dictionaries(RULE_KEYS, SCALARS | st.lists(SCALARS, max_size=2), min_size=1, max_size=3)


@settings(max_examples=500, derandomize=True, deadline=None)
@given(RULE_LIKE)
def test_the_shapes_accepted_are_exactly_the_rules_the_rubric_applies(value: dict[str, Any]) -> None:
    # At the top level of an object with a "$" key (nested options aside): accepted ⇔ a rule.
    if not any(key.startswith("$") for key in value):
        assert rule_problem(value) is None or any(isinstance(v, dict) for v in value.values())
        return
    options = value.get("$any_of")
    nested_problem = isinstance(options, list) and any(rule_problem(option) for option in options)
    if not nested_problem:
        assert (rule_problem(value) is None) is is_rule(value), value
