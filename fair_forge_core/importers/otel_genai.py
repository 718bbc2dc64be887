"""OpenTelemetry GenAI spans (OTLP JSON) → `ImportedTrace`s.

Input: one OTLP/JSON `ExportTraceServiceRequest` (``{"resourceSpans": [{"resource",
"scopeSpans": [{"spans": [...]}]}]}``), a list of them (the Collector's file exporter
writes one per line), possibly mixed with `ExportLogsServiceRequest`s (``resourceLogs``:
the log-based events of older instrumentations), or a bare list of spans. Fields are
named from the input, whose two roots are ``requests`` and ``spans``: a field is
``requests[i].resourceSpans[j].scopeSpans[k].spans[n]…`` (a single request is
``requests[0]``), or ``spans[n]…`` for a bare list; an error about the input as a whole
names the bare root, ``spans`` for a bare list of spans, else ``requests``. Other shapes of
the same spans (OTLP protobuf, protobuf JSON, Tempo, Jaeger, Phoenix) are read through
`otlp_shapes.otlp_json`, their fields named as they write them. OTLP JSON is read as the
spec encodes it: hex ids (kept as written, compared in either case; the padded base64 of
16 or 8 bytes, what protobuf-JSON mappings write, is read as the hex of its bytes
(`otel_spans.hex_id`); any other id is compared exactly, case included, and said once in
the warnings), nanosecond times as strings, attributes as
`{key, value}` with `AnyValue` (`stringValue`, `intValue` as a string, `boolValue`,
`doubleValue`, `arrayValue` and `kvlistValue` as objects with a list of `values`),
`status.code` 2 = ERROR; `gen_ai.operation.name` is a string; an event name that is not a
string names no GenAI event. The rules (shared ones in `importers.trace`):

- a conversation is the traces sharing `gen_ai.conversation.id` (its id), else one
  `traceId`; a trace without any ``gen_ai.*`` span or event is not a conversation: it is
  skipped and said (a warning on the first conversation);
- messages come from the inference spans (any span with content but `invoke_agent`,
  `create_agent`, `invoke_workflow`, `execute_tool`), or from the agent spans when no
  inference span has any: `gen_ai.input.messages` (read at the span's start) and the first
  of `gen_ai.output.messages` (at its end; other choices said), as JSON text or structured
  (`{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", "id", "name",
  "arguments"}, {"type": "tool_call_response", "id", "response"}]}`); or, in the older
  conventions, the span's `gen_ai.{system,user,assistant,tool}.message` and `gen_ai.choice`
  events (log records joined by `traceId`/`spanId`, or span events whose body is their
  `gen_ai.event.content` JSON or their attributes). A `gen_ai.client.inference.operation
  .details` log record gives its span the content attributes it lacks; other log records
  (the application's own logs) are ignored; a GenAI event of no span in the input is an error;
- events are read in time order: a span's input at its start, its output at its end, an
  `execute_tool` span at its start, or, when it starts while an inference span read for
  messages is still open (a stream closed late), right after that span's output (the
  latest-ending one's), so the call it answers has been read; each span's input adds
  only what the conversation read so far does not already end with (the longest such run:
  a history resent in full, a window of it, or only the new messages), so no message
  counts twice; an input that continues nothing is said. Messages are compared by role
  and the parts that are read (text by content, calls and responses by id, a call without
  id by name and arguments): a part that is skipped (reasoning) may be dropped when a
  message is resent;
- system/developer messages and `gen_ai.system_instructions` are context, skipped; a user
  message with text starts a turn; the tool_call parts of one output message are one
  step; a `tool_call_response` part (in a tool or user message) answers its call by id;
  other part types (reasoning, media, server-side tools) are skipped and said;
- an `execute_tool` span gives its call the `gen_ai.tool.call.result`: the call with its
  `gen_ai.tool.call.id`; without one (the id is only recommended), the first call of the
  current turn named `gen_ai.tool.name` that no tool span or response part has answered
  yet, preferring one whose arguments equal `gen_ai.tool.call.arguments` when the span
  has them (JSON text and objects compared parsed). A span with status ERROR or
  `error.type` marks the call `is_error`, its result being that, else the status message,
  else `error.type`. A span that answers no call (its id no call has, or no unanswered
  call of its name) becomes a step of its own, from `gen_ai.tool.name` and
  `gen_ai.tool.call.arguments`, and is said. A response part read later replaces the
  result (it is what the model saw); other GenAI operations (embeddings, retrieval) are
  skipped and said; spans of no GenAI operation are ignored;
- an MCP `tools/call` span (`mcp.method.name`, MCP semantic conventions: its
  `gen_ai.operation.name` is `execute_tool` when set, the tool in `gen_ai.tool.name`) is a
  tool span as above, unless another tool span records its call: one it descends from by
  `parentSpanId` (the agent's `execute_tool` span around its MCP client span, the client
  span around the server's), or, not linked, an `execute_tool` span of the same trace and
  tool name that is no MCP span and whose time holds it. Then the pair is one call, read
  from the outermost tool span: its call, marked failed when any of the MCP spans is (status
  ERROR or `error.type`, e.g. ``tool_error``), with its own result, else the first result of
  the MCP spans (in start order), else, failed, the first status message of the failed
  spans, else the first one's `error.type`; the MCP spans are skipped and said
  (`otel_mcp.mcp_same_call`);
- a conversation whose spans carry no message content (capture is off by default) is a
  `TraceError` saying how to turn it on;
- an inference span read for messages gives the turn its output is read in its
  `gen_ai.usage.input_tokens` / `gen_ai.usage.output_tokens` (`TurnBuilder.usage`: one inference
  span of the turn without them, or a total over `agent_usage`'s bound, makes them unknown for
  the turn, the latter said); agent spans' totals are not
  read (they would count their inference spans twice), nor latency or cost;
- a turn keeps the trace and span ids of the span whose output gave its answer
  (`ImportedTurn.trace_span`, lower-cased; none when an id is not hex of its OTLP length);
- `metadata`: the scalar attributes of the resource and the root spans (first wins),
  `gen_ai.agent.name` and `gen_ai.conversation.id` of any span, and `trace_ids`;
  `assistant_id` is `gen_ai.agent.name`, else `service.name`, else ``agent``. The attribute
  `final_state` (the end state the agent left, `importers.references`) is the exception: it
  is the latest root span's (in start order) that has it, else the latest resource's; as
  attributes cannot hold objects, a string holding JSON text is parsed (other text stays
  text), and a `kvlistValue` or `arrayValue` is read as the object or list it encodes.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from fair_forge_core.importers.otel_mcp import is_mcp_call, mcp_same_call
from fair_forge_core.importers.otel_messages import Message, span_messages
from fair_forge_core.importers.otel_spans import CONTENT, WHERE, Span, bare_spans, langfuse_hint, read_spans
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

_AGENT_OPS = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})
_READ_OPS = _AGENT_OPS | {"chat", "text_completion", "generate_content", "execute_tool"}
CAPTURE = (
    "no span carries message content, so there is no query to evaluate: turn content capture on in the"
    " instrumentation (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true for the OpenTelemetry Python"
    " GenAI instrumentations) and export the traces again"
)


NOT_HEX = (
    "{where}: trace and span ids are not all hex (OTLP JSON writes them as hex, protobuf JSON as the base64 "
    "of 16 or 8 bytes): ids are kept and compared exactly as written"
)
"""The one import warning when an id of the input is not hex; `where` is the first such id."""


def traces_from_otel(data: Any) -> list[ImportedTrace]:
    """The conversations of `data` (see the module docstring), in the order they start."""
    try:
        return _traces(data)
    except RecursionError:  # values nested as deep as a JSON parser allows, then read a few calls deeper
        root = "spans" if bare_spans(data) else "requests"
        raise TraceError(root, "holds values nested too deeply to read") from None


def _traces(data: Any) -> list[ImportedTrace]:
    return traces_of_spans(*read_spans(data))


def traces_of_spans(
    spans: list[Span], root: str, not_hex: str | None, *, no_content: str = CAPTURE
) -> list[ImportedTrace]:
    """The conversations of spans `read_spans` read (module docstring), also for the spans of
    another convention translated to this one (`openinference`); `no_content` says how to
    capture content when a conversation has none."""
    by_trace: dict[str, list[Span]] = {}
    for span in spans:
        by_trace.setdefault(span.key[0], []).append(span)
    conversations: dict[str, list[Span]] = {}
    skipped = []
    for members in by_trace.values():
        trace_id = members[0].trace_id  # as the trace's first span writes it
        if not any(k.startswith("gen_ai.") for s in members for k in s.attrs) and not any(s.events for s in members):
            skipped.append(trace_id)
            continue
        ids = [s.attrs.get("gen_ai.conversation.id") for s in members]
        conversations.setdefault(next((i for i in ids if isinstance(i, str) and i), trace_id), []).extend(members)
    if not conversations:
        raise TraceError(root, f"holds no GenAI span (no gen_ai.* attribute or event){langfuse_hint(spans)}")
    no_content += langfuse_hint(spans)
    traces = [_conversation(key, members, no_content) for key, members in conversations.items()]
    if skipped:
        more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        traces[0].warnings.append(f"traces without any GenAI span skipped: {', '.join(skipped[:5])}{more}")
    if not_hex is not None:
        traces[0].warnings.append(NOT_HEX.format(where=not_hex))
    return traces


def _conversation(key: str, spans: list[Span], no_content: str) -> ImportedTrace:
    spans.sort(key=lambda s: s.start)  # stable: equal times keep the input's order
    where = spans[0].where
    builder, calls, skipped = TurnBuilder(where), _Calls(), Counter[str]()
    read = {id(s): span_messages(s, builder.warnings) for s in spans}
    if not any(p.get("type") == "text" for i, o in read.values() for m, _ in i + o for p in m["parts"]):
        raise TraceError(where, f"trace {key}: {no_content}")
    history: list[tuple[str, ...]] = []
    same_call, inner = mcp_same_call(spans), dict[int, list[Span]]()
    for span in spans:  # in start order: the client span's before the server's
        if (outer := same_call.get(id(span))) is not None:
            inner.setdefault(id(outer), []).append(span)
    for kind, span in _timeline(spans, read, skipped, same_call):
        if kind == "tool":
            _tool_span(span, builder, calls, inner.get(id(span), []))
            continue
        inputs, outputs = read[id(span)]
        new = inputs if kind == "input" else outputs[:1]
        keys = [_key(message) for message, _ in new]
        if kind == "input":
            overlap = _overlap(history, keys)
            if history and not overlap and len(keys) > 1:
                builder.warnings.append(f"{span.where}: its input continues none of the conversation read so far")
            new, keys = new[overlap:], keys[overlap:]
        history += keys
        origin = _trace_span(span) if kind == "output" else None  # an input's text was produced elsewhere
        for message, here in new:
            _feed(message, here, builder, calls, skipped, origin)
        if kind == "output" and span.attrs.get("gen_ai.operation.name") not in _AGENT_OPS:
            builder.usage(
                span.where,
                **{f"{n}_tokens": _count(span, f"gen_ai.usage.{n}_tokens", builder) for n in ("input", "output")},
            )
    turns = builder.turns()
    builder.warnings += [f"{where}: {count} {what} skipped" for what, count in skipped.items()]
    metadata = _metadata(spans)
    assistant = metadata.get("gen_ai.agent.name") or metadata.get("service.name") or "agent"
    return ImportedTrace(key, str(assistant), turns, metadata, builder.warnings)


def _count(span: Span, name: str, builder: TurnBuilder) -> int | None:
    """A token count of an inference span's attributes (`read_token_count`)."""
    return read_token_count(span.attrs.get(name), f"{span.where}: {name}", builder.warnings.append)


