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
