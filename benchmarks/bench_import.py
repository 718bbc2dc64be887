"""Issue #14 — importers: 10,000 spans (messages, runs, span objects) of each trace format.

Each format's example in `examples/traces/` is copied until it holds at least 10,000
units (messages for `openai` and `langchain`, spans for `otel` and `openinference`, trace
and span objects for `openai-agents`, runs for `langsmith`, traces and observations for
`langfuse`); each copy gets fresh ids (hex ids and UUIDs
rewritten consistently, conversation and thread ids suffixed), so copies stay separate
conversations as in a real export. Timed: the importer alone, and `datasets_from_traces`
(import and the join with the example's references). Target: under 3 s each.

    python -m benchmarks.bench_import [--runs 3] [--units 10000]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import header, line, verdict
from examples.run_local import trace_requests
from fair_forge_core.importers import IMPORTERS, datasets_from_traces

TARGET_S = 3.0

_UUID = re.compile(r"(?<=[0-9a-f]{8}-)[0-9a-f]{4}(?=-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")  # its 2nd group
_HEX = re.compile(r"(?<![0-9a-f-])(?:[0-9a-f]{32}|[0-9a-f]{24}|[0-9a-f]{16})(?![0-9a-f-])")  # trace, span ids
_THREAD = re.compile(
    r'("(?:group_id|thread_id|conversation_id|sessionId)":"'
    r'|"(?:gen_ai\.conversation|session)\.id","value":\{"stringValue":")([^"]+)'
)
_LANGFUSE_ID = re.compile(r'("(?:id|traceId|parentObservationId)":")([^"]+)')  # Langfuse ids are any text


def fresh_copy(compact: str, n: int, trace_format: str = "") -> Any:
    """The example (compact JSON text) with its ids made unique to copy `n`."""
    if trace_format == "langfuse":
        compact = _LANGFUSE_ID.sub(lambda m: f"{m.group(1)}{m.group(2)}~{n}", compact)
    text = _UUID.sub(lambda m: f"{n:04x}", compact)
    text = _HEX.sub(lambda m: f"{n:08x}{m.group(0)[8:]}", text)
    text = _THREAD.sub(lambda m: f"{m.group(1)}{m.group(2)}~{n}", text)
    return json.loads(text)


def _otlp_spans(items: list[Any]) -> int:
    return sum(
        len(scope.get("spans", []))
        for request in items
        for resource in request.get("resourceSpans", [])
        for scope in resource.get("scopeSpans", [])
    )


UNITS: dict[str, Callable[[list[Any]], int]] = {
    "openai": lambda items: sum(len(t["messages"] if isinstance(t, dict) else t) for t in items),
    "langchain": lambda items: sum(len(t["messages"] if isinstance(t, dict) else t) for t in items),
    "otel": _otlp_spans,
    "openinference": _otlp_spans,
    "langfuse": lambda items: sum(1 + len(t.get("observations") or []) for t in items),
    "openai-agents": lambda items: sum(len(payload["data"]) if isinstance(payload, dict) else 1 for payload in items),
    "langsmith": len,
}
"""Units of a list of items of each format (what "10,000 spans" counts)."""


def scaled(items: list[Any], trace_format: str, units: int) -> tuple[list[Any], int]:
    """Copies of an example's items as one list with at least `units` units, and their count."""
    compact = json.dumps(items, separators=(",", ":"), ensure_ascii=False)
    copies = math.ceil(units / UNITS[trace_format](items))
    scaled_items = [item for n in range(copies) for item in fresh_copy(compact, n, trace_format)]
    return scaled_items, UNITS[trace_format](scaled_items)


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    started = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--units", type=int, default=10_000)
    args = parser.parse_args()
    header(f"importers: ≥ {args.units:,} units of each format, copied from examples/traces/")
    worst = 0.0
    for _, body in trace_requests():  # the bodies `make run` sends: each example's items and references
        trace_format, task_key, references = body["traces"]["format"], body["task_key"], body["references"]
        items, units = scaled(body["traces"]["items"], trace_format, args.units)
        importer = IMPORTERS[trace_format]
        traces = importer(items)
        datasets, _, _ = datasets_from_traces(trace_format, items, references, task_key=task_key)
        imports = [timed(importer, items) for _ in range(args.runs)]
        joins = [
            timed(datasets_from_traces, trace_format, items, references, task_key=task_key) for _ in range(args.runs)
        ]
        worst = max(worst, *imports, *joins)
        print(f"   {trace_format}: {units:,} units → {len(traces):,} traces, {len(datasets):,} conversations")
        print("      " + line("import", imports))
        print("      " + line("import + join", joins))
    print("   " + verdict(worst < TARGET_S, f"every format under {TARGET_S:.0f} s (worst {worst:.2f} s)"))


if __name__ == "__main__":
    main()
