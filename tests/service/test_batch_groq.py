"""Batch judging on Groq (`langchain_groq.ChatGroq`): the same evaluation in a batch gives the
online result at the batch price, through Groq's routes.

The judge is the real `ChatGroq` (its `AsyncGroq` client, on httpx, builds every route:
`/openai/v1/chat/completions` online, `/openai/v1/files` and `/openai/v1/batches` for the batch)
against `FakeGroqBatchServer` on 127.0.0.1, which serves nothing under OpenAI's `/v1/files` and
lists its batches in one answer, newest first (fair_forge_testing/specs/groq_batch.json). Each test
compares the batch with the online run on one server.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

import pytest
from langchain_groq import ChatGroq

from fair_forge_core.evaluate import run_sync
from fair_forge_core.judges.batch import batch_refusal
from fair_forge_core.judges.batch_api import GROQ_MAX_FILE_BYTES, batch_files, earlier_batches, submit_lines
from fair_forge_core.plan import batch_prices
from fair_forge_core.schemas import ConnectorSpec, EvaluationConfig
from fair_forge_testing.builders import datasets, distinct_conversations
from fair_forge_testing.fake_groq_batch_api import FakeGroqBatchServer
from fair_forge_testing.fake_llm_server import openai_usage
from fair_forge_testing.jobs_harness import JobsAWS
from tests.service.test_batch_judge import EVERY_JUDGE_MODE, PRICES, cancelled_at_the_deadline, dumped, in_batch, online
from tests.service.test_jobs_batch import (
    CALLER_KEY,
    MAX_TOKENS,
    answered_lines,
    aws,  # noqa: F401  (the fixture: moto's state machine, the worker and reduce in-process)
    causes,
    declared_usage,
    online_then_batch_job,
    without_judge_usage,
)

KEY = "gsk_groq-batch-test-key-0123456789abcdef"
GROQ_BATCH_FACTOR = 0.75
"""Groq's batch price: "a 25% cost discount compared to synchronous API pricing" (https://console.groq.com/docs/batch)."""


def groq(server: FakeGroqBatchServer, **params: Any) -> ChatGroq:
    return ChatGroq(model="judge", api_key=KEY, base_url=server.groq_base_url, max_retries=0, max_tokens=64, **params)


def groq_batch_prices(judge: ChatGroq) -> Any:
    """`PRICES` at the batch price the planner gives a ChatGroq connector (`plan.batch_prices`)."""
    return batch_prices([ConnectorSpec(class_path="langchain_groq.ChatGroq", params={})], [judge], PRICES)


def lines_of(server: FakeGroqBatchServer) -> list[dict[str, Any]]:
    return [line for record in server.batches.values() for line in record.lines]


def bodies(items: list[dict[str, Any] | None]) -> Counter[str]:
    return Counter(json.dumps(body, sort_keys=True) for body in items)


@EVERY_JUDGE_MODE
def test_a_groq_batch_sends_the_online_bodies_and_gives_the_online_metrics_at_groqs_batch_price(
    config: EvaluationConfig,
) -> None:
    conversations = datasets(*distinct_conversations(6, 2), *distinct_conversations(2, 1, correct=False))
    with FakeGroqBatchServer(usage=lambda request: openai_usage(500, 40)) as server:
        judge = groq(server)
        expected, online_ledger = online(conversations, judge, config)
        sent = server.requests
        assert {r.path for r in sent} == {"/openai/v1/chat/completions"}
        got, ledger = in_batch(conversations, judge, config, groq_batch_prices(judge))
        assert server.call_count == len(sent)  # nothing more went online
        [record] = server.batches.values()
        lines = lines_of(server)
        calls = server.batch_requests
    assert record.endpoint == "/v1/chat/completions" and {line["url"] for line in lines} == {"/v1/chat/completions"}
    assert {r.path.partition("/openai/v1/")[1] for r in calls} == {"/openai/v1/"}  # Groq's routes
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in calls)
    # Every online body is one line, each as often (a sample each), byte for byte as parsed.
    assert bodies([line["body"] for line in lines]) == bodies([r.body for r in sent])
    assert dumped(got) == dumped(expected)
    batch_usage, online_usage = ledger.summary(), online_ledger.summary()
    assert (batch_usage.calls, batch_usage.input_tokens) == (online_usage.calls, online_usage.input_tokens)
    assert batch_usage.cost_usd == pytest.approx(online_usage.cost_usd * GROQ_BATCH_FACTOR, rel=1e-12)
    assert "batch price" in str(batch_usage.price_source)


