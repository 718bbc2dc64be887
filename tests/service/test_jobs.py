"""POST /jobs and GET /jobs/{id} through `lambda_handler`, and the worker and reduce handlers called directly,
against moto's S3, KMS and Step Functions in-process (jobs_harness.py). The state machine does not run here
(`execute=False`) unless a test says so: test_jobs_e2e.py runs it."""

from __future__ import annotations

import json
import math
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

import handler.job_lambdas as lambdas
import handler.job_store as store
from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import REGION, JobsAWS, jobs_aws
from fair_forge_testing.jobs_support import UNSCORABLE, varied_conversations
from handler.local import LocalLambdaContext

REFERENCE = "fair_forge_core.judges.ReferenceJudge"

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def body_of(conversations: list[dict[str, Any]], **config: Any) -> dict[str, Any]:
    return {"connector": {"class_path": REFERENCE, "params": {}}, "datasets": conversations, "config": config}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    with jobs_aws(monkeypatch, execute=False, shard_size=4) as resources:
        yield resources


def submit(aws: JobsAWS, body: dict[str, Any]) -> str:
    response = aws.submit(body)
    assert response.status == 202, response.body
    return str(response.body["job_id"])


def worker(aws: JobsAWS, job_id: str, shard: int, timeout_s: float = 900.0) -> dict[str, Any]:
    event = {"job_id": job_id, "shard_key": f"jobs/{job_id}/shards/{shard:05d}.json"}
    return dict(lambdas.worker_handler(event, LocalLambdaContext(timeout_s=timeout_s)))


def reduce(job_id: str) -> dict[str, Any]:
    return dict(lambdas.reduce_handler({"job_id": job_id}, LocalLambdaContext(timeout_s=900)))


# --------------------------------------------------------------------------- POST /jobs


BAD_BODIES: dict[str, Any] = {
    "not JSON": "{",
    "a list": "[]",
    "no connector": {"datasets": varied_conversations(1)},
    "no class_path": {"connector": {"params": {}}, "datasets": varied_conversations(1)},
    "no datasets": {"connector": {"class_path": REFERENCE}, "datasets": []},
    "no turns": {"connector": {"class_path": REFERENCE}, "datasets": [{"session_id": "s", "conversation": []}]},
    "a connector off the allowlist": {"connector": {"class_path": "os.system"}, "datasets": varied_conversations(1)},
    "an unknown config key": body_of(varied_conversations(2), treshold=0.5),
    "a wrong field": body_of([{**varied_conversations(1)[0], "session_id": 5}]),
    "a text too long": body_of([{**varied_conversations(1)[0], "context": "x" * 100_001}]),
}


@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_post_jobs_refuses_what_run_refuses_with_the_same_answer(aws: JobsAWS, name: str) -> None:
    bad = BAD_BODIES[name]
    as_run = call_handler(raw=bad) if isinstance(bad, str) else call_handler(bad)
    as_job = call_handler(raw=bad, path="/jobs") if isinstance(bad, str) else call_handler(bad, path="/jobs")
    assert 400 <= as_run.status < 500
    assert (as_job.status, as_job.body["error"], as_job.body.get("details")) == (
        as_run.status,
        as_run.body["error"],
        as_run.body.get("details"),
    )
    assert aws.objects() == {}  # nothing stored, no execution started
    assert (
        boto3.client("stepfunctions", region_name=REGION).list_executions(stateMachineArn=aws.state_machine_arn)[
            "executions"
        ]
        == []
    )


