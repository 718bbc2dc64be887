"""Langfuse traces → `ImportedTrace`s.

Three inputs are read, told apart by their shape:

- Langfuse v4's observations: a page of `GET /api/public/v2/observations` (filtered by
  `traceId` or `sessionId`; ``{"data": [observation, …], "meta": {…}}``) or a list of pages,
  turned into traces by `langfuse_observations` (grouped by `traceId`; the trace's input,
  output and metadata are its root observation's), fields named ``data[k]…`` or
  ``pages[p].data[k]…``;
- the legacy trace body (`GET /api/public/traces/{traceId}`: `TraceWithFullDetails`, as
  `langfuse.api.trace.get` returned it before SDK v5 and the UI exports it as JSON): one such
  trace, a list of them, or a page ``{"data": [...], "meta": …}`` whose traces carry their
  observations in full. A trace is ``{"id", "timestamp", "name", "input", "output",
  "sessionId", "userId", "metadata", "tags", "latency", "totalCost", "observations": [...]}``;
- the OTLP export of the Langfuse SDK's spans (v3 and later; its LangChain `CallbackHandler`,
  `@observe`): anything `trace_shapes.sniff_shape` finds to be OTLP spans (protobuf, OTLP/JSON,
  protobuf JSON, Tempo, Jaeger, Phoenix) that is not an observations page, each span read as
  the observation Langfuse's ingestion makes of it by its ``langfuse.*`` attributes
  (`langfuse_otlp`), then as a page's observations are. An error in reading such spans is a
  `FormatTraceError` (it is Langfuse's input: no other `--from` is named); spans none of which
  has a ``langfuse.*`` attribute are a plain `TraceError`, for the caller to name the shape.

An observation is ``{"id", "type", "name", "startTime", "endTime", "parentObservationId",
"input", "output", "level", "statusMessage", "usageDetails", "usage", …}`` (Langfuse's OpenAPI
spec, `ObservationsView` and `ObservationV2`), its `type` GENERATION, SPAN, EVENT, or one of the
newer AGENT, TOOL, CHAIN, RETRIEVER, EVALUATOR, EMBEDDING, GUARDRAIL. Fields of a legacy trace
are named from the root: ``traces[i].observations[j].output`` (``data[i]…`` for a page).
The rules (shared ones in `importers.trace`):

- traces with the same `sessionId` are one conversation (a Langfuse session), whose id it
  is, its turns in `timestamp` order (ISO 8601, compared in UTC; a time without offset is
  UTC; if one is missing or unreadable, the input order, said); otherwise the id is the
  trace's. A trace is one turn;
- the query is the trace's `input`: text, the last user message of a list of messages
  (OpenAI or LangChain shapes) or of its `messages`, else its `input`, `question` or
  `query`, else the only text of `args` and `kwargs` (what the SDK's `@observe` records of
  the function's arguments), else its only text; else the last user message of the first generation's
  `input` (said); else an error naming `input`;
- observations are read in `startTime` order (equal or unreadable times: input order, an
  unreadable one said); those inside a TOOL observation (by `parentObservationId`) are the
  tool's own work, not read (a generation or tool there is said);
- a GENERATION is one step: its `output` is the model's message (OpenAI's
  ``{"role": "assistant", "content", "tool_calls"}``, a LangChain message, ``choices`` or
  ``generations``, read as in `langsmith_runs`), or text; its text and tool calls, parallel
  calls sharing the step. A generation without output is said (with its `statusMessage`
  when its `level` is ERROR). Tool messages in its `input` (``role: tool`` with a
  `tool_call_id`) answer the calls with that id that nothing has answered yet;
- a TOOL observation answers a call: the one whose id is its `metadata.tool_call_id` (or
  `input.tool_call_id`), else the first unanswered call of its `name` whose arguments equal
  its `input`, else the first unanswered call of its name (`langsmith_runs.PendingCalls`); its
  result is its `output`, except that an output that is a serialised LangChain `ToolMessage`
  (what the LangChain `CallbackHandler` records) gives its `content` as the result, its
  `status: "error"` as an error and its `tool_call_id` as the call (`tool_envelope`); at
  `level` ERROR it is an error, its result the `output` or else the `statusMessage`. A TOOL
  that answers no call is a call of its own step, said. Other types (SPAN, EVENT, AGENT,
  CHAIN, RETRIEVER, …) are the application's plumbing, not read;
- the answer is the trace's `output` (text, an assistant message, the last assistant message
  of a list or of `messages`, else `output`, `answer`, `response` or `result`, else its only
  text), else the last generation's text;
- what a turn spent (`agent_usage`): the tokens of its generations (`usageDetails.input` /
  `.output`, else `usage.input` / `.output`; one generation without them makes them
  unknown), and the trace's `totalCost` (USD) and `latency` (seconds) (Langfuse totals them
  per trace); a total over `agent_usage`'s bound (10¹² tokens, 1,000,000 s, $1,000,000) is
  left out as unknown, said, as an unreadable value is (`importers.trace`), so the import
  stays a request the service takes;
- metadata is the first trace's `metadata` object, with the trace fields `name`, `userId`,
  `sessionId`, `release`, `version`, `environment` and `tags` under those names when it has
  no key of that name (so `--task-key metadata.name` matches on the trace's name), but for
  `final_state` (the end state the agent left, `importers.references`): the last trace's (in
  turn order) that has one. The assistant is `metadata.assistant_id`, else the first trace's
  `name`, else ``agent``.
"""

