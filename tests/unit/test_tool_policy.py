"""Tool policies (`fair_forge_core.tools.policy`): each rule, the override rule, and the four
trajectory match modes. Every expected verdict is derived by hand from agentevals' definitions
(langchain-ai/agentevals, python/agentevals/trajectory: strict.py compares message by message,
a message's tool calls in any order; unordered.py is `_is_trajectory_superset` both ways;
subset.py is the reference a superset of the outputs; superset.py the outputs a superset of the
reference); the cases marked "agentevals:" are the ones of its python/tests/test_trajectory.py,
with one call step standing for one assistant message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from examples.run_local import policy_lines
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.report import render_html
from fair_forge_core.schemas import (
    Batch,
    Dataset,
    EvaluationConfig,
    ExpectedToolCall,
    ToolCall,
    ToolPolicy,
)
from fair_forge_core.schemas.request import TrajectoryMatch
from fair_forge_core.tools.policy import check_tool_policy, effective_policy, trajectory_matches
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.handler_client import call_handler
from tests.report_html import parse

MODES: tuple[TrajectoryMatch, ...] = ("strict", "unordered", "subset", "superset")


def used(*calls: tuple[Any, ...]) -> list[ToolCall]:
    """Used calls from (name, parameters) or (name, parameters, step)."""
    return [ToolCall(tool_name=c[0], parameters=c[1], step=c[2] if len(c) > 2 else None) for c in calls]


def expected(*calls: tuple[Any, ...]) -> list[ExpectedToolCall]:
    """Expected calls from (name, parameters) or (name, parameters, step)."""
    return [ExpectedToolCall(tool_name=c[0], parameters=c[1], step=c[2] if len(c) > 2 else None) for c in calls]


def verdicts(
    used_calls: list[ToolCall], expected_calls: list[ExpectedToolCall], ignore: dict[str, list[str]] | None = None
) -> dict[str, bool]:
    return {mode: trajectory_matches(mode, used_calls, expected_calls, ignore or {}) for mode in MODES}


def verdict_table(strict: bool, unordered: bool, subset: bool, superset: bool) -> dict[str, bool]:
    return {"strict": strict, "unordered": unordered, "subset": subset, "superset": superset}


SF, LONDON = ("get_weather", {"city": "SF"}), ("get_weather", {"city": "London"})


# --------------------------------------------------------------------------- the four modes


def test_the_same_call_matches_in_every_mode() -> None:  # agentevals: test_trajectory_match
    assert verdicts(used(SF), expected(SF)) == verdict_table(True, True, True, True)


def test_parallel_calls_of_one_step_match_strictly_in_any_order() -> None:
    # agentevals: test_trajectory_with_different_tool_message_order (one message, calls swapped)
    assert verdicts(used((*SF, 1), (*LONDON, 1)), expected((*LONDON, 1), (*SF, 1))) == verdict_table(
        True, True, True, True
    )


def test_swapped_calls_of_their_own_steps_fail_only_strict() -> None:
    # Each call its own step (no step numbers): strict compares position by position.
    assert verdicts(used(SF, LONDON), expected(LONDON, SF)) == verdict_table(False, True, True, True)
    assert verdicts(used((*SF, 1), (*LONDON, 2)), expected((*LONDON, 7), (*SF, 9))) == verdict_table(
        False, True, True, True
    )
    assert verdicts(used((*SF, 2), (*LONDON, 1)), expected((*LONDON, 1), (*SF, 2)))["strict"] is True  # step order


def test_the_same_calls_in_different_steps_fail_only_strict() -> None:
    # agentevals: test_trajectory_with_different_message_count (two messages against one)
    assert verdicts(used((*SF, 1), (*LONDON, 2)), expected((*LONDON, 1), (*SF, 1))) == verdict_table(
        False, True, True, True
    )


def test_a_missing_call_is_a_subset_only() -> None:  # agentevals: test_trajectory_subset_tool_call
    assert verdicts(used(SF), expected(LONDON, SF)) == verdict_table(False, False, True, False)


def test_an_extra_call_is_a_superset_only() -> None:
    assert verdicts(used(SF, LONDON, ("get_time", {})), expected(LONDON, SF)) == verdict_table(
        False, False, False, True
    )


def test_another_tool_matches_in_no_mode() -> None:  # agentevals: test_exact_matcher_with_different_called_tools
    assert verdicts(used(SF), expected(("accuweather_forecast", {"city": "San Francisco"}))) == verdict_table(
        False, False, False, False
    )


def test_repeated_calls_count_one_to_one() -> None:
    a = ("search", {"q": "x"})
    assert verdicts(used(a, a), expected(a)) == verdict_table(False, False, False, True)
    assert verdicts(used(a), expected(a, a)) == verdict_table(False, False, True, False)
    assert verdicts(used(a, a), expected(a, a)) == verdict_table(True, True, True, True)


def test_empty_sides() -> None:
    a = ("search", {"q": "x"})
    assert verdicts([], expected(a)) == verdict_table(False, False, True, False)  # no call is a subset of any
    assert verdicts(used(a), []) == verdict_table(False, False, False, True)  # anything is a superset of nothing
    assert verdicts([], []) == verdict_table(True, True, True, True)


def test_ignore_parameters_leaves_a_tools_parameters_out() -> None:
    # agentevals: test_trajectory_with_extra_tool_calls_and_override and ..._subset_tool_calls_and_override,
    # whose "ignore" override of get_weather's arguments is ignore_parameters {"get_weather": ["city"]}.
    two = used(("get_weather", {"city": "San Francisco"}, 1), ("get_weather", {"city": "London"}, 1))
    one = expected(("get_weather", {"city": "SF and London"}, 1))
    ignore = {"get_weather": ["city"]}
    assert verdicts(two, one, ignore) == verdict_table(False, False, False, True)
    one_used = used(("get_weather", {"city": "SF and London"}, 1))
    two_expected = expected(("get_weather", {"city": "San Francisco"}, 1), ("get_weather", {"city": "London"}, 1))
    assert verdicts(one_used, two_expected, ignore) == verdict_table(False, False, True, False)
    # Only the named parameters of the named tool: the other parameters still count.
    call = used(("search", {"q": "x", "request_id": "r-1"}))
    wanted = expected(("search", {"q": "x", "request_id": "r-2"}))
    assert verdicts(call, wanted)["strict"] is False
    assert verdicts(call, wanted, {"search": ["request_id"]})["strict"] is True
    assert verdicts(call, wanted, {"lookup": ["request_id"]})["strict"] is False
    assert verdicts(used(("search", {"q": "y", "request_id": "r-1"})), wanted, {"search": ["request_id"]}) == (
        verdict_table(False, False, False, False)
    )


def test_arguments_agree_by_the_rubrics_rules() -> None:
    assert verdicts(used(("pay", {"amount": 19.99})), expected(("pay", {"amount": {"$approx": 20, "tol": 0.05}})))[
        "strict"
    ]
    assert verdicts(used(("pay", {"amount": 5})), expected(("pay", {"amount": 5.0})))["strict"]  # 5 == 5.0
    assert not verdicts(used(("flag", {"on": 1})), expected(("flag", {"on": True})))["strict"]  # True ≠ 1
    assert not verdicts(used(("pay", {"amount": 5, "note": ""})), expected(("pay", {"amount": 5})))["strict"]  # keys
    # One call may match several under a rule: the pairing is maximal, not first fit. Expected
    # {$any_of [1, 2]} and {1} against used {1}, {2}: the rule takes 2, the plain 1 takes 1.
    rule_first = expected(("f", {"x": {"$any_of": [1, 2]}}), ("f", {"x": 1}))
    assert verdicts(used(("f", {"x": 1}), ("f", {"x": 2})), rule_first) == verdict_table(False, True, True, True)


@pytest.mark.parametrize(
    ("mode", "names", "matches"),
    [  # docs/how-to/task-checks.md "Tool policies", the table of modes, expected [a, b]
        ("strict", "ab", True),
        ("strict", "ba", False),
        ("unordered", "ba", True),
        ("unordered", "a", False),
        ("unordered", "abc", False),
        ("subset", "a", True),
        ("subset", "", True),
        ("subset", "ac", False),
        ("superset", "bca", True),
        ("superset", "a", False),
    ],
)
def test_the_readmes_table_of_modes(mode: TrajectoryMatch, names: str, matches: bool) -> None:
    calls = used(*((name, {}) for name in names))
    assert trajectory_matches(mode, calls, expected(("a", {}), ("b", {})), {}) is matches


# --------------------------------------------------------------------------- the rules


def batch(*names: str, policy: ToolPolicy | None = None, expect: list[str] | None = None) -> Batch:
    data: dict[str, Any] = turn("q1", "Q?", "A.", "A.")
    if names:
        data["agentic"] = {"tools_used": [{"tool_name": name} for name in names]}
    gta: dict[str, Any] = {}
    if expect is not None:
        gta["expected_tools"] = [{"tool_name": name} for name in expect]
    if policy is not None:
        gta["tool_policy"] = policy.model_dump(exclude_unset=True)
    if gta:
        data["ground_truth_agentic"] = gta
    return Batch.model_validate(data)


def broken(calls: Batch, policy: ToolPolicy) -> list[tuple[str, str | None]]:
    return [(v.rule, v.tool_name) for v in check_tool_policy(calls, policy).violations]


def test_forbidden_tools_one_violation_per_call() -> None:
    policy = ToolPolicy(forbidden_tools=["delete_user"])
    check = check_tool_policy(batch("delete_user", "search", "delete_user"), policy)
    assert not check.passed
    assert [(v.rule, v.tool_name) for v in check.violations] == [("forbidden_tools", "delete_user")] * 2
    assert [v.message for v in check.violations] == [
        "call 1 uses delete_user, which forbidden_tools forbids",
        "call 3 uses delete_user, which forbidden_tools forbids",
    ]
    assert check_tool_policy(batch("search"), policy).passed
    assert check_tool_policy(batch(), policy).passed  # no agentic: no calls


def test_allowed_tools_and_a_forbidden_call_counted_once() -> None:
    policy = ToolPolicy(allowed_tools=["search"], forbidden_tools=["delete_user"])
    check = check_tool_policy(batch("search", "book", "delete_user"), policy)
    assert [(v.rule, v.tool_name) for v in check.violations] == [
        ("forbidden_tools", "delete_user"),
        ("allowed_tools", "book"),
    ]
    assert check.violations[1].message == "call 2 uses book, which is not in allowed_tools (search)"
    assert broken(batch("search"), ToolPolicy(allowed_tools=[])) == [("allowed_tools", "search")]
    assert broken(batch("search", "book"), ToolPolicy()) == []  # None: any tool


def test_max_tool_calls() -> None:
    assert broken(batch("a", "b", "a"), ToolPolicy(max_tool_calls=2)) == [("max_tool_calls", None)]
    assert check_tool_policy(batch("a", "b", "a"), ToolPolicy(max_tool_calls=2)).violations[0].message == (
        "the turn made 3 tool calls, more than max_tool_calls 2"
    )
    assert broken(batch("a", "b"), ToolPolicy(max_tool_calls=2)) == []
    assert broken(batch(), ToolPolicy(max_tool_calls=0)) == []
    assert broken(batch("a"), ToolPolicy(max_tool_calls=0)) == [("max_tool_calls", None)]


def test_max_calls_per_tool_for_every_tool_or_per_name() -> None:
    assert broken(batch("a", "b", "a"), ToolPolicy(max_calls_per_tool=1)) == [("max_calls_per_tool", "a")]
    message = check_tool_policy(batch("a", "b", "a"), ToolPolicy(max_calls_per_tool=1)).violations[0].message
    assert message == "a was called 2 times, more than its max_calls_per_tool 1"
    assert broken(batch("a", "b", "a"), ToolPolicy(max_calls_per_tool={"b": 0})) == [("max_calls_per_tool", "b")]
    assert broken(batch("a", "a", "a"), ToolPolicy(max_calls_per_tool={"a": 3, "c": 0})) == []


def test_the_trajectory_match_applies_only_with_expected_tools() -> None:
    policy = ToolPolicy(trajectory_match="strict")
    assert check_tool_policy(batch("a"), policy).trajectory_matches is None  # no ground_truth_agentic
    assert check_tool_policy(batch("a", policy=policy), policy).trajectory_matches is None  # a policy, no expected
    assert check_tool_policy(batch("a", expect=["a"]), policy).trajectory_matches is True
    assert check_tool_policy(batch("a", expect=[]), policy).trajectory_matches is False  # [] expects no call
    assert check_tool_policy(batch("a", expect=["a"]), ToolPolicy()).trajectory_matches is None  # no mode


def test_a_turns_fields_replace_the_conversations() -> None:
    conversation_policy = ToolPolicy(forbidden_tools=["x"], max_tool_calls=1, trajectory_match="strict")
    turn_policy = ToolPolicy.model_validate({"max_tool_calls": 3, "trajectory_match": None})
    merged = effective_policy(conversation_policy, turn_policy)
    assert merged is not None
    assert (merged.forbidden_tools, merged.max_tool_calls, merged.trajectory_match) == (["x"], 3, None)
    cleared = effective_policy(conversation_policy, ToolPolicy.model_validate({"forbidden_tools": []}))
    assert cleared is not None and (cleared.forbidden_tools, cleared.max_tool_calls) == ([], 1)
    assert effective_policy(None, turn_policy) is turn_policy
    assert effective_policy(conversation_policy, None) is conversation_policy
    assert effective_policy(None, None) is None


def test_contradictions_and_negative_counts_are_refused() -> None:
    with pytest.raises(ValidationError, match="both name x"):
        ToolPolicy(forbidden_tools=["x"], allowed_tools=["x", "y"])
    for bad in ({"max_tool_calls": -1}, {"max_calls_per_tool": -1}, {"max_calls_per_tool": {"a": -2}}):
        with pytest.raises(ValidationError, match="greater than or equal to 0"):
            ToolPolicy.model_validate(bad)
    with pytest.raises(ValidationError):
        ToolPolicy.model_validate({"max_tool_calls": True})  # strict: a bool is no count
    with pytest.raises(ValidationError):
        ToolPolicy.model_validate({"trajectory_match": "loose"})


# --------------------------------------------------------------------------- the effect on a turn


def policy_turn(
    calls: list[dict[str, Any]], expected_calls: list[dict[str, Any]] | None, **policy: Any
) -> dict[str, Any]:
    extra: dict[str, Any] = {"agentic": {"tools_used": calls, "final_answer_uses_tools": True}}
    gta: dict[str, Any] = {}
    if expected_calls is not None:
        gta["expected_tools"] = expected_calls
    if policy:
        gta["tool_policy"] = policy
    if gta:
        extra["ground_truth_agentic"] = gta
    return turn("q1", "Refund order A-17.", "Order A-17 is refunded.", "Order A-17 is refunded.", **extra)


LOOKUP = {"tool_name": "lookup", "parameters": {"order": "A-17"}}
REFUND = {"tool_name": "refund", "parameters": {"order": "A-17"}}
DELETE = {"tool_name": "delete_account", "parameters": {}}


def evaluate_turns(*turns: dict[str, Any], config: EvaluationConfig | None = None, **conversation_fields: Any) -> Any:
    data = [conversation(f"s{i}", [t], **conversation_fields) for i, t in enumerate(turns)]
    return evaluate_sync(datasets(*data), ReferenceJudge(), config or EvaluationConfig(k=1))


@pytest.mark.parametrize("require_tools", [True, False])
def test_a_violation_fails_a_turn_with_a_right_answer(require_tools: bool) -> None:
    result = evaluate_turns(
        policy_turn([LOOKUP, DELETE, REFUND], None),
        config=EvaluationConfig(k=1, require_tool_correctness=require_tools),
        tool_policy={"forbidden_tools": ["delete_account"]},
    )
    (metrics,) = result.per_conversation_metrics
    (interaction,) = metrics.interactions
    assert (interaction.answer_correct, interaction.tool_correct, interaction.is_correct) == (True, None, False)
    assert interaction.tool_policy.violations[0].tool_name == "delete_account"
    assert metrics.is_fully_correct is False


def test_the_trajectory_match_decides_tool_correctness_and_the_rubric_score_stays() -> None:
    # Expected lookup then refund; the agent refunded first. The rubric (sequence not scored) passes
    # it; strict does not, unordered does.
    swapped = [REFUND, LOOKUP]
    rubric, strict, unordered = (
        evaluate_turns(policy_turn(swapped, [LOOKUP, REFUND], **mode)).per_conversation_metrics[0]
        for mode in ({}, {"trajectory_match": "strict"}, {"trajectory_match": "unordered"})
    )
    assert rubric.interactions[0].tool_correct is True and rubric.interactions[0].tool_policy is None
    assert (strict.interactions[0].tool_correct, strict.interactions[0].is_correct) == (False, False)
    assert strict.interactions[0].tool_policy.passed  # a failed match is no violation: tool_correct says it
    assert (unordered.interactions[0].tool_correct, unordered.interactions[0].is_correct) == (True, True)
    assert strict.tool_correctness_scores[0] == rubric.tool_correctness_scores[0]  # the rubric's score, unchanged


def test_ignore_parameters_apply_to_the_rubric_too() -> None:
    used_call = {"tool_name": "lookup", "parameters": {"order": "A-17", "request_id": "r-1"}}
    wanted = {"tool_name": "lookup", "parameters": {"order": "A-17", "request_id": "r-2"}}
    plain, ignoring = (
        evaluate_turns(policy_turn([used_call], [wanted], **policy)).per_conversation_metrics[0]
        for policy in ({"max_tool_calls": 5}, {"ignore_parameters": {"lookup": ["request_id"]}})
    )
    # Keys {order, request_id}: 1 of 2 agree (0.5); without request_id, 1 of 1.
    assert plain.tool_correctness_scores[0].parameter_accuracy == 0.5
    assert ignoring.tool_correctness_scores[0].parameter_accuracy == 1.0


def test_a_turn_with_only_a_policy_is_not_scored_by_the_rubric() -> None:
    (metrics,) = evaluate_turns(policy_turn([LOOKUP], None, max_tool_calls=1)).per_conversation_metrics
    assert metrics.tool_correctness_scores == [None]
    assert (metrics.interactions[0].tool_correct, metrics.interactions[0].is_correct) == (None, True)
    assert metrics.interactions[0].tool_policy.passed


def test_a_turn_with_only_a_policy_means_the_same_after_a_dump_read_back() -> None:
    # A dataset written out (`model_dump`, a shard, a saved request) and read back is judged alike.
    (original,) = datasets(conversation("s", [policy_turn([LOOKUP], None, max_tool_calls=1)]))
    again = Dataset.model_validate(json.loads(original.model_dump_json()))
    assert again.conversation[0].ground_truth_agentic.expected_tools is None
    before, after = (
        evaluate_sync([d], ReferenceJudge(), EvaluationConfig(k=1)).per_conversation_metrics[0]
        for d in (original, again)
    )
    assert after == before and after.interactions[0].is_correct is True


def test_results_without_a_policy_carry_no_tool_policy() -> None:
    result = evaluate_turns(policy_turn([LOOKUP], [LOOKUP]))
    interaction = result.model_dump(mode="json")["per_conversation_metrics"][0]["interactions"][0]
    assert "tool_policy" not in interaction
    assert "tool_policy" not in datasets(conversation("s", [policy_turn([LOOKUP], [LOOKUP])]))[0].model_dump_json()


def test_the_report_names_the_violation_and_the_trajectory_verdict() -> None:
    result = evaluate_turns(
        policy_turn([LOOKUP, DELETE], [LOOKUP, REFUND]),
        tool_policy={"forbidden_tools": ["delete_account"], "trajectory_match": "superset"},
    )
    notes = [e.text for e in parse(render_html(result)) if e.tag == "p" and "policy" in e.classes]
    assert len(notes) == 1
    assert "call 2 uses delete_account, which forbidden_tools forbids" in notes[0]
    assert "superset trajectory match: does not match" in notes[0]


# --------------------------------------------------------------------------- through the service


def service_body(*conversations: dict[str, Any]) -> dict[str, Any]:
    return {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"},
        "datasets": list(conversations),
        "config": {"k": 1},
    }


def test_the_service_fails_a_turn_that_breaks_its_policy_and_names_the_rule() -> None:
    body = service_body(
        conversation("kept", [policy_turn([LOOKUP, REFUND], None)], tool_policy={"max_calls_per_tool": 1}),
        conversation("broken", [policy_turn([LOOKUP, LOOKUP, REFUND], None)], tool_policy={"max_calls_per_tool": 1}),
    )
    response = call_handler(body)
    assert response.status == 200, response.body
    kept, broke = (c["interactions"][0] for c in response.body["per_conversation_metrics"])
    assert (kept["is_correct"], kept["tool_policy"]["passed"]) == (True, True)
    assert broke["is_correct"] is False
    assert broke["tool_policy"]["violations"] == [
        {
            "rule": "max_calls_per_tool",
            "tool_name": "lookup",
            "message": "lookup was called 2 times, more than its max_calls_per_tool 1",
        }
    ]


@pytest.mark.parametrize(
    ("conversation_policy", "turn_policy", "field", "reason"),
    [
        ({"max_tool_calls": -1}, None, "datasets[0].tool_policy.max_tool_calls", "greater than or equal to 0"),
        (
            {"max_calls_per_tool": {"lookup": -1}},
            None,
            "datasets[0].tool_policy.max_calls_per_tool.lookup",
            "greater than or equal to 0",
        ),
        ({"forbidden_tools": ["x"], "allowed_tools": ["x"]}, None, "datasets[0].tool_policy", "both name x"),
        (
            None,
            {"trajectory_match": "exact"},
            "datasets[0].conversation[0].ground_truth_agentic.tool_policy.trajectory_match",
            "'strict'",
        ),
        ({"forbidden_tools": ["x"]}, {"allowed_tools": ["x"]}, "datasets[0]", "conversation[0].ground_truth_agentic"),
    ],
)
def test_the_service_refuses_a_bad_policy_naming_the_field(
    conversation_policy: dict[str, Any] | None, turn_policy: dict[str, Any] | None, field: str, reason: str
) -> None:
    policies = {} if turn_policy is None else turn_policy
    one_turn = policy_turn([LOOKUP], [LOOKUP], **policies)
    extra: dict[str, Any] = {} if conversation_policy is None else {"tool_policy": conversation_policy}
    response = call_handler(service_body(conversation("s", [one_turn], **extra)))
    assert response.status == 400, response.body
    assert [detail["field"] for detail in response.body["details"]] == [field]
    assert reason in json.dumps(response.body)


def test_the_example_through_the_service_and_its_make_run_line() -> None:
    body = json.loads((Path(__file__).resolve().parents[2] / "examples" / "tool_policy.json").read_text())
    response = call_handler(body)
    assert response.status == 200, response.body
    kept, broke = response.body["per_conversation_metrics"]
    # The rubric fails the turn (an extra check_policy call, and an answer showing no tool result:
    # utilization 0) but superset accepts its calls.
    assert kept["tool_correctness_scores"][0]["is_correct"] is False
    assert (kept["interactions"][0]["tool_correct"], kept["is_fully_correct"]) == (True, True)
    assert (policy_lines(kept), broke["is_fully_correct"]) == ([], False)
    assert policy_lines(broke) == [
        "q1: tool policy: call 2 uses delete_account, which forbidden_tools forbids; "
        "the turn made 3 tool calls, more than max_tool_calls 2"
    ]