def test_an_expired_window_leaves_the_calls_not_answered_unscored_with_batch_expired() -> None:
    conversations = datasets(*distinct_conversations(6, 1))
    with FakeGroqBatchServer(expire_after=2, usage=lambda request: openai_usage(500, 40)) as server:
        got, ledger = in_batch(conversations, judge := groq(server), EvaluationConfig(), groq_batch_prices(judge))
        [record] = server.batches.values()
        assert record.status == "expired" and server.call_count == 0
    assert Counter(c.checks[0].cause for c in got) == {None: 2, "batch_expired": 4}
    assert ledger.summary().calls == 2  # only the lines answered are billed


def test_a_batch_still_running_at_the_deadline_is_cancelled_and_its_answers_kept() -> None:
    conversations = datasets(*distinct_conversations(5, 1))
    config = EvaluationConfig()
    with FakeGroqBatchServer(polls_until_done=10**6, lines_per_poll=1) as server:
        judge = groq(server)
        got = cancelled_at_the_deadline(conversations, judge, config, groq_batch_prices(judge))
        [record] = server.batches.values()
        answered = sum(1 for result in record.results if result is not None)
    assert record.status == "cancelled" and 0 < answered < 5
    assert Counter(c.checks[0].cause for c in got) == {None: answered, "batch_expired": 5 - answered}


def test_earlier_batches_are_read_from_groqs_single_listing() -> None:
    # Groq lists every batch in one answer (no cursor, no order given; the fake: newest first): the
    # submission's own are found, others' and those before `since` left out.
    lines = {f"{n:02d}-0": json.dumps({"model": "judge", "messages": [], "n": n}).encode() for n in range(3)}
    with FakeGroqBatchServer(polls_until_done=10**6) as server:
        judge = groq(server)
        since = time.time() - 5
        ours = run_sync(submit_lines(judge, dict(list(lines.items())[:1]), {"fair_forge_batch": "a"}))
        run_sync(submit_lines(judge, dict(list(lines.items())[1:2]), {"fair_forge_batch": "other"}))
        ours += run_sync(submit_lines(judge, dict(list(lines.items())[2:]), {"fair_forge_batch": "a"}))
        found = run_sync(earlier_batches(judge, {"fair_forge_batch": "a"}, since))
        later = run_sync(earlier_batches(judge, {"fair_forge_batch": "a"}, time.time() + 3600))
    # `created_at` is in seconds: batches of one second have no order to read, so the set is compared.
    assert sorted(batch.id for batch in found) == sorted(ours) and later == []


def test_a_listing_larger_than_a_judges_reply_is_read_whole() -> None:
    # Groq answers every batch of the organization at once: 2,000 older batches of others (about
    # 1.4 MB, past the judges' 1 MB reply cap) before this submission's own.
    from dataclasses import replace

    from fair_forge_core.connectors import EndpointPolicy, build_chat_model

    lines = {"00-0": json.dumps({"model": "judge", "messages": []}).encode()}
    with FakeGroqBatchServer(polls_until_done=10**6) as server:
        params = {"model": "judge", "api_key": KEY, "base_url": server.groq_base_url, "max_retries": 0}
        # As a request builds it: on the judges' reply-limited client.
        judge = build_chat_model(
            "langchain_groq.ChatGroq", params, policy=EndpointPolicy(allowed_networks=("127.0.0.0/8",))
        ).model
        [first] = run_sync(submit_lines(judge, lines, {"fair_forge_batch": "old"}))
        with server._batch_lock:
            template = server._batches[first]
            for n in range(2_000):
                other = replace(template, id=f"batch_other_{n:05d}", metadata={"fair_forge_batch": f"other {n}"})
                server._batches[other.id] = other
        since = time.time() - 5
        ours = run_sync(submit_lines(judge, lines, {"fair_forge_batch": "a"}))
        listed = len(json.dumps(server._list_batches("", b"", {})[1]))
        found = run_sync(earlier_batches(judge, {"fair_forge_batch": "a"}, since))
    assert listed > 1_000_000 and sorted(batch.id for batch in found) == sorted(ours)


