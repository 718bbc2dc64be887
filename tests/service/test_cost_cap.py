"""The cost cap holds: every judge call reserves its worst case from one budget before it starts.

The real `ChatOpenAI` against fake OpenAI-compatible servers that declare each completion's
usage. Golden numbers come from what the servers reported and the price table's arithmetic,
and the worst case of a call from the rule docs/how-to/cost-and-cache.md "Judge cost and cache" states (the bytes of the messages sent,
8 tokens a message and 8 for the reply, at the input price, plus `max_tokens` at the output
price), computed here from the requests the servers recorded, never from the ledger.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges.llm import RetryPolicy
from fair_forge_core.judges.prices import PriceTable, read_price_table
from fair_forge_core.judges.usage import JudgeLedger, UnboundedOutput
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply, openai_usage
from fair_forge_testing.handler_client import call_handler

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05, call_timeout_s=10.0)
API_KEY = "sk-cost-cap-secret-0123456789abcdef"
MAX_TOKENS = 64
INPUT_PRICE, OUTPUT_PRICE = 2.0, 8.0  # USD per million tokens
CAP_MESSAGE = "the cost cap (config.max_cost_usd {cap:g}) was reached"


def message_bytes(body: dict[str, Any]) -> int:
    return sum(len(str(m["content"]).encode()) for m in body["messages"])


def declared_usage(request: dict[str, Any]) -> dict[str, Any]:
    """A third of the bytes sent as input tokens (English runs near a quarter), 40 out."""
    return openai_usage(message_bytes(request) // 3, 40)


def worst_case(body: dict[str, Any]) -> float:
    """The worst case of one call (docs/how-to/cost-and-cache.md), from the request as the server received it."""
    input_bound = message_bytes(body) + 8 * (len(body["messages"]) + 1)
    return (input_bound * INPUT_PRICE + MAX_TOKENS * OUTPUT_PRICE) / 1e6


def spent(*servers: FakeLLMServer) -> float:
    """What the servers billed: their declared usage at the price."""
    return sum(
        (r.usage["prompt_tokens"] * INPUT_PRICE + r.usage["completion_tokens"] * OUTPUT_PRICE) / 1e6
        for server in servers
        for r in server.requests
        if r.usage is not None
    )


def chat(server: FakeLLMServer, model: str = "judge", **kwargs: Any) -> ChatOpenAI:
    params = {"model": model, "base_url": server.base_url, "api_key": API_KEY, "max_retries": 0}
    return ChatOpenAI(**{**params, "max_tokens": MAX_TOKENS, **kwargs})


def prices(*models: str) -> PriceTable:
    table = {model: {"input": INPUT_PRICE, "output": OUTPUT_PRICE} for model in models}
    return read_price_table(json.dumps(table))


def turns(count: int) -> Any:
    return datasets(
        *(conversation(f"s{i}", [turn(f"q{i}", f"What is {i} + {i}?", str(2 * i), str(2 * i))]) for i in range(count))
    )


def errors_of(result: Any) -> list[str | None]:
    return [i.error for m in result.per_conversation_metrics for i in m.interactions or []]


@pytest.mark.parametrize(("concurrency", "worst_cases"), [(1, 4.5), (8, 2.5)])
def test_spending_never_passes_the_cap_and_stops_only_when_the_next_call_would(
    concurrency: int, worst_cases: float
) -> None:
    # 8 in flight under a cap of 2.5 worst cases (each call costs about a third of its worst
    # case): a cap that looked only at money spent let all 8 start and spent 2.8 worst cases.
    with FakeLLMServer(usage=declared_usage, latency_s=0.05) as server:
        model = chat(server)
        # The worst case of one of these calls, measured on a first uncapped run of one turn.
        evaluate_sync(turns(1), model, retry=FAST_RETRY)
        one_call = worst_case(server.requests[0].body)  # type: ignore[arg-type]
        server.reset_stats()
        cap = worst_cases * one_call
        config = EvaluationConfig(max_concurrency=concurrency, max_cost_usd=cap)
        ledger = JudgeLedger.for_model(model, config, prices=prices("judge"))
        result = evaluate_sync(turns(12), model, config, retry=FAST_RETRY, ledger=ledger)
        calls = server.call_count
        billed = spent(server)
        worst = [worst_case(r.body) for r in server.requests]  # type: ignore[arg-type]
    assert billed <= cap
    # Every call reserved its worst case; as many as fit side by side always start, and more
    # once reservations are replaced by (smaller) real costs.
    assert calls >= math.floor(cap / max(worst))
    assert errors_of(result).count(CAP_MESSAGE.format(cap=cap)) == 12 - calls
    usage = result.aggregated_metrics.judge_usage
    assert usage is not None and usage.turns_stopped_by_cap == 12 - calls
    assert usage.cost_usd == pytest.approx(billed, rel=1e-9)


def test_an_ensemble_with_samples_shares_one_budget() -> None:
    # The observed case: three connectors × 10 samples under one cap spent 190 times the cap,
    # each member checking only what it had itself spent, after the fact.
    servers = [FakeLLMServer(usage=declared_usage, latency_s=0.02) for _ in range(3)]
    with servers[0], servers[1], servers[2]:
        models = [chat(server, f"judge-{i}") for i, server in enumerate(servers)]
        probe = chat(servers[0], "judge-0")
        evaluate_sync(turns(1), probe, retry=FAST_RETRY)
        cap = 6.5 * worst_case(servers[0].requests[0].body)  # type: ignore[arg-type]
        servers[0].reset_stats()
        config = EvaluationConfig(max_concurrency=8, max_cost_usd=cap, judge_samples=10)
        ledger = JudgeLedger.for_models(models, config, prices=prices("judge-0", "judge-1", "judge-2"))
        result = evaluate_sync(turns(4), models, config, retry=FAST_RETRY, ledger=ledger)
        billed = spent(*servers)
        calls = sum(server.call_count for server in servers)
    assert billed <= cap
    assert 6 <= calls < 4 * 10 * 3
    usage = result.aggregated_metrics.judge_usage
    assert usage is not None and usage.cost_usd == pytest.approx(billed, rel=1e-9)
    assert usage.turns_stopped_by_cap == sum(m.turns_stopped_by_cap for m in usage.members or []) > 0
    assert result.aggregated_metrics.readiness is not None
    assert result.aggregated_metrics.readiness.status == "insufficient_evidence"


def test_a_reply_without_usage_keeps_its_whole_reservation() -> None:
    with FakeLLMServer(script=[Reply(omit_usage=True)] * 12) as server:
        model = chat(server)
        evaluate_sync(turns(1), model, retry=FAST_RETRY)
        one_call = worst_case(server.requests[0].body)  # type: ignore[arg-type]
        server.reset_stats()
        cap = 3.5 * one_call
        config = EvaluationConfig(max_concurrency=1, max_cost_usd=cap)
        ledger = JudgeLedger.for_model(model, config, prices=prices("judge"))
        evaluate_sync(turns(8), model, config, retry=FAST_RETRY, ledger=ledger)
        worst = [worst_case(r.body) for r in server.requests]  # type: ignore[arg-type]
    # Unknown cost counts as the worst case: as many calls as worst cases fit, and no more.
    assert server.call_count == 3
    assert sum(worst) <= cap < sum(worst) + max(worst)


def test_a_failed_call_gives_its_reservation_back() -> None:
    with FakeLLMServer(usage=declared_usage) as server:
        model = chat(server)
        evaluate_sync(turns(1), model, retry=FAST_RETRY)
        one_call = worst_case(server.requests[0].body)  # type: ignore[arg-type]
        server.reset_stats()
        server.enqueue(Reply(status=500), Reply(status=500))
        # Room for one call's worst case and a little: the two failures must not use it up.
        config = EvaluationConfig(max_concurrency=1, max_cost_usd=1.2 * one_call)
        ledger = JudgeLedger.for_model(model, config, prices=prices("judge"))
        result = evaluate_sync(turns(1), model, config, retry=FAST_RETRY, ledger=ledger)
    assert server.call_count == 3 and errors_of(result) == [None]


def test_a_cap_needs_a_bound_on_the_reply_when_output_costs_money() -> None:
    with FakeLLMServer() as server:
        unbounded = ChatOpenAI(model="judge", base_url=server.base_url, api_key=API_KEY)
        config = EvaluationConfig(max_cost_usd=1.0)
        with pytest.raises(UnboundedOutput, match=r"config\.max_cost_usd .*connector\.params\.max_tokens"):
            JudgeLedger.for_model(unbounded, config, prices=prices("judge"))
        free_output = read_price_table('{"judge": {"input": 1, "output": 0}}')
        assert JudgeLedger.for_model(unbounded, config, prices=free_output).budget is not None
        bounded = ChatOpenAI(model="judge", base_url=server.base_url, api_key=API_KEY, max_tokens=9)
        assert JudgeLedger.for_model(bounded, config, prices=prices("judge")).output_tokens_bound == 9


def test_the_service_refuses_an_unbounded_reply_under_a_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_JUDGE_PRICES", json.dumps({"judge": {"input": 1, "output": 1}}))
    with FakeLLMServer() as server:
        body = {
            "connector": {
                "class_path": "langchain_openai.ChatOpenAI",
                "params": {"model": "judge", "base_url": server.base_url, "api_key": API_KEY},
            },
            "datasets": [d.model_dump(mode="json", exclude_none=True) for d in turns(2)],
            "config": {"max_cost_usd": 0.5},
        }
        refused = call_handler(body)
        body["connector"]["params"]["max_tokens"] = 256  # type: ignore[index]
        accepted = call_handler(body)
        calls = server.call_count
    assert refused.status == 400 and "connector.params.max_tokens" in refused.body["error"]
    assert API_KEY not in json.dumps(refused.body)
    assert accepted.status == 200 and calls == 2
