"""`fair-forge evaluate --max-cost-usd` and `--judge-cache`, with the real `ChatOpenAI` against the fake server."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.cli import main
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, openai_usage

KEY = "sk-cli-cost-secret-0123456789abcd"


@pytest.fixture
def server():
    # 1000 input and 100 output tokens a call.
    with FakeLLMServer(usage=lambda request: openai_usage(1000, 100)) as running:
        yield running


def request_file(
    tmp_path: Path, server: FakeLLMServer, model: str = "judge", max_tokens: int | None = None, **config: Any
) -> Path:
    params = {"model": model, "base_url": server.base_url, "api_key": KEY, "max_retries": 0}
    if max_tokens is not None:
        params["max_tokens"] = max_tokens
    body = {
        "connector": {"class_path": "langchain_openai.chat_models.ChatOpenAI", "params": params},
        "datasets": [
            d.model_dump(mode="json", exclude_none=True)
            for d in datasets(
                *(
                    conversation(f"s{i}", [turn(f"q{i}", f"What is {i} + {i}?", str(2 * i), str(2 * i))])
                    for i in range(5)
                )
            )
        ],
        "config": {"max_concurrency": 1, **config},
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body))
    return path


def evaluate(*args: str | Path) -> tuple[int, dict[str, Any] | None, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["evaluate", *map(str, args)], stdout, stderr)
    text = stdout.getvalue()
    return code, json.loads(text) if text.strip() else None, stderr.getvalue()


def test_a_cap_without_a_price_exits_2_naming_the_flag(server: FakeLLMServer, tmp_path: Path) -> None:
    code, result, stderr = evaluate(request_file(tmp_path, server), "--max-cost-usd", "0.01")
    assert code == 2 and result is None
    assert "--max-cost-usd" in stderr and "FAIR_FORGE_JUDGE_PRICES" in stderr
    assert server.call_count == 0


def test_the_cap_holds_and_a_capped_run_is_not_enough_evidence(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The observed case: --max-cost-usd 0.001 spent 0.00168. Now each call first reserves its worst
    # case: the bytes sent (plus 8 tokens a message and 8 for the reply) at the input price and
    # max_tokens at the output price.
    monkeypatch.setenv("FAIR_FORGE_JUDGE_PRICES", '{"judge": {"input": 0.2, "output": 1}}')
    request = request_file(tmp_path, server, max_tokens=100, max_concurrency=8)
    code, result, stderr = evaluate(request, "--max-cost-usd", "0.001")
    billed = [(r.usage["prompt_tokens"] * 0.2 + r.usage["completion_tokens"] * 1) / 1e6 for r in server.requests]
    worst = [
        ((sum(len(m["content"].encode()) for m in r.body["messages"]) + 8 * (len(r.body["messages"]) + 1)) * 0.2 + 100)
        / 1e6
        for r in server.requests
    ]
    assert sum(billed) <= 0.001 < sum(billed) + 2 * max(worst)
    stopped = [m["interactions"][0]["error"] for m in result["per_conversation_metrics"]].count(
        "the cost cap (--max-cost-usd 0.001) was reached"
    )
    assert stopped == 5 - server.call_count > 0
    usage = result["aggregated_metrics"]["judge_usage"]
    assert usage["cost_usd"] == pytest.approx(sum(billed)) and usage["turns_stopped_by_cap"] == stopped
    # What the cap left unscored is more than 10 % of the conversations: not enough evidence, exit 1.
    assert code == 1 and result["aggregated_metrics"]["readiness"]["status"] == "insufficient_evidence"
    assert "(the cost cap was reached) — not enough evidence" in stderr and "FAILED: not enough evidence" in stderr
    assert f"cost cap $0.001: {stopped} judgement(s) not started" in stderr
    assert f"{stopped} conversation(s) unscored and left out of n and c: {stopped} turn(s): the cost cap" in stderr
    code, _, _ = evaluate(request, "--max-cost-usd", "0.001", "--allow-unscored")
    assert code == 0
    assert KEY not in stderr


def test_the_flag_overrides_the_config_cap(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIR_FORGE_JUDGE_PRICES", '{"judge": {"input": 1, "output": 10}}')
    code, result, _ = evaluate(
        request_file(tmp_path, server, max_tokens=100, max_cost_usd=0.001), "--max-cost-usd", "1"
    )
    assert code == 0 and server.call_count == 5
    assert result["aggregated_metrics"]["judge_usage"]["max_cost_usd"] == 1


@pytest.mark.parametrize("value", ["0", "-1", "nan", "abc"])
def test_a_cap_must_be_a_positive_number(server: FakeLLMServer, tmp_path: Path, value: str) -> None:
    with pytest.raises(SystemExit) as exited:
        evaluate(request_file(tmp_path, server), f"--max-cost-usd={value}")
    assert exited.value.code == 2


def test_a_malformed_price_table_exits_2_naming_the_variable(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIR_FORGE_JUDGE_PRICES", '{"judge": {"input": "cheap"}}')
    code, _, stderr = evaluate(request_file(tmp_path, server))
    assert code == 2 and "FAIR_FORGE_JUDGE_PRICES" in stderr
    assert server.call_count == 0


def test_the_judge_cache_flag_makes_a_rerun_free(server: FakeLLMServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    code, first, _ = evaluate(request_file(tmp_path, server), "--judge-cache", cache)
    assert code == 0 and server.call_count == 5
    code, second, stderr = evaluate(request_file(tmp_path, server), "--judge-cache", cache)
    assert code == 0 and server.call_count == 5
    assert second["per_conversation_metrics"] == first["per_conversation_metrics"]
    usage = second["aggregated_metrics"]["judge_usage"]
    assert (usage["cache_hits"], usage["cache_misses"], usage["calls"]) == (5, 0, 0)
    assert "cache 5 hit(s), 0 miss(es)" in stderr
    assert all(KEY not in p.read_text() for p in cache.rglob("*.json"))


def test_the_environment_cache_needs_the_request_to_opt_in(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("FAIR_FORGE_JUDGE_CACHE", str(cache))
    evaluate(request_file(tmp_path, server))
    assert not cache.exists()
    evaluate(request_file(tmp_path, server, judge_cache=True))
    evaluate(request_file(tmp_path, server, judge_cache=True))
    assert server.call_count == 10 and len(list(cache.rglob("*.json"))) == 5


def test_an_s3_cache_is_refused_by_the_cli(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAIR_FORGE_JUDGE_CACHE", "s3://bucket/prefix")
    code, _, stderr = evaluate(request_file(tmp_path, server, judge_cache=True))
    assert code == 2 and "FAIR_FORGE_JUDGE_CACHE" in stderr
