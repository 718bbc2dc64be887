"""The local API (`handler.local`) over real sockets, against the handler called directly.

Each test sends HTTP to a server on 127.0.0.1 and compares what comes back with
`lambda_handler(make_proxy_event(...), LocalLambdaContext())` for the same request:
same status, same JSON body apart from `request_id` (a fresh id per request).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fair_forge_testing.builders import conversation, turn
from fair_forge_testing.cloudformation import template
from handler.app import lambda_handler
from handler.local import LocalLambdaContext, banner, make_proxy_event, make_server

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = (ROOT / "examples" / "calculator.json").read_text(encoding="utf-8")
REFERENCE_JUDGE = "fair_forge_core.judges.ReferenceJudge"
HTTP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    body: dict[str, Any]


def http(base_url: str, method: str, path: str, body: str | bytes | None = None) -> Reply:
    """One request over a real socket; error statuses are replies too, not exceptions."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    request = urllib.request.Request(base_url + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            return Reply(response.status, response.headers.get("Content-Type", ""), json.loads(response.read()))
    except urllib.error.HTTPError as exc:
        with exc:
            return Reply(exc.code, exc.headers.get("Content-Type", ""), json.loads(exc.read()))


def direct(method: str, path: str, body: str | None = None) -> Reply:
    """The same request given to `lambda_handler` as an API Gateway proxy event, no socket."""
    response = lambda_handler(make_proxy_event(method, path, body), LocalLambdaContext())
    headers = {name: ", ".join(values) for name, values in (response.get("multiValueHeaders") or {}).items()}
    headers.update(response.get("headers") or {})
    return Reply(response["statusCode"], headers.get("Content-Type", ""), json.loads(response["body"]))


def without_request_id(body: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in body.items() if name != "request_id"}


