"""Fault injection: a judge provider that fails, hangs and talks nonsense. No turn is lost.

The provider is the fake OpenAI-compatible server on 127.0.0.1, called through the
real `ChatOpenAI` and the real handler: 30 % of first attempts answer 500, some
requests hang past the client timeout, some replies are garbage, and the turns
about "poison" fail every time. Every turn must come back either scored (after
retries) or unscored with its cause, and the aggregates must count only the
scored conversations.
"""

from __future__ import annotations

import pytest

from fair_forge_testing.builders import conversation, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply, judge_responder
from fair_forge_testing.handler_client import call_handler

CONVERSATIONS = 24
POISONED = {3, 11, 17}


def request_body(base_url: str) -> dict:
    datasets = []
    for c in range(CONVERSATIONS):
        subject = "poison" if c in POISONED else "apples"
        datasets.append(
            conversation(
                f"conv-{c}",
                [
                    turn(f"c{c}-t0", f"How many {subject} are in basket {c}?", f"There are {c + 2}.", str(c + 2)),
                    turn(
                        f"c{c}-t1",
                        f"And in basket {c + 100}?",
                        "I am not sure." if c % 5 == 0 else f"{c + 7}",
                        str(c + 7),
                    ),
                ],
            )
        )
    return {
        "connector": {
            "class_path": "langchain_openai.ChatOpenAI",
            "params": {"model": "judge", "base_url": base_url, "api_key": "sk-local-fault-test"},
        },
        "datasets": datasets,
        "config": {"k": 3, "max_concurrency": 8},
    }


def poisoned_responder(request: dict) -> Reply | dict:
    if "poison" in request["messages"][-1]["content"]:
        return Reply(status=500, error_message="the judge model crashed")
    return judge_responder(request)


@pytest.fixture
def faulty_provider(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FAIR_FORGE_JUDGE_MAX_ATTEMPTS", "4")
    monkeypatch.setenv("FAIR_FORGE_JUDGE_CALL_TIMEOUT_S", "0.5")
    with FakeLLMServer(
        responder=poisoned_responder,
        fail_first_attempt_fraction=0.3,
        timeout_fraction=0.08,
        hang_s=2.0,
        garbage_fraction=0.08,
        seed=20261122,
    ) as server:
        yield server


def test_no_turn_is_lost_under_faults(faulty_provider: FakeLLMServer) -> None:
    response = call_handler(request_body(faulty_provider.base_url))
    assert response.status == 200, response.body
    body = response.body
    # The faults really happened.
    assert faulty_provider.status_counts[500] >= 10
    assert faulty_provider.call_count > 2 * CONVERSATIONS

    conversations = body["per_conversation_metrics"]
    assert len(conversations) == CONVERSATIONS
    for metrics in conversations:
        for interaction in metrics["interactions"]:
            scored = interaction["answer_score"] is not None
            assert scored != (interaction["error"] is not None), interaction  # scored xor a cause
        poisoned = int(metrics["session_id"].split("-")[1]) in POISONED
        assert metrics["is_scored"] is not poisoned
        if poisoned:
            error = metrics["interactions"][0]["error"]
            assert "HTTP 500" in error and "4 attempts" in error

    agg = body["aggregated_metrics"]
    scored = [m for m in conversations if m["is_scored"]]
    assert agg["unscored_conversations"] == len(POISONED)
    assert agg["total_conversations"] == len(scored) == CONVERSATIONS - len(POISONED)
    assert agg["fully_correct_conversations"] == sum(1 for m in scored if m["is_fully_correct"])
    assert any(f"{len(POISONED)} conversation(s) unscored" in w and "HTTP 500" in w for w in body["warnings"])


def test_scores_under_faults_equal_scores_without_faults(faulty_provider: FakeLLMServer) -> None:
    """Retries change nothing but the time taken: each scored turn has its fault-free score."""
    faulty = call_handler(request_body(faulty_provider.base_url)).body
    with FakeLLMServer(responder=poisoned_responder) as clean_server:
        clean = call_handler(request_body(clean_server.base_url)).body
    for with_faults, without in zip(faulty["per_conversation_metrics"], clean["per_conversation_metrics"], strict=True):
        assert with_faults["correctness_scores"] == without["correctness_scores"]
    assert faulty["aggregated_metrics"]["pass_at_k"] == clean["aggregated_metrics"]["pass_at_k"]