def _timeline(
    spans: list[Span],
    read: dict[int, tuple[list[Message], list[Message]]],
    skipped: Counter[str],
    same_call: dict[int, Span | None],
) -> list[tuple[str, Span]]:
    """What to read, in order: the input (at its start) and output (at its end) of the spans
    read for messages, and the `execute_tool` spans at their start, or, for one that starts
    while an inference span read for messages is still open (its stream closed late), right
    after that span's output (the latest-ending such span's). `spans` are in start order."""
    inference = [s for s in spans if s.attrs.get("gen_ai.operation.name") not in _AGENT_OPS and any(read[id(s)])]
    talkers = {id(s) for s in (inference or [s for s in spans if any(read[id(s)])])}
    events: list[tuple[tuple[int, int, int], str, Span]] = []
    opened = (-1, -1)  # (end, event number of the output) of the latest-ending inference span started so far
    for span in spans:
        operation = span.attrs.get("gen_ai.operation.name")
        number = len(events)
        if id(span) in talkers:
            events += [((span.start, number, 0), "input", span), ((span.end, number + 1, 0), "output", span)]
            if inference and span.end > opened[0]:
                opened = (span.end, number + 1)
        elif id(span) in same_call:
            skipped["MCP tools/call spans of a call another tool span records"] += 1
        elif operation == "execute_tool" or is_mcp_call(span):
            late = opened[0] > span.start
            events.append(((*opened, 1 + number) if late else (span.start, number, 0), "tool", span))
        elif isinstance(operation, str) and operation not in _READ_OPS:
            skipped[f"spans of operation {operation!r}"] += 1
    events.sort(key=lambda event: event[0])
    return [(kind, span) for _, kind, span in events]


