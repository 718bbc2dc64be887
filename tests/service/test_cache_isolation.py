"""The shared judge cache: no caller can plant a verdict another caller reads, nor learn what another
caller judged (issue #23, security items 1 and 2).

Through real API Gateway proxy events (`apiKeyId` as API Gateway sets it for a method that needs an
API key), the real `ChatOpenAI`, and the fake OpenAI-compatible server as the provider both callers
reach (the operator's `OPENAI_BASE_URL`), with a directory as the service's cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.judges.prompt import JudgeRequest, build_judge_messages
from fair_forge_testing.builders import conversation, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer
from fair_forge_testing.handler_client import call_handler

OPERATOR_KEY = "sk-operator-secret-0123456789abcdef"
ATTACKER_KEY = "sk-attacker-own-key-0123456789abcd"
VICTIM_KEY = "sk-victim-own-key-0123456789abcdef"
QUESTION = "What is the capital of France?"


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    with FakeLLMServer() as server:
        monkeypatch.setenv("FAIR_FORGE_JUDGE_CACHE", str(tmp_path / "cache"))
        monkeypatch.setenv("LLM_API_KEY", OPERATOR_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # where the operator's OpenAI judge is served
        yield server


def body(params: dict[str, Any], answer: str = "Berlin.", truth: str = "Paris") -> dict[str, Any]:
    return {
        "connector": {"class_path": "langchain_openai.ChatOpenAI", "params": {"model": "judge", **params}},
        "datasets": [conversation("capital", [turn("q1", QUESTION, answer, truth)])],
        "config": {"judge_cache": True},
    }


def score(response: Any) -> float | None:
    return response.body["per_conversation_metrics"][0]["correctness_scores"][0]


def usage(response: Any) -> dict[str, Any]:
    return response.body["aggregated_metrics"]["judge_usage"]


def planted_messages() -> list[dict[str, str]]:
    """The judge request of a right answer, which `extra_body` sends in place of the turn's own."""
    messages = build_judge_messages(JudgeRequest(QUESTION, "Paris.", "Paris"), structured=False)
    return [{"role": {"system": "system", "human": "user"}[m.type], "content": str(m.content)} for m in messages]


def test_a_caller_cannot_plant_a_verdict_that_another_caller_reads(provider: FakeLLMServer) -> None:
    # The attack: the attacker's own key, the victim's model and the server key's max_tokens, and
    # extra_body replacing the messages the provider sees with a right answer's. The judge says 1.0,
    # which, stored under the victim's turn, would be the victim's verdict for "Berlin." against "Paris".
    attack = body({"api_key": ATTACKER_KEY, "max_tokens": 1024, "extra_body": {"messages": planted_messages()}})
    attacked = call_handler(attack, api_key_id="attacker-id")
    assert attacked.status == 200, attacked.body
    assert score(attacked) == 1.0  # the provider saw the planted answer: the attacker's own result says so
    assert usage(attacked)["cache_enabled"] is False
    assert any("connector.params.extra_body" in w for w in attacked.body["warnings"])

    victim = call_handler(body({}), api_key_id="victim-id")  # the operator's key, max_tokens 1024 by the server
    assert victim.status == 200, victim.body
    assert score(victim) == 0.0  # judged by the provider, not read from the attacker's entry
    assert (usage(victim)["cache_hits"], usage(victim)["cache_misses"]) == (0, 1)
    assert provider.call_count == 2


def test_an_entry_is_read_only_in_the_scope_that_wrote_it(provider: FakeLLMServer, tmp_path: Path) -> None:
    # Without extra_body the attacker's request may use the cache, but only in its own scope.
    writer = call_handler(body({"api_key": ATTACKER_KEY, "max_tokens": 1024}), api_key_id="attacker-id")
    assert (usage(writer)["cache_hits"], usage(writer)["cache_misses"]) == (0, 1)
    again = call_handler(body({"api_key": ATTACKER_KEY, "max_tokens": 1024}), api_key_id="attacker-id")
    assert usage(again)["cache_hits"] == 1  # the cache works within a scope
    for api_key_id, params in (("victim-id", {}), ("third-id", {"api_key": VICTIM_KEY, "max_tokens": 1024})):
        other = call_handler(body(params), api_key_id=api_key_id)
        assert usage(other)["cache_hits"] == 0, (api_key_id, params)
    assert provider.call_count == 3
    stored = sorted((tmp_path / "cache").rglob("*.json"))
    assert len(stored) == 3  # one entry a scope
    assert all(key not in p.read_text() for p in stored for key in (ATTACKER_KEY, VICTIM_KEY, OPERATOR_KEY))


def test_hits_do_not_tell_a_caller_what_another_judged(provider: FakeLLMServer) -> None:
    # The oracle: the first caller judged one ground truth; a second caller tries five guesses and
    # reads judge_usage.cache_hits. Scoped entries give it nothing.
    first = call_handler(body({}, truth="Paris"), api_key_id="first-id")
    assert first.status == 200
    guesses = ["Lyon", "Paris", "Marseille", "Nice", "Lille"]
    hits = [usage(call_handler(body({}, truth=guess), api_key_id="second-id"))["cache_hits"] for guess in guesses]
    assert hits == [0, 0, 0, 0, 0]
    assert usage(call_handler(body({}, truth="Paris"), api_key_id="first-id"))["cache_hits"] == 1


def test_without_an_api_key_the_caller_key_scopes_the_cache(provider: FakeLLMServer) -> None:
    # The local API has no API keys: a caller's own provider key is its scope (hashed, never stored).
    mine = call_handler(body({"api_key": VICTIM_KEY}))
    theirs = call_handler(body({"api_key": ATTACKER_KEY}))
    mine_again = call_handler(body({"api_key": VICTIM_KEY}))
    assert [usage(r)["cache_hits"] for r in (mine, theirs, mine_again)] == [0, 0, 1]
    assert VICTIM_KEY not in json.dumps(mine.body) and ATTACKER_KEY not in json.dumps(theirs.body)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"default_headers": {"X-Route": "b"}}, "connector.params.default_headers"),
        ({"default_query": {"v": "2"}}, "connector.params.default_query"),
        (
            {"model_kwargs": {"response_format": {"type": "json_object"}}},
            "connector.params.model_kwargs.response_format",
        ),
    ],
)
def test_parameters_the_key_cannot_see_keep_a_request_out_of_the_cache(
    provider: FakeLLMServer, params: dict[str, Any], field: str
) -> None:
    response = call_handler(body({"api_key": ATTACKER_KEY, **params}), api_key_id="someone")
    assert response.status == 200, response.body
    assert usage(response)["cache_enabled"] is False
    assert any(field in warning for warning in response.body["warnings"])
