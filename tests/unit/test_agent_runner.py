"""`fair_forge_core.agents.runner` against the stub agent (`fair_forge_testing/stub_agent.py`) over
real HTTP on 127.0.0.1: the recording is what the stub did, `evaluate` of it gives the figures the
stub's script implies, every fault is a failed attempt with its cause and the run goes on, and a
secret header never leaves the agent's side."""

from __future__ import annotations

import asyncio
import json
import logging
from math import comb
from typing import Any

import pytest

from fair_forge_core.agents import Agent, AgentSpec, RunRecording, TaskSpec, build_agent, run_attempts
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.schemas import Dataset, EvaluationConfig, RunRequest
from fair_forge_testing.stub_agent import StubAgentServer, StubScript, StubTask, dead_url

REFUND_ANSWER = "The refund of 40 EUR is issued."
REFUND_CALL = {"tool_name": "issue_refund", "parameters": {"amount": 40}}
OFFLINE = {"class_path": "fair_forge_core.judges.ReferenceJudge"}


def tasks() -> list[TaskSpec]:
    """Two tasks: a one-turn refund with a tool and an end state, a two-turn question."""
    refund = {
        "task_id": "refund",
        "turns": [
            {
                "query": "Refund order 7",
                "ground_truth_assistant": REFUND_ANSWER,
                "ground_truth_agentic": {"expected_tools": [REFUND_CALL]},
            }
        ],
        "expected_state": {"refunded": 40},
        "initial_state": {"order": 7, "paid": 40},
    }
    hours = {
        "task_id": "hours",
        "context": "A shop's help desk.",
        "turns": [
            {"query": "When do you open?", "ground_truth_assistant": "We open at 9."},
            {"query": "And close?", "ground_truth_assistant": "We close at 17.", "qa_id": "close"},
        ],
    }
    return [TaskSpec.model_validate(refund), TaskSpec.model_validate(hours)]


