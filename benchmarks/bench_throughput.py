"""Target 1 — throughput: 100 distinct turns against a judge that takes 100 ms a call.

20 conversations × 5 turns, `ChatOpenAI` against the benchmark judge server on
127.0.0.1 (another process, 100 ms sleep per request), through `lambda_handler`,
with `max_concurrency` 16 and then 1, side by side in this one run. Every run asks
new questions (nothing is cached anywhere). Target: median ≤ 1.0 s with 16 (the
floor is ceil(100/16) × 0.1 = 0.7 s), and ≥ 10× faster than with 1.

    python -m benchmarks.bench_throughput [--runs 5] [--sequential-runs 3]
"""

from __future__ import annotations

import argparse
import statistics

from benchmarks.common import call_handler, header, line, openai_params, unscored_turns, verdict
from fair_forge_testing.judge_server import JudgeServerProcess
from fair_forge_testing.workloads import OPENAI, distinct_conversations, request

CONVERSATIONS, TURNS, LATENCY_S = 20, 5, 0.1


def run(server: JudgeServerProcess, concurrency: int, tag: str) -> float:
    """One evaluation; checks every turn was judged once and scored."""
    server.reset()
    body = request(
        OPENAI,
        distinct_conversations(CONVERSATIONS, TURNS, tag=tag),
        params=openai_params(server.base_url),
        max_concurrency=concurrency,
    )
    call = call_handler(body)
    stats = server.stats()
    turns = CONVERSATIONS * TURNS
    if call.status != 200 or unscored_turns(call.body) or stats["call_count"] != turns:
        raise SystemExit(f"run {tag!r} failed: status {call.status}, stats {stats}, body {str(call.body)[:300]}")
    if stats["max_in_flight"] > concurrency:
        raise SystemExit(f"run {tag!r}: {stats['max_in_flight']} calls in flight, above {concurrency}")
    return call.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs with max_concurrency 16")
    parser.add_argument("--sequential-runs", type=int, default=3, help="runs with max_concurrency 1 (10 s each)")
    args = parser.parse_args()

    header("throughput: 100 turns (20 × 5), judge latency 100 ms, ChatOpenAI, through lambda_handler")
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        run(server, 16, "warm-up ")  # imports langchain_openai, opens the connections (see bench_cold_start)
        parallel, sequential = [], []
        for i in range(max(args.runs, args.sequential_runs)):
            if i < args.runs:
                parallel.append(run(server, 16, f"c16 run {i}: "))
            if i < args.sequential_runs:
                sequential.append(run(server, 1, f"c1 run {i}: "))
    ratio = statistics.median(sequential) / statistics.median(parallel)
    worst = min(sequential) / max(parallel)
    print("   " + line("max_concurrency 16", parallel))
    print("   " + line("max_concurrency 1 ", sequential))
    print(f"   ratio (median c1 / median c16): {ratio:.1f}x (worst pairing, min c1 / max c16: {worst:.1f}x)")
    print("   every run: 100 judge calls, 0 unscored turns, calls in flight ≤ max_concurrency")
    print("   " + verdict(statistics.median(parallel) <= 1.0, "median ≤ 1.0 s with max_concurrency 16 (floor 0.7 s)"))
    print("   " + verdict(ratio >= 10, "≥ 10x faster than max_concurrency 1"))


if __name__ == "__main__":
    main()
