"""Flakiness per task (#25 §5): which tasks pass every time, which never, which only sometimes.
Pure: no I/O. Docs: docs/how-to/task-checks.md "Flaky tasks".

Rule: tasks are keyed as `metrics.task_outcomes` keys them (`task_key`): conversations sharing a
`task_id` are attempts at one task; a conversation without a `task_id` is a task of its own,
even when another shares its session_id. A task's attempts are its scored conversations (n) and
its passes the fully correct ones (c); its unscored conversations are not attempts and are
counted apart (`unscored`). A task with at least `MIN_ATTEMPTS` (2) attempts is labelled:
"stable" when every attempt passed (c = n), "failing" when none did (c = 0), "flaky" otherwise.
A task with fewer attempts (one, or only unscored conversations) is not labelled: it is
counted in `unlabelled`, since one attempt cannot show whether the outcome varies.

Each labelled task carries its observed pass rate c/n and the Clopper–Pearson interval at the
request's `statistical_mode.ci_level` (`stats.clopper_pearson_interval`: the α/2 quantile of
Beta(c, n − c + 1), 0 at c = 0; the 1 − α/2 quantile of Beta(c + 1, n − c), 1 at c = n). The
interval is on the task's pass probability from its own attempts alone: nothing is pooled
across tasks, so 3 of 3 still allows a pass probability as low as 0.29 at 95 %. A task several
assistants attempted is one entry per assistant (`assistant_id`): one agent passing every time
and another never is one stable and one failing task, not a flaky one.

Tasks are listed most useful first: flaky, then failing, then stable, by task_id, then assistant.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from fair_forge_core import stats
from fair_forge_core.schemas import LabelledTask, TaskLabel, TaskStability

MIN_ATTEMPTS = 2
"""The scored attempts a task needs to be labelled."""
LABEL_ORDER: dict[TaskLabel, int] = {"flaky": 0, "failing": 1, "stable": 2}
"""How labelled tasks are listed: the flaky ones first, then the failing, then the stable."""

TaskKey = str | int


class Attempt(Protocol):
    """What the rule reads of a conversation: a `ConversationMetrics`, or the same four fields
    of its JSON (the HTML report reads a result file)."""

    @property
    def assistant_id(self) -> str: ...
    @property
    def task_id(self) -> str | None: ...
    @property
    def is_scored(self) -> bool: ...
    @property
    def is_fully_correct(self) -> bool | None: ...


def task_key(index: int, conversation: Attempt) -> TaskKey:
    """The task of the conversation at `index`: its task_id, or, without one, its position
    (a task of its own: session ids need not be unique)."""
    return conversation.task_id if conversation.task_id is not None else index


def label_of(attempts: int, passed: int) -> TaskLabel:
    """ "stable" when every attempt passed, "failing" when none did, else "flaky"."""
    if passed == attempts:
        return "stable"
    return "failing" if passed == 0 else "flaky"


def task_stability(conversations: Sequence[Attempt], ci_level: float) -> TaskStability:
    """Every task with at least `MIN_ATTEMPTS` scored attempts, labelled, with the interval of
    its pass probability at `ci_level` (module docstring); the others counted as unlabelled."""
    outcomes: dict[tuple[str, TaskKey], list[bool]] = {}
    unscored: Counter[tuple[str, TaskKey]] = Counter()
    for index, conversation in enumerate(conversations):
        key = (conversation.assistant_id, task_key(index, conversation))
        attempts = outcomes.setdefault(key, [])
        if conversation.is_scored:
            attempts.append(bool(conversation.is_fully_correct))
        else:
            unscored[key] += 1
    tasks = []
    for key, attempts in outcomes.items():
        n, c = len(attempts), sum(attempts)
        if n < MIN_ATTEMPTS:
            continue
        low, high = stats.clopper_pearson_interval(n, c, ci_level)
        tasks.append(
            LabelledTask(
                task_id=str(key[1]),  # a task keyed by position has one conversation: never labelled
                assistant_id=key[0],
                attempts=n,
                passed=c,
                unscored=unscored[key],
                pass_rate=c / n,
                ci_low=low,
                ci_high=high,
                label=label_of(n, c),
            )
        )
    tasks.sort(key=lambda task: (LABEL_ORDER[task.label], task.task_id, task.assistant_id))
    labels = Counter(task.label for task in tasks)
    return TaskStability(
        ci_level=ci_level,
        stable=labels["stable"],
        flaky=labels["flaky"],
        failing=labels["failing"],
        unlabelled=len(outcomes) - len(tasks),
        tasks=tasks,
    )


def task_name(task: LabelledTask, stability: TaskStability) -> str:
    """How a task is named on screen: its task_id, and its assistant when several assistants' tasks
    are listed (`checkout (agent_b)`)."""
    several = len({t.assistant_id for t in stability.tasks}) > 1
    return f"{task.task_id} ({task.assistant_id})" if several else task.task_id


def summary(stability: TaskStability) -> str:
    """One line: `tasks: 3 stable, 1 flaky, 0 failing` (and `, 2 with fewer than 2 attempts`
    when some are unlabelled)."""
    line = f"tasks: {stability.stable} stable, {stability.flaky} flaky, {stability.failing} failing"
    if stability.unlabelled:
        line += f", {stability.unlabelled} with fewer than {MIN_ATTEMPTS} scored attempts"
    return line
