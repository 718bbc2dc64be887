"""Batch judging on Azure OpenAI (`langchain_openai.AzureChatOpenAI`): the same evaluation in a
batch gives the online result at half the price, through Azure's routes and line format.

The judge is the real `AzureChatOpenAI` (its `AsyncAzureOpenAI` client builds every route:
`/openai/deployments/{d}/chat/completions` online, `/openai/files` and `/openai/batches` for the
batch, each with `api-version` and `api-key`) against `FakeAzureBatchServer` on 127.0.0.1, which
serves nothing else: a line with OpenAI's `url`, or whose body's `model` is not a deployment of
the resource, is refused (fair_forge_testing/specs/azure_openai_batch.json). Each test compares
the batch with the online run on one server.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import httpx2
import pytest
from langchain_openai import AzureChatOpenAI

from fair_forge_core.evaluate import evaluate_conversations, run_sync
from fair_forge_core.judges.base import RunContext
from fair_forge_core.judges.batch import JudgeBatch, batch_refusal, known_status
from fair_forge_core.judges.batch_api import batch_files, line_body
from fair_forge_core.judges.prices import at_batch_price
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.builders import datasets, distinct_conversations
from fair_forge_testing.fake_azure_batch_api import FakeAzureBatchServer
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

KEY = "azure-batch-test-key-0123456789abcdef"
API_VERSION = "2024-10-21"
DEPLOYMENTS = ("judge", "judge-global-batch")
CONNECTORS = {
    # AzureChatOpenAI's three ways to reach a deployment, and the `model` each puts in the body:
    "deployment": ({"azure_deployment": "judge"}, None, "judge"),
    "deployment_and_model": (
        {"azure_deployment": "judge-global-batch", "model": "judge"},
        "judge",
        "judge-global-batch",
    ),
    "model_as_deployment": ({"model": "judge"}, "judge", "judge"),
}
"""name → (AzureChatOpenAI parameters, the online body's `model`, the deployment called)."""


def azure(server: FakeAzureBatchServer, **params: Any) -> AzureChatOpenAI:
    return AzureChatOpenAI(
        azure_endpoint=server.azure_endpoint,
        api_key=KEY,
        api_version=API_VERSION,
        max_retries=0,
        max_tokens=64,
        **params,
    )


def without_model(body: dict[str, Any] | None) -> str:
    assert body is not None
    return json.dumps({k: v for k, v in body.items() if k != "model"}, sort_keys=True)


def lines_of(server: FakeAzureBatchServer) -> list[dict[str, Any]]:
    return [line for record in server.batches.values() for line in record.lines]


@EVERY_JUDGE_MODE
@pytest.mark.parametrize("connector", list(CONNECTORS))
def test_an_azure_batch_sends_the_online_bodies_to_the_deployment_at_half_the_price(
    connector: str, config: EvaluationConfig
) -> None:
    params, online_model, deployment = CONNECTORS[connector]
    conversations = datasets(*distinct_conversations(6, 2), *distinct_conversations(2, 1, correct=False))
    with FakeAzureBatchServer(usage=lambda request: openai_usage(500, 40), deployments=DEPLOYMENTS) as server:
        judge = azure(server, **params)
        expected, online_ledger = online(conversations, judge, config)
        sent = server.requests
        assert {r.path for r in sent} == {
            f"/openai/deployments/{deployment}/chat/completions?api-version={API_VERSION}"
        }
        assert {r.body["model"] if r.body else "" for r in sent} == {online_model}
        got, ledger = in_batch(conversations, judge, config)
        assert server.call_count == len(sent)  # nothing more went online
        [record] = server.batches.values()
        lines = lines_of(server)
    assert record.endpoint == "/chat/completions" and {line["url"] for line in lines} == {"/chat/completions"}
    assert {line["body"]["model"] for line in lines} == {deployment}
    # Every online body is one line, each as often (a sample each), the same but for its model.
    assert Counter(without_model(line["body"]) for line in lines) == Counter(without_model(r.body) for r in sent)
    assert dumped(got) == dumped(expected)
    batch_usage, online_usage = ledger.summary(), online_ledger.summary()
    assert (batch_usage.calls, batch_usage.input_tokens) == (online_usage.calls, online_usage.input_tokens)
    assert batch_usage.cost_usd == pytest.approx(online_usage.cost_usd / 2, rel=1e-12)


@pytest.mark.parametrize("connector", ["deployment", "deployment_and_model"])
def test_a_line_body_is_the_online_body_byte_for_byte_but_its_model(connector: str) -> None:
    params, online_model, deployment = CONNECTORS[connector]
    config = EvaluationConfig(use_structured_output=True, structured_output_method="function_calling")
    with FakeAzureBatchServer(deployments=DEPLOYMENTS) as server:
        judge = azure(server, **params)
        batch = JudgeBatch.recording([judge])
        run_sync(
            evaluate_conversations(datasets(*distinct_conversations(3, 1)), judge, config, RunContext(batch=batch))
        )
        assert server.call_count == 0 and not server.batches  # the submit pass sends nothing itself
    recorded = batch.recorded(judge)
    assert recorded.deployment == deployment and len(recorded.lines) == 3
    [content] = batch_files(recorded.lines, recorded.deployment)
    for (key, online_body), line in zip(sorted(recorded.lines.items()), content.splitlines(), strict=True):
        head = b'{"custom_id":"%s","method":"POST","url":"/chat/completions","body":' % key.encode()
        assert line.startswith(head) and line.endswith(b"}")
        # The SDK writes `"model":` first, compactly: the online bytes with its value swapped.
        was, now = json.dumps(online_model).encode(), json.dumps(deployment).encode()
        assert online_body.startswith(b'{"model":' + was)
        assert line[len(head) : -1] == b'{"model":' + now + online_body[len(b'{"model":' + was) :]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"model":null,"messages":[]}', b'{"model":"dep","messages":[]}'),
        (b'{ "messages" : [], "model" : "gpt-4o" , "n": 1 }', b'{ "messages" : [], "model" : "dep" , "n": 1 }'),
        (b'{"messages":[],"tools":[{"model":"kept"}]}', b'{"model":"dep","messages":[],"tools":[{"model":"kept"}]}'),
        (b'{"model":{"name":"x"},"x":"\\u00e9"}', b'{"model":"dep","x":"\\u00e9"}'),
        (b"{}", b'{"model":"dep"}'),
    ],
    ids=["null", "spaced", "nested_kept", "object_value", "empty"],
)
def test_line_body_swaps_the_top_level_model_and_keeps_every_other_byte(body: bytes, expected: bytes) -> None:
    assert line_body(body, "dep") == expected
    assert line_body(body, None) == body  # OpenAI's lines keep the body as it is


