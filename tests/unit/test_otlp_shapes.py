"""OTLP spans in every shape (#37 item 1): tests/data/traces/shapes/, written by
tests/fixtures/make_otlp_shapes.py from the real OpenTelemetry SDK, opentelemetry-util-genai and
the mcp SDK, read by `--from otel` and `--from openinference` to the same conversations as the
OTLP/JSON original, which are what the script's agent did; and the decoders' own errors."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import TraceError, traces_from_openinference, traces_from_otel
from fair_forge_core.importers.otlp_shapes import looks_like_protobuf, otlp_json

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "tests" / "data" / "traces" / "shapes"
LOSSLESS = ["otlp.pb", "proto_camel.json", "proto_snake.json", "tempo_v1.json", "tempo_v2.json", "jaeger.json"]
PHOENIX = ["phoenix_otlpv1.json", "phoenix_spans.json"]  # Phoenix keeps no resource: metadata differs
IMPORTERS = {"otel": traces_from_otel, "openinference": traces_from_openinference}


def load(name: str, where: Path = SHAPES) -> Any:
    return (where / name).read_bytes() if name.endswith(".pb") else json.loads((where / name).read_text())


def turns(traces: list[Any]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(turn) for trace in traces for turn in trace.turns]


def without_where(warnings: list[str]) -> list[str]:
    """Warnings but the field they name (each shape names its own fields)."""
    return [w.partition(": ")[2] if w.startswith(("requests", "spans")) else w for w in warnings]


@pytest.mark.parametrize("importer", IMPORTERS)
@pytest.mark.parametrize("shape", LOSSLESS + PHOENIX)
def test_every_shape_reads_to_the_conversations_of_the_otlp_json_original(shape: str, importer: str) -> None:
    read = IMPORTERS[importer]
    original, decoded = read(load("otlp.json")), read(load(shape))
    assert turns(decoded) == turns(original)
    assert [(t.trace_id, t.assistant_id) for t in decoded] == [(t.trace_id, t.assistant_id) for t in original]
    assert [without_where(t.warnings) for t in decoded] == [without_where(t.warnings) for t in original]
    if shape in LOSSLESS:
        assert [t.metadata for t in decoded] == [t.metadata for t in original]


def test_the_otlp_json_original_is_what_the_agent_did_its_mcp_tool_error_marked() -> None:
    """agent.json is the agent's own record: the tool results as the MCP client returned them,
    and `is_error` where the CallToolResult had isError, which only the MCP server's
    `tools/call` span under the agent's execute_tool span records (#37 item 3)."""
    did = load("agent.json")
    (trace,) = traces_from_otel(load("otlp.json"))
    assert trace.trace_id == did["conversation"]
    assert [{k: t[k] for k in ("query", "answer", "tools_used")} for t in turns([trace])] == did["turns"]
    assert did["turns"][1]["tools_used"][0]["is_error"] is True


