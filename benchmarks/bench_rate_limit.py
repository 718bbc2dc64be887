"""Target 2 — rate limits: 200 turns against a judge that allows 20 requests a second.

The benchmark judge server (another process on 127.0.0.1) sleeps 100 ms per request
and answers 429 with `retry-after-ms` / `retry-after` (the time until its one-second
window frees a slot) beyond 20 requests in any second. 40 conversations × 5 distinct
turns, `ChatOpenAI`, `max_concurrency` 16, through `lambda_handler`. Target: every
run 0 unscored turns, median ≤ 13 s. The limit itself allows no less than 9.1 s
(200 requests at 20 a second is 10 s; this window lets the first 20 go at t = 0,
the last 20 at t = 9 s, each then taking 0.1 s).

    python -m benchmarks.bench_rate_limit [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.common import call_handler, header, line, openai_params, unscored_turns, verdict
from fair_forge_testing.judge_server import JudgeServerProcess
from fair_forge_testing.workloads import OPENAI, distinct_conversations, request

CONVERSATIONS, TURNS, LATENCY_S, RPS, CONCURRENCY = 40, 5, 0.1, 20, 16


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    header(f"rate limit: 200 turns, judge 100 ms and 429 beyond {RPS} req/s, max_concurrency {CONCURRENCY}")
    seconds, unscored, rate_limited, calls = [], [], [], []
    with JudgeServerProcess(latency_s=LATENCY_S, rate_limit_rps=RPS) as server:
        call_handler(
            request(OPENAI, distinct_conversations(1, 2, tag="warm-up "), params=openai_params(server.base_url))
        )
        for i in range(args.runs):
            time.sleep(1.1)  # let the server's one-second window empty: each run starts alike
            server.reset()
            body = request(
                OPENAI,
                distinct_conversations(CONVERSATIONS, TURNS, tag=f"run {i}: "),
                params=openai_params(server.base_url),
                max_concurrency=CONCURRENCY,
            )
            call = call_handler(body)
            if call.status != 200:
                raise SystemExit(f"run {i} failed: {call.status} {str(call.body)[:300]}")
            stats = server.stats()
            seconds.append(call.seconds)
            unscored.append(unscored_turns(call.body))
            rate_limited.append(stats["status_counts"].get("429", 0))
            calls.append(stats["call_count"])
    print("   " + line("wall", seconds))
    print(f"   unscored turns per run: {unscored}")
    print(f"   429 answers per run: {rate_limited} (judge calls per run: {calls})")
    rates = [(CONVERSATIONS * TURNS - u) / s for u, s in zip(unscored, seconds, strict=True)]
    print(f"   scored turns per second: median {statistics.median(rates):.1f} (the limit: 20)")
    print("   " + verdict(max(unscored) == 0, "0 unscored turns in every run"))
    print("   " + verdict(statistics.median(seconds) <= 13.0, "median ≤ 13 s (the limit allows no less than 9.1 s)"))


if __name__ == "__main__":
    main()
