"""Small builders of request objects for tests: one place that knows the shapes."""

from __future__ import annotations

from typing import Any

from fair_forge_core.schemas import ConversationMetrics, Dataset


def turn(qa_id: str, query: str, answer: str, ground_truth: str, **extra: Any) -> dict[str, Any]:
    """One turn (Batch) as the API takes it."""
    return {
        "qa_id": qa_id,
        "query": query,
        "assistant": answer,
        "ground_truth_assistant": ground_truth,
        **extra,
    }


def conversation(
    session_id: str, turns: list[dict[str, Any]], assistant_id: str = "agent_v1", **extra: Any
) -> dict[str, Any]:
    """One conversation (Dataset) as the API takes it."""
    return {"session_id": session_id, "assistant_id": assistant_id, "conversation": turns, **extra}


def datasets(*conversations: dict[str, Any]) -> list[Dataset]:
    return [Dataset.model_validate(c) for c in conversations]


def distinct_conversations(count: int, turns_each: int = 1, *, correct: bool = True) -> list[dict[str, Any]]:
    """`count` conversations whose turns are all distinct (no dedup between them)."""
    return [
        conversation(
            f"s{c}",
            [
                turn(
                    f"q{c}-{t}",
                    f"What is {c} plus {t}?",
                    f"It is {c + t}." if correct else "No idea.",
                    str(c + t),
                )
                for t in range(turns_each)
            ],
        )
        for c in range(count)
    ]


def scored_conversation(
    session_id: str, correct: bool | None, task_id: str | None = None, assistant_id: str = "agent"
) -> ConversationMetrics:
    """The metrics of a one-turn conversation, as evaluating it would give them: fully correct
    (True), wrong (False) or unscored (None), without per-turn detail."""
    return ConversationMetrics(
        session_id=session_id,
        assistant_id=assistant_id,
        task_id=task_id,
        total_interactions=1,
        correct_interactions=int(bool(correct)),
        unscored_interactions=int(correct is None),
        is_scored=correct is not None,
        is_fully_correct=correct,
        threshold=0.7,
        correctness_scores=[None if correct is None else float(correct)],
        correct_indices=[0] if correct else [],
        tool_correctness_scores=[None],
        k=3,
        pass_at_k=None,
        pass_pow_k=None,
        interactions=None,
    )


def provenance_json(**changes: Any) -> dict[str, Any]:
    """A result's `provenance` as a result file holds it, written by hand, with `changes` applied."""
    return {
        "version": "1.0.0",
        "judges": [{"class_path": "fair_forge_core.judges.ReferenceJudge", "model": "reference", "identity": "a" * 64}],
        "prompt_hash": "b" * 64,
        "threshold": 0.7,
        "tool_threshold": 0.8,
        "tool_dimension_floor": 0.5,
        "tool_weights": {},
        "require_tool_correctness": False,
        "k": 3,
        "statistical_mode": {"method": "frequentist"},
        "judge_samples": 1,
        "judge_vote": "majority",
        "judge_cascade": False,
        "datasets_hash": "c" * 64,
    } | changes
