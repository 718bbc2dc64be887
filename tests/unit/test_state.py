"""The end state a conversation should leave behind (`fair_forge_core.state`), through the rules
written out in its docstring; expected diffs are written by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fair_forge_core.checks.end_state import compare_state
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.report import render_html
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.handler_client import call_handler
from tests.report_html import parse

ORDER = {"order": {"id": "A-17", "status": "refunded", "total": 19.99, "items": ["cable"]}, "email_sent": True}


def diff_of(expected: Any, final: Any) -> list[tuple[str, bool, bool]]:
    return [(d.path, d.present, d.agrees) for d in compare_state(expected, final).diff]


def test_every_leaf_is_compared_at_its_path_with_the_argument_rules() -> None:
    expected = {
        "order": {"status": {"$any_of": ["refunded", "cancelled"]}, "total": {"$approx": 20, "tol": 0.05}},
        "email_sent": True,
        "ticket": {"$any": True},
    }
    check = compare_state(expected, ORDER)
    assert diff_of(expected, ORDER) == [
        ("/order/status", True, True),
        ("/order/total", True, True),
        ("/email_sent", True, True),
        ("/ticket", False, False),  # a rule matches a value, never an absence
    ]
    assert (check.matches, check.checked, check.mismatched) == (False, 4, 1)


def test_values_agree_as_tool_arguments_do() -> None:
    assert diff_of({"n": 5}, {"n": 5.0})[0][2] is True  # 5 == 5.0
    assert diff_of({"flag": True}, {"flag": 1})[0][2] is False  # True ≠ 1
    assert diff_of({"items": ["cable"]}, {"items": ["cable"]})[0][2] is True  # lists whole, position by position
    assert diff_of({"name": {"$text": "Ada  LOVELACE"}}, {"name": "ada lovelace"})[0][2] is True


def test_keys_not_named_are_not_checked_and_empty_asks_for_nothing() -> None:
    assert compare_state({"email_sent": True}, ORDER).matches
    assert compare_state({}, None).matches and compare_state({}, None).checked == 0
    assert compare_state({"order": {}}, {}).checked == 0
    whole = compare_state("done", "done")
    assert (whole.matches, whole.diff[0].path) == (True, "")
    assert not compare_state({"order": {"id": "A-17"}}, {"order": "A-17"}).matches  # not an object there


def test_paths_are_json_pointers_so_a_dotted_key_and_a_nested_one_never_collide() -> None:
    # RFC 6901: "/a.b" is the key "a.b", "/a/b" the key "b" of "a"; "~" and "/" are escaped.
    expected = {"a.b": 1, "a": {"b": 2}, "c/d": 3, "e~f": {"g": 4}}
    final = {"a.b": 1, "a": {"b": 0}, "c/d": 3}
    assert diff_of(expected, final) == [
        ("/a.b", True, True),
        ("/a/b", True, False),
        ("/c~1d", True, True),
        ("/e~0f/g", False, False),
    ]
    # Before #33 the first two were both "a.b": two rows of one path, one agreeing and one not.
    paths = [d.path for d in compare_state(expected, final).diff]
    assert len(set(paths)) == len(paths)


def test_a_json_pointer_resolves_back_to_its_value() -> None:
    # Resolving each path by RFC 6901's own rule (split on "/", then "~1" → "/" and "~0" → "~")
    # finds the expected leaf: the escaping is reversible.
    expected = {"x~1": {"/": 1, "~0/~1": {"": 2}}, "y": "whole"}
    for difference in compare_state(expected, {}).diff:
        node: Any = expected
        for token in difference.path.split("/")[1:]:
            node = node[token.replace("~1", "/").replace("~0", "~")]
        assert node == difference.expected


def end_state_conversation(final: Any) -> dict[str, Any]:
    return conversation(
        "refund",
        [turn("q1", "Please refund order A-17.", "Done: order A-17 is refunded.", "Order A-17 is refunded.")],
        expected_state={"order": {"status": "refunded"}, "email_sent": True},
        final_state=final,
    )


def test_a_conversation_with_the_wrong_end_state_is_not_fully_correct() -> None:
    result = evaluate_sync(
        datasets(end_state_conversation(ORDER), end_state_conversation({"order": {"status": "open"}})),
        ReferenceJudge(),
        EvaluationConfig(k=1),
    )
    right, wrong = result.per_conversation_metrics
    assert right.interactions is not None and wrong.interactions is not None
    assert right.interactions[0].is_correct and wrong.interactions[0].is_correct  # the answers are right
    assert (right.is_fully_correct, wrong.is_fully_correct) == (True, False)
    assert wrong.state_check is not None and [d.path for d in wrong.state_check.diff if not d.agrees] == [
        "/order/status",
        "/email_sent",
    ]
    assert result.aggregated_metrics.fully_correct_conversations == 1
    page = parse(render_html(result))
    notes = [e.text for e in page if e.tag == "p" and "state" in e.classes]
    assert any("2 of 2 key(s) differ" in text for text in notes) and any("matches" in text for text in notes)


def test_the_service_checks_the_state_and_refuses_an_expected_state_without_a_final_one() -> None:
    body = {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"},
        "datasets": [end_state_conversation(ORDER)],
    }
    response = call_handler(body)
    assert response.status == 200, response.body
    assert response.body["per_conversation_metrics"][0]["state_check"]["matches"] is True
    missing = json.loads(json.dumps(body))
    del missing["datasets"][0]["final_state"]
    refused = call_handler(missing)
    assert refused.status == 400 and "final_state: Value error, is required" in refused.body["error"]
    assert refused.body["details"][0]["field"] == "datasets[0].final_state"


@pytest.mark.parametrize("with_state", [False, True])
def test_results_without_an_end_state_carry_no_state_check(with_state: bool) -> None:
    data = [end_state_conversation(ORDER)] if with_state else [conversation("a", [turn("q", "2+2?", "4", "4")])]
    result = evaluate_sync(datasets(*data), ReferenceJudge(), EvaluationConfig(k=1))
    assert ("state_check" in result.model_dump(mode="json")["per_conversation_metrics"][0]) is with_state


def test_a_null_expected_state_is_none_and_a_dump_read_back_checks_what_the_original_did() -> None:
    from fair_forge_core.schemas import Dataset

    null_state = conversation("n", [turn("q", "2+2?", "4", "4")], expected_state=None, final_state={"x": 1})
    plain, checked = datasets(conversation("a", [turn("q", "2+2?", "4", "4")]), end_state_conversation(ORDER))
    assert not datasets(null_state)[0].checks_state
    for original in (plain, checked):
        again = Dataset.model_validate(json.loads(original.model_dump_json()))
        assert again.checks_state is original.checks_state
        results = [evaluate_sync([d], ReferenceJudge(), EvaluationConfig(k=1)) for d in (original, again)]
        assert results[0].per_conversation_metrics == results[1].per_conversation_metrics