def _overlap(history: list[Any], keys: list[Any]) -> int:
    """How many of `keys` the history already ends with: the longest run that `history` ends
    with and `keys` starts with. Knuth–Morris–Pratt: the failure function of `keys`, run over
    the history's last ``len(keys)`` keys, so O(len(keys)) whatever the history's length."""
    if not history or not keys:
        return 0
    failure, matched = [0] * len(keys), 0  # failure[i]: the longest proper prefix of keys[:i + 1] it ends with
    for i in range(1, len(keys)):
        while matched and keys[i] != keys[matched]:
            matched = failure[matched - 1]
        if keys[i] == keys[matched]:
            matched += 1
        failure[i] = matched
    matched = 0
    for item in history[-len(keys) :]:
        while matched and (matched == len(keys) or item != keys[matched]):
            matched = failure[matched - 1]
        if item == keys[matched]:
            matched += 1
    return matched


def _key(message: dict[str, Any]) -> tuple[str, ...]:
    """What makes two messages the same: their role and the parts that are read (other parts,
    such as reasoning, may be dropped when a message is resent); calls and responses by id
    (their arguments may be re-serialised between spans), a call without one by its name and
    arguments, text by its content."""
    key = [_text(message["role"])]
    for part in message["parts"]:
        kind = part.get("type")
        if kind in ("tool_call", "tool_call_response") and part.get("id"):
            key += (kind, _text(part["id"]))
        elif kind == "tool_call":
            key += (kind, _text(part.get("name")), str(_canonical(part.get("arguments"))))
        elif kind == "tool_call_response":
            key += (kind, _text(part.get("response", part.get("result"))))
        elif kind == "text":
            key += (kind, _text(part.get("content")))
    return tuple(key)  # each kind has its number of fields, so the flat tuple is unambiguous


