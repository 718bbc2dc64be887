"""`POST /run` with traces and references in place of datasets, through API Gateway proxy
events: the same result as the datasets the CLI converts them to, the importer's choices in
`warnings`, and a 400 naming the item and the field for a trace that cannot be read."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from fair_forge_core.importers import datasets_from_traces
from fair_forge_core.trace_formats import TRACE_FORMATS
from fair_forge_testing.handler_client import call_handler

ROOT = Path(__file__).resolve().parents[2]
TRACES = json.loads((ROOT / "examples" / "traces" / "openai_chat.json").read_text())
REFERENCES = [
    json.loads(line)
    for line in (ROOT / "examples" / "traces" / "openai_chat.references.jsonl").read_text().splitlines()
]
REFERENCE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}


def traces_body(**changes: Any) -> dict[str, Any]:
    body = {
        "connector": REFERENCE,
        "traces": {"format": "openai", "items": copy.deepcopy(TRACES)},
        "references": copy.deepcopy(REFERENCES),
        "task_key": "metadata.task",
        "config": {"k": 1},
    }
    body.update(changes)
    return body


def without_request_id(body: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in body.items() if name != "request_id"}


def test_traces_are_evaluated_as_the_datasets_they_convert_to() -> None:
    from_traces = call_handler(traces_body())
    datasets, warnings, _ = datasets_from_traces("openai", TRACES, REFERENCES, task_key="metadata.task")
    from_datasets = call_handler({"connector": REFERENCE, "datasets": datasets, "config": {"k": 1}})
    assert (from_traces.status, from_datasets.status) == (200, 200)
    assert warnings == []
    assert without_request_id(from_traces.body) == without_request_id(from_datasets.body)
    sessions = [c["session_id"] for c in from_traces.body["per_conversation_metrics"]]
    assert sessions == ["run-001", "run-002", "run-003"]


def test_the_importers_choices_and_the_joins_problems_come_first_in_warnings() -> None:
    items = copy.deepcopy(TRACES)
    items[0]["messages"][-1]["content"] = ""  # run-001 loses its answer
    items.append(
        {"id": "stray", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    )
    response = call_handler(traces_body(traces={"format": "openai", "items": items}))
    assert response.status == 200, response.body
    assert response.body["warnings"][:3] == [
        "traces[0]: turn 0 ('What is the weather in Paris right now?') has no final answer; judged as an empty answer",
        "1 trace attempt(s) could not be joined to the references (1 not_joined): "
        "kept as unscored conversations, which readiness counts",
        "trace 'stray': it has no metadata.task as text, so it matches no task: "
        "kept as an unscored conversation (not_joined)",
    ]


def test_import_warnings_are_capped_and_counted() -> None:
    strays = [
        {"id": f"stray-{n}", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
        for n in range(25)
    ]
    response = call_handler(traces_body(traces={"format": "openai", "items": copy.deepcopy(TRACES) + strays}))
    assert response.status == 200, response.body
    imported = [w for w in response.body["warnings"] if "stray" in w or "more import warnings" in w]
    assert len(imported) == 20  # the first of the 20 counts the unjoined attempts
    assert imported[-1] == "… and 6 more import warnings"
    assert response.body["warnings"][0].startswith("25 trace attempt(s) could not be joined")


@pytest.mark.parametrize(
    ("change", "message", "field"),
    [
        (
            lambda body: body["traces"]["items"][2]["messages"][2].update(tool_call_id="nope"),
            "Invalid traces: traces.items[2].messages[2].tool_call_id: no tool call has the id 'nope'",
            "traces.items[2].messages[2].tool_call_id",
        ),
        (
            lambda body: body["traces"].update(format="csv"),
            "Invalid request: traces.format: Input should be 'openai'",
            "traces.format",
        ),
        (
            lambda body: body["references"][1].update(ground_truth_assistant=None),
            "Invalid request: references[1].ground_truth_assistant: Input should be a valid string",
            "references[1].ground_truth_assistant",
        ),
        (
            lambda body: body["references"].append(dict(body["references"][0])),
            "Invalid traces: references[4]: a second reference for task 'weather-paris', turn 0",
            "references[4]",
        ),
        (
            lambda body: body.update(task_key="nope"),
            "Invalid traces: task_key: is none (the trace id), `first_user_message` or `metadata.<name>`; "
            "metadata names (with text values) in the traces: task",
            "task_key",
        ),
        (
            lambda body: body.update(task_key="metadata.tsk"),
            "Invalid traces: task_key: no trace has metadata.tsk as text (did you mean metadata.task?); "
            "metadata names (with text values) in the traces: task",
            "task_key",
        ),
        (
            lambda body: body["references"][2].update(qaid=1),
            "Invalid request: references[2].qaid: unknown key (did you mean qa_id?)",
            "references[2].qaid",
        ),
        (
            lambda body: body["traces"].update(items=[]),
            "Invalid request: traces.items: List should have at least 1 item",
            "traces.items",
        ),
    ],
    ids=[
        "unknown-call-id",
        "unknown-format",
        "reference-without-truth",
        "duplicate-reference",
        "bad-task-key",
        "task-key-no-trace-has",
        "reference-unknown-key",
        "no-items",
    ],
)
def test_what_cannot_be_read_is_a_400_naming_the_item_and_the_field(change: Any, message: str, field: str) -> None:
    body = traces_body()
    change(body)
    response = call_handler(body)
    assert response.status == 400
    assert response.body["error"].startswith(message)
    assert response.body["details"][0]["field"] == field


def test_a_wrong_task_key_is_one_message_not_a_warning_per_trace() -> None:
    response = call_handler(traces_body(task_key="metadata.scenario"))
    assert response.status == 400
    assert response.body["details"] == [
        {
            "field": "task_key",
            "message": "no trace has metadata.scenario as text; metadata names (with text values) in the traces: task",
        }
    ]


def test_datasets_and_traces_together_are_refused() -> None:
    response = call_handler({**traces_body(), "datasets": []})
    assert (response.status, response.body["error"]) == (400, "Send datasets or traces, not both")


def test_no_trace_matching_a_task_is_a_400_listing_why() -> None:
    response = call_handler(traces_body(task_key=None))  # trace ids are not task ids here
    assert response.status == 400
    assert response.body["error"] == (
        "No trace could be evaluated (none matched a task of the references with every turn's "
        "reference and the end state its task expects): nothing to evaluate"
    )
    assert response.body["details"][1] == {
        "field": "references",
        "message": "trace 'run-001': its task 'run-001' matches no task of the references: "
        "kept as an unscored conversation (not_joined)",
    }


def test_the_limits_of_datasets_hold_for_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_MAX_CONVERSATIONS", "2")
    response = call_handler(traces_body())
    assert (response.status, response.body["error"]) == (413, "Too many conversations: 3 (limit 2 per request)")


def test_jobs_take_datasets_and_say_where_traces_go(monkeypatch: pytest.MonkeyPatch) -> None:
    # Refused before any AWS call, so names that exist nowhere do.
    monkeypatch.setenv("JOBS_BUCKET", "no-such-bucket")
    monkeypatch.setenv("JOBS_STATE_MACHINE_ARN", "arn:aws:states:us-east-1:000000000000:stateMachine:none")
    response = call_handler(traces_body(), path="/jobs")
    assert response.status == 400
    assert response.body["error"].startswith("POST /jobs takes datasets: send traces to POST /run")


def test_a_traces_body_is_valid_under_the_published_schema_and_a_broken_one_is_not() -> None:
    schema = json.loads((ROOT / "schemas" / "request.schema.json").read_text())
    validator = Draft202012Validator(schema)
    assert not list(validator.iter_errors(traces_body()))
    broken = traces_body()
    broken["traces"]["format"] = "csv"
    assert list(validator.iter_errors(broken))


@pytest.mark.parametrize("trace_format", TRACE_FORMATS)
def test_every_format_names_the_unreadable_item_in_the_request(trace_format: str) -> None:
    response = call_handler(traces_body(traces={"format": trace_format, "items": [{"x": 1}]}))
    assert response.status == 400
    field = response.body["details"][0]["field"]
    assert field.startswith("traces.items[0]"), field
    assert response.body["error"].startswith(f"Invalid traces: {field}: ")


def test_an_error_about_the_whole_input_names_traces_items() -> None:
    response = call_handler(traces_body(traces={"format": "otel", "items": [{"resourceSpans": []}]}))
    assert response.status == 400
    assert response.body["details"][0]["field"] == "traces.items"
    assert response.body["error"].startswith("Invalid traces: traces.items: holds no GenAI span")


def test_a_bare_list_of_messages_is_named_by_its_item() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "tool", "tool_call_id": "zz"},
    ]
    response = call_handler(traces_body(traces={"format": "openai", "items": messages}))
    assert response.status == 400
    assert response.body["details"][0]["field"] == "traces.items[2].tool_call_id"


def test_json_nested_inside_a_string_is_not_a_500() -> None:
    body = traces_body()
    body["traces"]["items"][0]["messages"][3]["content"] = "[" * 50_000
    body["traces"]["items"][0]["messages"][2]["tool_calls"][0]["function"]["arguments"] = "[" * 50_000
    response = call_handler(body)
    assert response.status == 200, response.body
    assert any("arguments are not a JSON object" in w for w in response.body["warnings"])


def test_jobs_refuse_a_cap_they_cannot_honour(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the operator's budget table a job's shards could not share one cap: refused, not ignored.
    monkeypatch.setenv("JOBS_BUCKET", "no-such-bucket")
    monkeypatch.setenv("JOBS_STATE_MACHINE_ARN", "arn:aws:states:us-east-1:000000000000:stateMachine:none")
    monkeypatch.delenv("JOBS_BUDGET_TABLE", raising=False)
    body = json.loads((ROOT / "examples" / "calculator.json").read_text())
    body["connector"] = REFERENCE
    body.setdefault("config", {})["max_cost_usd"] = 1.0
    response = call_handler(body, path="/jobs")
    assert response.status == 400
    assert response.body["details"][0]["field"] == "config.max_cost_usd"


def test_attempts_left_unjoined_are_unscored_and_counted_never_a_reliable_200() -> None:
    # The ten attempts of tests/cli/test_cli_unjoined.py: six right, four that cannot be joined.
    from tests.cli.test_cli_unjoined import REFERENCES as TASK_REFERENCES
    from tests.cli.test_cli_unjoined import UNJOINED, ten_attempts

    body = {
        "connector": REFERENCE,
        "traces": {"format": "openai", "items": ten_attempts()},
        "references": TASK_REFERENCES,
        "task_key": "metadata.task",
    }
    response = call_handler(body)
    assert response.status == 200, response.body
    aggregated = response.body["aggregated_metrics"]
    assert (aggregated["total_conversations"], aggregated["unscored_conversations"]) == (6, 4)
    assert aggregated["unscored_by_cause"] == {"not_joined": 1, "state_not_reported": 2, "turns_differ": 1}
    assert aggregated["readiness"]["status"] == "insufficient_evidence"
    assert response.body["warnings"][0] == f"{UNJOINED}: kept as unscored conversations, which readiness counts"
    kept = {m["session_id"]: m.get("unscored") for m in response.body["per_conversation_metrics"]}
    assert kept["attempt-9"] == {
        "cause": "not_joined",
        "detail": "its task 'refund ' matches no task of the references (did you mean 'refund'?)",
    }
    assert [kept[f"attempt-{n}"] for n in range(6)] == [None] * 6  # absent when scored: results read as before