def script(**faults: dict[str, Any]) -> StubScript:
    return StubScript(
        tasks={
            "refund": StubTask(
                "refund",
                answers=(REFUND_ANSWER,),
                success_p=0.6,
                tools=((REFUND_CALL,),),
                end_state={"refunded": 40},
                wrong_state={"refunded": 0},
                usage={"input_tokens": 300, "output_tokens": 40, "cost_usd": 0.003},
                faults=faults.get("refund", {}),
            ),
            "hours": StubTask(
                "hours",
                answers=("We open at 9.", "We close at 17."),
                success_p=0.5,
                usage={"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.001},
                faults=faults.get("hours", {}),
            ),
        },
        seed=11,
        latency_s=0.01,
        hang_s=10.0,  # past the timeout: the client gives up at 2 s (the stub's thread sleeps on)
    )


def http_agent(url: str, **fields: Any) -> Agent:
    spec = {"kind": "http", "assistant_id": "stub-agent", "url": url, "timeout_s": 2.0, "retry_backoff_s": 0.01}
    return build_agent(AgentSpec.model_validate({**spec, **fields}), concurrency=4)


def run(agent: Agent, attempts: int = 6, **options: Any) -> RunRecording:
    async def go() -> RunRecording:
        try:
            return await run_attempts(tasks(), agent, attempts=attempts, concurrency=4, **options)
        finally:
            await agent.aclose()

    return asyncio.run(go())


def recorded(stub: StubScript, attempts: int = 6, **options: Any) -> RunRecording:
    with StubAgentServer(stub) as server:
        return run(http_agent(server.url), attempts, **options)


def test_the_recording_is_what_the_stub_did() -> None:
    stub = script()
    recording = recorded(stub)
    assert [(d.task_id, len(d.conversation)) for d in recording.datasets] == [("refund", 1)] * 6 + [("hours", 2)] * 6
    assert len({d.session_id for d in recording.datasets}) == 12  # one fresh session per attempt
    calls = {(c.task_id, c.session_id, c.turn): c for c in stub.calls}
    assert len(calls) == len(stub.calls) == 6 + 12  # every turn called once: no retry, nothing cached
    task_of = {t.task_id: t for t in tasks()}
    for attempt, dataset in enumerate(recording.datasets[:6] + recording.datasets[6:]):
        task, index = task_of[str(dataset.task_id)], attempt % 6
        right = stub.succeeds(task.task_id, index)
        assert dataset.assistant_id == "stub-agent" and dataset.agent_error is None and dataset.unscored is None
        assert dataset.context == task.context
        history: list[dict[str, str]] = []
        for turn, batch in enumerate(dataset.conversation):
            call = calls[(task.task_id, dataset.session_id, turn)]
            assert (call.attempt, call.outcome) == (index, "right" if right else "wrong")
            history.append({"role": "user", "content": task.turns[turn].query})
            assert call.messages == history  # the turns in order, with the history
            assert call.initial_state == task.initial_state
            script_task = stub.tasks[task.task_id]
            assert batch.assistant == (script_task.answers[turn] if right else script_task.wrong_answer)
            history.append({"role": "assistant", "content": batch.assistant})
            expected_calls = list(script_task.tools[turn]) if right and script_task.tools else []
            assert batch.agentic is not None
            assert [c.model_dump(exclude_defaults=True) for c in batch.agentic.tools_used] == expected_calls
            usage = batch.agent_usage
            assert usage is not None and usage.latency_s is not None and usage.latency_s >= stub.latency_s
            assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == tuple(script_task.usage.values())
            assert batch.qa_id == (task.turns[turn].qa_id or f"{task.task_id}-{turn}")
        expected_state = stub.tasks[task.task_id].end_state if right else stub.tasks[task.task_id].wrong_state
        assert dataset.final_state == expected_state
    summary = recording.summary
    assert (summary.attempts, summary.failed, summary.not_started) == (12, {}, 0)
    assert summary.agent_cost_usd == pytest.approx(6 * 0.003 + 12 * 0.001)
    # An ordinary request: what `evaluate` and `compare` read.
    RunRequest.model_validate_json(json.dumps(recording.request(OFFLINE)))


def per_task_figures(successes: dict[str, int], n: int, k: int) -> tuple[float, float]:
    """τ-bench's unbiased per-task pass@k and pass^k, averaged over tasks, from the counts."""
    at_k = [1 - comb(n - c, k) / comb(n, k) for c in successes.values()]
    pow_k = [comb(c, k) / comb(n, k) for c in successes.values()]
    return sum(at_k) / len(at_k), sum(pow_k) / len(pow_k)


def test_evaluate_of_the_recording_gives_the_scripts_figures() -> None:
    stub = script(refund={"2/0": "timeout"}, hours={"4/1": "http_500"})
    recording = recorded(stub, attempts=8)
    failed = {("refund", 2), ("hours", 4)}
    successes = {
        task: sum(stub.succeeds(task, i) and (task, i) not in failed for i in range(8)) for task in ("refund", "hours")
    }
    assert 0 < successes["refund"] < 8 and 0 < successes["hours"] < 8  # the seed gives both outcomes
    request = RunRequest.model_validate_json(json.dumps(recording.request(OFFLINE, {"k": 3})))
    result = evaluate_sync(request.datasets, ReferenceJudge(), request.config)
    aggregated = result.aggregated_metrics
    assert (aggregated.total_conversations, aggregated.unscored_conversations) == (16, 0)
    assert aggregated.fully_correct_conversations == sum(successes.values())
    assert aggregated.per_task is not None
    at_k, pow_k = per_task_figures(successes, n=8, k=3)
    assert aggregated.per_task.pass_at_k == pytest.approx(at_k)
    assert aggregated.per_task.pass_pow_k == pytest.approx(pow_k)
    by_session = {m.session_id: m for m in result.per_conversation_metrics}
    timed_out = next(d for d in recording.datasets if d.task_id == "refund" and d.agent_error is not None)
    agent_run = [c for c in by_session[timed_out.session_id].checks if c.name == "agent_run"]
    assert [(c.outcome, c.required, c.reason) for c in agent_run] == [
        ("failed", True, "agent_timeout: turn 0: no reply within 2 s")
    ]


FAULTS = {
    "0/0": "timeout",
    "1/0": "http_500",
    "2/0": "malformed",
    "3/0": "oversize",
    "4/0": "drop",
    "5/0": "http_503_once",
}
CAUSES = ["agent_timeout", "agent_error", "agent_malformed", "agent_malformed", "agent_error", None]


def test_each_fault_is_a_failed_attempt_with_its_cause_and_the_run_goes_on() -> None:
    stub = script(refund=FAULTS, hours={"1/1": "malformed"})
    recording = recorded(stub)
    refund, hours = recording.datasets[:6], recording.datasets[6:]
    assert [None if d.agent_error is None else d.agent_error.cause for d in refund] == CAUSES
    assert "over the size cap" in str(refund[3].agent_error)
    assert "3 tries" in str(refund[4].agent_error)  # a transport error, retried
    tries = {(c.attempt, c.outcome) for c in stub.calls if c.task_id == "refund"}
    assert sum(1 for c in stub.calls if (c.task_id, c.attempt) == ("refund", 1)) == 1  # a 500 is not retried
    assert (1, "http_500") in tries
    retried = [c.outcome for c in stub.calls if (c.task_id, c.attempt) == ("refund", 5)]
    assert retried == ["http_503_once", "right" if stub.succeeds("refund", 5) else "wrong"]
    for failed in refund[:5]:  # the failed turn: an empty answer, no end state
        assert [b.assistant for b in failed.conversation] == [""] and failed.final_state is None
    # A later turn's failure keeps the turns answered before it.
    assert [b.assistant != "" for b in hours[1].conversation] == [True, False]
    assert hours[1].agent_error is not None and hours[1].agent_error.detail == "turn 1: the reply is not JSON"
    assert all(d.agent_error is None for i, d in enumerate(hours) if i != 1)
    assert recording.summary.failed == {"agent_error": 2, "agent_malformed": 3, "agent_timeout": 1}
    assert recording.summary.attempts == 12


def test_a_dead_agent_fails_every_attempt_and_the_run_ends() -> None:
    recording = run(http_agent(dead_url(), retries=1), attempts=2)
    assert [d.agent_error.cause if d.agent_error else None for d in recording.datasets] == ["agent_error"] * 4
    assert recording.datasets[0].agent_error is not None
    assert recording.datasets[0].agent_error.detail == "turn 0: the agent is unreachable (ConnectError) (2 tries)"


def test_failed_attempts_kept_unscored_count_in_the_unscored_share() -> None:
    stub = script(refund={"0/0": "http_500"})
    recording = recorded(stub, attempts=3, agent_errors="unscored")
    first = recording.datasets[0]
    assert first.agent_error is not None and first.unscored is not None and first.unscored.cause == "agent_error"
    result = evaluate_sync(recording.datasets, ReferenceJudge(), EvaluationConfig(k=1))
    assert result.aggregated_metrics.unscored_by_cause == {"agent_error": 1}
    assert result.aggregated_metrics.total_conversations == 5  # n: the scored ones


def test_a_secret_header_never_appears_in_any_output_or_log(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-stub-5ecret-" + "7" * 20
    monkeypatch.setenv("STUB_AGENT_TOKEN", secret)
    stub = script(refund={"0/0": "drop", "1/0": "http_500", "2/0": "timeout"}, hours={"0/0": "malformed"})
    caplog.set_level(logging.DEBUG)
    with StubAgentServer(stub) as server:
        agent = http_agent(server.url, headers_from_env={"Authorization": "STUB_AGENT_TOKEN"})
        recording = run(agent, attempts=3)
    assert {c.headers.get("Authorization") for c in stub.calls} == {secret}  # it was sent
    result = evaluate_sync(recording.datasets, ReferenceJudge(), EvaluationConfig(k=1))
    outputs = [
        json.dumps(recording.request(OFFLINE)),
        recording.summary.model_dump_json(),
        result.model_dump_json(),
        repr(recording),
        caplog.text,
        *capfd.readouterr(),
    ]
    assert all(secret not in text and "5ecret" not in text for text in outputs)
    assert recording.summary.failed  # the failures' details were written, without it


def test_a_missing_header_variable_is_refused_naming_the_variable_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STUB_AGENT_TOKEN", raising=False)
    with pytest.raises(ValueError, match="STUB_AGENT_TOKEN are not set"):
        http_agent(dead_url(), headers_from_env={"Authorization": "STUB_AGENT_TOKEN"})


def test_dataset_rules_for_a_failed_attempt() -> None:
    """A failed attempt may leave `final_state` null under an `expected_state`; any other may not."""
    turn = {"qa_id": "q", "query": "q", "assistant": "", "ground_truth_assistant": "a"}
    base = {"session_id": "s", "assistant_id": "a", "conversation": [turn], "expected_state": {"x": 1}}
    failed = Dataset.model_validate({**base, "agent_error": {"cause": "agent_timeout", "detail": "turn 0: late"}})
    assert failed.final_state is None
    with pytest.raises(ValueError, match="final_state"):
        Dataset.model_validate(base)
    with pytest.raises(ValueError, match="cause"):
        Dataset.model_validate({**base, "agent_error": {"cause": "timeout", "detail": "x"}})


def test_the_unscored_phrase_tells_failed_agent_attempts_from_unjoined_traces() -> None:
    from fair_forge_core.tiers import unjoined_phrase

    assert unjoined_phrase({"agent_timeout": 2}) == "2 agent attempt(s) failed (2 agent_timeout)"
    assert unjoined_phrase({"not_joined": 1, "agent_error": 1, "agent_malformed": 3}) == (
        "1 trace attempt(s) could not be joined to the references (1 not_joined); "
        "4 agent attempt(s) failed (3 agent_malformed, 1 agent_error)"
    )
