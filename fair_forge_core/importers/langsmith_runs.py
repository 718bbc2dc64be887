"""LangSmith runs → `ImportedTrace`s.

The input is a list of runs as `Client.list_runs` or an export gives them (one run object
is a list of one), each `{"id", "name", "run_type", "inputs", "outputs", "error",
"start_time", "trace_id", "parent_run_id", "dotted_order", "extra": {"metadata"}, …}`
(langsmith-sdk `python/langsmith/schemas.py` `Run`; docs.langchain.com/langsmith/run-data-format).
A run may hold its `child_runs` (a run tree): they are read as if listed after it. Errors
name the field from the root `runs` (``runs[4].outputs``, ``runs[0].child_runs[2].id``).

The rules (shared ones in `importers.trace`):

- runs are grouped by trace: `trace_id`, else the run id that starts `dotted_order`
  (`<start>Z<run id>.<child start>Z<child id>…`), else the trace of the parent, else the
  run's own id (as `Run` does for a root); in a `parent_run_id` cycle, the run that closes
  it. Within a trace runs are read in `dotted_order` (execution order, parents before
  children); if a run lacks it, in `start_time` order, said in a warning. A `start_time` is
  an ISO 8601 time compared in UTC: with an offset or `Z`, or without one (then UTC, as
  LangSmith writes it); equal times keep the input order. If a run it orders has a
  missing or unreadable `start_time`, nothing is sorted by time: the input order is kept
  (the root first) and a warning names that run. The root is the run without a parent in
  the input;
- a trace is one turn. Traces whose root's `extra.metadata` holds the same `session_id`,
  `thread_id` or `conversation_id` (LangSmith threads, docs.langchain.com/langsmith/threads)
  are one conversation, whose id is that value; its turns in root `start_time` order (as
  above: UTC; a root without a readable one keeps the input order, with a warning).
  (The run field `session_id` is the project, not the thread.) Otherwise the id is the
  trace's. Metadata is the first root's `extra.metadata`, but for `final_state` (the end
  state the agent left, `importers.references`), the last root's (in turn order) that has
  one; the assistant is its `assistant_id`, else the root's `name`;
- the query is read from the root's `inputs`: the last human message of `messages` (the
  new one, after any history), else `input`, `question` or `query`, else its only text;
  else the last human message of the first llm run's `messages` (a warning says so);
- each `llm` run is one step: its output message (`generations[0][0].message`, as LangChain
  writes it, `choices[0].message` (OpenAI), `message`, the last of `messages`, or the
  output itself) is read by `langchain_messages.read_ai_message` (LangChain or OpenAI
  shape): its text and its tool calls, parallel calls sharing the step;
- each `tool` run answers a call: the one whose id is its `extra.tool_call_id` (LangChain
  writes it there), `extra.metadata.tool_call_id`, `inputs.tool_call_id` or its output
  tool message's `tool_call_id` (several calls with one id, as some providers give, are
  answered in call order by the tool runs naming it: the first unanswered one each time; a
  warning, once per id, says when an id is given to a call while an earlier call with it is
  unanswered); else the first unanswered call of its `name` whose
  arguments equal its `inputs` (as canonical JSON: keys sorted, JSON text arguments parsed;
  `1` and `1.0` differ), else the first unanswered call of its name (LangChain and
  LangGraph run tools under another parent than the model, so the parent is not used).
  Calls are indexed by id, name and (name, arguments): each match is O(1).
  Its result is `outputs.output` (or `outputs`); a tool message's `content` with
  `status: "error"`, or the run's `error` text, is kept with `is_error`. A tool run that
  answers no call is a call of its own step (from its `name` and `inputs`), with a warning;
- runs inside a tool run are the tool's own work and are not read (warning for llm and
  tool runs); a retriever run outside a tool is context, not a call (warning); chain,
  prompt, parser and embedding runs are plumbing, skipped;
- what the turn spent (`agent_usage`) is its root run's: `prompt_tokens`, `completion_tokens`,
  `total_cost` (LangSmith totals a trace's on its root run) and its end_time − start_time;
  each missing or unreadable one is unknown (an invalid token count is said), and so is one
  over `agent_usage`'s bound (said: `importers.trace`);
- the answer is the root's `outputs` (the last AI message of `messages`, else `output`,
  `answer`, `response` or `result`, else its only text), else the last llm text.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fair_forge_core.importers.langchain_messages import (
    is_message,
    last_text,
    message_fields,
    read_ai_message,
    read_tool_message,
    text_of,
)
from fair_forge_core.importers.trace import (
    FINAL_STATE,
    NO_RESULT,
    ImportedTrace,
    RawCall,
    TraceError,
    TurnBuilder,
    parse_json_text,
    read_token_count,
)

_THREAD_KEYS = ("session_id", "thread_id", "conversation_id")
QUERY_KEYS = ("input", "question", "query")  # where a root run's inputs hold the query, in this order
_ANSWER_KEYS = ("output", "answer", "response", "result")
NEVER = datetime.max.replace(tzinfo=UTC)  # a sort key for what has no time (never used once all are read)


@dataclass
class _Run:
    raw: dict[str, Any]
    where: str
    id: str
    run_type: str
    parent: str | None
    trace: str | None


def traces_from_langsmith(data: Any) -> list[ImportedTrace]:
    """The conversations of the runs in `data` (see the module docstring)."""
    runs = _flatten(data if isinstance(data, list) else [data])
    by_id = {run.id: run for run in runs}
    trace_of = _trace_ids(runs, by_id)
    traces: dict[str, list[_Run]] = defaultdict(list)
    for run in runs:
        traces[trace_of[run.id]].append(run)
    threads: dict[str, list[list[_Run]]] = defaultdict(list)
    for trace_id, members in traces.items():
        root = _root(members, trace_id, by_id)
        metadata = _metadata(root)
        thread = next((str(metadata[k]) for k in _THREAD_KEYS if metadata.get(k) not in (None, "")), trace_id)
        threads[thread].append([root, *(run for run in members if run is not root)])
    return [_conversation(thread_id, group) for thread_id, group in threads.items()]


def _flatten(items: list[Any]) -> list[_Run]:
    """Every run, tree children after their parent, each with its path; ids must be unique."""
    runs: list[_Run] = []
    seen: dict[str, str] = {}
    stack: list[tuple[Any, str, _Run | None]] = [
        (item, f"runs[{n}]", None) for n, item in reversed(list(enumerate(items)))
    ]
    while stack:
        raw, where, parent = stack.pop()
        if not isinstance(raw, dict):
            raise TraceError(where, "a run is an object")
        run_id, run_type = raw.get("id"), raw.get("run_type")
        if not isinstance(run_id, str) or not run_id:
            raise TraceError(f"{where}.id", "must be a non-empty string")
        if run_id in seen:
            raise TraceError(f"{where}.id", f"the run {run_id} is also {seen[run_id]}")
        if not isinstance(run_type, str):
            raise TraceError(f"{where}.run_type", "must be a string (llm, tool, chain, …)")
        seen[run_id] = where
        parent_id = raw.get("parent_run_id") or (parent.id if parent else None)
        trace = raw.get("trace_id") or _dotted_root(raw.get("dotted_order")) or (parent.trace if parent else None)
        run = _Run(raw, where, run_id, run_type, str(parent_id) if parent_id else None, str(trace) if trace else None)
        runs.append(run)
        children = raw.get("child_runs") or []
        if not isinstance(children, list):
            raise TraceError(f"{where}.child_runs", "must be a list of runs")
        stack += [(child, f"{where}.child_runs[{n}]", run) for n, child in reversed(list(enumerate(children)))]
    return runs


def _dotted_root(dotted: Any) -> str | None:
    # Each segment is the start time then the run id (36 characters): the first is the root's.
    if not isinstance(dotted, str):
        return None
    return dotted.split(".", 1)[0][-36:] or None


def _trace_ids(runs: list[_Run], by_id: dict[str, _Run]) -> dict[str, str]:
    """Each run's trace (run id → trace id): its own `trace`, else its parent's, else its own
    id. Walked up iteratively and memoised, so each run is visited once; in a parent cycle the
    run that closes it stands as the trace, for every run that leads into it."""
    found: dict[str, str] = {}
    for run in runs:
        chain: list[_Run] = []
        on_chain: set[str] = set()
        node = run
        while node.id not in found and node.trace is None and node.parent in by_id and node.id not in on_chain:
            chain.append(node)
            on_chain.add(node.id)
            node = by_id[str(node.parent)]
        trace = found.get(node.id) or node.trace or node.id
        found[node.id] = trace
        for member in chain:
            found[member.id] = trace
    return found


def _root(members: list[_Run], trace_id: str, by_id: dict[str, _Run]) -> _Run:
    tops = [run for run in members if run.id == trace_id or run.parent not in by_id]
    return next((run for run in tops if run.id == trace_id), tops[0] if tops else members[0])


def _start_time(run: _Run, name: str = "start_time") -> datetime | None:
    """A run's `start_time` (or the time `name`) as a UTC time: ISO 8601 text, with an offset or
    `Z` (a time without one is UTC, as LangSmith writes it); `None` when missing or not such text."""
    value = run.raw.get(name)
    if not isinstance(value, str):
        return None
    try:
        start = datetime.fromisoformat(value)
        return start.astimezone(UTC) if start.tzinfo else start.replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        return None


def _metadata(run: _Run) -> dict[str, Any]:
    extra = run.raw.get("extra") or {}
    metadata = extra.get("metadata") if isinstance(extra, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def _conversation(thread_id: str, traces: list[list[_Run]]) -> ImportedTrace:
    warnings: list[str] = []
    if len(traces) > 1:
        order = _start_order([trace[0] for trace in traces])
        if isinstance(order, list):
            traces = [traces[n] for n in order]
        else:
            warnings.append(
                f"{order.where}.start_time: not an ISO 8601 time; the traces of the thread {thread_id!r} are read"
                " in input order"
            )
    first = traces[0][0]
    builder = TurnBuilder(first.where)
    builder.warnings += warnings
    for trace in traces:
        _turn(trace[0], trace, builder)
    metadata = dict(_metadata(first))
    states = [_metadata(trace[0])[FINAL_STATE] for trace in traces if FINAL_STATE in _metadata(trace[0])]
    if states:  # the end state is after the last turn: the latest root's that has one
        metadata[FINAL_STATE] = states[-1]
    assistant_id = metadata.get("assistant_id") or first.raw.get("name") or "agent"
    return ImportedTrace(thread_id, str(assistant_id), builder.turns(), metadata, builder.warnings)


def _start_order(runs: list[_Run]) -> list[int] | _Run:
    """The indices of `runs` in `start_time` order (a stable sort), or the first run whose
    `start_time` is not an ISO 8601 time."""
    starts = [_start_time(run) for run in runs]
    unread = next((run for run, start in zip(runs, starts, strict=True) if start is None), None)
    if unread is not None:
        return unread
    return sorted(range(len(runs)), key=lambda n: starts[n] or NEVER)


def _turn(root: _Run, members: list[_Run], builder: TurnBuilder) -> None:
    warnings = builder.warnings
    if root.parent is not None:
        warnings.append(f"{root.where}: the trace's root run is not in the input; this run stands for it")
    if all(isinstance(run.raw.get("dotted_order"), str) and run.raw["dotted_order"] for run in members):
        ordered = sorted(members, key=lambda run: str(run.raw["dotted_order"]))
    else:
        order = _start_order(members)
        if isinstance(order, list):
            warnings.append(f"{root.where}: runs of this trace lack dotted_order; read in start_time order")
            ordered = [members[n] for n in order]
        else:
            warnings.append(
                f"{root.where}: runs of this trace lack dotted_order, and {order.where}.start_time is not an"
                " ISO 8601 time; read in input order, the root first"
            )
            ordered = members
    builder.user(_query(root, ordered, warnings))
    builder.usage(root.where, **_root_usage(root, warnings))
    pending = PendingCalls()
    inside_tool: dict[str, str] = {}  # run id → where of the tool run it belongs to
    for run in ordered:
        if run.parent in inside_tool:
            inside_tool[run.id] = inside_tool[run.parent]
            if run.run_type in ("llm", "tool"):
                warnings.append(
                    f"{run.where}: {run.run_type} run inside the tool run {inside_tool[run.id]}; the tool's own work, not read"
                )
        elif run.run_type == "llm":
            text, calls = _llm_output(run, warnings)
            builder.assistant(text, run.where)
            for n, call in enumerate(calls):
                pending.add(call, f"{run.id}#{n}", warnings)
            builder.step(calls, run.where)
        elif run.run_type == "tool":
            inside_tool[run.id] = run.where
            _tool_run(run, pending, builder)
        elif run.run_type == "retriever":
            warnings.append(f"{run.where}: a retriever run outside any tool; read as context, not as a tool call")
    answer = final_answer(root.raw.get("outputs"), f"{root.where}.outputs")
    if answer:
        builder.assistant(answer, root.where)
    if root.raw.get("error"):
        warnings.append(f"{root.where}.error: the run failed: {_first_line(root.raw['error'])}")


def _root_usage(root: _Run, warnings: list[str]) -> dict[str, int | float | None]:
    """What the turn spent, from its root run (LangSmith totals a trace's tokens and cost on its
    root): `prompt_tokens`, `completion_tokens`, `total_cost` (a number ≥ 0, or its text as the
    API writes a decimal) and end_time − start_time; None for what is missing or unreadable."""
    raw, start, end = root.raw, _start_time(root), _start_time(root, "end_time")
    cost = raw.get("total_cost")
    if isinstance(cost, str):
        cost = parse_json_text(cost, None)
    valid_cost = isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0
    return {
        "input_tokens": read_token_count(raw.get("prompt_tokens"), f"{root.where}.prompt_tokens", warnings.append),
        "output_tokens": read_token_count(
            raw.get("completion_tokens"), f"{root.where}.completion_tokens", warnings.append
        ),
        "cost_usd": cost if valid_cost else None,
        "latency_s": (end - start).total_seconds() if start is not None and end is not None and end >= start else None,
    }


def _query(root: _Run, ordered: list[_Run], warnings: list[str]) -> str:
    inputs = root.raw.get("inputs")
    if isinstance(inputs, dict):
        query = last_text(inputs.get("messages"), f"{root.where}.inputs.messages", "human")
        texts = [value for value in inputs.values() if isinstance(value, str)]
        query = query or next((inputs[k] for k in QUERY_KEYS if isinstance(inputs.get(k), str)), None)
        query = query or (texts[0] if len(texts) == 1 else None)
        if query is not None:
            return query
    llm = next((run for run in ordered if run.run_type == "llm"), None)
    llm_inputs = llm.raw.get("inputs") if llm else None
    if llm and isinstance(llm_inputs, dict):
        query = last_text(llm_inputs.get("messages"), f"{llm.where}.inputs.messages", "human")
        if query is not None:
            warnings.append(f"{root.where}.inputs: no query; the last human message of {llm.where} taken")
            return query
    raise TraceError(f"{root.where}.inputs", "holds no query (messages, input, question, query or one text)")


def _llm_output(run: _Run, warnings: list[str]) -> tuple[str, list[RawCall]]:
    outputs, where = run.raw.get("outputs"), f"{run.where}.outputs"
    if not outputs:
        error = run.raw.get("error")
        warnings.append(
            f"{where}: an llm run without outputs" + (f" (it failed: {_first_line(error)})" if error else "")
        )
        return "", []
    if not isinstance(outputs, dict):
        raise TraceError(where, "must be an object")
    message, here, count = output_message(outputs, where)
    if count > 1:
        warnings.append(f"{where}: {count} candidate messages; the first is read")
    kind, fields, fields_where = message_fields(message, here)
    if kind != "ai":
        raise TraceError(here, "an llm run's output message is not an AI message")
    return read_ai_message(fields, fields_where, warnings)


def output_message(outputs: dict[str, Any], where: str) -> tuple[Any, str, int]:
    """`(message, its path, how many candidates)` of an llm run's outputs."""
    generations = outputs.get("generations")
    if isinstance(generations, list) and generations:
        nested = isinstance(generations[0], list)
        batch = generations[0] if nested else generations
        here = f"{where}.generations[0][0]" if nested else f"{where}.generations[0]"
        generation = batch[0] if batch else None
        if isinstance(generation, dict) and "message" in generation:
            return generation["message"], f"{here}.message", len(batch)
        if isinstance(generation, dict) and isinstance(generation.get("text"), str):  # a completion model
            return {"type": "ai", "content": generation["text"]}, here, len(batch)
    choices = outputs.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0].get("message"), f"{where}.choices[0].message", len(choices)
    if "message" in outputs:
        return outputs["message"], f"{where}.message", 1
    messages = outputs.get("messages")
    if isinstance(messages, list) and messages:
        return messages[-1], f"{where}.messages[{len(messages) - 1}]", 1
    if is_message(outputs):
        return outputs, where, 1
    raise TraceError(where, "holds no message (generations, choices, message or messages)")


