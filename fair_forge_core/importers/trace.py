"""What every importer produces (`ImportedTrace`), and the one way importers build it.

Every format comes down to the same events in the trace's order: a user message (a new
turn), a step of tool calls (one model response; its calls were made in parallel), a
tool's result (by call id, or carried by the call itself), and assistant text. An
importer reads its format and feeds those events to a `TurnBuilder`, which applies the
rules once for all formats:

- steps are numbered 1, 2, … within each turn, in the order they arrive;
- arguments are read by `read_arguments`: an object is kept; a JSON string holding an
  object is parsed (`""` is `{}`); anything else is kept as text in
  `unparsed_arguments` (with `parameters` `{}`) and reported in the trace's `warnings`;
- a result is read by `read_result` (JSON text is parsed, other text kept); results answer
  the calls with their id in order (an id used twice is reported); a call the
  trace marks as failed keeps its result (the error text) with `is_error: true`; a call
  never answered has no `result`;
- a turn's answer is its last non-empty assistant text; a turn without one gets the
  answer `""` (judged as no answer) and a warning; the OpenTelemetry span that text came
  from, when the importer names one (`trace_span`), is kept with it;
- what the agent spent on a turn (`agent_usage`, for `config.efficiency`) is summed over the
  model calls an importer reports for it (`TurnBuilder.usage`), each measure only when every
  one of them reports it (else it is left out: unknown, not 0); model calls before the first
  user message belong to no turn. A turn of no reported model call has no `agent_usage`. A
  measure whose turn total goes over its bound (`schemas.AGENT_USAGE_MAXIMA`, what a request
  may carry) is left out in the same way, with a warning naming the model call that took it
  over: a value no honest agent reports is treated as unreadable, so the import still gives a
  request the service takes, rather than one refused as a whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fair_forge_core.schemas.json_input import loads_json
from fair_forge_core.schemas.request import AGENT_USAGE_MAXIMA


class TraceError(ValueError):
    """A trace that cannot be read; `field` is where (``traces[0].messages[3].content``)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class FormatTraceError(TraceError):
    """A `TraceError` in an input its importer has recognised as its own although its shape is
    one other formats read (Langfuse's OTLP spans, `langfuse`): `formats.datasets_from_traces`
    raises it as it is, never naming the shape and another `--from`."""


class _AnswerSpan:
    """Where a turn's answer came from, kept out of `ImportedTurn`'s dataclass fields (a base
    that is no dataclass adds none), so that `dataclasses.asdict` of a turn — what the
    importers' golden fixtures hold — is the same whether a format has span ids or not."""

    trace_span: dict[str, str] | None = None
    """`{"trace_id", "span_id"}` (`schemas.TraceSpan`) of the OpenTelemetry span whose output gave
    the answer, where the format has such ids (the `otel` importer); else None."""


@dataclass
class ImportedTurn(_AnswerSpan):
    """One user query and what the agent did about it: its tool calls (each with `step`,
    shared by calls made in parallel) and its final answer."""

    query: str
    answer: str
    tools_used: list[dict[str, Any]] = field(default_factory=list)
    agent_usage: dict[str, int | float] | None = None
    """What the agent spent on the turn (`schemas.AgentUsage` fields), where the format carries it."""


@dataclass
class ImportedTrace:
    """One conversation of a trace file: its id (what references are matched on, unless the
    caller names another key), the agent that ran it, its turns, its raw metadata, and what
    the importer had to decide about it (`warnings`, one sentence each, naming the field)."""

    trace_id: str
    assistant_id: str
    turns: list[ImportedTurn]
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


FINAL_STATE = "final_state"
"""The metadata key of a trace that holds the end state its agent left (`importers.references`)."""

NO_RESULT: Any = object()
"""A call whose result is not (or not yet) known: `ToolCall.result` stays absent."""


