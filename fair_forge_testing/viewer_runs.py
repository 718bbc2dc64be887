"""Runs of one suite for the viewer's tests and benchmark (`fair_forge_core.view`): the same tasks
judged twice by the offline judge, the second time with chosen tasks flipped.

`suite_result(passing, tasks, attempts)` evaluates `tasks` tasks (`task-00` …) of `attempts`
one-turn attempts each, by one assistant, with the real `evaluate` and the offline
`ReferenceJudge`: a task in `passing` answers every attempt right, the others wrong (so a task
is stable or failing, never flaky). Two such results whose `passing` sets differ in N tasks
differ, by `fair-forge compare`'s rules, in exactly those N tasks.
"""

from __future__ import annotations

from collections.abc import Iterable

from fair_forge_core.schemas import Dataset, EvaluationConfig, EvaluationResult

ASSISTANT = "support-bot"


def task_name(number: int) -> str:
    return f"task-{number:02d}"


def suite_datasets(passing: Iterable[str], tasks: int, attempts: int) -> list[Dataset]:
    """The suite's conversations (module docstring)."""
    right = set(passing)
    conversations = []
    for number in range(tasks):
        task = task_name(number)
        for attempt in range(attempts):
            answer = f"The total is {number + 10}." if task in right else "I cannot help with that."
            turn = {
                "qa_id": f"{task}-q",
                "query": f"What is {number} plus 10?",
                "assistant": answer,
                "ground_truth_assistant": f"The total is {number + 10}.",
            }
            conversations.append(
                {
                    "session_id": f"{task}-attempt-{attempt}",
                    "assistant_id": ASSISTANT,
                    "task_id": task,
                    "conversation": [turn],
                }
            )
    return [Dataset.model_validate(c) for c in conversations]


def suite_result(passing: Iterable[str], tasks: int = 10, attempts: int = 3) -> EvaluationResult:
    """The suite evaluated by the offline judge at k = `attempts` (module docstring)."""
    from fair_forge_core.evaluate import evaluate_sync
    from fair_forge_core.judges import ReferenceJudge

    config = EvaluationConfig(k=attempts, task_stability=True)
    return evaluate_sync(suite_datasets(passing, tasks, attempts), ReferenceJudge(), config)