@dataclass(eq=False)
class _Call:
    key: str  # what the `TurnBuilder` knows the call by: `<llm run id>#<n>`, unique even when call ids repeat
    answered: bool = False


class PendingCalls:
    """A trace's model tool calls, indexed so that a tool run finds its call in O(1): by call
    id, by tool name and by (name, canonical arguments); each index a queue in call order from
    which answered calls are dropped when they reach its head."""

    def __init__(self) -> None:
        self._by_id: dict[str, deque[_Call]] = defaultdict(deque)
        self._by_name: dict[str, deque[_Call]] = defaultdict(deque)
        self._by_arguments: dict[tuple[str, str], deque[_Call]] = defaultdict(deque)
        self._repeated: set[str] = set()

    def add(self, raw: RawCall, key: str, warnings: list[str]) -> None:
        """A call of an llm run; its `call_id` becomes `key` (its own id, if any, is indexed)."""
        call, name, call_id = _Call(key), str(raw.name), raw.call_id
        if isinstance(call_id, str) and call_id:
            queue = self._by_id[call_id]
            while queue and queue[0].answered:
                queue.popleft()
            if queue and call_id not in self._repeated:  # another call with this id is still unanswered
                self._repeated.add(call_id)
                warnings.append(
                    f"{raw.where}: the tool call id {call_id!r} is used by more than one call; tool runs with it"
                    " answer them in call order"
                )
            queue.append(call)
        self._by_name[name].append(call)
        arguments = _canonical(raw.arguments, parse=True)
        if arguments is not None:
            self._by_arguments[name, arguments].append(call)
        raw.call_id = key

    def take(self, ids: list[Any], name: str, inputs: Any) -> _Call | None:
        """The call a tool run answers, marked answered: the first unanswered call with the first of
        `ids` that has one; else the first unanswered call named `name` whose arguments are `inputs`;
        else the first unanswered call named `name`; else `None`."""
        for call_id in ids:
            if isinstance(call_id, str) and (call := _first(self._by_id.get(call_id))) is not None:
                return call
        arguments = _canonical(inputs, parse=False)
        call = _first(self._by_arguments.get((name, arguments))) if arguments is not None else None
        return call or _first(self._by_name.get(name))

    def take_id(self, call_id: str) -> _Call | None:
        """The first unanswered call with `call_id`, marked answered; `None` when none is left."""
        return _first(self._by_id.get(call_id))


