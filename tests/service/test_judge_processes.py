"""`judges.processes`: an evaluation's provider calls spread over a worker process, with the real
`ChatOpenAI` (built by `connectors.build_chat_model`) against the fake provider on 127.0.0.1.

What must hold: the same result as on one loop (verdicts, order, usage, cost, unscored reasons),
one concurrency limit across the processes, 429s and failures read as on one loop, and a worker
that dies costing no turn."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fair_forge_core.connectors import build_chat_model
from fair_forge_core.connectors.rules import LOOPBACK_NETWORKS, EndpointPolicy
from fair_forge_core.evaluate import evaluate, evaluate_sync, run_sync
from fair_forge_core.judges import processes
from fair_forge_core.judges.llm import JudgeTelemetry, RetryPolicy
from fair_forge_core.judges.prices import ModelPrice, PriceTable
from fair_forge_core.judges.processes import JudgeWorkers, worker_count, workers_for
from fair_forge_core.judges.usage import JudgeLedger
from fair_forge_core.schemas import EvaluationConfig, EvaluationResult
from fair_forge_testing.builders import datasets, distinct_conversations
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply

OPENAI = "langchain_openai.chat_models.ChatOpenAI"
READY_WITHIN_S = 60.0  # a worker imports LangChain: about a second on a quiet machine


@pytest.fixture
def one_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """One worker, fresh for the test (none carried over from another test's models and servers)."""
    monkeypatch.setenv(processes.PROCESSES_VARIABLE, "1")
    processes.stop_this_process_workers()
    yield
    processes.stop_this_process_workers()


PRICES = PriceTable(source="test", models={"gpt-4o-mini": ModelPrice(input=0.15, output=0.6)})


def chat_model(server: FakeLLMServer, key: str = "sk-test-processes") -> Any:
    params = {"model": "gpt-4o-mini", "api_key": key, "base_url": server.base_url, "max_tokens": 200}
    return build_chat_model(OPENAI, params, policy=EndpointPolicy(allowed_networks=LOOPBACK_NETWORKS)).model


def started(model: Any) -> JudgeWorkers:
    """The model's workers, started and ready."""
    workers = workers_for(model)
    assert workers is not None
    workers.processes.start()
    assert workers.processes.wait_ready(READY_WITHIN_S), "the worker did not start"
    assert all(worker.alive for worker in workers.processes.workers)
    return workers


def comparable(result: EvaluationResult) -> dict[str, Any]:
    """The result without what differs between two runs of the same evaluation (timings, ids)."""
    data = json.loads(result.model_dump_json())
    data.pop("timings", None)
    data.get("provenance", {}).pop("evaluated_at", None)
    return data


def run(model: Any, count: int, config: EvaluationConfig, **kwargs: Any) -> EvaluationResult:
    return evaluate_sync(datasets(*distinct_conversations(count, 2)), model, config, **kwargs)


def unscored(result: EvaluationResult) -> int:
    return sum(score is None for m in result.per_conversation_metrics for score in m.correctness_scores)


def test_a_worker_takes_calls_and_the_result_is_the_one_of_one_loop(one_worker: None) -> None:
    config = EvaluationConfig(max_concurrency=48)
    with FakeLLMServer(latency_s=0.02) as server:
        model = chat_model(server)
        workers = started(model)
        before = sum(worker.calls for worker in workers.processes.workers)
        spread = run(model, 60, config, ledger=JudgeLedger.for_model(model, config, prices=PRICES))
        sent = sum(worker.calls for worker in workers.processes.workers) - before
        assert server.max_in_flight <= 48
        os.environ[processes.PROCESSES_VARIABLE] = "0"
        alone = run(chat_model(server), 60, config, ledger=JudgeLedger.for_model(model, config, prices=PRICES))
        assert server.call_count == 240  # every turn asked once in each run, nothing retried
    assert 0 < sent < 120  # both loops judged
    assert unscored(spread) == 0
    assert comparable(spread) == comparable(alone)


def test_the_cost_cap_holds_across_the_processes(one_worker: None) -> None:
    config = EvaluationConfig(max_concurrency=32, max_cost_usd=0.002)
    with FakeLLMServer(latency_s=0.05) as server:
        model = chat_model(server)
        workers = started(model)
        before = workers.processes.workers[0].calls
        ledger = JudgeLedger.for_model(model, config, prices=PRICES)
        result = run(model, 60, config, ledger=ledger)
        assert workers.processes.workers[0].calls > before
    usage = result.aggregated_metrics.judge_usage
    assert usage is not None and usage.cost_usd is not None
    assert 0 < usage.cost_usd <= 0.002
    assert ledger.turns_stopped_by_cap > 0
    assert unscored(result) == ledger.turns_stopped_by_cap


def test_one_concurrency_limit_holds_across_the_processes(one_worker: None) -> None:
    with FakeLLMServer(latency_s=0.1) as server:
        model = chat_model(server)
        workers = started(model)
        before = workers.processes.workers[0].calls
        result = run(model, 40, EvaluationConfig(max_concurrency=10))
        assert workers.processes.workers[0].calls > before
        assert server.max_in_flight <= 10
    assert unscored(result) == 0


def test_429s_on_a_worker_hold_every_call_and_leave_no_turn_unscored(one_worker: None) -> None:
    telemetry = JudgeTelemetry()
    with FakeLLMServer(latency_s=0.01, script=[Reply(status=429, retry_after_s=0.05)] * 12) as server:
        model = chat_model(server)
        workers = started(model)
        before = workers.processes.workers[0].calls
        result = run(model, 20, EvaluationConfig(max_concurrency=16), telemetry=telemetry)
        assert workers.processes.workers[0].calls > before
        statuses = server.status_counts
    assert unscored(result) == 0
    assert statuses[429] == 12 and statuses[200] == 40
    assert telemetry.rate_limited == 12


def test_a_failing_provider_reads_the_same_through_a_worker(one_worker: None) -> None:
    """A 400 fails its turn with the same secret-free reason on either loop."""
    config = EvaluationConfig(max_concurrency=8)
    with FakeLLMServer(script=[Reply(status=400, error_code="bad_request_x")] * 1000) as server:
        model = chat_model(server)
        workers = started(model)
        with pytest.raises(Exception) as spread_error:
            run(model, 8, config)
        assert workers.processes.workers[0].calls > 0
        os.environ[processes.PROCESSES_VARIABLE] = "0"
        with pytest.raises(Exception) as alone_error:
            run(chat_model(server), 8, config)
    assert type(spread_error.value) is type(alone_error.value)
    assert str(spread_error.value) == str(alone_error.value)
    assert "HTTP 400" in str(spread_error.value) and "sk-test" not in str(spread_error.value)


def test_a_worker_that_dies_costs_no_turn(one_worker: None) -> None:
    with FakeLLMServer(latency_s=0.2) as server:
        model = chat_model(server)
        workers = started(model)
        worker = workers.processes.workers[0]

        async def kill_when_busy() -> None:
            for _ in range(400):  # bounded: 20 s
                if worker.in_flight > 0:
                    os.kill(worker.pid, signal.SIGKILL)
                    return
                await asyncio.sleep(0.05)
            raise AssertionError("the worker got no call")

        async def both() -> EvaluationResult:
            killer = asyncio.create_task(kill_when_busy())
            result = await evaluate(
                datasets(*distinct_conversations(20, 2)),
                model,
                EvaluationConfig(max_concurrency=16),
                context=None,
            )
            await killer
            return result

        result = run_sync(both())
    assert unscored(result) == 0
    for _ in range(200):  # bounded: 10 s for the reader to see the pipe close (it has by now, as a rule)
        if not worker.alive:
            break
        time.sleep(0.05)
    assert not worker.alive


def test_the_worker_count_follows_the_variable_the_cpus_and_lambda_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(processes.PROCESSES_VARIABLE, "3")
    assert worker_count() == 3
    monkeypatch.setenv(processes.PROCESSES_VARIABLE, "-1")
    with pytest.raises(ValueError, match=processes.PROCESSES_VARIABLE):
        worker_count()
    monkeypatch.delenv(processes.PROCESSES_VARIABLE)
    cpus = processes.available_cpus()
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", raising=False)
    assert worker_count() == cpus - 1
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024")  # under one vCPU's worth
    assert worker_count() == 0
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", str(2 * processes.LAMBDA_MB_PER_VCPU))
    assert worker_count() == min(cpus, 2) - 1


def test_a_model_built_another_way_has_no_workers(one_worker: None) -> None:
    from langchain_openai import ChatOpenAI

    assert workers_for(ChatOpenAI(model="gpt-4o-mini", api_key="sk-x", base_url="http://127.0.0.1:9/v1")) is None


def test_no_worker_is_configured_with_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(processes.PROCESSES_VARIABLE, "0")
    with FakeLLMServer() as server:
        assert workers_for(chat_model(server)) is None


def test_retry_policy_is_the_evaluations_on_a_worker_too(one_worker: None) -> None:
    """Two 500s, then answers: retried from this process as on one loop (max_attempts 3)."""
    telemetry = JudgeTelemetry()
    with FakeLLMServer(script=[Reply(status=500), Reply(status=500)]) as server:
        model = chat_model(server)
        workers = started(model)
        result = run(
            model,
            1,
            EvaluationConfig(max_concurrency=1),
            retry=RetryPolicy(max_attempts=3, base_delay_s=0.01),
            telemetry=telemetry,
        )
    assert unscored(result) == 0
    assert telemetry.retries == 2
    assert workers.processes.workers[0].calls == 4  # two turns and two retries, all on the worker


def test_each_requests_model_answers_its_calls_on_the_worker(one_worker: None) -> None:
    """20 models (more than a worker keeps), on two providers with two keys, one after another:
    every call reaches its own model's provider with its own key."""
    with FakeLLMServer() as first, FakeLLMServer() as second:
        workers = started(chat_model(first))
        before = workers.processes.workers[0].calls
        for index in range(20):
            server, key = (first, "sk-first-key") if index % 2 == 0 else (second, "sk-second-key")
            result = run(chat_model(server, key), 1, EvaluationConfig(max_concurrency=1))
            assert unscored(result) == 0
        assert workers.processes.workers[0].calls - before == 40
        assert {request.api_key for request in first.requests} == {"sk-first-key"}
        assert {request.api_key for request in second.requests} == {"sk-second-key"}
        assert len(first.requests) == len(second.requests) == 20


def test_structured_output_on_a_worker_gives_the_result_of_one_loop(one_worker: None) -> None:
    config = EvaluationConfig(max_concurrency=8, use_structured_output=True, structured_output_method="json_schema")
    with FakeLLMServer() as server:
        model = chat_model(server)
        workers = started(model)
        spread = run(model, 10, config)
        assert workers.processes.workers[0].calls > 0
        os.environ[processes.PROCESSES_VARIABLE] = "0"
        alone = run(chat_model(server), 10, config)
    assert unscored(spread) == 0
    assert comparable(spread) == comparable(alone)
