"""An async job judges goals as /run does (#25 §1): each conversation's goal is asked in the shard
that holds it, and the reduce keeps every `goal_check`. The offline judge abstains on goals, so
with `require_goal` the conversations are unscored (never passed) and without it the turns
decide. Against moto (jobs_harness.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import handler.job_lambdas as lambdas
from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import JobsAWS, jobs_aws
from handler.local import LocalLambdaContext

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "goal.json"

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    with jobs_aws(monkeypatch, execute=False, shard_size=1) as resources:
        yield resources


def run_job(aws: JobsAWS, body: dict[str, Any]) -> dict[str, Any]:
    submitted = aws.submit(body)
    assert submitted.status == 202, submitted.body
    job_id = submitted.body["job_id"]
    shards = sorted(key for key in aws.objects() if key.startswith(f"jobs/{job_id}/shards/"))
    for key in shards:
        lambdas.worker_handler({"job_id": job_id, "shard_key": key}, LocalLambdaContext(timeout_s=900))
    lambdas.reduce_handler({"job_id": job_id}, LocalLambdaContext(timeout_s=900))
    return json.loads(aws.objects()[f"jobs/{job_id}/result.json"])


@pytest.mark.parametrize("require_goal", [False, True])
def test_a_jobs_goals_are_judged_as_run_judges_them(aws: JobsAWS, require_goal: bool) -> None:
    body = json.loads(EXAMPLE.read_text())
    second = {**body["datasets"][0], "session_id": "second", "goal": "The customer is told the order's status"}
    body["datasets"].append(second)
    body["config"]["require_goal"] = require_goal
    result = run_job(aws, body)
    checks = [m["goal_check"] for m in result["per_conversation_metrics"]]
    assert [c["goal"] for c in checks] == [body["datasets"][0]["goal"], second["goal"]]
    assert all(c["goal_achieved"] is None and "cannot decide a conversation's goal" in c["error"] for c in checks)
    scored = [m["is_scored"] for m in result["per_conversation_metrics"]]
    assert scored == [not require_goal] * 2
    direct = call_handler(body).body
    assert result["per_conversation_metrics"] == direct["per_conversation_metrics"]
    assert result["aggregated_metrics"]["readiness"] == direct["aggregated_metrics"]["readiness"]
