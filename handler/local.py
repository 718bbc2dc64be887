"""The local API: the real `lambda_handler` behind an HTTP server on 127.0.0.1.

Each HTTP request becomes an API Gateway REST (v1) proxy event, exactly the shape
API Gateway sends the deployed function, and the handler's proxy response becomes
the HTTP response. So `curl -X POST http://127.0.0.1:3000/run -d @examples/…`
behaves as it does against the deployed invoke URL.

    python -m handler.local --port 3000
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

DEFAULT_TIMEOUT_S = 60.0
MAX_LOCAL_BODY_BYTES = 20_000_000

# One invocation at a time, as in a Lambda execution environment: Powertools'
# resolver keeps the current event on the router, shared by all threads.
_INVOCATION_LOCK = threading.Lock()


@dataclass
class LocalLambdaContext:
    """The attributes of Lambda's context object that Powertools and the handler read."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    function_name: str = "fair-forge-agentic"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:fair-forge-agentic"
    log_group_name: str = "/aws/lambda/fair-forge-agentic"
    log_stream_name: str = "local"
    _started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_s - (time.monotonic() - self._started)) * 1000))


def make_proxy_event(
    method: str,
    path: str,
    body: str | bytes | None = None,
    *,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    stage: str = "local",
) -> dict[str, Any]:
    """An API Gateway REST proxy event (payload format 1.0) for one request.

    Bytes that are not UTF-8 are sent base64-encoded, as API Gateway does for
    binary media types.
    """
    headers = dict(headers or {})
    is_base64 = False
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            body, is_base64 = base64.b64encode(body).decode("ascii"), True
    request_id = str(uuid.uuid4())
    return {
        "resource": path,
        "path": path,
        "httpMethod": method.upper(),
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": query or None,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": path,
            "httpMethod": method.upper(),
            "path": f"/{stage}{path}",
            "stage": stage,
            "requestId": request_id,
            "extendedRequestId": request_id,
            "requestTimeEpoch": int(time.time() * 1000),
            "protocol": "HTTP/1.1",
            "identity": {"sourceIp": "127.0.0.1", "userAgent": headers.get("User-Agent", "")},
            "accountId": "000000000000",
            "apiId": "local",
        },
        "body": body,
        "isBase64Encoded": is_base64,
    }


class _ProxyHandler(BaseHTTPRequestHandler):
    server_version = "fair-forge-local/1"
    timeout_s = DEFAULT_TIMEOUT_S

    def _dispatch(self) -> None:
        from handler.app import lambda_handler

        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_LOCAL_BODY_BYTES:
            self._send(
                413,
                {"Content-Type": "application/json"},
                json.dumps({"success": False, "error": f"Request body too large: {length} bytes"}).encode(),
            )
            return
        body = self.rfile.read(length) if length else None
        url = urlsplit(self.path)
        event = make_proxy_event(
            self.command,
            url.path,
            body,
            headers={name: value for name, value in self.headers.items()},
            query=dict(parse_qsl(url.query)) or None,
        )
        with _INVOCATION_LOCK:
            response = lambda_handler(event, LocalLambdaContext(timeout_s=self.timeout_s))
        payload = response.get("body") or ""
        data = base64.b64decode(payload) if response.get("isBase64Encoded") else payload.encode("utf-8")
        headers = dict(response.get("headers") or {})
        for name, values in (response.get("multiValueHeaders") or {}).items():
            headers.setdefault(name, ", ".join(values))
        self._send(int(response.get("statusCode", 500)), headers, data)

    def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_OPTIONS = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the handler logs each request itself, as JSON


class _LocalServer(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 resets connections under a parallel load
    daemon_threads = True


def make_server(port: int = 3000, host: str = "127.0.0.1", timeout_s: float = DEFAULT_TIMEOUT_S) -> ThreadingHTTPServer:
    """A local API server, not yet serving; port 0 picks a free port."""
    handler = type("ProxyHandler", (_ProxyHandler,), {"timeout_s": timeout_s})
    server = _LocalServer((host, port), handler)
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the Lambda handler on 127.0.0.1 as API Gateway would.")
    parser.add_argument("--port", type=int, default=3000)
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="simulated Lambda timeout, s")
    args = parser.parse_args(argv)
    from fair_forge_core.connectors import LOOPBACK_NETWORKS

    # A model server on this machine is a normal judge for the local API (DESIGN.md §8); a
    # deployment allows no such endpoint unless its operator says so.
    os.environ.setdefault("FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS", ",".join(LOOPBACK_NETWORKS))
    server = make_server(args.port, args.host, args.timeout)
    print(
        f"Fair-Forge Agentic local API on http://{args.host}:{server.server_port} (POST /run, GET /health)",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
