"""The handler under the real Lambda runtime interface client, `awslambdaric`.

`python -m awslambdaric handler.app.lambda_handler` is what the container image
runs. Here it runs as a subprocess against a small Lambda Runtime API served on
127.0.0.1 (the endpoints and headers the RIC's `runtime_client` C extension
uses): `GET /runtime/invocation/next` hands out API Gateway proxy events with the
`Lambda-Runtime-*` headers, then blocks once the queue is empty; what the RIC
posts to `/response`, `/error` and `/init/error` is recorded. The process is
killed once every invocation has been answered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from handler.app import lambda_handler
from handler.local import LocalLambdaContext, make_proxy_event

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = (ROOT / "examples" / "calculator.json").read_text(encoding="utf-8")
FUNCTION_NAME = "fair-forge-agentic"
FUNCTION_ARN = f"arn:aws:lambda:us-east-1:123456789012:function:{FUNCTION_NAME}"
API_PREFIX = "/2018-06-01/runtime"
INVOCATION_WAIT_S = 60.0


@dataclass
class Invocation:
    """One event handed to the runtime, and what came back for it."""

    request_id: str
    event: dict[str, Any]
    response: dict[str, Any] | None = None
    response_content_type: str | None = None
    error: dict[str, Any] | None = None
    error_type: str | None = None


@dataclass
class RuntimeAPI:
    """The Lambda Runtime API's state: queued invocations, and what the runtime posted."""

    queue: list[Invocation]
    invocations: dict[str, Invocation] = field(default_factory=dict)
    init_errors: list[tuple[str | None, dict[str, Any]]] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)
    stopping: threading.Event = field(default_factory=threading.Event)

    def next_invocation(self) -> Invocation | None:
        with self.changed:
            if self.queue:
                invocation = self.queue.pop(0)
                self.invocations[invocation.request_id] = invocation
                return invocation
        # Nothing left: hold the runtime here, as Lambda does between invocations.
        self.stopping.wait(INVOCATION_WAIT_S)
        return None

    def wait_until_answered(self, count: int, process: subprocess.Popen[bytes], timeout_s: float) -> None:
        give_up = time.monotonic() + timeout_s
        with self.changed:
            while time.monotonic() < give_up and process.poll() is None and not self.init_errors:
                answered = [i for i in self.invocations.values() if i.response is not None or i.error is not None]
                if len(answered) >= count:
                    return
                self.changed.wait(0.2)


def _make_handler(api: RuntimeAPI) -> type[BaseHTTPRequestHandler]:
    class RuntimeAPIHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive and `Expect: 100-continue`, as curl uses them

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path != f"{API_PREFIX}/invocation/next":
                api.unexpected.append(f"GET {self.path}")
                self._reply(404, b'{"errorMessage": "unknown endpoint"}')
                return
            invocation = api.next_invocation()
            if invocation is None:
                self._reply(500, b'{"errorMessage": "test over"}')
                return
            deadline_ms = int(time.time() * 1000) + 60_000
            self._reply(
                200,
                json.dumps(invocation.event).encode("utf-8"),
                {
                    "Lambda-Runtime-Aws-Request-Id": invocation.request_id,
                    "Lambda-Runtime-Deadline-Ms": str(deadline_ms),
                    "Lambda-Runtime-Invoked-Function-Arn": FUNCTION_ARN,
                    "Lambda-Runtime-Trace-Id": f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]};"
                    "Parent=53995c3f42cd8ad8;Sampled=0",
                },
            )

        def do_POST(self) -> None:
            body = self._body()
            parts = self.path.removeprefix(API_PREFIX).strip("/").split("/")
            with api.changed:
                if parts == ["init", "error"]:
                    api.init_errors.append(
                        (self.headers.get("Lambda-Runtime-Function-Error-Type"), json.loads(body or b"{}"))
                    )
                elif len(parts) == 3 and parts[0] == "invocation" and parts[1] in api.invocations:
                    invocation = api.invocations[parts[1]]
                    if parts[2] == "response":
                        invocation.response = json.loads(body)
                        invocation.response_content_type = self.headers.get("Content-Type")
                    elif parts[2] == "error":
                        invocation.error = json.loads(body or b"{}")
                        invocation.error_type = self.headers.get("Lambda-Runtime-Function-Error-Type")
                    else:
                        api.unexpected.append(f"POST {self.path}")
                else:
                    api.unexpected.append(f"POST {self.path}")
                api.changed.notify_all()
            self._reply(202, b'{"status": "OK"}')

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return RuntimeAPIHandler


@dataclass
class RuntimeRun:
    api: RuntimeAPI
    calculator: Invocation
    invalid: Invocation
    health: Invocation
    output: str


