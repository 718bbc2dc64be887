"""Issue #32 items 1 and 2 through `lambda_handler` (real API Gateway proxy events): the options
of one `$any_of` and the rule work of a request are bounded (413 naming the limit, for `/run`
and for `POST /jobs`), and what stays within them is answered right.

The rule work of an expected call is `fair_forge_core.tools.rules.rule_cost`'s (1 for parameters
without rules; 1 + the work of each value holding a rule; a rule 1, an `$any_of` 1 + its options
holding rules), counted once for each used call of the same tool in the turn; an end state
counts once. The figures below are worked out from that definition by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import JobsAWS, jobs_aws

REFERENCE = "fair_forge_core.judges.ReferenceJudge"


def body_of(conversations: list[dict[str, Any]]) -> dict[str, Any]:
    return {"connector": {"class_path": REFERENCE, "params": {}}, "datasets": conversations, "config": {"k": 1}}


def tool_conversation(expected: list[dict[str, Any]], used: list[dict[str, Any]]) -> dict[str, Any]:
    turn = {
        "qa_id": "q0",
        "query": "Convert it?",
        "assistant": "Done.",
        "ground_truth_assistant": "Done.",
        "agentic": {"tools_used": used},
        "ground_truth_agentic": {"expected_tools": expected},
    }
    return {"session_id": "s0", "assistant_id": "agent", "conversation": [turn]}


def state_conversation(expected_state: Any, final_state: Any) -> dict[str, Any]:
    turn = {"qa_id": "q0", "query": "Book it?", "assistant": "Booked.", "ground_truth_assistant": "Booked."}
    return {
        "session_id": "s0",
        "assistant_id": "agent",
        "conversation": [turn],
        "expected_state": expected_state,
        "final_state": final_state,
    }


def assert_413(response: Any, message: str) -> None:
    assert response.status == 413, response.body
    assert response.body["error"] == message
    assert "Traceback" not in response.raw


# --------------------------------------------------------------------------- options of one $any_of


def test_an_any_of_with_more_options_than_the_limit_is_a_413_naming_it() -> None:
    # The issue's attack: 10,000 × {} against 100,000 keys (1.3 MB), once 26.9 s of CPU and a 200.
    options = [{}] * 10_000
    expected = [{"tool_name": "t", "parameters": {"p": {"$any_of": options}}}]
    used = [{"tool_name": "t", "parameters": {"p": {f"k{i}": 0 for i in range(100_000)}}}]
    assert_413(
        call_handler(body_of([tool_conversation(expected, used)])),
        "Too many $any_of options in datasets[0].conversation[0].ground_truth_agentic.expected_tools[0].parameters: "
        "10000 (limit 1000 per $any_of)",
    )


def test_an_end_state_any_of_over_the_limit_is_a_413_naming_it() -> None:
    state = {"order": {"status": {"$any_of": [{"$any_of": [{}] * 1_001}]}}}  # the inner one is the widest
    assert_413(
        call_handler(body_of([state_conversation(state, {"order": {"status": {}}})])),
        "Too many $any_of options in datasets[0].expected_state: 1001 (limit 1000 per $any_of)",
    )


def test_the_options_limit_is_the_operators(monkeypatch: pytest.MonkeyPatch) -> None:
    state = {"status": {"$any_of": ["refunded", "cancelled", "closed"]}}
    conversation = state_conversation(state, {"status": "closed"})
    assert call_handler(body_of([conversation])).status == 200
    monkeypatch.setenv("FAIR_FORGE_MAX_ANY_OF_OPTIONS", "2")
    assert_413(
        call_handler(body_of([conversation])),
        "Too many $any_of options in datasets[0].expected_state: 3 (limit 2 per $any_of)",
    )


# --------------------------------------------------------------------------- rule work


def rule_work_body(rules: int, used_calls: int) -> dict[str, Any]:
    """One expected call with an `$any_of` of `rules` options that are rules ({"$approx": i}):
    rule work 1 (the parameters) + 1 (the $any_of) + `rules`, times `used_calls`."""
    parameters = {"x": {"$any_of": [{"$approx": i} for i in range(rules)]}}
    expected = [{"tool_name": "t", "parameters": parameters}]
    used = [{"tool_name": "t", "parameters": {"x": -1 - i}} for i in range(used_calls)]
    return body_of([tool_conversation(expected, used)])


def test_rule_work_beyond_the_limit_is_a_413_naming_it() -> None:
    # 1,000 rule options against 64 used calls: (1 + 1 + 1,000) × 64 = 64,128; with 16 such turns,
    # 1,026,048 > 1,000,000. One turn alone is within the limit.
    assert call_handler(rule_work_body(1_000, 64)).status == 200
    body = rule_work_body(1_000, 64)
    body["datasets"] = [
        {**body["datasets"][0], "session_id": f"s{i}", "conversation": [{**body["datasets"][0]["conversation"][0]}]}
        for i in range(16)
    ]
    assert_413(
        call_handler(body),
        "Too much rule work: 1026048 (limit 1000000 per request): each expected call's argument rules count once "
        "for every used call of its tool in the turn (docs/limits.md)",
    )


def test_rule_work_counts_only_calls_of_the_same_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_MAX_RULE_WORK", "1003")
    body = rule_work_body(1_000, 1)  # (1 + 1 + 1,000) × 1 = 1,002, plus the parameters without rules: none
    assert call_handler(body).status == 200
    body["datasets"][0]["conversation"][0]["agentic"]["tools_used"].append({"tool_name": "other", "parameters": {}})
    assert call_handler(body).status == 200  # a call of another tool is never compared with it
    body["datasets"][0]["conversation"][0]["agentic"]["tools_used"].append({"tool_name": "t", "parameters": {}})
    assert_413(
        call_handler(body),
        "Too much rule work: 2004 (limit 1003 per request): each expected call's argument rules count once "
        "for every used call of its tool in the turn (docs/limits.md)",
    )


# --------------------------------------------------------------------------- answered right


def test_a_large_any_of_against_a_large_object_is_answered_right() -> None:
    """1,000 options (the limit) against 40,000 keys, in the end state and in the tool rubric:
    the one option equal to the used object (numbers by value, keys in another order) agrees."""
    keys = {f"k{i}": i for i in range(40_000)}
    same = {f"k{i}": float(i) for i in reversed(range(40_000))}
    wrong: list[Any] = [{"k0": j} for j in range(998)] + [{**keys, "k7": True}]  # True ≠ 7
    for options, agrees in (([*wrong, {"other": 1}], False), ([*wrong, same], True)):
        state = call_handler(body_of([state_conversation({"$any_of": options}, keys)]))
        assert state.status == 200, state.body
        check = state.body["per_conversation_metrics"][0]["state_check"]
        assert (check["matches"], check["checked"], check["mismatched"]) == (agrees, 1, 0 if agrees else 1)
        expected = [{"tool_name": "t", "parameters": {"p": {"$any_of": options}}}]
        used = [{"tool_name": "t", "parameters": {"p": keys}}]
        conversation = tool_conversation(expected, used)
        conversation["tool_policy"] = {"trajectory_match": "strict"}
        tools = call_handler(body_of([conversation]))
        assert tools.status == 200, tools.body
        turn = tools.body["per_conversation_metrics"][0]["interactions"][0]
        assert turn["tool_policy"]["trajectory_matches"] is agrees
        score = tools.body["per_conversation_metrics"][0]["tool_correctness_scores"][0]
        assert score["parameter_accuracy"] == (1.0 if agrees else 0.0)


# --------------------------------------------------------------------------- jobs and /health


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    with jobs_aws(monkeypatch, execute=False, shard_size=4) as resources:
        yield resources


def test_jobs_have_the_options_limit_and_a_rule_work_limit_of_their_own(
    aws: JobsAWS, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = rule_work_body(1_000, 64)
    body["datasets"] = [{**body["datasets"][0], "session_id": f"s{i}"} for i in range(16)]
    assert call_handler(body).status == 413  # /run: 1,026,048 > 1,000,000
    assert aws.submit(body).status == 202  # a job: 1,026,048 ≤ 50,000,000
    monkeypatch.setenv("FAIR_FORGE_JOBS_MAX_RULE_WORK", "1000000")
    refused = aws.submit(body)
    assert refused.status == 413 and refused.body["error"].startswith(
        "Too much rule work: 1026048 (limit 1000000 per request)"
    )
    wide = body_of([state_conversation({"$any_of": list(range(1_001))}, 5)])
    refused = aws.submit(wide)
    assert (refused.status, refused.body["error"]) == (
        413,
        "Too many $any_of options in datasets[0].expected_state: 1001 (limit 1000 per $any_of)",
    )


def test_health_states_the_comparison_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    health = call_handler(method="GET", path="/health").body
    assert (health["limits"]["max_any_of_options"], health["limits"]["max_rule_work"]) == (1_000, 1_000_000)
    assert health["jobs"]["max_rule_work"] == 50_000_000
    monkeypatch.setenv("FAIR_FORGE_MAX_RULE_WORK", "7")
    assert call_handler(method="GET", path="/health").body["limits"]["max_rule_work"] == 7
