"""Adaptive attempts (docs/agent-contract.md "Adaptive attempts"; the rule: docs/statistics.md
"Adaptive attempts"): rounds of attempts, each judged, until every task is decided or out of budget.

`run_adaptive(tasks, agent, question=parse_question("p>=0.5", k), judge=..., max_attempts=20)`:

1. the first round gives every task `round_size` attempts (`adaptive.next_round`);
2. `judge` is awaited with the round's datasets and says of each whether it passed (fully correct:
   True, not: False, unscored: None); a task's successes and failures are its scored attempts, and
   its `AdaptiveTask` (`adaptive.task_report`) its anytime-valid confidence sequence and decision;
3. the next round gives more attempts only to the tasks still `undecided` that may yet be decided
   (`next_round`'s futility rule), at most `round_size` each; until no task gets any, or a bound of
   the runner (`max_total_attempts`, `max_cost_usd`) stops the run.

`max_attempts` bounds the attempts **run** of a task, scored or not (an unscored attempt counts
towards no decision, so without this a task whose attempts all fail to be scored would be asked
for again forever). The judge is the caller's: this module knows nothing of connectors, so the
CLI judges a round as `evaluate` would judge the recording. Returns the recording, whose `attempts`
(`schemas.AdaptiveAttempts`) say what the run decided; the agent is not closed here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from fair_forge_core.adaptive import DEFAULT_FUTILITY, DEFAULT_LEVEL, DEFAULT_PRIOR, Question, next_round, task_report
from fair_forge_core.agents.kinds import Agent
from fair_forge_core.agents.runner import AgentErrors, AttemptOutcome, AttemptRunner, RunRecording
from fair_forge_core.agents.tasks import TaskSpec
from fair_forge_core.schemas import AdaptiveAttempts, AdaptiveTask, Dataset

RoundJudge = Callable[[list[Dataset]], Awaitable[list[bool | None]]]
"""Judges a round: for each dataset, in order, True (fully correct), False, or None (unscored)."""
RoundReport = Callable[[int, list[AttemptOutcome], dict[str, AdaptiveTask]], None]
"""Told after each round: its number (1 the first), its outcomes, and every task's report."""


async def run_adaptive(
    tasks: Sequence[TaskSpec],
    agent: Agent,
    *,
    question: Question,
    judge: RoundJudge,
    max_attempts: int,
    round_size: int = 1,
    concurrency: int = 8,
    max_total_attempts: int | None = None,
    max_cost_usd: float | None = None,
    agent_errors: AgentErrors = "failed",
    level: float = DEFAULT_LEVEL,
    prior: tuple[float, float] = DEFAULT_PRIOR,
    futility: float = DEFAULT_FUTILITY,
    on_round: RoundReport | None = None,
) -> RunRecording:
    """Run adaptive attempts (module docstring); the recording carries `attempts`."""
    runner = AttemptRunner(
        tasks,
        agent,
        concurrency=concurrency,
        max_attempts=max_total_attempts,
        max_cost_usd=max_cost_usd,
        agent_errors=agent_errors,
    )
    boundary = question.boundary
    reports = {task.task_id: task_report(0, 0, boundary, level, prior) for task in tasks}
    ran: Counter[str] = Counter()
    successes: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    rounds = 0
    while plan := _capped(next_round(reports, max_attempts, round_size, futility), ran, max_attempts):
        if runner.recording().summary.stopped is not None:
            break
        outcomes = await runner.run_round(plan)
        verdicts = await judge([outcome.dataset for outcome in outcomes]) if outcomes else []
        for outcome, verdict in zip(outcomes, verdicts, strict=True):
            ran[outcome.task_id] += 1
            if verdict is True:
                successes[outcome.task_id] += 1
            elif verdict is False:
                failures[outcome.task_id] += 1
        for task_id in plan:
            reports[task_id] = task_report(successes[task_id], failures[task_id], boundary, level, prior)
        rounds += 1
        if on_round is not None:
            on_round(rounds, outcomes, dict(reports))
        if not outcomes:  # a bound kept the whole round from starting
            break
    recording = runner.recording()
    attempts = AdaptiveAttempts(
        policy="adaptive",
        question=question.text,
        k=question.k,
        boundary=boundary,
        level=level,
        prior=prior,
        max_attempts=max_attempts,
        round_size=round_size,
        tasks=reports,
    )
    return RunRecording(datasets=recording.datasets, summary=recording.summary, attempts=attempts)


def _capped(plan: dict[str, int], ran: Counter[str], max_attempts: int) -> dict[str, int]:
    """`plan` with no task given more than `max_attempts` attempts run in all (module docstring)."""
    capped = {task_id: min(count, max_attempts - ran[task_id]) for task_id, count in plan.items()}
    return {task_id: count for task_id, count in capped.items() if count > 0}
