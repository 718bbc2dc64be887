"""Calling `lambda_handler` with real API Gateway REST proxy events, as API Gateway does.

With `FAIR_FORGE_RECORD_RESPONSES` set to a directory, importing this module wraps
`handler.app.lambda_handler` so that every call (from `call_handler`, from a test that calls
`lambda_handler` itself, from the local API's server, which looks it up per request) appends
`{"test", "method", "path", "query", "accept", "request", "status", "base64", "response"}` as one JSON
line to `responses-<pid>.jsonl` in that directory: bodies as the raw strings of the event and
the response, `test` from `PYTEST_CURRENT_TEST`. Loaded before the tests import the handler
(`pytest -p fair_forge_testing.handler_client`), it sees them all; benchmarks/response_snapshots.py
reads the files. Unset, nothing is wrapped.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handler.app import lambda_handler
from handler.local import LocalLambdaContext, make_proxy_event


@dataclass
class HandlerResponse:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]
    raw: str


RECORD_ENV = "FAIR_FORGE_RECORD_RESPONSES"


_RECORD_LOCK = threading.Lock()


def _recorded(inner: Any) -> Any:
    """`inner`, also appending each exchange to the `RECORD_ENV` directory (module docstring)."""

    @functools.wraps(inner)
    def recorded(event: dict[str, Any], context: Any) -> dict[str, Any]:
        response: dict[str, Any] = inner(event, context)
        headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}
        line = {
            "test": os.environ.get("PYTEST_CURRENT_TEST"),
            "method": event.get("httpMethod"),
            "path": event.get("path"),
            "query": event.get("queryStringParameters"),
            "accept": headers.get("accept"),  # POST /run answers HTML or JSON by it
            "request": event.get("body"),
            "status": response.get("statusCode"),
            "base64": response.get("isBase64Encoded", False),
            "response": response.get("body"),
        }
        path = Path(os.environ[RECORD_ENV]) / f"responses-{os.getpid()}.jsonl"
        with _RECORD_LOCK, path.open("a", encoding="utf-8") as file:  # the local API serves from threads
            file.write(json.dumps(line) + "\n")
        return response

    return recorded


if os.environ.get(RECORD_ENV):
    import handler.app as _app

    _app.lambda_handler = lambda_handler = _recorded(lambda_handler)  # type: ignore[assignment]


def call_handler(
    body: Any = None,
    *,
    method: str = "POST",
    path: str = "/run",
    raw: str | bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout_s: float = 60.0,
    domain: str | None = None,
    api_key_id: str | None = None,
) -> HandlerResponse:
    """Invoke the handler; `body` is sent as JSON, `raw` as it is; `api_key_id` as API Gateway
    sends the id of the caller's API key."""
    payload = raw if raw is not None else (json.dumps(body) if body is not None else None)
    event = make_proxy_event(
        method,
        path,
        payload,
        headers={"Content-Type": "application/json", **(headers or {})},
        domain=domain,
        api_key_id=api_key_id,
    )
    response = lambda_handler(event, LocalLambdaContext(timeout_s=timeout_s))
    text = response.get("body") or ""
    headers = dict(response.get("headers") or {})
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers.setdefault(name, ", ".join(values))
    return HandlerResponse(
        status=response["statusCode"],
        body=json.loads(text) if text else {},
        headers=headers,
        raw=text,
    )


_SUBPROCESS_SCRIPT = """
import json, sys
from fair_forge_testing.handler_client import call_handler
for line in sys.stdin:
    request = json.loads(line)
    response = call_handler(raw=request) if isinstance(request, str) else call_handler(request)
    print("RESPONSE=" + json.dumps({"status": response.status, "raw": response.raw}), flush=True)
"""


def run_in_subprocess(requests: list[Any], env: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """Call the handler with each request in one fresh interpreter; return the responses and *everything* printed.

    A request is a body (sent as JSON) or a string (sent as it is). A subprocess is
    the honest way to see every log line: loggers configured at import time write
    to the process's real stdout and stderr, which in-process capture can miss.
    """
    result = subprocess.run(
        [sys.executable, "-c", _SUBPROCESS_SCRIPT],
        input="".join(json.dumps(r) + "\n" for r in requests),
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    responses, other_lines = [], []
    for line in result.stdout.splitlines():
        if line.startswith("RESPONSE="):
            response = json.loads(line.removeprefix("RESPONSE="))
            responses.append({**response, "body": json.loads(response["raw"]) if response["raw"] else {}})
        else:
            other_lines.append(line)
    assert len(responses) == len(requests), result.stderr[-3000:]
    return responses, "\n".join(other_lines) + "\n" + result.stderr
