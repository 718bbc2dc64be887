"""What a real Phoenix server serves (#37: "a Phoenix server's REST page and client dicts"), written
by tests/fixtures/make_phoenix_server_fixtures.py (arize-phoenix 20.26.1, run in a virtual
environment of its own): the GenAI + MCP agent run of shapes/otlp.json and the OpenInference
example, POSTed to the server over OTLP/HTTP and read back as its ``/spans/otlpv1`` pages and as
`arize-phoenix-client`'s span dicts. Each reads to the conversations of the OTLP it was made from
(and the GenAI one to what the agent did, agent.json). They exposed two importer defects, fixed
since: an `AnyValue` field written as null read as the value, and the `metadata` Phoenix serves
flattened was dropped.

What the real pages are, unlike the mapped shapes/phoenix_otlpv1.json and phoenix_spans.json of
make_otlp_shapes.py: several pages chained by `next_cursor`, the last stored span first (not by
time), every span of kind SPAN_KIND_INTERNAL, times rounded (float) to about a µs, every
`AnyValue` field present (null but the one set), arrays kept arrays; Phoenix adds the
OpenInference attributes of a GenAI span (`openinference.span.kind`, `llm.*`, `tool.*`,
`session.id`; the client's `span_kind` LLM, TOOL, AGENT), and turns an OpenInference `metadata`
JSON text into `metadata.*` keys. `fair-forge convert` writes the original's requests from them.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import traces_from_otel
from tests.fixtures.make_otlp_shapes import _hex_ids
from tests.fixtures.make_phoenix_server_fixtures import _base64_ids, _project, _span_count
from tests.unit.test_otlp_shapes import IMPORTERS, ROOT, SHAPES, load, turns

TRACES = ROOT / "tests" / "data" / "traces"
EXAMPLE = ROOT / "examples" / "traces" / "openinference_spans.json"
GENAI = ["phoenix_server_otlpv1.json", "phoenix_server_spans.json"]  # in SHAPES, from otlp.json
OPENINFERENCE = ["phoenix_server_openinference_otlpv1.json", "phoenix_server_openinference_spans.json"]  # TRACES
CONVERSATION = ("query", "answer", "tools_used")  # tools_used: name, arguments, result, is_error


def conversations(traces: list[Any], keys: tuple[str, ...] = CONVERSATION) -> dict[str, list[dict[str, Any]]]:
    """Each trace's turns by its id (Phoenix serves the last stored span first: the order of the
    traces is the server's, the order of a conversation's turns the importer's own)."""
    return {t.trace_id: [{k: turn[k] for k in keys} for turn in turns([t])] for t in traces}


def original(name: str, importer: str) -> list[Any]:
    read = IMPORTERS[importer]
    return read(load("otlp.json")) if name in GENAI else read(json.loads(EXAMPLE.read_text()))


def served(name: str, importer: str) -> list[Any]:
    return IMPORTERS[importer](load(name, SHAPES if name in GENAI else TRACES))


CASES = [(name, "otel") for name in GENAI] + [(name, "openinference") for name in GENAI + OPENINFERENCE]


@pytest.mark.parametrize(("name", "importer"), CASES)
def test_what_phoenix_serves_reads_to_the_conversations_of_the_otlp_it_was_sent(name: str, importer: str) -> None:
    decoded, wanted = served(name, importer), original(name, importer)
    assert conversations(decoded) == conversations(wanted)
    assert sorted((t.trace_id, t.assistant_id) for t in decoded) == sorted((t.trace_id, t.assistant_id) for t in wanted)
    assert sum(len(turn["tools_used"]) for turn in turns(decoded)) == 2  # not nothing read on both sides


@pytest.mark.parametrize("name", GENAI)
def test_the_genai_run_served_by_phoenix_is_what_the_agent_did_its_mcp_tool_error_marked(name: str) -> None:
    did = load("agent.json")
    (trace,) = traces_from_otel(load(name))
    assert trace.trace_id == did["conversation"]
    assert conversations([trace])[trace.trace_id] == did["turns"]
    assert did["turns"][1]["tools_used"][0]["is_error"] is True


@pytest.mark.parametrize("name", ["phoenix_server_spans.json", "phoenix_server_openinference_spans.json"])
def test_the_clients_spans_read_to_the_whole_turns_token_counts_too(name: str) -> None:
    importer = "otel" if name in GENAI else "openinference"
    everything = ("query", "answer", "tools_used", "agent_usage")
    decoded, wanted = served(name, importer), original(name, importer)
    assert conversations(decoded, everything) == conversations(wanted, everything)
    assert all(turn["agent_usage"] for turn in turns(decoded))


