"""A stub agent that speaks the agent contract (docs/agent-contract.md), for tests, benchmarks and
the tutorial: a scripted agent whose every answer, tool call, end state, usage and fault is known
in advance, so a test can compute what a recording and its evaluation must say.

`StubScript` is the script: per task (`StubTask`) a success probability, the right answers, the
tool calls and the end state of a successful attempt (a failed one answers `wrong_answer`, calls no
tool, and reports `wrong_state`), the usage each call reports, and scripted faults by (attempt,
turn). Whether an attempt succeeds is drawn once per (task, attempt) from a RNG seeded with
`seed`, the task id and the attempt (`StubScript.succeeds`), so it is reproducible and a test
reads it from the script. Every call is logged (`StubScript.calls`, thread-safe).

It is served three ways, one logic:

* `StubAgentServer(script)`: HTTP on 127.0.0.1 (an ephemeral port; `url`), the `http` kind; every
  call waits `latency_s` (in its own thread: calls in flight overlap);
* `StubAgent(script)`: a callable for the `python` kind (`install` it, then name
  ``fair_forge_testing.stub_agent:python_agent``);
* ``python -m fair_forge_testing.stub_agent SCRIPT.json [LOG.jsonl]``: the `command` kind (the
  script as `StubScript.to_json` writes it; each call appended to LOG.jsonl);
* ``python -m fair_forge_testing.stub_agent --serve SCRIPT.json [PORT]``: the `http` kind in a
  process of its own, its URL printed (`serve`).

Faults (`Fault`): ``timeout`` (waits `hang_s` before answering), ``http_500``, ``http_503_once``
(503 on the first try of that turn, then an answer: a retried transport error), ``malformed``
(a reply that is not JSON), ``oversize`` (a JSON reply over the 1 MB cap), ``drop`` (the
connection closed with no reply). A dead agent is `dead_url()`: a port nothing listens on. Only the
standard library is used.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

HOST = "127.0.0.1"
Fault = Literal["timeout", "http_500", "http_503_once", "malformed", "oversize", "drop"]
OVERSIZE_BYTES = 1_100_000
"""The size of an ``oversize`` reply: over the contract's 1 MB cap."""


@dataclass(frozen=True)
class StubTask:
    """One task's script (module docstring). `answers[i]` and `tools[i]` are turn i's on success."""

    task_id: str
    answers: tuple[str, ...]
    success_p: float = 1.0
    wrong_answer: str = "I cannot help with that."
    tools: tuple[tuple[dict[str, Any], ...], ...] = ()
    end_state: Any = None
    wrong_state: Any = None
    usage: Mapping[str, int | float] = field(
        default_factory=lambda: {"input_tokens": 120, "output_tokens": 30, "cost_usd": 0.002}
    )
    faults: Mapping[str, Fault] = field(default_factory=dict)
    """``"<attempt>/<turn>"`` → the fault that call meets (a string key: the script is JSON)."""


@dataclass(frozen=True)
class StubCall:
    """One call as the stub received it: the request's fields, the header names and values it
    was sent (`headers`: the stub is the agent side, it may see its own credentials), and the
    reply it chose (`outcome`: "right", "wrong", or the fault)."""

    task_id: str
    attempt: int
    session_id: str
    turn: int
    messages: list[dict[str, str]]
    initial_state: Any
    headers: dict[str, str]
    outcome: str


