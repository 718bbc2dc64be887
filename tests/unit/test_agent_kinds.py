"""`fair_forge_core.agents` kinds and contract: the `command` kind (a Python script as the
executable) and the `python` kind (sync and async) record what the stub did, with their faults;
the runner's rounds and bounds; the contract's replies, trace replies and size cap; the allowlist."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.agents import (
    SERVICE_KINDS,
    AgentCallFailed,
    AgentNotAllowed,
    AgentReply,
    AgentSpec,
    AttemptRunner,
    RunRecording,
    TasksFile,
    TaskSpec,
    build_agent,
    parse_reply,
    read_reply,
    run_attempts,
)
from fair_forge_core.agents.kinds import Agent
from fair_forge_testing.stub_agent import StubAgent, StubScript, StubTask, install

ROOT = Path(__file__).resolve().parents[2]


def tasks() -> list[TaskSpec]:
    return [
        TaskSpec.model_validate(
            {"task_id": task_id, "turns": [{"query": f"{task_id}?", "ground_truth_assistant": f"{task_id}!"}]}
        )
        for task_id in ("a", "b")
    ]


def script(**faults: dict[str, Any]) -> StubScript:
    return StubScript(
        tasks={
            t: StubTask(t, answers=(f"{t}!",), success_p=0.5, faults=faults.get(t, {}), end_state={"done": t})
            for t in ("a", "b")
        },
        seed=5,
        hang_s=2.0,
    )


def spec(**fields: Any) -> AgentSpec:
    return AgentSpec.model_validate({"assistant_id": "stub", "timeout_s": 1.0, "retry_backoff_s": 0.0, **fields})


def run(agent: Agent, attempts: Any = 4, **options: Any) -> RunRecording:
    async def go() -> RunRecording:
        try:
            return await run_attempts(tasks(), agent, attempts=attempts, **options)
        finally:
            await agent.aclose()

    return asyncio.run(go())


def answers_match_script(recording: RunRecording, stub: StubScript, failed: set[tuple[str, int]]) -> None:
    for index, dataset in enumerate(recording.datasets):
        task, attempt = str(dataset.task_id), index % 4
        if (task, attempt) in failed:
            assert dataset.agent_error is not None
            continue
        right = stub.succeeds(task, attempt)
        assert dataset.conversation[0].assistant == (f"{task}!" if right else stub.tasks[task].wrong_answer)
        assert dataset.final_state == ({"done": task} if right else None)


def test_the_command_kind_runs_a_script_per_call(tmp_path: Path) -> None:
    stub = script(a={"1/0": "http_500", "2/0": "malformed"}, b={"3/0": "timeout"})
    stub.hang_s = 30.0  # killed at the timeout: the test does not wait for it
    script_file, log = tmp_path / "script.json", tmp_path / "calls.jsonl"
    script_file.write_text(stub.to_json())
    argv = [sys.executable, "-m", "fair_forge_testing.stub_agent", str(script_file), str(log)]
    # A process per call: a timeout that a loaded machine's interpreter start-up cannot reach.
    recording = run(build_agent(spec(kind="command", argv=argv, timeout_s=3.0)))
    answers_match_script(recording, stub, {("a", 1), ("a", 2), ("b", 3)})
    causes = [d.agent_error.cause if d.agent_error else None for d in recording.datasets]
    assert causes == [None, "agent_error", "agent_malformed", None, None, None, None, "agent_timeout"]
    assert recording.datasets[1].agent_error is not None
    assert recording.datasets[1].agent_error.detail == "turn 0: the command exited with status 1"
    assert recording.datasets[7].agent_error is not None
    assert recording.datasets[7].agent_error.detail == "turn 0: no reply within 3 s"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    sessions = {(c["task_id"], c["attempt"]): c["session_id"] for c in calls}
    assert sessions == {(str(d.task_id), i % 4): d.session_id for i, d in enumerate(recording.datasets)}


def test_a_command_that_is_not_there_is_refused() -> None:
    with pytest.raises(AgentNotAllowed, match="argv"):
        build_agent(spec(kind="command", argv=["/nonexistent/agent-binary"]))


def test_the_python_kind_calls_a_sync_callable_and_reads_its_faults() -> None:
    stub = script(a={"0/0": "timeout", "1/0": "http_500", "3/0": "oversize"}, b={"2/0": "malformed"})
    callable_path = install(StubAgent(stub))
    recording = run(build_agent(spec(kind="python", callable=callable_path)))
    answers_match_script(recording, stub, {("a", 0), ("a", 1), ("a", 3), ("b", 2)})
    causes = [d.agent_error.cause if d.agent_error else None for d in recording.datasets]
    assert causes == ["agent_timeout", "agent_error", None, "agent_malformed", None, None, "agent_malformed", None]
    assert recording.datasets[1].agent_error is not None
    assert "RuntimeError: stub fault http_500" in recording.datasets[1].agent_error.detail
    assert len(stub.calls) == 8  # a python agent's failure is never retried


async def async_agent(request: dict[str, Any]) -> dict[str, Any]:
    """An async `python` agent: answers with the number of messages it was sent."""
    await asyncio.sleep(0)
    return {"answer": f"{len(request['messages'])} message(s) in {request['session_id']}"}


def test_the_python_kind_awaits_an_async_callable() -> None:
    recording = run(build_agent(spec(kind="python", callable=f"{__name__}:async_agent")), attempts=1)
    assert [d.conversation[0].assistant for d in recording.datasets] == [
        f"1 message(s) in {d.session_id}" for d in recording.datasets
    ]


def test_no_more_attempts_are_in_flight_than_the_agents_concurrency() -> None:
    in_flight: list[int] = [0, 0]  # now, most

    async def counting(request: dict[str, Any]) -> dict[str, Any]:
        in_flight[0] += 1
        in_flight[1] = max(in_flight)
        await asyncio.sleep(0.01)  # every admitted attempt waits here together
        in_flight[0] -= 1
        return {"answer": "ok"}

    globals()["counting_agent"] = counting
    recording = run(build_agent(spec(kind="python", callable=f"{__name__}:counting_agent")), attempts=6, concurrency=3)
    assert (recording.summary.attempts, in_flight[1]) == (12, 3)


class Broken:
    """An agent whose call has a defect (not an `AgentCallFailed`), its message holding a secret."""

    spec = AgentSpec(kind="python", assistant_id="broken", callable="m:f")

    async def call(self, request: Any) -> AgentReply:
        raise KeyError("sk-secret-in-a-message")

    async def aclose(self) -> None:
        return None


def test_an_agents_defect_fails_its_attempt_naming_only_the_type() -> None:
    recording = run(Broken(), attempts=1)
    assert [d.agent_error.detail if d.agent_error else None for d in recording.datasets] == [
        "turn 0: the agent call raised KeyError"
    ] * 2


def test_a_long_failure_detail_is_cut_to_the_bound() -> None:
    from fair_forge_core.agents.runner import failure_of
    from fair_forge_core.schemas import MAX_AGENT_ERROR_DETAIL

    failure = failure_of(AgentCallFailed("agent_error", "x" * 5_000), turn=12)
    assert len(failure.detail) == MAX_AGENT_ERROR_DETAIL and failure.detail.startswith("turn 12: x")


def test_rounds_continue_attempt_indices_and_a_planner_drives_them() -> None:
    stub = script()
    agent = build_agent(spec(kind="python", callable=install(StubAgent(stub))))

    async def rounds() -> RunRecording:
        runner = AttemptRunner(tasks(), agent, concurrency=2)
        first = await runner.run_round({"a": 2, "b": 1})
        second = await runner.run_round({"a": 1})
        assert [(o.task_id, o.attempt) for o in first] == [("a", 0), ("a", 1), ("b", 0)]
        assert [(o.task_id, o.attempt) for o in second] == [("a", 2)]
        return runner.recording()

    recording = asyncio.run(rounds())
    assert [d.task_id for d in recording.datasets] == ["a", "a", "a", "b"]
    plans: list[int] = []

    def planner(outcomes: list[Any]) -> dict[str, int]:
        plans.append(len(outcomes))
        return {"a": 1, "b": 1} if len(outcomes) < 4 else {}

    planned = run(agent, attempts=planner)
    assert plans == [0, 2, 4] and planned.summary.attempts == 4


def test_bounds_stop_new_attempts_and_say_which() -> None:
    stub = script()
    agent = build_agent(spec(kind="python", callable=install(StubAgent(stub))))
    capped = run(agent, attempts=4, max_attempts=3, concurrency=1)
    assert (capped.summary.attempts, capped.summary.not_started, capped.summary.stopped) == (3, 5, "max_attempts")
    costly = run(agent, attempts=4, max_cost_usd=0.005, concurrency=1)  # 0.002 a call (the stub's default)
    assert (costly.summary.attempts, costly.summary.stopped) == (3, "max_cost_usd")
    assert costly.summary.agent_cost_usd == pytest.approx(0.006)


def test_a_reply_holds_an_answer_or_a_trace() -> None:
    assert read_reply({"answer": "hi", "usage": {"input_tokens": 3}}).usage is not None
    for bad in ({}, {"answer": "hi", "trace": [], "format": "openai"}, {"trace": []}, {"answer": 3}, []):
        with pytest.raises(AgentCallFailed) as failed:
            read_reply(bad)
        assert failed.value.cause == "agent_malformed"
    assert read_reply(AgentReply(answer="typed")).answer == "typed"


def test_a_trace_reply_is_read_by_its_importer() -> None:
    trace = {
        "messages": [
            {"role": "user", "content": "What is 6 x 7?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "multiply", "arguments": '{"a": 6, "b": 7}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "42"},
            {"role": "assistant", "content": "It is 42."},
        ],
        "metadata": {"final_state": {"last": 42}},
    }
    reply = read_reply({"trace": trace, "format": "openai"})
    assert (reply.answer, reply.final_state) == ("It is 42.", {"last": 42})
    assert [(c.tool_name, c.parameters, c.result) for c in reply.tools_used] == [("multiply", {"a": 6, "b": 7}, 42)]
    with pytest.raises(AgentCallFailed, match="agent_malformed"):
        read_reply({"trace": [trace, trace], "format": "openai"})  # two traces: which turn?


def test_the_size_cap_is_a_byte_count() -> None:
    body = json.dumps({"answer": "x" * 100}).encode()
    assert parse_reply(body, max_bytes=len(body)).answer == "x" * 100
    with pytest.raises(AgentCallFailed, match="over the size cap"):
        parse_reply(body, max_bytes=len(body) - 1)
    with pytest.raises(AgentCallFailed, match="not JSON"):
        parse_reply(b"{", max_bytes=10)


def test_a_service_builds_no_kind_that_runs_code() -> None:
    assert {"http"} == SERVICE_KINDS
    for kind, field in (("command", {"argv": [sys.executable]}), ("python", {"callable": f"{__name__}:async_agent"})):
        with pytest.raises(AgentNotAllowed, match=f"kind {kind!r} are not allowed"):
            build_agent(spec(kind=kind, **field), allowed_kinds=SERVICE_KINDS)


def test_an_agent_spec_gives_the_field_of_its_kind() -> None:
    with pytest.raises(ValueError, match="gives url"):
        spec(kind="http", argv=["x"])
    with pytest.raises(ValueError, match="headers_from_env is for kind 'http'"):
        spec(kind="python", callable="m:f", headers_from_env={"A": "B"})


def test_a_tasks_file_refuses_a_repeated_task_and_the_rules_of_a_dataset() -> None:
    task = {"task_id": "a", "turns": [{"query": "q", "ground_truth_assistant": "a"}]}
    assert TasksFile.model_validate({"tasks": [task]}).tasks[0].qa_id(0) == "a-0"
    with pytest.raises(ValueError, match="a task_id is unique"):
        TasksFile.model_validate({"tasks": [task, task]})
    with pytest.raises(ValueError, match="goal_rubric: needs a goal"):
        TasksFile.model_validate({"tasks": [{**task, "goal_rubric": ["polite"]}]})
