"""What a job may spend (issue #23, security items 3 and 4): one cost cap shared by every shard in
DynamoDB, the server's key bounded per turn and per job, and the judge cache in the caller's scope.

moto for S3, KMS, DynamoDB and Step Functions (jobs_harness.py); the workers and the reduce are
called directly. The judge is the real `ChatOpenAI` against the fake OpenAI-compatible server,
which declares each completion's usage: what the job spent is what the server billed.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

import handler.job_lambdas as lambdas
import handler.job_store as store
from fair_forge_testing.fake_llm_server import FakeLLMServer, openai_usage
from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import REGION, JobsAWS, atomic_dynamodb, jobs_aws
from fair_forge_testing.jobs_support import varied_conversations
from handler.job_budget import DynamoBudget
from handler.local import LocalLambdaContext

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

CALLER_KEY = "sk-job-budget-caller-0123456789abcd"
MAX_TOKENS = 64
INPUT_PRICE, OUTPUT_PRICE = 2.0, 8.0


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    with jobs_aws(monkeypatch, execute=False, shard_size=4) as resources:
        yield resources


def declared_usage(request: dict[str, Any]) -> dict[str, Any]:
    sent = sum(len(str(m["content"]).encode()) for m in request["messages"])
    return openai_usage(sent // 3, 40)


def billed(server: FakeLLMServer) -> float:
    return sum(
        (r.usage["prompt_tokens"] * INPUT_PRICE + r.usage["completion_tokens"] * OUTPUT_PRICE) / 1e6
        for r in server.requests
        if r.usage is not None
    )


def worst_case(body: dict[str, Any]) -> float:
    input_bound = sum(len(str(m["content"]).encode()) for m in body["messages"]) + 8 * (len(body["messages"]) + 1)
    return (input_bound * INPUT_PRICE + MAX_TOKENS * OUTPUT_PRICE) / 1e6


def run_job(aws: JobsAWS, body: dict[str, Any], api_key_id: str | None = None) -> dict[str, Any]:
    """Submit, run every shard's worker, reduce: the job's result."""
    response = aws.submit(body, api_key_id=api_key_id)
    assert response.status == 202, response.body
    job_id = response.body["job_id"]
    for shard in range(response.body["shards"]):
        event = {"job_id": job_id, "shard_key": f"jobs/{job_id}/shards/{shard:05d}.json"}
        lambdas.worker_handler(event, LocalLambdaContext(timeout_s=900))
    lambdas.reduce_handler({"job_id": job_id}, LocalLambdaContext(timeout_s=900))
    return dict(json.loads(aws.objects()[f"jobs/{job_id}/result.json"]))


# --------------------------------------------------------------------------- the shared budget


def test_concurrent_reservations_never_pass_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    atomic_dynamodb(monkeypatch)  # moto's items are not atomic across threads; DynamoDB's are
    with mock_aws():
        store.client.cache_clear()
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        dynamodb.create_table(
            TableName="budgets",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "job_id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "job_id", "KeyType": "HASH"}],
        )
        budget = DynamoBudget("budgets", "job-1", cap_usd=1.0)
        granted: list[bool] = []
        lock = threading.Lock()

        def reserve_many() -> None:
            for _ in range(5):
                ok = asyncio.run(budget.reserve(0.3))
                with lock:
                    granted.append(ok)

        threads = [threading.Thread(target=reserve_many) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        committed, _ = budget.committed_usd()
        assert granted.count(True) == 3 and committed == pytest.approx(0.9)  # 3 × 0.3 ≤ 1.0 < 4 × 0.3
        asyncio.run(budget.settle(0.3, 0.1))  # a reply costs less than reserved: room for another call
        assert asyncio.run(budget.reserve(0.3)) is True
        assert asyncio.run(budget.reserve(0.3)) is False
        committed, spent = budget.committed_usd()
        assert (committed, spent) == (pytest.approx(1.0), pytest.approx(0.1))
    store.client.cache_clear()


def test_a_jobs_cap_holds_across_its_shards(aws: JobsAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = {"judge": {"input": INPUT_PRICE, "output": OUTPUT_PRICE}}
    monkeypatch.setenv("FAIR_FORGE_JUDGE_PRICES", json.dumps(prices))
    with FakeLLMServer(usage=declared_usage) as server:
        params = {"model": "judge", "api_key": CALLER_KEY, "base_url": server.base_url, "max_tokens": MAX_TOKENS}
        probe = {"connector": {"class_path": "langchain_openai.ChatOpenAI", "params": params}}
        assert call_handler({**probe, "datasets": varied_conversations(1, unscorable_share=0.0)}).status == 200
        cap = 5.5 * worst_case(server.requests[0].body)  # type: ignore[arg-type]
        server.reset_stats()
        body = {**probe, "datasets": varied_conversations(12, unscorable_share=0.0), "config": {"max_cost_usd": cap}}
        result = run_job(aws, body)
        spent = billed(server)
    assert spent <= cap  # three shards, one budget: before, each shard could spend the whole cap
    usage = result["aggregated_metrics"]["judge_usage"]
    assert usage["max_cost_usd"] == cap and usage["turns_stopped_by_cap"] > 0
    assert usage["cost_usd"] == pytest.approx(spent, rel=1e-9)
    assert result["aggregated_metrics"]["readiness"]["status"] == "insufficient_evidence"


def test_a_cap_without_the_budget_table_is_refused(aws: JobsAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBS_BUDGET_TABLE")
    body = {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"},
        "datasets": varied_conversations(2),
        "config": {"max_cost_usd": 1},
    }
    response = aws.submit(body)
    assert response.status == 400 and response.body["details"][0]["field"] == "config.max_cost_usd"


# --------------------------------------------------------------------------- the server's key


def server_key_body(models: list[str], samples: int, conversations: int = 2) -> dict[str, Any]:
    connectors = [{"class_path": "langchain_openai.ChatOpenAI", "params": {"model": model}} for model in models]
    return {
        "connector": connectors if len(connectors) > 1 else connectors[0],
        "datasets": varied_conversations(conversations),
        "config": {"judge_samples": samples},
    }


def test_the_server_key_buys_a_bounded_number_of_calls(aws: JobsAWS, monkeypatch: pytest.MonkeyPatch) -> None:
    # The observed case: 3 server-key connectors × 10 samples, 30 provider calls a turn.
    monkeypatch.setenv("LLM_API_KEY", "sk-operator-0123456789abcdefghij")
    for send in (aws.submit, lambda body: call_handler(body)):
        refused = send(server_key_body(["a", "b", "c"], 10))
        assert refused.status == 400, refused.body
        assert refused.body["details"][0]["field"] == "config.judge_samples"
        assert "at most 3 judge calls" in refused.body["error"] and "30" in refused.body["error"]
    assert aws.submit(server_key_body(["a", "b", "c"], 1)).status == 202  # 3 a turn: the default bound
    monkeypatch.setenv("FAIR_FORGE_JOBS_MAX_SERVER_KEY_CALLS", "10")
    too_many = aws.submit(server_key_body(["a"], 1, conversations=12))
    assert too_many.status == 413 and "limit 10 a job" in too_many.body["error"]
    # A goal is one more judge call per conversation: counted with the turns.
    monkeypatch.setenv("FAIR_FORGE_JOBS_MAX_SERVER_KEY_CALLS", "4")
    one_turn_each = [{**c, "conversation": c["conversation"][:1]} for c in varied_conversations(3)]
    assert aws.submit({**server_key_body(["a"], 1), "datasets": one_turn_each}).status == 202  # 3 calls
    with_goals = [{**c, "goal": "every answer is right"} for c in one_turn_each]
    refused = aws.submit({**server_key_body(["a"], 1), "datasets": with_goals})
    assert refused.status == 413 and "6 turns and goals" in refused.body["error"]
    # The caller's own key is the caller's bill: not bounded here.
    own = server_key_body(["a"], 10, conversations=12)
    own["connector"]["params"]["api_key"] = "sk-callers-own-0123456789abcdef"
    assert aws.submit(own).status == 202


# --------------------------------------------------------------------------- the cache


def test_a_job_uses_the_judge_cache_in_its_callers_scope(
    aws: JobsAWS, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FAIR_FORGE_JUDGE_CACHE", str(tmp_path / "cache"))
    body = {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"},
        "datasets": varied_conversations(8, unscorable_share=0.0),
        "config": {"judge_cache": True},
    }
    first = run_job(aws, body, api_key_id="caller-a")["aggregated_metrics"]["judge_usage"]
    again = run_job(aws, body, api_key_id="caller-a")["aggregated_metrics"]["judge_usage"]
    other = run_job(aws, body, api_key_id="caller-b")["aggregated_metrics"]["judge_usage"]
    # Within a job, a turn another shard already judged may be a hit; across jobs of one caller
    # every judgement is; another caller's job sees none of the first caller's entries.
    judgements = first["cache_hits"] + first["cache_misses"]
    assert first["cache_misses"] > 0
    assert (again["cache_hits"], again["cache_misses"]) == (judgements, 0)
    assert (other["cache_hits"], other["cache_misses"]) == (first["cache_hits"], first["cache_misses"])
