"""One row per turn of an evaluation, for pandas and spreadsheets: `jsonl_rows` (JSON Lines)
and `csv_rows` (CSV with a header, by the `csv` module).

Each row has the columns `row_fields(result)`, in that order: first `ROW_FIELDS` —
`conversation_index` (the conversation's position in `per_conversation_metrics`: session ids
need not be unique), `session_id`, `assistant_id`, `task_id`, `turn_index` (0-based, the
turn's index in the conversation's `interactions`), `qa_id`, `answer_score`, `answer_correct`,
`tool_score` (the rubric's `overall_correctness`, null when the turn's tools were not scored),
`tool_correct`, `is_correct`, `error`, `judged_by`; then the conversation's verdicts, repeated
on each of its turns: `is_scored`, `is_fully_correct` — then one column group per check name
present in the result's `checks` (docs/checks.md): `<name>.outcome`, `<name>.score`,
`<name>.cause`, `<name>.reason`. A turn row's group holds that turn's result of the check; a
check whose results are the conversation's (`scope` conversation) has its result repeated on
each of the conversation's turn rows, like the verdicts; a check with no result there leaves
its group null. Should a check give both a turn's and the conversation's result, the turn's is
shown on its row. The groups come in the order the checks are registered (`checks.ordered`:
the built-in checks first), a name not registered in this process after them, in the order it
first appears in the result: the same result always gives the same columns.

A result without per-turn detail (`interactions` null) gives its rows from the scores:
`answer_correct` is score ≥ the conversation's threshold and `is_correct` whether the turn is
in `correct_indices` (null when unscored); `qa_id`, `error` and `judged_by` are null, and only
the conversations' own check results are left to fill the groups (the turns' went with
`interactions`).

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

from fair_forge_core.schemas import CheckResult, ConversationMetrics, EvaluationResult

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
)
"""The columns every row has, before the check groups (`row_fields`)."""

CHECK_COLUMNS = ("outcome", "score", "cause", "reason")
"""The columns of a check's group, each `<name>.<column>`: the `CheckResult` field of that name."""


def check_names(result: EvaluationResult) -> list[str]:
    """The check names present in `result`, in the module docstring's order."""
    # imported here: loading the checks (and FAIR_FORGE_EXTRA_CHECKS) is the evaluation's cost, not the import's
    from fair_forge_core.checks import registered_checks

    seen = dict.fromkeys(r.name for m in result.per_conversation_metrics for r in m.checks)
    position = {check.name: index for index, check in enumerate(registered_checks())}
    last = len(position)
    # a stable sort: names not registered here keep their order of first appearance
    return sorted(seen, key=lambda name: position.get(name, last))


def row_fields(result: EvaluationResult) -> tuple[str, ...]:
    """The columns of `result`'s rows: `ROW_FIELDS`, then a group per check name (module docstring)."""
    return ROW_FIELDS + tuple(f"{name}.{column}" for name in check_names(result) for column in CHECK_COLUMNS)


def _group(name: str, check: CheckResult | None) -> dict[str, Any]:
    """The columns of `name`'s group from its result (all null without one)."""
    return {f"{name}.{column}": None if check is None else getattr(check, column) for column in CHECK_COLUMNS}


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
            # the trajectory's verdict, when the turn's policy has one, is the turn's tool_correct
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
    """Every turn of `result` as a row with the columns `row_fields(result)` (module docstring),
    conversations in order."""
    fields = row_fields(result)
    names = check_names(result)
    for position, conversation in enumerate(result.per_conversation_metrics):
        verdicts = {"is_scored": conversation.is_scored, "is_fully_correct": conversation.is_fully_correct}
        own: dict[str, CheckResult] = {}
        by_turn: dict[tuple[int, str], CheckResult] = {}
        for check in conversation.checks:
            if check.turn is None:
                own.setdefault(check.name, check)
            else:
                by_turn.setdefault((check.turn, check.name), check)
        for index in range(conversation.total_interactions):
            groups: dict[str, Any] = {}
            for name in names:
                groups |= _group(name, by_turn.get((index, name), own.get(name)))
            row = {
                "conversation_index": position,
                "session_id": conversation.session_id,
                "assistant_id": conversation.assistant_id,
                "task_id": conversation.task_id,
                "turn_index": index,
                **_turn(conversation, index),
                **verdicts,
                **groups,
            }
            yield {field: row[field] for field in fields}


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
    """The rows as CSV: a header of `row_fields(result)`, then one line a turn (module docstring)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    fields = row_fields(result)
    writer.writerow(fields)
    for row in turn_rows(result):
        writer.writerow([_csv_value(row[field]) for field in fields])
    return buffer.getvalue()
