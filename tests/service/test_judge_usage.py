"""The judge's cost ledger through the real `ChatOpenAI` against the fake OpenAI-compatible server.

Golden numbers are the token counts the server reports (`RecordedRequest.usage`) and the
arithmetic of the price table, never the ledger's own output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from fair_forge_core.connectors.environment import JudgeEnvironment, SettingsError
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.judges import identity as identity_module
from fair_forge_core.judges.llm import JudgeTelemetry, RetryPolicy
from fair_forge_core.judges.prices import PriceTable, read_price_table
from fair_forge_core.judges.usage import JudgeLedger, MissingPrice, prompt_hash
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply, last_user_text, openai_usage
from fair_forge_testing.handler_client import call_handler, run_in_subprocess
from handler.settings import Settings

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05, call_timeout_s=5.0)
API_KEY = "sk-ledger-secret-0123456789abcdef"
PRICES = {"judge": {"input": 2.0, "output": 8.0, "cached_input": 0.5}}


def exact_usage(request: dict[str, Any]) -> dict[str, Any]:
    """Counts that differ per request: prompt = characters of the turn, 3 of them cached, 11 out."""
    prompt = len(last_user_text(request))
    return openai_usage(prompt, 11, cached_tokens=3)


@pytest.fixture
def server():
    with FakeLLMServer(usage=exact_usage) as running:
        yield running


def openai_model(server: FakeLLMServer, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(**{"model": "judge", "base_url": server.base_url, "api_key": API_KEY, "max_retries": 0, **kwargs})


def three_turns():
    return datasets(
        conversation("a", [turn("q1", "What is 5 + 3?", "The result is 8.", "8")]),
        conversation("b", [turn("q2", "What is 10 * 2?", "It is 12.", "20")]),
        conversation("c", [turn("q3", "Capital of France?", "Paris, of course.", "Paris")]),
    )


def reported(server: FakeLLMServer) -> tuple[int, int, int, int]:
    """(input, output, cached, completions with usage) as the server sent them."""
    sent = [r.usage for r in server.requests if r.status == 200 and r.usage is not None]
    return (
        sum(u["prompt_tokens"] for u in sent),
        sum(u["completion_tokens"] for u in sent),
        sum(u["prompt_tokens_details"]["cached_tokens"] for u in sent),
        len(sent),
    )


def ledger_for(model: Any, config: EvaluationConfig | None = None, **kwargs: Any) -> JudgeLedger:
    table = PriceTable(source="test", models=read_price_table(json.dumps(PRICES)).models)
    return JudgeLedger.for_model(model, config or EvaluationConfig(), prices=table, **kwargs)


def test_usage_totals_are_the_counts_the_server_reported(server: FakeLLMServer) -> None:
    model = openai_model(server)
    result = evaluate_sync(three_turns(), model, retry=FAST_RETRY, ledger=ledger_for(model))
    usage = result.aggregated_metrics.judge_usage
    assert usage is not None
    input_tokens, output_tokens, cached, answered = reported(server)
    assert answered == 3 == server.call_count
    assert (usage.calls, usage.calls_without_usage) == (3, 0)
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens) == (input_tokens, output_tokens, cached)
    assert cached == 9 and output_tokens == 33  # 3 cached and 11 out per call, by the server's rule


def test_cost_is_the_counts_times_the_price(server: FakeLLMServer) -> None:
    model = openai_model(server)
    result = evaluate_sync(three_turns(), model, retry=FAST_RETRY, ledger=ledger_for(model))
    usage = result.aggregated_metrics.judge_usage
    assert usage is not None
    input_tokens, output_tokens, cached, _ = reported(server)
    expected = ((input_tokens - cached) * 2.0 + cached * 0.5 + output_tokens * 8.0) / 1_000_000
    assert usage.cost_usd == pytest.approx(expected, rel=1e-12)
    assert usage.price_source == "test"


def test_cached_input_price_defaults_to_the_input_price(server: FakeLLMServer) -> None:
    model = openai_model(server)
    table = read_price_table('{"judge": {"input": 3, "output": 5}}')
    result = evaluate_sync(
        three_turns(), model, retry=FAST_RETRY, ledger=JudgeLedger.for_model(model, EvaluationConfig(), prices=table)
    )
    input_tokens, output_tokens, _, _ = reported(server)
    assert result.aggregated_metrics.judge_usage.cost_usd == pytest.approx(
        (input_tokens * 3 + output_tokens * 5) / 1e6, rel=1e-12
    )


def test_a_reply_without_usage_is_counted_as_such(server: FakeLLMServer) -> None:
    server.enqueue(Reply(omit_usage=True))
    model = openai_model(server)
    result = evaluate_sync(three_turns(), model, retry=FAST_RETRY, ledger=ledger_for(model))
    usage = result.aggregated_metrics.judge_usage
    input_tokens, output_tokens, _, answered = reported(server)
    assert answered == 2 and server.call_count == 3
    assert (usage.calls, usage.calls_without_usage) == (3, 1)
    assert (usage.input_tokens, usage.output_tokens) == (input_tokens, output_tokens)


def test_a_model_without_a_price_has_no_cost(server: FakeLLMServer) -> None:
    model = openai_model(server, model="unpriced")
    result = evaluate_sync(three_turns(), model, retry=FAST_RETRY, ledger=ledger_for(model))
    usage = result.aggregated_metrics.judge_usage
    assert usage.model == "unpriced" and usage.cost_usd is None and usage.price_source is None
    assert usage.input_tokens == reported(server)[0]


@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
def test_structured_output_replies_are_counted(server: FakeLLMServer, method: str) -> None:
    config = EvaluationConfig(use_structured_output=True, structured_output_method=method)
    model = openai_model(server)
    result = evaluate_sync(three_turns(), model, config, retry=FAST_RETRY, ledger=ledger_for(model, config))
    usage = result.aggregated_metrics.judge_usage
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.calls) == reported(server)


def test_an_unparseable_reply_is_billed_and_counted(server: FakeLLMServer) -> None:
    server.enqueue(Reply(content="no verdict here", usage=openai_usage(1000, 500)))
    model = openai_model(server)
    telemetry = JudgeTelemetry()
    result = evaluate_sync(three_turns()[:1], model, retry=FAST_RETRY, telemetry=telemetry, ledger=ledger_for(model))
    usage = result.aggregated_metrics.judge_usage
    assert telemetry.parse_failures == 1
    assert usage.calls == 2 and usage.input_tokens == reported(server)[0] and usage.input_tokens >= 1000


def test_failed_calls_are_not_counted(server: FakeLLMServer) -> None:
    server.enqueue(Reply(status=500))
    model = openai_model(server)
    result = evaluate_sync(three_turns()[:1], model, retry=FAST_RETRY, ledger=ledger_for(model))
    assert server.call_count == 2 and result.aggregated_metrics.judge_usage.calls == 1


def test_the_offline_judge_costs_nothing_and_reports_no_tokens() -> None:
    result = evaluate_sync(
        three_turns(), ReferenceJudge(), ledger=JudgeLedger.for_model(ReferenceJudge(), EvaluationConfig())
    )
    usage = result.aggregated_metrics.judge_usage
    assert usage.model == "fair-forge-reference"
    assert usage.calls == usage.calls_without_usage == 3
    assert usage.cost_usd == 0.0 and "offline" in usage.price_source


def test_model_and_prompt_hash_are_pinned(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    model = openai_model(server)
    usage = evaluate_sync(
        three_turns(), model, retry=FAST_RETRY, ledger=ledger_for(model)
    ).aggregated_metrics.judge_usage
    assert usage.model == "judge"
    assert len(usage.prompt_hash) == 64 and usage.prompt_hash == prompt_hash()
    monkeypatch.setattr(identity_module, "RUBRIC_VERSION", "test-next")
    assert prompt_hash() != usage.prompt_hash


def test_without_a_ledger_the_result_has_no_usage(server: FakeLLMServer) -> None:
    result = evaluate_sync(three_turns(), openai_model(server), retry=FAST_RETRY)
    assert result.aggregated_metrics.judge_usage is None


# --------------------------------------------------------------------------- the cost cap (see also test_cost_cap.py)


def test_a_cap_without_a_price_is_refused_naming_it(server: FakeLLMServer) -> None:
    model = openai_model(server, model="unpriced")
    with pytest.raises(MissingPrice, match=r"config\.max_cost_usd"):
        evaluate_sync(three_turns(), model, EvaluationConfig(max_cost_usd=1.0))
    with pytest.raises(MissingPrice, match="--max-cost-usd"):
        ledger_for(model, max_cost_usd=1.0, cap_label="--max-cost-usd")
    assert server.call_count == 0


# --------------------------------------------------------------------------- the price table


@pytest.mark.parametrize(
    "value",
    [
        "{not json",
        '["judge"]',
        '{"judge": {"input": 1}}',
        '{"judge": {"input": -1, "output": 1}}',
        '{"judge": {"input": "1", "output": 1}}',
        '{"judge": {"input": 1, "output": 1, "typo": 2}}',
        "/no/such/prices.json",
    ],
)
def test_a_malformed_price_table_is_a_settings_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("FAIR_FORGE_JUDGE_PRICES", value)
    with pytest.raises(SettingsError, match="FAIR_FORGE_JUDGE_PRICES"):
        JudgeEnvironment.read()
    with pytest.raises(SettingsError, match="FAIR_FORGE_JUDGE_PRICES"):
        Settings.from_env()


def test_the_price_table_may_be_a_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(PRICES))
    monkeypatch.setenv("FAIR_FORGE_JUDGE_PRICES", str(path))
    table = Settings.from_env().price_table()
    assert table is not None and table.models["judge"].cached_input == 0.5
    assert table.source == f"FAIR_FORGE_JUDGE_PRICES ({path})"


# --------------------------------------------------------------------------- the service


def run_body(server: FakeLLMServer, config: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "connector": {
            "class_path": "langchain_openai.chat_models.ChatOpenAI",
            "params": {"model": "judge", "base_url": server.base_url, "api_key": API_KEY},
        },
        "datasets": [d.model_dump(mode="json", exclude_none=True) for d in three_turns()],
        "config": config or {},
    }


def test_the_service_reports_logs_and_measures_the_usage(server: FakeLLMServer) -> None:
    # A fresh interpreter: its log lines and EMF metrics are everything it printed (see run_in_subprocess).
    (response,), out = run_in_subprocess([run_body(server)], env={"FAIR_FORGE_JUDGE_PRICES": json.dumps(PRICES)})
    assert response["status"] == 200, response["body"]
    usage = response["body"]["aggregated_metrics"]["judge_usage"]
    input_tokens, output_tokens, cached, _ = reported(server)
    assert (usage["input_tokens"], usage["output_tokens"], usage["cached_input_tokens"]) == (
        input_tokens,
        output_tokens,
        cached,
    )
    assert usage["price_source"] == "FAIR_FORGE_JUDGE_PRICES"
    (finished,) = [json.loads(line) for line in out.splitlines() if '"evaluation finished"' in line]
    assert (finished["judge_input_tokens"], finished["judge_output_tokens"]) == (input_tokens, output_tokens)
    assert finished["judge_cost_usd"] == pytest.approx(usage["cost_usd"])
    metrics = [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]
    values = {name: doc[name] for doc in metrics for name in ("JudgeInputTokens", "JudgeOutputTokens") if name in doc}
    assert values == {"JudgeInputTokens": [input_tokens], "JudgeOutputTokens": [output_tokens]}
    assert API_KEY not in out and API_KEY not in response["raw"]


def test_the_service_refuses_a_cap_without_a_price(server: FakeLLMServer) -> None:
    response = call_handler(run_body(server, {"max_cost_usd": 0.01}))
    assert response.status == 400
    assert "config.max_cost_usd" in response.body["error"] and "FAIR_FORGE_JUDGE_PRICES" in response.body["error"]
    assert server.call_count == 0


def test_the_service_applies_config_max_cost_usd(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_JUDGE_PRICES", '{"judge": {"input": 1000000, "output": 0}}')
    response = call_handler(run_body(server, {"max_cost_usd": 1, "max_concurrency": 1}))
    # At a dollar a token, no call's worst case fits under 1 USD: none starts, and the result says
    # it measured nothing (a 200, not a gateway error).
    assert response.status == 200, response.body
    assert server.call_count == 0
    errors = [i["error"] for m in response.body["per_conversation_metrics"] for i in m["interactions"]]
    assert errors == ["the cost cap (config.max_cost_usd 1) was reached"] * 3
    readiness = response.body["aggregated_metrics"]["readiness"]
    assert readiness["status"] == "insufficient_evidence" and "(the cost cap was reached)" in readiness["summary"]