@pytest.mark.parametrize("name", ["phoenix_server_otlpv1.json", "phoenix_server_openinference_otlpv1.json"])
def test_the_otlpv1_pages_read_to_the_whole_turns_token_counts_too(name: str) -> None:
    importer = "otel" if name in GENAI else "openinference"
    everything = ("query", "answer", "tools_used", "agent_usage")
    assert conversations(served(name, importer), everything) == conversations(original(name, importer), everything)


@pytest.mark.parametrize("name", OPENINFERENCE)
def test_the_openinference_metadata_phoenix_flattened_is_the_traces_metadata(name: str) -> None:
    def kept(traces: list[Any]) -> dict[str, Any]:
        return {t.trace_id: {k: t.metadata.get(k) for k in ("task", "final_state")} for t in traces}

    wanted = kept(original(name, "openinference"))
    assert wanted["sess-1"] == {"task": "order-status", "final_state": {"order": 42, "status": "shipped"}}
    assert kept(served(name, "openinference")) == wanted


def convert(path: Path, trace_format: str, references: Path, *task_key: str) -> dict[str, dict[str, Any]]:
    from tests.cli.test_cli import run_cli_in_process

    done = run_cli_in_process("convert", path, "--from", trace_format, "--references", references, *task_key)
    assert done.returncode == 0, done.stderr
    return {d["session_id"]: d for d in json.loads(done.stdout)["datasets"]}


@pytest.mark.parametrize(("name", "importer"), [(GENAI[0], "otel"), (GENAI[1], "otel"), *CASES[-2:]])
def test_fair_forge_convert_writes_the_requests_of_the_otlp_original(name: str, importer: str, tmp_path: Path) -> None:
    """`fair-forge convert FILE --from otel|openinference --references R` (tasks by trace id): the same
    datasets as the original's."""
    source = SHAPES / "otlp.json" if name in GENAI else EXAMPLE
    references = tmp_path / "references.jsonl"
    traces = original(name, importer)
    ids = [t.trace_id for t in traces]
    truths = [
        {"task_id": t.trace_id, "turn": n, "ground_truth_assistant": "ok"} for t in traces for n in range(len(t.turns))
    ]
    references.write_text("".join(json.dumps(truth) + "\n" for truth in truths))
    got = convert((SHAPES if name in GENAI else TRACES) / name, importer, references)
    wanted = convert(source, importer, references)
    assert got == wanted and sorted(got) == sorted(ids)


@pytest.mark.parametrize("name", OPENINFERENCE)
def test_fair_forge_convert_joins_phoenixs_openinference_spans_by_their_metadata_task(name: str) -> None:
    references = EXAMPLE.with_suffix(".references.jsonl")
    got = convert(TRACES / name, "openinference", references, "--task-key", "metadata.task")
    assert {d["task_id"] for d in got.values()} == {"order-status", "return-policy"}


