"""Target 1 — throughput: 100 distinct turns against a judge that takes 100 ms a call.

20 conversations × 5 turns, `ChatOpenAI` against the benchmark judge server on
127.0.0.1 (another process, 100 ms sleep per request), through `lambda_handler`,
with `max_concurrency` 16 and then 1, side by side in this one run. Every run asks
new questions (nothing is cached anywhere). Target: median ≤ 1.0 s with 16 (the
floor is ceil(100/16) × 0.1 = 0.7 s), and ≥ 10× faster than with 1 (issue #27
target 1: ≤ 0.90 s and ≤ 4 ms of CPU per judge call). Each run also reports the CPU
of the measuring process during the request (`time.process_time()`: the event loop and
any thread it hops to; the judge server is another process) divided by its judge calls.

With `--baseline DIR` (a checkout of other code, e.g. `git archive main | tar -x -C DIR`),
only the `max_concurrency` 16 run is measured, in pairs of fresh processes, this code
and DIR's, in alternating order: each process (this file's `child`, run from its
checkout with that checkout first on the path) makes one warm-up request (imports,
connections), then the measured one, then one more under cProfile whose count of Python
function calls per judge call is a figure that the machine's load does not move (on a
shared machine the CPU ratio of two runs of the same code varies by ±5 %). Both checkouts
of a pair ask the same questions, and their responses must be the same JSON (sha256 of the
body without its request id; with `--structured function_calling` they may differ by a few
output tokens, as the judge server numbers its tool calls process-wide and counts the ids).

    python -m benchmarks.bench_throughput [--runs 5] [--sequential-runs 3]
    python -m benchmarks.bench_throughput --runs 9 --baseline DIR [--structured json_schema]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, call_handler, header, line, openai_params, unscored_turns, verdict
from fair_forge_testing.judge_server import JudgeServerProcess
from fair_forge_testing.workloads import OPENAI, distinct_conversations, request

CONVERSATIONS, TURNS, LATENCY_S = 20, 5, 0.1


def evaluate(base_url: str, concurrency: int, tag: str, structured: str | None = None) -> dict[str, Any]:
    """One timed evaluation through `lambda_handler`: status, wall and CPU seconds, the body's digest.
    `structured`: a structured-output method (`config.structured_output_method`), else marker mode."""
    config: dict[str, Any] = {"max_concurrency": concurrency}
    if structured is not None:
        config |= {"use_structured_output": True, "structured_output_method": structured}
    body = request(
        OPENAI, distinct_conversations(CONVERSATIONS, TURNS, tag=tag), params=openai_params(base_url), **config
    )
    cpu = time.process_time()
    call = call_handler(body)
    cpu = time.process_time() - cpu
    digest = hashlib.sha256(json.dumps({**call.body, "request_id": None}).encode()).hexdigest()
    unscored = unscored_turns(call.body) if call.status == 200 else None
    return {"status": call.status, "seconds": call.seconds, "cpu": cpu, "unscored": unscored, "sha256": digest}


def check(result: dict[str, Any], stats: dict[str, Any], calls: int, concurrency: int, what: str) -> None:
    """Every turn judged once and scored, never more calls in flight than `concurrency`."""
    if result["status"] != 200 or result["unscored"] or stats["call_count"] != calls:
        raise SystemExit(f"{what} failed: {result}, server stats {stats}")
    if stats["max_in_flight"] > concurrency:
        raise SystemExit(f"{what}: {stats['max_in_flight']} calls in flight, above {concurrency}")


def run(server: JudgeServerProcess, concurrency: int, tag: str) -> dict[str, Any]:
    """One evaluation in this process; checks every turn was judged once and scored."""
    server.reset()
    result = evaluate(server.base_url, concurrency, tag)
    check(result, server.stats(), CONVERSATIONS * TURNS, concurrency, f"run {tag!r}")
    return result


def child(base_url: str, tag: str, structured: str | None) -> None:
    """In a fresh process: a warm-up request, the measured one (`max_concurrency` 16), then one more
    under cProfile for its count of Python function calls (which load does not change); one JSON line."""
    evaluate(base_url, 16, "warm-up " + tag, structured)
    result = evaluate(base_url, 16, tag, structured)
    profile = cProfile.Profile()
    profile.runcall(evaluate, base_url, 16, "counted " + tag, structured)
    calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]  # set by Stats, not in its stub
    print(json.dumps(result | {"calls_per_judge_call": calls / (CONVERSATIONS * TURNS)}))


def measure(tree: Path, server: JudgeServerProcess, tag: str, structured: str | None) -> dict[str, Any]:
    """`child` in a fresh process on the code of `tree` (this checkout or a baseline), checked."""
    server.reset()
    # Here, not at the top: the child runs this file on a baseline's packages, which may predate it.
    from benchmarks.common import run_child

    structured_args = ["--structured", structured] if structured else []
    result = run_child(tree, __file__, [server.base_url, "--tag", tag, *structured_args])
    # The warm-up and the counted request asked as many questions as the measured one.
    check(result, server.stats(), 3 * CONVERSATIONS * TURNS, 16, f"{tree}, {tag!r}")
    return result


def per_call_ms(results: list[dict[str, Any]]) -> list[float]:
    """CPU milliseconds per judge call of each run."""
    return [1000 * r["cpu"] / (CONVERSATIONS * TURNS) for r in results]


def side_by_side(server: JudgeServerProcess, runs: int, baseline: Path, structured: str | None) -> None:
    """`runs` pairs of fresh processes, this code and `baseline`'s, alternating which goes first."""
    new: list[dict[str, Any]] = []
    old: list[dict[str, Any]] = []
    for index in range(runs):
        tag = f"pair {index} {time.time_ns()}: "  # the same questions for both, new ones every pair
        order = [(ROOT, new), (baseline, old)]
        for tree, into in order if index % 2 == 0 else order[::-1]:
            into.append(measure(tree, server, tag, structured))
    mode = f"structured output ({structured})" if structured else "marker mode"
    print(f"   {runs} pairs of fresh processes, alternating; max_concurrency 16; {mode}")
    for name, results in (("this code", new), (f"baseline {baseline}", old)):
        print(f"   {name}:")
        print("     " + line("wall", [r["seconds"] for r in results]))
        print("     " + line("CPU", [r["cpu"] for r in results]))
        print("     " + line("CPU per judge call", per_call_ms(results), unit="ms", digits=2))
        calls = [r["calls_per_judge_call"] for r in results]
        print("     " + line("Python function calls per judge call", calls, unit="calls", digits=0))
    for name, key in (("wall", "seconds"), ("CPU", "cpu"), ("function calls", "calls_per_judge_call")):
        ratio = statistics.median(r[key] for r in new) / statistics.median(r[key] for r in old)
        print(f"   {name} ratio (median this / median baseline): {ratio:.2f}")
    same = all(a["sha256"] == b["sha256"] for a, b in zip(new, old, strict=True))
    print(f"   responses the same JSON in every pair (sha256 without the request id): {'yes' if same else 'NO'}")
    if not same and structured != "function_calling":
        # Function calling's token counts may differ: the server numbers its tool calls per process.
        raise SystemExit("the two checkouts answered differently: the comparison is void")
    print("   every run: 100 judge calls, 0 unscored turns, calls in flight ≤ 16")
    print("   " + verdict(statistics.median(r["seconds"] for r in new) <= 0.9, "median ≤ 0.90 s (#27 target 1)"))
    print("   " + verdict(statistics.median(per_call_ms(new)) <= 4.0, "≤ 4 ms of CPU per judge call (#27 target 1)"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs with max_concurrency 16 (pairs with --baseline)")
    parser.add_argument("--sequential-runs", type=int, default=3, help="runs with max_concurrency 1 (10 s each)")
    parser.add_argument("--baseline", type=Path, help="a checkout of other code, measured alternately with this one")
    parser.add_argument(
        "--structured",
        choices=["json_schema", "function_calling", "json_mode"],
        help="with --baseline: ask for structured output with this method (default: marker mode)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.tag, args.structured)
        return

    header("throughput: 100 turns (20 × 5), judge latency 100 ms, ChatOpenAI, through lambda_handler")
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        if args.baseline is not None:
            side_by_side(server, args.runs, args.baseline.resolve(), args.structured)
            return
        run(server, 16, "warm-up ")  # imports langchain_openai, opens the connections (see bench_cold_start)
        parallel, sequential = [], []
        for i in range(max(args.runs, args.sequential_runs)):
            if i < args.runs:
                parallel.append(run(server, 16, f"c16 run {i}: "))
            if i < args.sequential_runs:
                sequential.append(run(server, 1, f"c1 run {i}: "))
    median_c16 = statistics.median(r["seconds"] for r in parallel)
    ratio = statistics.median(r["seconds"] for r in sequential) / median_c16
    worst = min(r["seconds"] for r in sequential) / max(r["seconds"] for r in parallel)
    print("   " + line("max_concurrency 16", [r["seconds"] for r in parallel]))
    print("   " + line("max_concurrency 16, CPU per judge call", per_call_ms(parallel), unit="ms", digits=2))
    print("   " + line("max_concurrency 1 ", [r["seconds"] for r in sequential]))
    print(f"   ratio (median c1 / median c16): {ratio:.1f}x (worst pairing, min c1 / max c16: {worst:.1f}x)")
    print("   every run: 100 judge calls, 0 unscored turns, calls in flight ≤ max_concurrency")
    print("   " + verdict(median_c16 <= 1.0, "median ≤ 1.0 s with max_concurrency 16 (floor 0.7 s)"))
    print("   " + verdict(ratio >= 10, "≥ 10x faster than max_concurrency 1"))
    print("   " + verdict(median_c16 <= 0.9, "median ≤ 0.90 s with max_concurrency 16 (#27 target 1)"))
    print(
        "   " + verdict(statistics.median(per_call_ms(parallel)) <= 4.0, "≤ 4 ms of CPU per judge call (#27 target 1)")
    )


if __name__ == "__main__":
    main()
