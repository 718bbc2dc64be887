"""Fuzzing `lambda_handler` with random and mutated bodies: a client error or a result, never a defect.

Properties, for every body hypothesis makes:
- the status is 200 or 4xx, never 5xx;
- a 4xx body is `{"success": false, "error": ...}` whose message names the field
  at fault (or says the body is not a JSON object), with no stack trace;
- a 200 body is a complete result.
Examples are bounded and derandomised, so CI runs the same cases every time.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fair_forge_testing.handler_client import call_handler

ROOT = Path(__file__).resolve().parents[2]
VALID = json.loads((ROOT / "examples" / "calculator.json").read_text())

FIELD_WORDS = (
    "connector", "class_path", "datasets", "conversation", "config", "qa_ids", "body", "JSON object",
    "Invalid JSON body", "nested", "text field",
)  # fmt: skip
FUZZ = settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any code point, lone surrogates included: json.dumps writes them as "\ud800" escapes,
# valid JSON syntax that is no Unicode text.
any_text = st.characters(exclude_categories=[])
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=any_text, max_size=40),
)
json_value = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(alphabet=any_text, max_size=8), children, max_size=4),
    ),
    max_leaves=12,
)


def paths_of(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a JSON value (dict keys and list indices)."""
    paths = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            paths += paths_of(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            paths += paths_of(child, (*prefix, index))
    return paths


ALL_PATHS = paths_of(VALID)


def apply(body: dict[str, Any], path: tuple, action: str, value: Any) -> dict[str, Any]:
    mutated = copy.deepcopy(body)
    parent = mutated
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "replace":
        parent[last] = value
    elif action == "extra" and isinstance(parent, dict):
        parent[f"unexpected_{last}"] = value
    elif action == "nest":
        nested: Any = value
        for _ in range(60):
            nested = [nested]
        parent[last] = nested
    return mutated


def to_body(value: Any) -> str:
    # json.dumps writes NaN and Infinity as Python's json reads them: hostile but parseable.
    return json.dumps(value, allow_nan=True)


def check(response) -> None:
    assert response.status < 500, response.raw
    assert "Traceback" not in response.raw and 'File "' not in response.raw
    if response.status == 200:
        assert response.body["success"] is True
        assert "aggregated_metrics" in response.body
        return
    assert 400 <= response.status < 500
    assert response.body["success"] is False
    error = response.body["error"]
    assert any(word in error for word in FIELD_WORDS), error
    for detail in response.body.get("details", []):
        assert detail["field"] and detail["message"]


@FUZZ
@given(
    path=st.sampled_from(ALL_PATHS),
    action=st.sampled_from(["delete", "replace", "extra", "nest"]),
    value=json_value,
)
def test_mutated_requests(path: tuple, action: str, value: Any) -> None:
    check(call_handler(raw=to_body(apply(VALID, path, action, value))))


@FUZZ
@given(body=json_value)
def test_random_json_bodies(body: Any) -> None:
    check(call_handler(raw=to_body(body)))


@settings(max_examples=80, derandomize=True, deadline=None)
@given(raw=st.binary(max_size=200))
def test_random_bytes(raw: bytes) -> None:
    check(call_handler(raw=raw))


@FUZZ
@given(
    config=st.dictionaries(
        st.sampled_from(
            ["k", "threshold", "tool_threshold", "max_concurrency", "statistical_mode", "tool_weights", "verbose"]
        ),
        json_value,
        max_size=3,
    )
)
def test_random_configs(config: dict[str, Any]) -> None:
    body = copy.deepcopy(VALID)
    body["config"] = config
    check(call_handler(raw=to_body(body)))


def test_huge_and_non_finite_numbers_are_400() -> None:
    for config, field in [
        ({"k": 10**30}, "config.k"),
        ({"k": -5}, "config.k"),
        ({"threshold": math.nan}, "NaN is not a JSON number"),
        ({"threshold": -math.inf}, "-Infinity is not a JSON number"),
        ({"tool_weights": {"selection": math.inf}}, "Infinity is not a JSON number"),
    ]:
        body = copy.deepcopy(VALID)
        body["config"] = config
        response = call_handler(raw=to_body(body))
        assert response.status == 400, (config, response.body)
        assert field in response.body["error"]


@given(depth=st.sampled_from([40, 900, 5000, 100_000]))
@settings(max_examples=4, derandomize=True, deadline=None)
def test_deep_nesting_is_refused_before_it_can_overflow_the_stack(depth: int) -> None:
    body = copy.deepcopy(VALID)
    body["datasets"][0]["conversation"][0]["ground_truth_agentic"]["expected_tools"][0]["parameters"] = {"a": "HOLE"}
    raw = json.dumps(body).replace('"HOLE"', '{"x": ' * depth + "1" + "}" * depth)
    response = call_handler(raw=raw)
    assert response.status == 400, response.body
    assert "nested" in response.body["error"] or "Invalid JSON body" in response.body["error"]


SURROGATE_PLACES = {
    "session_id": lambda b: b["datasets"][0].update(session_id="s\ud800"),
    "qa_id": lambda b: b["datasets"][0]["conversation"][0].update(qa_id="q\udfff"),
    "assistant_id": lambda b: b["datasets"][0].update(assistant_id="a\udc00"),
    "class_path": lambda b: b["connector"].update(class_path="fair_forge_core\ud800"),
    "a parameter key": lambda b: b["connector"]["params"].update({"k\ud800": 1}),
    "a tool argument": lambda b: b["datasets"][0]["conversation"][0]["agentic"]["tools_used"][0]["parameters"].update(
        a="\ud800"
    ),
}


@pytest.mark.parametrize("place", sorted(SURROGATE_PLACES))
@pytest.mark.parametrize("accept", ["application/json", "text/html"])
def test_a_lone_surrogate_anywhere_is_a_400(place: str, accept: str) -> None:
    body = copy.deepcopy(VALID)
    SURROGATE_PLACES[place](body)
    raw = json.dumps(body)
    assert "\\ud" in raw or "\\udc" in raw or "\\udf" in raw
    response = call_handler(raw=raw, headers={"Accept": accept})
    assert response.status == 400, response.raw
    assert json.loads(response.raw)["error"].startswith("Invalid JSON body: a string holds a lone UTF-16 surrogate")


def test_a_surrogate_pair_is_text() -> None:
    body = copy.deepcopy(VALID)
    body["datasets"][0]["session_id"] = "emoji \U0001f600"
    assert call_handler(raw=json.dumps(body)).status == 200


@pytest.mark.parametrize("name", [[], {}, [1], {"a": 1}])
def test_a_used_tool_name_that_is_no_string_is_a_400_not_a_500(name: Any) -> None:
    # Once a 500 (TypeError): the rule-work count put every used call's name in a Counter.
    path = next(p for p in ALL_PATHS if p[-1:] == ("tool_name",) and "tools_used" in p)
    response = call_handler(raw=to_body(apply(VALID, path, "replace", name)))
    assert response.status == 400, response.raw
    assert "tool_name" in response.body["error"]
