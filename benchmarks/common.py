"""What the benchmarks share: calling the real `lambda_handler`, and the figures (the workloads are
`fair_forge_testing.workloads`, which the tests check too).

Every benchmark calls `handler.app.lambda_handler` with a real API Gateway REST proxy
event (`handler.local.make_proxy_event`), as API Gateway would, and times that call
alone (building the request body is the client's work, not the service's).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- calling the handler


@dataclass
class Call:
    """One timed `lambda_handler` call: HTTP status, parsed body, wall seconds, and the
    seconds of them after the judge phase (`after_judge_ms` of the "evaluation finished"
    log line, when the log level lets it through; None when the request was not evaluated)."""

    status: int
    body: dict[str, Any]
    seconds: float
    after_judge_s: float | None = None


def call_handler(body: dict[str, Any] | str, *, timeout_s: float = 60.0) -> Call:
    """POST `body` to `/run` through `lambda_handler`; only the handler call is timed.

    The handler's stdout (log lines, EMF metrics) is swallowed so the figures stay readable.
    """
    from handler.app import lambda_handler
    from handler.local import LocalLambdaContext, make_proxy_event
    from handler.observability import logger

    raw = body if isinstance(body, str) else json.dumps(body)
    event = make_proxy_event("POST", "/run", raw, headers={"Content-Type": "application/json"})
    context = LocalLambdaContext(timeout_s=timeout_s)
    finished = _FinishedRecords()
    logger.addHandler(finished)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            started = time.perf_counter()
            response = lambda_handler(event, context)
            seconds = time.perf_counter() - started
    finally:
        logger.removeHandler(finished)
    after_judge_s = finished.records[-1].after_judge_ms / 1000 if finished.records else None
    return Call(
        status=response["statusCode"], body=json.loads(response["body"]), seconds=seconds, after_judge_s=after_judge_s
    )


class _FinishedRecords(logging.Handler):
    """Keeps the handler's "evaluation finished" log records (their extra keys are attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "evaluation finished":
            self.records.append(record)


def openai_params(base_url: str) -> dict[str, Any]:
    """`ChatOpenAI` against the local judge server (a caller-chosen endpoint brings its own key)."""
    return {"model": "gpt-4o-mini", "api_key": "sk-bench-local", "base_url": base_url, "timeout": 10}


def unscored_turns(body: dict[str, Any]) -> int:
    """Turns of a 200 body without a score."""
    return sum(score is None for m in body["per_conversation_metrics"] for score in m["correctness_scores"])


# --------------------------------------------------------------------------- figures


def summary(samples: Iterable[float]) -> dict[str, float]:
    values = sorted(samples)
    return {"median": statistics.median(values), "min": values[0], "max": values[-1], "n": len(values)}


def line(name: str, samples: Iterable[float], unit: str = "s", digits: int = 3) -> str:
    """`name: median 0.812 s (min 0.790, max 0.850, n=5)`."""
    s = summary(samples)
    return (
        f"{name}: median {s['median']:.{digits}f} {unit} "
        f"(min {s['min']:.{digits}f}, max {s['max']:.{digits}f}, n={int(s['n'])})"
    )


def verdict(ok: bool, what: str) -> str:
    return f"{'PASS' if ok else 'MISS'}  {what}"


def machine() -> str:
    """One line on where the figures come from."""
    cpus = os.cpu_count()
    model = ""
    with contextlib.suppress(OSError):
        for text in Path("/proc/cpuinfo").read_text().splitlines():
            if text.startswith("model name"):
                model = text.split(":", 1)[1].strip()
                break
    return f"{platform.python_implementation()} {platform.python_version()}, {cpus} CPU(s) {model}".strip()


def header(title: str) -> None:
    """Print a benchmark's title and the machine; quieten the handler's logs first.

    The handler logs JSON lines at INFO (and prints EMF metrics, which `call_handler`
    swallows); a benchmark runs at WARNING so its figures stay readable. Set before
    `handler.app` is imported, and inherited by the processes a benchmark starts.
    """
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    # The judge is the fake server on 127.0.0.1, which a deployment refuses unless its operator
    # allows that network: allowed here as an operator would (inherited by child processes).
    os.environ.setdefault("FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS", "127.0.0.0/8,::1/128")
    print(f"== {title}")
    print(f"   machine: {machine()}")


def repeat(runs: int, fn: Callable[[int], float]) -> list[float]:
    """`fn(i)` for i in range(runs): the seconds each returned."""
    return [fn(i) for i in range(runs)]


def run_child(tree: Path, script: str, args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """`script --child ARGS` in a fresh process on the code of `tree` (this checkout, or a baseline
    copy for a side-by-side run), with `env` added to the environment; the JSON object its last line
    prints. The script is run by its path with `tree` first on the path, so `tree`'s packages are the
    ones imported. A process that fails stops the benchmark with the end of its stderr."""
    path = os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, str(Path(script).resolve()), "--child", *args],
        cwd=tree,
        env={**os.environ, **(env or {}), "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"measured process failed ({tree}):\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result