def _first(queue: deque[_Call] | None) -> _Call | None:
    """The first unanswered call of `queue`, taken out of it and marked answered."""
    while queue:
        call = queue.popleft()
        if not call.answered:
            call.answered = True
            return call
    return None


def _tool_run(run: _Run, pending: PendingCalls, builder: TurnBuilder) -> None:
    raw, inputs = run.raw, run.raw.get("inputs")
    extra = raw.get("extra")
    content, is_error, message_id = _tool_result(raw, f"{run.where}.outputs")
    ids = [extra.get("tool_call_id") if isinstance(extra, dict) else None, _metadata(run).get("tool_call_id")]
    ids += [inputs.get("tool_call_id") if isinstance(inputs, dict) else None, message_id]
    call = pending.take(ids, str(raw.get("name")), inputs)
    if call is None:
        builder.warnings.append(f"{run.where}: a tool run that answers no model tool call; read as a call of its own")
        builder.step([RawCall(raw.get("name"), inputs, run.where, None, content, is_error)], run.where)
        return
    if content is not NO_RESULT:
        builder.result(call.key, content, run.where, is_error=is_error)


def _tool_result(raw: dict[str, Any], where: str) -> tuple[Any, bool, Any]:
    """`(result, is_error, tool_call_id of a tool message)` of a tool run."""
    error, outputs = raw.get("error"), raw.get("outputs")
    if isinstance(error, str) and error:
        return error, True, None
    if not isinstance(outputs, dict) or not outputs:
        return NO_RESULT, False, None
    value = outputs.get("output", outputs)
    if is_message(value):
        kind, fields, _ = message_fields(value, f"{where}.output")
        if kind == "tool":
            call_id, content, is_error = read_tool_message(fields)
            return content, is_error, call_id
    return value, False, None


