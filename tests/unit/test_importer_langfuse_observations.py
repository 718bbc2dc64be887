"""Langfuse v4 observations pages, and traces recorded by the real libraries, → conversations.

The fixtures in tests/data/traces/ are generated, not written: tests/fixtures/make_langfuse_fixtures.py
and make_openinference_fixtures.py run a small LangChain agent (`tests.fixtures.weather_agent`)
under Langfuse's `CallbackHandler` and OpenInference's `LangChainInstrumentor` and keep what
they emitted (``langfuse_sdk5_observations_pages.json``: the same script under SDK 5.2.0);
`langchain_weather_agent.expected.json` is the conversation from the agent's own
script (its queries, the calls its model made, what its tools returned, its answers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import ImportedTrace, TraceError
from fair_forge_core.importers.langfuse import traces_from_langfuse
from fair_forge_core.importers.openinference import traces_from_openinference

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "traces"
EXPECTED = json.loads((DATA / "langchain_weather_agent.expected.json").read_text())
LANGFUSE = [
    "langfuse_v2_observations_pages",
    "langfuse_v2_observations_snake",
    "langfuse_legacy_traces",
    "langfuse_sdk5_observations_pages",  # the same agent under SDK 5.2.0's handler and models
]


def conversation(trace: ImportedTrace) -> dict[str, Any]:
    """What the agent did, in the terms of the expected file (tokens: what its model reported)."""
    turns = []
    for turn in trace.turns:
        tokens = {k: v for k, v in (turn.agent_usage or {}).items() if k.endswith("_tokens")}
        turns.append({"query": turn.query, "answer": turn.answer, "tools_used": turn.tools_used, "tokens": tokens})
    return {"trace_id": trace.trace_id, "turns": turns}


@pytest.mark.parametrize("case", LANGFUSE)
def test_langfuse_recorded_by_its_langchain_handler_is_the_conversation_the_agent_had(case: str) -> None:
    """The tool results are what the tools returned (the ToolMessage envelope unwrapped; the
    content blocks' text), the handled error is `is_error`; pages cut inside a trace join."""
    traces = traces_from_langfuse(json.loads((DATA / f"{case}.json").read_text()))
    assert [conversation(trace) for trace in traces] == [
        {"trace_id": e["trace_id"], "turns": e["turns"]} for e in EXPECTED
    ]
    (trace,) = traces
    assert trace.metadata.items() >= EXPECTED[0]["metadata"].items()
    assert trace.warnings == []


def test_openinference_with_a_handled_tool_error_is_the_conversation_the_agent_had() -> None:
    """The TOOL span of the failed call is OK: its ToolMessage's `status: "error"` marks it."""
    data = json.loads((DATA / "openinference_langchain_agent.json").read_text())
    spans = [s for r in data["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]
    failed = [s for s in spans if s["name"] == "get_weather" and "Oslo" in json.dumps(s)]
    assert failed and all(s["status"].get("code", 0) != 2 for s in failed)  # the case the envelope rule is for
    traces = traces_from_openinference(data)
    assert [conversation(trace) for trace in traces] == [
        {"trace_id": e["trace_id"], "turns": e["turns"]} for e in EXPECTED
    ]


def test_the_generated_pages_are_what_the_sdk_reads_as_observations_pages() -> None:
    api = pytest.importorskip("langfuse.api")
    parse_obj_as = pytest.importorskip("langfuse.api.core.pydantic_utilities").parse_obj_as
    for page in json.loads((DATA / "langfuse_v2_observations_pages.json").read_text()):
        assert parse_obj_as(api.ObservationsV2Response, page).data
    for trace in json.loads((DATA / "langfuse_legacy_traces.json").read_text()):
        assert parse_obj_as(api.TraceWithFullDetails, trace).observations


def test_the_example_is_a_trace_body_as_the_sdk_reads_it() -> None:
    """examples/traces/langfuse_traces.json validates as the SDK's `TraceWithFullDetails` (the
    legacy `GET /api/public/traces/{traceId}` body: SDK 4.x, which requirements-dev.txt pins)."""
    api = pytest.importorskip("langfuse.api")
    parse_obj_as = pytest.importorskip("langfuse.api.core.pydantic_utilities").parse_obj_as
    traces = json.loads((ROOT / "examples" / "traces" / "langfuse_traces.json").read_text())
    assert [parse_obj_as(api.TraceWithFullDetails, trace).id for trace in traces] == [t["id"] for t in traces]


def row(number: int, kind: str, trace: str = "t1", **fields: Any) -> dict[str, Any]:
    """An `ObservationV2` with its core fields."""
    start = f"2025-01-01T00:00:{number:02d}Z"
    return {"id": f"o{number}", "traceId": trace, "startTime": start, "projectId": "p", "type": kind, **fields}


def page(*rows: dict[str, Any]) -> dict[str, Any]:
    return {"data": list(rows), "meta": {}}


SNAKE = {"id": "o0", "start_time": "2025-01-01T00:00:00Z", "type": "AGENT"}  # `model_dump`'s names
ASK = json.dumps({"role": "assistant", "content": "", "tool_calls": [{"name": "f", "args": {"x": 1}, "id": "c1"}]})


def test_a_trace_is_its_root_observation_s_input_output_and_metadata_and_sums_its_costs() -> None:
    root = row(0, "AGENT", isRootObservation=True, name="bot", input='"asked"', output="said", metadata={"task": "k"})
    root |= {"endTime": "2025-01-01T00:00:04Z", "sessionId": "s", "totalCost": 0.25}
    tool = row(2, "TOOL", name="f", input='{"x": 1}', output="42", parentObservationId="o0", totalCost=0.5)
    generation = row(1, "GENERATION", output=ASK, parentObservationId="o0", usageDetails={"input": 3, "output": 4})
    (trace,) = traces_from_langfuse(page(root, tool, generation))
    assert (trace.trace_id, trace.assistant_id) == ("s", "bot")
    assert (trace.turns[0].query, trace.turns[0].answer) == ("asked", "said")  # '"asked"' is JSON text
    assert trace.turns[0].tools_used == [{"tool_name": "f", "parameters": {"x": 1}, "step": 1, "result": 42}]
    assert trace.turns[0].agent_usage == {"cost_usd": 0.75, "latency_s": 4.0, "input_tokens": 3, "output_tokens": 4}
    assert trace.metadata == {"task": "k", "name": "bot", "sessionId": "s"}


def test_the_root_falls_back_to_the_first_without_a_parent_in_the_trace_and_text_that_is_no_json_stays() -> None:
    child = row(1, "SPAN", parentObservationId="o2", input="not me", output="no")
    orphan = row(2, "CHAIN", parentObservationId="elsewhere", input="42", output="[1, 2")
    (trace,) = traces_from_langfuse(page(child, orphan))
    assert (trace.turns[0].query, trace.turns[0].answer) == ("42", "[1, 2")


def test_observations_group_by_trace_across_pages_and_a_repeated_row_is_left_out_and_said() -> None:
    first = page(row(0, "AGENT", input="one", output="a"), row(1, "AGENT", trace="t2", input="two", output="b"))
    second = page(row(0, "AGENT", input="again", output="c"))
    traces = traces_from_langfuse([first, {"data": [], "meta": {}}, second])
    assert [(t.trace_id, t.turns[0].query) for t in traces] == [("t1", "one"), ("t2", "two")]
    assert traces[0].warnings == ["pages[2].data[0]: the observation 'o0' again; left out"]


def test_a_tool_message_with_status_error_is_an_error_though_the_observation_is_not() -> None:
    """The envelope rule in the legacy read too: level DEFAULT, the ToolMessage says error."""
    envelope = {"content": [{"type": "text", "text": "boom"}], "type": "tool", "tool_call_id": "c1", "status": "error"}
    generation = {"id": "g", "type": "GENERATION", "startTime": "2025-01-01T00:00:01Z", "output": json.loads(ASK)}
    tool = {"id": "t", "type": "TOOL", "name": "f", "startTime": "2025-01-01T00:00:02Z", "output": envelope}
    trace = {"id": "t", "timestamp": "2025-01-01T00:00:00Z", "input": "q", "output": "a"}
    (imported,) = traces_from_langfuse(trace | {"observations": [generation, tool]})
    assert imported.turns[0].tools_used == [
        {"tool_name": "f", "parameters": {"x": 1}, "step": 1, "result": "boom", "is_error": True}
    ]


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        (page(row(0, "AGENT", input="q"), row(1, "SPAN", trace="")), "data[1].traceId", "non-empty string"),
        ([page(row(0, "AGENT", input="q")), page(SNAKE | {"trace_id": 3})], "pages[1].data[0].traceId", "string"),
        (page(row(0, "AGENT", input={"a": 1, "b": 2})), "data[0].input", "holds no query"),
        ([page(), page()], "pages", "holds no observation"),
        (page(row(0, "AGENT"), row(1, "TOOL")), "data", "fields=core,basic,io"),
        (page(row(0, "AGENT", input="q"), row(1, "GENERATION", output="[1]")), "data[1].output", "the model's message"),
    ],
)
def test_an_unreadable_page_names_the_page_row_and_field(data: Any, field: str, problem: str) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_langfuse(data)
    assert raised.value.field == field
    assert problem in raised.value.problem


def test_a_snake_case_row_reads_as_its_camel_case_fields() -> None:
    (trace,) = traces_from_langfuse(page(SNAKE | {"trace_id": "t9", "input": "q", "output": "a", "session_id": "s9"}))
    assert (trace.trace_id, trace.turns[0].query) == ("s9", "q")
