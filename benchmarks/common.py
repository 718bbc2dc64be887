"""What the benchmarks share: calling the real `lambda_handler`, the workloads, and the figures.

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
import random
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ANSWER_PAIRS = Path(__file__).resolve().parent / "data" / "answer_pairs.jsonl"
"""105 (query, answer, ground truth) pairs: a frozen copy of the labelled pairs of
tests/data/judge_agreement.jsonl as of this benchmark's first results, so the
benchmark request stays the same when that set grows."""
OPENAI = "langchain_openai.chat_models.ChatOpenAI"
REFERENCE = "fair_forge_core.judges.ReferenceJudge"


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


def request(class_path: str, datasets: list[dict[str, Any]], **config: Any) -> dict[str, Any]:
    """A `/run` body; `params` come from `config.pop("params", {})`."""
    params = config.pop("params", {})
    return {"connector": {"class_path": class_path, "params": params}, "datasets": datasets, "config": config}


def openai_params(base_url: str) -> dict[str, Any]:
    """`ChatOpenAI` against the local judge server (a caller-chosen endpoint brings its own key)."""
    return {"model": "gpt-4o-mini", "api_key": "sk-bench-local", "base_url": base_url, "timeout": 10}


def unscored_turns(body: dict[str, Any]) -> int:
    """Turns of a 200 body without a score."""
    return sum(score is None for m in body["per_conversation_metrics"] for score in m["correctness_scores"])


# --------------------------------------------------------------------------- workloads


def distinct_conversations(count: int, turns_each: int, *, tag: str = "") -> list[dict[str, Any]]:
    """`count` conversations of `turns_each` turns, every turn distinct (nothing to dedup).

    `tag` makes the questions of one run differ from another's, so no provider-side
    cache could help either.
    """
    return [
        {
            "session_id": f"s{c}",
            "assistant_id": "agent_v1",
            "conversation": [
                {
                    "qa_id": f"q{c}-{t}",
                    "query": f"{tag}What is {c} times 100 plus {t}?",
                    "assistant": f"It is {c * 100 + t}.",
                    "ground_truth_assistant": str(c * 100 + t),
                }
                for t in range(turns_each)
            ],
        }
        for c in range(count)
    ]


def _tool_turn(rng: random.Random, index: int) -> dict[str, Any]:
    """A calculator or lookup turn with tools, right or (sometimes) wrong, from `rng`."""
    a, b = rng.randint(2, 999), rng.randint(2, 999)
    kind = rng.choice(["add", "multiply", "convert", "weather"])
    if kind in ("add", "multiply"):
        value = a + b if kind == "add" else a * b
        symbol = "+" if kind == "add" else "*"
        expected = [{"tool_name": "calculator", "parameters": {"operation": kind, "a": a, "b": b}, "step": 1}]
        wrong = rng.random() < 0.2
        used_b = b + 1 if wrong else b
        used_value = (a + used_b) if kind == "add" else a * used_b
        return {
            "query": f"What is {a} {symbol} {b}?",
            "assistant": f"The result is {used_value}.",
            "ground_truth_assistant": f"{a} {symbol} {b} equals {value}",
            "agentic": {
                "tools_used": [
                    {
                        "tool_name": "calculator",
                        "parameters": {"operation": kind, "a": a, "b": used_b},
                        "result": used_value,
                        "step": 1,
                    }
                ],
                "final_answer_uses_tools": True,
            },
            "ground_truth_agentic": {"expected_tools": expected, "tool_sequence_matters": False},
        }
    if kind == "convert":
        km = a
        return {
            "query": f"How many metres are {km} kilometres? Look up the factor first.",
            "assistant": f"{km} km is {km * 1000} metres.",
            "ground_truth_assistant": f"{km * 1000} metres",
            "agentic": {
                "tools_used": [
                    {"tool_name": "lookup_factor", "parameters": {"from": "km", "to": "m"}, "result": 1000, "step": 1},
                    {
                        "tool_name": "calculator",
                        "parameters": {"operation": "multiply", "a": km, "b": 1000},
                        "result": km * 1000,
                        "step": 2,
                    },
                ],
                "final_answer_uses_tools": True,
            },
            "ground_truth_agentic": {
                "expected_tools": [
                    {"tool_name": "lookup_factor", "parameters": {"from": "km", "to": {"$text": "M"}}, "step": 1},
                    {
                        "tool_name": "calculator",
                        "parameters": {"operation": "multiply", "a": km, "b": {"$approx": 1000, "tol": 0.5}},
                        "step": 2,
                    },
                ],
                "tool_sequence_matters": True,
            },
        }
    city = rng.choice(["Paris", "Lima", "Oslo", "Cairo", "Perth", "Quito"])
    degrees = rng.randint(-5, 35)
    return {
        "query": f"What is the weather in {city} today? (request {index})",
        "assistant": f"It is {degrees} °C and sunny in {city}.",
        "ground_truth_assistant": f"{degrees} °C, sunny",
        "agentic": {
            "tools_used": [
                {"tool_name": "weather", "parameters": {"city": city, "unit": "C"}, "result": {"temp": degrees}},
                *([{"tool_name": "search", "parameters": {"q": city}, "result": "..."}] if index % 3 == 0 else []),
            ],
            "final_answer_uses_tools": True,
        },
        "ground_truth_agentic": {
            "expected_tools": [{"tool_name": "weather", "parameters": {"city": city, "unit": {"$any_of": ["C", "F"]}}}]
        },
    }


def turn_pool(size: int = 300, *, tool_share: float = 0.4, seed: int = 7) -> list[dict[str, Any]]:
    """`size` distinct turns: the 105 pairs of `ANSWER_PAIRS` (answers only), then
    generated tool turns (calculator, unit conversion with argument rules and order,
    weather with an extra search) until `tool_share` of the pool has tools, then more
    answer-only turns made from those pairs with another wording of the query."""
    rng = random.Random(seed)
    labelled = [json.loads(line) for line in ANSWER_PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    pool = [
        {"query": row["query"], "assistant": row["answer"], "ground_truth_assistant": row["ground_truth"]}
        for row in labelled
    ]
    tools_wanted = round(size * tool_share)
    pool += [_tool_turn(rng, i) for i in range(tools_wanted)]
    variant = 0
    while len(pool) < size:
        row = labelled[variant % len(labelled)]
        variant += 1
        pool.append(
            {
                "query": f"{row['query']} (asked again, #{variant})",
                "assistant": row["answer"],
                "ground_truth_assistant": row["ground_truth"],
            }
        )
    return pool[:size]


def pooled_conversations(
    count: int, turns_each: int, pool: list[dict[str, Any]], *, attempts_per_task: int = 3, seed: int = 11
) -> list[dict[str, Any]]:
    """`count` conversations of `turns_each` turns drawn from `pool`: two assistants, tasks of
    `attempts_per_task` attempts (conversations sharing a task_id), unique session and qa ids."""
    rng = random.Random(seed)
    conversations = []
    for c in range(count):
        conversations.append(
            {
                "session_id": f"session-{c:05d}",
                "assistant_id": "agent_a" if c % 2 == 0 else "agent_b",
                "task_id": f"task-{c // attempts_per_task:05d}",
                "conversation": [{"qa_id": f"c{c}-t{t}", **rng.choice(pool)} for t in range(turns_each)],
            }
        )
    return conversations


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