def assert_same_reply(over_socket: Reply, directly: Reply) -> None:
    """Same status and body; both carry a request id, and the two ids differ."""
    assert over_socket.status == directly.status
    assert without_request_id(over_socket.body) == without_request_id(directly.body)
    assert over_socket.body.get("request_id")
    assert directly.body.get("request_id")
    assert over_socket.body["request_id"] != directly.body["request_id"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def local_api() -> Iterator[str]:
    """`make_server(port=0)` serving in a daemon thread; its base URL."""
    server = make_server(port=0)
    thread = threading.Thread(target=server.serve_forever, name="local-api", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_run_over_socket_matches_direct_call(local_api: str) -> None:
    over_socket = http(local_api, "POST", "/run", CALCULATOR)
    directly = direct("POST", "/run", CALCULATOR)

    assert over_socket.status == 200, over_socket.body
    assert over_socket.content_type.startswith("application/json")
    assert directly.content_type.startswith("application/json")
    assert over_socket.body["success"] is True
    assert [c["session_id"] for c in over_socket.body["per_conversation_metrics"]] == [
        "conversation_001",
        "conversation_002",
    ]
    assert_same_reply(over_socket, directly)


def test_traces_over_socket_match_direct_call(local_api: str) -> None:
    traces = ROOT / "examples" / "traces"
    body = json.dumps(
        {
            "connector": {"class_path": REFERENCE_JUDGE, "params": {}},
            "traces": {"format": "openai", "items": json.loads((traces / "openai_chat.json").read_text())},
            "references": [
                json.loads(line) for line in (traces / "openai_chat.references.jsonl").read_text().splitlines()
            ],
            "task_key": "metadata.task",
        }
    )
    over_socket = http(local_api, "POST", "/run", body)
    assert over_socket.status == 200, over_socket.body
    assert [c["session_id"] for c in over_socket.body["per_conversation_metrics"]] == ["run-001", "run-002", "run-003"]
    assert_same_reply(over_socket, direct("POST", "/run", body))


def test_health_over_socket(local_api: str) -> None:
    reply = http(local_api, "GET", "/health")

    assert reply.status == 200
    assert reply.content_type.startswith("application/json")
    assert reply.body["status"] == "ok"
    assert REFERENCE_JUDGE in reply.body["connectors"]
    assert reply.body == direct("GET", "/health").body


def test_error_over_socket_matches_direct_call(local_api: str) -> None:
    over_socket = http(local_api, "POST", "/run", "[1,2]")
    directly = direct("POST", "/run", "[1,2]")

    assert over_socket.status == 400
    assert over_socket.content_type.startswith("application/json")
    assert over_socket.body["success"] is False
    assert "error" in over_socket.body
    assert_same_reply(over_socket, directly)


def varied_request(index: int) -> str:
    """Request `index` of the parallel test: its own session ids, turn count, answers and k.

    Turn t of request i is answered correctly unless (i + t) % 3 == 0, so the
    correct/incorrect pattern, the scores and the pass@k values differ between requests.
    """
    turns = []
    for t in range(1 + index % 3):
        a, b = index + 2, t + 3
        right = (index + t) % 3 != 0
        turns.append(
            turn(
                f"r{index}-q{t}",
                f"What is {a} + {b}?",
                f"It is {a + b}." if right else f"It is {a + b + 7}.",
                str(a + b),
            )
        )
    conversations = [
        conversation(f"req{index}-session", turns, assistant_id=f"agent-{index % 4}"),
        conversation(
            f"req{index}-extra",
            [turn(f"r{index}-x", "What is the capital of France?", "Paris." if index % 2 else "Lyon.", "Paris")],
        ),
    ]
    return json.dumps(
        {
            "connector": {"class_path": REFERENCE_JUDGE, "params": {}},
            "datasets": conversations,
            "config": {"k": 1 + index % 4, "threshold": 0.7},
        }
    )


def test_parallel_requests_have_no_cross_talk(local_api: str) -> None:
    requests = [varied_request(i) for i in range(20)]
    expected = [direct("POST", "/run", body) for body in requests]
    assert all(e.status == 200 for e in expected), [e.body for e in expected if e.status != 200]
    # The requests really differ, so a reply swapped with another's would be noticed.
    assert len({json.dumps(without_request_id(e.body), sort_keys=True) for e in expected}) == len(requests)

    # At most 4 connections at once: `make_server` keeps socketserver's listen backlog of 5.
    with ThreadPoolExecutor(max_workers=4) as pool:
        replies = list(pool.map(lambda body: http(local_api, "POST", "/run", body), requests))

    for index, (reply, wanted) in enumerate(zip(replies, expected, strict=True)):
        assert reply.status == wanted.status, (index, reply.body)
        assert without_request_id(reply.body) == without_request_id(wanted.body), index
    request_ids = [reply.body.get("request_id") for reply in replies]
    assert all(request_ids)
    assert len(set(request_ids)) == len(request_ids), "two responses carry the same request id"


def test_overlapping_requests_each_get_their_own_request_id(local_api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two requests in the handler at the same time: each reply names its own request.

    Both requests are held (at most 3 s) inside `decode_body` until the other one
    arrives, so they overlap for certain. A server that runs one request at a time
    gives up waiting and answers them in turn; either way the ids must differ.
    """
    import handler.routes.run

    rendezvous = threading.Barrier(2, timeout=3.0)
    original = handler.routes.run.decode_body

    def overlapping_decode_body(*args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            rendezvous.wait()
        return original(*args, **kwargs)

    monkeypatch.setattr(handler.routes.run, "decode_body", overlapping_decode_body)
    bodies = ["[1]", "5"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        replies = list(pool.map(lambda body: http(local_api, "POST", "/run", body), bodies))

    assert [r.body["error"] for r in replies] == [
        "Request body must be a JSON object, got list",
        "Request body must be a JSON object, got int",
    ]
    assert replies[0].body["request_id"] != replies[1].body["request_id"]


@pytest.mark.slow
def test_local_api_as_a_subprocess(tmp_path: Path) -> None:
    """`python -m handler.local --port N`, as the README's curl examples run it."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "local-api.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "handler.local", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        health: Reply | None = None
        give_up = time.monotonic() + 20.0
        while time.monotonic() < give_up and process.poll() is None:
            try:
                health = http(base_url, "GET", "/health")
                break
            except (ConnectionError, urllib.error.URLError, TimeoutError):
                time.sleep(0.1)
        output = (tmp_path / "local-api.log").read_text(errors="replace")
        assert process.poll() is None, f"local API exited with {process.returncode}:\n{output}"
        assert health is not None, f"local API not answering /health after 20 s:\n{output}"
        assert health.status == 200
        assert REFERENCE_JUDGE in health.body["connectors"]

        over_socket = http(base_url, "POST", "/run", CALCULATOR)
        assert over_socket.status == 200, over_socket.body
        assert over_socket.content_type.startswith("application/json")
        assert_same_reply(over_socket, direct("POST", "/run", CALCULATOR))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()
    first_line = (tmp_path / "local-api.log").read_text(errors="replace").splitlines()[0]
    assert first_line.startswith(f"Fair-Forge Agentic local API on {base_url} (")
    assert routes_in(first_line) == template_routes()


def template_routes() -> set[tuple[str, str]]:
    """`(method, path)` of every method `template.yaml` gives API Gateway, CORS preflights
    (OPTIONS) left out, path parameters written `{}` (the template names them `{id}`)."""
    resources = template()["Resources"]
    paths: dict[str, str] = {}

    def path_of(name: str) -> str:
        if name not in paths:
            props = resources[name]["Properties"]
            parent = props["ParentId"]
            parent_path = "" if "Fn::GetAtt" in parent else path_of(parent["Ref"])
            paths[name] = f"{parent_path}/{props['PathPart']}"
        return paths[name]

    return {
        (r["Properties"]["HttpMethod"], re.sub(r"\{[^}]*\}", "{}", path_of(r["Properties"]["ResourceId"]["Ref"])))
        for r in resources.values()
        if r["Type"] == "AWS::ApiGateway::Method" and r["Properties"]["HttpMethod"] != "OPTIONS"
    }


def routes_in(text: str) -> set[tuple[str, str]]:
    """The `METHOD /path` pairs a text lists, path parameters written `{}`."""
    return {
        (m, re.sub(r"\{[^}]*\}", "{}", p)) for m, p in re.findall(r"\b(GET|POST|PUT|PATCH|DELETE) (/[^\s,)]*)", text)
    }


def test_the_banner_lists_every_route_template_yaml_declares() -> None:
    line = banner("127.0.0.1", 3000)
    assert line.startswith("Fair-Forge Agentic local API on http://127.0.0.1:3000 (")
    assert len(template_routes()) == 6  # POST /run, /calibrate, /jobs; GET /health, /schema, /jobs/{id}
    assert routes_in(line) == template_routes()


def test_a_wrong_method_over_socket_is_a_405_with_allow(local_api: str) -> None:
    request = urllib.request.Request(local_api + "/run", method="GET")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S)
    with refused.value as reply:
        assert (reply.code, reply.headers["Allow"]) == (405, "POST")
        body = json.loads(reply.read())
    assert set(body) == {"success", "error", "request_id"}
    assert body["error"] == "Method not allowed: /run takes POST"
    assert_same_reply(Reply(405, "", body), direct("GET", "/run"))


# --------------------------------------------------------------------------- hostile HTTP (issue #12)


def raw_exchange(port: int, request: bytes, *, timeout_s: float = 10.0) -> bytes:
    """Send raw bytes, read until the server closes or `timeout_s` passes (bounded)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(request)
        received = b""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not chunk:
                break
            received += chunk
            if b"\r\n\r\n" in received and b'"success"' in received:
                break
    return received


@pytest.fixture
def strict_api() -> Iterator[int]:
    server = make_server(port=0, read_timeout_s=0.5)
    thread = threading.Thread(target=server.serve_forever, name="strict-local-api", daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def status_and_body(reply: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


@pytest.mark.parametrize(("length", "status"), [("-1", 400), ("abc", 400), ("1e3", 400), ("20000001", 413)])
def test_a_bad_content_length_is_refused_with_a_request_id(strict_api: int, length: str, status: int) -> None:
    request = f"POST /run HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n{{}}".encode()
    got, body = status_and_body(raw_exchange(strict_api, request))
    assert got == status
    assert body["success"] is False and body["request_id"]


def test_a_chunked_body_is_read(strict_api: int) -> None:
    data = CALCULATOR.encode()
    chunks = b"".join(f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in (data[:100], data[100:]))
    request = b"POST /run HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
    got, body = status_and_body(raw_exchange(strict_api, request))
    assert got == 200 and body["success"] is True


def test_a_client_that_stalls_mid_body_is_dropped(strict_api: int) -> None:
    started = time.monotonic()
    reply = raw_exchange(strict_api, b"POST /run HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", timeout_s=10)
    assert reply == b""  # no answer to a body that never came: the connection closed
    assert time.monotonic() - started < 9  # closed by the server's read timeout, not by ours
