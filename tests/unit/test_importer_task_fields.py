"""A task's goal, expected state and tool policy from the references, and each trace's final_state
from its metadata (`importers.references`, module docstring; docs/how-to/traces.md "Goals, end states and
policies from the references"): the join, every format's metadata, the handler (the CLI's
`convert`: tests/cli/test_cli_convert.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import TraceError, datasets_from_traces, join_references
from fair_forge_core.importers.langsmith_runs import traces_from_langsmith
from fair_forge_core.importers.openai_agents import traces_from_openai_agents
from fair_forge_core.importers.otel_genai import traces_from_otel
from fair_forge_core.importers.trace import ImportedTrace
from fair_forge_core.schemas import Dataset
from fair_forge_testing.handler_client import call_handler

FIXTURES = Path(__file__).resolve().parent / "trace_fixtures"
OFFLINE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}
GOAL = "The order is cancelled"
RUBRIC = ["no refund is issued"]
EXPECTED = {"order": {"status": "cancelled"}}
POLICY = {"forbidden_tools": ["issue_refund"]}


def trace(trace_id: str, task: str, *, calls: tuple[str, ...] = (), **metadata: Any) -> dict[str, Any]:
    """An openai-format trace of two turns; `calls` are the tools of its first turn's one step."""
    step = [
        {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        for n, name in enumerate(calls)
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Cancel order 7"}]
    if step:
        messages += [{"role": "assistant", "content": None, "tool_calls": step}]
        messages += [{"role": "tool", "tool_call_id": f"c{n}", "content": "ok"} for n in range(len(step))]
    messages += [
        {"role": "assistant", "content": "Order 7 is cancelled."},
        {"role": "user", "content": "Thanks"},
        {"role": "assistant", "content": "You are welcome."},
    ]
    return {"id": trace_id, "metadata": {"task": task, **metadata}, "messages": messages}


def references(**task_fields: Any) -> list[dict[str, Any]]:
    """Task t's two turns; turn 0 carries `task_fields`."""
    return [
        {"task_id": "t", "turn": 0, "ground_truth_assistant": "Order 7 is cancelled", **task_fields},
        {"task_id": "t", "turn": 1, "ground_truth_assistant": "You are welcome"},
    ]


def join(traces: list[dict[str, Any]], refs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    datasets, warnings, _ = datasets_from_traces("openai", traces, refs, task_key="metadata.task")
    return datasets, warnings


def test_the_task_fields_reach_every_attempt_and_each_keeps_its_own_final_state() -> None:
    refs = references(goal=GOAL, goal_rubric=RUBRIC)
    refs[1] |= {"expected_state": EXPECTED, "tool_policy": POLICY}  # any reference of the task may give them
    states = [{"order": {"status": "cancelled"}}, {"order": {"status": "open"}}]
    traces = [trace(f"run-{n}", "t", final_state=state) for n, state in enumerate(states)]
    datasets, warnings = join(traces, refs)
    assert warnings == []
    assert [d["session_id"] for d in datasets] == ["run-0", "run-1"]
    for dataset, state in zip(datasets, states, strict=True):
        assert (dataset["goal"], dataset["goal_rubric"]) == (GOAL, RUBRIC)
        assert (dataset["expected_state"], dataset["tool_policy"]) == (EXPECTED, POLICY)
        assert dataset["final_state"] == state  # per trace
        assert Dataset.model_validate(dataset).checks_state


def test_a_null_final_state_is_no_state_reported() -> None:
    # As a dataset's `"final_state": null` with an expected_state is a 400, a trace's null one is
    # not reported: the attempt is kept unscored, never checked against null.
    datasets, warnings = join([trace("run-0", "t", final_state=None)], references(expected_state=EXPECTED))
    assert datasets[0]["unscored"]["cause"] == "state_not_reported"
    assert "expected_state" not in datasets[0]
    assert "state_not_reported" in warnings[-1]


def test_a_task_without_them_gives_the_datasets_of_before_and_a_final_state_it_does_not_expect_is_ignored() -> None:
    datasets, warnings = join([trace("run-0", "t", final_state={"x": 1})], references())
    assert warnings == []
    assert set(datasets[0]) == {"session_id", "assistant_id", "task_id", "conversation"}


def test_the_same_value_twice_is_one_value_key_order_aside() -> None:
    refs = references(expected_state={"a": 1, "b": 2}, tool_policy=POLICY)
    refs[1] |= {"expected_state": {"b": 2, "a": 1}, "tool_policy": POLICY}
    datasets, _ = join([trace("run-0", "t", final_state={})], refs)
    assert datasets[0]["expected_state"] == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    ("first", "second", "field"),
    [
        ({"goal": GOAL}, {"goal": "Another goal"}, "references[1].goal"),
        ({"goal": GOAL, "goal_rubric": RUBRIC}, {"goal_rubric": ["another"]}, "references[1].goal_rubric"),
        ({"expected_state": {"n": 1}}, {"expected_state": {"n": 1.0}}, "references[1].expected_state"),
        ({"tool_policy": POLICY}, {"tool_policy": {"max_tool_calls": 2}}, "references[1].tool_policy"),
    ],
)
def test_one_field_with_two_values_on_a_task_names_the_second(
    first: dict[str, Any], second: dict[str, Any], field: str
) -> None:
    refs = references(**first)
    refs[1] |= second
    with pytest.raises(TraceError) as raised:
        join([trace("run-0", "t", final_state={})], refs)
    assert raised.value.field == field
    assert (
        raised.value.problem
        == f"differs from references[0].{field.split('.')[1]}: a task has one {field.split('.')[1]}"
    )


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"goal_rubric": RUBRIC}, "references[0].goal_rubric", "needs a goal"),
        ({"goal": ""}, "references[0].goal", "at least 1 character"),
        ({"goal": GOAL, "goal_rubric": []}, "references[0].goal_rubric", "at least 1 item"),
        (
            {"tool_policy": {"forbidden_tools": ["x"], "allowed_tools": ["x"]}},
            "references[0].tool_policy",
            "both name x",
        ),
        ({"tool_policy": {"max_tool_calls": -1}}, "references[0].tool_policy.max_tool_calls", "greater than or equal"),
    ],
)
def test_a_bad_task_field_names_its_reference(fields: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(TraceError) as raised:
        join([trace("run-0", "t", final_state={})], references(**fields))
    assert raised.value.field == field
    assert says in raised.value.problem


def test_a_turn_policy_that_contradicts_the_tasks_names_the_turn() -> None:
    refs = references(tool_policy={"forbidden_tools": ["issue_refund"]})
    refs[1]["ground_truth_agentic"] = {"tool_policy": {"allowed_tools": ["issue_refund"]}}
    with pytest.raises(TraceError) as raised:
        join([trace("run-0", "t")], refs)
    assert raised.value.field == "references[1].ground_truth_agentic.tool_policy"
    assert raised.value.problem.startswith("with the task's tool_policy (references[0].tool_policy): ")


def test_a_trace_without_the_final_state_its_task_expects_is_kept_unscored_and_said() -> None:
    traces = [trace("run-0", "t", final_state=EXPECTED), trace("run-1", "t")]
    datasets, warnings = join(traces, references(expected_state=EXPECTED))
    assert [(d["session_id"], "final_state" in d, d.get("unscored")) for d in datasets] == [
        ("run-0", True, None),
        (
            "run-1",
            False,
            {
                "cause": "state_not_reported",
                "detail": "task 't' expects an end state and the trace's metadata has no final_state",
            },
        ),
    ]
    assert "expected_state" not in datasets[1]  # not checked: the conversation is unscored
    assert warnings[1:] == [
        "trace 'run-1': task 't' expects an end state and the trace's metadata has no final_state:"
        " kept as an unscored conversation (state_not_reported)"
    ]
    imported = [ImportedTrace("only", "agent", [], {"task": "t", "final_state": {}})]
    datasets, report = join_references(imported, references(expected_state=EXPECTED), task_key="metadata.task")
    # No turn: the two turns of t's references are missing; reported, and no dataset can hold it.
    assert (datasets, [u.why.cause for u in report.unjoined], report.unused_tasks) == ([], ["turns_differ"], [])


# --- final_state in each format's metadata ---------------------------------------------------


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


@pytest.mark.parametrize("trace_format", ["openai", "langchain"])
def test_message_list_formats_read_the_trace_metadata(trace_format: str) -> None:
    human = {"openai": {"role": "user", "content": "hi"}, "langchain": {"type": "human", "content": "hi"}}
    items = [{"id": "x", "metadata": {"task": "t", "final_state": [1, {"a": None}]}, "messages": [human[trace_format]]}]
    refs = [{"task_id": "t", "ground_truth_assistant": "hello", "expected_state": [1, {"a": None}]}]
    datasets, _, _ = datasets_from_traces(trace_format, items, refs, task_key="metadata.task")
    assert datasets[0]["final_state"] == [1, {"a": None}]


def otel_attribute(key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "value": value}


def test_otel_reads_the_latest_root_spans_attribute_parsing_json_text() -> None:
    data = load("otel/multi_turn.json")
    roots = [s for r in data for rs in r["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    roots = [s for s in roots if not s.get("parentSpanId")]
    assert [s["spanId"] for s in roots] == ["a100000000000000", "b100000000000000"]  # b starts later
    roots[1]["attributes"].append(otel_attribute("final_state", {"stringValue": '{"booked": true, "table": 4}'}))
    roots[0]["attributes"].append(otel_attribute("final_state", {"stringValue": '{"booked": false}'}))
    (imported,) = traces_from_otel(data)
    assert imported.metadata["final_state"] == {"booked": True, "table": 4}


@pytest.mark.parametrize(
    ("value", "state"),
    [
        ({"stringValue": "shipped"}, "shipped"),  # text that is not JSON stays text
        ({"stringValue": "[1, 2]"}, [1, 2]),
        ({"intValue": "3"}, 3),
        ({"kvlistValue": {"values": [otel_attribute("done", {"boolValue": True})]}}, {"done": True}),
        ({"arrayValue": {"values": [{"stringValue": "a"}]}}, ["a"]),
    ],
)
def test_otel_reads_a_resource_attribute_of_any_value_type(value: dict[str, Any], state: Any) -> None:
    data = load("otel/multi_turn.json")
    data[0]["resourceSpans"][0]["resource"]["attributes"].append(otel_attribute("final_state", value))
    (imported,) = traces_from_otel(data)
    assert imported.metadata["final_state"] == state
    assert imported.metadata["service.name"] == "concierge-svc"  # the other metadata as before


def test_openai_agents_reads_the_latest_traces_metadata_without_a_warning() -> None:
    data = load("openai_agents/multi_turn.json")
    objects = [item for payload in data for item in payload["data"] if item["object"] == "trace"]
    assert [o["id"][:10] for o in objects] == ["trace_5f1c", "trace_60ad"]  # 5f1c's spans start later
    objects[0]["metadata"]["final_state"] = {"budget": 40}
    objects[1]["metadata"]["final_state"] = {"budget": 120}
    (imported,) = traces_from_openai_agents(data)
    assert imported.metadata["final_state"] == {"budget": 40}
    assert not [w for w in imported.warnings if "final_state" in w]


def test_langsmith_reads_the_latest_roots_extra_metadata() -> None:
    runs = load("langsmith/thread_multi_turn.json")
    roots = {run["id"][-4:]: run for run in runs if run.get("parent_run_id") is None}
    assert sorted(roots) == ["c000", "d000"]  # d000 starts later, though it comes first in the input
    roots["d000"]["extra"]["metadata"]["final_state"] = {"split": 3}
    roots["c000"]["extra"]["metadata"]["final_state"] = {"split": 0}
    (imported,) = traces_from_langsmith(runs)
    assert imported.metadata["final_state"] == {"split": 3}
    del roots["d000"]["extra"]["metadata"]["final_state"]  # only the earlier root has one: its
    (imported,) = traces_from_langsmith(runs)
    assert imported.metadata["final_state"] == {"split": 0}


# --- through the handler ------------------------------------------------------------


def traces_body(refs: list[dict[str, Any]], items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "connector": OFFLINE,
        "traces": {"format": "openai", "items": items},
        "references": refs,
        "task_key": "metadata.task",
        "config": {"require_goal": False},
    }


def test_the_handler_reports_the_state_that_differs_and_the_broken_policy() -> None:
    refs = references(goal=GOAL, expected_state=EXPECTED, tool_policy=POLICY)
    items = [
        trace("good", "t", calls=("cancel_order",), final_state=EXPECTED),
        trace("bad", "t", calls=("issue_refund",), final_state={"order": {"status": "refunded"}}),
        trace("silent", "t", calls=("cancel_order",)),
    ]
    response = call_handler(traces_body(refs, items))
    assert response.status == 200, response.body
    metrics = {m["session_id"]: m for m in response.body["per_conversation_metrics"]}
    assert sorted(metrics) == ["bad", "good", "silent"]
    silent = metrics.pop("silent")  # kept, unscored, nothing checked
    assert (silent["is_scored"], silent["unscored"]["cause"], "state_check" in silent) == (
        False,
        "state_not_reported",
        False,
    )
    assert metrics["good"]["state_check"]["matches"] is True
    bad_state = metrics["bad"]["state_check"]
    assert (bad_state["matches"], bad_state["mismatched"]) == (False, 1)
    assert [(d["path"], d["expected"], d["actual"]) for d in bad_state["diff"]] == [
        ("/order/status", "cancelled", "refunded")
    ]
    assert metrics["bad"]["is_fully_correct"] is False
    policies = [i.get("tool_policy") for i in metrics["bad"]["interactions"]]
    assert policies[0]["passed"] is False
    assert [v["message"] for v in policies[0]["violations"]] == [
        "call 1 uses issue_refund, which forbidden_tools forbids"
    ]
    assert metrics["good"]["interactions"][0]["tool_policy"]["passed"] is True
    assert {m["goal_check"]["goal"] for m in metrics.values()} == {GOAL}
    assert any("trace 'silent': task 't' expects an end state" in w for w in response.body["warnings"])


def test_the_handler_names_the_conflicting_reference() -> None:
    refs = references(goal=GOAL)
    refs[1]["goal"] = "Something else"
    response = call_handler(traces_body(refs, [trace("run-0", "t")]))
    assert response.status == 400
    assert response.body["details"] == [
        {"field": "references[1].goal", "message": "differs from references[0].goal: a task has one goal"}
    ]
    assert "Traceback" not in json.dumps(response.body)
