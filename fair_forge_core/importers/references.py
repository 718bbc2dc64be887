"""The ground truth of imported traces: a references file joined to them by task.

A reference (`schemas.Reference`) is `{"task_id", "turn"?, "qa_id"?,
"ground_truth_assistant", "ground_truth_agentic"?}`: the truth of turn `turn` (0 when
absent) of task `task_id`.
A trace is matched to its task by `task_key`: None for its id, `metadata.<name>` for a
key of its metadata, `first_user_message` for its first query. Several traces of one
task are attempts at it (they share its `task_id`). What does not match is reported in
`JoinReport`, never dropped silently: a trace with no task, a task no trace ran, a turn
without a reference.

Task fields: `goal`, `goal_rubric`, `expected_state` and `tool_policy` (`TASK_FIELDS`)
describe the task, so a reference of any turn may give them, and each goes to the dataset
of every trace of its task. One field given on two references of a task must have the same
value (compared as canonical JSON: key order aside, `1` and `1.0` differ); otherwise the
second is a `TraceError` naming it (``references[3].goal``). The rules of `Dataset` hold
per task: a `goal_rubric` needs a `goal` on some reference of the task, and a turn's
`ground_truth_agentic.tool_policy` must agree with the task's `tool_policy`.
End states: the state a trace's agent left is per trace, its metadata's `final_state` (any
JSON value; how each format carries metadata is in its importer's docstring). A trace of a
task with an `expected_state` and no `final_state` is left out and reported
(`JoinReport.traces_without_final_state`); a trace's `final_state` is ignored when its
task expects none.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from fair_forge_core.importers.trace import FINAL_STATE, ImportedTrace, TraceError
from fair_forge_core.schemas import Reference, ToolPolicy, did_you_mean, error_message, field_path


@dataclass
class JoinReport:
    """What the join could not use: trace ids without a task, task ids without a trace,
    `trace id: turn n` for turns without a reference, and the ids of traces whose task
    expects an end state but whose metadata has no `final_state` (both kinds left out)."""

    unmatched_traces: list[str] = field(default_factory=list)
    unused_tasks: list[str] = field(default_factory=list)
    turns_without_reference: list[str] = field(default_factory=list)
    traces_without_final_state: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """One line per problem, for a person to read."""
        return (
            [f"trace {t!r} matches no task of the references" for t in self.unmatched_traces]
            + [f"task {t!r} of the references matches no trace" for t in self.unused_tasks]
            + [f"{t} has no reference: its trace is left out" for t in self.turns_without_reference]
            + [
                f"trace {t!r}: the task expects an end state and the trace's metadata has no final_state:"
                " the trace is left out"
                for t in self.traces_without_final_state
            ]
        )


TASK_FIELDS = ("goal", "goal_rubric", "expected_state", "tool_policy")
"""The fields of a `Reference` that describe its whole task (module docstring)."""


def join_references(
    traces: list[ImportedTrace], references: list[Any], *, task_key: str | None = None
) -> tuple[list[dict[str, Any]], JoinReport]:
    """The `datasets` of a `/run` request for the traces that match a task, and the report.
    `references` are `Reference`s or their JSON; one that is not valid is a `TraceError`
    naming its field (``references[3].ground_truth_assistant``)."""
    by_task, task_fields = _references_by_task(references)
    _check_task_key(traces, task_key)
    report = JoinReport()
    used: set[str] = set()
    datasets = []
    for trace in traces:
        task = _task_of(trace, task_key)
        if task not in by_task:
            report.unmatched_traces.append(trace.trace_id)
            continue
        used.add(task)
        truths = by_task[task]
        missing = [f"trace {trace.trace_id!r}: turn {n}" for n in range(len(trace.turns)) if n not in truths]
        report.turns_without_reference += missing
        fields = task_fields[task]
        no_state = "expected_state" in fields and FINAL_STATE not in trace.metadata
        if no_state:
            report.traces_without_final_state.append(trace.trace_id)
        if missing or no_state:
            continue
        conversation = []
        for number, turn in enumerate(trace.turns):
            truth = truths[number]
            batch: dict[str, Any] = {
                "qa_id": truth.qa_id or f"{task}-{number}",
                "query": turn.query,
                "assistant": turn.answer,
                "ground_truth_assistant": truth.ground_truth_assistant,
                "agentic": {"tools_used": turn.tools_used},
            }
            if truth.ground_truth_agentic is not None:
                batch["ground_truth_agentic"] = truth.ground_truth_agentic.model_dump(exclude_unset=True)
            if turn.agent_usage is not None:
                batch["agent_usage"] = turn.agent_usage
            if turn.trace_span is not None:
                batch["trace_span"] = turn.trace_span
            conversation.append(batch)
        dataset = {
            "session_id": trace.trace_id,
            "assistant_id": trace.assistant_id,
            "task_id": task,
            "conversation": conversation,
            **fields,
        }
        if "expected_state" in fields:
            dataset["final_state"] = trace.metadata[FINAL_STATE]
        datasets.append(dataset)
    report.unused_tasks = [task for task in by_task if task not in used]
    return datasets, report


def _references_by_task(references: list[Any]) -> tuple[dict[str, dict[int, Reference]], dict[str, dict[str, Any]]]:
    """Each task's references by turn, and its `TASK_FIELDS` (`_task_fields`)."""
    by_task: dict[str, dict[int, Reference]] = defaultdict(dict)
    indexed: dict[str, list[tuple[int, Reference]]] = defaultdict(list)
    for index, raw in enumerate(references):
        try:
            reference = raw if isinstance(raw, Reference) else Reference.model_validate(raw)
        except ValidationError as exc:
            # One error is reported: an unknown key first, as a misspelt key explains the
            # "Field required" of the key it was meant to be.
            first = min(exc.errors(include_input=False), key=lambda error: error["type"] != "extra_forbidden")
            raise TraceError(
                field_path(("references", index, *first["loc"])), error_message(Reference, first)
            ) from None
        if reference.turn in by_task[reference.task_id]:
            raise TraceError(
                f"references[{index}]", f"a second reference for task {reference.task_id!r}, turn {reference.turn}"
            )
        by_task[reference.task_id][reference.turn] = reference
        indexed[reference.task_id].append((index, reference))
    return dict(by_task), {task: _task_fields(of_task) for task, of_task in indexed.items()}