def _text(value: Any) -> str:
    """A value of a key as text: a string itself, anything else as its JSON (marked apart)."""
    if isinstance(value, str):
        return value
    try:
        return "\0" + json.dumps(value, sort_keys=True, default=str)
    except (RecursionError, TypeError, ValueError):
        return f"\0\0{id(value)}"  # too deep to compare: equal to itself only


def _canonical(arguments: Any) -> str | None:
    """A call's arguments as text that equal arguments share (JSON text parsed, keys sorted;
    `None` and ``""`` are ``{}``, as `read_arguments` reads them); `None` if they cannot be."""
    if isinstance(arguments, str) and arguments:
        with contextlib.suppress(ValueError, RecursionError):  # else compared as the text it is
            arguments = json.loads(arguments)
    try:
        return json.dumps({} if arguments in (None, "") else arguments, sort_keys=True, default=str)
    except (RecursionError, TypeError, ValueError):
        return None


@dataclass
class _Call:
    key: str  # the call's id in the builder: its own, or one made up for a call without
    answered: bool = False


class _Calls:
    """The tool calls read so far, for the tool spans and response parts that answer them: by
    id (the calls sharing one in order, as `TurnBuilder.result` answers them), and the
    current turn's unanswered ones by name and by (name, arguments), in order."""

    def __init__(self) -> None:
        self._by_id: dict[str, deque[_Call]] = {}
        self._by_name: dict[str, deque[_Call]] = {}
        self._by_arguments: dict[tuple[str, str], deque[_Call]] = {}

    def known(self, call_id: str, *, answered: bool = False) -> _Call:
        """A call with this id (answered: a tool span's own step)."""
        entry = _Call(call_id, answered)
        self._by_id.setdefault(call_id, deque()).append(entry)
        return entry

    def answer(self, call_id: str) -> _Call | None:
        """The call with `call_id` that a result now answers: its first unanswered one, else
        its last; `None` when no call has the id."""
        same = self._by_id.get(call_id)
        if not same:
            return None
        while len(same) > 1 and same[0].answered:  # each call leaves once: linear overall
            same.popleft()
        same[0].answered = True
        return same[0]

    def asked(self, call: RawCall) -> None:
        """A call of a model output (its `call_id` set)."""
        entry = self.known(str(call.call_id))
        if isinstance(call.name, str):
            self._by_name.setdefault(call.name, deque()).append(entry)
            canonical = _canonical(call.arguments)
            if canonical is not None:
                self._by_arguments.setdefault((call.name, canonical), deque()).append(entry)

    def new_turn(self) -> None:
        """A user message: the calls of earlier turns are answered by id only."""
        self._by_name.clear()
        self._by_arguments.clear()

    def take(self, name: Any, arguments: Any) -> _Call | None:
        """The first unanswered call of the turn named `name` whose arguments equal
        `arguments` (`NO_RESULT`: none given), else the first unanswered call named `name`."""
        if not isinstance(name, str):
            return None
        canonical = None if arguments is NO_RESULT else _canonical(arguments)
        queues = [self._by_arguments.get((name, canonical))] if canonical is not None else []
        for queue in [*queues, self._by_name.get(name)]:
            while queue and queue[0].answered:  # each call leaves each queue once: linear overall
                queue.popleft()
            if queue:
                return queue.popleft()
        return None