from __future__ import annotations

from typing import Any

from fair_forge_core.importers.langchain_messages import (
    is_message,
    last_text,
    message_fields,
    read_ai_message,
    read_tool_message,
    text_of,
)
from fair_forge_core.importers.langfuse_observations import (
    Item,
    Trace,
    in_time_order,
    observation_pages,
    traces_of_pages,
    utc_time,
)
from fair_forge_core.importers.langfuse_otlp import is_spans, traces_of_spans
from fair_forge_core.importers.langsmith_runs import NEVER, QUERY_KEYS, PendingCalls, final_answer, output_message
from fair_forge_core.importers.tool_envelope import unwrap_tool_message
from fair_forge_core.importers.trace import (
    FINAL_STATE,
    NO_RESULT,
    FormatTraceError,
    ImportedTrace,
    RawCall,
    TraceError,
    TurnBuilder,
    nearest_marked,
    read_token_count,
)

_TRACE_FIELDS = ("name", "userId", "sessionId", "release", "version", "environment", "tags")


def traces_from_langfuse(data: Any) -> list[ImportedTrace]:
    """The conversations of the Langfuse traces in `data` (see the module docstring)."""
    pages = observation_pages(data)
    if pages is not None:
        return _conversations(traces_of_pages(pages))
    if not is_spans(data):
        return _conversations(_legacy_traces(data))
    traces = traces_of_spans(data)  # spans of no Langfuse SDK: its TraceError as it is
    try:
        return _conversations(traces)
    except TraceError as exc:
        raise FormatTraceError(exc.field, exc.problem) from None


def _conversations(traces: list[Trace]) -> list[ImportedTrace]:
    sessions: dict[str, list[Trace]] = {}
    for trace in traces:
        session = trace.fields.get("sessionId")
        key = session if isinstance(session, str) and session else trace.fields["id"]
        sessions.setdefault(key, []).append(trace)
    return [_conversation(key, traces) for key, traces in sessions.items()]


def _legacy_traces(data: Any) -> list[Trace]:
    """The traces of `GET /api/public/traces/{traceId}` bodies: one, a list, or a page of them."""
    if isinstance(data, dict) and "observations" not in data and isinstance(data.get("data"), list):
        raw, root = data["data"], "data"
    else:
        raw, root = (data if isinstance(data, list) else [data]), "traces"
    traces = []
    for n, trace in enumerate(raw):
        where = f"{root}[{n}]"
        if not isinstance(trace, dict):
            raise TraceError(where, "a Langfuse trace is an object")
        if not isinstance(trace.get("id"), str) or not trace["id"]:
            raise TraceError(f"{where}.id", "must be a non-empty string")
        traces.append(Trace(trace, where))
    if not traces:
        raise TraceError(root, "holds no trace")
    return traces


def _conversation(key: str, traces: list[Trace]) -> ImportedTrace:
    if len(traces) > 1:
        times = [utc_time(trace.fields.get("timestamp")) for trace in traces]
        missing = next((trace for trace, moment in zip(traces, times, strict=True) if moment is None), None)
        if missing is None:
            traces = [traces[n] for n in sorted(range(len(traces)), key=lambda n: times[n] or NEVER)]
    else:
        missing = None
    builder = TurnBuilder(traces[0].where)
    if missing is not None:
        builder.warnings.append(
            f"{missing.where}.{missing.clock}: not an ISO 8601 time; the traces of the session {key!r} are read in"
            " input order"
        )
    for trace in traces:
        builder.warnings.extend(trace.warnings)
        _turn(trace, builder)
    first = traces[0]
    metadata = _metadata(first.fields, first.where, builder.warnings)
    states = [trace.fields["metadata"][FINAL_STATE] for trace in traces if _has_final_state(trace.fields)]
    if states:
        metadata[FINAL_STATE] = states[-1]
    assistant_id = metadata.get("assistant_id") or first.fields.get("name") or "agent"
    return ImportedTrace(key, str(assistant_id), builder.turns(), metadata, builder.warnings)


