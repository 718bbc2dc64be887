"""OpenTelemetry GenAI spans (OTLP JSON) → conversations: golden fixtures, rules, errors, the example."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import TraceError, join_references
from fair_forge_core.importers.otel_genai import traces_from_otel
from fair_forge_core.importers.otel_mcp import mcp_same_call
from fair_forge_core.importers.otel_spans import Span
from fair_forge_core.schemas import Dataset

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "unit" / "trace_fixtures" / "otel"
CASES = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_imports_to_its_expected_file(case: str) -> None:
    data = json.loads((FIXTURES / f"{case}.json").read_text())
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text())
    if isinstance(expected, dict) and "error" in expected:
        with pytest.raises(TraceError) as raised:
            traces_from_otel(data)
        assert raised.value.field == expected["error"]["field"]
        for text in expected["error"]["message_contains"]:
            assert text in str(raised.value)
        return
    assert [dataclasses.asdict(trace) for trace in traces_from_otel(data)] == expected


def test_the_fixtures_cover_the_cases_of_the_brief() -> None:
    assert set(CASES) >= {
        "parallel_calls",
        "tool_error",
        "invalid_arguments",
        "multi_turn",
        "content_absent",
        "old_events",
    }


# --- small OTLP builders for the rule tests (the fixtures above are written out in full) ---

TRACE = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
SPANS = "requests[0].resourceSpans[0].scopeSpans[0].spans"


def value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    return {"kvlistValue": {"values": attributes(v)}}


def attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": value(v)} for k, v in values.items()]


def span(number: int, attrs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "traceId": extra.pop("trace", TRACE),
        "spanId": f"{number:016x}",
        "startTimeUnixNano": str(1000 * number),
        "endTimeUnixNano": str(1000 * number + 500),
        "attributes": attributes(attrs),
        **extra,
    }


def chat(number: int, inputs: list[Any], outputs: list[Any], **attrs: Any) -> dict[str, Any]:
    content = {"gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs)}
    return span(number, {"gen_ai.operation.name": "chat", **content, **attrs})


def request(*spans: dict[str, Any], resource: dict[str, Any] | None = None) -> dict[str, Any]:
    resource_attributes = attributes(resource or {"service.name": "svc"})
    return {
        "resourceSpans": [{"resource": {"attributes": resource_attributes}, "scopeSpans": [{"spans": list(spans)}]}]
    }


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def call(call_id: str, name: str = "f", arguments: Any = None) -> dict[str, Any]:
    return {"role": "assistant", "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}]}


def response(call_id: str, result: Any) -> dict[str, Any]:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": result}]}


def tool(number: int, call_id: str | None, **attrs: Any) -> dict[str, Any]:
    status = attrs.pop("status", None)
    base = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f"}
    if call_id is not None:
        base["gen_ai.tool.call.id"] = call_id
    return span(number, {**base, **attrs}, **({"status": status} if status else {}))


U, A = text("user", "q"), text("assistant", "a")


def test_a_failed_tool_without_a_later_response_keeps_the_status_message_else_its_error_type() -> None:
    spans = [
        chat(1, [U], [call("1")]),
        tool(2, "1", status={"code": 2, "message": "timed out"}),
        chat(3, [U, call("1")], [call("2")]),
        tool(4, "2", **{"error.type": "KeyError"}),
        chat(5, [U, call("1"), call("2")], [A]),
    ]
    (trace,) = traces_from_otel(request(*spans))
    assert trace.turns[0].tools_used == [
        {"tool_name": "f", "parameters": {}, "step": 1, "result": "timed out", "is_error": True},
        {"tool_name": "f", "parameters": {}, "step": 2, "result": "KeyError", "is_error": True},
    ]


def test_an_input_holding_only_the_new_messages_or_a_window_of_the_history_counts_nothing_twice() -> None:
    u2, a2, u3 = text("user", "q2"), text("assistant", "a2"), text("user", "q3")
    spans = [chat(1, [U], [A]), chat(2, [u2], [a2]), chat(3, [u2, a2, u3], [text("assistant", "a3")])]
    (trace,) = traces_from_otel(request(*spans))
    assert [(t.query, t.answer) for t in trace.turns] == [("q", "a"), ("q2", "a2"), ("q3", "a3")]
    assert trace.warnings == []


def test_an_input_that_continues_nothing_read_so_far_is_said() -> None:
    spans = [chat(1, [U], [A]), chat(2, [text("user", "other"), text("assistant", "x"), text("user", "q2")], [A])]
    (trace,) = traces_from_otel(request(*spans))
    assert [t.query for t in trace.turns] == ["q", "other", "q2"]
    assert trace.warnings == [f"{SPANS}[1]: its input continues none of the conversation read so far"]


def test_a_bare_list_of_spans_with_structured_messages_is_read() -> None:
    spans = [span(1, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": [U], "gen_ai.output.messages": [A]})]
    (trace,) = traces_from_otel(spans)
    assert (trace.trace_id, trace.assistant_id, trace.turns[0].query) == (TRACE, "agent", "q")


def test_span_events_of_the_older_conventions_with_their_body_as_gen_ai_event_content() -> None:
    def event(name: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "attributes": attributes({"gen_ai.event.content": json.dumps(body)})}

    tool_calls = [{"id": "c1", "type": "function", "function": {"name": "g", "arguments": '{"x": 1}'}}]
    first = [
        event("gen_ai.user.message", {"role": "user", "content": "q"}),
        event("gen_ai.choice", {"index": 0, "message": {"content": "", "tool_calls": tool_calls}}),
    ]
    second = [
        event("gen_ai.user.message", {"role": "user", "content": "q"}),
        event("gen_ai.assistant.message", {"role": "assistant", "tool_calls": tool_calls}),
        event("gen_ai.tool.message", {"role": "tool", "content": "7", "tool_call_id": "c1"}),
        event("gen_ai.choice", {"index": 0, "message": {"content": "seven"}}),
        event("gen_ai.choice", {"index": 1, "message": {"content": "another choice"}}),
    ]
    spans = [span(1, {"gen_ai.operation.name": "chat"}, events=first), span(2, {}, events=second)]
    (trace,) = traces_from_otel(request(*spans))
    assert trace.turns[0].answer == "seven"
    assert trace.turns[0].tools_used == [{"tool_name": "g", "parameters": {"x": 1}, "step": 1, "result": 7}]
    assert trace.warnings == [f"{SPANS}[1]: 2 output choices; the first is read"]


def test_the_newer_details_event_gives_its_span_the_content() -> None:
    record = {
        "eventName": "gen_ai.client.inference.operation.details",
        "traceId": TRACE.upper(),  # hex is read in either case
        "spanId": f"{1:016x}",
        "attributes": attributes({"gen_ai.input.messages": json.dumps([U]), "gen_ai.output.messages": json.dumps([A])}),
    }
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [record, {"body": {"stringValue": "an app log"}}]}]}]}
    (trace,) = traces_from_otel([request(span(1, {"gen_ai.operation.name": "chat"})), logs])
    assert (trace.turns[0].query, trace.turns[0].answer) == ("q", "a")


def test_agent_spans_are_read_only_when_no_inference_span_has_content() -> None:
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bot"}
    content = {
        "gen_ai.input.messages": json.dumps([U]),
        "gen_ai.output.messages": json.dumps([text("assistant", "final")]),
    }
    (alone,) = traces_from_otel(request(span(1, {**agent, **content}), tool(2, None)))
    assert (alone.assistant_id, alone.turns[0].answer, alone.turns[0].tools_used[0]["tool_name"]) == (
        "bot",
        "final",
        "f",
    )
    (both,) = traces_from_otel(request(span(1, {**agent, **content}), chat(2, [U], [A])))
    assert both.turns[0].answer == "a"  # the inference span's, not the agent span's: nothing counted twice


def test_what_is_skipped_is_said_and_traces_without_genai_spans_are_named() -> None:
    other = span(9, {"http.route": "/health"}, trace="b" * 32)
    reasoning = {
        "role": "assistant",
        "parts": [{"type": "reasoning", "content": "hm"}, {"type": "text", "content": "a"}],
    }
    spans = [chat(1, [U], [reasoning, A]), span(2, {"gen_ai.operation.name": "embeddings"}), other]
    (trace,) = traces_from_otel(request(*spans))
    assert trace.warnings == [
        f"{SPANS}[0]: 2 output choices; the first is read",
        f"{SPANS}[0]: 1 spans of operation 'embeddings' skipped",
        f"{SPANS}[0]: 1 message parts of type 'reasoning' skipped",
        f"traces without any GenAI span skipped: {'b' * 32}",
    ]


def test_metadata_holds_the_resource_and_root_span_attributes_to_match_on() -> None:
    root = span(1, {"app.task": "t-1", "app.retries": 2, "gen_ai.input.messages": "[]"})
    child = chat(2, [U], [A], **{"gen_ai.conversation.id": "c-9", "gen_ai.agent.name": "bot"}, parentSpanId="x")
    (trace,) = traces_from_otel(request(root, {**child, "parentSpanId": f"{1:016x}"}))
    assert trace.metadata == {
        "service.name": "svc",
        "app.task": "t-1",
        "app.retries": 2,
        "gen_ai.agent.name": "bot",
        "gen_ai.conversation.id": "c-9",
        "trace_ids": [TRACE],
    }
    assert (trace.trace_id, trace.assistant_id) == ("c-9", "bot")


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        (request(span(1, {"gen_ai.input.messages": "[{"})), f"{SPANS}[0].attributes.gen_ai.input.messages", "not JSON"),
        (request(span(1, {"gen_ai.input.messages": "{}"})), f"{SPANS}[0].attributes.gen_ai.input.messages", "a list"),
        (
            request(span(1, {"gen_ai.output.messages": [{"role": "assistant"}]})),
            f"{SPANS}[0].attributes.gen_ai.output.messages[0]",
            "list of `parts`",
        ),
        (
            request({**span(1, {}), "attributes": [{"key": "n", "value": {"intValue": "x"}}]}),
            f"{SPANS}[0].attributes.n",
            "not the number",
        ),
        (request({**span(1, {}), "startTimeUnixNano": "soon"}), f"{SPANS}[0].startTimeUnixNano", "nanoseconds"),
        (request({**span(1, {}), "traceId": ""}), f"{SPANS}[0].traceId", "non-empty"),
        (
            request(chat(1, [U], [A]), tool(2, None, status={"code": 2})) | {"resourceSpans": "x"},
            "requests[0].resourceSpans",
            "list of objects",
        ),
        ([{"spans": []}], "requests[0]", "resourceSpans"),
        ("text", "requests", "OTLP/JSON"),
        (request(span(1, {"http.route": "/"})), "requests", "no GenAI span"),
        (
            request(chat(1, [U, response("9", "x")], [A])),
            f"{SPANS}[0].attributes.gen_ai.input.messages[1].parts[0]",
            "no tool call has the id '9'",
        ),
        (
            request(
                chat(
                    1,
                    [{"role": "robot", "parts": []}, U],
                    [{"role": "robot", "parts": [{"type": "text", "content": "x"}]}],
                )
            ),
            f"{SPANS}[0].attributes.gen_ai.output.messages[0].role",
            "unknown role",
        ),
        (request(chat(1, [A], [A])), f"{SPANS}[0].attributes.gen_ai.input.messages[0]", "before any user message"),
        (
            request(chat(1, [U], [call("1", name="")])),
            f"{SPANS}[0].attributes.gen_ai.output.messages[0].parts[0]",
            "tool's name",
        ),
    ],
    ids=[
        "not-json",
        "not-a-list",
        "no-parts",
        "bad-int",
        "bad-time",
        "no-trace-id",
        "bad-resource-spans",
        "not-a-request",
        "not-json-data",
        "no-genai",
        "unknown-call-id",
        "unknown-role",
        "no-user",
        "no-name",
    ],
)
def test_an_unreadable_input_names_the_field(data: Any, field: str, problem: str) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_otel(data)
    assert raised.value.field == field
    assert problem in str(raised.value)


def test_an_event_of_a_span_the_input_does_not_hold_is_an_error() -> None:
    record = {"eventName": "gen_ai.user.message", "traceId": TRACE, "spanId": "ff" * 8, "body": value({"content": "q"})}
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}
    with pytest.raises(TraceError) as raised:
        traces_from_otel([request(chat(1, [U], [A])), logs])
    assert raised.value.field == "requests[1].resourceLogs[0].scopeLogs[0].logRecords[0].body"
    assert "no span of the input" in str(raised.value)


def test_ten_thousand_spans_import_in_well_under_three_seconds() -> None:
    spans = []
    for n in range(2500):  # 2,500 traces of four spans: chat → tool → chat, and a span of no GenAI operation
        trace_id = f"{n:032x}"
        first = chat(1, [U], [call("c", arguments={"n": n})])
        second = chat(3, [U, call("c", arguments={"n": n}), response("c", n)], [A])
        spans += [{**first, "traceId": trace_id}, {**tool(2, "c"), "traceId": trace_id}]
        spans += [{**second, "traceId": trace_id}, span(4, {"http.route": "/"}, trace=trace_id)]
    long = [
        chat(
            n,
            [text("user", f"q{n - 1}"), text("assistant", f"a{n - 1}"), text("user", f"q{n}")],
            [text("assistant", f"a{n}")],
        )
        for n in range(2, 2502)
    ]
    data = [request(*spans), request(*[{**s, "traceId": "f" * 32} for s in long])]
    traces = traces_from_otel(data)  # its time: benchmarks/bench_import.py
    assert len(traces) == 2501
    assert (len(traces[-1].turns), traces[-1].turns[-1].query, traces[-1].warnings) == (2501, "q2501", [])


EXAMPLE = json.loads((ROOT / "examples" / "traces" / "otel_genai.json").read_text())
EXAMPLE_REFERENCES = [
    json.loads(line) for line in (ROOT / "examples" / "traces" / "otel_genai.references.jsonl").read_text().splitlines()
]


def test_the_example_joins_its_references_with_no_problem_and_gives_valid_datasets() -> None:
    traces = traces_from_otel(EXAMPLE)
    assert all(trace.warnings == [] for trace in traces)
    datasets, report = join_references(traces, EXAMPLE_REFERENCES, task_key="metadata.app.task")
    assert report.problems() == []
    parsed = [Dataset.model_validate(d) for d in datasets]
    assert [(d.session_id, d.task_id, len(d.conversation)) for d in parsed] == [
        ("4bf92f3577b34da6a3ce929d0e0e4736", "weather-paris", 1),
        ("4bf92f3577b34da6a3ce929d0e0e4737", "weather-paris", 1),  # a second attempt at the task
        ("4bf92f3577b34da6a3ce929d0e0e4738", "compare-cities", 1),
        ("conv-budget-7", "budget", 2),  # two traces of one conversation
    ]
    assert {d.assistant_id for d in parsed} == {"travel-agent"}
    budget = parsed[3].conversation
    assert [t.ground_truth_assistant for t in budget] == ["It cannot be split between 0 people", "40 EUR each"]
    error = budget[0].agentic.tools_used[0] if budget[0].agentic else None
    assert error is not None and (error.is_error, error.result) == (True, "Error: division by zero")
    steps = [c.step for c in parsed[2].conversation[0].agentic.tools_used] if parsed[2].conversation[0].agentic else []
    assert steps == [1, 1]


# --- inputs that once crashed the importer: each is a TraceError naming the field, or read ---


def _operation_as(raw: dict[str, Any]) -> dict[str, Any]:
    first = chat(1, [U], [A])
    first["attributes"] = [a for a in first["attributes"] if a["key"] != "gen_ai.operation.name"]
    first["attributes"].append({"key": "gen_ai.operation.name", "value": raw})
    return request(first)


def _log_event(name: Any, body: Any) -> dict[str, Any]:
    record = {"eventName": name, "traceId": TRACE, "spanId": f"{1:016x}", "body": body}
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        (
            _operation_as({"arrayValue": {"values": [{"stringValue": "chat"}]}}),
            f"{SPANS}[0].attributes.gen_ai.operation.name",
            "must be a string",
        ),
        (
            _operation_as({"stringValue": ["chat"]}),
            f"{SPANS}[0].attributes.gen_ai.operation.name",
            "must be a string",
        ),
        (
            [
                request(span(1, {"gen_ai.operation.name": "chat"})),
                _log_event("gen_ai.choice", value({"message": {"tool_calls": 5}})),
            ],
            "requests[1].resourceLogs[0].scopeLogs[0].logRecords[0].body.message.tool_calls",
            "a list of tool calls",
        ),
        (
            [
                request(span(1, {"gen_ai.operation.name": "chat"})),
                _log_event("gen_ai.assistant.message", value({"tool_calls": ["x"]})),
            ],
            "requests[1].resourceLogs[0].scopeLogs[0].logRecords[0].body.tool_calls[0]",
            "a tool call is an object",
        ),
        (
            request({**span(1, {}), "attributes": [{"key": "a", "value": {"arrayValue": "x"}}]}),
            f"{SPANS}[0].attributes.a",
            "arrayValue",
        ),
        (
            request({**span(1, {}), "attributes": [{"key": "a", "value": {"arrayValue": {"values": 5}}}]}),
            f"{SPANS}[0].attributes.a",
            "arrayValue",
        ),
        (
            request({**span(1, {}), "attributes": [{"key": "a", "value": {"kvlistValue": 3}}]}),
            f"{SPANS}[0].attributes.a",
            "kvlistValue",
        ),
        (
            request(span(1, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[" * 50_000})),
            f"{SPANS}[0].attributes.gen_ai.input.messages",
            "not JSON",
        ),
        (
            request(
                span(
                    1,
                    {"gen_ai.operation.name": "chat"},
                    events=[
                        {
                            "name": "gen_ai.user.message",
                            "attributes": attributes({"gen_ai.event.content": "[" * 50_000}),
                        }
                    ],
                )
            ),
            f"{SPANS}[0].events[0].attributes.gen_ai.event.content",
            "not JSON",
        ),
        (
            request({**span(1, {}), "startTimeUnixNano": float("inf")}),
            f"{SPANS}[0].startTimeUnixNano",
            "nanoseconds",
        ),
        (
            request({**span(1, {}), "attributes": [{"key": "n", "value": {"intValue": float("inf")}}]}),
            f"{SPANS}[0].attributes.n",
            "not the number",
        ),
    ],
    ids=[
        "operation-array",
        "operation-list-string",
        "tool-calls-not-a-list",
        "tool-call-not-an-object",
        "array-not-an-object",
        "array-values-not-a-list",
        "kvlist-not-an-object",
        "deep-json-attribute",
        "deep-json-event-content",
        "infinite-time",
        "infinite-int",
    ],
)
def test_a_malformed_value_is_a_trace_error_naming_the_field(data: Any, field: str, problem: str) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_otel(data)
    assert raised.value.field == field
    assert problem in str(raised.value)


def test_an_event_name_that_is_not_text_is_no_genai_event_and_is_ignored() -> None:
    weird_record = _log_event(["gen_ai.user.message"], value({"content": "x"}))
    weird_span_event = {"name": {"n": "gen_ai.user.message"}, "attributes": attributes({"content": "x"})}
    spans = [{**chat(1, [U], [A]), "events": [weird_span_event]}]
    (trace,) = traces_from_otel([request(*spans), weird_record])
    assert [(t.query, t.answer) for t in trace.turns] == [("q", "a")]


# --- tool spans without a call id, skipped parts, the overlap rule, late streams ---


def test_a_tool_span_without_a_call_id_answers_the_first_unanswered_call_of_its_name() -> None:
    weather = call("c1", "get_weather", {"city": "Paris"})
    spans = [
        chat(1, [U], [weather]),
        tool(2, None, **{"gen_ai.tool.name": "get_weather", "gen_ai.tool.call.result": "18C"}),
        chat(3, [U, weather], [A]),
    ]
    (trace,) = traces_from_otel(request(*spans))
    assert trace.turns[0].tools_used == [
        {"tool_name": "get_weather", "parameters": {"city": "Paris"}, "step": 1, "result": "18C"}
    ]
    assert trace.warnings == []


def test_a_tool_span_without_a_call_id_prefers_the_call_with_equal_arguments() -> None:
    both = {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}},
            {"type": "tool_call", "name": "get_weather", "arguments": '{"city": "Rome"}'},  # no id either
            {"type": "tool_call", "id": "c3", "name": "get_weather", "arguments": {"city": "Oslo"}},
        ],
    }
    run = {"gen_ai.tool.name": "get_weather"}
    spans = [
        chat(1, [U], [both]),
        tool(2, None, **run, **{"gen_ai.tool.call.arguments": '{"city":"Rome"}', "gen_ai.tool.call.result": "20C"}),
        tool(3, None, **run, **{"gen_ai.tool.call.arguments": {"city": "Lima"}, "gen_ai.tool.call.result": "25C"}),
        tool(4, None, **run, **{"gen_ai.tool.call.result": "2C"}),
        tool(5, None, **run, **{"gen_ai.tool.call.result": "late"}),
        tool(6, None, **{"gen_ai.tool.name": "get_time", "gen_ai.tool.call.result": "noon"}),
        chat(7, [U, both], [A]),
    ]
    (trace,) = traces_from_otel(request(*spans))
    assert trace.turns[0].tools_used == [
        {"tool_name": "get_weather", "parameters": {"city": "Paris"}, "step": 1, "result": "25C"},
        {"tool_name": "get_weather", "parameters": {"city": "Rome"}, "step": 1, "result": "20C"},
        {"tool_name": "get_weather", "parameters": {"city": "Oslo"}, "step": 1, "result": "2C"},
        {"tool_name": "get_weather", "parameters": {}, "step": 2, "result": "late"},
        {"tool_name": "get_time", "parameters": {}, "step": 3, "result": "noon"},
    ]
    assert trace.warnings == [
        f"{SPANS}[4]: a tool run no model output asked for; read as a step of its own",
        f"{SPANS}[5]: a tool run no model output asked for; read as a step of its own",
    ]


def test_a_tool_span_without_a_call_id_answers_no_call_of_an_earlier_turn() -> None:
    u2 = text("user", "q2")
    spans = [
        chat(1, [U], [call("c1")]),
        chat(2, [U, call("c1"), A, u2], [text("assistant", "a2")]),
        tool(3, None, **{"gen_ai.tool.call.result": "r"}),
    ]
    (trace,) = traces_from_otel(request(*spans))
    assert [t.tools_used for t in trace.turns] == [
        [{"tool_name": "f", "parameters": {}, "step": 1}],
        [{"tool_name": "f", "parameters": {}, "step": 1, "result": "r"}],
    ]
    assert trace.warnings == [f"{SPANS}[2]: a tool run no model output asked for; read as a step of its own"]


def test_a_message_resent_without_its_skipped_parts_is_not_read_twice() -> None:
    thought = {"type": "reasoning", "content": "I should call the tool"}
    weather = {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}}
    spans = [
        chat(1, [U], [{"role": "assistant", "parts": [thought, weather]}]),
        chat(2, [U, {"role": "assistant", "parts": [weather]}, response("c1", "18C")], [text("assistant", "18C")]),
    ]
    (trace,) = traces_from_otel(request(*spans))
    assert [(t.query, t.answer) for t in trace.turns] == [("q", "18C")]
    assert trace.turns[0].tools_used == [
        {"tool_name": "get_weather", "parameters": {"city": "Paris"}, "step": 1, "result": "18C"}
    ]
    assert trace.warnings == [f"{SPANS}[0]: 1 message parts of type 'reasoning' skipped"]


@pytest.mark.parametrize(
    ("history", "keys", "expected"),
    [
        ([], ["a"], 0),
        (["a"], [], 0),
        (["a", "b"], ["a", "b", "c"], 2),  # the whole history resent
        (["a", "b", "c"], ["b", "c", "d"], 2),  # a window of it
        (["a", "b", "c"], ["d"], 0),  # only the new messages
        (["a", "b", "a", "b", "a"], ["a", "b", "a", "b", "a", "c"], 5),
        (["x", "a", "b", "a"], ["a", "b", "a", "b", "c"], 3),  # the longest run, not the first match
        (["a", "a", "b", "a", "a"], ["a", "a", "a"], 2),
        (["a", "b"], ["b"], 1),
        (["c", "a", "b"], ["a", "b"], 2),  # the input is the history's end
        (["a", "b", "c"], ["a", "b"], 0),  # the history does not end with it
    ],
)
def test_the_overlap_is_the_longest_run_the_history_ends_with_and_the_input_starts_with(
    history: list[str], keys: list[str], expected: int
) -> None:
    from fair_forge_core.importers.otel_genai import _overlap

    assert _overlap(history, keys) == expected


def test_two_inputs_of_ten_thousand_different_messages_each_are_read_once_each() -> None:
    first = [text("user", f"0-{n}") for n in range(10_000)]
    second = [text("user", f"1-{n}") for n in range(10_000)]
    (trace,) = traces_from_otel(request(chat(1, first, [A]), chat(2, second, [A])))
    assert [t.query for t in trace.turns] == [f"0-{n}" for n in range(10_000)] + [f"1-{n}" for n in range(10_000)]
    assert trace.warnings[0] == f"{SPANS}[1]: its input continues none of the conversation read so far"


def test_no_genai_span_names_the_root_of_the_input_it_read() -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_otel([span(1, {"http.route": "/"})])
    assert raised.value.field == "spans"
    with pytest.raises(TraceError) as raised:
        traces_from_otel([request(span(1, {"http.route": "/"}))])
    assert raised.value.field == "requests"


def test_a_tool_span_that_starts_before_its_chat_span_ends_is_read_after_that_output() -> None:
    streamed = {**chat(1, [U], [call("c1")]), "endTimeUnixNano": "5000"}  # the stream closed late
    inside = {**tool(2, "c1", **{"gen_ai.tool.call.result": "r1"}), "startTimeUnixNano": "2000"}
    spans = [streamed, inside, chat(6, [U, call("c1")], [call("c2")])]
    spans += [{**tool(7, None, **{"gen_ai.tool.call.result": "r2"}), "startTimeUnixNano": "6200"}]
    spans += [chat(8, [U, call("c1"), call("c2")], [A])]
    (trace,) = traces_from_otel(request(*spans))
    assert trace.turns[0].tools_used == [
        {"tool_name": "f", "parameters": {}, "step": 1, "result": "r1"},
        {"tool_name": "f", "parameters": {}, "step": 2, "result": "r2"},
    ]
    assert trace.warnings == []


def test_values_nested_deeper_than_python_recursion_are_a_trace_error_on_the_root() -> None:
    deep: dict[str, Any] = {"stringValue": "x"}
    for _ in range(2000):
        deep = {"arrayValue": {"values": [deep]}}
    with pytest.raises(TraceError) as raised:
        traces_from_otel([{**chat(1, [U], [A]), "attributes": [{"key": "a", "value": deep}]}])
    assert (raised.value.field, "nested too deeply" in str(raised.value)) == ("spans", True)


def test_base64_ids_are_read_as_the_hex_of_their_bytes_and_case_still_tells_them_apart() -> None:
    # Two 16-byte ids as base64 (what protobuf-JSON mappings write), equal but for case: two byte strings.
    first, second = "AAAAAAAAAAAAAAAAAAAAAA==", "aaaaaaaaaaaaaaaaaaaaaa=="
    spans = [
        chat(1, [text("user", "q1")], [text("assistant", "a1")]) | {"traceId": first, "spanId": "AQIDBAUGBwg="},
        chat(2, [text("user", "q2")], [text("assistant", "a2")]) | {"traceId": second, "spanId": "aqidbaugbwg="},
    ]
    traces = traces_from_otel(request(*spans))
    second_hex = "69a69a69a69a69a69a69a69a69a69a69"  # base64 "aaaa" is the bytes 69 a6 9a
    assert [(t.trace_id, t.metadata["trace_ids"], t.turns[0].query, t.turns[0].trace_span) for t in traces] == [
        ("0" * 32, ["0" * 32], "q1", {"trace_id": "0" * 32, "span_id": "0102030405060708"}),
        (second_hex, [second_hex], "q2", {"trace_id": second_hex, "span_id": "6aa89d6daba06f08"}),
    ]
    assert not [w for t in traces for w in t.warnings if "not all hex" in w]


def test_ids_neither_hex_nor_base64_of_an_otlp_length_are_compared_as_written_and_said_once() -> None:
    first, second = "trace-A", "trace-a"  # equal but for case: two ids
    spans = [
        chat(1, [text("user", "q1")], [text("assistant", "a1")]) | {"traceId": first, "spanId": "s1"},
        chat(2, [text("user", "q2")], [text("assistant", "a2")]) | {"traceId": second, "spanId": "s2"},
    ]
    traces = traces_from_otel(request(*spans))
    assert [(t.trace_id, t.metadata["trace_ids"], t.turns[0].query) for t in traces] == [
        (first, [first], "q1"),
        (second, [second], "q2"),
    ]
    not_hex = [w for t in traces for w in t.warnings if "not all hex" in w]
    assert not_hex == [
        f"{SPANS}[0].traceId: trace and span ids are not all hex (OTLP JSON writes them as hex, protobuf JSON "
        "as the base64 of 16 or 8 bytes): ids are kept and compared exactly as written"
    ]


def test_hex_ids_are_kept_as_written_and_still_one_trace_in_either_case() -> None:
    upper = TRACE.upper()
    spans = [chat(1, [U], [call("1")]) | {"traceId": upper}, chat(2, [U, call("1")], [A])]
    (trace,) = traces_from_otel(request(*spans))
    assert (trace.trace_id, trace.metadata["trace_ids"], trace.warnings) == (upper, [upper], [])


def test_each_turn_keeps_the_span_its_answer_came_from_in_lower_case_hex() -> None:
    """old_events.json, read by hand: the answer is the `gen_ai.choice` log record of the second
    chat span (spanId 8000000000000002); the first span's choice holds only tool calls."""
    text = (FIXTURES / "old_events.json").read_text()
    (trace,) = traces_from_otel(json.loads(text))
    assert [turn.trace_span for turn in trace.turns] == [{"trace_id": "8e" * 16, "span_id": "8000000000000002"}]
    (upper,) = traces_from_otel(
        json.loads(text.replace("8e8e", "8E8E").replace("8000000000000002", "800000000000000A"))
    )
    assert upper.turns[0].trace_span == {"trace_id": "8e" * 16, "span_id": "800000000000000a"}
    # a base64 span id (a protobuf-JSON mapping) is read as the hex of its 8 bytes: the same span
    (base64,) = traces_from_otel(json.loads(text.replace("8000000000000002", "gAAAAAAAAAI=")))
    assert base64.turns[0].trace_span == trace.turns[0].trace_span
    assert trace.turns[0].answer == base64.turns[0].answer