def test_a_groq_submission_splits_its_lines_into_files_of_groqs_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import fair_forge_core.judges.batch_api as batch_api

    assert GROQ_MAX_FILE_BYTES == 100 * 1024 * 1024 < batch_api.MAX_FILE_BYTES  # Groq's SDK: "up to 100 MB"
    monkeypatch.setattr(batch_api, "GROQ_MAX_FILE_BYTES", 2_500)  # instead of uploading 100 MB
    body = {"model": "judge", "messages": [{"role": "user", "content": "x" * 1_000}]}
    lines = {f"{n:02d}-0": json.dumps(body | {"n": n}).encode() for n in range(4)}
    with FakeGroqBatchServer(polls_until_done=10**6) as server:
        ids = run_sync(submit_lines(groq(server), lines, {"fair_forge_batch": "a"}))
        files = server.files
        sizes = [len(files[record.input_file_id].content) for record in server.batches.values()]
    assert len(ids) == 2 and all(size <= 2_500 for size in sizes)
    assert len(batch_files(lines)) == 1  # OpenAI's bound holds them all


def test_groq_is_accepted_and_refused_with_another_api() -> None:
    for spelling in ("langchain_groq.ChatGroq", "langchain_groq.chat_models.ChatGroq"):
        assert batch_refusal(spelling, {"base_url": "https://api.groq.com"}) is None
    assert "streaming" in str(batch_refusal("langchain_groq.ChatGroq", {"streaming": True}))
    refusal = batch_refusal("fair_forge_core.judges.ReferenceJudge", {})
    assert refusal is not None and "langchain_groq.ChatGroq" in refusal


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_a_groq_batch_job_judges_every_turn_once_at_groqs_batch_price(aws: JobsAWS) -> None:  # noqa: F811
    with FakeGroqBatchServer(usage=declared_usage, polls_until_done=1) as server:
        params = {"model": "judge", "base_url": server.groq_base_url, "api_key": CALLER_KEY, "max_tokens": MAX_TOKENS}
        body = {
            "connector": {"class_path": "langchain_groq.ChatGroq", "params": params},
            "datasets": distinct_conversations(8, 2),
        }
        online_result, result, sent, online_cost = online_then_batch_job(aws, server, body)
        lines, answered = lines_of(server), answered_lines(server)
        assert {r.endpoint for r in server.batches.values()} == {"/v1/chat/completions"}
    assert bodies([line["body"] for line in lines]) == bodies([r.body for r in sent])
    assert len(answered) == len(sent) and set(causes(result)) == {None}
    assert without_judge_usage(result) == without_judge_usage(online_result)
    usage = result["aggregated_metrics"]["judge_usage"]
    assert usage["calls"] == online_result["aggregated_metrics"]["judge_usage"]["calls"] == len(sent)
    assert usage["cost_usd"] == pytest.approx(online_cost * GROQ_BATCH_FACTOR, rel=1e-9)


def test_each_model_is_priced_at_its_own_providers_batch_factor() -> None:
    from langchain_openai import ChatOpenAI

    from fair_forge_core.judges.prices import ModelPrice, PriceTable

    table = PriceTable(
        source="test", models={"judge": ModelPrice(input=1.0, output=2.0), "gpt": ModelPrice(input=4.0, output=8.0)}
    )
    on_groq = ChatGroq(model="judge", api_key=KEY)
    on_openai = ChatOpenAI(model="gpt", api_key=KEY)
    groq_spec = ConnectorSpec(class_path="langchain_groq.ChatGroq", params={})
    openai_spec = ConnectorSpec(class_path="langchain_openai.ChatOpenAI", params={})
    panel = batch_prices([groq_spec, openai_spec], [on_groq, on_openai], table)
    assert panel is not None
    assert (panel.models["judge"].input, panel.models["judge"].output) == (0.75, 1.5)  # Groq: 25 % off
    assert (panel.models["gpt"].input, panel.models["gpt"].output) == (2.0, 4.0)  # OpenAI: half
    assert panel.source == "test, at the batch price (0.5×/0.75×)"
    # One model name through both providers: the larger factor, so the cap holds for both.
    same_name = ChatOpenAI(model="judge", api_key=KEY)
    both = batch_prices([openai_spec, groq_spec], [same_name, on_groq], table)
    assert both is not None and both.models["judge"].input == 0.75
