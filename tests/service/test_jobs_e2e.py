"""Asynchronous jobs end to end: POST /jobs, the state machine of statemachine/evaluation.asl.json executed by
moto's Step Functions (Distributed Map over the S3 manifest, retries, reduce), the project's real worker and
reduce handlers (dispatched in-process: see jobs_harness.py), and GET /jobs/{id} until the result is there.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply
from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import JobsAWS, jobs_aws
from fair_forge_testing.jobs_support import varied_conversations

pytestmark = [
    pytest.mark.slow,
    # Powertools warns when a flush finds no metrics: concurrent in-process workers share one Metrics object,
    # which a Lambda sandbox (one invocation at a time) never does.
    pytest.mark.filterwarnings("ignore:No application metrics to publish"),
]

REFERENCE = "fair_forge_core.judges.ReferenceJudge"
CALLER_KEY = "sk-caller-job-key-0123456789abcdef"


def run_body(conversations: int, **config: Any) -> dict[str, Any]:
    return {
        "connector": {"class_path": REFERENCE, "params": {}},
        "datasets": varied_conversations(conversations, unscorable_share=0.0),
        "config": config,
    }


def job_result(aws: JobsAWS, final: dict[str, Any]) -> dict[str, Any]:
    """The result of a finished job, inline or through its presigned URL (which moto serves to `requests`)."""
    if final["result"] is not None:
        return dict(final["result"])
    assert final["result_url"] and final["result_url_expires_in"] == 3600
    fetched = requests.get(final["result_url"], timeout=30)
    assert fetched.status_code == 200
    return dict(fetched.json())


def without_ids(body: dict[str, Any]) -> dict[str, Any]:
    """The body without its ids, and without the judge's usage: a job's shards each judge their own
    distinct turns, /run all of them at once (test_jobs.py checks the job's usage)."""
    aggregated = {k: v for k, v in body["aggregated_metrics"].items() if k != "judge_usage"}
    return {k: v for k, v in body.items() if k not in ("request_id", "job_id")} | {"aggregated_metrics": aggregated}


def test_a_1000_conversation_job_gives_exactly_the_run_response(monkeypatch: pytest.MonkeyPatch) -> None:
    with jobs_aws(monkeypatch, shard_size=100) as aws:
        body = run_body(1000, k=3, statistical_mode={"mode": "bayesian", "ci_level": 0.9})
        expected = call_handler(body)  # POST /run: the same request, unsharded
        assert expected.status == 200

        submitted = aws.submit(body)
        assert submitted.status == 202, submitted.body
        job_id = submitted.body["job_id"]
        assert submitted.body["shards"] == 10 and submitted.body["conversations"] == 1000
        url = f"https://abc123.execute-api.us-east-1.amazonaws.com/local/jobs/{job_id}"
        assert submitted.body["status_url"] == submitted.headers["Location"] == url

        final = aws.wait(job_id)
        assert final.body["status"] == "succeeded", final.body
        assert final.body["progress"] == {"shards_done": 10, "shards_total": 10, "conversations": 1000}
        assert final.body["finished_at"] >= final.body["submitted_at"]
        assert final.body["result"] is None  # about 2 MB: a presigned URL, not inline
        result = job_result(aws, final.body)

    # The aggregated metrics — and every per-conversation figure — are /run's, to the last digit.
    assert result["job_id"] == job_id and result["request_id"] == submitted.body["request_id"]
    assert without_ids(result) == without_ids(expected.body)
    assert result["aggregated_metrics"]["total_conversations"] == 1000
    assert result["aggregated_metrics"]["by_assistant"] and result["aggregated_metrics"]["per_task"]
    # The Distributed Map ran one worker per shard, once each, then the reduce once.
    assert sorted(i.event["shard_key"] for i in aws.calls_of(aws.worker_name)) == [
        f"jobs/{job_id}/shards/{n:05d}.json" for n in range(10)
    ]
    assert [i.event for i in aws.calls_of(aws.reduce_name)] == [{"job_id": job_id}]


def test_a_worker_that_fails_once_succeeds_on_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    def fault(function: str, event: dict[str, Any], attempt: int) -> str | None:
        if function.endswith("-worker") and attempt == 1:
            if event["shard_key"].endswith("/00001.json"):  # fails before doing anything
                raise RuntimeError("injected fault: the sandbox crashed")
            if event["shard_key"].endswith("/00002.json"):  # fails after writing its result
                return "after"
        return None

    with jobs_aws(monkeypatch, shard_size=40) as aws:
        aws.fault = fault
        body = run_body(150)
        submitted = aws.submit(body)
        assert submitted.status == 202
        job_id = submitted.body["job_id"]
        final = aws.wait(job_id)
        assert final.body["status"] == "succeeded", final.body
        assert final.body["result"] is not None  # small: inline
        result = job_result(aws, final.body)
        expected = call_handler(body)
        # Once S3 has expired the job's data, the job still reads as succeeded, and says so.
        aws.s3().delete_object(Bucket=aws.bucket, Key=f"jobs/{job_id}/result.json")
        expired = aws.status(job_id)
        assert (expired.status, expired.body["status"], expired.body["result"]) == (200, "succeeded", None)
        assert "expired" in expired.body["error"]

    worker_calls = aws.calls_of(aws.worker_name)
    by_shard: dict[str, list[str | None]] = {}
    for call in worker_calls:
        by_shard.setdefault(call.event["shard_key"].rsplit("/", 1)[1], []).append(call.error)
    # Step Functions retried each failed attempt (Retry on States.TaskFailed); the others ran once.
    assert by_shard == {
        "00000.json": [None],
        "00001.json": ["RuntimeError", None],
        "00002.json": ["RuntimeError", None],
        "00003.json": [None],
    }
    assert without_ids(result) == without_ids(expected.body)


def test_a_caller_key_reaches_the_provider_but_never_s3_in_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLMServer() as server, jobs_aws(monkeypatch, shard_size=10) as aws:
        body = {
            "connector": {
                "class_path": "langchain_openai.chat_models.ChatOpenAI",
                "params": {"model": "gpt-4o-mini", "api_key": CALLER_KEY, "base_url": server.base_url},
            },
            "datasets": varied_conversations(25, unscorable_share=0.0),
        }
        submitted = aws.submit(body)
        assert submitted.status == 202, submitted.body
        final = aws.wait(submitted.body["job_id"])
        assert final.body["status"] == "succeeded", final.body
        stored = aws.objects()
        assert {server_request.api_key for server_request in server.requests} == {CALLER_KEY}
    assert len(job_result(aws, final.body)["per_conversation_metrics"]) == 25
    assert stored and not any(CALLER_KEY.encode() in content for content in stored.values())
    request = json.loads(stored[f"jobs/{submitted.body['job_id']}/request.json"])
    assert request["connectors"][0]["params_ciphertext"]  # the params travel encrypted (KMS, context job_id)
    assert "params" not in request["connectors"][0] and "base_url" not in json.dumps(request)
    assert CALLER_KEY not in final.raw and CALLER_KEY not in submitted.raw


def test_a_provider_that_refuses_fails_the_job_with_its_cause_and_no_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLMServer(script=[Reply(status=401)] * 200) as server, jobs_aws(monkeypatch, shard_size=10) as aws:
        body = {
            "connector": {
                "class_path": "langchain_openai.chat_models.ChatOpenAI",
                "params": {"model": "gpt-4o-mini", "api_key": CALLER_KEY, "base_url": server.base_url},
            },
            "datasets": varied_conversations(12, unscorable_share=0.0),
        }
        run = call_handler(body)  # what /run says about the same request
        submitted = aws.submit(body)
        assert submitted.status == 202
        final = aws.wait(submitted.body["job_id"])

    assert run.status == 502
    assert final.body["status"] == "failed"
    assert final.body["error"] == run.body["error"]  # "Agentic evaluation failed: the judge provider refused ..."
    assert final.body["result"] is None and final.body["result_url"] is None
    # JobFailed is not retried.
    worker_calls = aws.calls_of(aws.worker_name)
    assert worker_calls and all(call.error == "JobFailed" for call in worker_calls)
    assert len({call.event["shard_key"] for call in worker_calls}) == len(worker_calls)
    # On AWS the Map fails at the first failed item (ToleratedFailurePercentage 0) and no reduce runs. moto's
    # Distributed Map counts failed items but succeeds, so its reduce runs once, finds shards without a result,
    # and fails the job with the reason the workers recorded: the same outcome for the caller.
    assert [call.error for call in aws.calls_of(aws.reduce_name)] in ([], ["JobFailed"])
    assert CALLER_KEY not in final.raw