# --- MCP tools/call spans (semantic-conventions docs/gen-ai/mcp.md) ---


def mcp(number: int, name: str = "f", **attrs: Any) -> dict[str, Any]:
    """An MCP client span of `tools/call` (mcp.md: `mcp.method.name` required, the tool in `gen_ai.tool.name`)."""
    extra = {key: attrs.pop(key) for key in ("parentSpanId", "status") if key in attrs}
    return span(number, {"mcp.method.name": "tools/call", "gen_ai.tool.name": name, **attrs}, **extra)


def test_an_mcp_span_not_linked_to_the_tool_span_whose_time_holds_it_is_the_same_call() -> None:
    outer = tool(2, "c1", **{"gen_ai.tool.call.result": "1"})
    outer["endTimeUnixNano"] = str(1000 * 4)  # holds span 3 (3000–3500)
    (trace,) = traces_from_otel(request(chat(1, [U], [call("c1")]), outer, mcp(3), chat(5, [U, call("c1")], [A])))
    assert trace.turns[0].tools_used == [{"tool_name": "f", "parameters": {}, "step": 1, "result": 1}]
    assert trace.warnings == [f"{SPANS}[0]: 1 MCP tools/call spans of a call another tool span records skipped"]


def test_an_mcp_span_of_another_tool_or_outside_the_tool_span_is_a_call_of_its_own() -> None:
    other_name = mcp(3, "g", **{"gen_ai.tool.call.result": "2"})  # inside span 2's time, but another tool
    later = mcp(5, **{"gen_ai.tool.call.result": "3"})  # after span 2 ended
    data = request(chat(1, [U], [call("c1")]), tool(2, "c1", **{"gen_ai.tool.call.result": "1"}), other_name, later)
    (trace,) = traces_from_otel(data)
    assert [(c["tool_name"], c["step"], c.get("result")) for c in trace.turns[0].tools_used] == [
        ("f", 1, 1),
        ("g", 2, 2),
        ("f", 3, 3),
    ]
    assert not any("MCP" in warning for warning in trace.warnings)


