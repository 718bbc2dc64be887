"""What a traces file looks like, named in the error of the importer that cannot read it, with the
`--from` that reads it (#37 item 2): `trace_shapes.sniff_shape` and `datasets_from_traces`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import TraceError, datasets_from_traces
from fair_forge_core.importers import formats as formats_module
from fair_forge_core.importers.trace_shapes import SPAN_FORMATS, sniff_shape

SHAPES = Path(__file__).resolve().parents[1] / "data" / "traces" / "shapes"
LANGFUSE_OBSERVATIONS = {"data": [{"id": "o1", "traceId": "t1", "type": "GENERATION", "startTime": "x"}], "meta": {}}
SAMPLES: list[tuple[Any, str, tuple[str, ...]]] = [
    (b"\n\x02\x0a\x00", "OTLP protobuf (an ExportTraceServiceRequest)", SPAN_FORMATS),
    ({"resourceSpans": []}, "an OTLP/JSON export request", SPAN_FORMATS),
    ({"resource_spans": []}, "an OTLP protobuf JSON export request (proto field names)", SPAN_FORMATS),
    ({"batches": []}, "a Grafana Tempo trace export", SPAN_FORMATS),
    ({"trace": {"resourceSpans": []}}, "a Grafana Tempo trace export", SPAN_FORMATS),
    ({"traceId": "a", "spanId": "b"}, "an OTLP span", SPAN_FORMATS),
    ({"data": [{"traceID": "a", "spans": []}]}, "a Jaeger JSON export", SPAN_FORMATS),
    (
        {"data": [{"context": {}, "span_kind": "LLM"}]},
        "a Phoenix spans page (GET /v1/projects/{project}/spans)",
        SPAN_FORMATS,
    ),
    (
        {"data": [{"span_id": "b"}], "next_cursor": None},
        "a Phoenix OTLP spans page (GET /v1/projects/{project}/spans/otlpv1)",
        SPAN_FORMATS,
    ),
    (LANGFUSE_OBSERVATIONS, "a Langfuse observations page (GET /api/public/observations)", ("langfuse",)),
    ({"data": [{"id": "t", "observations": []}]}, "a Langfuse traces page", ("langfuse",)),
    ({"data": [{"object": "trace"}]}, "an OpenAI Agents export", ("openai-agents",)),
    ({"id": "t", "observations": []}, "a Langfuse trace", ("langfuse",)),
    ({"object": "trace.span", "span_data": {}}, "an OpenAI Agents trace or span", ("openai-agents",)),
    ({"id": "r", "run_type": "chain"}, "a LangSmith run", ("langsmith",)),
    ({"messages": [{"role": "user"}]}, "a message-list trace (chat-completions messages)", ("openai",)),
    ({"messages": [{"type": "human"}]}, "a message-list trace (LangChain messages)", ("langchain",)),
    ([{"context": {}, "span_kind": "LLM"}], "a list of Phoenix spans (arize-phoenix-client get_spans())", SPAN_FORMATS),
    ([{"id": "r", "run_type": "llm"}], "a LangSmith run list", ("langsmith",)),
    ([{"role": "user", "content": "hi"}], "a message list (chat-completions messages)", ("openai",)),
    ([{"lc": 1, "type": "constructor"}], "a message list (LangChain messages)", ("langchain",)),
    ([[{"role": "user"}]], "a list of message lists (chat-completions messages)", ("openai",)),
    ([{"span_id": "b"}], "a list of OTLP spans (proto field names)", SPAN_FORMATS),
    ([{"resourceSpans": []}], "a list whose first item is an OTLP/JSON export request", SPAN_FORMATS),
    ([{"id": "t", "observations": []}], "a list whose first item is a Langfuse trace", ("langfuse",)),
]


@pytest.mark.parametrize(("data", "name", "formats"), SAMPLES)
def test_each_shape_is_named_with_the_formats_that_read_it(data: Any, name: str, formats: tuple[str, ...]) -> None:
    shape = sniff_shape(data)
    assert shape is not None
    assert (shape.name, shape.formats) == (name, formats)


@pytest.mark.parametrize("data", [{}, [], "text", 3, [3], {"datasets": []}, [{"x": 1}], {"data": []}])
def test_what_fits_no_rule_is_no_shape(data: Any) -> None:
    assert sniff_shape(data) is None


def read_with(formats: tuple[str, ...]) -> str:
    if formats == SPAN_FORMATS:
        return "read it with --from otel (GenAI spans) or --from openinference (OpenInference spans)"
    return f"read it with --from {formats[0]}"


@pytest.mark.parametrize(("data", "name", "formats"), SAMPLES[1:])
def test_an_importer_that_refuses_a_shape_names_it_and_the_from_that_reads_it(
    data: Any, name: str, formats: tuple[str, ...]
) -> None:
    wrong = next(f for f in ("openai", "otel", "langsmith") if f not in formats)
    with pytest.raises(TraceError) as raised:
        datasets_from_traces(wrong, data, [])
    assert raised.value.field == "traces"
    assert raised.value.problem.startswith(f"this is {name}, not {wrong} traces; {read_with(formats)} (")


@pytest.mark.parametrize(
    ("shape", "wrong", "name"),
    [
        ("jaeger.json", "langfuse", "a Jaeger JSON export"),
        ("otlp.pb", "langsmith", "OTLP protobuf (an ExportTraceServiceRequest)"),
        ("tempo_v1.json", "openai-agents", "a Grafana Tempo trace export"),
        ("phoenix_otlpv1.json", "langchain", "a Phoenix OTLP spans page (GET /v1/projects/{project}/spans/otlpv1)"),
        ("phoenix_spans.json", "openai", "a list of Phoenix spans (arize-phoenix-client get_spans())"),
        ("proto_snake.json", "langfuse", "an OTLP protobuf JSON export request (proto field names)"),
    ],
)
def test_the_shapes_fixtures_refused_by_another_format_name_their_shape(shape: str, wrong: str, name: str) -> None:
    path = SHAPES / shape
    data = path.read_bytes() if path.suffix == ".pb" else json.loads(path.read_text())
    with pytest.raises(TraceError) as raised:
        datasets_from_traces(wrong, data, [])
    assert f"this is {name}, not {wrong} traces; {read_with(SPAN_FORMATS)}" in raised.value.problem


def test_a_format_of_the_shape_keeps_its_own_error_and_an_unknown_shape_the_importers() -> None:
    with pytest.raises(TraceError) as raised:
        datasets_from_traces("otel", {"resourceSpans": [{"scopeSpans": {"spans": []}}]}, [])
    assert raised.value.field == "requests[0].resourceSpans[0].scopeSpans"
    with pytest.raises(TraceError) as unknown:
        datasets_from_traces("langfuse", [{"x": 1}], [])
    assert "this is" not in unknown.value.problem


def test_an_importer_that_reads_nothing_of_another_shape_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(formats_module.IMPORTERS, "langfuse", lambda data: [])
    with pytest.raises(TraceError) as raised:
        datasets_from_traces("langfuse", {"resourceSpans": []}, [])
    assert raised.value.problem.endswith(f"{read_with(SPAN_FORMATS)} (no trace read)")
    assert datasets_from_traces("langfuse", [{"x": 1}], []) == ([], [], 0)  # no shape known: nothing said


@pytest.mark.parametrize("shape", sorted(p.name for p in SHAPES.glob("*.json") if p.name != "agent.json"))
def test_every_json_shape_given_to_evaluate_is_seen_as_a_traces_file(shape: str) -> None:
    from fair_forge_core.trace_formats import looks_like_traces

    assert looks_like_traces(json.loads((SHAPES / shape).read_text()))
