"""`fair-forge evaluate --otel-export`: the evaluation events through the OpenTelemetry SDK's
OTLP/HTTP exporter, received by a small OTLP/HTTP collector on 127.0.0.1 that decodes what it is
sent with the OTLP protobuf messages (`opentelemetry-proto`), and compared with `--otel-events`'
JSON file of the same run."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse

from fair_forge_core.cli import main
from fair_forge_core.otel_sdk import OtelSdkMissing, check_sdk
from tests.cli.test_cli import CALCULATOR, ROOT, run_cli
from tests.cli.test_cli_otel_events import converted_request

TRACES = ROOT / "examples" / "traces"


class Collector(ThreadingHTTPServer):
    """Receives OTLP/HTTP logs at /v1/logs; answers `status` (200: success)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[tuple[str, str, ExportLogsServiceRequest]] = []  # (path, content type, body)
        self.status = 200

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportLogsServiceRequest()
        request.ParseFromString(body)
        self.server.received.append((self.path, self.headers["Content-Type"], request))
        reply = ExportLogsServiceResponse().SerializeToString()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def otel_env(**variables: str) -> dict[str, str]:
    """The test's environment without any OTEL_* variable of the machine, plus `variables`."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}, **variables}


def plain(value: Any) -> Any:
    """A protobuf `AnyValue` as the value it holds."""
    return getattr(value, value.WhichOneof("value"))


@pytest.mark.parametrize("proposed", [False, True], ids=["default", "otel-proposed"])
def test_the_sdk_sends_the_same_events_as_the_file_linked_to_the_same_spans(
    tmp_path: Path, collector: Collector, proposed: bool
) -> None:
    """With `--otel-proposed` too: its attributes are strings the SDK sends as the file holds them."""
    request = converted_request(tmp_path)
    events = tmp_path / "events.json"
    env = otel_env(OTEL_EXPORTER_OTLP_ENDPOINT=collector.url, OTEL_SERVICE_NAME="ci-evals")
    flags = ["--otel-proposed"] if proposed else []
    done = run_cli(
        "evaluate", request, "--out", tmp_path / "r.json", "--otel-events", events, "--otel-export", *flags, env=env
    )
    assert done.returncode == 0, done.stderr
    assert len(collector.received) == 1  # one export call
    ((path, content_type, sent),) = collector.received
    assert (path, content_type) == ("/v1/logs", "application/x-protobuf")  # the endpoint + the signal's path
    (resource_logs,) = sent.resource_logs
    resource = {a.key: plain(a.value) for a in resource_logs.resource.attributes}
    assert resource["service.name"] == "ci-evals"  # the SDK's environment names the service
    (scope_logs,) = resource_logs.scope_logs
    assert scope_logs.scope.name == "fair_forge_core.otel_events"

    (from_file,) = json.loads(events.read_text())["resourceLogs"]
    file_records = from_file["scopeLogs"][0]["logRecords"]
    assert f"sent {len(file_records)} evaluation event(s)" in done.stderr
    assert len(scope_logs.log_records) == len(file_records) > 0
    for record, expected in zip(scope_logs.log_records, file_records, strict=True):
        assert record.event_name == expected["eventName"] == "gen_ai.evaluation.result"
        assert str(record.time_unix_nano) == expected["timeUnixNano"]
        assert {a.key: plain(a.value) for a in record.attributes} == {
            a["key"]: next(iter(a["value"].values())) for a in expected["attributes"]
        }
        sent_keys = {a.key for a in record.attributes}
        # the proposed attributes (#359 evaluator provenance, #79 run grouping) reach the collector, or none does
        proposals = {"gen_ai.evaluation.evaluator.id", "gen_ai.evaluation.reference_set.id", "test.suite.run.id"}
        assert (proposals <= sent_keys) if proposed else not (proposals & sent_keys)
        # turn events: the span of the answer, as in the file (bytes on the wire, hex in OTLP JSON)
        assert record.trace_id.hex() == expected["traceId"]
        assert record.span_id.hex() == expected["spanId"]


def test_an_export_the_collector_refuses_is_exit_3_after_the_outputs(tmp_path: Path, collector: Collector) -> None:
    collector.status = 400  # not retryable: the exporter gives up at once
    out = tmp_path / "result.json"
    env = otel_env(OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=f"{collector.url}/v1/logs")
    done = run_cli("evaluate", CALCULATOR, "--out", out, "--otel-export", "--quiet", env=env)
    assert done.returncode == 3, done.stderr
    assert done.stderr == (
        "error: --otel-export: the OTLP exporter could not send the 4 evaluation events to the endpoint set by "
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: Failed to export logs batch code: 400, reason: Bad Request\n"
    )  # examples/calculator.json: 3 turns (3 answer events) and 1 with expected tools (1 tool event)
    assert json.loads(out.read_text())["success"] is True  # the result was written first
    assert len(collector.received) == 1


def test_without_an_endpoint_it_exits_2_before_judging(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    done = run_cli("evaluate", CALCULATOR, "--out", out, "--otel-export", env=otel_env())
    assert (done.returncode, done.stderr) == (
        2,
        "error: --otel-export: set OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_LOGS_ENDPOINT "
        "to the collector's OTLP/HTTP URL\n",
    )
    assert not out.exists()


def test_without_the_sdk_it_exits_2_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk._logs", None)  # an import of it raises ImportError
    with pytest.raises(OtelSdkMissing, match="pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"):
        check_sdk()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    out = tmp_path / "result.json"
    assert main(["evaluate", str(CALCULATOR), "--out", str(out), "--otel-export"]) == 2
    assert capsys.readouterr().err == (
        "error: --otel-export: the OpenTelemetry SDK is not installed: "
        "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http\n"
    )
    assert not out.exists()