def final_answer(outputs: Any, where: str) -> str | None:
    """The answer in a root run's (or a trace's) outputs: the text of the last AI message of
    `messages`; else the first of `output`, `answer`, `response`, `result` that is a string or
    an AI message; else the one string value when there is exactly one. None otherwise (not a
    dict, no such key, several string values); `where` names the field in a `TraceError`."""
    if not isinstance(outputs, dict):
        return None
    answer = last_text(outputs.get("messages"), f"{where}.messages", "ai")
    if answer is not None:
        return answer
    for key in _ANSWER_KEYS:
        value = outputs.get(key)
        if isinstance(value, str):
            return value
        if is_message(value):
            kind, fields, fields_where = message_fields(value, f"{where}.{key}")
            if kind == "ai":
                return text_of(fields.get("content") or "", f"{fields_where}.content")
    texts = [value for value in outputs.values() if isinstance(value, str)]
    return texts[0] if len(texts) == 1 else None


def _first_line(error: Any) -> str:
    return (str(error).splitlines() or [""])[0][:120]


def _canonical(value: Any, *, parse: bool) -> str | None:
    """`value` as canonical JSON text (keys sorted), what "equal arguments" compares: a call's
    arguments (`parse`: JSON text is read first) and a tool run's `inputs`. `None` when it is
    not JSON (text that does not parse, nesting too deep, values JSON cannot hold): then it
    equals nothing. Numbers compare as JSON text: `1` and `1.0` differ."""
    try:
        if parse and isinstance(value, str):
            value = json.loads(value)
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError):
        return None
