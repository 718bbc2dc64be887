"""OpenAI Agents SDK trace exports → `ImportedTrace`s.

Input: the payload the SDK's `BackendSpanExporter` posts, `{"data": [...]}` (fields named
`data[i]…`), or a list, such as a JSON Lines file, of trace and span objects or of such
payloads (`items[i]…`, `items[i].data[j]…`). The objects are what `Trace.export()` and
`Span.export()` give (openai/openai-agents-python, src/agents/tracing/traces.py, spans.py,
span_data.py): `{"object": "trace", "id", "workflow_name", "group_id", "metadata"}` and
`{"object": "trace.span", "id", "trace_id", "parent_id", "started_at", "ended_at",
"span_data": {"type", …}, "error": {"message", "data"} | null}`. The rules (shared ones in
`importers.trace`):

- Traces sharing a `group_id` (the SDK's "chat thread ID") are one conversation, whose id
  is that group_id; a trace without one is a conversation, whose id is the trace's. Its
  metadata is its traces' `metadata` merged, the earliest trace's value kept when two
  differ (said), but for `final_state` (the end state the agent left,
  `importers.references`): the latest trace's that has one. Conversations come in the order of their first trace object in the
  input; spans whose trace object is missing make a trace of their own, last (said).
- A conversation's spans are read in `started_at` order (the exporter sends a span when it
  ends, children before parents). Spans inside a `function` span (an agent used as a tool)
  are that tool's own work: skipped, and said.
- Turns: a `generation` span's `input` is the chat-completions messages sent to the model;
  its last `user` message is the query. A generation starts a new turn when that text
  differs from the current query, when its input holds more user messages than any
  earlier generation's did (a new run of the conversation, even with the same words), or
  when it is the first generation of its trace (a new `Runner.run` of the group, even
  without the history and with the same words) and only `system`/`developer` messages
  follow its last user message. A trace whose first generation's input holds assistant or
  tool messages after its last user message continues the current turn (a run resumed in
  a new trace re-sends the answered message and the run's items).
- A generation's `output` (assistant messages, read as `openai_chat` reads them) gives
  assistant text (its `refusal` when it has no text) and `tool_calls` (a list, or null),
  which are one step.
  The answer is the turn's last assistant text (usually its last generation's).
- A generation's `usage` (`input_tokens`, `output_tokens`) is what the turn spent on that model
  call: the turn's `agent_usage` sums them (`TurnBuilder.usage`: a measure one of its
  generations lacks, or whose total is over `agent_usage`'s bound, is unknown for the turn, the
  latter said). Generations inside a function span are skipped,
  their usage with them. Latency and cost are not imported (the SDK exports no cost).
- A `function` span carries no call id: it answers the first unanswered call of its name
  of the latest generation under the same `agent` span (the SDK starts parallel calls in
  call order). Its `output` is the result (the SDK exports `str(output)`, so a dict comes
  back as Python text, kept as text). A span with `error` makes the call `is_error`, its
  result the output the model got or, without one, the error's `message: data.error`. A
  function span that answers no call is kept as a call of its own step (its `input` as
  the arguments), and said.
- A `handoff` span answers the call named `transfer_to_<to_agent>` (the SDK's default
  handoff tool name: lower case, other characters than [a-z0-9_] as `_`) with `{"assistant": to_agent}` (what the SDK returns to the model);
  no such call is said. `assistant_id` is `metadata.assistant_id`, else the first (entry)
  agent's name, the agents it handed off to being part of it (said); else `"agent"`.
- Said in warnings: a triggered `guardrail`, a span with an `error`, spans with no
  conversation content (custom spans other than the SDK's own `task`/`turn`, `mcp_tools`,
  speech, …; a custom span is the SDK's own when its `data.sdk_span_type` is the text `task`
  or `turn`, whatever else its `data` holds), spans whose `parent_id` is not in the input
  (read as top-level).
- Missing content is an error, never a guess: a `response` span (Responses API, the SDK's
  default) exports only a `response_id`; a generation's `input`/`output` are null when
  `trace_include_sensitive_data` is False. Both are a `TraceError` naming the field.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from fair_forge_core.importers.openai_chat import assistant_text, tool_calls
from fair_forge_core.importers.trace import (
    FINAL_STATE,
    NO_RESULT,
    ImportedTrace,
    RawCall,
    TraceError,
    TurnBuilder,
    read_text,
    read_token_count,
)

_CONTEXT_ROLES = frozenset({"system", "developer"})  # instructions: not part of the conversation's turns
_SDK_STRUCTURE = frozenset({"task", "turn"})  # custom spans the runner makes itself: structure, no content
_REDACTED = "the SDK leaves it out of the export when trace_include_sensitive_data is False"
_END = datetime.max.replace(tzinfo=UTC)


@dataclass
class _Span:
    where: str
    id: str
    trace_id: str
    parent_id: str | None
    start: datetime
    type: str
    data: dict[str, Any]
    error: dict[str, Any] | None


@dataclass
class _Trace:
    where: str
    id: str
    key: tuple[str, str]  # ("group", group_id) or ("trace", id): what makes one conversation
    metadata: dict[str, Any]
    spans: list[_Span] = field(default_factory=list)
    has_object: bool = True


def traces_from_openai_agents(data: Any) -> list[ImportedTrace]:
    """The conversations of an export (see the module docstring)."""
    objects = _objects(data)
    traces: dict[str, _Trace] = {}
    for where, item in objects:
        if item.get("object") == "trace":
            trace = _trace(item, where)
            if trace.id in traces:
                raise TraceError(f"{where}.id", f"a second trace object with the id {trace.id!r}")
            traces[trace.id] = trace
        elif item.get("object") != "trace.span":
            raise TraceError(f"{where}.object", "must be 'trace' or 'trace.span'")
    span_ids: set[str] = set()
    for where, item in objects:
        if item.get("object") == "trace.span":
            trace_id, span = _span(item, where)
            if span.id in span_ids:
                raise TraceError(f"{where}.id", f"a second span with the id {span.id!r}")
            span_ids.add(span.id)
            if trace_id not in traces:
                traces[trace_id] = _Trace(where, trace_id, ("trace", trace_id), {}, has_object=False)
            traces[trace_id].spans.append(span)
    conversations: dict[tuple[str, str], list[_Trace]] = defaultdict(list)
    for trace in traces.values():
        conversations[trace.key].append(trace)
    return [_conversation(group) for group in conversations.values()]


def _objects(data: Any) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(data, dict):
        if not isinstance(data.get("data"), list):
            raise TraceError("data", "must be a list of trace and span objects (the exporter's payload)")
        return [_object(item, f"data[{n}]") for n, item in enumerate(data["data"])]
    if not isinstance(data, list):
        raise TraceError("items", 'an export is {"data": [...]} or a list of trace and span objects')
    found = []
    for n, item in enumerate(data):
        if isinstance(item, dict) and "object" not in item and isinstance(item.get("data"), list):
            found += [_object(inner, f"items[{n}].data[{m}]") for m, inner in enumerate(item["data"])]
        else:
            found.append(_object(item, f"items[{n}]"))
    return found


def _object(item: Any, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(item, dict):
        raise TraceError(where, "must be a trace or span object")
    return where, item


def _trace(item: dict[str, Any], where: str) -> _Trace:
    trace_id, group, metadata = item.get("id"), item.get("group_id"), item.get("metadata")
    if not isinstance(trace_id, str) or not trace_id:
        raise TraceError(f"{where}.id", "must be a non-empty string")
    if group is not None and not isinstance(group, str):
        raise TraceError(f"{where}.group_id", "must be a string or null")
    if metadata is not None and not isinstance(metadata, dict):
        raise TraceError(f"{where}.metadata", "must be an object or null")
    return _Trace(where, trace_id, ("group", group) if group else ("trace", trace_id), metadata or {})


def _span(item: dict[str, Any], where: str) -> tuple[str, _Span]:
    for name in ("id", "trace_id"):
        if not isinstance(item.get(name), str) or not item[name]:
            raise TraceError(f"{where}.{name}", "must be a non-empty string")
    parent, data, error = item.get("parent_id"), item.get("span_data"), item.get("error")
    if parent is not None and not isinstance(parent, str):
        raise TraceError(f"{where}.parent_id", "must be a string or null")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise TraceError(f"{where}.span_data", "must be an object with a `type`")
    if error is not None and not isinstance(error, dict):
        raise TraceError(f"{where}.error", "must be an object or null")
    started = item.get("started_at")
    try:
        start = datetime.fromisoformat(started) if isinstance(started, str) else None
    except ValueError:
        start = None
    if start is None:
        raise TraceError(f"{where}.started_at", "must be an ISO 8601 time")
    start = start if start.tzinfo else start.replace(tzinfo=UTC)
    return item["trace_id"], _Span(where, item["id"], item["trace_id"], parent, start, data["type"], data, error)


def _conversation(traces: list[_Trace]) -> ImportedTrace:
    first = traces[0]
    spans = sorted((span for trace in traces for span in trace.spans), key=lambda span: span.start)
    if not spans:
        raise TraceError(first.where, f"trace {first.id!r} has no spans in the input: nothing to read")
    reader = _Reader(first.where, spans)
    metadata: dict[str, Any] = {}
    for trace in sorted(traces, key=lambda trace: min((span.start for span in trace.spans), default=_END)):
        if not trace.has_object:
            reader.warn(f"{trace.where}: no trace object has this span's trace_id {trace.id!r}; read without metadata")
        elif not trace.spans:
            reader.warn(f"{trace.where}: trace {trace.id!r} has no spans in the input")
        for name, value in trace.metadata.items():
            if name not in metadata or name == FINAL_STATE:  # the end state: the latest trace's
                metadata[name] = value
            elif metadata[name] != value:
                reader.warn(f"{trace.where}.metadata.{name}: differs from an earlier trace's; {metadata[name]!r} kept")
    reader.read(spans)
    assistant_id = metadata.get("assistant_id")
    if assistant_id is not None and (not isinstance(assistant_id, str) or not assistant_id):
        raise TraceError(f"{first.where}.metadata.assistant_id", "must be a non-empty string")
    turns = reader.builder.turns()
    return ImportedTrace(first.key[1], reader.finish(assistant_id), turns, metadata, reader.builder.warnings)


def _user_messages(messages: list[Any], here: str) -> tuple[int, int | None, bool]:
    """(how many user messages a generation's input `messages` has, the index of the last one or
    None, whether a message other than context follows it: the model already answered it, as in
    a resumed run or after a tool's result). `here` is the span data's field."""
    users, last, answered = 0, None, False
    for n, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise TraceError(f"{here}.input[{n}]", "a message is an object with a `role` (text)")
        if message["role"] == "user":
            users, last, answered = users + 1, n, False
        elif message["role"] not in _CONTEXT_ROLES:
            answered = True  # the model already answered the last user message (a run resumed, or a tool's result)
    return users, last, answered


class _Reader:
    """The spans of one conversation, read in order into a `TurnBuilder`."""

    def __init__(self, where: str, spans: list[_Span]) -> None:
        self.where = where
        self.builder = TurnBuilder(where)
        self._by_id = {span.id: span for span in spans}
        self._scopes: dict[str, tuple[str | None, bool]] = {}  # span id → (enclosing agent span, inside a tool)
        # agent span → tool name → the keys of its latest generation's unanswered calls of that name, in call order
        self._pending: dict[str | None, dict[str, deque[str]]] = {}
        self._query: str | None = None
        self._users = 0
        self._traces_read: set[str] = set()  # traces whose first generation has been read
        self._agents: list[str] = []
        self._skipped: Counter[str] = Counter()
        self._inside = self._orphans = 0

    def warn(self, warning: str) -> None:
        self.builder.warnings.append(warning)

    def read(self, spans: list[_Span]) -> None:
        for span in spans:
            agent, inside = self._scope(span)
            kind, name = span.type, span.data.get("name")
            if inside:
                self._inside += 1
                continue
            if kind == "agent":
                if not isinstance(name, str) or not name:
                    raise TraceError(f"{span.where}.span_data.name", "an agent span needs the agent's name")
                if name not in self._agents:
                    self._agents.append(name)
            elif kind == "generation":
                self._generation(span, agent)
            elif kind == "function":
                self._function(span, agent)
                continue  # its error is its call's is_error
            elif kind == "handoff":
                self._handoff(span, agent)
            elif kind == "response":
                raise TraceError(
                    f"{span.where}.span_data",
                    "a `response` span (a Responses API model call) exports only its response_id: the query, the"
                    " answer and the model's tool calls are not in the export; trace a Chat Completions model"
                    " (set_default_openai_api('chat_completions')) to import them",
                )
            elif kind == "guardrail":
                if span.data.get("triggered") is True:
                    self.warn(f"{span.where}: guardrail {name!r} was triggered")
            elif not (kind == "custom" and _sdk_span_type(span.data) in _SDK_STRUCTURE):
                self._skipped[f"custom {name!r}" if kind == "custom" else kind] += 1
            if span.error is not None:
                self.warn(f"{span.where}.error: the {kind} span failed: {_error_text(span.error)}")

    def finish(self, assistant_id: str | None) -> str:
        """The assistant's id, `assistant_id` or the entry agent's name; what was skipped is said."""
        if self._inside:
            self.warn(f"{self.where}: {self._inside} span(s) inside function spans (tools' own work) skipped")
        if self._orphans:
            self.warn(f"{self.where}: {self._orphans} span(s) name a parent_id not in the input; read as top-level")
        if self._skipped:
            kinds = ", ".join(f"{kind} ({count})" for kind, count in self._skipped.items())
            self.warn(f"{self.where}: spans with no conversation content skipped: {kinds}")
        if assistant_id is not None:
            return assistant_id
        if not self._agents:
            self.warn(f"{self.where}: no agent span; assistant_id is 'agent'")
            return "agent"
        if len(self._agents) > 1:
            names = ", ".join(repr(name) for name in self._agents)
            self.warn(f"{self.where}: agents {names} took part (handoffs); assistant_id is the entry agent")
        return self._agents[0]

    def _scope(self, span: _Span) -> tuple[str | None, bool]:
        # Walk up to a known ancestor once, then fill in downwards: no recursion, linear overall.
        chain, node = [], span
        while node.id not in self._scopes:
            chain.append(node)
            self._scopes[node.id] = (None, False)  # a parent cycle stops here
            parent = self._by_id.get(node.parent_id) if node.parent_id else None
            if parent is None:
                self._orphans += node.parent_id is not None
                break
            node = parent
        for node in reversed(chain):
            parent = self._by_id.get(node.parent_id) if node.parent_id else None
            if parent is not None:
                agent, inside = self._scopes[parent.id]
                self._scopes[node.id] = (
                    parent.id if parent.type == "agent" else agent,
                    inside or parent.type == "function",
                )
        return self._scopes[span.id]

    def _generation(self, span: _Span, agent: str | None) -> None:
        here = f"{span.where}.span_data"
        messages, output = span.data.get("input"), span.data.get("output")
        if messages is None:
            raise TraceError(f"{here}.input", f"the messages sent to the model are missing: {_REDACTED}")
        if not isinstance(messages, list):
            raise TraceError(f"{here}.input", "must be a list of chat-completions messages")
        users, last, answered = _user_messages(messages, here)
        first_of_trace = span.trace_id not in self._traces_read
        self._traces_read.add(span.trace_id)
        if last is not None:
            query = read_text(messages[last].get("content"), f"{here}.input[{last}].content")
            if query != self._query or users > self._users or (first_of_trace and not answered):
                self.builder.user(query)
                self._query = query
            self._users = max(self._users, users)
        self.builder.usage(f"{here}.usage", **_tokens(span.data.get("usage"), f"{here}.usage", self.warn))
        if output is None and span.error is not None:
            return  # the model call failed: said with the span's error
        if output is None:
            raise TraceError(f"{here}.output", f"the model's messages are missing: {_REDACTED}")
        if not isinstance(output, list):
            raise TraceError(f"{here}.output", "must be a list of assistant messages")
        calls = self._answers(output, here)
        # Results are matched by this importer's own keys: function spans carry no call id.
        keyed = [replace(call, call_id=f"{span.id}#{n}") for n, call in enumerate(calls)]
        self.builder.step(keyed, span.where)
        pending: dict[str, deque[str]] = defaultdict(deque)
        for call in keyed:
            pending[str(call.name)].append(str(call.call_id))
        self._pending[agent] = pending

    def _answers(self, output: list[Any], here: str) -> list[RawCall]:
        """Record the assistant messages of a generation's `output` (`here` is its span data's
        field): each one's text, or its refusal when it has no text; the tool calls they make,
        in order."""
        calls: list[RawCall] = []
        for n, message in enumerate(output):
            where = f"{here}.output[{n}]"
            if not isinstance(message, dict) or message.get("role") != "assistant":
                raise TraceError(where, "a generation's output is assistant messages")
            text, refusal = assistant_text(message, where), message.get("refusal")
            self.builder.assistant(refusal if not text.strip() and isinstance(refusal, str) else text, where)
            if message.get("tool_calls") is not None and not isinstance(message["tool_calls"], list):
                raise TraceError(f"{where}.tool_calls", "must be a list of tool calls or null")
            calls += tool_calls(message, where)
        return calls

    def _function(self, span: _Span, agent: str | None) -> None:
        name, output = span.data.get("name"), span.data.get("output")
        if not isinstance(name, str) or not name:
            raise TraceError(f"{span.where}.span_data.name", "a function span needs the tool's name")
        is_error = span.error is not None
        result = output if output is not None else _error_text(span.error) if span.error is not None else NO_RESULT
        key = self._take(agent, name)
        if key is None:
            self.warn(f"{span.where}: function span {name!r} answers no call of its agent's latest generation; kept")
            where = f"{span.where}.span_data.input"
            self.builder.step([RawCall(name, span.data.get("input"), where, result=result, is_error=is_error)], where)
        elif result is not NO_RESULT:
            self.builder.result(key, result, span.where, is_error=is_error)

    def _handoff(self, span: _Span, agent: str | None) -> None:
        target = span.data.get("to_agent")
        name = f"transfer_to_{re.sub(r'[^a-zA-Z0-9_]', '_', target).lower()}" if isinstance(target, str) else None
        key = self._take(agent, name)
        if key is None:
            self.warn(f"{span.where}: the handoff to {target!r} answers no call named {name!r}; no result given")
        else:
            self.builder.result(key, {"assistant": target}, span.where)

    def _take(self, agent: str | None, name: str | None) -> str | None:
        """The key of the first unanswered call named `name` of `agent`'s latest generation."""
        queue = self._pending.get(agent, {}).get(name) if name is not None else None
        return queue.popleft() if queue else None


def _tokens(usage: Any, where: str, warn: Callable[[str], None]) -> dict[str, int | None]:
    """A generation's `usage` as `TurnBuilder.usage` takes it: `input_tokens` and
    `output_tokens` (`read_token_count`: None when absent or invalid, the latter said)."""
    tokens = usage if isinstance(usage, dict) else {}
    return {
        name: read_token_count(tokens.get(name), f"{where}.{name}", warn) for name in ("input_tokens", "output_tokens")
    }


def _sdk_span_type(data: dict[str, Any]) -> str | None:
    """A custom span's `data.sdk_span_type` when it is text (its `data` may be anything)."""
    custom = data.get("data")
    kind = custom.get("sdk_span_type") if isinstance(custom, dict) else None
    return kind if isinstance(kind, str) else None


def _error_text(error: dict[str, Any]) -> str:
    """A span error as text: its `message`, and `data.error` when the SDK gave one."""
    data = error.get("data")
    detail = data.get("error") if isinstance(data, dict) else None
    message = str(error.get("message") or "error")
    return f"{message}: {detail}" if isinstance(detail, str) and detail else message
