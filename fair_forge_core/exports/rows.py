"""One row per turn of an evaluation, for pandas and spreadsheets: `jsonl_rows` (JSON Lines)
and `csv_rows` (CSV with a header, by the `csv` module).

Each row (`ROW_FIELDS`, in that order): `conversation_index` (the conversation's position in
`per_conversation_metrics`: session ids need not be unique), `session_id`, `assistant_id`,
`task_id`, `turn_index` (0-based, the turn's index in the conversation's `interactions`),
`qa_id`, `answer_score`, `answer_correct`, `tool_score` (the rubric's `overall_correctness`,
null when the turn's tools were not scored), `tool_correct`, `is_correct`, `error`,
`judged_by`; then the conversation's verdicts, repeated on each of its turns: `is_scored`,
`is_fully_correct`, `state_matches` (null without an expected end state), `goal_achieved`
(null without a goal, or when it was not judged).

A result without per-turn detail (`interactions` null) gives its rows from the scores:
`answer_correct` is score ≥ the conversation's threshold and `is_correct` whether the turn is
in `correct_indices` (null when unscored); `qa_id`, `error` and `judged_by` are null.

JSON Lines: one JSON object a line, nulls as `null`. CSV: a null is an empty cell, a bool
`true`/`false` (as in the JSON), a float its shortest exact text (`repr`), so reading it back
gives the same number. Values are written as they are: a cell that starts with `=` is not
escaped for spreadsheets, so that pandas reads exactly what the JSON says.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from fair_forge_core.schemas import ConversationMetrics, EvaluationResult

ROW_FIELDS = (
    "conversation_index",
    "session_id",
    "assistant_id",
    "task_id",
    "turn_index",
    "qa_id",
    "answer_score",
    "answer_correct",
    "tool_score",
    "tool_correct",
    "is_correct",
    "error",
    "judged_by",
    "is_scored",
    "is_fully_correct",
    "state_matches",
    "goal_achieved",
)


def _turn(conversation: ConversationMetrics, index: int) -> dict[str, Any]:
    """The turn's own columns, from its detail or, without it, from the scores."""
    tool = conversation.tool_correctness_scores[index]
    tool_columns = {
        "tool_score": None if tool is None else tool.overall_correctness,
        "tool_correct": None if tool is None else tool.is_correct,
    }
    if conversation.interactions is not None:
        turn = conversation.interactions[index]
        return {
            "qa_id": turn.qa_id,
            "answer_score": turn.answer_score,
            "answer_correct": turn.answer_correct,
            **tool_columns,
            # the policy's trajectory verdict, when it decided, is the turn's tool_correct
            "tool_correct": turn.tool_correct,
            "is_correct": turn.is_correct,
            "error": turn.error,
            "judged_by": turn.judged_by,
        }
    score = conversation.correctness_scores[index]
    return {
        "qa_id": None,
        "answer_score": score,
        "answer_correct": None if score is None else score >= conversation.threshold,
        **tool_columns,
        "is_correct": None if score is None else index in conversation.correct_indices,
        "error": None,
        "judged_by": None,
    }


def turn_rows(result: EvaluationResult) -> Iterator[dict[str, Any]]:
    """Every turn of `result` as a row (module docstring), conversations in order."""
    for position, conversation in enumerate(result.per_conversation_metrics):
        verdicts = {
            "is_scored": conversation.is_scored,
            "is_fully_correct": conversation.is_fully_correct,
            "state_matches": None if conversation.state_check is None else conversation.state_check.matches,
            "goal_achieved": None if conversation.goal_check is None else conversation.goal_check.goal_achieved,
        }
        for index in range(conversation.total_interactions):
            row = {
                "conversation_index": position,
                "session_id": conversation.session_id,
                "assistant_id": conversation.assistant_id,
                "task_id": conversation.task_id,
                "turn_index": index,
                **_turn(conversation, index),
                **verdicts,
            }
            yield {field: row[field] for field in ROW_FIELDS}


def jsonl_rows(result: EvaluationResult) -> str:
    """The rows as JSON Lines (empty text when there is no turn)."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in turn_rows(result))


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def csv_rows(result: EvaluationResult) -> str:
    """The rows as CSV: a header of `ROW_FIELDS`, then one line a turn (module docstring)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(ROW_FIELDS)
    for row in turn_rows(result):
        writer.writerow([_csv_value(row[field]) for field in ROW_FIELDS])
    return buffer.getvalue()
