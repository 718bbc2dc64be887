"""Issue #38 item 1 — every core judges: the judge calls of one evaluation over worker processes.

`ChatOpenAI` against the benchmark judge server on 127.0.0.1 (another process, 100 ms a
request), through `lambda_handler` (the warm API: each child process makes a warm-up request
first, and waits for its workers), 1,000 distinct turns (200 conversations × 5) with 16, 32, 64
and 128 calls in flight, and 100 turns (20 × 5) with 16. Each size is measured in fresh child
processes with `FAIR_FORGE_JUDGE_PROCESSES` 0 (one event loop: the code before this work) and
with the default (one worker per further CPU), alternating which goes first; both ask the same
questions and their responses must be the same JSON (sha256 without the request id).

Figures: the wall of the request, its share of the floor (ceil(turns / in flight) × 0.1 s), and
the CPU of the evaluation (the process and its workers, `/proc/<pid>/stat`) per judge call, and
the judge server's CPU per request (the machine's other load). Targets (issue #38): 1,000 turns
with 128 in flight ≥ 85 % of the floor (0.8 s); 100 turns with 16 ≥ 90 %; ≤ 1.5 ms of CPU a call.

With `--against transport`, the two sides are instead the default code with httpx's own HTTP
transport under the SDK (`FAIR_FORGE_JUDGE_TRANSPORT=httpx`: httpcore, anyio, h11) and with the
judge's (`judges/http_transport.py`), both on every core.

    python -m benchmarks.bench_cores [--runs 3] [--sizes 1000x16,1000x128,100x16] [--against transport]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, call_handler, header, openai_params, unscored_turns, verdict
from fair_forge_testing.judge_server import JudgeServerProcess
from fair_forge_testing.workloads import OPENAI, distinct_conversations, request

LATENCY_S, TURNS_EACH = 0.1, 5
SIZES = ((1000, 16), (1000, 32), (1000, 64), (1000, 128), (100, 16))
TARGETS = {(1000, 128): 0.85, (100, 16): 0.90}
CPU_TARGET_MS = 1.5
SIDES = {
    "processes": (("one loop", {"FAIR_FORGE_JUDGE_PROCESSES": "0"}), ("every core", {})),
    "transport": (("httpcore", {"FAIR_FORGE_JUDGE_TRANSPORT": "httpx"}), ("ours", {})),
}
"""What each side of a pair sets in its child's environment; the targets apply to the second (today's code)."""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def evaluation_cpu() -> float:
    """CPU seconds of this process and its judge workers so far."""
    from fair_forge_core.judges.processes import this_process_workers

    workers = this_process_workers()
    pids = [worker.pid for worker in workers.workers if worker.alive] if workers is not None else []
    return time.process_time() + sum(cpu_seconds(pid) for pid in pids)


def child(base_url: str, turns: int, concurrency: int, tag: str) -> None:
    """In a fresh process: a warm-up request (workers started and ready), then the measured one."""
    from fair_forge_core.judges.processes import this_process_workers

    workers = this_process_workers()
    if workers is not None:
        workers.start()
        workers.wait_ready(60.0)

    def body(label: str) -> dict[str, Any]:
        conversations = distinct_conversations(turns // TURNS_EACH, TURNS_EACH, tag=label)
        return request(OPENAI, conversations, params=openai_params(base_url), max_concurrency=concurrency)

    call_handler(body("warm-up " + tag))
    measured = body(tag)
    cpu = evaluation_cpu()
    call = call_handler(measured)
    cpu = evaluation_cpu() - cpu
    digest = hashlib.sha256(json.dumps({**call.body, "request_id": None}).encode()).hexdigest()
    unscored = unscored_turns(call.body) if call.status == 200 else None
    sent = sum(w.calls for w in workers.workers) if workers is not None else 0
    print(
        json.dumps(
            {"status": call.status, "seconds": call.seconds, "cpu": cpu, "unscored": unscored, "sha256": digest}
            | {"worker_calls": sent}
        )
    )


def measure(server: JudgeServerProcess, turns: int, concurrency: int, env: dict[str, str], tag: str) -> dict[str, Any]:
    from benchmarks.common import run_child

    server.reset()
    before = cpu_seconds(server.pid)
    result = run_child(
        ROOT,
        __file__,
        [server.base_url, "--turns", str(turns), "--concurrency", str(concurrency), "--tag", tag],
        env=env,
    )
    result["server_cpu"] = cpu_seconds(server.pid) - before
    stats = server.stats()
    if result["status"] != 200 or result["unscored"] or stats["call_count"] != 2 * turns:
        raise SystemExit(f"{turns} turns × {concurrency}, {env}: {result}, server {stats}")
    if stats["max_in_flight"] > concurrency:
        raise SystemExit(f"{stats['max_in_flight']} calls in flight, above {concurrency}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="pairs of fresh processes per size")
    parser.add_argument("--sizes", help="TURNSxIN_FLIGHT,… (default: all five)")
    parser.add_argument("--against", choices=sorted(SIDES), default="processes", help="what the two sides differ in")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--turns", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.turns, args.concurrency, args.tag)
        return
    sizes = SIZES
    if args.sizes:
        sizes = tuple(tuple(int(n) for n in size.split("x")) for size in args.sizes.split(","))  # type: ignore[misc]
    header("Every core judges (issue #38 item 1)")
    print(f"   load average before: {os.getloadavg()}")
    with JudgeServerProcess(latency_s=LATENCY_S) as server:
        for turns, concurrency in sizes:
            floor = math.ceil(turns / concurrency) * LATENCY_S
            sides = SIDES[args.against]
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in sides}
            for index in range(args.runs):
                tag = f"{turns}x{concurrency} run {index} {time.time_ns()}: "
                for name, env in sides if index % 2 == 0 else sides[::-1]:
                    runs[name].append(measure(server, turns, concurrency, env, tag))
            before, today = (runs[name] for name, _ in sides)
            same = all(a["sha256"] == b["sha256"] for a, b in zip(before, today, strict=True))
            print(f"\n   {turns} turns, {concurrency} in flight (floor {floor:.2f} s), {args.runs} pairs:")
            for name, results in runs.items():
                wall = statistics.median(r["seconds"] for r in results)
                cpu_ms = statistics.median(1000 * r["cpu"] / turns for r in results)
                server_ms = statistics.median(1000 * r["server_cpu"] / (2 * turns) for r in results)
                on_workers = statistics.median(r["worker_calls"] for r in results)
                print(
                    f"     {name:11s}: wall {wall:.3f} s ({min(r['seconds'] for r in results):.3f}–"
                    f"{max(r['seconds'] for r in results):.3f}), {100 * floor / wall:.0f} % of the floor; "
                    f"CPU {cpu_ms:.2f} ms a call (process + workers); server {server_ms:.2f} ms a request; "
                    f"calls on workers {on_workers:.0f} of {2 * turns}"
                )
            print(f"     responses the same JSON in every pair: {'yes' if same else 'NO'}")
            if not same:
                raise SystemExit("the two sides answered differently")
            target = TARGETS.get((turns, concurrency))
            wall = statistics.median(r["seconds"] for r in today)
            if target is not None:
                print("     " + verdict(floor / wall >= target, f"≥ {100 * target:.0f} % of the floor (#38 item 1)"))
            cpu_ms = statistics.median(1000 * r["cpu"] / turns for r in today)
            print("     " + verdict(cpu_ms <= CPU_TARGET_MS, f"≤ {CPU_TARGET_MS} ms of CPU a judge call (#38 item 1)"))
    print(f"\n   load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
