"""Run an agent on tasks and record what it did: an ordinary request that `evaluate`, `compare`,
the Action and the pytest plugin read unchanged (docs/agent-contract.md).

The library call behind `fair-forge run TASKS --agent SPEC --attempts K -o recorded.json`::

    import asyncio, json
    from fair_forge_core.agents import AgentSpec, TasksFile, build_agent, run_attempts

    tasks = TasksFile.model_validate_json(open("tasks.json", "rb").read())
    spec = AgentSpec(kind="http", assistant_id="my-agent", url="http://127.0.0.1:8000/turn",
                     headers_from_env={"Authorization": "AGENT_TOKEN"})
    agent = build_agent(spec, concurrency=8)       # AgentNotAllowed: a kind not allowed here
    recording = asyncio.run(run_attempts(tasks.tasks, agent, attempts=5, concurrency=8,
                                         max_cost_usd=2.0, agent_errors="failed"))
    body = recording.request(tasks.connector, tasks.config)    # the RunRequest body
    print(recording.summary)                                   # attempts, failed by cause, cost
    # then: await agent.aclose()

Modules: `contract` (the turn request and the reply, `fair-forge-agent/1`, the size cap),
`tasks` (the TASKS file), `kinds` (`AgentSpec`, the `http` / `command` / `python` kinds, retries,
timeouts, the allowlist), `runner` (`AttemptRunner`, `run_attempts`, the recording),
`adaptive_run` (`run_adaptive`: rounds judged by the caller until every task is decided; the
recording's `attempts`). Pure except the kinds, which do the I/O. The failure causes are `schemas.AgentErrorCause`.
"""

from fair_forge_core.agents.adaptive_run import RoundJudge, RoundReport, run_adaptive
from fair_forge_core.agents.contract import (
    CONTRACT,
    MAX_REPLY_BYTES,
    AgentCallFailed,
    AgentMessage,
    AgentReply,
    AgentTurnRequest,
    parse_reply,
    read_reply,
)
from fair_forge_core.agents.kinds import (
    LOCAL_KINDS,
    SERVICE_KINDS,
    Agent,
    AgentNotAllowed,
    AgentSpec,
    build_agent,
)
from fair_forge_core.agents.runner import (
    AgentErrors,
    AttemptOutcome,
    AttemptRunner,
    Planner,
    RunRecording,
    RunSummary,
    run_attempts,
)
from fair_forge_core.agents.tasks import TasksFile, TaskSpec, TaskTurn

__all__ = [
    "CONTRACT",
    "LOCAL_KINDS",
    "MAX_REPLY_BYTES",
    "SERVICE_KINDS",
    "Agent",
    "AgentCallFailed",
    "AgentErrors",
    "AgentMessage",
    "AgentNotAllowed",
    "AgentReply",
    "AgentSpec",
    "AgentTurnRequest",
    "AttemptOutcome",
    "AttemptRunner",
    "Planner",
    "RoundJudge",
    "RoundReport",
    "RunRecording",
    "RunSummary",
    "TaskSpec",
    "TaskTurn",
    "TasksFile",
    "build_agent",
    "parse_reply",
    "read_reply",
    "run_adaptive",
    "run_attempts",
]
