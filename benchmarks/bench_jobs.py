"""Asynchronous jobs — a 10,000-conversation job on the ReferenceJudge through the local orchestration.

The whole path of a job, in this process: `POST /jobs` through `lambda_handler` (validate,
plan 50 shards of 200, encrypt, write to S3, start the execution), the state machine of
`statemachine/evaluation.asl.json` run by moto's Step Functions (the Distributed Map over the
S3 manifest, one worker per shard, then the reduce), the project's real worker and reduce
handlers dispatched in-process (`fair_forge_testing/jobs_harness.py`), and `GET /jobs/{id}`
polled until the result is there (fetched through its presigned URL). moto's S3, KMS and
Step Functions run in this process too, so the end-to-end time includes the emulator.

Figures: end-to-end wall time (POST → succeeded), the reduce handler's wall time inside the
orchestration, and the reduce's peak memory measured where nothing else runs: a fresh
process that does exactly what `reduce_handler` does to the 50 shard results (read them,
`load_conversations`, `reduce_shards`, serialise `result.json`) — its peak RSS is what the
reduce Lambda needs (`ReduceMemorySize`, 2048 MB by default). Each run also checks the job's
aggregated metrics against one unsharded `evaluate()` of the same request.

Targets: reduce ≤ 30 s and ≤ 1,024 MB peak RSS (half the reduce Lambda's default memory).

    python -m benchmarks.bench_jobs [--runs 3] [--conversations 10000] [--turns 1]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, header, line, verdict
from fair_forge_testing.workloads import REFERENCE, pooled_conversations, request, turn_pool

SHARD_SIZE = 200
LAMBDA_BODY_LIMIT = 6_000_000


def peak_rss_mb() -> float:
    """This process's peak resident memory. Linux: VmHWM, which starts afresh at exec (ru_maxrss would carry
    the parent's peak over a fork and exec); elsewhere ru_maxrss."""
    with contextlib.suppress(OSError):
        for text in Path("/proc/self/status").read_text().splitlines():
            if text.startswith("VmHWM:"):
                return int(text.split()[1]) / 1024  # kB
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def reduce_in_this_process(directory: Path, config: dict[str, Any]) -> None:
    """What `reduce_handler` does between its S3 reads and its S3 write; prints seconds and peak RSS."""
    from fair_forge_core.evaluate import build_result  # noqa: F401  (the reduce Lambda has it imported too)
    from fair_forge_core.schemas import EvaluationConfig
    from fair_forge_core.sharding import load_conversations, reduce_shards

    before = peak_rss_mb()
    started = time.perf_counter()
    files = sorted(directory.glob("*.json"))
    result = reduce_shards((load_conversations(path.read_bytes()) for path in files), EvaluationConfig(**config))
    body = result.model_dump_json()[:-1] + ',"request_id":null,"job_id":"bench"}'
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak_mb": peak_rss_mb(), "imports_mb": before, "bytes": len(body)}))


def reduce_in_a_fresh_process(directory: Path, config: dict[str, Any]) -> dict[str, float]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.bench_jobs",
            "--reduce-only",
            str(directory),
            "--config",
            json.dumps(config),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def one_job(body: dict[str, Any], results_dir: Path) -> dict[str, Any]:
    """Submit `body` as a job through the local orchestration; the figures of that run."""
    import pytest
    import requests

    from fair_forge_testing.jobs_harness import jobs_aws

    monkeypatch = pytest.MonkeyPatch()
    try:
        with jobs_aws(monkeypatch, shard_size=SHARD_SIZE) as aws, contextlib.redirect_stdout(io.StringIO()):
            reduce_seconds: list[float] = []
            original = aws._invoke

            def timed(backend: Any, name: str, qualifier: Any, payload: Any, headers: Any) -> bytes:
                started = time.perf_counter()
                answer = original(backend, name, qualifier, payload, headers)
                if name.endswith("-reduce"):
                    reduce_seconds.append(time.perf_counter() - started)
                return answer

            aws._invoke = timed  # type: ignore[method-assign]
            started = time.perf_counter()
            submitted = aws.submit(body)
            submit_seconds = time.perf_counter() - started
            assert submitted.status == 202, submitted.body
            final = aws.wait(submitted.body["job_id"], timeout_s=1800)
            end_to_end = time.perf_counter() - started
            assert final.body["status"] == "succeeded", final.body
            result = final.body["result"] or requests.get(final.body["result_url"], timeout=120).json()
            for key, content in aws.objects(f"jobs/{submitted.body['job_id']}/results/").items():
                (results_dir / key.rsplit("/", 1)[1]).write_bytes(content)
        return {
            "submit": submit_seconds,
            "end_to_end": end_to_end,
            "reduce": sum(reduce_seconds),
            "shards": submitted.body["shards"],
            "result": result,
            "result_bytes": final.body["result_bytes"],
        }
    finally:
        monkeypatch.undo()