def test_post_jobs_takes_more_than_run_does(aws: JobsAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_MAX_CONVERSATIONS", "5")
    body = body_of(varied_conversations(9))
    assert call_handler(body).status == 413  # /run: "Too many conversations"
    submitted = aws.submit(body)
    assert submitted.status == 202
    assert (submitted.body["conversations"], submitted.body["shards"]) == (9, 3)
    monkeypatch.setenv("FAIR_FORGE_JOBS_MAX_CONVERSATIONS", "8")
    refused = aws.submit(body)
    assert (refused.status, refused.body["error"]) == (413, "Too many conversations: 9 (limit 8 per request)")


def test_judge_samples_shrink_the_shards(aws: JobsAWS) -> None:
    # shard_size 4: 9 conversations are 3 shards; judged twice each, a shard takes 4 // 2 = 2 of them.
    submitted = aws.submit(body_of(varied_conversations(9), judge_samples=2))
    assert (submitted.status, submitted.body["shards"]) == (202, math.ceil(9 / (4 // 2)))


def test_post_jobs_stores_the_request_in_shards_and_starts_the_execution(aws: JobsAWS) -> None:
    conversations = varied_conversations(10)
    body = body_of(conversations, k=2)
    response = aws.submit(body)
    assert response.status == 202
    job_id = response.body["job_id"]
    assert len(job_id) == 32 and int(job_id, 16) >= 0
    assert response.body == {
        "success": True,
        "job_id": job_id,
        "status": "running",
        "status_url": f"https://abc123.execute-api.us-east-1.amazonaws.com/local/jobs/{job_id}",
        "conversations": 10,
        "turns": sum(len(c["conversation"]) for c in conversations),
        "shards": 3,
        "request_id": response.body["request_id"],
    }
    stored = aws.objects()
    prefix = f"jobs/{job_id}/"
    assert set(stored) == {prefix + "request.json", prefix + "manifest.json"} | {
        f"{prefix}shards/{n:05d}.json" for n in range(3)
    }
    manifest = json.loads(stored[prefix + "manifest.json"])
    assert manifest == [{"job_id": job_id, "shard_key": f"{prefix}shards/{n:05d}.json"} for n in range(3)]
    shards = [json.loads(stored[item["shard_key"]]) for item in manifest]
    assert [len(s) for s in shards] == [4, 4, 2]
    assert [c for s in shards for c in s] == conversations  # in order, exactly as sent
    request = json.loads(stored[prefix + "request.json"])
    assert request["connectors"] == [{"class_path": REFERENCE, "params_ciphertext": None}]  # no params, nothing to hide
    assert request["config"] == {"k": 2}
    assert request["request_id"] == response.body["request_id"]

    execution = boto3.client("stepfunctions", region_name=REGION).describe_execution(
        executionArn=store.execution_arn(aws.state_machine_arn, job_id)
    )
    assert execution["name"] == job_id
    assert json.loads(execution["input"]) == {
        "job_id": job_id,
        "manifest_key": prefix + "manifest.json",
        "max_parallel_shards": 10,
        "shards": 3,
        "conversations": 10,
        "agent": False,  # a datasets job: the state machine goes straight to its shards
    }


def test_post_jobs_cuts_long_conversations_by_turns(aws: JobsAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_SHARD_SIZE", "100")
    monkeypatch.setenv("FAIR_FORGE_SHARD_MAX_TURNS", "5")
    conversations = varied_conversations(12)
    response = aws.submit(body_of(conversations))
    job_id = response.body["job_id"]
    stored = aws.objects(f"jobs/{job_id}/shards/")
    assert len(stored) == response.body["shards"] > 2
    for content in stored.values():
        shard = json.loads(content)
        assert len(shard) == 1 or sum(len(c["conversation"]) for c in shard) <= 5


def test_post_jobs_cuts_by_tool_calls_as_a_run_is_bounded(aws: JobsAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_SHARD_SIZE", "100")
    monkeypatch.setenv(
        "FAIR_FORGE_MAX_TOOL_CALLS", "6"
    )  # a shard's bound; the job's own is FAIR_FORGE_JOBS_MAX_TOOL_CALLS

    def tool_calls(conversation: dict[str, Any]) -> int:
        return sum(
            len((turn.get(container) or {}).get(name, []))
            for turn in conversation["conversation"]
            for container, name in (("agentic", "tools_used"), ("ground_truth_agentic", "expected_tools"))
        )

    conversations = varied_conversations(12)
    assert sum(map(tool_calls, conversations)) > 12  # more than two shards' worth
    response = aws.submit(body_of(conversations))
    stored = aws.objects(f"jobs/{response.body['job_id']}/shards/")
    assert len(stored) == response.body["shards"] > 2
    for content in stored.values():
        shard = json.loads(content)
        assert len(shard) == 1 or sum(map(tool_calls, shard)) <= 6


def test_jobs_need_their_aws_resources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBS_BUCKET", raising=False)
    monkeypatch.delenv("JOBS_STATE_MACHINE_ARN", raising=False)
    for response in (
        call_handler(body_of(varied_conversations(1)), path="/jobs"),
        call_handler(method="GET", path=f"/jobs/{'0' * 32}"),
    ):
        assert response.status == 503
        assert response.body["error"].startswith("Asynchronous jobs are not enabled here")
    health = call_handler(method="GET", path="/health")
    assert health.body["jobs"]["enabled"] is False


def test_storage_failures_are_a_503_that_names_the_operation(aws: JobsAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBS_BUCKET", "no-such-bucket-here")
    response = aws.submit(body_of(varied_conversations(3)))
    assert response.status == 503
    assert response.body["error"] == "Job storage unavailable: s3:PutObject failed (NoSuchBucket); try again"


def test_connector_params_are_encrypted_and_bound_to_their_job(aws: JobsAWS) -> None:
    key = "sk-params-secret-0123456789"
    body = body_of(varied_conversations(2))
    # A class that takes a key (POST /jobs builds the judge, it calls nobody).
    body["connector"] = {
        "class_path": "langchain_openai.chat_models.ChatOpenAI",
        "params": {"model": "m", "api_key": key, "default_headers": {"X-Token": key}},
    }
    job_id = submit(aws, body)
    stored = aws.objects()
    assert not any(key.encode() in content for content in stored.values())
    ciphertext = json.loads(stored[f"jobs/{job_id}/request.json"])["connectors"][0]["params_ciphertext"]
    assert store.decrypt_params(ciphertext, job_id, aws.key_arn) == body["connector"]["params"]
    with pytest.raises(ClientError, match="InvalidCiphertext"):  # moved to another job, it cannot be read
        store.decrypt_params(ciphertext, "f" * 32, aws.key_arn)


# --------------------------------------------------------------------------- GET /jobs/{id}


@pytest.mark.parametrize("job_id", ["0" * 32, "nope", "..%2F..%2Fetc", "A" * 32])
def test_an_unknown_job_is_a_404_in_the_error_shape(aws: JobsAWS, job_id: str) -> None:
    response = aws.status(job_id)
    assert response.status == 404
    assert response.body["success"] is False and response.body["error"].startswith("Not found: no job")
    assert response.body["request_id"]


def test_status_while_running_counts_the_shards_done(aws: JobsAWS) -> None:
    job_id = submit(aws, body_of(varied_conversations(10)))
    first = aws.status(job_id)
    assert first.status == 200
    assert first.body["status"] == "running"
    assert first.body["progress"] == {"shards_done": 0, "shards_total": 3, "conversations": 10}
    assert first.body["result"] is None and first.body["error"] is None and first.body["finished_at"] is None
    worker(aws, job_id, 0)
    worker(aws, job_id, 2)
    assert aws.status(job_id).body["progress"]["shards_done"] == 2


def test_a_failed_execution_shows_its_cause_without_a_stack_trace(
    aws: JobsAWS, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = submit(aws, body_of(varied_conversations(3)))
    # What DescribeExecution says of a job whose reduce ran out of memory (moto's StopExecution keeps no cause).
    payload = {"errorType": "MemoryError", "errorMessage": "out of memory", "stackTrace": ['File "x.py", line 1']}
    stepfunctions = store.client("stepfunctions")
    described = stepfunctions.describe_execution

    def failed(**kwargs: Any) -> dict[str, Any]:
        return {**described(**kwargs), "status": "FAILED", "error": "States.TaskFailed", "cause": json.dumps(payload)}

    monkeypatch.setattr(stepfunctions, "describe_execution", failed)
    response = aws.status(job_id)
    assert response.status == 200
    assert response.body["status"] == "failed"
    assert response.body["error"] == "States.TaskFailed: MemoryError: out of memory"
    assert "x.py" not in response.raw and "stackTrace" not in response.raw


# --------------------------------------------------------------------------- the worker and the reduce


def test_worker_and_reduce_by_hand_give_the_run_response(aws: JobsAWS) -> None:
    body = body_of(varied_conversations(10), statistical_mode="bayesian")
    job_id = submit(aws, body)
    summaries = [worker(aws, job_id, n) for n in range(3)]
    assert [s["conversations"] for s in summaries] == [4, 4, 2]
    assert reduce(job_id) == {"job_id": job_id, "result_key": f"jobs/{job_id}/result.json", "conversations": 10}
    result = json.loads(aws.objects()[f"jobs/{job_id}/result.json"])
    expected = call_handler(body).body
    # The judge's usage: the shards' added up. Each shard judges its own distinct turns once
    # (/run, all of them at once), so the calls are counted per shard of 4, 4 and 2 conversations.
    usage, run_usage = (
        result["aggregated_metrics"].pop("judge_usage"),
        expected["aggregated_metrics"].pop("judge_usage"),
    )
    shards = [body["datasets"][0:4], body["datasets"][4:8], body["datasets"][8:10]]
    distinct_per_shard = [len({judged_fields(c, t) for c in shard for t in c["conversation"]}) for shard in shards]
    assert usage["calls"] == usage["calls_without_usage"] == sum(distinct_per_shard)  # the offline judge: no tokens
    assert (usage["model"], usage["prompt_hash"], usage["cost_usd"]) == (
        run_usage["model"],
        run_usage["prompt_hash"],
        0.0,
    )
    assert {k: v for k, v in result.items() if k != "job_id"} == {**expected, "request_id": result["request_id"]}


def judged_fields(conversation: dict[str, Any], turn: dict[str, Any]) -> tuple[Any, ...]:
    """What the judge sees of a turn (identical ones are judged once)."""
    return (
        turn["query"],
        turn["assistant"],
        turn["ground_truth_assistant"],
        conversation.get("context", ""),
        conversation.get("language") or "english",
        turn.get("observation"),
    )


def test_an_ensemble_job_gives_the_run_response(aws: JobsAWS) -> None:
    body = body_of(varied_conversations(6), judge_samples=2)
    body["connector"] = [{"class_path": REFERENCE}, {"class_path": REFERENCE, "params": {"model": "second-opinion"}}]
    submitted = aws.submit(body)
    # shard_size 4, and each turn costs 2 samples × 2 connectors: one conversation a shard.
    assert (submitted.status, submitted.body["shards"]) == (202, 6), submitted.body
    job_id = submitted.body["job_id"]
    for n in range(6):
        worker(aws, job_id, n)
    reduce(job_id)
    result = json.loads(aws.objects()[f"jobs/{job_id}/result.json"])
    expected = call_handler(body).body
    usage, run_usage = (
        result["aggregated_metrics"].pop("judge_usage"),
        expected["aggregated_metrics"].pop("judge_usage"),
    )
    distinct = sum(len({judged_fields(c, t) for t in c["conversation"]}) for c in body["datasets"])
    assert [m["calls"] for m in usage["members"]] == [2 * distinct, 2 * distinct]  # 2 samples, per shard
    assert [m["model"] for m in usage["members"]] == [m["model"] for m in run_usage["members"]]
    assert result["aggregated_metrics"]["judge_consensus"]["members"] == ["fair-forge-reference", "second-opinion"]
    assert {k: v for k, v in result.items() if k != "job_id"} == {**expected, "request_id": result["request_id"]}


def test_an_ensemble_members_params_too_large_for_a_job_are_named(aws: JobsAWS) -> None:
    body = body_of(varied_conversations(2))
    huge = {"model": "m2", "api_key": "sk-x", "default_headers": {"X-Pad": "p" * (store.KMS_MAX_PLAINTEXT_BYTES + 1)}}
    body["connector"] = [
        {"class_path": "langchain_openai.chat_models.ChatOpenAI", "params": {"model": "m", "api_key": "sk-x"}},
        {"class_path": "langchain_openai.chat_models.ChatOpenAI", "params": huge},
    ]
    response = aws.submit(body)
    assert response.status == 413 and response.body["error"].startswith("connector[1].params too large for a job")


def test_a_worker_reads_a_job_stored_by_the_version_before_ensembles(aws: JobsAWS) -> None:
    job_id = submit(aws, body_of(varied_conversations(3)))
    key = f"jobs/{job_id}/request.json"
    stored = json.loads(aws.objects()[key])
    stored["connector"] = stored.pop("connectors")[0]  # the one connector, as jobs were stored before
    store.put(aws.bucket, key, json.dumps(stored))
    assert worker(aws, job_id, 0)["conversations"] == 3


def test_a_worker_builds_its_judges_under_the_rules_of_run_and_a_refusal_fails_the_job(aws: JobsAWS) -> None:
    """The worker builds the stored connectors as /run builds a request's (`plan.build_judges`):
    a class path no longer allowed (here written into the stored request, as a deployment that
    dropped an extra connector would leave it) fails the job, not retried, with /run's words."""
    job_id = submit(aws, body_of(varied_conversations(3)))
    key = f"jobs/{job_id}/request.json"
    stored = json.loads(aws.objects()[key])
    stored["connectors"][0]["class_path"] = "os.system"
    store.put(aws.bucket, key, json.dumps(stored))
    with pytest.raises(store.JobFailed) as failed:
        worker(aws, job_id, 0)
    message = "Failed to create LLM connector: "
    assert str(failed.value).startswith(message) and str(failed.value).endswith("; see GET /health for the list")
    assert json.loads(aws.objects()[f"jobs/{job_id}/error.json"]) == {"error": str(failed.value)}
    assert not [k for k in aws.objects() if "/results/" in k]


def test_an_ensemble_of_one_judge_twice_is_refused_by_jobs_as_by_run(aws: JobsAWS) -> None:
    body = body_of(varied_conversations(2))
    body["connector"] = [{"class_path": REFERENCE}, {"class_path": REFERENCE}]
    as_run, as_job = call_handler(body), call_handler(body, path="/jobs")
    assert as_job.status == as_run.status == 400
    assert (
        as_job.body["details"]
        == as_run.body["details"]
        == [{"field": "connector", "message": as_run.body["details"][0]["message"]}]
    )
    assert aws.objects() == {}


def test_worker_is_idempotent(aws: JobsAWS) -> None:
    job_id = submit(aws, body_of(varied_conversations(5)))
    first = worker(aws, job_id, 0)
    written = aws.objects(f"jobs/{job_id}/results/")
    again = worker(aws, job_id, 0)
    assert first["conversations"] == 4 and again == {
        "job_id": job_id,
        "shard_key": f"jobs/{job_id}/shards/00000.json",
        "conversations": None,
        "skipped": True,
        # what the state machine reads to go on (a shard judged in batch would wait: statemachine/)
        "batch": False,
        "poll_s": 0,
        "ended": True,
    }
    assert aws.objects(f"jobs/{job_id}/results/") == written


@pytest.mark.parametrize(
    "event",
    [
        {},
        {"job_id": "../../x", "shard_key": "jobs/x/shards/00000.json"},
        {"job_id": "a" * 32, "shard_key": f"jobs/{'b' * 32}/shards/00000.json"},  # another job's shard
        {"job_id": "a" * 32, "shard_key": f"jobs/{'a' * 32}/result.json"},
    ],
)
def test_worker_refuses_an_event_that_is_not_a_shard_of_its_job(aws: JobsAWS, event: dict[str, Any]) -> None:
    with pytest.raises(store.JobFailed):
        lambdas.worker_handler(event, LocalLambdaContext(timeout_s=900))
    assert aws.objects() == {}


def test_worker_out_of_time_reports_turns_unscored_and_the_result_says_not_enough_evidence(aws: JobsAWS) -> None:
    job_id = submit(aws, body_of(varied_conversations(3)))
    worker(aws, job_id, 0, timeout_s=5.0)  # 5 s left, 10 s margin: no judge call may start
    [metrics] = [json.loads(v) for v in aws.objects(f"jobs/{job_id}/results/").values()]
    errors = {i["error"] for conversation in metrics for i in conversation["interactions"]}
    assert errors == {"time budget exhausted before this turn could be judged"}
    # The deadline, not a failing provider: a result, as /run gives one, that says it measured nothing.
    reduce(job_id)
    result = json.loads(aws.objects()[f"jobs/{job_id}/result.json"])
    readiness = result["aggregated_metrics"]["readiness"]
    assert (readiness["status"], readiness["scored"], readiness["total"]) == ("insufficient_evidence", 0, 3)
    assert "3 unscored (the time budget ran out)" in readiness["summary"]
    assert not [k for k in aws.objects() if k.endswith("error.json")]


def test_unscored_conversations_are_left_out_of_n_as_run_does(aws: JobsAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    # The operator may allow another judge class; this one never scores a turn marked UNSCORABLE.
    monkeypatch.setenv("FAIR_FORGE_EXTRA_CONNECTORS", "fair_forge_testing.jobs_support.GarblingJudge")
    conversations = varied_conversations(8, unscorable_share=0.0)
    conversations[5]["conversation"][0]["query"] += " " + UNSCORABLE
    body = {"connector": {"class_path": "fair_forge_testing.jobs_support.GarblingJudge"}, "datasets": conversations}
    job_id = submit(aws, body)
    for n in range(2):
        worker(aws, job_id, n)
    reduce(job_id)
    result = json.loads(aws.objects()[f"jobs/{job_id}/result.json"])
    expected = call_handler(body).body
    assert result["aggregated_metrics"]["unscored_conversations"] == 1
    assert result["warnings"] and result["warnings"] == expected["warnings"]
    usage, run_usage = (
        result["aggregated_metrics"].pop("judge_usage"),
        expected["aggregated_metrics"].pop("judge_usage"),
    )
    shards = [conversations[0:4], conversations[4:8]]
    distinct_per_shard = [len({judged_fields(c, t) for c in shard for t in c["conversation"]}) for shard in shards]
    # At least one call a distinct turn of each shard (this judge garbles some replies: those are retried).
    assert usage["calls"] >= sum(distinct_per_shard) and usage["model"] == run_usage["model"]
    assert {k: v for k, v in result.items() if k != "job_id"} == {**expected, "request_id": result["request_id"]}


def test_reduce_without_a_shard_result_fails_the_job(aws: JobsAWS) -> None:
    job_id = submit(aws, body_of(varied_conversations(6)))
    worker(aws, job_id, 0)
    with pytest.raises(store.JobFailed, match=r"internal error \(no result for jobs/.*/results/00001.json\)"):
        reduce(job_id)


def test_the_status_url_is_the_apis_own_whatever_the_caller_says(aws: JobsAWS) -> None:
    # API Gateway puts the domain it was reached on in requestContext.domainName; the Host and
    # X-Forwarded-Proto headers are the caller's to write and must not shape the link we hand out.
    forged = {"Host": "evil.example", "X-Forwarded-Proto": "http"}
    response = call_handler(
        body_of(varied_conversations(2)),
        path="/jobs",
        headers=forged,
        domain="abc123.execute-api.us-east-1.amazonaws.com",
    )
    assert response.status == 202, response.body
    url = f"https://abc123.execute-api.us-east-1.amazonaws.com/local/jobs/{response.body['job_id']}"
    assert response.body["status_url"] == response.headers["Location"] == url
