"""Requests that said something other than what they meant are 400s naming the field (#33 item
10), through real API Gateway proxy events: an `expected_state` with `"final_state": null`,
and a mistyped argument rule (an unknown `$` operator, or a known one with an ill-typed operand)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_testing.handler_client import call_handler

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = json.loads((ROOT / "examples" / "calculator.json").read_text())
END_STATE = json.loads((ROOT / "examples" / "end_state.json").read_text())


def refused(response: Any, field: str, says: str) -> None:
    assert response.status == 400, response.body
    assert response.body["success"] is False
    assert [detail["field"] for detail in response.body["details"]] == [field]
    assert says in response.body["details"][0]["message"]
    assert field in response.body["error"]


@pytest.mark.parametrize("final_state", ["absent", None])
def test_an_expected_state_without_a_final_one_or_with_a_null_one_is_a_400_naming_final_state(
    final_state: Any,
) -> None:
    body = copy.deepcopy(END_STATE)
    dataset = body["datasets"][0]
    assert dataset.get("expected_state") is not None
    if final_state == "absent":
        dataset.pop("final_state", None)
    else:
        dataset["final_state"] = final_state  # before #33: a 200, the state compared with null
    refused(call_handler(body), "datasets[0].final_state", "is required (not null) when expected_state is given")


def test_a_null_expected_state_with_a_null_final_state_is_no_check() -> None:
    body = copy.deepcopy(END_STATE)
    body["datasets"][0] |= {"expected_state": None, "final_state": None}
    response = call_handler(body)
    assert response.status == 200, response.body
    assert "state_check" not in response.body["per_conversation_metrics"][0]


PARAMETERS = "datasets[0].conversation[0].ground_truth_agentic.expected_tools[0].parameters"


@pytest.mark.parametrize(
    ("rule", "says"),
    [
        ({"$approx": "x"}, "$approx needs a finite number, not a string"),  # the issue's case
        ({"$approx": 5, "tol": -1}, "$approx's tol needs a finite number ≥ 0"),
        ({"$aprox": 5}, "$aprox is no rule (did you mean $approx?)"),
        ({"$text": 5}, "$text needs a string, not a number"),
        ({"$any": True, "x": 1}, "$any takes no other key, not x"),
        ({"$any_of": [3, {"$regex": "^3$"}]}, "at /$any_of/1: $regex is no rule"),
    ],
)
def test_a_mistyped_argument_rule_is_a_400_naming_the_parameter(rule: dict[str, Any], says: str) -> None:
    body = copy.deepcopy(CALCULATOR)
    body["datasets"][0]["conversation"][0]["ground_truth_agentic"]["expected_tools"][0]["parameters"]["b"] = rule
    # Before #33: a 200, the rule compared as a plain dict (so the call's b: 3 silently disagreed).
    refused(call_handler(body), f"{PARAMETERS}.b", f"a mistyped argument rule: {says}")


def test_a_mistyped_rule_in_an_expected_state_is_a_400_naming_it_and_its_path() -> None:
    body = copy.deepcopy(END_STATE)
    body["datasets"][0]["expected_state"] = {"order": {"total": {"$approx": "19.99"}}}
    refused(call_handler(body), "datasets[0].expected_state", "at /order/total: $approx needs a finite number")


def test_a_literal_lets_an_expected_value_hold_dollar_keys_of_its_own() -> None:
    body = copy.deepcopy(CALCULATOR)
    turn = body["datasets"][0]["conversation"][0]
    turn["agentic"]["tools_used"][0]["parameters"]["filter"] = {"$gt": 5}
    turn["ground_truth_agentic"]["expected_tools"][0]["parameters"]["filter"] = {"$literal": {"$gt": 5}}
    response = call_handler(body)
    assert response.status == 200, response.body
    tools = response.body["per_conversation_metrics"][0]["tool_correctness_scores"][0]
    assert (tools["parameter_accuracy"], tools["is_correct"]) == (1.0, True)
