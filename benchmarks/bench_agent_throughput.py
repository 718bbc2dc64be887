"""Issue #35 — the attempt runner's throughput against the stub agent.

80 single-turn attempts (8 tasks × 10), the stub agent (`fair_forge_testing/stub_agent.py`) over
HTTP on 127.0.0.1 answering each call after 100 ms, the `http` kind (httpx), 8 attempts in
flight: the latency allows 8 / 0.1 s = 80 attempts/s. Target: ≥ 90 % of that (≥ 72 attempts/s).
The stub serves from threads of this process (its calls sleep, so they hardly compete with the
runner for the GIL); only the run is timed, the agent built and the connections warmed first.

    python -m benchmarks.bench_agent_throughput [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from benchmarks.common import header, line, verdict
from fair_forge_core.agents import AgentSpec, TaskSpec, build_agent, run_attempts
from fair_forge_testing.stub_agent import StubAgentServer, StubScript, StubTask

TASKS, ATTEMPTS, LATENCY_S, IN_FLIGHT = 8, 10, 0.1, 8
ALLOWED = IN_FLIGHT / LATENCY_S
TARGET = 0.9


def workload() -> tuple[StubScript, list[TaskSpec]]:
    names = [f"task-{i}" for i in range(TASKS)]
    script = StubScript(
        tasks={name: StubTask(name, answers=(f"{name} done",), success_p=0.7) for name in names}, latency_s=LATENCY_S
    )
    tasks = [
        TaskSpec.model_validate({"task_id": name, "turns": [{"query": f"Do {name}", "ground_truth_assistant": "done"}]})
        for name in names
    ]
    return script, tasks


async def timed_runs(url: str, tasks: list[TaskSpec], runs: int) -> list[float]:
    spec = AgentSpec(kind="http", assistant_id="stub", url=url, timeout_s=10)
    agent = build_agent(spec, concurrency=IN_FLIGHT)
    try:
        await run_attempts(tasks, agent, attempts=1, concurrency=IN_FLIGHT)  # warm-up: connections, imports
        rates = []
        for _ in range(runs):
            started = time.perf_counter()
            recording = await run_attempts(tasks, agent, attempts=ATTEMPTS, concurrency=IN_FLIGHT)
            seconds = time.perf_counter() - started
            if recording.summary.attempts != TASKS * ATTEMPTS or recording.summary.failed:
                raise SystemExit(f"the run failed: {recording.summary}")
            rates.append(recording.summary.attempts / seconds)
        return rates
    finally:
        await agent.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    header(
        f"agent runner: {TASKS * ATTEMPTS} attempts, stub agent {LATENCY_S * 1000:.0f} ms a call, {IN_FLIGHT} in flight"
    )
    script, tasks = workload()
    with StubAgentServer(script) as server:
        rates = asyncio.run(timed_runs(server.url, tasks, args.runs))
    ratios = [rate / ALLOWED for rate in rates]
    print("   " + line("attempts/s", rates, unit="", digits=1))
    print("   " + line(f"ratio to {ALLOWED:.0f}/s", ratios, unit="", digits=3))
    ordered = sorted(ratios)
    print(
        "   "
        + verdict(
            ordered[len(ordered) // 2] >= TARGET, f"≥ {TARGET:.0%} of the {ALLOWED:.0f} attempts/s the latency allows"
        )
    )


if __name__ == "__main__":
    main()