def _has_final_state(trace: dict[str, Any]) -> bool:
    return isinstance(trace.get("metadata"), dict) and FINAL_STATE in trace["metadata"]


def _metadata(trace: dict[str, Any], where: str, warnings: list[str]) -> dict[str, Any]:
    raw = trace.get("metadata")
    metadata = dict(raw) if isinstance(raw, dict) else {}
    if raw is not None and not isinstance(raw, dict):
        warnings.append(f"{where}.metadata: not an object; not read")
    metadata.pop(FINAL_STATE, None)  # the conversation's is the last trace's (`_conversation`)
    for name in _TRACE_FIELDS:
        if trace.get(name) not in (None, "", []):
            metadata.setdefault(name, trace[name])
    return metadata


def _observations(trace: Trace, warnings: list[str]) -> list[Item]:
    """The trace's observations with their paths, checked, in `startTime` order."""
    items = trace.observations
    if items is None:
        raw = trace.fields.get("observations")
        if raw is not None and not isinstance(raw, list):
            raise TraceError(f"{trace.where}.observations", "must be a list of observations")
        items = [(observation, f"{trace.where}.observations[{n}]") for n, observation in enumerate(raw or [])]
    for observation, here in items:
        if isinstance(observation, str):
            raise TraceError(
                here,
                "an observation id only (a trace list gives ids): export each trace with"
                " GET /api/public/v2/observations?traceId=… (or GET /api/public/traces/{traceId}),"
                " whose observations are in full",
            )
        if not isinstance(observation, dict):
            raise TraceError(here, "an observation is an object")
        if not isinstance(observation.get("type"), str):
            raise TraceError(f"{here}.type", "must be a string (GENERATION, TOOL, SPAN, EVENT, …)")
    ordered, missing = in_time_order(items, "startTime")
    if missing is not None:
        warnings.append(
            f"{missing}.startTime: not an ISO 8601 time; the observations of {trace.where} are read in input order"
        )
    return ordered


def _turn(source: Trace, builder: TurnBuilder) -> None:
    warnings, trace, where = builder.warnings, source.fields, source.where
    observations = _observations(source, warnings)
    builder.user(_query(trace, where, observations, warnings))
    builder.usage(where, cost_usd=_number(trace.get("totalCost")), latency_s=_number(trace.get("latency")))
    by_id = {str(o.get("id")): o for o, _ in observations if o.get("id") is not None}
    tools = _tools_above(by_id)
    pending = PendingCalls()
    for observation, here in observations:
        kind = observation["type"].upper()
        parent = observation.get("parentObservationId")
        tool = tools.get(parent) if isinstance(parent, str) else None
        if tool is not None:
            if kind in ("GENERATION", "TOOL"):
                warnings.append(f"{here}: a {kind} inside the TOOL observation {tool!r}; the tool's own work, not read")
        elif kind == "GENERATION":
            _generation(observation, here, builder, pending)
        elif kind == "TOOL":
            _tool(observation, here, builder, pending)
    answer = _answer_of(trace.get("output"), f"{where}.output")
    if answer:
        builder.assistant(answer, f"{where}.output")


def _tools_above(by_id: dict[str, dict[str, Any]]) -> dict[str, str | None]:
    """For each observation id: the TOOL observation it is or descends from (by
    `parentObservationId`), if any: an observation whose parent maps to a TOOL id is inside
    that tool. One pass over the tree (`nearest_marked`); a cycle ends the walk."""

    def parent_of(key: str) -> str | None:
        parent = by_id[key].get("parentObservationId")
        return parent if isinstance(parent, str) and parent in by_id else None

    return nearest_marked(by_id, parent_of, lambda key: str(by_id[key].get("type", "")).upper() == "TOOL")


def _query(trace: dict[str, Any], where: str, observations: list[Item], warnings: list[str]) -> str:
    query = _text_in(trace.get("input"), f"{where}.input", "human", QUERY_KEYS)
    if query is not None:
        return query
    for observation, here in observations:
        if observation["type"].upper() == "GENERATION":
            query = _text_in(observation.get("input"), f"{here}.input", "human", ())
            if query is not None:
                warnings.append(f"{where}.input: no query; the last user message of {here} taken")
                return query
            break
    raise TraceError(f"{where}.input", "holds no query (text, messages, input, question, query or one text)")