def main() -> None:
    warnings.filterwarnings("ignore", message="No application metrics to publish")  # concurrent in-process workers
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=1)
    parser.add_argument("--reduce-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--config", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reduce_only:
        reduce_in_this_process(args.reduce_only, json.loads(args.config))
        return

    header(
        f"jobs: {args.conversations:,} conversations × {args.turns} turn(s), ReferenceJudge, POST /jobs → "
        f"Step Functions (moto) → workers → reduce → GET /jobs/{{id}}"
    )
    config = {"k": 3}
    body = request(REFERENCE, pooled_conversations(args.conversations, args.turns, turn_pool()), **config)
    size = len(json.dumps(body))
    print(f"   body: {size / 1e6:.1f} MB, shards of {SHARD_SIZE} conversations")
    if size > LAMBDA_BODY_LIMIT:  # not what API Gateway + Lambda accept: a benchmark of the orchestration only
        os.environ["FAIR_FORGE_MAX_BODY_BYTES"] = str(size + 1)
        print("   (over the 6 MB a deployed POST /jobs takes: FAIR_FORGE_MAX_BODY_BYTES raised for this run)")

    from fair_forge_core.evaluate import evaluate_sync
    from fair_forge_core.judges import ReferenceJudge
    from fair_forge_core.schemas import Dataset, EvaluationConfig

    unsharded = evaluate_sync(
        [Dataset.model_validate(d) for d in body["datasets"]], ReferenceJudge(), EvaluationConfig(**config)
    ).model_dump(mode="json")["aggregated_metrics"]

    submits, end_to_end, in_job, fresh, peaks = [], [], [], [], []
    exact = True
    for run in range(args.runs):
        with tempfile.TemporaryDirectory() as directory:
            figures = one_job(body, Path(directory))
            exact = exact and figures["result"]["aggregated_metrics"] == unsharded
            alone = reduce_in_a_fresh_process(Path(directory), config)
        submits.append(figures["submit"])
        end_to_end.append(figures["end_to_end"])
        in_job.append(figures["reduce"])
        fresh.append(alone["seconds"])
        peaks.append(alone["peak_mb"])
        print(
            f"   run {run + 1}: {figures['shards']} shards, POST /jobs {figures['submit']:.2f} s, "
            f"end to end {figures['end_to_end']:.2f} s, "
            f"reduce {figures['reduce']:.2f} s in the job / {alone['seconds']:.2f} s alone, "
            f"peak RSS {alone['peak_mb']:.0f} MB ({alone['imports_mb']:.0f} MB after imports), "
            f"result.json {figures['result_bytes'] / 1e6:.1f} MB",
            flush=True,
        )
    print("   " + line("POST /jobs (validate, plan, encrypt, write shards, start)", submits))
    print("   " + line("end to end (POST /jobs → GET succeeded)", end_to_end))
    print("   " + line("reduce handler, in the orchestration", in_job))
    print("   " + line("reduce alone, fresh process", fresh))
    print("   " + line("reduce peak RSS, fresh process", peaks, unit="MB", digits=0))
    print("   " + verdict(exact, "aggregated metrics identical to one unsharded evaluate()"))
    print("   " + verdict(max(fresh) <= 30 and max(peaks) <= 1024, "reduce ≤ 30 s and ≤ 1,024 MB peak RSS"))


if __name__ == "__main__":
    main()
