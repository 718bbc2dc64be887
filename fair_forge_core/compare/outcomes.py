"""A comparison's input: each side's outcomes, one `(task, is_fully_correct)` per conversation,
read from `ConversationMetrics` or a result file's JSON, tallied per task; and every metric of
one task (`per_task_values`). The pairing rule is the package's docstring (`fair_forge_core.compare`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fair_forge_core import stats
from fair_forge_core.schemas import ComparedMetric, ConversationMetrics, EvaluationResult

Outcome = tuple[str, bool | None]
"""One conversation of one side: (its task, is_fully_correct), None when unscored."""


def task_key(task_id: str | None, session_id: str) -> str:
    """The task a conversation attempts: its `task_id`, else its `session_id`."""
    return task_id if task_id is not None else session_id


def _conversation_fields(
    conversation: ConversationMetrics | Mapping[str, Any], index: int
) -> tuple[str, str, bool | None]:
    """(assistant_id, task, is_fully_correct) of one conversation, a model or its JSON dict."""
    if isinstance(conversation, ConversationMetrics):
        return (
            conversation.assistant_id,
            task_key(conversation.task_id, conversation.session_id),
            conversation.is_fully_correct,
        )
    if not isinstance(conversation, Mapping):
        raise TypeError(
            f"conversation {index}: expected ConversationMetrics or a dict, got {type(conversation).__name__}"
        )
    expected: dict[str, tuple[type, ...]] = {
        "session_id": (str,),
        "assistant_id": (str,),
        "task_id": (str, type(None)),
        "is_fully_correct": (bool, type(None)),
    }
    for name, types in expected.items():
        if name not in conversation:
            raise ValueError(f"conversation {index}: missing field {name!r}")
        if not isinstance(conversation[name], types):
            raise ValueError(f"conversation {index}: {name} must be {' or '.join(t.__name__ for t in types)}")
    return (
        conversation["assistant_id"],
        task_key(conversation["task_id"], conversation["session_id"]),
        conversation["is_fully_correct"],
    )


def outcomes_from_conversations(
    conversations: Iterable[ConversationMetrics | Mapping[str, Any]], assistant_id: str | None = None
) -> list[Outcome]:
    """One `(task, is_fully_correct)` per conversation, in the order given.

    A conversation is a `ConversationMetrics` or its JSON dict from a result file, of which
    `session_id`, `assistant_id`, `task_id` and `is_fully_correct` are read (ValueError
    naming the conversation's index when one is missing or of the wrong type; other fields
    are ignored). With `assistant_id`, only that assistant's conversations; ValueError,
    naming the assistants there are, when it has none. Without, every conversation.
    """
    rows = [_conversation_fields(conversation, i) for i, conversation in enumerate(conversations)]
    if assistant_id is None:
        return [(task, correct) for _, task, correct in rows]
    chosen = [(task, correct) for owner, task, correct in rows if owner == assistant_id]
    if not chosen:
        present = sorted({owner for owner, _, _ in rows})
        raise ValueError(f"no conversation of assistant {assistant_id!r}; assistants present: {present}")
    return chosen


def outcomes_from_result(
    result: EvaluationResult | Mapping[str, Any], assistant_id: str | None = None
) -> list[Outcome]:
    """`outcomes_from_conversations` of a result's `per_conversation_metrics` (an
    `EvaluationResult` or the JSON dict of one); ValueError when the dict has no such list."""
    if isinstance(result, EvaluationResult):
        return outcomes_from_conversations(result.per_conversation_metrics, assistant_id)
    conversations = result.get("per_conversation_metrics") if isinstance(result, Mapping) else None
    if not isinstance(conversations, list):
        raise ValueError("a result must have a list 'per_conversation_metrics'")
    return outcomes_from_conversations(conversations, assistant_id)


@dataclass
class Side:
    """One side's outcomes by task: (scored attempts, successes), and unscored conversations."""

    scored: dict[str, tuple[int, int]] = field(default_factory=dict)
    unscored: dict[str, int] = field(default_factory=dict)


def tally_side(outcomes: Iterable[Outcome], side: str) -> Side:
    """One side's outcomes counted per task; TypeError naming `side` and the outcome's index
    for one that is not a (str, True/False/None) pair."""
    tally = Side()
    for index, outcome in enumerate(outcomes):
        if not (isinstance(outcome, tuple) and len(outcome) == 2):
            raise TypeError(f"{side} outcome {index}: expected a (task, is_fully_correct) pair")
        task, correct = outcome
        if not isinstance(task, str):
            raise TypeError(f"{side} outcome {index}: the task must be a str, got {type(task).__name__}")
        if correct is None:
            tally.unscored[task] = tally.unscored.get(task, 0) + 1
        elif isinstance(correct, bool):
            n, c = tally.scored.get(task, (0, 0))
            tally.scored[task] = (n + 1, c + correct)
        else:
            raise TypeError(f"{side} outcome {index}: is_fully_correct must be True, False or None")
    return tally


# --------------------------------------------------------------------------- per task


def per_task_values(n: int, c: int, k: int) -> dict[ComparedMetric, float | None]:
    """Every metric of one task with c successes in n scored attempts.

    pass@1 = c/n; pass@k = 1 − (1 − c/n)^k and pass^k = (c/n)^k (`stats.pass_at_k`,
    `stats.pass_pow_k`); the unbiased `stats.pass_at_k_unbiased` and
    `stats.pass_pow_k_unbiased`, None when n < k. ValueError unless n ≥ 1, 0 ≤ c ≤ n, k ≥ 1.
    """
    return {
        "pass@1": stats.pass_pow_k(n, c, 1),
        "pass@k": stats.pass_at_k(n, c, k),
        "pass^k": stats.pass_pow_k(n, c, k),
        "pass@k_unbiased": stats.pass_at_k_unbiased(n, c, k),
        "pass^k_unbiased": stats.pass_pow_k_unbiased(n, c, k),
    }
