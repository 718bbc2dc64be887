"""`python -m benchmarks` (what `make bench` runs): every benchmark, each in a fresh process.

Prints each benchmark's figures as it goes and the total time at the end. Exits
non-zero only if a benchmark could not run; a missed target is printed as MISS.
"""

from __future__ import annotations

import subprocess
import sys
import time

from benchmarks.common import ROOT

BENCHMARKS = (
    "benchmarks.bench_throughput",
    "benchmarks.bench_rate_limit",
    "benchmarks.bench_overhead",
    "benchmarks.bench_cold_start",
    "benchmarks.bench_first_command",
    "benchmarks.bench_dedup",
    "benchmarks.bench_jobs",
    "benchmarks.bench_hostile",
    "benchmarks.bench_import",
    "benchmarks.bench_compare",
    "benchmarks.bench_per_task",
    "benchmarks.bench_offline_judge",
    "benchmarks.bench_judge_path",
    "benchmarks.bench_cascade",
    "benchmarks.bench_panel",
    "benchmarks.bench_goal_cost",
    "benchmarks.bench_batch",
    "benchmarks.bench_prompt_cache",
    "benchmarks.bench_agent_throughput",
)


def main() -> int:
    started = time.perf_counter()
    failed = []
    for module in BENCHMARKS:
        if subprocess.run([sys.executable, "-m", module], cwd=ROOT, check=False).returncode != 0:
            failed.append(module)
        print(flush=True)
    print(
        f"== all benchmarks: {time.perf_counter() - started:.0f} s"
        + (f"; failed: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
