"""An async job's result labels the tasks as /run does (`config.task_stability`, #25 §5): the
shards' per-conversation metrics are reduced through `metrics.aggregate`, so a task whose
attempts lie in several shards is labelled from all of them. Against moto (jobs_harness.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import handler.job_lambdas as lambdas
from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import JobsAWS, jobs_aws
from handler.local import LocalLambdaContext

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "flaky_tasks.json"

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    with jobs_aws(monkeypatch, execute=False, shard_size=4) as resources:
        yield resources


def test_a_jobs_result_labels_tasks_split_across_shards_as_run_does(aws: JobsAWS) -> None:
    body = json.loads(EXAMPLE.read_text())
    # Interleave the attempts, so that every task's three attempts land in three shards of 4.
    body["datasets"] = [body["datasets"][i] for offset in range(3) for i in range(offset, 12, 3)]
    submitted = aws.submit(body)
    assert submitted.status == 202, submitted.body
    job_id = submitted.body["job_id"]
    for shard in range(3):
        event = {"job_id": job_id, "shard_key": f"jobs/{job_id}/shards/{shard:05d}.json"}
        lambdas.worker_handler(event, LocalLambdaContext(timeout_s=900))
    lambdas.reduce_handler({"job_id": job_id}, LocalLambdaContext(timeout_s=900))
    result = json.loads(aws.objects()[f"jobs/{job_id}/result.json"])
    stability = result["aggregated_metrics"]["task_stability"]
    # By hand: opening_hours and shipping_cost 3 of 3, order_status 2 of 3, return_window 0 of 3.
    assert [(t["task_id"], t["label"], t["passed"], t["attempts"]) for t in stability["tasks"]] == [
        ("order_status", "flaky", 2, 3),
        ("return_window", "failing", 0, 3),
        ("opening_hours", "stable", 3, 3),
        ("shipping_cost", "stable", 3, 3),
    ]
    assert stability == call_handler(body).body["aggregated_metrics"]["task_stability"]
