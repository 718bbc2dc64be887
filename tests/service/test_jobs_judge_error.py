"""`config.judge_error` and `judge_samples` through POST /jobs: a calibration of another judge is
refused before anything is stored, with /run's answer; a job's reduced result carries
`judge_corrected` and `judge_noise` equal to /run's on the same body (the offline judge, moto's
S3, KMS and Step Functions in-process, the worker and reduce handlers called by hand)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import JobsAWS, jobs_aws
from fair_forge_testing.jobs_support import varied_conversations
from tests.service.test_jobs import body_of, reduce, worker

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    with jobs_aws(monkeypatch, execute=False, shard_size=4) as resources:
        yield resources


def calibration(identity: str) -> dict[str, Any]:
    return {"judge": identity, "tpr": {"successes": 45, "n": 50}, "tnr": {"successes": 43, "n": 50}}


def test_a_job_carries_the_corrected_figures_and_the_noise_of_run(aws: JobsAWS) -> None:
    conversations = varied_conversations(10, unscorable_share=0.0)
    identity = call_handler(body_of(conversations)).body["provenance"]["judges"][0]["identity"]
    body = body_of(conversations, judge_error=calibration(identity), judge_samples=3, k=2)
    submitted = aws.submit(body)
    assert submitted.status == 202, submitted.body
    job_id = submitted.body["job_id"]
    assert submitted.body["shards"] > 1  # the figures come from several shards' metrics
    for shard in range(submitted.body["shards"]):
        worker(aws, job_id, shard)
    reduce(job_id)
    result = json.loads(aws.objects()[f"jobs/{job_id}/result.json"])["aggregated_metrics"]
    expected = call_handler(body).body["aggregated_metrics"]
    assert result["judge_corrected"] is not None and result["judge_corrected"]["method"] == "monte_carlo"
    assert result["judge_corrected"] == expected["judge_corrected"]
    assert result["judge_noise"] is not None and result["judge_noise"] == expected["judge_noise"]


def test_a_job_with_another_judges_calibration_is_refused_as_run_refuses_it(aws: JobsAWS) -> None:
    body = body_of(varied_conversations(6), judge_error=calibration("0" * 64))
    as_run, as_job = call_handler(body), call_handler(body, path="/jobs")
    assert as_run.status == 400 and "config.judge_error.judge" in json.dumps(as_run.body)
    assert (as_job.status, as_job.body["error"], as_job.body.get("details")) == (
        as_run.status,
        as_run.body["error"],
        as_run.body.get("details"),
    )
    assert aws.objects() == {}  # nothing stored
