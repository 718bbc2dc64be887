"""The Langfuse SDK's spans, captured as the OTLP export Langfuse's exporter sends, → conversations
under `--from langfuse` (#37): `importers.langfuse_otlp`.

``langfuse_otlp_export.json`` is generated, not written: tests/fixtures/make_langfuse_fixtures.py
runs the agent of `tests.fixtures.weather_agent` under Langfuse's LangChain `CallbackHandler` and
encodes the spans it emitted with the OpenTelemetry SDK's own OTLP encoder (`encode_spans`,
then `MessageToDict`). The expected conversation is written from the agent's own script.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import TraceError, datasets_from_traces
from fair_forge_core.importers.langfuse import traces_from_langfuse
from fair_forge_core.importers.langfuse_otlp import observation
from fair_forge_core.importers.otel_spans import read_spans
from fair_forge_core.importers.trace import FormatTraceError
from tests.unit.test_importer_langfuse_observations import EXPECTED, conversation

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "traces"
EXPORT = json.loads((DATA / "langfuse_otlp_export.json").read_text())
PLAIN_GENAI = DATA / "shapes" / "otlp.json"  # an agent's GenAI spans: no langfuse.* attribute


def spans_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for r in request["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]


def attribute(span: dict[str, Any], key: str) -> Any:
    return next((a["value"] for a in span["attributes"] if a["key"] == key), None)


def test_the_otlp_export_of_the_callback_handler_is_the_conversation_the_agent_had() -> None:
    """Tool results as the tools returned them (the ToolMessage envelope unwrapped, the content
    blocks' text), the handled Oslo error `is_error`, the tokens the model reported."""
    assert "resourceSpans" in EXPORT and attribute(spans_of(EXPORT)[0], "langfuse.observation.type")
    traces = traces_from_langfuse(EXPORT)
    assert [conversation(trace) for trace in traces] == [
        {"trace_id": e["trace_id"], "turns": e["turns"]} for e in EXPECTED
    ]
    (trace,) = traces
    assert trace.turns[1].tools_used[0]["is_error"] is True
    assert trace.metadata.items() >= EXPECTED[0]["metadata"].items()
    assert trace.assistant_id == "weather-agent"  # the root span's name: the trace's name
    assert trace.warnings == []


def test_the_otlp_export_reads_to_the_turns_of_the_observations_pages_of_the_same_agent() -> None:
    """The same agent's run as the server's pages (another run: only the latencies differ)."""
    pages = json.loads((DATA / "langfuse_v2_observations_pages.json").read_text())
    (from_spans,), (from_pages,) = traces_from_langfuse(EXPORT), traces_from_langfuse(pages)

    def turns(trace: Any) -> list[dict[str, Any]]:
        read = [asdict(turn) for turn in trace.turns]
        for turn in read:
            assert turn["agent_usage"].pop("latency_s") >= 0
        return read

    assert (from_spans.trace_id, from_spans.assistant_id) == (from_pages.trace_id, from_pages.assistant_id)
    assert turns(from_spans) == turns(from_pages)
    assert from_spans.metadata["task"] == from_pages.metadata["task"]


def test_the_export_as_otlp_protobuf_reads_the_same() -> None:
    """What Langfuse's exporter puts on the wire (protobuf bytes) is read as its JSON is."""
    json_format = pytest.importorskip("google.protobuf.json_format")
    trace_service = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    message = json_format.ParseDict(EXPORT, trace_service.ExportTraceServiceRequest())
    from_bytes = traces_from_langfuse(message.SerializeToString())
    assert [conversation(t) for t in from_bytes] == [conversation(t) for t in traces_from_langfuse(EXPORT)]


def test_plain_genai_spans_under_langfuse_get_the_shape_message_naming_otel() -> None:
    with pytest.raises(TraceError) as raised:
        datasets_from_traces("langfuse", json.loads(PLAIN_GENAI.read_text()), [])
    assert raised.value.field == "traces"
    assert raised.value.problem.startswith(
        "this is an OTLP/JSON export request, not langfuse traces; read it with --from otel (GenAI spans)"
    )
    assert "no span has a langfuse.* attribute" in raised.value.problem


@pytest.mark.parametrize("trace_format", ["otel", "openinference"])
def test_the_langfuse_export_under_another_span_format_names_langfuse(trace_format: str) -> None:
    with pytest.raises(TraceError) as raised:
        datasets_from_traces(trace_format, EXPORT, [])
    assert raised.value.problem.endswith(
        "; these spans carry the Langfuse SDK's attributes (langfuse.*): read them with --from langfuse"
    )
    with pytest.raises(TraceError) as plain:  # spans without them: no such hint
        datasets_from_traces(trace_format, {"resourceSpans": []}, [])
    assert "langfuse" not in plain.value.problem


def test_an_error_in_langfuse_spans_is_their_own_naming_the_span_and_no_other_format() -> None:
    """A generation whose output is no message: the observations reader's error, on the span."""
    broken = copy.deepcopy(EXPORT)
    spans = spans_of(broken)
    n = next(
        n for n, s in enumerate(spans) if attribute(s, "langfuse.observation.type") == {"stringValue": "generation"}
    )
    next(a for a in spans[n]["attributes"] if a["key"] == "langfuse.observation.output")["value"] = {
        "stringValue": "[1]"
    }
    with pytest.raises(FormatTraceError) as raised:
        datasets_from_traces("langfuse", broken, [])
    assert raised.value.field == f"requests[0].resourceSpans[0].scopeSpans[0].spans[{n}].output"
    assert "the model's message" in raised.value.problem and "--from" not in raised.value.problem


def kv(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    typed = {str: "stringValue", bool: "boolValue", int: "intValue"}
    return [{"key": k, "value": {typed[type(v)]: str(v) if type(v) is int else v}} for k, v in attrs.items()]


def span(span_id: str, parent: str = "", status: dict[str, Any] | None = None, **attrs: Any) -> dict[str, Any]:
    return {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": span_id,
        "parentSpanId": parent,
        "name": f"span-{span_id[-1]}",
        "startTimeUnixNano": "1735689600000001000",
        "endTimeUnixNano": "1735689602500000000",
        "attributes": kv({k.replace("__", "."): v for k, v in attrs.items()}),
        "status": status or {},
    }


def test_each_span_is_the_observation_its_langfuse_attributes_say() -> None:
    """The fallbacks of the module docstring: level and status message from the span's status,
    the trace's input and output, the langfuse.* session and user over the plain ones, the
    observation's metadata over the trace's (JSON text decoded), a span without them a SPAN."""
    metadata = {"langfuse.trace.metadata.task": "t", "langfuse.trace.metadata.k": "trace"}
    metadata |= {"langfuse.observation.metadata.k": '"own"', "langfuse.observation.metadata.n": '{"a": 1}'}
    tool = span(
        "00000000000000b2",
        "00000000000000a1",
        {"code": "STATUS_CODE_ERROR", "message": "boom"},
        **{"langfuse.observation.type": "tool", "langfuse.trace.input": '"q"', "session.id": "plain"},
        **{"langfuse.session.id": "s", "user.id": "u", "langfuse.observation.usage_details": '{"input": 3}'},
        **metadata,
    )
    request = {"resourceSpans": [{"scopeSpans": [{"spans": [span("00000000000000a1"), tool]}]}]}
    plain, read = (observation(s) for s in read_spans(request)[0])
    assert read == {
        "id": "00000000000000b2",
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "parentObservationId": "00000000000000a1",
        "startTime": "2025-01-01T00:00:00.000001Z",
        "endTime": "2025-01-01T00:00:02.500000Z",
        "type": "TOOL",
        "name": "span-2",
        "isRootObservation": False,
        "level": "ERROR",
        "statusMessage": "boom",
        "input": '"q"',
        "output": None,
        "model": None,
        "sessionId": "s",
        "userId": "u",
        "environment": None,
        "release": None,
        "version": None,
        "tags": None,
        "metadata": {"task": "t", "k": "own", "n": {"a": 1}},
        "usageDetails": {"input": 3},
    }
    assert (plain["type"], plain["level"], plain["isRootObservation"], plain["parentObservationId"]) == (
        "SPAN",
        "DEFAULT",
        True,
        None,
    )


def test_the_trace_name_is_the_first_langfuse_trace_name_of_its_spans() -> None:
    root = span("00000000000000a1", **{"langfuse.observation.type": "agent", "langfuse.observation.input": "q"})
    root["attributes"] += kv({"langfuse.observation.output": "a"})
    child = span("00000000000000b2", "00000000000000a1", **{"langfuse.trace.name": "named"})
    (trace,) = traces_from_langfuse({"resourceSpans": [{"scopeSpans": [{"spans": [root, child]}]}]})
    assert (trace.assistant_id, trace.turns[0].query, trace.turns[0].answer) == ("named", "q", "a")
    assert trace.trace_id == "0af7651916cd43dd8448eb211c80319c"
