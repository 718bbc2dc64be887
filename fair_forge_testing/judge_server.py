"""The benchmarks' judge: `fair_forge_testing.fake_llm_server.FakeLLMServer` in a process of its own.

A real provider is another machine; running the fake server in the benchmark's
own process would make its request threads compete with the evaluation for the
GIL and inflate what is measured. `JudgeServerProcess` starts

    python -m fair_forge_testing.judge_server --latency-s 0.1 --rate-limit-rps 20

(`--reply-bytes N`: every reply is a chat completion whose text is N bytes long, a
judge that rambles), which serves on 127.0.0.1 (ephemeral port), prints one JSON line with its port, and
then answers one command per stdin line with one JSON line on stdout:

- `stats`: `{"call_count", "max_in_flight", "status_counts", "latency_s", "rate_limit_rps"}`
- `reset`: clears the counters and the rate window's history of attempts, answers `{"ok": true}`

It stops on `quit` or when stdin closes (so it never outlives the benchmark).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _stats(server: Any) -> dict[str, Any]:
    return {
        "call_count": server.call_count,
        "max_in_flight": server.max_in_flight,
        "status_counts": {str(status): count for status, count in sorted(server.status_counts.items())},
        "latency_s": server.latency_s,
        "rate_limit_rps": server.rate_limit_rps,
    }


def serve(latency_s: float, rate_limit_rps: float | None, reply_bytes: int | None = None) -> None:
    """Serve until `quit` or EOF on stdin, answering commands as the module docstring says."""
    from fair_forge_testing.fake_llm_server import FakeLLMServer, judge_responder

    responder = judge_responder if reply_bytes is None else (lambda request: "x" * reply_bytes)
    with FakeLLMServer(responder, latency_s=latency_s, rate_limit_rps=rate_limit_rps) as server:
        answer_commands(server)


def answer_commands(server: Any) -> None:
    """Print the running `server`'s port, then answer `stats`, `reset` and `quit` on stdin (module
    docstring) until `quit` or EOF: what a `JudgeServerProcess` child does with any responder."""
    print(json.dumps({"port": server.port}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "stats":
            answer: dict[str, Any] = _stats(server)
        elif command == "reset":
            server.reset_stats(forget_attempts=True)
            answer = {"ok": True}
        elif command == "quit":
            break
        else:
            answer = {"error": f"unknown command {command!r}"}
        print(json.dumps(answer), flush=True)


class JudgeServerProcess:
    """A `FakeLLMServer` in a child process; use as a context manager.

    `base_url` is what `ChatOpenAI(base_url=...)` takes; `stats()` and `reset()`
    forward the commands of the module docstring.
    """

    def __init__(
        self, *, latency_s: float = 0.0, rate_limit_rps: float | None = None, reply_bytes: int | None = None
    ) -> None:
        command = [sys.executable, "-m", "fair_forge_testing.judge_server", "--latency-s", str(latency_s)]
        if rate_limit_rps is not None:
            command += ["--rate-limit-rps", str(rate_limit_rps)]
        if reply_bytes is not None:
            command += ["--reply-bytes", str(reply_bytes)]
        self._start(command)

    def _start(self, command: list[str]) -> None:
        """Start the child `command` (a `serve` of this module's protocol) and read its port."""
        # The server's stderr (socketserver prints a traceback for each connection a
        # client resets) goes to a file, read back only if the server fails to start.
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 -- lives as long as the server; closed in close()
        self._process = subprocess.Popen(
            command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1
        )
        try:
            self.port = int(self._read()["port"])
        except Exception:
            self.close()
            raise

    @property
    def pid(self) -> int:
        """The server process's id (for its CPU time in `/proc`)."""
        return self._process.pid

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._stderr.seek(0)
            tail = self._stderr.read()[-2000:]
            raise RuntimeError(f"the judge server exited (code {self._process.poll()}): {tail}")
        return json.loads(line)

    def _command(self, command: str) -> dict[str, Any]:
        assert self._process.stdin is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        return self._read()

    def stats(self) -> dict[str, Any]:
        """Counters since the last `reset()`: calls, peak in flight, responses per status."""
        return self._command("stats")

    def reset(self) -> None:
        self._command("reset")

    def close(self) -> None:
        """Stop the child (quit, then terminate if it lingers). Idempotent."""
        if self._process.poll() is None:
            try:
                assert self._process.stdin is not None
                self._process.stdin.write("quit\n")
                self._process.stdin.close()
                self._process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._process.terminate()
                self._process.wait(timeout=10)
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()

    def __enter__(self) -> JudgeServerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-s", type=float, default=0.0, help="sleep per admitted request")
    parser.add_argument("--rate-limit-rps", type=float, default=None, help="429 beyond this many requests a second")
    parser.add_argument("--reply-bytes", type=int, default=None, help="every reply's text is this many bytes")
    args = parser.parse_args()
    serve(args.latency_s, args.rate_limit_rps, args.reply_bytes)


if __name__ == "__main__":
    main()
