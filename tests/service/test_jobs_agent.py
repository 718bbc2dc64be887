"""`POST /jobs` with `agent` and `tasks` (docs/jobs.md "Run the agent from a job"): the state machine of
statemachine/evaluation.asl.json executed by moto's Step Functions (the attempts loop, then the Distributed Map and
the reduce), the project's real handlers dispatched in-process (jobs_harness.py), the stub agent over HTTP on
127.0.0.1 (allowed by FAIR_FORGE_AGENT_HOSTS), its credential in moto's Secrets Manager.

The expected figures are the library's own run of the same tasks against the same stub script (same seed: the
stub draws each attempt's success from (seed, task, attempt)): `fair_forge_core.agents.run_attempts` (or, for
adaptive attempts, `run_adaptive` with each round evaluated), then `fair_forge_core.evaluate.evaluate` with the
offline judge (and the run's adaptive `attempts` read into `aggregated_metrics.adaptive`, as `/run` reads them). Session ids and measured latencies
differ between two runs and are left out of the comparison; every other figure must be equal.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters

from fair_forge_core.adaptive import parse_question
from fair_forge_core.adaptive_result import with_adaptive
from fair_forge_core.agents import AgentSpec, TaskSpec, build_agent, run_adaptive, run_attempts
from fair_forge_core.evaluate import evaluate
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_harness import REGION, JobsAWS, jobs_aws
from fair_forge_testing.stub_agent import StubAgentServer, StubScript, StubTask
from handler.job_budget import DynamoBudget
from handler.observability import logger

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:No application metrics to publish")]

REFERENCE = "fair_forge_core.judges.ReferenceJudge"
SECRET_NAME = "fair-forge/agents/stub"
# Not key-shaped (no sk- prefix): only masking the exact value could hide it, so finding it anywhere is a leak.
SECRET_VALUE = "agent-credential-5e4d3c2b1a09f8e7"
ASSISTANT = "stub-agent"
TASKS: list[dict[str, Any]] = [
    {"task_id": "add", "turns": [{"query": "What is 2 plus 3?", "ground_truth_assistant": "5"}]},
    {
        "task_id": "capital",
        "turns": [
            {"query": "What is the capital of France?", "ground_truth_assistant": "Paris"},
            {"query": "And the capital of Italy?", "ground_truth_assistant": "Rome"},
        ],
    },
    {
        "task_id": "booking",
        "turns": [{"query": "Book a table for two.", "ground_truth_assistant": "Booked a table for two."}],
        "expected_state": {"booked": True},
    },
]


def stub_script(success: dict[str, float], faults: dict[str, dict[str, Any]] | None = None) -> StubScript:
    """The stub's script for TASKS: each task's success probability, and faults by task."""
    faults = faults or {}
    return StubScript(
        tasks={
            "add": StubTask("add", ("5",), success_p=success["add"], faults=faults.get("add", {})),
            "capital": StubTask(
                "capital", ("Paris", "Rome"), success_p=success["capital"], faults=faults.get("capital", {})
            ),
            "booking": StubTask(
                "booking",
                ("Booked a table for two.",),
                success_p=success["booking"],
                end_state={"booked": True},
                wrong_state={"booked": False},
                faults=faults.get("booking", {}),
            ),
        },
        seed=11,
    )


@contextmanager
def agent_jobs(
    monkeypatch: pytest.MonkeyPatch, script: StubScript, bound_to: str = ""
) -> Iterator[tuple[JobsAWS, StubAgentServer]]:
    """moto's jobs resources, the agent's secret in Secrets Manager (its `url`: the stub's, with `bound_to`
    after it), and the stub serving `script`."""
    monkeypatch.setenv("FAIR_FORGE_AGENT_HOSTS", "127.0.0.1")
    monkeypatch.setenv("FAIR_FORGE_AGENT_SECRET_PREFIX", "fair-forge/agents/")
    with jobs_aws(monkeypatch, shard_size=4) as aws, StubAgentServer(script) as server:
        parameters.clear_caches()  # a provider made before moto started would call AWS itself
        secret = json.dumps({"api_key": SECRET_VALUE, "url": server.url + bound_to})
        boto3.client("secretsmanager", region_name=REGION).create_secret(Name=SECRET_NAME, SecretString=secret)
        try:
            yield aws, server
        finally:
            parameters.clear_caches()


def job_body(url: str, attempts: Any, **config: Any) -> dict[str, Any]:
    return {
        "connector": {"class_path": REFERENCE, "params": {}},
        "config": config,
        "agent": {
            "kind": "http",
            "url": url,
            "assistant_id": ASSISTANT,
            "credential": {"secret": SECRET_NAME, "header": "Authorization", "prefix": "Bearer "},
        },
        "tasks": TASKS,
        "attempts": attempts,
    }


def run_job(aws: JobsAWS, body: dict[str, Any]) -> dict[str, Any]:
    submitted = aws.submit(body)
    assert submitted.status == 202, submitted.body
    assert submitted.body["tasks"] == len(TASKS) and submitted.body["shards"] == 0
    final = aws.wait(submitted.body["job_id"])
    assert final.body["status"] == "succeeded", final.body
    return dict(final.body)


def run_datasets_job(aws: JobsAWS, body: dict[str, Any]) -> dict[str, Any]:
    submitted = aws.submit(body)
    assert submitted.status == 202, submitted.body
    final = aws.wait(submitted.body["job_id"])
    assert final.body["status"] == "succeeded", final.body
    return dict(final.body["result"])


def figures(value: Any) -> Any:
    """`value` without what two runs of the same attempts cannot share: ids, measured latencies, the hash of
    the datasets (which holds both), and the judge's usage (the job's shards each count their own)."""
    if isinstance(value, dict):
        dropped = {"session_id", "request_id", "job_id", "datasets_hash", "judge_usage"}
        return {k: figures(v) for k, v in value.items() if k not in dropped and "latency" not in k}
    if isinstance(value, list):
        return [figures(v) for v in value]
    return value


def library_fixed(script: StubScript, attempts: int, config: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """`fair-forge run TASKS --attempts K` and then evaluate, by the library: (the run's summary, the result)."""

    async def run() -> tuple[Any, dict[str, Any]]:
        tasks = [TaskSpec.model_validate(task) for task in TASKS]
        with StubAgentServer(script) as server:
            agent = build_agent(AgentSpec(kind="http", assistant_id=ASSISTANT, url=server.url))
            try:
                recording = await run_attempts(tasks, agent, attempts=attempts)
            finally:
                await agent.aclose()
        result = await evaluate(recording.datasets, ReferenceJudge(), EvaluationConfig.model_validate(config))
        return recording.summary, result.model_dump(mode="json")

    return asyncio.run(run())


def library_adaptive(
    script: StubScript, question: str, max_attempts: int, round_size: int, config: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`fair-forge run --until-decided` and then evaluate, by the library: `run_adaptive` with each round judged
    by the offline judge, then the recording evaluated and its `attempts` read into the result as
    `plan.execute` does (`adaptive_result.with_adaptive`). (The run's reports, the result.)"""
    evaluation_config = EvaluationConfig.model_validate(config)

    async def verdicts(datasets: list[Any]) -> list[bool | None]:
        judged = await evaluate(datasets, ReferenceJudge(), evaluation_config)
        return [c.is_fully_correct if c.is_scored else None for c in judged.per_conversation_metrics]

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        tasks = [TaskSpec.model_validate(task) for task in TASKS]
        with StubAgentServer(script) as server:
            agent = build_agent(AgentSpec(kind="http", assistant_id=ASSISTANT, url=server.url))
            try:
                recording = await run_adaptive(
                    tasks,
                    agent,
                    question=parse_question(question, evaluation_config.k),
                    judge=verdicts,
                    max_attempts=max_attempts,
                    round_size=round_size,
                )
            finally:
                await agent.aclose()
        assert recording.attempts is not None
        result = await evaluate(recording.datasets, ReferenceJudge(), evaluation_config)
        result = with_adaptive(result, recording.attempts)
        reports = {task_id: report.model_dump(mode="json") for task_id, report in recording.attempts.tasks.items()}
        return reports, result.model_dump(mode="json")

    return asyncio.run(run())


def leaks(aws: JobsAWS, *texts: str) -> list[str]:
    """Where the agent's secret appears: in any of `texts`, or in any S3 object of the jobs bucket."""
    found = [f"text {i}" for i, text in enumerate(texts) if SECRET_VALUE in text]
    return found + [key for key, content in aws.objects().items() if SECRET_VALUE.encode() in content]


def test_a_fixed_job_gives_what_the_library_gives_and_never_shows_the_credential(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    lines = io.StringIO()  # every line the service's logger writes, as its formatter (which masks) writes it
    monkeypatch.setattr(logger.registered_handler, "stream", lines)
    success = {"add": 0.5, "capital": 0.7, "booking": 0.4}
    config = {"k": 3}
    expected_summary, expected = library_fixed(stub_script(success), 3, config)
    script = stub_script(success)
    with agent_jobs(monkeypatch, script) as (aws, server):
        final = run_job(aws, job_body(server.url, 3, **config))
        leaked = leaks(aws, json.dumps(final))
    logs = lines.getvalue()
    # What was logged, unformatted too: the records' messages and every field they carry.
    records = json.dumps([record.__dict__ for record in caplog.records], default=str)

    result = final["result"]
    assert figures(result) == figures(expected)
    # 3 attempts of each of 3 tasks, in task then attempt order, as `fair-forge run` records them.
    assert [c["task_id"] for c in result["per_conversation_metrics"]] == ["add"] * 3 + ["capital"] * 3 + ["booking"] * 3
    summary = final["agent_run"]["summary"]
    assert summary["attempts"] == expected_summary.attempts == 9 and summary["failed"] == {}
    # The stub reports 0.002 USD a call: 3 + 6 + 3 calls.
    assert summary["agent_cost_usd"] == pytest.approx(12 * 0.002) == pytest.approx(expected_summary.agent_cost_usd)
    assert final["agent_run"]["adaptive"] is None
    # The agent was sent its credential, from the secret, in the header the request named; it is nowhere else.
    assert {call.headers.get("Authorization") for call in script.calls} == {f"Bearer {SECRET_VALUE}"}
    assert leaked == []
    assert SECRET_VALUE not in logs and SECRET_VALUE not in records
    assert '"message":"attempts run"' in logs  # the attempts Lambda did log (the check above looked at its lines)


def test_an_adaptive_job_gives_the_librarys_decisions_and_result(monkeypatch: pytest.MonkeyPatch) -> None:
    # p >= 0.5 under the uniform prior: 8 successes of 8 decide "above" (lower bound (1/180)^(1/8) = 0.523),
    # 8 failures of 8 decide "below"; a coin is still open at 8.
    success = {"add": 0.0, "capital": 1.0, "booking": 0.5}
    question, max_attempts, round_size = "p>=0.5", 12, 4
    config: dict[str, Any] = {"k": 2}
    reports, expected = library_adaptive(stub_script(success), question, max_attempts, round_size, config)
    assert reports["capital"]["decided"] == "above" and reports["add"]["decided"] == "below"
    script = stub_script(success)
    attempts = {"until_decided": question, "max_attempts": max_attempts, "round_size": round_size}
    with agent_jobs(monkeypatch, script) as (aws, server):
        final = run_job(aws, job_body(server.url, attempts, **config))
        worker_calls = aws.calls_of(aws.worker_name)
        rounds = aws.calls_of(aws.attempts_name)
        # The recording as `fair-forge run -o` would write it (the shards' datasets and the run's `attempts`),
        # sent as a datasets job, gets the adaptive report POST /run gives it.
        objects = aws.objects(f"jobs/{final['job_id']}/")
        shards = sorted(key for key in objects if "/shards/" in key)
        recording = {
            "connector": {"class_path": REFERENCE, "params": {}},
            "config": config,
            "datasets": [d for key in shards for d in json.loads(objects[key])],
            "attempts": json.loads(objects[f"jobs/{final['job_id']}/request.json"])["recorded_attempts"],
        }
        by_run = call_handler(recording)
        by_job = run_datasets_job(aws, recording)

    assert by_run.status == 200, by_run.body
    assert by_job["aggregated_metrics"]["adaptive"] == by_run.body["aggregated_metrics"]["adaptive"]
    assert by_job["aggregated_metrics"]["adaptive"]["tasks"] == reports
    assert figures(final["result"]) == figures(expected)  # `aggregated_metrics.adaptive` included
    assert final["result"]["aggregated_metrics"]["adaptive"]["tasks"] == reports
    adaptive = final["agent_run"]["adaptive"]
    assert adaptive["question"] == question and adaptive["boundary"] == 0.5
    assert adaptive["tasks"] == reports
    made = Counter(c["task_id"] for c in final["result"]["per_conversation_metrics"])
    assert made == {"add": 8, "capital": 8, "booking": reports["booking"]["attempts"]}
    # One call per round: the last round's call finds nothing left to plan and writes the shards.
    assert len(rounds) == max(made.values()) // round_size == 2
    # The rounds were judged as they ran: the workers found every shard's result there and judged nothing again.
    assert worker_calls and all(call.error is None for call in worker_calls)


def test_a_fault_of_the_agent_fails_its_attempt_with_its_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    success = {"add": 1.0, "capital": 1.0, "booking": 1.0}
    faults = {
        "add": {"1/0": "http_500", "2/0": "drop"},
        "capital": {"0/1": "malformed", "2/0": "oversize"},
        "booking": {"1/0": "timeout"},
    }
    script = stub_script(success, faults)
    script.hang_s = 8.0  # a timed-out call hangs well past the agent's timeout of 3 s
    with agent_jobs(monkeypatch, script) as (aws, server):
        body = job_body(server.url, 3)
        body["agent"]["timeout_s"] = 3.0
        final = run_job(aws, body)

    summary = final["agent_run"]["summary"]
    assert summary["failed"] == {"agent_error": 2, "agent_malformed": 2, "agent_timeout": 1}
    failed = {}
    for conversation in final["result"]["per_conversation_metrics"]:
        for check in conversation["checks"]:
            if check["name"] == "agent_run":
                assert check["outcome"] == "failed" and conversation["is_fully_correct"] is False
                failed.setdefault(conversation["task_id"], []).append(check["reason"])
    # Each in attempt order: the cause, the turn, the detail (docs/agent-contract.md "Failures and their causes").
    assert failed["add"][0].startswith("agent_error: turn 0: HTTP 500 from the agent")
    assert (
        failed["add"][1].startswith("agent_error: turn 0: the agent is unreachable") and "3 tries" in failed["add"][1]
    )
    assert failed["capital"][0].startswith("agent_malformed: turn 1: the reply is not JSON")
    assert failed["capital"][1].startswith("agent_malformed: turn 0: the reply is over the size cap")
    assert failed["booking"] == ["agent_timeout: turn 0: no reply within 3 s"]
    fully_correct = sum(1 for c in final["result"]["per_conversation_metrics"] if c["is_fully_correct"])
    assert fully_correct == 9 - 5  # every attempt succeeds but the five that met a fault


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda b: b["agent"].update(headers={"Authorization": "Bearer x"}), "agent.headers"),
        (lambda b: b["agent"].update(api_key="x"), "agent.api_key"),
        (lambda b: b["agent"]["credential"].update(value="x"), "agent.credential.value"),
        (lambda b: b["agent"].update(credential="Bearer x"), "agent.credential"),
        (lambda b: b["agent"].update(url="http://user:pw@127.0.0.1:1/turn"), "agent.url"),
        (lambda b: b["agent"].update(url="http://127.0.0.1:1/turn?token=x"), "agent.url"),
        (lambda b: b["agent"]["credential"].update(prefix="Bearer sk-0123456789"), "agent.credential.prefix"),
        (lambda b: b["agent"].update(kind="command"), "agent.kind"),
        (lambda b: b["agent"].update(url="http://10.0.0.8/turn"), "agent.url"),
        (lambda b: b["agent"].update(url="https://10.0.0.8/turn"), "agent.url"),
        (lambda b: b["agent"].update(url="http://agent.example.com/turn"), "agent.url"),
        (lambda b: b["agent"]["credential"].update(secret="other/agent"), "agent.credential.secret"),
        (lambda b: b.update(datasets=[]), "tasks"),
        (lambda b: b.update(attempts={"until_decided": "pass@k>=0.8", "max_attempts": 5}), "attempts"),
        (lambda b: b["agent"].update(timeout_s=900), "agent.timeout_s"),
        (lambda b: b["tasks"].append(TASKS[0]), "tasks"),
    ],
)
def test_a_request_outside_the_rules_is_a_400_naming_the_field(
    monkeypatch: pytest.MonkeyPatch, change: Any, field: str
) -> None:
    with agent_jobs(monkeypatch, stub_script({"add": 1.0, "capital": 1.0, "booking": 1.0})) as (aws, server):
        body = job_body(server.url, 2)
        body["agent"]["credential"] = dict(body["agent"]["credential"])
        body["tasks"] = list(TASKS)
        change(body)
        response = aws.submit(body)
        assert aws.objects() == {}  # nothing stored, nothing started
    assert response.status == 400, response.body
    assert response.body["details"][0]["field"].startswith(field), response.body
    assert "x" not in json.dumps(response.body["details"][0]["field"].removeprefix(field))


def test_a_secret_is_sent_only_to_the_url_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    # A caller who names another's secret, with an agent URL of their own, gets a failed job: no call is made.
    script = stub_script({"add": 1.0, "capital": 1.0, "booking": 1.0})
    with agent_jobs(monkeypatch, script, bound_to="-only") as (aws, server):
        submitted = aws.submit(job_body(server.url, 2))
        assert submitted.status == 202, submitted.body
        final = aws.wait(submitted.body["job_id"])
        leaked = leaks(aws, json.dumps(final.body))
    assert final.body["status"] == "failed"
    assert final.body["error"].startswith("Agentic evaluation failed: agent.url: the secret fair-forge/agents/stub")
    assert script.calls == [] and leaked == []


@pytest.mark.parametrize(
    ("secret", "error"),
    [
        (SECRET_VALUE, "the agent's credential (secret fair-forge/agents/other) is not a JSON object with api_key"),
        (None, "the agent's credential (secret fair-forge/agents/other) could not be read (ResourceNotFoundException)"),
    ],
)
def test_a_secret_that_cannot_be_used_fails_the_job_before_any_call(
    monkeypatch: pytest.MonkeyPatch, secret: str | None, error: str
) -> None:
    # A plain string says of no URL that it may go there; a secret that is not there cannot be read.
    script = stub_script({"add": 1.0, "capital": 1.0, "booking": 1.0})
    with agent_jobs(monkeypatch, script) as (aws, server):
        if secret is not None:
            boto3.client("secretsmanager", region_name=REGION).create_secret(
                Name="fair-forge/agents/other", SecretString=secret
            )
        body = job_body(server.url, 2)
        body["agent"]["credential"]["secret"] = "fair-forge/agents/other"
        submitted = aws.submit(body)
        assert submitted.status == 202, submitted.body
        final = aws.wait(submitted.body["job_id"])
        leaked = leaks(aws, json.dumps(final.body))
    assert final.body["status"] == "failed"
    assert final.body["error"].startswith(f"Agentic evaluation failed: {error}"), final.body["error"]
    assert script.calls == [] and leaked == []


@pytest.mark.parametrize(
    ("url", "bound", "within"),
    [
        ("https://a.example/v1/turn", "https://a.example/v1", True),
        ("https://a.example/v1/turn", "https://a.example/v1/", True),
        ("https://A.example/v1?x=1", "https://a.example/v1", True),
        ("https://a.example/turn", "https://a.example", True),
        ("https://a.example/v10", "https://a.example/v1", False),
        ("https://a.example.evil/v1", "https://a.example/v1", False),
        ("http://a.example/v1", "https://a.example/v1", False),
        ("https://a.example:8443/v1", "https://a.example/v1", False),
    ],
)
def test_url_within(url: str, bound: str, within: bool) -> None:
    from handler.job_attempts import url_within

    assert url_within(url, bound) is within


def test_too_many_attempts_are_a_413(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_JOBS_MAX_ATTEMPTS", "8")
    with agent_jobs(monkeypatch, stub_script({"add": 1.0, "capital": 1.0, "booking": 1.0})) as (aws, server):
        response = aws.submit(job_body(server.url, 3))  # 3 tasks x 3 = 9
    assert response.status == 413 and "3 tasks × 3 = 9 (limit 8" in response.body["error"], response.body


def test_attempts_the_lambdas_time_cannot_hold_go_to_its_next_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # A margin of 899 s of the 900 s timeout leaves no time for an attempt's worst case (60 s × 3 tries): each
    # call starts its first attempt only, and the loop makes one call per attempt, the last one writing the shards.
    monkeypatch.setenv("FAIR_FORGE_JOBS_ATTEMPTS_MARGIN_S", "899")
    success = {"add": 0.5, "capital": 0.7, "booking": 0.4}
    _, expected = library_fixed(stub_script(success), 2, {"k": 2})
    with agent_jobs(monkeypatch, stub_script(success)) as (aws, server):
        final = run_job(aws, job_body(server.url, 2, k=2))
        calls = aws.calls_of(aws.attempts_name)
        chunks = [json.loads(v) for k, v in aws.objects().items() if "/attempts/" in k]
    assert len(calls) == 6 and [len(chunk["attempts"]) for chunk in chunks] == [1] * 6
    assert sum(chunk["deferred"] for chunk in chunks) == 5 + 4 + 3 + 2 + 1
    # The indices a single run gives: the result is the library's.
    assert figures(final["result"]) == figures(expected)


def test_plan_attempts_fills_the_indices_a_single_run_gives_and_holds_adaptive_tasks_to_max_attempts() -> None:
    from handler.job_attempts import plan_attempts

    tasks = [TaskSpec.model_validate(task) for task in TASKS[:2]]

    def chunk(*records: tuple[str, int, bool | None]) -> dict[str, Any]:
        return {"attempts": [{"task_id": t, "attempt": a, "success": s} for t, a, s in records]}

    ran = [chunk(("add", 0, True), ("add", 1, True), ("add", 3, True)), chunk(("capital", 1, None))]
    assert plan_attempts({"attempts": 5}, 1, tasks, ran) == {"add": [2, 4], "capital": [0, 2, 3, 4]}
    assert plan_attempts({"attempts": 2}, 1, tasks, ran) == {"capital": [0]}
    # Adaptive: "capital" has made 3 attempts, all unscored: they decide nothing, but count against its 4.
    adaptive = {"attempts": {"until_decided": "p>=0.5", "max_attempts": 4, "round_size": 3}}
    unscored = [chunk(("capital", 0, None), ("capital", 1, None), ("capital", 2, None))]
    assert plan_attempts(adaptive, 1, tasks, unscored) == {"add": [0, 1, 2], "capital": [3]}
    assert "capital" not in plan_attempts(adaptive, 1, tasks, [*unscored, chunk(("capital", 3, None))])


def test_the_agents_cost_counts_against_the_jobs_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # One attempt at a time, so the cap is read between attempts: the stub reports 0.002 USD a call, and "add"
    # (one turn) is first. 0.002 and 0.004 are below 0.005, 0.006 is not: 3 attempts run, the other 6 do not start.
    monkeypatch.setenv("FAIR_FORGE_JOBS_AGENT_CONCURRENCY", "1")
    script = stub_script({"add": 1.0, "capital": 1.0, "booking": 1.0})
    with agent_jobs(monkeypatch, script) as (aws, server):
        submitted = aws.submit(job_body(server.url, 3, max_cost_usd=0.005))
        assert submitted.status == 202, submitted.body
        final = aws.wait(submitted.body["job_id"])
        committed, spent = DynamoBudget(
            os.environ["JOBS_BUDGET_TABLE"], submitted.body["job_id"], 0.005
        ).committed_usd()
    # The 3 attempts made are evaluated (the offline judge costs nothing, so the spent cap stops none of it).
    assert (
        final.body["status"] == "succeeded" and final.body["result"]["aggregated_metrics"]["total_conversations"] == 3
    )
    summary = final.body["agent_run"]["summary"]
    assert summary == {
        "attempts": 3,
        "failed": {},
        "agent_cost_usd": pytest.approx(0.006),
        "not_started": 6,
        "stopped": "max_cost_usd",
    }
    assert len(script.calls) == 3 and {call.task_id for call in script.calls} == {"add"}
    # The job's one budget holds the agent's cost: spent, and nothing left for the judge.
    assert spent == pytest.approx(0.006) and committed >= 0.006
