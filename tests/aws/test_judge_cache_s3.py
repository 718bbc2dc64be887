"""The service's S3 judge cache on moto's server, and the stack's cache prefix, policy and expiry."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from langchain_openai import ChatOpenAI

from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges.cache import CacheError
from fair_forge_core.judges.llm import RetryPolicy
from fair_forge_core.judges.usage import JudgeLedger
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.cloudformation import template
from fair_forge_testing.fake_llm_server import FakeLLMServer
from handler import job_store
from handler.judge_cache import S3JudgeCache, open_cache

REGION = "us-east-1"
BUCKET = "fair-forge-jobs-test"
SECRET = "sk-s3-cache-secret-0123456789abcdef"
FAST_RETRY = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.05, call_timeout_s=5.0)


@pytest.fixture
def s3(moto: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL": moto,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    job_store.client.cache_clear()
    client = boto3.client("s3", region_name=REGION, endpoint_url=moto)
    client.create_bucket(Bucket=BUCKET)
    yield client
    job_store.client.cache_clear()


def objects(client: Any) -> dict[str, bytes]:
    listed = client.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return {o["Key"]: client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listed}


def test_the_store_round_trips(s3: Any) -> None:
    store = open_cache(f"s3://{BUCKET}/judge-cache/")
    assert isinstance(store, S3JudgeCache)
    key = "ab" * 32
    assert store.get(key) is None
    store.put(key, b'{"x": 1}')
    assert store.get(key) == b'{"x": 1}'
    assert list(objects(s3)) == [f"judge-cache/{key}.json"]


def test_a_missing_bucket_is_a_cache_error_not_a_crash(s3: Any) -> None:
    with pytest.raises(CacheError, match="NoSuchBucket"):
        S3JudgeCache("no-such-bucket", "judge-cache").get("cd" * 32)


def test_a_rerun_through_s3_makes_no_judge_call(s3: Any) -> None:
    data = datasets(
        conversation("a", [turn("q1", "What is 5 + 3?", "The result is 8.", "8")]),
        conversation("b", [turn("q2", "What is 10 * 2?", "It is 12.", "20")]),
    )
    # One server throughout: its endpoint is a part of the judge's identity, so of the cache key.
    with FakeLLMServer() as server:
        results = []
        for _ in range(2):
            model = ChatOpenAI(model="judge", base_url=server.base_url, api_key=SECRET, max_retries=0)
            ledger = JudgeLedger.for_model(model, EvaluationConfig(), cache=open_cache(f"s3://{BUCKET}/judge-cache"))
            results.append(evaluate_sync(data, model, retry=FAST_RETRY, ledger=ledger))
        assert server.call_count == 2
        first, second = results
        assert second.per_conversation_metrics == first.per_conversation_metrics
        usage = second.aggregated_metrics.judge_usage
        assert usage is not None and (usage.cache_hits, usage.calls) == (2, 0)
        stored = objects(s3)
        assert len(stored) == 2 and all(key.startswith("judge-cache/") for key in stored)
        assert all(SECRET.encode() not in body and SECRET not in key for key, body in stored.items())

        for key in stored:  # corrupt every entry: misses, judged again, never an error
            s3.put_object(Bucket=BUCKET, Key=key, Body=b"garbage")
        model = ChatOpenAI(model="judge", base_url=server.base_url, api_key=SECRET, max_retries=0)
        ledger = JudgeLedger.for_model(model, EvaluationConfig(), cache=open_cache(f"s3://{BUCKET}/judge-cache"))
        third = evaluate_sync(data, model, retry=FAST_RETRY, ledger=ledger)
        assert server.call_count == 4
    assert third.per_conversation_metrics == first.per_conversation_metrics
    assert set(objects(s3)) == set(stored)
    assert all(json.loads(body)["format"] == 1 for body in objects(s3).values())


def test_the_stack_gives_the_function_and_the_workers_the_cache_prefix_only() -> None:
    resources = template()["Resources"]
    environment = resources["Function"]["Properties"]["Environment"]["Variables"]
    assert environment["FAIR_FORGE_JUDGE_CACHE"] == {"Fn::Sub": "s3://${JobsBucket}/judge-cache/"}
    assert environment["FAIR_FORGE_JUDGE_PRICES"] == {"Ref": "JudgePrices"}
    worker = resources["WorkerFunction"]["Properties"]["Environment"]["Variables"]
    assert worker["FAIR_FORGE_JUDGE_CACHE"] == environment["FAIR_FORGE_JUDGE_CACHE"]  # jobs use it too
    attempts = resources["AttemptsFunction"]["Properties"]["Environment"]["Variables"]
    assert attempts["FAIR_FORGE_JUDGE_CACHE"] == environment["FAIR_FORGE_JUDGE_CACHE"]  # it judges adaptive rounds
    policy = resources["JudgeCachePolicy"]["Properties"]
    assert policy["Roles"] == [{"Ref": "FunctionRole"}, {"Ref": "WorkerRole"}, {"Ref": "AttemptsRole"}]
    objects_statement, list_statement = policy["PolicyDocument"]["Statement"]
    assert objects_statement["Action"] == ["s3:GetObject", "s3:PutObject"]
    assert objects_statement["Resource"] == {"Fn::Sub": "${JobsBucket.Arn}/judge-cache/*"}
    assert list_statement["Condition"] == {"StringLike": {"s3:prefix": "judge-cache/*"}}
    rules = resources["JobsBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    cache_rule = next(rule for rule in rules if rule["Prefix"] == "judge-cache/")
    assert cache_rule["ExpirationInDays"] == {"Ref": "JudgeCacheRetentionDays"}
    assert template()["Parameters"]["JudgeCacheRetentionDays"]["Default"] == 30
