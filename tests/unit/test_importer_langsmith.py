"""LangSmith runs (flat lists and run trees) → conversations."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import ImportedTurn, TraceError, join_references
from fair_forge_core.importers.langsmith_runs import _canonical, traces_from_langsmith
from fair_forge_core.schemas import Dataset

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "unit" / "trace_fixtures" / "langsmith"
CASES = sorted(path.name.removesuffix(".json") for path in FIXTURES.glob("*.json") if ".expected" not in path.name)


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_imports_to_its_hand_written_expectation(case: str) -> None:
    data = json.loads((FIXTURES / f"{case}.json").read_text())
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text())
    assert [dataclasses.asdict(trace) for trace in traces_from_langsmith(data)] == expected


def run(run_id: str, run_type: str, second: int, parent: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    """A run of trace `t` that started at `second`, with its dotted order under `parent`."""
    dotted = (f"{parent['dotted_order']}." if parent else "") + f"20250101T0000{second:02d}000000Z{run_id}"
    return {
        "id": run_id,
        "name": run_id,
        "run_type": run_type,
        "trace_id": "t",
        "parent_run_id": parent["id"] if parent else None,
        "dotted_order": dotted,
        "start_time": f"2025-01-01T00:00:{second:02d}",
        **fields,
    }


def llm_output(*calls: tuple[str, dict[str, Any], str | None], text: str = "") -> dict[str, Any]:
    tool_calls = [{"name": name, "args": args, "id": call_id} for name, args, call_id in calls]
    return {"generations": [[{"message": {"type": "ai", "content": text, "tool_calls": tool_calls}}]]}


ROOT_RUN = run("t", "chain", 0, inputs={"input": "q"}, outputs={"output": "a"})


def test_tool_runs_without_ids_answer_the_call_with_their_arguments_then_the_first_of_their_name() -> None:
    runs = [
        ROOT_RUN,
        run("l", "llm", 1, ROOT_RUN, outputs=llm_output(("w", {"c": 1}, None), ("w", {"c": 2}, None), ("x", {}, None))),
        run("w2", "tool", 2, ROOT_RUN, name="w", inputs={"c": 2}, outputs={"output": "two"}),  # finished first
        run("w1", "tool", 3, ROOT_RUN, name="w", inputs={"c": 1}, outputs={"output": "one"}),
        run("x", "tool", 4, ROOT_RUN, inputs={"other": True}, outputs={"output": {"ok": 1}}),
    ]
    (trace,) = traces_from_langsmith(runs)
    assert trace.turns == [
        ImportedTurn(
            "q",
            "a",
            [
                {"tool_name": "w", "parameters": {"c": 1}, "step": 1, "result": "one"},
                {"tool_name": "w", "parameters": {"c": 2}, "step": 1, "result": "two"},
                {"tool_name": "x", "parameters": {}, "step": 1, "result": {"ok": 1}},
            ],
        )
    ]
    assert trace.warnings == []


def test_a_tool_message_with_status_error_is_an_error_and_its_id_wins_over_order() -> None:
    message = {"type": "tool", "content": "Error: no such city", "tool_call_id": "b", "status": "error"}
    runs = [
        ROOT_RUN,
        run("l", "llm", 1, ROOT_RUN, outputs=llm_output(("w", {"c": 1}, "a"), ("w", {"c": 2}, "b"))),
        run("w", "tool", 2, ROOT_RUN, inputs={"c": 1}, outputs={"output": message}),
    ]
    (trace,) = traces_from_langsmith(runs)
    assert trace.turns[0].tools_used == [
        {"tool_name": "w", "parameters": {"c": 1}, "step": 1},
        {"tool_name": "w", "parameters": {"c": 2}, "step": 1, "result": "Error: no such city", "is_error": True},
    ]


def test_the_work_inside_a_tool_run_is_not_read_and_said() -> None:
    tool = run("w", "tool", 2, ROOT_RUN, extra={"tool_call_id": "a"}, outputs={"output": "done"})
    chain = run("chain", "chain", 4, tool)
    runs = [
        ROOT_RUN,
        run("l", "llm", 1, ROOT_RUN, outputs=llm_output(("w", {}, "a"))),
        tool,
        run("inner", "llm", 3, tool, outputs=llm_output(("search", {}, "z"))),
        chain,
        run("deeper", "tool", 5, chain, name="search"),
    ]
    (trace,) = traces_from_langsmith(runs)
    assert trace.turns[0].tools_used == [{"tool_name": "w", "parameters": {}, "step": 1, "result": "done"}]
    assert trace.warnings == [
        "runs[3]: llm run inside the tool run runs[2]; the tool's own work, not read",
        "runs[5]: tool run inside the tool run runs[2]; the tool's own work, not read",
    ]


def test_without_dotted_order_runs_are_read_by_start_time_and_traces_found_by_parent() -> None:
    runs = [
        {
            "id": "t",
            "run_type": "chain",
            "name": "agent",
            "start_time": "2025-01-01T00:00:00",
            "inputs": {"input": "q"},
        },
        {
            "id": "w",
            "run_type": "tool",
            "parent_run_id": "t",
            "start_time": "2025-01-01T00:00:02",
            "name": "f",
            "outputs": {"output": 1},
        },
        {
            "id": "l",
            "run_type": "llm",
            "parent_run_id": "t",
            "start_time": "2025-01-01T00:00:01",
            "outputs": llm_output(("f", {}, "c"), text="ok"),
        },
    ]
    (trace,) = traces_from_langsmith(runs)
    assert (trace.trace_id, trace.assistant_id) == ("t", "agent")
    assert trace.turns == [ImportedTurn("q", "ok", [{"tool_name": "f", "parameters": {}, "step": 1, "result": 1}])]
    assert trace.warnings == ["runs[0]: runs of this trace lack dotted_order; read in start_time order"]


def test_a_trace_is_found_by_its_dotted_order_and_a_missing_root_is_said() -> None:
    root_id, child_id = "01950000-0000-7000-8000-000000000001", "01950000-0000-7000-8000-000000000002"
    child = {
        "id": child_id,
        "run_type": "llm",
        "parent_run_id": root_id,
        "dotted_order": f"20250101T000000000000Z{root_id}.20250101T000001000000Z{child_id}",
        "inputs": {"messages": [[{"type": "human", "data": {"content": "q"}}]]},
        "outputs": {"choices": [{"message": {"role": "assistant", "content": "a"}}]},
    }
    (trace,) = traces_from_langsmith([child])
    assert (trace.trace_id, trace.turns) == (root_id, [ImportedTurn("q", "a")])
    assert trace.warnings == ["runs[0]: the trace's root run is not in the input; this run stands for it"]


@pytest.mark.parametrize(
    ("outputs", "answer", "warnings"),
    [
        (
            {"choices": [{"message": {"role": "assistant", "content": "a"}}, {"message": {}}]},
            "a",
            ["runs[1].outputs: 2 candidate messages; the first is read"],
        ),
        ({"message": {"role": "assistant", "content": [{"type": "text", "text": "a"}]}}, "a", []),
        ({"messages": [{"role": "assistant", "content": "x"}, {"type": "ai", "content": "a"}]}, "a", []),
        ({"generations": [{"text": "a"}]}, "a", []),
        ({"role": "assistant", "content": "a"}, "a", []),
        (
            None,
            "",
            [
                "runs[1].outputs: an llm run without outputs",
                "runs[0]: turn 0 ('q') has no final answer; judged as an empty answer",
            ],
        ),
    ],
    ids=["choices", "message", "messages", "completion", "bare-message", "none"],
)
def test_the_llm_output_shapes(outputs: Any, answer: str, warnings: list[str]) -> None:
    root = run("t", "chain", 0, inputs={"messages": [["system", "s"], "q"]})
    (trace,) = traces_from_langsmith([root, run("l", "llm", 1, root, outputs=outputs)])
    assert (trace.turns, trace.warnings) == ([ImportedTurn("q", answer)], warnings)


@pytest.mark.parametrize(
    ("outputs", "answer"),
    [
        ({"messages": [{"type": "human", "content": "q"}, {"type": "ai", "content": "a"}]}, "a"),
        ({"output": {"lc": 1, "type": "constructor", "id": ["AIMessage"], "kwargs": {"content": "a"}}}, "a"),
        ({"answer": "a", "sources": ["x"]}, "a"),
        ({"text": "a", "score": 3}, "a"),
        ({"one": "b", "two": "c"}, "llm"),
    ],
    ids=["messages", "message-output", "answer-key", "only-text", "ambiguous"],
)
def test_the_answer_from_the_root_outputs_else_the_last_llm_text(outputs: dict[str, Any], answer: str) -> None:
    root = run("t", "chain", 0, inputs={"question": "q", "user": "ana"}, outputs=outputs)
    (trace,) = traces_from_langsmith([root, run("l", "llm", 1, root, outputs=llm_output(text="llm"))])
    assert trace.turns == [ImportedTurn("q", answer)]


def test_threads_join_traces_in_start_order_and_other_traces_stay_apart() -> None:
    def turn(trace_id: str, second: int, query: str, thread: str | None) -> dict[str, Any]:
        metadata = {"conversation_id": thread} if thread else {}
        return {
            **run(trace_id, "chain", second, inputs={"input": query}, outputs={"output": query.upper()}),
            "trace_id": trace_id,
            "extra": {"metadata": metadata},
        }

    runs = [turn("t2", 5, "second", "c1"), turn("solo", 3, "alone", None), turn("t1", 1, "first", "c1")]
    traces = traces_from_langsmith(runs)
    assert [(t.trace_id, [turn.query for turn in t.turns]) for t in traces] == [
        ("c1", ["first", "second"]),
        ("solo", ["alone"]),
    ]
    assert traces[0].metadata == {"conversation_id": "c1"}


def test_calls_sharing_an_id_are_answered_in_call_order_and_said() -> None:
    runs = [
        ROOT_RUN,
        run("l", "llm", 1, ROOT_RUN, outputs=llm_output(("a", {"x": 1}, "call_0"), ("a", {"x": 2}, "call_0"))),
        # the second call's arguments, but the id wins: the first unanswered call with it
        run(
            "t1",
            "tool",
            2,
            ROOT_RUN,
            name="a",
            inputs={"x": 2},
            outputs={"output": "2"},
            extra={"tool_call_id": "call_0"},
        ),
        run(
            "t2",
            "tool",
            3,
            ROOT_RUN,
            name="a",
            inputs={"x": 1},
            outputs={"output": "1"},
            extra={"tool_call_id": "call_0"},
        ),
        run("t3", "tool", 4, ROOT_RUN, name="a", inputs={}, outputs={"output": "3"}, extra={"tool_call_id": "call_0"}),
    ]
    (trace,) = traces_from_langsmith(runs)
    assert trace.turns == [
        ImportedTurn(
            "q",
            "a",
            [
                {"tool_name": "a", "parameters": {"x": 1}, "step": 1, "result": 2},
                {"tool_name": "a", "parameters": {"x": 2}, "step": 1, "result": 1},
                {"tool_name": "a", "parameters": {}, "step": 2, "result": 3},
            ],
        )
    ]
    assert trace.warnings == [
        "runs[1].outputs.generations[0][0].message.tool_calls[1]: the tool call id 'call_0' is used by more than"
        " one call; tool runs with it answer them in call order",
        "runs[4]: a tool run that answers no model tool call; read as a call of its own",
    ]


def test_an_id_used_again_by_a_later_llm_run_after_its_answer_is_no_warning() -> None:
    runs = [
        ROOT_RUN,
        run("l1", "llm", 1, ROOT_RUN, outputs=llm_output(("a", {"x": 1}, "call_0"))),
        run(
            "t1",
            "tool",
            2,
            ROOT_RUN,
            name="a",
            inputs={"x": 1},
            outputs={"output": "1"},
            extra={"tool_call_id": "call_0"},
        ),
        run("l2", "llm", 3, ROOT_RUN, outputs=llm_output(("a", {"x": 2}, "call_0"))),
        run(
            "t2",
            "tool",
            4,
            ROOT_RUN,
            name="a",
            inputs={"x": 2},
            outputs={"output": "2"},
            extra={"tool_call_id": "call_0"},
        ),
    ]
    (trace,) = traces_from_langsmith(runs)
    assert [(c["parameters"], c["step"], c["result"]) for c in trace.turns[0].tools_used] == [
        ({"x": 1}, 1, 1),
        ({"x": 2}, 2, 2),
    ]
    assert trace.warnings == []


def test_ten_thousand_tool_runs_without_ids_answering_in_reverse_find_their_calls_by_arguments() -> None:
    calls = [("a", {"x": n}, f"c{n}") for n in range(10_000)]
    runs = [ROOT_RUN, run("l", "llm", 1, ROOT_RUN, outputs=llm_output(*calls))]
    for n in reversed(range(10_000)):
        runs.append({**run(f"t{n}", "tool", 2, ROOT_RUN, name="a", inputs={"x": n}, outputs={"output": n})})
    (trace,) = traces_from_langsmith(runs)
    assert trace.turns[0].tools_used == [
        {"tool_name": "a", "parameters": {"x": n}, "step": 1, "result": n} for n in range(10_000)
    ]
    assert trace.warnings == []


def test_arguments_that_are_not_json_equal_nothing_even_nested_too_deep() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert _canonical(deep, parse=True) is None
    assert _canonical("{", parse=True) is None
    assert _canonical(deep, parse=False) == json.dumps(deep)  # text inputs are text
    assert _canonical('{"b": 1, "a": [1.0]}', parse=True) == _canonical({"a": [1.0], "b": 1}, parse=False)


def test_a_chain_of_ten_thousand_runs_linked_by_parent_only_is_one_trace() -> None:
    runs = [
        {"id": "r0", "run_type": "chain", "name": "agent", "inputs": {"input": "hi"}, "outputs": {"output": "done"}}
    ]
    runs += [{"id": f"r{n}", "run_type": "chain", "parent_run_id": f"r{n - 1}"} for n in range(1, 10_000)]
    (trace,) = traces_from_langsmith(runs[::-1])  # children first: every walk up is long
    assert (trace.trace_id, trace.turns) == ("r0", [ImportedTurn("hi", "done")])
    assert trace.warnings == [
        "runs[9999]: runs of this trace lack dotted_order, and runs[9999].start_time is not an ISO 8601 time;"
        " read in input order, the root first"
    ]


def test_runs_in_a_parent_cycle_are_one_trace_closed_by_the_first_run_read() -> None:
    runs = [
        {"id": "b", "run_type": "chain", "parent_run_id": "a", "inputs": {"input": "q"}, "outputs": {"output": "y"}},
        {"id": "a", "run_type": "llm", "parent_run_id": "b", "outputs": llm_output(text="x")},
    ]
    (trace,) = traces_from_langsmith(runs)
    assert (trace.trace_id, trace.turns) == ("b", [ImportedTurn("q", "y")])
    assert trace.warnings == [
        "runs[0]: the trace's root run is not in the input; this run stands for it",
        "runs[0]: runs of this trace lack dotted_order, and runs[0].start_time is not an ISO 8601 time; read in"
        " input order, the root first",
    ]


def _timed(run_id: str, run_type: str, start: Any, **fields: Any) -> dict[str, Any]:
    return {"id": run_id, "run_type": run_type, "start_time": start, **fields}


def test_start_times_are_compared_as_times_in_utc_not_as_text() -> None:
    runs = [
        _timed("t", "chain", "2025-01-01T10:00:00Z", name="agent", inputs={"input": "q"}),
        _timed("w", "tool", "2025-01-01T10:00:00.5Z", parent_run_id="t", name="f", outputs={"output": 1}),
        _timed("l", "llm", "2025-01-01T12:00:00.25+02:00", parent_run_id="t", outputs=llm_output(("f", {}, "c"))),
        _timed("e", "llm", "2025-01-01T10:00:01", parent_run_id="t", outputs=llm_output(text="ok")),
    ]
    (trace,) = traces_from_langsmith(runs)
    assert trace.turns == [ImportedTurn("q", "ok", [{"tool_name": "f", "parameters": {}, "step": 1, "result": 1}])]
    assert trace.warnings == ["runs[0]: runs of this trace lack dotted_order; read in start_time order"]


def _thread_root(run_id: str, start: Any) -> dict[str, Any]:
    return _timed(
        run_id,
        "chain",
        start,
        trace_id=run_id,
        dotted_order=f"20250101T000000000000Z{run_id}",
        inputs={"input": run_id},
        outputs={"output": run_id.upper()},
        extra={"metadata": {"thread_id": "th"}},
    )


def test_thread_turns_are_ordered_by_root_start_time_in_utc() -> None:
    runs = [
        _thread_root("late", "2025-01-01T09:00:00Z"),
        _thread_root("early", "2025-01-01T10:00:00+02:00"),
        _thread_root("mid", "2025-01-01T08:30:00.5"),
    ]
    (trace,) = traces_from_langsmith(runs)
    assert [turn.query for turn in trace.turns] == ["early", "mid", "late"]
    assert trace.warnings == []


@pytest.mark.parametrize("start", [None, "yesterday", 1735722000, "2025-13-01T00:00:00Z"])
def test_a_thread_root_without_a_readable_start_time_keeps_the_input_order_and_says_so(start: Any) -> None:
    runs = [_thread_root("late", "2025-01-01T09:00:00Z"), _thread_root("early", start)]
    (trace,) = traces_from_langsmith(runs)
    assert [turn.query for turn in trace.turns] == ["late", "early"]
    assert trace.warnings == [
        "runs[1].start_time: not an ISO 8601 time; the traces of the thread 'th' are read in input order"
    ]


def test_a_run_without_a_readable_start_time_keeps_the_input_order_and_says_so() -> None:
    runs = [
        _timed("t", "chain", "2025-01-01T10:00:02Z", name="agent", inputs={"input": "q"}),
        _timed("l", "llm", "2025-01-01T10:00:03Z", parent_run_id="t", outputs=llm_output(("f", {}, "c"))),
        _timed("w", "tool", "not a time", parent_run_id="t", name="f", outputs={"output": 1}),
        _timed("e", "llm", "2025-01-01T10:00:00Z", parent_run_id="t", outputs=llm_output(text="ok")),
    ]
    (trace,) = traces_from_langsmith(runs)
    assert trace.turns == [ImportedTurn("q", "ok", [{"tool_name": "f", "parameters": {}, "step": 1, "result": 1}])]
    assert trace.warnings == [
        "runs[0]: runs of this trace lack dotted_order, and runs[2].start_time is not an ISO 8601 time; read in"
        " input order, the root first"
    ]


@pytest.mark.parametrize(
    ("runs", "field", "problem"),
    [
        (["x"], "runs[0]", "a run is an object"),
        ([{"run_type": "chain"}], "runs[0].id", "non-empty string"),
        ([{"id": "a"}], "runs[0].run_type", "must be a string"),
        ([ROOT_RUN, ROOT_RUN], "runs[1].id", "the run t is also runs[0]"),
        ([{**ROOT_RUN, "child_runs": "x"}], "runs[0].child_runs", "must be a list"),
        (
            [{**ROOT_RUN, "child_runs": [{"id": "c", "run_type": 3}]}],
            "runs[0].child_runs[0].run_type",
            "must be a string",
        ),
        ([{**ROOT_RUN, "inputs": {"n": 1}}], "runs[0].inputs", "holds no query"),
        ([ROOT_RUN, run("l", "llm", 1, ROOT_RUN, outputs=[1])], "runs[1].outputs", "must be an object"),
        ([ROOT_RUN, run("l", "llm", 1, ROOT_RUN, outputs={"n": 1})], "runs[1].outputs", "holds no message"),
        (
            [ROOT_RUN, run("l", "llm", 1, ROOT_RUN, outputs={"message": {"role": "user", "content": "x"}})],
            "runs[1].outputs.message",
            "not an AI message",
        ),
        (
            [ROOT_RUN, run("l", "llm", 1, ROOT_RUN, outputs={"message": {"role": "x"}})],
            "runs[1].outputs.message.role",
            "not a LangChain message type",
        ),
        (
            [ROOT_RUN, run("l", "llm", 1, ROOT_RUN, outputs=llm_output(("", {}, "1")))],
            "runs[1].outputs.generations[0][0].message.tool_calls[0]",
            "needs the tool's name",
        ),
        (
            [{**ROOT_RUN, "inputs": {"messages": [{"type": "human", "content": 3}]}}],
            "runs[0].inputs.messages[0].content",
            "must be a string",
        ),
    ],
    ids=[
        "not-an-object",
        "no-id",
        "no-run-type",
        "duplicate-id",
        "children-not-a-list",
        "bad-child",
        "no-query",
        "outputs-not-object",
        "no-message",
        "not-ai",
        "unknown-role",
        "nameless-call",
        "bad-query-content",
    ],
)
def test_an_unreadable_run_names_its_field(runs: list[Any], field: str, problem: str) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_langsmith(runs)
    assert raised.value.field == field
    assert problem in str(raised.value)


def test_the_example_joins_its_references_into_valid_datasets() -> None:
    traces = traces_from_langsmith(json.loads((ROOT / "examples" / "traces" / "langsmith_runs.json").read_text()))
    lines = (ROOT / "examples" / "traces" / "langsmith_runs.references.jsonl").read_text().splitlines()
    datasets, report = join_references(traces, [json.loads(line) for line in lines], task_key="metadata.task")
    assert report.problems() == []
    assert all(trace.warnings == [] for trace in traces)
    parsed = [Dataset.model_validate(dataset) for dataset in datasets]
    assert [(d.task_id, len(d.conversation)) for d in parsed] == [
        ("weather-paris", 1),
        ("compare-cities", 1),
        ("compare-cities", 1),
        ("budget", 2),
    ]
    assert parsed[3].session_id == "thread-budget-7"
    assert [call["step"] for call in traces[1].turns[0].tools_used] == [1, 1]  # parallel: one step
    assert [call["step"] for call in traces[2].turns[0].tools_used] == [1, 2]  # the other attempt: one at a time
    assert traces[3].turns[0].tools_used[0]["is_error"] is True
    assert traces[3].turns[1].query == "And between 3 people?"  # the new message, not the history


def test_ten_thousand_runs_import_in_order() -> None:
    runs: list[dict[str, Any]] = []
    for n in range(2500):
        root = {**run(f"r{n}", "chain", 0, inputs={"input": "q"}), "trace_id": f"r{n}"}
        llm = {**run(f"l{n}", "llm", 1, root, outputs=llm_output(("f", {"n": n}, None))), "trace_id": f"r{n}"}
        tool = {**run(f"f{n}", "tool", 2, root, name="f", inputs={"n": n}, outputs={"output": n}), "trace_id": f"r{n}"}
        end = {**run(f"e{n}", "llm", 3, root, outputs=llm_output(text="a")), "trace_id": f"r{n}"}
        runs += [end, tool, llm, root]
    traces = traces_from_langsmith(runs)  # its time: benchmarks/bench_import.py
    assert len(traces) == 2500
    assert traces[7].turns[0].tools_used == [{"tool_name": "f", "parameters": {"n": 7}, "step": 1, "result": 7}]