def _task_fields(references: list[tuple[int, Reference]]) -> dict[str, Any]:
    """The `TASK_FIELDS` the references of one task (with their indices) give, as JSON (module
    docstring: one value per field, a `goal_rubric` needs a `goal`, turn policies agree)."""
    given: dict[str, tuple[Any, str]] = {}  # field → (its JSON, the reference that gave it first)
    for index, reference in references:
        for name in TASK_FIELDS:
            if name not in reference.model_fields_set:
                continue
            value = getattr(reference, name)
            value = value.model_dump(exclude_unset=True) if isinstance(value, ToolPolicy) else value
            where = f"references[{index}].{name}"
            if name not in given:
                given[name] = (value, where)
            elif _canonical(value) != _canonical(given[name][0]):
                raise TraceError(where, f"differs from {given[name][1]}: a task has one {name}")
    if "goal_rubric" in given and "goal" not in given:
        raise TraceError(given["goal_rubric"][1], "needs a goal: no reference of the task gives one")
    policy = next((r.tool_policy for _, r in references if r.tool_policy is not None), None)
    for index, reference in references:
        own = reference.ground_truth_agentic.tool_policy if reference.ground_truth_agentic is not None else None
        if policy is None or own is None:
            continue
        try:
            policy.overridden_by(own)
        except ValidationError as error:
            reason = error.errors()[0]["msg"].removeprefix("Value error, ")
            raise TraceError(
                f"references[{index}].ground_truth_agentic.tool_policy",
                f"with the task's tool_policy ({given['tool_policy'][1]}): {reason}",
            ) from None
    return {name: value for name, (value, _) in given.items()}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


TASK_KEY_FORMS = "none (the trace id), `first_user_message` or `metadata.<name>`"


def _check_task_key(traces: list[ImportedTrace], task_key: str | None) -> None:
    """One `TraceError` on `task_key` when it can match no trace at all — a form it cannot take,
    or a `metadata.<name>` that no trace has as a string — listing the metadata names the
    traces do have, rather than one "matches no task" warning per trace."""
    if task_key is None or task_key == "first_user_message":
        return
    name = task_key.removeprefix("metadata.")
    if task_key.startswith("metadata.") and any(isinstance(t.metadata.get(name), str) for t in traces):
        return
    names = sorted({key for trace in traces for key, value in trace.metadata.items() if isinstance(value, str)})
    if task_key.startswith("metadata."):  # the names compared alone: the shared prefix would make any two close
        hint = did_you_mean(name, names, shown_as="metadata.{}")
    else:
        hint = did_you_mean(task_key, ["first_user_message", *(f"metadata.{key}" for key in names)])
    more = f" and {len(names) - 20} more" if len(names) > 20 else ""
    listed = f"metadata names (with text values) in the traces: {', '.join(names[:20])}{more}"
    seen = listed if names else "the traces have no metadata with text values"
    if not task_key.startswith("metadata."):
        raise TraceError("task_key", f"is {TASK_KEY_FORMS}{hint}; {seen}")
    raise TraceError("task_key", f"no trace has {task_key} as text{hint}; {seen}")


def _task_of(trace: ImportedTrace, task_key: str | None) -> str | None:
    if task_key is None:
        return trace.trace_id
    if task_key == "first_user_message":
        return trace.turns[0].query
    if task_key.startswith("metadata."):
        value = trace.metadata.get(task_key.removeprefix("metadata."))
        return value if isinstance(value, str) else None
    raise TraceError("task_key", f"is {TASK_KEY_FORMS}")  # `_check_task_key` caught it first