def _trace_span(span: Span) -> dict[str, str] | None:
    """`{"trace_id", "span_id"}` of a span (`schemas.TraceSpan`), lower-cased; None when either id
    is not hex of its OTLP length (32 and 16 digits: a base64 id links nothing)."""
    if _TRACE_ID.fullmatch(span.trace_id) and _SPAN_ID.fullmatch(span.span_id):
        return {"trace_id": span.trace_id.lower(), "span_id": span.span_id.lower()}
    return None


_TRACE_ID, _SPAN_ID = re.compile(r"[0-9a-fA-F]{32}"), re.compile(r"[0-9a-fA-F]{16}")


def _feed(
    message: dict[str, Any],
    where: str,
    builder: TurnBuilder,
    calls: _Calls,
    skipped: Counter[str],
    origin: dict[str, str] | None = None,
) -> None:
    role, texts, asked = message["role"], [], []
    for n, part in enumerate(message["parts"]):
        here, kind = str(part.get(WHERE) or f"{where}.parts[{n}]"), part.get("type")
        if kind == "text":
            texts.append(str(part.get("content", "")))
        elif kind == "tool_call":
            call_id = _str_or_none(part.get("id")) or f"\0{here}"  # made up, so that a tool span can answer it
            asked.append(RawCall(part.get("name"), part.get("arguments"), here, call_id))
        elif kind == "tool_call_response":
            builder.result(part.get("id"), part.get("response", part.get("result")), here, replaces=True)
            calls.answer(part["id"])  # the builder knew the id
        else:
            skipped[f"message parts of type {kind!r}"] += 1
    if role == "user" and texts:
        builder.user("".join(texts))
        calls.new_turn()
    elif role == "assistant":
        builder.assistant("".join(texts), where, span=origin)
        builder.step(asked, where)
        for call in asked:
            calls.asked(call)
    elif role not in ("user", "tool"):
        raise TraceError(f"{where}.role", f"unknown role {role!r}")
    elif role == "tool" and texts:
        skipped["text parts of tool messages (no call id to answer)"] += 1


