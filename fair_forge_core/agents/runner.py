"""The attempt runner: tasks in, recorded conversations out (docs/agent-contract.md "The run").

`AttemptRunner(tasks, agent, ...)` runs attempts: `run(task, attempt)` one, `run_round(counts)` as
many more of each task as `counts` asks (so an adaptive planner asks for more attempts of open
tasks only), `recording()` what was run so far. `run_attempts(tasks, agent, attempts=K)` is the
whole run (K attempts of every task, or rounds a planner gives) and what `fair-forge run` calls.

**An attempt** gets a fresh `session_id` (uuid4); its turns are sent in order, each with every
message so far (`AgentTurnRequest`); nothing is kept between attempts. Its dataset is an ordinary
`Dataset`: the task's fields, each turn's `assistant` (the answer), `agentic.tools_used`, and
`agent_usage` (`latency_s` the call's wall time as measured here, tokens and cost as the agent
reports them); `final_state` the last one the agent reported.

**A failed attempt** (its agent call failed after the retries, timed out, or replied outside the
contract) is kept, never dropped: its turns are those answered, then the failed turn with an empty
answer (its `latency_s` the time spent failing, no usage); the turns after it are not recorded (no
one asked them). It carries `agent_error` (cause and detail). Under `agent_errors="failed"` (the
default) the `agent_run` check fails it; under `"unscored"` it also carries `unscored` with the
same cause, so no check runs on it and readiness counts it in the unscored share.

**Bounds**: at most `concurrency` attempts in flight (the agent's own limit, not the judge's);
`max_attempts` attempts started in all; once the agent's reported cost (`usage.cost_usd`, summed)
reaches `max_cost_usd`, no attempt starts (those in flight finish). An attempt not started for a
bound is counted in `RunSummary.not_started`, and its reason is `RunSummary.stopped`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from fair_forge_core.agents.contract import AgentCallFailed, AgentMessage, AgentTurnRequest
from fair_forge_core.agents.kinds import Agent
from fair_forge_core.agents.tasks import TaskSpec
from fair_forge_core.schemas import MAX_AGENT_ERROR_DETAIL, AdaptiveAttempts, AgentError, AgentErrorCause, Dataset
from fair_forge_core.schemas.base import ResultModel

AgentErrors = Literal["failed", "unscored"]
"""What a failed attempt counts as: a failure (`agent_error`, the `agent_run` check), or unscored."""


@dataclass(frozen=True)
class AttemptOutcome:
    """One attempt run: its task, index and session, its dataset, its failure (None when every turn
    was answered) and the cost the agent reported for it (USD; 0 when it reported none)."""

    task_id: str
    attempt: int
    session_id: str
    dataset: Dataset
    failure: AgentError | None
    cost_usd: float


class RunSummary(ResultModel):
    """What a run did: attempts made, of which failed by cause, the agent's reported cost, and the
    attempts asked for that a bound kept from starting (`stopped`: which bound)."""

    attempts: int
    failed: dict[AgentErrorCause, int] = Field(default_factory=dict)
    agent_cost_usd: float = 0.0
    not_started: int = 0
    stopped: Literal["max_attempts", "max_cost_usd"] | None = None


@dataclass(frozen=True)
class RunRecording:
    """A run's datasets (one per attempt, in task order then attempt order) and its summary, and,
    when the attempts were adaptive, what the run decided (`attempts`, `agents.adaptive_run`).
    `request(connector, config)` is the ordinary `RunRequest` body `evaluate` reads."""

    datasets: list[Dataset]
    summary: RunSummary
    attempts: AdaptiveAttempts | None = None

    def request(self, connector: Any, config: Any = None) -> dict[str, Any]:
        """The recording as a request body (`schemas.RunRequest`'s JSON): `connector` (a
        `ConnectorSpec`, a list of them, or their JSON), `config` when given, and `attempts` when
        the attempts were adaptive."""
        body: dict[str, Any] = {
            "connector": _as_json(connector),
            "datasets": [d.model_dump(mode="json") for d in self.datasets],
        }
        if config is not None:
            body["config"] = _as_json(config)
        if self.attempts is not None:
            body["attempts"] = self.attempts.model_dump(mode="json")
        return body


def _as_json(value: Any) -> Any:
    if isinstance(value, list):
        return [_as_json(item) for item in value]
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_unset=True) if dump is not None else value


class AttemptRunner:
    """Runs attempts of `tasks` with `agent` under the bounds (module docstring)."""

    def __init__(
        self,
        tasks: Sequence[TaskSpec],
        agent: Agent,
        *,
        concurrency: int = 8,
        max_attempts: int | None = None,
        max_cost_usd: float | None = None,
        agent_errors: AgentErrors = "failed",
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency: at least 1 attempt in flight")
        self.tasks = {task.task_id: task for task in tasks}
        self.agent = agent
        self.max_attempts = max_attempts
        self.max_cost_usd = max_cost_usd
        self.agent_errors = agent_errors
        self._slots = asyncio.Semaphore(concurrency)
        self._started = 0
        self._cost = 0.0
        self._next_index: Counter[str] = Counter()
        self._not_started = 0
        self._stopped: Literal["max_attempts", "max_cost_usd"] | None = None
        self.outcomes: list[AttemptOutcome] = []

    def _bound_reached(self) -> Literal["max_attempts", "max_cost_usd"] | None:
        if self.max_attempts is not None and self._started >= self.max_attempts:
            return "max_attempts"
        if self.max_cost_usd is not None and self._cost >= self.max_cost_usd:
            return "max_cost_usd"
        return None

    async def run(self, task: TaskSpec, attempt: int) -> AttemptOutcome | None:
        """Attempt `attempt` of `task`, once a slot is free; None when a bound keeps it from
        starting (counted in the summary)."""
        async with self._slots:
            bound = self._bound_reached()
            if bound is not None:
                self._not_started += 1
                self._stopped = self._stopped or bound
                return None
            self._started += 1
            outcome = await self._attempt(task, attempt)
            self._cost += outcome.cost_usd
            self.outcomes.append(outcome)
            return outcome

    async def run_round(self, counts: Mapping[str, int]) -> list[AttemptOutcome]:
        """`counts[task_id]` more attempts of each task, concurrently (their indices go on from
        the task's earlier rounds); the outcomes of those that ran, in task then attempt order.
        A task id none of the tasks has is a `KeyError` naming it."""
        planned = []
        for task_id, count in counts.items():
            task = self.tasks[task_id]
            first = self._next_index[task_id]
            self._next_index[task_id] += count
            planned += [(task, first + offset) for offset in range(count)]
        ran = await asyncio.gather(*(self.run(task, index) for task, index in planned))
        return [outcome for outcome in ran if outcome is not None]

    def recording(self) -> RunRecording:
        """Every attempt run so far, in task order then attempt order, and the summary."""
        order = {task_id: index for index, task_id in enumerate(self.tasks)}
        outcomes = sorted(self.outcomes, key=lambda o: (order[o.task_id], o.attempt))
        failed = Counter(o.failure.cause for o in outcomes if o.failure is not None)
        summary = RunSummary(
            attempts=len(outcomes),
            failed=dict(sorted(failed.items())),
            agent_cost_usd=self._cost,
            not_started=self._not_started,
            stopped=self._stopped,
        )
        return RunRecording(datasets=[o.dataset for o in outcomes], summary=summary)

    async def _attempt(self, task: TaskSpec, attempt: int) -> AttemptOutcome:
        session_id = str(uuid.uuid4())
        messages: list[AgentMessage] = []
        answers: list[str] = []
        turns: list[dict[str, Any]] = []
        final_state: Any = None
        cost = 0.0
        failure: AgentError | None = None
        for index, spec in enumerate(task.turns):
            messages.append(AgentMessage(role="user", content=spec.query))
            request = AgentTurnRequest(
                task_id=task.task_id,
                attempt=attempt,
                session_id=session_id,
                turn=index,
                messages=list(messages),
                initial_state=task.initial_state,
                context=task.context,
            )
            started = time.perf_counter()
            try:
                reply = await self.agent.call(request)
            except Exception as error:
                failure = failure_of(error, index)
                answers.append("")
                turns.append({"agent_usage": {"latency_s": time.perf_counter() - started}})
                break
            latency = time.perf_counter() - started
            usage = reply.usage.model_dump(exclude_none=True) if reply.usage is not None else {}
            cost += usage.get("cost_usd", 0.0)
            answers.append(reply.answer or "")
            turns.append(
                {
                    "agentic": {"tools_used": [call.model_dump() for call in reply.tools_used]},
                    "agent_usage": {**usage, "latency_s": latency},
                }
            )
            messages.append(AgentMessage(role="assistant", content=reply.answer or ""))
            final_state = reply.final_state if reply.final_state is not None else final_state
        dataset = task.dataset(
            session_id=session_id,
            assistant_id=self.agent.spec.assistant_id,
            answers=answers,
            turns=turns,
            final_state=final_state,
            **self._failure_fields(failure),
        )
        return AttemptOutcome(task.task_id, attempt, session_id, dataset, failure, cost)

    def _failure_fields(self, failure: AgentError | None) -> dict[str, Any]:
        if failure is None:
            return {}
        if self.agent_errors == "unscored":  # no check runs on it: `agent_run` does not fail it
            return {"agent_error": failure, "unscored": {"cause": failure.cause, "detail": failure.detail}}
        return {"agent_error": failure}


def failure_of(error: Exception, turn: int) -> AgentError:
    """The `AgentError` of a failed call on `turn`: an `AgentCallFailed`'s cause and detail, or, for
    any other exception (a kind's defect, an adapter's bug), `agent_error` naming only its type
    (its message could hold anything, a header value included)."""
    if isinstance(error, AgentCallFailed):
        detail = f"turn {turn}: {error.detail}"[:MAX_AGENT_ERROR_DETAIL]
        return AgentError(cause=error.cause, detail=detail)
    return AgentError(cause="agent_error", detail=f"turn {turn}: the agent call raised {type(error).__name__}")


Planner = Callable[[list[AttemptOutcome]], Mapping[str, int]]
"""An adaptive plan: from every outcome so far, how many more attempts of each task (empty: done)."""


async def run_attempts(
    tasks: Sequence[TaskSpec],
    agent: Agent,
    *,
    attempts: int | Planner,
    concurrency: int = 8,
    max_attempts: int | None = None,
    max_cost_usd: float | None = None,
    agent_errors: AgentErrors = "failed",
) -> RunRecording:
    """Run `tasks` with `agent` and record every attempt (module docstring): `attempts` of each
    task (an int ≥ 1), or rounds from a `Planner` (called with the outcomes so far, first with
    none, until it asks for nothing or a bound stops the run). The agent is not closed here."""
    runner = AttemptRunner(
        tasks,
        agent,
        concurrency=concurrency,
        max_attempts=max_attempts,
        max_cost_usd=max_cost_usd,
        agent_errors=agent_errors,
    )
    if isinstance(attempts, int):
        if attempts < 1:
            raise ValueError("attempts: at least 1 attempt of each task")
        await runner.run_round({task.task_id: attempts for task in tasks})
        return runner.recording()
    while (counts := {task_id: n for task_id, n in attempts(list(runner.outcomes)).items() if n > 0}) and (
        runner.recording().summary.stopped is None
    ):
        await runner.run_round(counts)
    return runner.recording()