@dataclass
class RawCall:
    """One tool call as a trace holds it, before `TurnBuilder` reads it. `where` is its field
    path, for errors and warnings; `result` is `NO_RESULT` unless the call carries it."""

    name: Any
    arguments: Any
    where: str
    call_id: str | None = None
    result: Any = NO_RESULT
    is_error: bool = False


def read_arguments(raw: Any, where: str, warnings: list[str]) -> tuple[dict[str, Any], str | None]:
    """`(parameters, unparsed_arguments)` of a call: see the module docstring. `None` is `{}`."""
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    try:
        text = raw if isinstance(raw, str) else json.dumps(raw)
    except (ValueError, RecursionError):  # NaN or nesting deeper than the encoder goes
        text = f"<{type(raw).__name__} that cannot be written as JSON>"
    parsed = parse_json_text(text, None)
    if isinstance(parsed, dict):
        return parsed, None
    warnings.append(f"{where}: arguments are not a JSON object; kept as text in unparsed_arguments (no parameters)")
    return {}, text


def parse_json_text(text: str, default: Any) -> Any:
    """The JSON value `text` holds, or `default` when it holds none: malformed JSON, nesting
    too deep to parse, NaN / ±Infinity or a lone surrogate (`schemas.loads_json`'s rules, so
    nothing an importer parses could be refused later in the request)."""
    try:
        return loads_json(text)
    except (ValueError, RecursionError):
        return default


def read_result(content: Any) -> Any:
    """A tool's output as the result of its call: a non-empty list of content parts (objects
    that each have a `type`) is joined to its text; text holding JSON is parsed (`"40"` is
    `40`, see `parse_json_text`); other text, and any other value (a list of records
    included), is kept as it is."""
    if isinstance(content, list) and content and all(isinstance(part, dict) and "type" in part for part in content):
        content = "".join(str(part.get("text", "")) for part in content)
    if isinstance(content, str):
        return parse_json_text(content, content)
    return content


def read_text(content: Any, where: str) -> str:
    """Message content as text: a string, or the `text` of a list of content parts (parts of
    other types, such as images, are left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text")
        )
    raise TraceError(where, "must be a string or a list of content parts")


def read_token_count(value: Any, where: str, warn: Callable[[str], None]) -> int | None:
    """A token count for `TurnBuilder.usage`: an integer ≥ 0, else None (not reported); a value
    that is there but no such integer is said (`warn`, naming `where`)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if value is not None:
        warn(f"{where}: not an integer ≥ 0; the turn's token count is unknown")
    return None