def _text_in(value: Any, where: str, kind: str, keys: tuple[str, ...]) -> str | None:
    """Text of a trace's `input` (kind human) or `output` (kind ai): see the module docstring."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return last_text(value, where, kind)
    if not isinstance(value, dict):
        return None
    if "messages" in value:
        found = last_text(value["messages"], f"{where}.messages", kind)
        if found is not None:
            return found
    named = [value[k] for k in keys if isinstance(value.get(k), str)]
    if named:
        return str(named[0])
    if isinstance(value.get("args"), list) and isinstance(value.get("kwargs", {}), dict):  # `@observe`'s record
        texts = [*value["args"], *value.get("kwargs", {}).values()]
        texts = [item for item in texts if isinstance(item, str)]
        return texts[0] if len(texts) == 1 else None
    texts = [item for item in value.values() if isinstance(item, str)]
    return texts[0] if len(texts) == 1 else None


def _answer_of(output: Any, where: str) -> str | None:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return last_text(output, where, "ai")
    if is_message(output):
        kind, fields, fields_where = message_fields(output, where)
        return text_of(fields.get("content") or "", f"{fields_where}.content") if kind == "ai" else None
    return final_answer(output, where)


def _generation(observation: dict[str, Any], where: str, builder: TurnBuilder, pending: PendingCalls) -> None:
    warnings = builder.warnings
    inputs = observation.get("input")
    messages = inputs.get("messages") if isinstance(inputs, dict) else inputs
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and "tool" in (message.get("role"), message.get("type")):
            call_id, content, is_error = read_tool_message(message)
            call = pending.take_id(call_id) if isinstance(call_id, str) else None
            if call is not None:
                builder.result(call.key, content, where, is_error=is_error)
    output, here = observation.get("output"), f"{where}.output"
    usage = observation.get("usageDetails") or observation.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    builder.usage(
        where,
        input_tokens=read_token_count(usage.get("input"), f"{where}.usageDetails.input", warnings.append),
        output_tokens=read_token_count(usage.get("output"), f"{where}.usageDetails.output", warnings.append),
    )
    if output in (None, "", {}):
        failed = str(observation.get("level", "")).upper() == "ERROR"
        status = f" (it failed: {_first_line(observation.get('statusMessage'))})" if failed else ""
        warnings.append(f"{here}: a generation without output{status}")
        return
    if isinstance(output, str):
        builder.assistant(output, here)
        return
    if not isinstance(output, dict):
        raise TraceError(here, "must be the model's message (an object) or its text")
    message, message_where, count = output_message(output, here)
    if count > 1:
        warnings.append(f"{here}: {count} candidate messages; the first is read")
    kind, fields, fields_where = message_fields(message, message_where)
    if kind != "ai":
        raise TraceError(message_where, "a generation's output message is not an assistant message")
    text, calls = read_ai_message(fields, fields_where, warnings)
    builder.assistant(text, here)
    for n, asked in enumerate(calls):
        pending.add(asked, f"{where}#{n}", warnings)
    builder.step(calls, here)


def _tool(observation: dict[str, Any], where: str, builder: TurnBuilder, pending: PendingCalls) -> None:
    inputs, metadata = observation.get("input"), observation.get("metadata")
    ids = [metadata.get("tool_call_id") if isinstance(metadata, dict) else None]
    ids.append(inputs.get("tool_call_id") if isinstance(inputs, dict) else None)
    failed = str(observation.get("level", "")).upper() == "ERROR"
    result = observation.get("output", NO_RESULT)
    envelope = unwrap_tool_message(result)
    if envelope is not None:  # LangChain's ToolMessage recorded as the tool's output: the output is its content
        result, failed = envelope.content, failed or envelope.is_error
        ids.append(envelope.tool_call_id)
    if result is None:
        result = NO_RESULT
    if failed and result is NO_RESULT:
        result = str(observation.get("statusMessage") or "error")
    call = pending.take(ids, str(observation.get("name")), inputs)
    if call is None:
        builder.warnings.append(
            f"{where}: a TOOL observation that answers no model tool call; read as a call of its own"
        )
        builder.step([RawCall(observation.get("name"), inputs, where, None, result, failed)], where)
        return
    if result is not NO_RESULT:
        builder.result(call.key, result, where, is_error=failed)


def _number(value: Any) -> float | None:
    """A cost or latency: a number ≥ 0, else None (unknown)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _first_line(text: Any) -> str:
    return (str(text or "").splitlines() or [""])[0][:120]