@dataclass
class StubScript:
    """The stub's script and its call log (module docstring)."""

    tasks: dict[str, StubTask]
    seed: int = 0
    latency_s: float = 0.0
    hang_s: float = 5.0
    calls: list[StubCall] = field(default_factory=list)
    _tries: dict[tuple[str, int, int], int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def succeeds(self, task_id: str, attempt: int) -> bool:
        """Whether attempt `attempt` of the task succeeds: a draw of `random.Random` seeded with
        ``"<seed>/<task_id>/<attempt>"`` below the task's `success_p`."""
        return random.Random(f"{self.seed}/{task_id}/{attempt}").random() < self.tasks[task_id].success_p

    def fault(self, task_id: str, attempt: int, turn: int) -> Fault | None:
        """The fault this call meets (an ``http_503_once`` only on the call's first try)."""
        fault = self.tasks[task_id].faults.get(f"{attempt}/{turn}")
        with self._lock:
            tries = self._tries.get((task_id, attempt, turn), 0)
            self._tries[(task_id, attempt, turn)] = tries + 1
        return None if fault == "http_503_once" and tries > 0 else fault

    def answer(
        self, request: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """(outcome, reply) for one turn request, logged: the outcome is "right", "wrong" or the
        fault; the reply is the contract's (for a fault, what a healthy call would have been)."""
        task_id, attempt, turn = str(request["task_id"]), int(request["attempt"]), int(request["turn"])
        task = self.tasks[task_id]
        fault = self.fault(task_id, attempt, turn)
        right = self.succeeds(task_id, attempt)
        reply: dict[str, Any] = {
            "answer": task.answers[turn] if right else task.wrong_answer,
            "tools_used": list(task.tools[turn]) if right and turn < len(task.tools) else [],
            "final_state": task.end_state if right else task.wrong_state,
            "usage": dict(task.usage),
        }
        outcome = fault or ("right" if right else "wrong")
        call = StubCall(
            task_id=task_id,
            attempt=attempt,
            session_id=str(request["session_id"]),
            turn=turn,
            messages=list(request["messages"]),
            initial_state=request.get("initial_state"),
            headers=dict(headers or {}),
            outcome=outcome,
        )
        with self._lock:
            self.calls.append(call)
        return outcome, reply

    def to_json(self) -> str:
        """The script (not its log) as JSON, for the `command` kind's process."""
        tasks = {task_id: asdict(task) for task_id, task in self.tasks.items()}
        return json.dumps({"tasks": tasks, "seed": self.seed, "latency_s": self.latency_s, "hang_s": self.hang_s})

    @classmethod
    def from_json(cls, text: str) -> StubScript:
        data = json.loads(text)
        tasks = {
            task_id: StubTask(**{**task, "answers": tuple(task["answers"]), "tools": tuple(map(tuple, task["tools"]))})
            for task_id, task in data["tasks"].items()
        }
        return cls(tasks=tasks, seed=data["seed"], latency_s=data["latency_s"], hang_s=data["hang_s"])


def oversize_reply() -> dict[str, Any]:
    return {"answer": "x" * OVERSIZE_BYTES}


class StubAgent:
    """The stub as a `python`-kind callable: sync, waits `latency_s`; a fault raises
    (``http_500``, ``drop``: `RuntimeError`, ``http_503_once``: `ConnectionError` on the first try,
    which the `python` kind does not retry), hangs (``timeout``) or returns a bad reply."""

    def __init__(self, script: StubScript) -> None:
        self.script = script

    def __call__(self, request: dict[str, Any]) -> Any:
        outcome, reply = self.script.answer(request)
        time.sleep(self.script.latency_s)
        if outcome == "timeout":
            time.sleep(self.script.hang_s)
        if outcome in ("http_500", "drop"):
            raise RuntimeError(f"stub fault {outcome}")
        if outcome == "http_503_once":
            raise ConnectionError("stub fault http_503_once")
        if outcome == "malformed":
            return {"answer": 42}
        return oversize_reply() if outcome == "oversize" else reply


_INSTALLED: list[StubAgent] = []


def install(agent: StubAgent) -> str:
    """Make `agent` the one `python_agent` calls; returns the `callable` to name in an `AgentSpec`."""
    _INSTALLED[:] = [agent]
    return "fair_forge_testing.stub_agent:python_agent"


def python_agent(request: dict[str, Any]) -> Any:
    """The installed `StubAgent`'s answer (the `python` kind's ``module:callable``)."""
    return _INSTALLED[0](request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real agent server would
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read `StubScript.calls` instead."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        script = self.server.script
        outcome, reply = script.answer(json.loads(body), dict(self.headers.items()))
        time.sleep(script.latency_s)
        if outcome == "timeout":
            time.sleep(script.hang_s)
        if outcome == "drop":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        status = {"http_500": 500, "http_503_once": 503}.get(outcome, 200)
        text = (
            b"not json {"
            if outcome == "malformed"
            else json.dumps(oversize_reply() if outcome == "oversize" else reply).encode()
        )
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(text)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client gave up (a timeout, the size cap)
            self.wfile.write(text)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: StubScript

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Silent: a client that gave up (a timeout, the size cap, a ``drop``) is part of the script."""


class StubAgentServer:
    """The stub over HTTP on 127.0.0.1 (module docstring); a context manager that stops it."""

    def __init__(self, script: StubScript) -> None:
        self.script = script
        self._httpd = _Server((HOST, 0), _Handler)
        self._httpd.script = script
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="stub-agent", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/turn"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> StubAgentServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def dead_url() -> str:
    """The URL of a port on 127.0.0.1 that nothing listens on (bound, then released): a dead agent."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port = probe.getsockname()[1]
    return f"http://{HOST}:{port}/turn"


def serve(path: Path, port: int = 0) -> None:
    """``python -m fair_forge_testing.stub_agent --serve SCRIPT.json [PORT]``: the `http` kind on
    127.0.0.1 (PORT, default an ephemeral one), its URL printed, until interrupted (the tutorial's
    agent: docs/tutorial.md)."""
    script = StubScript.from_json(path.read_text())
    httpd = _Server((HOST, port), _Handler)
    httpd.script = script
    print(f"stub agent on http://{HOST}:{httpd.server_address[1]}/turn", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        httpd.serve_forever(poll_interval=0.05)
    httpd.server_close()


def main(argv: list[str]) -> int:
    """The `command` kind: one request on stdin, its reply on stdout (module docstring); a fault
    exits 1 (``http_500``, ``drop``, ``http_503_once``), hangs, or writes a bad reply. With
    ``--serve`` first, `serve` instead."""
    if argv and argv[0] == "--serve":
        serve(Path(argv[1]), int(argv[2]) if len(argv) > 2 else 0)
        return 0
    script = StubScript.from_json(Path(argv[0]).read_text())
    request = json.loads(sys.stdin.buffer.read())
    outcome, reply = script.answer(request)
    if len(argv) > 1:
        with Path(argv[1]).open("a") as log:
            log.write(json.dumps(asdict(script.calls[-1])) + "\n")
    time.sleep(script.latency_s)
    if outcome == "timeout":
        time.sleep(script.hang_s)
    if outcome in ("http_500", "drop", "http_503_once"):
        return 1
    text = "not json {" if outcome == "malformed" else json.dumps(oversize_reply() if outcome == "oversize" else reply)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
