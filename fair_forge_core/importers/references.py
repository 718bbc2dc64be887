"""The ground truth of imported traces: a references file joined to them by task.

A reference (`schemas.Reference`) is `{"task_id", "turn"?, "qa_id"?,
"ground_truth_assistant", "ground_truth_agentic"?}`: the truth of turn `turn` (0 when
absent) of task `task_id`.
A trace is matched to its task by `task_key`: None for its id, `metadata.<name>` for a
key of its metadata, `first_user_message` for its first query. Several traces of one
task are attempts at it (they share its `task_id`).

Nothing is dropped silently. A trace attempt that cannot be joined is kept as a dataset marked
unscored (`Dataset.unscored`, so that no judge sees it and readiness counts it) with its typed
cause, the first of: `not_joined`, its task is none of the references' (a near-miss name gets
"did you mean", for the first `MAX_HINTS` distinct names: `_hint`); `turns_differ`, its turns are not
the turns its task's references give (a turn without a reference, a referenced turn the trace
lacks); `state_not_reported` (below). Such a dataset keeps the trace's own task name as its
`task_id` (None when the trace has no task key: a task of its own), its turns (with the
references' truths where there are some, else an empty one) and none of the task fields. A
trace with no turn at all (no importer makes one) cannot be a dataset: it is reported only.
`JoinReport` lists them, and a task no trace ran.

Task fields: `goal`, `goal_rubric`, `expected_state` and `tool_policy` (`TASK_FIELDS`)
describe the task, so a reference of any turn may give them, and each goes to the dataset
of every trace of its task. One field given on two references of a task must have the same
value (compared as canonical JSON: key order aside, `1` and `1.0` differ); otherwise the
second is a `TraceError` naming it (``references[3].goal``). The rules of `Dataset` hold
per task: a `goal_rubric` needs a `goal` on some reference of the task, and a turn's
`ground_truth_agentic.tool_policy` must agree with the task's `tool_policy`.
End states: the state a trace's agent left is per trace, its metadata's `final_state` (any
JSON value; how each format carries metadata is in its importer's docstring). A trace of a
task with an `expected_state` and no `final_state` (or a null one) is kept unscored, `state_not_reported`; a
trace's `final_state` is ignored when its task expects none.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from fair_forge_core.importers.trace import FINAL_STATE, ImportedTrace, TraceError
from fair_forge_core.schemas import (
    Reference,
    ToolPolicy,
    Unscored,
    UnscoredCause,
    did_you_mean,
    error_message,
    field_path,
)

MAX_HINTS = 20
"""Distinct unknown task names a "did you mean" is looked for: the warnings a response carries
are about as many (`handler.validation.MAX_IMPORT_WARNINGS`)."""
MAX_HINT_TASKS = 500
"""Above this many tasks, a hint is only the name equal up to surrounding spaces and case (a
dictionary lookup); at most this many, also `did_you_mean`'s fuzzy match, a scan of the tasks
(≈ 50 µs each: `MAX_HINTS` scans stay well under a second of CPU)."""


@dataclass(frozen=True)
class Unjoined:
    """One trace attempt the join could not use: its id and why (`Unscored`: cause and detail)."""

    trace_id: str
    why: Unscored


@dataclass
class JoinReport:
    """What the join could not use: the trace attempts kept unscored (`unjoined`, in trace
    order), and the task ids of the references no trace ran."""

    unjoined: list[Unjoined] = field(default_factory=list)
    unused_tasks: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """One line per problem, for a person to read; when attempts were kept unscored, a first
        line counts them by cause (`tiers.cause_counts`), so that a cut list still says how many."""
        from fair_forge_core.tiers import unjoined_phrase

        lines = [
            f"trace {u.trace_id!r}: {u.why.detail}: kept as an unscored conversation ({u.why.cause})"
            for u in self.unjoined
        ]
        if self.unjoined:
            counts = Counter(u.why.cause for u in self.unjoined)
            lines.insert(0, f"{unjoined_phrase(counts)}: kept as unscored conversations, which readiness counts")
        return lines + [f"task {t!r} of the references matches no trace" for t in self.unused_tasks]


TASK_FIELDS = ("goal", "goal_rubric", "expected_state", "tool_policy")
"""The fields of a `Reference` that describe its whole task (module docstring)."""


def join_references(
    traces: list[ImportedTrace], references: list[Any], *, task_key: str | None = None
) -> tuple[list[dict[str, Any]], JoinReport]:
    """The `datasets` of a `/run` request, one per trace (with at least one turn), and the
    report: a trace joined to its task, or kept unscored with its cause (module docstring).
    `references` are `Reference`s or their JSON; one that is not valid is a `TraceError`
    naming its field (``references[3].ground_truth_assistant``)."""
    by_task, task_fields = _references_by_task(references)
    _check_task_key(traces, task_key)
    report = JoinReport()
    used: set[str] = set()
    hints: dict[str, str] = {}
    datasets = []
    for trace in traces:
        task = _task_of(trace, task_key)
        if task in by_task:
            used.add(task)
        why = _why_unjoined(trace, task, task_key, by_task, task_fields, hints)
        if why is not None:
            report.unjoined.append(Unjoined(trace.trace_id, why))
            if trace.turns:
                datasets.append(_dataset(trace, task, by_task.get(task or "", {}), {}, why))
            continue
        assert task is not None  # joined: its task is a reference's
        fields = task_fields[task]
        dataset = _dataset(trace, task, by_task[task], fields, None)
        if "expected_state" in fields:
            dataset["final_state"] = trace.metadata[FINAL_STATE]
        datasets.append(dataset)
    report.unused_tasks = [task for task in by_task if task not in used]
    return datasets, report


def unjoined_causes(datasets: list[dict[str, Any]]) -> dict[UnscoredCause, int]:
    """How many of `join_references`'s datasets are trace attempts kept unscored, by cause
    (sorted by cause; empty when every trace was joined)."""
    counted = Counter[UnscoredCause](d["unscored"]["cause"] for d in datasets if "unscored" in d)
    return dict(sorted(counted.items()))


def _why_unjoined(
    trace: ImportedTrace,
    task: str | None,
    task_key: str | None,
    by_task: dict[str, dict[int, Reference]],
    task_fields: dict[str, dict[str, Any]],
    hints: dict[str, str],
) -> Unscored | None:
    """Why `trace` (of `task`) cannot be joined, the first cause of the module docstring; None
    when it can. `hints` memoises "did you mean" by task name, for at most `MAX_HINTS` names."""
    if task is None:
        return Unscored(cause="not_joined", detail=f"it has no {task_key} as text, so it matches no task")
    if task not in by_task:
        if task not in hints and len(hints) < MAX_HINTS:
            hints[task] = _hint(task, by_task)
        return Unscored(
            cause="not_joined", detail=f"its task {task!r} matches no task of the references{hints.get(task, '')}"
        )
    expected, present = set(by_task[task]), set(range(len(trace.turns)))
    if present != expected:
        differences = []
        if extra := sorted(present - expected):
            differences.append(f"turn {_numbers(extra)} without a reference")
        if missing := sorted(expected - present):
            differences.append(f"turn {_numbers(missing)} of the references missing")
        return Unscored(
            cause="turns_differ",
            detail=f"its {len(trace.turns)} turn(s) differ from task {task!r}'s references: {'; '.join(differences)}",
        )
    if "expected_state" in task_fields[task] and trace.metadata.get(FINAL_STATE) is None:
        return Unscored(  # null is no state, as for a dataset's final_state
            cause="state_not_reported",
            detail=f"task {task!r} expects an end state and the trace's metadata has no final_state",
        )
    return None


def _hint(task: str, tasks: dict[str, Any]) -> str:
    """`" (did you mean 'x'?)"` for the task of the references `task` nearly names, or `""`: one
    equal to it up to surrounding spaces and case, else, among at most `MAX_HINT_TASKS` tasks,
    `did_you_mean`'s closest. Quoted (`{!r}`): a trailing space must show."""
    wanted = task.strip().casefold()
    same = next((name for name in tasks if name.strip().casefold() == wanted), None)
    if same is not None:
        return f" (did you mean {same!r}?)"
    return did_you_mean(task, tasks, shown_as="{!r}") if len(tasks) <= MAX_HINT_TASKS else ""


def _numbers(numbers: list[int]) -> str:
    """Turn numbers as `1, 2, 5` (at most 10, then how many more)."""
    shown = ", ".join(map(str, numbers[:10]))
    return shown if len(numbers) <= 10 else f"{shown} and {len(numbers) - 10} more"


def _dataset(
    trace: ImportedTrace,
    task: str | None,
    truths: dict[int, Reference],
    fields: dict[str, Any],
    why: Unscored | None,
) -> dict[str, Any]:
    """The dataset of `trace`: its turns with the references' `truths` (an empty truth for a turn
    without one: only a dataset kept unscored has such turns), the task's `fields`, and `why` it
    is unscored when it is."""
    conversation = []
    for number, turn in enumerate(trace.turns):
        truth = truths.get(number)
        batch: dict[str, Any] = {
            "qa_id": (truth.qa_id if truth is not None else None) or f"{task or trace.trace_id}-{number}",
            "query": turn.query,
            "assistant": turn.answer,
            "ground_truth_assistant": truth.ground_truth_assistant if truth is not None else "",
            "agentic": {"tools_used": turn.tools_used},
        }
        if truth is not None and truth.ground_truth_agentic is not None:
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
    if why is not None:
        dataset["unscored"] = why.model_dump()
    return dataset


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
