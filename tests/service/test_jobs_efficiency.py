"""`config.efficiency` through a job (POST /jobs, the workers, the reduce), against moto as in
test_jobs.py: the shards' conversations are reduced through `metrics.aggregate`, so the job's
result carries the same efficiency, per conversation, overall and by assistant, as /run's."""

from __future__ import annotations

import json
from typing import Any

import pytest

import handler.job_lambdas as lambdas
from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import JobsAWS, jobs_aws
from fair_forge_testing.jobs_support import varied_conversations
from handler.local import LocalLambdaContext

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    with jobs_aws(monkeypatch, execute=False, shard_size=4) as resources:
        yield resources


def test_a_jobs_result_has_the_efficiency_of_run(aws: JobsAWS) -> None:
    conversations = varied_conversations(10)
    for index, conversation in enumerate(conversations):
        for turn in conversation["conversation"]:
            turn["agent_usage"] = {"cost_usd": 0.001 * (index + 1), "output_tokens": 10 + index}
    body = {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}},
        "datasets": conversations,
        "config": {"efficiency": True},
    }
    response = aws.submit(body)
    assert response.status == 202, response.body
    job_id = str(response.body["job_id"])
    for shard in range(3):
        event = {"job_id": job_id, "shard_key": f"jobs/{job_id}/shards/{shard:05d}.json"}
        lambdas.worker_handler(event, LocalLambdaContext(timeout_s=900))
    lambdas.reduce_handler({"job_id": job_id}, LocalLambdaContext(timeout_s=900))
    result = json.loads(aws.objects()[f"jobs/{job_id}/result.json"])
    expected = call_handler(body).body
    aggregated = result["aggregated_metrics"]
    assert aggregated["efficiency"] == expected["aggregated_metrics"]["efficiency"]
    assert aggregated["efficiency"]["conversations"] == 10
    assert [m["efficiency"] for m in result["per_conversation_metrics"]] == [
        m["efficiency"] for m in expected["per_conversation_metrics"]
    ]
    assert all("efficiency" in sub for sub in aggregated["by_assistant"].values())
