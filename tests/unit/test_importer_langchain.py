"""LangChain messages (`messages_to_dict`, `dumpd`, `model_dump`) → conversations."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import ImportedTurn, TraceError, join_references
from fair_forge_core.importers.langchain_messages import traces_from_langchain
from fair_forge_core.schemas import Dataset

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "unit" / "trace_fixtures" / "langchain"
CASES = sorted(path.name.removesuffix(".json") for path in FIXTURES.glob("*.json") if ".expected" not in path.name)


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_imports_to_its_hand_written_expectation(case: str) -> None:
    data = json.loads((FIXTURES / f"{case}.json").read_text())
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text())
    assert [dataclasses.asdict(trace) for trace in traces_from_langchain(data)] == expected


def test_messages_serialised_by_langchain_itself_read_the_same_both_ways() -> None:
    """Real `langchain_core` objects, written by its `messages_to_dict` and `dumpd` (test-only use)."""
    from langchain_core.load import dumpd
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, messages_to_dict

    messages = [
        SystemMessage("Be brief."),
        HumanMessage("Weather in Lima and Oslo?"),
        AIMessage(
            content=[
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Lima"}},
            ],
            tool_calls=[
                {"name": "get_weather", "args": {"city": "Lima"}, "id": "t1"},
                {"name": "get_weather", "args": {"city": "Oslo"}, "id": "t2"},
            ],
            invalid_tool_calls=[{"name": "get_time", "args": "{city: Lima", "id": "t3", "error": None}],
        ),
        ToolMessage('{"temp_c": 22}', tool_call_id="t1", artifact={"raw": 22.4}),
        ToolMessage("Error: station offline", tool_call_id="t2", status="error"),
        AIMessage("Lima: 22 °C; Oslo is unknown."),
        HumanMessage([{"type": "text", "text": "Thanks!"}]),
        AIMessage("You're welcome."),
    ]
    expected = [
        ImportedTurn(
            query="Weather in Lima and Oslo?",
            answer="Lima: 22 °C; Oslo is unknown.",
            tools_used=[
                {"tool_name": "get_weather", "parameters": {"city": "Lima"}, "step": 1, "result": {"temp_c": 22}},
                {
                    "tool_name": "get_weather",
                    "parameters": {"city": "Oslo"},
                    "step": 1,
                    "result": "Error: station offline",
                    "is_error": True,
                },
                {"tool_name": "get_time", "parameters": {}, "step": 1, "unparsed_arguments": "{city: Lima"},
            ],
        ),
        ImportedTurn(query="Thanks!", answer="You're welcome."),
    ]
    for serialised, part in ((messages_to_dict(messages), "data"), ([dumpd(m) for m in messages], "kwargs")):
        (trace,) = traces_from_langchain(json.loads(json.dumps(serialised)))
        assert trace.turns == expected
        assert trace.warnings == [
            f"traces[2].{part}.invalid_tool_calls[0]: arguments are not a JSON object;"
            " kept as text in unparsed_arguments (no parameters)"
        ]


def ai(content: Any, **fields: Any) -> dict[str, Any]:
    return {"type": "ai", "data": {"content": content, **fields}}


HUMAN = {"type": "human", "data": {"content": "q"}}


def test_a_tool_use_block_in_no_tool_calls_is_read_as_a_call_and_said() -> None:
    blocks = [
        {"type": "tool_use", "id": "a", "name": "f", "input": {"x": 1}},
        {"type": "tool_use", "id": "b", "name": "g", "input": {"y": 2}},
        {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {"query": "lima"}},
    ]
    messages = [HUMAN, ai(blocks, tool_calls=[{"name": "f", "args": {"x": 1}, "id": "a"}]), ai("done")]
    (trace,) = traces_from_langchain(messages)
    assert trace.turns[0].tools_used == [
        {"tool_name": "f", "parameters": {"x": 1}, "step": 1},
        {"tool_name": "g", "parameters": {"y": 2}, "step": 1},
    ]
    assert trace.warnings == [
        "traces[1].data.content[1]: a tool_use block in no tool_calls; read as a call",
        "traces[1].data.content[2]: a tool the model provider ran itself ('web_search'); not read as a call",
    ]


def test_chat_messages_by_role_openai_style_messages_and_remove_messages() -> None:
    messages = [
        {"type": "chat", "data": {"content": "q", "role": "user"}},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "1", "content": "ok"},
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "RemoveMessage"],
            "kwargs": {"id": "m1"},
        },
        {
            "type": "ChatMessageChunk",
            "data": {"content": ["all ", {"type": "text", "text": "good"}], "role": "assistant"},
        },
    ]
    (trace,) = traces_from_langchain([{"id": "t", "messages": messages}])
    assert trace.turns == [
        ImportedTurn("q", "all good", [{"tool_name": "f", "parameters": {}, "step": 1, "result": "ok"}])
    ]
    assert trace.warnings == ["traces[0].messages[3]: a RemoveMessage (LangGraph state), skipped"]


@pytest.mark.parametrize(
    ("messages", "field", "problem"),
    [
        (
            [HUMAN, {"type": "tool", "data": {"tool_call_id": "9", "content": "x"}}],
            "traces[0].messages[1].data.tool_call_id",
            "no tool call has the id '9'",
        ),
        (
            [HUMAN, ai("", tool_calls=[{"args": {}, "id": "1"}])],
            "traces[0].messages[1].data.tool_calls[0]",
            "needs the tool's name",
        ),
        ([HUMAN, ai("", tool_calls=["f"])], "traces[0].messages[1].data.tool_calls[0]", "a tool call is an object"),
        ([HUMAN, ai("", tool_calls={"name": "f"})], "traces[0].messages[1].data.tool_calls", "must be a list"),
        ([HUMAN, ai(3)], "traces[0].messages[1].data.content", "must be a string"),
        ([ai("a")], "traces[0].messages[0]", "before any user message"),
        ([{"type": "system", "data": {"content": "s"}}], "traces[0]", "holds no user message"),
        ([HUMAN, {"type": "robot", "data": {}}], "traces[0].messages[1].type", "not a LangChain message type"),
        ([HUMAN, {"type": "human", "data": "hi"}], "traces[0].messages[1].data", "must be an object"),
        ([HUMAN, {"lc": 1, "type": "not_implemented", "id": ["x", "Y"]}], "traces[0].messages[1].type", "constructor"),
        (
            [HUMAN, {"lc": 1, "type": "constructor", "id": ["x", "Prompt"], "kwargs": {}}],
            "traces[0].messages[1].id",
            "not a LangChain",
        ),
        (
            [HUMAN, {"type": "chat", "data": {"role": "narrator", "content": "x"}}],
            "traces[0].messages[1].data.role",
            "not a LangChain",
        ),
        (
            [HUMAN, {"type": "function", "data": {"name": "f", "content": "x"}}],
            "traces[0].messages[1]",
            "FunctionMessage",
        ),
        ([HUMAN, "hello"], "traces[0].messages[1]", "a message is an object"),
    ],
    ids=[
        "unknown-call-id",
        "no-name",
        "call-not-object",
        "calls-not-list",
        "bad-content",
        "no-user",
        "no-user-message",
        "unknown-type",
        "data-not-object",
        "not-a-constructor",
        "unknown-class",
        "unknown-chat-role",
        "function-message",
        "not-an-object",
    ],
)
def test_an_unreadable_trace_names_the_field(messages: list[Any], field: str, problem: str) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_langchain([{"id": "t", "messages": messages}])
    assert raised.value.field == field
    assert problem in str(raised.value)


@pytest.mark.parametrize(
    ("trace", "field"),
    [
        ({"messages": {}}, "traces[0]"),
        ({"id": "", "messages": []}, "traces[0].id"),
        ({"messages": [], "metadata": "x"}, "traces[0].metadata"),
    ],
)
def test_a_malformed_trace_names_its_field(trace: dict[str, Any], field: str) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_langchain([trace])
    assert raised.value.field == field


def test_the_example_joins_its_references_into_valid_datasets() -> None:
    traces = traces_from_langchain(json.loads((ROOT / "examples" / "traces" / "langchain_messages.json").read_text()))
    lines = (ROOT / "examples" / "traces" / "langchain_messages.references.jsonl").read_text().splitlines()
    datasets, report = join_references(traces, [json.loads(line) for line in lines], task_key="metadata.task")
    assert report.problems() == []
    assert [trace.warnings for trace in traces] == [[], [], [], []]
    parsed = [Dataset.model_validate(dataset) for dataset in datasets]
    assert [(d.session_id, d.task_id, len(d.conversation)) for d in parsed] == [
        ("lc-run-001", "weather-paris", 1),
        ("lc-run-002", "compare-cities", 1),
        ("lc-run-003", "budget", 2),
        ("lc-run-004", "compare-cities", 1),
    ]
    assert [call["step"] for call in traces[1].turns[0].tools_used] == [1, 1]  # parallel: one step
    assert [call["step"] for call in traces[3].turns[0].tools_used] == [1, 2]  # the other attempt: one at a time
    assert traces[2].turns[0].tools_used[0]["is_error"] is True


def test_ten_thousand_messages_import_in_order() -> None:
    messages: list[Any] = []
    for n in range(2500):
        call = {"name": "f", "args": {"n": n}, "id": f"c{n}"}
        messages += [
            HUMAN,
            ai("", tool_calls=[call]),
            {"type": "tool", "data": {"content": "1", "tool_call_id": f"c{n}"}},
            ai("a"),
        ]
    (trace,) = traces_from_langchain(messages)  # its time: benchmarks/bench_import.py
    assert len(trace.turns) == 2500