def test_an_expired_window_leaves_the_calls_not_answered_unscored_with_batch_expired() -> None:
    conversations = datasets(*distinct_conversations(6, 1))
    with FakeAzureBatchServer(expire_after=2, usage=lambda request: openai_usage(500, 40)) as server:
        got, ledger = in_batch(conversations, azure(server, azure_deployment="judge"), EvaluationConfig())
        [record] = server.batches.values()
        assert record.status == "expired" and server.call_count == 0
    assert Counter(c.checks[0].cause for c in got) == {None: 2, "batch_expired": 4}
    assert ledger.summary().calls == 2  # only the lines answered are billed


def test_a_batch_still_running_at_the_deadline_is_cancelled_and_its_answers_kept() -> None:
    # Azure does not expire a batch past its 24 hours ("Jobs taking longer than 24 hours will
    # continue to execute until canceled"): the caller's deadline ends it.
    conversations = datasets(*distinct_conversations(5, 1))
    config = EvaluationConfig()
    with FakeAzureBatchServer(polls_until_done=10**6, lines_per_poll=1) as server:
        judge = azure(server, azure_deployment="judge")
        got = cancelled_at_the_deadline(conversations, judge, config, at_batch_price(PRICES))
        [record] = server.batches.values()
        answered = sum(1 for result in record.results if result is not None)
    assert record.status == "cancelled" and 0 < answered < 5
    assert Counter(c.checks[0].cause for c in got) == {None: answered, "batch_expired": 5 - answered}


def test_azure_is_accepted_by_endpoint_and_refused_by_base_url() -> None:
    for spelling in ("langchain_openai.AzureChatOpenAI", "langchain_openai.chat_models.azure.AzureChatOpenAI"):
        assert batch_refusal(spelling, {"azure_endpoint": "https://x.openai.azure.com"}) is None
    refusal = batch_refusal("langchain_openai.AzureChatOpenAI", {"base_url": "https://x/openai/deployments/d"})
    assert refusal is not None and "azure_endpoint" in refusal
    assert "use_responses_api" in str(batch_refusal("langchain_openai.AzureChatOpenAI", {"use_responses_api": True}))
    assert batch_refusal("langchain_openai.ChatOpenAI", {"base_url": "https://api.example.com/v1"}) is None


def test_a_status_is_read_in_any_case() -> None:
    # Azure's REST examples show "Validating" and "Completed", its SDK's and OpenAI's lower case.
    assert [known_status(s) for s in ("Validating", "Completed", "in_progress", "done", None)] == [
        "validating",
        "completed",
        "in_progress",
        "unknown",
        "unknown",
    ]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_an_azure_batch_job_judges_every_turn_once_at_half_the_price(aws: JobsAWS) -> None:  # noqa: F811
    with FakeAzureBatchServer(usage=declared_usage, polls_until_done=1) as server:
        params = {
            "azure_endpoint": server.azure_endpoint,
            "azure_deployment": "judge",
            "api_version": API_VERSION,
            "api_key": CALLER_KEY,
            "max_tokens": MAX_TOKENS,
        }
        body = {
            "connector": {"class_path": "langchain_openai.AzureChatOpenAI", "params": params},
            "datasets": distinct_conversations(8, 2),
        }
        online_result, result, sent, online_cost = online_then_batch_job(aws, server, body)
        lines, answered = lines_of(server), answered_lines(server)
        assert {r.endpoint for r in server.batches.values()} == {"/chat/completions"}
    assert {(line["url"], line["body"]["model"]) for line in lines} == {("/chat/completions", "judge")}
    assert sorted(without_model(line["body"]) for line in lines) == sorted(without_model(r.body) for r in sent)
    assert len(answered) == len(sent) and set(causes(result)) == {None}
    assert without_judge_usage(result) == without_judge_usage(online_result)
    usage = result["aggregated_metrics"]["judge_usage"]
    assert usage["calls"] == online_result["aggregated_metrics"]["judge_usage"]["calls"] == len(sent)
    assert usage["cost_usd"] == pytest.approx(online_cost / 2, rel=1e-9)


@pytest.mark.parametrize(
    ("path", "deployment"),
    [
        ("/openai/deployments/judge/chat/completions", "judge"),
        ("/prefix/openai/deployments/a%2Fb/chat/completions", "a/b"),  # decoded once, after matching
        ("/openai/deployments/a%2525b/chat/completions", "a%25b"),
        ("/v1/chat/completions", None),
    ],
)
def test_the_deployment_is_read_from_the_path_as_sent(path: str, deployment: str | None) -> None:
    from fair_forge_core.judges.batch import deployment_of

    raw = httpx2.URL("http://127.0.0.1:1" + path + "?api-version=2024-10-21").raw_path.partition(b"?")[0]
    assert deployment_of(raw.decode("ascii")) == deployment