def test_the_script_writes_the_shapes_again_from_the_libraries(tmp_path: Path) -> None:
    """The fixtures are the script's: run again (offline, in-process MCP; in a process of its own,
    as it sets the global tracer provider), the agent did the same and every shape reads to it
    (times, and so bytes, are the run's own)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.fixtures.make_otlp_shapes", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    did = load("agent.json", tmp_path)
    assert did == load("agent.json")
    for shape in ["otlp.json", *LOSSLESS, *PHOENIX]:
        read = turns(traces_from_otel(load(shape, tmp_path)))
        assert [{k: t[k] for k in ("query", "answer", "tools_used")} for t in read] == did["turns"], shape


def test_phoenix_spans_have_the_keys_of_the_phoenix_clients_span_type() -> None:
    from phoenix.client.__generated__ import v1

    for span in load("phoenix_spans.json"):
        assert v1.Span.__required_keys__ <= span.keys() <= v1.Span.__required_keys__ | v1.Span.__optional_keys__
        assert span["context"].keys() == v1.SpanContext.__required_keys__


def test_otlp_json_is_passed_through_as_it_is() -> None:
    data = load("otlp.json")
    lines = [data, data]  # JSON Lines of requests
    assert otlp_json(data) is data
    assert otlp_json(lines) is lines  # no copy: the reader reads the input itself


def test_protobuf_is_recognised_by_its_content() -> None:
    raw = (SHAPES / "otlp.pb").read_bytes()
    assert looks_like_protobuf(raw)
    assert not looks_like_protobuf(b"\n{broken json")
    assert not looks_like_protobuf(b'{"resourceSpans": []}')
    with pytest.raises(TraceError) as raised:
        traces_from_otel(b"\n\xff\xff\xff")
    assert (raised.value.field, "OTLP protobuf" in raised.value.problem) == ("requests", True)


def jaeger(span: dict[str, Any], **trace: Any) -> dict[str, Any]:
    base = {"traceID": "ab", "spanID": "1", "operationName": "chat", "startTime": 1, "duration": 2}
    return {"data": [{"traceID": "ab", "spans": [base | span], "processes": {}, **trace}]}


def test_jaeger_ids_are_padded_and_its_special_tags_become_otlp_fields() -> None:
    tags = [
        {"key": "otel.status_code", "type": "string", "value": "ERROR"},
        {"key": "otel.status_description", "type": "string", "value": "boom"},
        {"key": "span.kind", "type": "string", "value": "client"},
        {"key": "gen_ai.usage.input_tokens", "type": "int64", "value": "7"},
        {"key": "internal.span.format", "type": "string", "value": "otlp"},
    ]
    logs = [{"timestamp": 3, "fields": [{"key": "event", "value": "gen_ai.choice"}, {"key": "x", "value": "y"}]}]
    refs = [{"refType": "FOLLOWS_FROM", "spanID": "9"}, {"refType": "CHILD_OF", "spanID": "2"}]
    ((request,),) = [otlp_json(jaeger({"tags": tags, "logs": logs, "references": refs, "processID": "p"}))]
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert (span["traceId"], span["spanId"], span["parentSpanId"]) == ("0" * 30 + "ab", "0" * 15 + "1", "0" * 15 + "2")
    assert (span["startTimeUnixNano"], span["endTimeUnixNano"], span["kind"]) == ("1000", "3000", 3)
    assert span["status"] == {"code": 2, "message": "boom"}
    assert span["attributes"] == {"gen_ai.usage.input_tokens": 7}
    assert span["events"] == [{"name": "gen_ai.choice", "timeUnixNano": "3000", "attributes": {"x": "y"}}]
    error_tag = [{"key": "error", "type": "bool", "value": True}]
    ((failed,),) = [otlp_json(jaeger({"tags": error_tag}))]
    assert failed["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["status"]["code"] == 2


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (jaeger({"spanID": "xyz"}), "requests[0].data[0].spans[0].spanID"),
        (jaeger({"startTime": "soon"}), "requests[0].data[0].spans[0].startTime"),
        (jaeger({"tags": [{"key": "n", "type": "int64", "value": "x"}]}), "requests[0].data[0].spans[0].tags[0].value"),
        (jaeger({"tags": {"k": "v"}}), "requests[0].data[0].spans[0].tags"),
        (jaeger({}, processes=[]), "requests[0].data[0].processes"),
        (
            {"data": [{"context": {"trace_id": "a", "span_id": "b"}, "span_kind": "LLM", "start_time": "noon"}]},
            "requests[0].data[0].start_time",
        ),
        ([{"context": "x", "span_kind": "LLM"}], "spans[0].context"),
        (
            {"batches": [{"instrumentationLibrarySpans": {"spans": []}}]},
            "requests[0].batches[0].instrumentationLibrarySpans",
        ),
        (
            {"resource_spans": [{"scope_spans": [{"spans": [{"span_id": "b"}]}]}]},
            "requests[0].resource_spans[0].scope_spans[0].spans[0].traceId",
        ),
    ],
)
def test_an_unreadable_field_of_a_shape_is_a_trace_error_naming_it(data: Any, field: str) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_otel(data)
    assert raised.value.field == field


def test_older_tempo_scope_spans_and_phoenix_times_to_the_nanosecond() -> None:
    span = {"traceId": "a" * 32, "spanId": "b" * 16, "startTimeUnixNano": "5"}
    ((tempo,),) = [otlp_json({"batches": [{"scopeSpans": [{"spans": [span]}]}]})]
    assert tempo["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"] == "5"
    phoenix = {"context": {"trace_id": "a", "span_id": "b"}, "span_kind": "UNKNOWN"}
    (read,) = otlp_json([phoenix | {"start_time": "1970-01-01T00:00:01.000000005+00:00"}])
    assert (read["startTimeUnixNano"], "openinference.span.kind" in read["attributes"]) == ("1000000005", False)
    (kind,) = otlp_json([phoenix | {"start_time": "1970-01-01T00:00:01", "span_kind": "LLM"}])
    assert (kind["startTimeUnixNano"], kind["attributes"]) == ("1000000000", {"openinference.span.kind": "LLM"})


def test_openinference_spans_in_the_phoenix_and_jaeger_shapes_read_as_the_otlp_json_does() -> None:
    """The OpenInference example (LLM, TOOL, CHAIN spans), put in the Phoenix and Jaeger shapes by
    the script's own mappings: `--from openinference` reads the same conversations; the Phoenix
    spans carry their kind in `span_kind` only, so putting it back is what makes them readable."""
    from tests.fixtures.make_otlp_shapes import _jaeger, _phoenix_otlpv1, _phoenix_spans

    original = json.loads((ROOT / "examples" / "traces" / "openinference_spans.json").read_text())
    wanted = turns(traces_from_openinference(original))
    for shaped in (_phoenix_spans(original), _phoenix_otlpv1(original), _jaeger(original)):
        assert turns(traces_from_openinference(shaped)) == wanted
    assert all("openinference.span.kind" not in span["attributes"] for span in _phoenix_spans(original))
