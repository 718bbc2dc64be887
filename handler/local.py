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
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

DEFAULT_TIMEOUT_S = 60.0
MAX_LOCAL_BODY_BYTES = 20_000_000
READ_TIMEOUT_S = 30.0
"""How long the server waits for the next bytes of a request: a client that stalls is dropped."""


class _LocalRequestError(Exception):
    """A request the local server refuses before the handler sees it (API Gateway's part)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


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
    domain: str | None = None,
    api_key_id: str | None = None,
) -> dict[str, Any]:
    """An API Gateway REST proxy event (payload format 1.0) for one request. `api_key_id` is
    what API Gateway puts in `requestContext.identity.apiKeyId` for a method that requires an
    API key (the local server has none).

    Bytes that are not UTF-8 are sent base64-encoded, as API Gateway does for
    binary media types. `domain` is the API's own domain (`requestContext.domainName`,
    which API Gateway fills with the host it was reached on): the `Host` header when
    not given.
    """
    headers = dict(headers or {})
    is_base64 = False
    if isinstance(body, bytes):
        raw = body
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            body, is_base64 = base64.b64encode(raw).decode("ascii"), True
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
            "identity": {
                "sourceIp": "127.0.0.1",
                "userAgent": headers.get("User-Agent", ""),
                **({"apiKeyId": api_key_id} if api_key_id else {}),
            },
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": domain if domain is not None else headers.get("Host", headers.get("host")),
        },
        "body": body,
        "isBase64Encoded": is_base64,
    }


class _ProxyHandler(BaseHTTPRequestHandler):
    server_version = "fair-forge-local/1"
    timeout_s = DEFAULT_TIMEOUT_S
    timeout = READ_TIMEOUT_S  # socket timeout for every read (BaseHTTPRequestHandler applies it)

    def _read_body(self) -> bytes | None:
        """The request body: by Content-Length (digits only) or chunked, at most
        `MAX_LOCAL_BODY_BYTES`; `_LocalRequestError` for anything else."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        raw = self.headers.get("Content-Length")
        if raw is None:
            return None
        if not raw.strip().isdigit():
            raise _LocalRequestError(400, "Invalid Content-Length header")
        length = int(raw)
        if length > MAX_LOCAL_BODY_BYTES:
            raise _LocalRequestError(413, f"Request body too large: {length} bytes (limit {MAX_LOCAL_BODY_BYTES})")
        return self.rfile.read(length) if length else None

    def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            size_line = self.rfile.readline(64).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise _LocalRequestError(400, "Invalid chunked body") from None
            if size < 0 or len(body) + size > MAX_LOCAL_BODY_BYTES:
                raise _LocalRequestError(413, f"Request body too large (limit {MAX_LOCAL_BODY_BYTES} bytes)")
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(body)
            body += self.rfile.read(size)
            self.rfile.readline(64)  # the CRLF after the chunk

    def _dispatch(self) -> None:
        from handler.app import lambda_handler

        try:
            body = self._read_body()
        except TimeoutError:  # the client stalled mid-body: drop it, nobody is waiting for an answer
            self.close_connection = True
            return
        except _LocalRequestError as refused:
            self.close_connection = True  # what is left of the body cannot be trusted to be read
            error = {"success": False, "error": str(refused), "request_id": str(uuid.uuid4())}
            self._send(refused.status, {"Content-Type": "application/json"}, json.dumps(error).encode())
            return
        url = urlsplit(self.path)
        event = make_proxy_event(
            self.command,
            url.path,
            body,
            headers={name: value for name, value in self.headers.items()},
            query=dict(parse_qsl(url.query)) or None,
            domain="{}:{}".format(
                *cast(tuple[str, int], self.server.server_address)[:2]
            ),  # this server's own address, not the caller's Host
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

    # Every method goes to the handler, which answers a known path's other methods with a 405.
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the handler logs each request itself, as JSON


class _LocalServer(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 resets connections under a parallel load
    daemon_threads = True


def make_server(
    port: int = 3000,
    host: str = "127.0.0.1",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    read_timeout_s: float = READ_TIMEOUT_S,
) -> ThreadingHTTPServer:
    """A local API server, not yet serving; port 0 picks a free port. `timeout_s` is the
    simulated Lambda timeout, `read_timeout_s` how long a stalled client is waited for."""
    handler = type("ProxyHandler", (_ProxyHandler,), {"timeout_s": timeout_s, "timeout": read_timeout_s})
    server = _LocalServer((host, port), handler)
    return server


def banner(host: str, port: int) -> str:
    """The start-up line: where the API is, and every route it serves (`handler.app.routes`)."""
    from handler.app import describe_routes

    return f"Fair-Forge Agentic local API on http://{host}:{port} ({describe_routes()})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the Lambda handler on 127.0.0.1 as API Gateway would.")
    parser.add_argument("--port", type=int, default=3000)
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="simulated Lambda timeout, s")
    args = parser.parse_args(argv)
    from fair_forge_core.connectors import LOOPBACK_NETWORKS

    # A model server on this machine is a normal judge for the local API (docs/judge.md); a
    # deployment allows no such endpoint unless its operator says so.
    os.environ.setdefault("FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS", ",".join(LOOPBACK_NETWORKS))
    server = make_server(args.port, args.host, args.timeout)
    print(banner(args.host, server.server_port), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
