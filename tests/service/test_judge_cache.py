"""The judge cache (a directory store) through the real `ChatOpenAI` against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import identity as identity_module
from fair_forge_core.judges.cache import DirectoryCache, decode_entry
from fair_forge_core.judges.llm import RetryPolicy
from fair_forge_core.judges.prices import read_price_table
from fair_forge_core.judges.usage import JudgeLedger
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply, openai_usage
from fair_forge_testing.handler_client import run_in_subprocess

FAST_RETRY = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.05, call_timeout_s=5.0)
SECRET = "sk-cache-secret-0123456789abcdefXYZ"


@pytest.fixture
def server():
    with FakeLLMServer() as running:
        yield running


def openai_model(server: FakeLLMServer, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(**{"model": "judge", "base_url": server.base_url, "api_key": SECRET, "max_retries": 0, **kwargs})


def three_turns():
    return datasets(
        conversation("a", [turn("q1", "What is 5 + 3?", "The result is 8.", "8")]),
        conversation("b", [turn("q2", "What is 10 * 2?", "It is 12.", "20")]),
        conversation("c", [turn("q3", "Capital of France?", "Paris, of course.", "Paris")]),
    )


def run(model: ChatOpenAI, cache_dir: Path, config: EvaluationConfig | None = None, data=None):
    config = config or EvaluationConfig()
    ledger = JudgeLedger.for_model(model, config, cache=DirectoryCache(cache_dir))
    return evaluate_sync(data or three_turns(), model, config, retry=FAST_RETRY, ledger=ledger)


def entries(cache_dir: Path) -> list[Path]:
    return sorted(p for p in cache_dir.rglob("*") if p.is_file())


def test_an_identical_rerun_makes_no_judge_call_and_returns_the_same_results(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    first = run(openai_model(server), tmp_path)
    assert server.call_count == 3
    assert (first.aggregated_metrics.judge_usage.cache_hits, first.aggregated_metrics.judge_usage.cache_misses) == (
        0,
        3,
    )
    second = run(openai_model(server), tmp_path)
    assert server.call_count == 3  # the counter did not move
    assert second.per_conversation_metrics == first.per_conversation_metrics
    usage = second.aggregated_metrics.judge_usage
    assert (usage.cache_hits, usage.cache_misses, usage.calls, usage.input_tokens) == (3, 0, 0, 0)
    assert [p.suffix for p in entries(tmp_path)] == [".json"] * 3  # no temporary file left behind


@pytest.mark.parametrize(
    ("change", "kwargs"),
    [
        ("temperature", {"temperature": 0.7}),
        ("top_p", {"top_p": 0.5}),
        ("max_tokens", {"max_tokens": 321}),
        ("model", {"model": "judge-2"}),
    ],
)
def test_a_change_of_model_or_sampling_misses(
    server: FakeLLMServer, tmp_path: Path, change: str, kwargs: dict[str, Any]
) -> None:
    run(openai_model(server), tmp_path)
    result = run(openai_model(server, **kwargs), tmp_path)
    assert server.call_count == 6, change
    assert result.aggregated_metrics.judge_usage.cache_misses == 3


def test_a_change_of_output_mode_misses(server: FakeLLMServer, tmp_path: Path) -> None:
    run(openai_model(server), tmp_path)
    run(openai_model(server), tmp_path, EvaluationConfig(use_structured_output=True))
    assert server.call_count == 6


def test_a_change_of_the_rubric_version_misses(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run(openai_model(server), tmp_path)
    monkeypatch.setattr(identity_module, "RUBRIC_VERSION", "next")
    second = run(openai_model(server), tmp_path)
    assert server.call_count == 6
    assert second.aggregated_metrics.judge_usage.prompt_hash != first.aggregated_metrics.judge_usage.prompt_hash


def test_the_api_key_is_not_part_of_the_key(server: FakeLLMServer, tmp_path: Path) -> None:
    run(openai_model(server), tmp_path)
    run(openai_model(server, api_key="sk-another-key"), tmp_path)
    assert server.call_count == 3


def test_a_failed_turn_is_never_cached(tmp_path: Path) -> None:
    def responder(request: dict[str, Any]) -> Any:
        if "5 + 3" in request["messages"][-1]["content"]:
            return Reply(status=500)
        return {"score": 1.0, "reasoning": "right"}

    with FakeLLMServer(responder=responder) as server:
        first = run(openai_model(server), tmp_path)
        assert first.per_conversation_metrics[0].correctness_scores == [None]
        assert len(entries(tmp_path)) == 2
        calls = server.call_count
        run(openai_model(server), tmp_path)
        assert server.call_count == calls + FAST_RETRY.max_attempts  # only the failed turn, judged again


def test_a_turn_stopped_by_the_cost_cap_is_never_cached(tmp_path: Path) -> None:
    with FakeLLMServer(usage=lambda request: openai_usage(1000, 0)) as server:
        model = openai_model(server)
        evaluate_sync(three_turns()[:1], model, retry=FAST_RETRY)  # one call's worst case: its bytes, at 1 USD/M
        body = server.requests[0].body
        worst = (sum(len(m["content"].encode()) for m in body["messages"]) + 8 * (len(body["messages"]) + 1)) / 1e6
        # Room for one worst case beside one real call (0.001): two calls start, the third does not.
        config = EvaluationConfig(max_concurrency=1, max_cost_usd=0.001 + 1.05 * worst)
        table = read_price_table('{"judge": {"input": 1, "output": 0}}')
        ledger = JudgeLedger.for_model(model, config, prices=table, cache=DirectoryCache(tmp_path))
        result = evaluate_sync(three_turns(), model, config, retry=FAST_RETRY, ledger=ledger)
    assert result.aggregated_metrics.judge_usage.turns_stopped_by_cap == 1
    assert len(entries(tmp_path)) == 2


def test_a_corrupt_entry_is_a_logged_miss_and_is_rewritten(
    server: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = run(openai_model(server), tmp_path)
    for path in entries(tmp_path):
        path.write_bytes(b'{"format": 1, "score": 7')  # truncated
    with caplog.at_level(logging.WARNING, logger="fair_forge_core.judges.usage"):
        second = run(openai_model(server), tmp_path)
    assert server.call_count == 6
    assert second.per_conversation_metrics == first.per_conversation_metrics
    assert sum("not a verdict" in r.getMessage() for r in caplog.records) == 3
    assert all(decode_entry(p.read_bytes()) is not None for p in entries(tmp_path))


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe",
        b"[]",
        b'{"format": 2, "score": 1.0, "reasoning": ""}',
        b'{"format": 1, "score": 1.5, "reasoning": ""}',
        b'{"format": 1, "score": "1", "reasoning": ""}',
        b'{"format": 1, "score": 1.0, "reasoning": "", "extra": 1}',
    ],
)
def test_entries_that_are_not_verdicts_read_as_misses(content: bytes) -> None:
    assert decode_entry(content) is None


def test_an_unwritable_cache_never_fails_the_evaluation(server: FakeLLMServer, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    result = run(openai_model(server), blocker / "cache")
    assert result.aggregated_metrics.total_conversations == 3


def test_keys_never_name_a_path(tmp_path: Path) -> None:
    store = DirectoryCache(tmp_path)
    for key in ("../../etc/passwd", "A" * 64, "0" * 63):
        with pytest.raises(ValueError):
            store.get(key)


# --------------------------------------------------------------------------- the service


def run_body(server: FakeLLMServer, **config: Any) -> dict[str, Any]:
    return {
        "connector": {
            "class_path": "langchain_openai.chat_models.ChatOpenAI",
            "params": {"model": "judge", "base_url": server.base_url, "api_key": SECRET},
        },
        "datasets": [d.model_dump(mode="json", exclude_none=True) for d in three_turns()],
        "config": config,
    }


def test_the_service_caches_only_on_request_and_never_stores_a_secret(server: FakeLLMServer, tmp_path: Path) -> None:
    env = {"FAIR_FORGE_JUDGE_CACHE": str(tmp_path)}
    (off,), _ = run_in_subprocess([run_body(server)], env=env)
    assert off["status"] == 200 and server.call_count == 3 and entries(tmp_path) == []
    assert off["body"]["aggregated_metrics"]["judge_usage"]["cache_enabled"] is False
    responses, logs = run_in_subprocess([run_body(server, judge_cache=True)] * 2, env=env)
    assert [r["status"] for r in responses] == [200, 200]
    assert server.call_count == 6  # the first opted-in run judged; the second made no call
    usages = [r["body"]["aggregated_metrics"]["judge_usage"] for r in responses]
    assert [(u["cache_hits"], u["cache_misses"]) for u in usages] == [(0, 3), (3, 0)]
    assert responses[0]["body"]["per_conversation_metrics"] == responses[1]["body"]["per_conversation_metrics"]
    assert len(entries(tmp_path)) == 3
    for path in entries(tmp_path):
        assert SECRET not in path.read_text() and SECRET not in str(path)
        assert set(json.loads(path.read_text())) == {"format", "score", "reasoning"}
    assert SECRET not in logs and all(SECRET not in r["raw"] for r in responses)


def test_opting_in_without_a_cache_is_a_warning(server: FakeLLMServer) -> None:
    (response,), _ = run_in_subprocess([run_body(server, judge_cache=True)], env={"FAIR_FORGE_JUDGE_CACHE": ""})
    assert response["status"] == 200
    assert any("config.judge_cache is true" in w for w in response["body"]["warnings"])