def _tool_span(span: Span, builder: TurnBuilder, calls: _Calls, inner: list[Span]) -> None:
    """An `execute_tool` span: the result of the call with its `gen_ai.tool.call.id`; without
    one, of the call `_Calls.take` finds by its name and arguments; else a step of its own.
    `inner`: the MCP spans of the same call (`mcp_same_call`), which mark it failed when one
    failed and give it the first result among them when the span has none."""
    attrs, call_id = span.attrs, _str_or_none(span.attrs.get("gen_ai.tool.call.id"))
    failing = [s for s in (span, *inner) if s.failed or "error.type" in s.attrs]
    failed, result = bool(failing), attrs.get("gen_ai.tool.call.result", NO_RESULT)
    if result is NO_RESULT:
        result = next(
            (s.attrs["gen_ai.tool.call.result"] for s in inner if "gen_ai.tool.call.result" in s.attrs), result
        )
    if failed and result is NO_RESULT:  # the first status message of a failed span, else its error.type
        result = next((s.status for s in failing if s.status), None) or failing[0].attrs.get("error.type")
    name, arguments = attrs.get("gen_ai.tool.name"), attrs.get("gen_ai.tool.call.arguments", NO_RESULT)
    call = calls.answer(call_id) if call_id else calls.take(name, arguments)
    if call is not None:
        call.answered = True
        if result is not NO_RESULT:
            builder.result(call.key, result, span.where, is_error=failed)
        return
    builder.warnings.append(f"{span.where}: a tool run no model output asked for; read as a step of its own")
    arguments = None if arguments is NO_RESULT else arguments
    builder.step([RawCall(name, arguments, span.where, call_id, result, failed)], span.where)
    if call_id:
        calls.known(call_id, answered=True)


def _metadata(spans: list[Span]) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for span in spans:
        for key, value in {**span.resource, **(span.attrs if span.root else {})}.items():
            if key not in CONTENT and key != FINAL_STATE and isinstance(value, (str, int, float, bool)):
                metadata.setdefault(key, value)
    # The end state is the latest one (spans are in start order): a root span's, else a resource's.
    states = [s.attrs[FINAL_STATE] for s in spans if s.root and FINAL_STATE in s.attrs]
    states = states or [s.resource[FINAL_STATE] for s in spans if FINAL_STATE in s.resource]
    if states:
        metadata[FINAL_STATE] = parse_json_text(states[-1], states[-1]) if isinstance(states[-1], str) else states[-1]
    for key in ("gen_ai.agent.name", "gen_ai.conversation.id"):
        value = next((s.attrs[key] for s in spans if isinstance(s.attrs.get(key), str)), None)
        if value is not None:
            metadata.setdefault(key, value)
    trace_ids: dict[str, str] = {}
    for span in spans:
        trace_ids.setdefault(span.key[0], span.trace_id)
    metadata["trace_ids"] = list(trace_ids.values())
    return metadata


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