class TurnBuilder:
    """The turns of one trace, built from its events in order (see the module docstring).

    `where` names the trace (``traces[2]``) in errors and warnings; `warnings` collects
    what was decided (unparsed arguments, turns without an answer).
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self.warnings: list[str] = []
        self._turns: list[ImportedTurn] = []
        self._answers: list[str | None] = []
        self._spans: list[dict[str, str] | None] = []  # the span of each turn's answer (`ImportedTurn.trace_span`)
        self._calls: dict[str, list[dict[str, Any]]] = {}  # call id → its calls in order, for the results
        self._step = 0
        self._unknown: set[str] = set()  # measures a model call of the current turn did not report

    def user(self, query: str) -> None:
        """A user message: a new turn."""
        self._turns.append(ImportedTurn(query=query, answer=""))
        self._answers.append(None)
        self._spans.append(None)
        self._step = 0
        self._unknown = set()

    def assistant(self, text: str, where: str, *, span: dict[str, str] | None = None) -> None:
        """Assistant text: the turn's answer, unless later text replaces it (blank text does not);
        `span` (`ImportedTurn.trace_span`) is where the text came from, replaced with it."""
        self._current(where)
        if text.strip():
            self._answers[-1] = text
            self._spans[-1] = span

    def step(self, calls: list[RawCall], where: str) -> None:
        """One step: calls made together, which share a `step` number."""
        turn = self._current(where)
        if not calls:
            return
        self._step += 1
        for raw in calls:
            if not isinstance(raw.name, str) or not raw.name:
                raise TraceError(raw.where, "a tool call needs the tool's name")
            parameters, unparsed = read_arguments(raw.arguments, raw.where, self.warnings)
            call: dict[str, Any] = {"tool_name": raw.name, "parameters": parameters, "step": self._step}
            if unparsed is not None:
                call["unparsed_arguments"] = unparsed
            if raw.result is not NO_RESULT:
                self._set_result(call, raw.result, raw.is_error)
            if raw.call_id is not None:
                same_id = self._calls.setdefault(raw.call_id, [])
                if same_id:
                    self.warnings.append(
                        f"{raw.where}: the call id {raw.call_id!r} was used before; results answer its calls in order"
                    )
                same_id.append(call)
            turn.tools_used.append(call)

    def usage(self, where: str, **measures: int | float | None) -> None:
        """What one model call of the current turn spent (`schemas.AgentUsage` names; None: not
        reported), added to the turn's `agent_usage` (see the module docstring). Before any user
        message it belongs to no turn and is dropped. A total over its bound makes the measure
        unknown for the turn, said once naming `where` (the model call); the value itself is not
        shown (a 4,300-digit count cannot even be written as text)."""
        if not self._turns:
            return
        turn = self._turns[-1]
        spent = turn.agent_usage if turn.agent_usage is not None else {}
        for name, value in measures.items():
            total = None if value is None or name in self._unknown else spent.get(name, 0) + value
            if total is not None and total > AGENT_USAGE_MAXIMA[name]:
                self.warnings.append(
                    f"{where}: {name} takes the turn's total over {AGENT_USAGE_MAXIMA[name]:,.0f}, the most"
                    f" agent_usage.{name} may be; the turn's {name} is unknown"
                )
                total = None
            if total is None:
                self._unknown.add(name)
                spent.pop(name, None)
            else:
                spent[name] = total
        turn.agent_usage = spent or None

    def result(self, call_id: Any, content: Any, where: str, *, is_error: bool = False, replaces: bool = False) -> None:
        """A tool's output, for the first call with `call_id` that has no result yet (an id no
        call has is an error). When all its calls are answered: with `replaces` (the format
        records a result twice, the second being what the model saw) the last one's result is
        replaced, its error flag kept; else this result is left out, with a warning."""
        if not isinstance(call_id, str) or call_id not in self._calls:
            raise TraceError(where, f"no tool call has the id {call_id!r}")
        calls = self._calls[call_id]
        for call in calls:
            if "result" not in call:
                self._set_result(call, content, is_error)
                return
        if replaces:
            self._set_result(calls[-1], content, is_error)
        else:
            self.warnings.append(f"{where}: a second result for the call id {call_id!r}; the first one is kept")

    def turns(self) -> list[ImportedTurn]:
        """The finished turns; an error when the trace holds no user message."""
        if not self._turns:
            raise TraceError(self.where, "holds no user message: there is no query to evaluate")
        for turn, span in zip(self._turns, self._spans, strict=True):
            turn.trace_span = span
        for number, (turn, answer) in enumerate(zip(self._turns, self._answers, strict=True)):
            if answer is None:
                self.warnings.append(
                    f"{self.where}: turn {number} ({turn.query[:60]!r}) has no final answer; judged as an empty answer"
                )
            turn.answer = answer or ""
        return self._turns

    def _current(self, where: str) -> ImportedTurn:
        if not self._turns:
            raise TraceError(where, "an agent message or tool call before any user message")
        return self._turns[-1]

    @staticmethod
    def _set_result(call: dict[str, Any], content: Any, is_error: bool) -> None:
        call["result"] = read_result(content)
        if is_error:
            call["is_error"] = True


def traces_of_message_lists(
    data: Any, is_message: Callable[[Any], bool], read_messages: Callable[[list[Any], str, TurnBuilder], None]
) -> list[ImportedTrace]:
    """The traces of a file of message lists (the `openai` and `langchain` formats): a list
    of traces, one trace, or one bare list of messages (`is_message` of its first item).

    A trace is `{"id", "messages", "metadata"?, "assistant_id"?}` or a bare list of messages;
    its id defaults to `trace-<index>`, its `assistant_id` to `metadata.assistant_id`, then
    `agent`; `metadata.final_state` (any JSON value) is the end state the agent left. Traces are named `traces[i]`, their messages `traces[i].messages[j]` (`traces[i][j]`
    for a bare list, `traces[j]` when the whole input is one); `read_messages` feeds them to
    the trace's `TurnBuilder`.
    """
    if isinstance(data, list) and data and is_message(data[0]):
        return [_message_list_trace(data, "traces", 0, read_messages)]
    items = data if isinstance(data, list) else [data]
    return [_message_list_trace(item, f"traces[{index}]", index, read_messages) for index, item in enumerate(items)]


def _message_list_trace(
    item: Any, where: str, index: int, read_messages: Callable[[list[Any], str, TurnBuilder], None]
) -> ImportedTrace:
    messages_where = where if isinstance(item, list) else f"{where}.messages"
    if isinstance(item, list):
        item = {"id": f"trace-{index}", "messages": item}
    if not isinstance(item, dict) or not isinstance(item.get("messages"), list):
        raise TraceError(where, "a trace is a list of messages or an object with a `messages` list")
    trace_id = item.get("id", f"trace-{index}")
    metadata = item.get("metadata") or {}
    if not isinstance(trace_id, str) or not trace_id:
        raise TraceError(f"{where}.id", "must be a non-empty string")
    if not isinstance(metadata, dict):
        raise TraceError(f"{where}.metadata", "must be an object")
    assistant_id = item.get("assistant_id") or metadata.get("assistant_id") or "agent"
    if not isinstance(assistant_id, str):
        raise TraceError(f"{where}.assistant_id", "must be a string")
    builder = TurnBuilder(where)
    read_messages(item["messages"], messages_where, builder)
    turns = builder.turns()
    return ImportedTrace(trace_id, assistant_id, turns, metadata, builder.warnings)


Node = TypeVar("Node", bound=Hashable)


def nearest_marked(
    nodes: Iterable[Node], parent_of: Callable[[Node], Node | None], marked: Callable[[Node], bool]
) -> dict[Node, Node | None]:
    """For every node of a tree given by its parent links (`parent_of`: a node's parent, None
    for a root or a parent not in the input): the first `marked` node on its way up, itself
    included; None when the way up ends first, or closes a cycle first (a cycle ends every walk
    that enters it, whatever the order the nodes come in).

    The one walk up of every importer (a span inside a tool span, …): each walk stops at a node
    already decided and every node it passed takes the same answer, so `parent_of` is called
    once per node and the work is linear in the nodes, however long a chain (a walk per node
    to the root was quadratic: 20,000 observations in one chain took 35 s). Iterative: no
    recursion limit on a deep chain."""
    found: dict[Node, Node | None] = {}
    for start in nodes:
        passed: list[Node] = []
        on_way: set[Node] = set()
        node: Node | None = start
        while node is not None and node not in found and node not in on_way and not marked(node):
            passed.append(node)
            on_way.add(node)
            node = parent_of(node)
        # a root reached, or a cycle closed, before a marked node; else a decided or marked node
        answer = None if node is None or node in on_way else found.get(node, node)
        for member in passed:
            found[member] = answer
        if node is not None and node not in on_way and node not in found:
            found[node] = node  # a marked node is its own answer
    return found


def object_list(raw: Any, where: str) -> list[dict[str, Any]]:
    """`raw` when it is a list of objects, [] when it is null; else a `TraceError` naming `where`."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise TraceError(where, "must be a list of objects")
    return raw
