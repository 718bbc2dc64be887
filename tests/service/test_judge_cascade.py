"""`config.judge_cascade`: the offline judge settles the turns it is sure of, the real `ChatOpenAI`
(against the fake OpenAI-compatible server) judges exactly the rest.

What the server received is read from its recorded requests (the turn's answer in the judge
prompt), never from the cascade's own counts.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.judges.cascade import FAIL_AT, PASS_AT, is_decisive
from fair_forge_core.judges.llm import RetryPolicy
from fair_forge_core.judges.prompt import parse_judge_request
from fair_forge_core.judges.usage import JudgeLedger
from fair_forge_core.schemas import EvaluationConfig, EvaluationResult, InteractionResult
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, last_user_text
from fair_forge_testing.handler_client import call_handler

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05, call_timeout_s=5.0)
API_KEY = "sk-cascade-secret-0123456789abcdef"

DECISIVE = {  # answer -> the offline judge's rule: exact matches and a wrong number
    "Paris": "normalised match (1.0)",
    "Canberra": "normalised match (1.0)",
    "It is 12.": "wrong number (0.15)",
}
UNDECIDED = {  # answer -> why the offline judge is not sure
    "It pumps blood around the body.": "a paraphrase: partial coverage (0.45)",
    "The package is still in transit.": "no yes/no: abstains",
    "Maybe sunny and warm.": "a hedge: capped at 0.6",
}


def mixed_turns() -> list[Any]:
    return datasets(
        conversation(
            "a",
            [
                turn("q1", "What is the capital of France?", "Paris", "Paris"),
                turn("q2", "What does the heart do?", "It pumps blood around the body.", "To circulate blood"),
            ],
        ),
        conversation(
            "b",
            [
                turn("q3", "What is 10 * 2?", "It is 12.", "20"),
                turn("q4", "Did the package arrive?", "The package is still in transit.", "Yes"),
            ],
        ),
        conversation(
            "c",
            [
                turn("q5", "What is the capital of Australia?", "Canberra", "Canberra"),
                turn("q6", "How is the weather?", "Maybe sunny and warm.", "Sunny and warm"),
            ],
        ),
    )


@pytest.fixture
def server():
    with FakeLLMServer() as running:
        yield running


def openai_model(server: FakeLLMServer) -> ChatOpenAI:
    return ChatOpenAI(model="judge", base_url=server.base_url, api_key=API_KEY, max_retries=0)


def answers_received(server: FakeLLMServer) -> list[str]:
    """The agent answers of the judge prompts the server received."""
    answers = []
    for recorded in server.requests:
        judged = parse_judge_request(last_user_text(recorded.body or {}))
        assert judged is not None
        answers.append(judged.answer)
    return answers


def interactions(result: EvaluationResult) -> dict[str, InteractionResult]:
    return {i.qa_id: i for m in result.per_conversation_metrics for i in m.interactions or []}


def run(model: Any, config: EvaluationConfig) -> EvaluationResult:
    return evaluate_sync(mixed_turns(), model, config, retry=FAST_RETRY, ledger=JudgeLedger.for_model(model, config))


def test_the_rule_is_decisive_scores_only() -> None:
    assert (PASS_AT, FAIL_AT) == (0.9, 0.2)
    assert is_decisive(1.0) and is_decisive(0.9) and is_decisive(0.2) and is_decisive(0.0)
    assert not is_decisive(0.89) and not is_decisive(0.21) and not is_decisive(0.6)


def test_only_the_undecided_turns_reach_the_llm(server: FakeLLMServer) -> None:
    result = run(openai_model(server), EvaluationConfig(judge_cascade=True))
    assert sorted(answers_received(server)) == sorted(UNDECIDED)
    usage = result.aggregated_metrics.judge_usage
    assert usage is not None
    assert (usage.cascade_settled_offline, usage.cascade_sent_to_llm) == (len(DECISIVE), len(UNDECIDED))
    assert usage.calls == server.call_count == len(UNDECIDED)  # the ledger counts the connector's calls only
    by_turn = interactions(result)
    assert {q: by_turn[q].judged_by for q in by_turn} == {
        "q1": "offline",
        "q2": "llm",
        "q3": "offline",
        "q4": "llm",
        "q5": "offline",
        "q6": "llm",
    }


def test_settled_turns_carry_the_offline_judges_verdict(server: FakeLLMServer) -> None:
    cascade = interactions(run(openai_model(server), EvaluationConfig(judge_cascade=True)))
    offline = interactions(run(ReferenceJudge(), EvaluationConfig()))
    for qa_id in ("q1", "q3", "q5"):
        assert (cascade[qa_id].answer_score, cascade[qa_id].judge_reasoning) == (
            offline[qa_id].answer_score,
            offline[qa_id].judge_reasoning,
        )
    assert [cascade[q].answer_score for q in ("q1", "q3", "q5")] == [1.0, 0.15, 1.0]
    # the LLM's verdicts (the server's responder: 1.0 iff the answer contains the ground truth)
    assert [cascade[q].answer_score for q in ("q2", "q4", "q6")] == [0.0, 0.0, 1.0]
    assert cascade["q4"].error is None  # the offline judge abstained; the LLM scored it


def test_without_the_cascade_every_turn_reaches_the_llm(server: FakeLLMServer) -> None:
    result = run(openai_model(server), EvaluationConfig())
    assert sorted(answers_received(server)) == sorted([*DECISIVE, *UNDECIDED])
    usage = result.aggregated_metrics.judge_usage
    assert usage is not None
    assert (usage.cascade_settled_offline, usage.cascade_sent_to_llm) == (None, None)
    assert {i.judged_by for i in interactions(result).values()} == {None}


def test_the_cascade_is_a_no_op_for_the_offline_judge() -> None:
    on = run(ReferenceJudge(), EvaluationConfig(judge_cascade=True))
    off = run(ReferenceJudge(), EvaluationConfig())
    usage = on.aggregated_metrics.judge_usage
    assert usage is not None and (usage.cascade_settled_offline, usage.cascade_sent_to_llm) == (None, None)
    assert usage.calls == 6 - 1  # one call per turn it scored: the abstention raises before a reply is counted
    # Identical but for the setting itself, which the provenance records.
    assert on.provenance is not None and off.provenance is not None
    assert (on.provenance.judge_cascade, off.provenance.judge_cascade) == (True, False)
    assert on.model_dump(exclude={"provenance"}) == off.model_dump(exclude={"provenance"})


def test_the_service_takes_config_judge_cascade(server: FakeLLMServer) -> None:
    body = {
        "connector": {
            "class_path": "langchain_openai.chat_models.ChatOpenAI",
            "params": {"model": "judge", "base_url": server.base_url, "api_key": API_KEY},
        },
        "datasets": [d.model_dump(mode="json", exclude_none=True) for d in mixed_turns()],
        "config": {"judge_cascade": True},
    }
    response = call_handler(body)
    assert response.status == 200, response.body
    usage = response.body["aggregated_metrics"]["judge_usage"]
    assert (usage["cascade_settled_offline"], usage["cascade_sent_to_llm"]) == (3, 3)
    assert sorted(answers_received(server)) == sorted(UNDECIDED)
    judged_by = [i["judged_by"] for m in response.body["per_conversation_metrics"] for i in m["interactions"]]
    assert judged_by == ["offline", "llm", "offline", "llm", "offline", "llm"]
