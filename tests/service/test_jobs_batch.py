"""Batch judging on `POST /jobs` (issue #38 item 3): `config.judge_batch` sends each shard's judge
calls through OpenAI's batch API, and the state machine waits on the batch.

moto executes `statemachine/evaluation.asl.json` (jobs_harness.py: the Distributed Map, the
Choice, Wait and poll states, the real worker and reduce handlers in-process); the judge is the
real `ChatOpenAI`, and the batch API is `FakeBatchServer` (fair_forge_testing/fake_batch_api.py,
built from OpenAI's API reference), which answers each batch line as its chat-completions
endpoint would have answered the same body online. What the job is compared with is the same
request through `POST /run`, judged online by the same server.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import boto3
import pytest

import handler.job_store as store
from fair_forge_core.tiers import UNSCORED_CAUSES
from fair_forge_testing.builders import distinct_conversations
from fair_forge_testing.fake_batch_api import FakeBatchServer
from fair_forge_testing.fake_llm_server import openai_usage
from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import REGION, JobsAWS, jobs_aws
from fair_forge_testing.jobs_support import varied_conversations

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

CALLER_KEY = "sk-batch-job-caller-0123456789abcdef"
INPUT_PRICE, OUTPUT_PRICE = 2.0, 8.0
MAX_TOKENS = 64


def declared_usage(request: dict[str, Any]) -> dict[str, Any]:
    sent = sum(len(str(m["content"]).encode()) for m in request["messages"])
    return openai_usage(sent // 3, 40)


def cost_of(usage: dict[str, Any], factor: float = 1.0) -> float:
    return factor * (usage["prompt_tokens"] * INPUT_PRICE + usage["completion_tokens"] * OUTPUT_PRICE) / 1e6


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("FAIR_FORGE_JUDGE_PRICES", json.dumps({"judge": {"input": INPUT_PRICE, "output": OUTPUT_PRICE}}))
    monkeypatch.setenv("FAIR_FORGE_JOBS_BATCH_POLL_S", "0")
    with jobs_aws(monkeypatch, shard_size=4) as resources:
        yield resources


@pytest.fixture
def server() -> Any:
    with FakeBatchServer(usage=declared_usage, polls_until_done=2) as fake:
        yield fake


def body_for(server: FakeBatchServer, datasets: list[dict[str, Any]] | None = None, **config: Any) -> dict[str, Any]:
    """A job of `datasets` (default: 12 varied conversations, turns repeated within a shard among them)."""
    params = {"model": "judge", "api_key": CALLER_KEY, "base_url": server.base_url, "max_tokens": MAX_TOKENS}
    return {
        "connector": {"class_path": "langchain_openai.ChatOpenAI", "params": params},
        "datasets": datasets if datasets is not None else varied_conversations(12, unscorable_share=0.0),
        "config": config,
    }


def run_job(aws: JobsAWS, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    submitted = aws.submit(body)
    assert submitted.status == 202, submitted.body
    job_id = submitted.body["job_id"]
    final = aws.wait(job_id)
    assert final.body["status"] == "succeeded", final.body
    return job_id, dict(final.body["result"])


def answered_lines(server: FakeBatchServer) -> list[dict[str, Any]]:
    """Every line the fake batch API answered with a response, over every batch."""
    return [
        line
        for record in server.batches.values()
        for line in record.results
        if line is not None and line["response"] is not None
    ]


def causes(result: dict[str, Any]) -> Counter[str | None]:
    """How many turn checks of answer correctness ended in each cause (None: scored)."""
    return Counter(
        check["cause"]
        for conversation in result["per_conversation_metrics"]
        for check in conversation["checks"]
        if check["name"] == "answer_correctness"
    )


def without_judge_usage(result: dict[str, Any]) -> dict[str, Any]:
    aggregated = {k: v for k, v in result["aggregated_metrics"].items() if k != "judge_usage"}
    kept = {k: v for k, v in result.items() if k not in ("request_id", "job_id", "provenance")}
    return kept | {"aggregated_metrics": aggregated}


def online_then_batch_job(
    aws: JobsAWS, server: Any, body: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], Any, float]:
    """The job of `body` judged online, then again under `judge_batch`, on one fake `server`: the
    online result, the batch result, the online requests and their cost at the online price
    (checked: no judge call of the batch job went online)."""
    _, online_result = run_job(aws, body)
    sent = server.requests
    online_cost = sum(cost_of(r.usage) for r in sent if r.usage is not None)
    _, result = run_job(aws, {**body, "config": {"judge_batch": True}})
    assert server.call_count == len(sent)
    return online_result, result, sent, online_cost


def test_a_batch_job_judges_every_turn_once_at_half_the_price(aws: JobsAWS, server: FakeBatchServer) -> None:
    body = body_for(server)
    _, online = run_job(aws, body)  # the same job judged online, by the same server
    online_calls = server.call_count
    online_cost = sum(cost_of(r.usage) for r in server.requests if r.usage is not None)
    online_bodies = sorted(json.dumps(r.body, sort_keys=True) for r in server.requests)

    job_id, result = run_job(aws, {**body, "config": {"judge_batch": True}})

    assert server.call_count == online_calls  # no judge call of the batch job went online
    lines = answered_lines(server)
    # Every judge call of the online job is one line, with the very body it sent: none twice, none missing.
    sent = [line["body"] for record in server.batches.values() for line in record.lines]
    assert sorted(json.dumps(b, sort_keys=True) for b in sent) == online_bodies
    assert len(lines) == online_calls
    # The figures are the online job's; only the price differs: every answered line at half price.
    assert without_judge_usage(result) == without_judge_usage(online)
    usage, online_usage = result["aggregated_metrics"]["judge_usage"], online["aggregated_metrics"]["judge_usage"]
    tokens = ("calls", "input_tokens", "output_tokens", "cached_input_tokens")
    assert {k: usage[k] for k in tokens} == {k: online_usage[k] for k in tokens}
    expected = sum(cost_of(line["response"]["body"]["usage"], 0.5) for line in lines)
    assert usage["cost_usd"] == pytest.approx(expected, rel=1e-9)
    assert usage["cost_usd"] == pytest.approx(online_cost / 2, rel=1e-9)
    assert "batch price" in usage["price_source"] and "batch price" not in online_usage["price_source"]
    # Each batch carries the job and shard it belongs to; each shard waited, polled and collected.
    assert {r.metadata["fair_forge_job"] for r in server.batches.values()} == {job_id}
    phases = Counter(
        i.event.get("phase", "evaluate") for i in aws.calls_of(aws.worker_name) if i.event["job_id"] == job_id
    )
    shards = len(server.batches)
    assert phases["evaluate"] == phases["collect"] == shards == 3
    assert phases["poll"] >= 2 * shards  # polls_until_done=2: in progress twice, then ended


def test_an_expired_window_leaves_the_rest_unscored_with_batch_expired(aws: JobsAWS, server: FakeBatchServer) -> None:
    server.expire_after = 2  # each shard's batch answers 2 lines, then its window expires
    _, result = run_job(aws, body_for(server, judge_batch=True))

    submitted = sum(len(r.lines) for r in server.batches.values())
    answered = len(answered_lines(server))
    assert answered == 2 * len(server.batches) < submitted
    got = causes(result)
    # A turn repeated within a shard is one line: at least as many turns as lines on each side.
    assert got[None] >= answered and got["batch_expired"] >= submitted - answered
    assert set(got) == {None, "batch_expired"}
    assert result["aggregated_metrics"]["judge_usage"]["calls"] == answered
    readiness = result["aggregated_metrics"]["readiness"]
    assert readiness["status"] == "insufficient_evidence"
    assert UNSCORED_CAUSES["batch_expired"] in readiness["summary"]


@pytest.mark.parametrize("collect_fails", [None, "after_the_handler", "writing_the_result"])
def test_the_cap_holds_and_what_it_did_not_spend_goes_back_once(
    aws: JobsAWS, server: FakeBatchServer, monkeypatch: pytest.MonkeyPatch, collect_fails: str | None
) -> None:
    def fault(function: str, event: dict[str, Any], attempt: int) -> str | None:
        # The sandbox dies after the collect wrote its result and gave back: Step Functions retries it.
        return "after" if event.get("phase") == "collect" and attempt == 1 else None

    failed: set[str] = set()
    put = store.put

    def put_failing_once(bucket: str, key: str, body: bytes | str) -> None:
        # S3 refuses each shard's result once: the collect fails before it is written, and is retried.
        if "/results/" in key and key not in failed:
            failed.add(key)
            raise RuntimeError("injected fault: S3 refused the PUT")
        put(bucket, key, body)

    if collect_fails == "after_the_handler":
        aws.fault = fault
    elif collect_fails == "writing_the_result":
        monkeypatch.setattr(store, "put", put_failing_once)
    cap = 0.004
    # Every turn distinct: one batch line is one turn, whichever shards the cap lets send.
    body = body_for(server, distinct_conversations(12, 2), judge_batch=True, max_cost_usd=cap)
    _, result = run_job(aws, body)

    lines = answered_lines(server)
    spent = sum(cost_of(line["response"]["body"]["usage"], 0.5) for line in lines)
    assert 0 < spent <= cap
    usage = result["aggregated_metrics"]["judge_usage"]
    assert usage["turns_stopped_by_cap"] > 0 and usage["cost_usd"] == pytest.approx(spent, rel=1e-9)
    got = causes(result)
    assert got["cost_cap"] > 0 and got[None] == len(lines)
    phases = Counter(i.event.get("phase", "evaluate") for i in aws.calls_of(aws.worker_name))
    assert phases["collect"] == phases["evaluate"] * (1 if collect_fails is None else 2)
    # The job's budget item holds what the answers cost, not the reservations made at submit, and
    # a retried collect gave nothing back a second time.
    [item] = boto3.client("dynamodb", region_name=REGION).scan(TableName=aws_table())["Items"]
    assert int(item["committed"]["N"]) / 1e9 == pytest.approx(spent, abs=1e-6)


@pytest.mark.parametrize("cap", [None, 0.004])
def test_a_submit_that_dies_before_writing_what_it_sent_takes_its_batches_when_retried(
    aws: JobsAWS, server: FakeBatchServer, monkeypatch: pytest.MonkeyPatch, cap: float | None
) -> None:
    # With a cap, the dead attempt's reservations stay held: the retry records fewer lines than it sent.
    config = {"judge_batch": True} | ({"max_cost_usd": cap} if cap is not None else {})
    body = body_for(server, distinct_conversations(12, 2) if cap is not None else None, **config)
    _, undisturbed = run_job(aws, body)
    first_batches = len(server.batches)
    failed: set[str] = set()
    put = store.put

    def put_failing_once(bucket: str, key: str, content: bytes | str) -> None:
        # S3 refuses each shard's `batches/<n>.json` once: the submit dies after creating its batches.
        if "/batches/" in key and not key.endswith(".attempt.json") and key not in failed:
            failed.add(key)
            raise RuntimeError("injected fault: S3 refused the PUT")
        put(bucket, key, content)

    monkeypatch.setattr(store, "put", put_failing_once)
    job_id, result = run_job(aws, body)

    ours = [record for record in server.batches.values() if record.metadata["fair_forge_job"] == job_id]
    shards = len(failed)  # every shard's submit died once
    assert shards == 3
    for shard in range(shards):
        sent = [line["custom_id"] for r in ours if r.metadata["fair_forge_shard"] == str(shard) for line in r.lines]
        assert len(sent) == len(set(sent))  # no line sent twice: the retry took what was sent
    assert not [record.id for record in ours if record.status not in ("completed", "cancelled", "cancelling")]
    if cap is None:
        assert len(ours) == first_batches == shards  # one batch a shard, none sent again
        assert {record.metadata["fair_forge_shard"] for record in ours} == {str(n) for n in range(shards)}
    if cap is None:
        assert without_judge_usage(result) == without_judge_usage(undisturbed)
    else:  # what the retry did not record is unscored by the cap, never scored from nothing
        got = causes(result)
        assert set(got) <= {None, "cost_cap"} and got[None] <= len(answered_lines(server))
    phases = Counter(
        i.event.get("phase", "evaluate") for i in aws.calls_of(aws.worker_name) if i.event["job_id"] == job_id
    )
    assert phases["evaluate"] == 2 * shards and phases["collect"] == shards


def aws_table() -> str:
    import os

    return os.environ["JOBS_BUDGET_TABLE"]


def test_past_the_deadline_the_batches_are_cancelled_and_collected(
    aws: JobsAWS, server: FakeBatchServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIR_FORGE_JOBS_BATCH_DEADLINE_S", "0")
    server.polls_until_done, server.lines_per_poll = 10**6, 1  # never done on its own: one line a poll
    _, result = run_job(aws, body_for(server) | {"config": {"judge_batch": True}})

    statuses = {r.status for r in server.batches.values()}
    assert statuses == {"cancelled"}
    answered = len(answered_lines(server))
    got = causes(result)
    assert got[None] == answered and got["batch_expired"] > 0


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (
            {"connector": {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}},
            "connector.class_path",
            "batch API",
        ),
        (
            {"tasks": [{"task_id": "t", "turns": [{"query": "q", "ground_truth_assistant": "a"}]}]},
            "config.judge_batch",
            "runs the agent",
        ),
    ],
)
def test_a_batch_job_that_cannot_be_honoured_is_refused(
    aws: JobsAWS,
    server: FakeBatchServer,
    monkeypatch: pytest.MonkeyPatch,
    change: dict[str, Any],
    field: str,
    words: str,
) -> None:
    monkeypatch.setenv("FAIR_FORGE_AGENT_HOSTS", "127.0.0.1")
    body = body_for(server) | {"config": {"judge_batch": True}} | change
    if "tasks" in change:
        body.pop("datasets")
        body["agent"] = {"kind": "http", "url": "http://127.0.0.1:9/turn"}
        body["attempts"] = 2
    response = aws.submit(body)
    assert response.status == 400, response.body
    assert field in response.body["error"] and words in response.body["error"]
    assert not server.batches


def test_run_refuses_judge_batch_naming_the_field(server: FakeBatchServer) -> None:
    response = call_handler(body_for(server) | {"config": {"judge_batch": True}})
    assert response.status == 400
    assert "config.judge_batch" in response.body["error"] and "POST /jobs" in response.body["error"]
    assert server.call_count == 0 and not server.batches