def lambda_env(runtime_api: str) -> dict[str, str]:
    """The environment Lambda gives a Python container function (no credentials)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AWS_", "_X_AMZN", "LAMBDA_", "POWERTOOLS_", "FAIR_FORGE_", "LLM_API_KEY"))
    }
    env.update(
        {
            "AWS_LAMBDA_RUNTIME_API": runtime_api,
            "AWS_LAMBDA_FUNCTION_NAME": FUNCTION_NAME,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{FUNCTION_NAME}",
            "AWS_LAMBDA_LOG_STREAM_NAME": "2024/01/01/[$LATEST]0123456789abcdef",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "_HANDLER": "handler.app.lambda_handler",
            "LAMBDA_TASK_ROOT": str(ROOT),
            "PYTHONPATH": str(ROOT),
            "PYTHONUNBUFFERED": "1",
            "TZ": ":UTC",
        }
    )
    return env


@pytest.fixture(scope="module")
def runtime_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RuntimeRun]:
    """One RIC process serving three invocations in sequence, then killed."""
    calculator = Invocation(str(uuid.uuid4()), make_proxy_event("POST", "/run", CALCULATOR))
    invalid = Invocation(str(uuid.uuid4()), make_proxy_event("POST", "/run", "not json"))
    health = Invocation(str(uuid.uuid4()), make_proxy_event("GET", "/health"))
    api = RuntimeAPI(queue=[calculator, invalid, health])
    server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(api))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="runtime-api", daemon=True)
    thread.start()

    log_path = tmp_path_factory.mktemp("ric") / "ric.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "awslambdaric", "handler.app.lambda_handler"],
        cwd=ROOT,
        env=lambda_env(f"127.0.0.1:{server.server_port}"),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        api.wait_until_answered(3, process, INVOCATION_WAIT_S)
    finally:
        process.kill()
        process.wait(timeout=10)
        log.close()
        api.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    yield RuntimeRun(api, calculator, invalid, health, log_path.read_text(errors="replace"))


def proxy_body(invocation: Invocation, output: str) -> dict[str, Any]:
    """The JSON body of the API Gateway proxy response the runtime posted."""
    assert invocation.error is None, f"invocation error {invocation.error_type}: {invocation.error}"
    assert invocation.response is not None, f"no response for the invocation; runtime output:\n{output}"
    response = invocation.response
    assert isinstance(response["statusCode"], int)
    assert isinstance(response["body"], str)
    assert response.get("isBase64Encoded") is False
    headers = {
        **{k: ", ".join(v) for k, v in (response.get("multiValueHeaders") or {}).items()},
        **(response.get("headers") or {}),
    }
    assert headers.get("Content-Type") == "application/json"
    return dict(json.loads(response["body"]))


def test_runtime_started_cleanly(runtime_run: RuntimeRun) -> None:
    assert runtime_run.api.init_errors == [], runtime_run.output
    assert runtime_run.api.unexpected == []


def test_calculator_through_the_runtime(runtime_run: RuntimeRun) -> None:
    invocation = runtime_run.calculator
    body = proxy_body(invocation, runtime_run.output)
    assert invocation.response is not None
    assert invocation.response["statusCode"] == 200, body
    assert invocation.response_content_type == "application/json"
    assert body["success"] is True

    direct = lambda_handler(invocation.event, LocalLambdaContext())
    direct_body = json.loads(direct["body"])
    assert direct["statusCode"] == 200
    assert body["aggregated_metrics"] == direct_body["aggregated_metrics"]
    assert {k: v for k, v in body.items() if k != "request_id"} == {
        k: v for k, v in direct_body.items() if k != "request_id"
    }
    # The same event, so the same API Gateway request id.
    assert body["request_id"] == invocation.event["requestContext"]["requestId"]


def test_invalid_json_through_the_runtime(runtime_run: RuntimeRun) -> None:
    invocation = runtime_run.invalid
    body = proxy_body(invocation, runtime_run.output)
    assert invocation.response is not None
    assert invocation.response["statusCode"] == 400
    assert body == {
        "success": False,
        "error": "Invalid JSON body: Expecting value at line 1, column 1",
        "request_id": invocation.event["requestContext"]["requestId"],
    }


def test_health_through_the_runtime(runtime_run: RuntimeRun) -> None:
    invocation = runtime_run.health
    body = proxy_body(invocation, runtime_run.output)
    assert invocation.response is not None
    assert invocation.response["statusCode"] == 200
    assert body["status"] == "ok"
    assert "fair_forge_core.judges.ReferenceJudge" in body["connectors"]


def test_logs_carry_the_runtime_request_ids(runtime_run: RuntimeRun) -> None:
    """Powertools' logger took `aws_request_id` from the runtime's `Lambda-Runtime-Aws-Request-Id`."""
    records = []
    for line in runtime_run.output.splitlines():
        start = line.find("{")
        if start < 0:
            continue
        try:
            record = json.loads(line[start:])
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    logged_ids = {r.get("function_request_id") for r in records}
    assert runtime_run.calculator.request_id in logged_ids, runtime_run.output
    assert runtime_run.invalid.request_id in logged_ids, runtime_run.output
    assert {r.get("function_arn") for r in records if r.get("function_request_id")} == {FUNCTION_ARN}
