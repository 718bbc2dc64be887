"""`fair-forge convert` on the OTLP shapes (#37 items 1, 2): OTLP protobuf read by its content (a
file of any name, or stdin), every shape to the same request as the OTLP/JSON original, and a
shape given to a format that does not read it named, with the `--from` that does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import ROOT, run_cli_in_process

SHAPES = ROOT / "tests" / "data" / "traces" / "shapes"
REFERENCES = [
    {"task_id": "conv-weather-1", "turn": 0, "ground_truth_assistant": "18°C, sunny"},
    {"task_id": "conv-weather-1", "turn": 1, "ground_truth_assistant": "could not find"},
]


@pytest.fixture
def references(tmp_path: Path) -> Path:
    path = tmp_path / "refs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in REFERENCES))
    return path


def convert(traces: Path, source: str, references: Path) -> dict[str, object]:
    done = run_cli_in_process("convert", traces, "--from", source, "--references", references)
    assert done.returncode == 0, done.stderr
    request: dict[str, object] = json.loads(done.stdout)
    return request


@pytest.mark.parametrize("source", ["otel", "openinference"])
def test_protobuf_is_read_by_its_content_to_the_request_of_the_otlp_json(
    source: str, references: Path, tmp_path: Path
) -> None:
    renamed = tmp_path / "export.bin"  # not `.pb`: the content tells
    renamed.write_bytes((SHAPES / "otlp.pb").read_bytes())
    assert convert(renamed, source, references) == convert(SHAPES / "otlp.json", source, references)


def test_protobuf_on_stdin_is_read_too(references: Path) -> None:
    with (SHAPES / "otlp.pb").open("rb") as stdin:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "fair_forge_core",
                "convert",
                "-",
                "--from",
                "otel",
                "--references",
                str(references),
            ],
            stdin=stdin,
            cwd=ROOT,
            capture_output=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == convert(SHAPES / "otlp.json", "otel", references)


@pytest.mark.parametrize(
    "shape", ["jaeger.json", "tempo_v1.json", "tempo_v2.json", "proto_snake.json", "phoenix_spans.json"]
)
def test_every_json_shape_converts_to_the_request_of_the_otlp_json(shape: str, references: Path) -> None:
    assert convert(SHAPES / shape, "otel", references) == convert(SHAPES / "otlp.json", "otel", references)


@pytest.mark.parametrize(
    ("shape", "source", "said"),
    [
        ("otlp.pb", "langfuse", "this is OTLP protobuf (an ExportTraceServiceRequest), not langfuse traces"),
        ("jaeger.json", "openai", "this is a Jaeger JSON export, not openai traces"),
        ("phoenix_otlpv1.json", "langsmith", "this is a Phoenix OTLP spans page"),
    ],
)
def test_a_shape_another_format_reads_is_named_with_its_from(
    shape: str, source: str, said: str, references: Path
) -> None:
    done = run_cli_in_process("convert", SHAPES / shape, "--from", source, "--references", references)
    assert done.returncode == 2
    assert said in done.stderr
    assert "read it with --from otel (GenAI spans) or --from openinference (OpenInference spans)" in done.stderr


def test_bytes_that_are_neither_json_nor_protobuf_are_refused(references: Path, tmp_path: Path) -> None:
    binary = tmp_path / "x.pb"
    binary.write_bytes(b"\x00\xff\xfe")
    done = run_cli_in_process("convert", binary, "--from", "otel", "--references", references)
    assert (done.returncode, f"{binary} is not UTF-8 text, nor OTLP protobuf" in done.stderr) == (2, True)


def test_langfuse_s_otlp_export_converts_under_from_langfuse_and_plain_genai_spans_name_otel(tmp_path: Path) -> None:
    """The Langfuse SDK's spans (its LangChain `CallbackHandler`, exported over OTLP) convert with
    `--from langfuse` (#37); GenAI spans without `langfuse.*` attributes name `--from otel`."""
    references = tmp_path / "refs.jsonl"
    rows = [{"task_id": "chat-weather-1", "turn": n, "ground_truth_assistant": "x"} for n in (0, 1)]
    references.write_text("".join(json.dumps(r) + "\n" for r in rows))
    export = ROOT / "tests" / "data" / "traces" / "langfuse_otlp_export.json"
    datasets = convert(export, "langfuse", references)["datasets"]
    assert isinstance(datasets, list) and len(datasets) == 1
    dataset = datasets[0]
    assert [turn["query"] for turn in dataset["conversation"]] == ["Weather and time in Rome?", "And in Oslo?"]
    refused = run_cli_in_process("convert", SHAPES / "otlp.json", "--from", "langfuse", "--references", references)
    assert refused.returncode == 2
    assert "this is an OTLP/JSON export request, not langfuse traces; read it with --from otel" in refused.stderr
    assert "no span has a langfuse.* attribute" in refused.stderr