def test_an_mcp_span_alone_answers_its_call_and_its_tool_error_marks_it() -> None:
    # mcp.md: a CallToolResult with isError sets error.type to `tool_error`
    failed = mcp(2, **{"error.type": "tool_error", "gen_ai.operation.name": "execute_tool"})
    (trace,) = traces_from_otel(request(chat(1, [U], [call("c1")]), failed, chat(3, [U, call("c1")], [A])))
    assert trace.turns[0].tools_used == [
        {"tool_name": "f", "parameters": {}, "step": 1, "result": "tool_error", "is_error": True}
    ]
    assert trace.warnings == []


def test_an_mcp_server_span_under_its_client_span_is_one_call_and_a_parent_cycle_ends() -> None:
    client = mcp(2, parentSpanId=f"{3:016x}", **{"gen_ai.tool.call.result": "1"})
    server = mcp(3, parentSpanId=f"{2:016x}")  # a cycle: each is the other's parent
    (trace,) = traces_from_otel(request(chat(1, [U], [call("c1")]), client, server))
    assert len(trace.turns[0].tools_used) == 1
    assert trace.warnings[-1] == f"{SPANS}[0]: 2 MCP tools/call spans of a call another tool span records skipped"


class CountedSpan(Span):
    """A span that counts how often its `parentSpanId` is read (a parent look-up)."""

    reads = 0

    @property  # type: ignore[override]
    def parent_id(self) -> str:
        CountedSpan.reads += 1
        return self._parent_id

    @parent_id.setter
    def parent_id(self, value: str) -> None:
        self._parent_id = value