def spans_of_pages(pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [span for page in pages for span in page["data"]]


@pytest.mark.parametrize(("name", "where", "source"), [(GENAI[0], SHAPES, None), (OPENINFERENCE[0], TRACES, EXAMPLE)])
def test_the_otlpv1_pages_are_the_cursor_chained_pages_of_every_span_sent(name: str, where: Path, source: Any) -> None:
    pages = load(name, where)
    sent = json.loads(source.read_text()) if source else load("otlp.json")
    assert len(pages) > 1 and pages[-1]["next_cursor"] is None
    assert all(page["next_cursor"] for page in pages[:-1])
    spans = spans_of_pages(pages)
    wanted = [s for r in sent["resourceSpans"] for scope in r["scopeSpans"] for s in scope["spans"]]
    assert len(spans) == _span_count(sent) == len(wanted)
    assert {s["span_id"] for s in spans} == {s["spanId"] for s in wanted}
    # the last stored first: the order of the client's ids (``Span:N``, base64), the cursor the next one's
    client = load(name.replace("otlpv1", "spans"), where)
    stored = {c["context"]["span_id"]: int(base64.b64decode(c["id"]).decode().removeprefix("Span:")) for c in client}
    order = [stored[s["span_id"]] for s in spans]
    assert order == sorted(order, reverse=True)
    assert [page["next_cursor"] for page in pages[:-1]] == [
        base64.b64encode(f"Span:{stored[page['data'][-1]['span_id']] - 1}".encode()).decode() for page in pages[:-1]
    ]


def test_the_real_page_against_the_mapped_one_the_same_spans_in_another_form() -> None:
    """make_otlp_shapes.py's phoenix_otlpv1.json is one page of the same spans, its times exact and
    arrays flattened; the server's (module docstring) differs as this says."""
    mapped = {s["span_id"]: s for s in load("phoenix_otlpv1.json")["data"]}
    real = spans_of_pages(load("phoenix_server_otlpv1.json"))
    assert real and {s["span_id"] for s in real} == set(mapped)
    for span in real:
        was = mapped[span["span_id"]]
        same = ("trace_id", "parent_span_id", "name", "events")
        assert {k: span[k] for k in same} == {k: was[k] for k in same}
        assert span["status"]["code"] == was["status"]["code"]
        assert span.keys() - was.keys() == {
            "kind",
            "flags",
            "trace_state",
            "links",
            "dropped_attributes_count",
            "dropped_events_count",
            "dropped_links_count",
        }
        assert span["kind"] == "SPAN_KIND_INTERNAL"  # Phoenix keeps no CLIENT/SERVER kind
        for key in ("start_time_unix_nano", "end_time_unix_nano"):
            assert abs(span[key] - was[key]) < 1000  # rounded, not exact
        values = {a["key"]: a["value"] for a in span["attributes"]}
        assert all(len(value) == 7 for value in values.values())  # every AnyValue field, null but one
        plain = {k: next(v for v in value.values() if v is not None) for k, value in values.items()}
        for key, value in {a["key"]: a["value"] for a in was["attributes"]}.items():
            if key.endswith(".0"):  # mapped arrays are flattened; the server keeps an array_value
                (item,) = plain[key.removesuffix(".0")]["values"]
                assert item["string_value"] == next(iter(value.values()))
            else:
                assert plain[key] == next(iter(value.values())), key


def test_the_clients_spans_have_the_keys_of_its_span_type_and_phoenixs_kinds() -> None:
    from phoenix.client.__generated__ import v1

    genai = load("phoenix_server_spans.json")
    for span in genai + load("phoenix_server_openinference_spans.json", TRACES):
        assert v1.Span.__required_keys__ <= span.keys() <= v1.Span.__required_keys__ | v1.Span.__optional_keys__
        assert span["context"].keys() == v1.SpanContext.__required_keys__
        assert "openinference.span.kind" not in span["attributes"]
    kinds = {s["name"].split(" ")[0]: s["span_kind"] for s in genai}
    assert kinds["chat"] == "LLM" and kinds["execute_tool"] == "TOOL" and kinds["invoke_agent"] == "AGENT"
    finish = [s["attributes"]["gen_ai.response.finish_reasons"] for s in genai if s["name"] == "chat scripted-1"]
    assert len(finish) == 4 and all(isinstance(reasons, list) for reasons in finish)  # mapped: flattened to `.0`


@pytest.mark.parametrize("source", [SHAPES / "otlp.json", EXAMPLE])
def test_the_script_sends_the_otlp_json_as_its_protobuf_losslessly(source: Path) -> None:
    from google.protobuf.json_format import MessageToDict, ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    otlp = json.loads(source.read_text())
    request = ParseDict(_base64_ids(otlp), ExportTraceServiceRequest())
    spans = [s for r in request.resource_spans for scope in r.scope_spans for s in scope.spans]
    assert len(spans) == _span_count(otlp) and all(len(s.trace_id) == 16 and len(s.span_id) == 8 for s in spans)
    back = _hex_ids(MessageToDict(request, use_integers_for_enums=True))
    first = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert back["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] == first["spanId"]
    assert _base64_ids({"spanId": "00000000000000ff"}) == {"spanId": base64.b64encode(b"\0" * 7 + b"\xff").decode()}


def test_the_project_is_the_resources_openinference_project_name_else_default() -> None:
    assert _project(load("otlp.json")) == "default"
    assert _project(json.loads(EXAMPLE.read_text())) == "support"


@pytest.mark.skipif(
    not os.environ.get("PHOENIX_PYTHON"),
    reason="PHOENIX_PYTHON (a python with arize-phoenix 20.26.1: the script's docstring) not set",
)
def test_the_script_writes_the_same_files_again_from_a_real_phoenix_server(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            os.environ["PHOENIX_PYTHON"],
            "tests/fixtures/make_phoenix_server_fixtures.py",
            "--out-shapes",
            str(tmp_path),
            "--out-traces",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name in GENAI:
        assert (tmp_path / name).read_text() == (SHAPES / name).read_text(), name
    for name in OPENINFERENCE:
        assert (tmp_path / name).read_text() == (TRACES / name).read_text(), name