def test_mcp_spans_under_a_long_chain_walk_it_once_not_once_per_span() -> None:
    """Issue #32, item 4: 500 MCP `tools/call` spans under the bottom of a 500-span chain whose
    top is an `execute_tool` span: every one is the same call as that tool span's, found with a
    bounded number of parent look-ups per span (a walk per MCP span read 250,000)."""
    size = 500

    def counted(number: int, parent: int | None, **attrs: Any) -> CountedSpan:
        ids = (TRACE, f"{number:016x}", parent is None, number, number + 1)
        return CountedSpan(f"spans[{number}]", *ids, attrs, {}, False, "", parent_id=f"{parent:016x}" if parent else "")

    top = counted(1, None, **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f"})
    chain = [counted(2 + i, 1 + i) for i in range(size)]
    calls = [counted(2 + size + j, 1 + size, **{"mcp.method.name": "tools/call"}) for j in range(size)]
    CountedSpan.reads = 0
    same = mcp_same_call([top, *chain, *calls])
    assert same == {id(span): top for span in calls}
    assert CountedSpan.reads <= 3 * (1 + 2 * size)


def test_an_mcp_tool_error_under_its_execute_tool_span_marks_that_call_failed() -> None:
    """#37 item 3: the agent's `execute_tool` span around the MCP client's `tools/call` span
    whose CallToolResult had isError (mcp.md: `error.type` = `tool_error`): one call, the
    wrapper's, failed; its result the wrapper's when it has one, else the MCP span's."""
    wrapper = tool(2, "c1", **{"gen_ai.tool.call.result": "boom"})
    wrapper["endTimeUnixNano"] = "4000"
    child = mcp(3, parentSpanId=f"{2:016x}", **{"error.type": "tool_error"})
    (trace,) = traces_from_otel(request(chat(1, [U], [call("c1")]), wrapper, child, chat(5, [U, call("c1")], [A])))
    assert trace.turns[0].tools_used == [
        {"tool_name": "f", "parameters": {}, "step": 1, "result": "boom", "is_error": True}
    ]
    assert trace.warnings == [f"{SPANS}[0]: 1 MCP tools/call spans of a call another tool span records skipped"]
    # only the MCP span has the result (and the error, as status ERROR with its message)
    bare = tool(2, "c1")
    bare["endTimeUnixNano"] = "4000"
    failed = mcp(3, parentSpanId=f"{2:016x}", status={"code": 2, "message": "denied"})
    (alone,) = traces_from_otel(request(chat(1, [U], [call("c1")]), bare, failed, chat(5, [U, call("c1")], [A])))
    assert alone.turns[0].tools_used == [
        {"tool_name": "f", "parameters": {}, "step": 1, "result": "denied", "is_error": True}
    ]
    answered = mcp(3, parentSpanId=f"{2:016x}", **{"gen_ai.tool.call.result": "7"})
    (ok,) = traces_from_otel(request(chat(1, [U], [call("c1")]), bare, answered, chat(5, [U, call("c1")], [A])))
    assert ok.turns[0].tools_used == [{"tool_name": "f", "parameters": {}, "step": 1, "result": 7}]


def test_an_unlinked_mcp_span_merges_into_the_execute_tool_span_whose_time_holds_it() -> None:
    first = tool(2, None, **{"gen_ai.tool.call.result": "1"})  # 2000–2500: holds nothing
    outer = tool(3, None)
    outer["endTimeUnixNano"] = "6000"  # holds span 4 (4000–4500)
    inner = mcp(4, **{"error.type": "tool_error", "gen_ai.tool.call.result": "no such file"})
    both = {"role": "assistant", "parts": call("c1")["parts"] + call("c2")["parts"]}  # one step of two calls
    spans = [chat(1, [U], [both]), first, outer, inner, chat(7, [U, both], [A])]
    (trace,) = traces_from_otel(request(*spans))
    assert [(c.get("result"), c.get("is_error", False)) for c in trace.turns[0].tools_used] == [
        (1, False),
        ("no such file", True),
    ]


def test_a_chain_of_mcp_spans_each_under_the_last_all_merge_into_the_top_tool_span_in_one_walk() -> None:
    """500 MCP spans, each the child of the one before, under one `execute_tool` span: every one
    is that span's call, found with a bounded number of parent look-ups (a walk to the top per
    span read 125,000)."""
    size = 500

    def counted(number: int, parent: int | None, **attrs: Any) -> CountedSpan:
        ids = (TRACE, f"{number:016x}", parent is None, number, 10_000 - number)
        return CountedSpan(f"spans[{number}]", *ids, attrs, {}, False, "", parent_id=f"{parent:016x}" if parent else "")

    top = counted(1, None, **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f"})
    chain = [counted(2 + i, 1 + i, **{"mcp.method.name": "tools/call"}) for i in range(size)]
    CountedSpan.reads = 0
    assert mcp_same_call([top, *chain]) == {id(span): top for span in chain}
    assert CountedSpan.reads <= 3 * (1 + size)
