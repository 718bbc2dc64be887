"""OpenInference spans (Arize Phoenix, OpenInference instrumentations; any OTLP shape) → `ImportedTrace`s.

OpenInference spans travel as OTLP spans, so the input and its field names are the `otel`
format's (`otel_genai` module docstring: an export request, a list of them, or a bare list
of spans; ``requests[i].resourceSpans[j].scopeSpans[k].spans[n]…``), read by the same
`otel_spans.read_spans`, which also decodes the other shapes spans are exported in (OTLP
protobuf, protobuf JSON, Tempo, Jaeger, Phoenix's span pages and client dicts: `otlp_shapes`). Only the attributes follow another convention
(github.com/Arize-ai/openinference, `spec/semantic_conventions.md`, `spec/tool_calling.md`):
each span is translated to the GenAI conventions, then read by `otel_genai.traces_of_spans`,
so a conversation is assembled by the same rules (history resent in full counts once, tool
spans answer calls by id, else by name and arguments; `TurnBuilder` for the rest).

Attributes: lists of objects are flattened with zero-based indexes
(``llm.input_messages.0.message.role``, ``llm.output_messages.0.message.tool_calls.1
.tool_call.function.name``) and read back into lists in index order (an index that is
not an integer ≥ 0 is an error naming the attribute); they may also come as an OTLP
`arrayValue` of `kvlistValue`s, or, in a plain JSON object of attributes, nested
(``{"llm": {"input_messages": [{"message": {"role": …}}]}}``): both are flattened first.
By `openinference.span.kind`:

- ``LLM``: a model call (`chat`): its messages are `llm.input_messages` and
  `llm.output_messages`, each `message.role` (user, assistant, system, tool; `function` is
  read as tool) with `message.content` or, for several parts, `message.contents.{k}
  .message_content.type/text` (types other than text are skipped and said),
  `message.tool_calls.{j}.tool_call.id/function.name/function.arguments` (the older
  `message.function_call_name` / `function_call_arguments_json` is a call without id), and
  for a tool message `message.tool_call_id` (answering the call with that id); token counts
  `llm.token_count.prompt` / `llm.token_count.completion` (summed per turn as the `otel`
  format's; a turn total over `agent_usage`'s bound, 10¹² tokens, is left out as unknown,
  said: `importers.trace`);
- ``TOOL``: a tool run (`execute_tool`): `tool.name`, `tool.id` (the call it answers:
  `tool_call.id`), `input.value` (its arguments; `tool.parameters` is the tool's parameter
  definition, not read) and `output.value` (its result); status ERROR marks it failed, and so
  does an `output.value` that is LangChain's `ToolMessage` with `status: "error"` (its content
  is the result, `tool_envelope`: a tool run with `handle_tool_error=True` keeps its span OK);
- ``AGENT`` and ``CHAIN``: the agent's work; a root span (no `parentSpanId`) of these kinds
  gives its `input.value` as the user's message and its `output.value` as the answer, read
  only when no LLM span carries messages (as agent spans in `otel`). Text is read from
  `input.value` of `input.mime_type` text/plain (the default), or JSON holding text, or an
  object holding text in `input`, `query`, `question` or `message` (and likewise `output`);
- other kinds (RETRIEVER, EMBEDDING, RERANKER, GUARDRAIL, EVALUATOR, PROMPT) are context,
  not read; an LLM or TOOL span under a TOOL span (by `parentSpanId`) is the tool's own
  work (a sub-agent, a tool calling a model): not read, and counted in the warnings;
- `session.id` (any span) is the conversation (the traces of one session are one
  conversation, as `gen_ai.conversation.id`); `agent.name` (any span) the assistant
  (else the resource's `service.name`, else ``agent``); a root span's `metadata` (a JSON
  object as text, or, as Phoenix serves it, flattened to `metadata.task`,
  `metadata.final_state.order`…) gives the trace's metadata its scalar keys (attributes of the
  same name win) and `final_state` (any JSON value: the end state the agent left,
  `importers.references`), so `--task-key metadata.task` reads `metadata`'s `task`.

A span that is not one of these kinds, or has no `openinference.span.kind`, is read as the
`otel` importer reads it (GenAI attributes are read as such).
"""

from __future__ import annotations

import json
import re
from typing import Any

from fair_forge_core.importers.otel_genai import traces_of_spans
from fair_forge_core.importers.otel_spans import WHERE, Span, bare_spans, read_spans
from fair_forge_core.importers.tool_envelope import unwrap_tool_message
from fair_forge_core.importers.trace import FINAL_STATE, ImportedTrace, TraceError, nearest_marked, parse_json_text

_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "model": "assistant"}
_ROLES |= {"system": "system", "developer": "developer", "tool": "tool", "function": "tool"}
_OPERATIONS = {"LLM": "chat", "TOOL": "execute_tool", "AGENT": "invoke_agent", "CHAIN": "invoke_workflow"}
_TEXT_KEYS = ("input", "query", "question", "message", "output", "answer", "response")
_INDEX = re.compile(r"\d+")
_CAPTURE = (
    "no span carries message content, so there is no query to evaluate: OpenInference instrumentations leave"
    " it out when OPENINFERENCE_HIDE_INPUTS, OPENINFERENCE_HIDE_OUTPUTS, OPENINFERENCE_HIDE_INPUT_MESSAGES or"
    " OPENINFERENCE_HIDE_OUTPUT_MESSAGES is true: unset them and export the traces again"
)
_OWN = ("llm.input_messages", "llm.output_messages", "input.value", "output.value", "metadata")
"""Attribute prefixes the translation consumes (their content is not kept as metadata)."""


def traces_from_openinference(data: Any) -> list[ImportedTrace]:
    """The conversations of the OpenInference spans in `data` (see the module docstring)."""
    try:
        spans, root, not_hex = read_spans(data)
        flat = [_flat(span.attrs) for span in spans]
        inside = _inside_tool(spans, [_kind(attrs) for attrs in flat])
        translated = [
            _translate(span, attrs, n in inside) for n, (span, attrs) in enumerate(zip(spans, flat, strict=True))
        ]
        if not any(translated) and not any(k.startswith("gen_ai.") for s in spans for k in s.attrs):
            raise TraceError(root, "holds no OpenInference span (openinference.span.kind LLM, TOOL, AGENT or CHAIN)")
        return traces_of_spans(spans, root, not_hex, no_content=_CAPTURE)
    except RecursionError:  # values nested as deep as a JSON parser allows, then read a few calls deeper
        raise TraceError(
            "spans" if bare_spans(data) else "requests", "holds values nested too deeply to read"
        ) from None


def _kind(attrs: dict[str, Any]) -> str | None:
    kind = attrs.get("openinference.span.kind")
    return kind.upper() if isinstance(kind, str) else None


def _inside_tool(spans: list[Span], kinds: list[str | None]) -> set[int]:
    """The indexes of the spans under a TOOL span other than themselves (by `parentSpanId`,
    within a trace). One pass over the tree (`nearest_marked`): linear however long a chain;
    a cycle ends the walk."""
    index = {span.key: n for n, span in enumerate(spans)}
    parents = [index.get(span.parent_key) for span in spans]
    tools = nearest_marked(range(len(spans)), parents.__getitem__, lambda n: kinds[n] == "TOOL")
    return {n for n, parent in enumerate(parents) if parent is not None and tools[parent] not in (None, n)}


def _translate(span: Span, attrs: dict[str, Any], inside_tool: bool) -> bool:
    """`span`'s OpenInference attributes (`attrs`, flattened) as the GenAI attributes they mean
    (module docstring); whether it is of a kind that is read. An LLM or TOOL span inside a
    TOOL span is the tool's own work: it is named as an operation that is skipped and said."""
    kind = _kind(attrs)
    where = f"{span.where}.attributes"
    operation = _OPERATIONS.get(kind) if kind is not None else None
    genai: dict[str, Any] = {}
    if inside_tool and operation in ("chat", "execute_tool"):
        operation = f"{kind} inside a TOOL span: the tool's own work"
    elif operation == "chat":
        genai["gen_ai.input.messages"] = _messages(attrs, "llm.input_messages", where)
        genai["gen_ai.output.messages"] = _messages(attrs, "llm.output_messages", where)
        genai["gen_ai.usage.input_tokens"] = attrs.get("llm.token_count.prompt")
        genai["gen_ai.usage.output_tokens"] = attrs.get("llm.token_count.completion")
    elif operation == "execute_tool":
        genai["gen_ai.tool.name"] = attrs.get("tool.name")
        genai["gen_ai.tool.call.id"] = attrs.get("tool.id")
        genai["gen_ai.tool.call.arguments"] = attrs.get("input.value")
        genai["gen_ai.tool.call.result"] = attrs.get("output.value")
        envelope = unwrap_tool_message(attrs.get("output.value"))
        if envelope is not None:  # LangChain's ToolMessage recorded as the output (`tool_envelope`)
            genai["gen_ai.tool.call.result"] = envelope.content
            genai["gen_ai.tool.call.id"] = attrs.get("tool.id") or envelope.tool_call_id
            # with `handle_tool_error` the span stays OK: the message's status is the only sign of failure
            span.failed = span.failed or envelope.is_error
    elif operation is not None and span.root:
        asked = _text(attrs, "input", where)
        said = _text(attrs, "output", where)
        if asked is not None:
            genai["gen_ai.input.messages"] = [_message("user", [_part_text(asked)], f"{where}.input.value")]
        if said is not None:
            genai["gen_ai.output.messages"] = [_message("assistant", [_part_text(said)], f"{where}.output.value")]
    if operation is not None:
        genai["gen_ai.operation.name"] = operation
    for name, key in (("session.id", "gen_ai.conversation.id"), ("agent.name", "gen_ai.agent.name")):
        if isinstance(attrs.get(name), str) and attrs[name]:
            genai[key] = attrs[name]
    if span.root:
        genai |= _metadata(attrs, f"{where}.metadata")
    kept = {k: v for k, v in attrs.items() if not any(k == p or k.startswith(f"{p}.") for p in _OWN)}
    span.attrs = kept | {k: v for k, v in genai.items() if v is not None}
    return operation is not None


def _flat(attrs: dict[str, Any]) -> dict[str, Any]:
    """Attributes with every nested object and list of objects flattened to dotted keys
    (``{"llm": {"input_messages": [{…}]}}`` → ``llm.input_messages.0.…``); lists of plain
    values (`tag.tags`) are kept as they are."""
    flat: dict[str, Any] = {}
    stack = list(attrs.items())[::-1]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict) and key != "metadata":  # `metadata` is one value (final_state may be an object)
            stack += [(f"{key}.{k}", v) for k, v in reversed(value.items())]
        elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            stack += [(f"{key}.{n}", item) for n, item in reversed(list(enumerate(value)))]
        else:
            flat.setdefault(key, value)
    return flat


def _indexed(attrs: dict[str, Any], prefix: str, where: str) -> list[tuple[dict[str, Any], str]]:
    """The objects flattened under `prefix` (``prefix.<index>.<key>``), in index order, each
    with its keys relative to it and its field path (`where` + its prefix)."""
    items: dict[int, dict[str, Any]] = {}
    start = f"{prefix}."
    for key, value in attrs.items():
        if not key.startswith(start):
            continue
        index, _, rest = key[len(start) :].partition(".")
        if not _INDEX.fullmatch(index) or not rest:
            raise TraceError(f"{where}.{key}", f"a flattened list attribute is {prefix}.<index>.<key>, index ≥ 0")
        items.setdefault(int(index), {})[rest] = value
    return [(items[n], f"{where}.{prefix}.{n}") for n in sorted(items)]


def _messages(attrs: dict[str, Any], prefix: str, where: str) -> list[dict[str, Any]]:
    """The messages under `prefix` as GenAI messages (`{"role", "parts"}`, with their paths)."""
    messages = []
    for fields, here in _indexed(attrs, prefix, where):
        role = fields.get("message.role")
        if not isinstance(role, str) or role.lower() not in _ROLES:
            raise TraceError(f"{here}.message.role", f"unknown role {role!r}: one of {', '.join(_ROLES)}")
        role = _ROLES[role.lower()]
        parts: list[dict[str, Any]] = []
        content = fields.get("message.content")
        if content is not None:
            parts.append(
                _part_text(content if isinstance(content, str) else json.dumps(content), f"{here}.message.content")
            )
        for item, there in _indexed(fields, "message.contents", here):
            kind = item.get("message_content.type", "text")
            if kind == "text":
                parts.append(_part_text(str(item.get("message_content.text", "")), there))
            else:
                parts.append({"type": kind, WHERE: there})
        if role == "tool" and isinstance(fields.get("message.tool_call_id"), str):
            text = "".join(str(p.get("content", "")) for p in parts if p.get("type") == "text")
            parts = [
                {"type": "tool_call_response", "id": fields["message.tool_call_id"], "response": text, WHERE: here}
            ]
        for call, there in _indexed(fields, "message.tool_calls", here):
            name = call.get("tool_call.function.name")
            if not isinstance(name, str) or not name:
                raise TraceError(f"{there}.tool_call.function.name", "a tool call needs the tool's name")
            arguments = call.get("tool_call.function.arguments")
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("tool_call.id"),
                    "name": name,
                    "arguments": arguments,
                    WHERE: there,
                }
            )
        if isinstance(fields.get("message.function_call_name"), str):
            arguments = fields.get("message.function_call_arguments_json")
            name = fields["message.function_call_name"]
            parts.append({"type": "tool_call", "name": name, "arguments": arguments, WHERE: f"{here}.message"})
        messages.append(_message(role, parts, here))
    return messages


def _message(role: str, parts: list[dict[str, Any]], where: str) -> dict[str, Any]:
    return {"role": role, "parts": parts, WHERE: where}


def _part_text(text: str, where: str | None = None) -> dict[str, Any]:
    return {"type": "text", "content": text, **({WHERE: where} if where else {})}


def _text(attrs: dict[str, Any], name: str, where: str) -> str | None:
    """The text of `<name>.value` (module docstring), or None when it holds none."""
    value, mime = attrs.get(f"{name}.value"), attrs.get(f"{name}.mime_type", "text/plain")
    if not isinstance(value, str):
        return None
    if mime != "application/json":
        return value
    parsed = parse_json_text(value, None)
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, dict):
        return next((parsed[k] for k in _TEXT_KEYS if isinstance(parsed.get(k), str)), None)
    return None


def _unflattened(attrs: dict[str, Any], prefix: str) -> dict[str, Any] | None:
    """The object that the attributes `prefix.a`, `prefix.b.c`… were flattened from (`{"a": …,
    "b": {"c": …}}`), None when there are none. Phoenix stores a span's `metadata` as an object and
    serves it so flattened. A key that is both a value and a parent (`b` and `b.c`) keeps the
    first seen; a flattened list comes back as an object keyed "0", "1"…."""
    rebuilt: dict[str, Any] = {}
    for key, value in attrs.items():
        if not key.startswith(f"{prefix}."):
            continue
        *parents, last = key[len(prefix) + 1 :].split(".")
        node: Any = rebuilt
        for name in parents:
            node = node.setdefault(name, {}) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.setdefault(last, value)
    return rebuilt or None


def _metadata(attrs: dict[str, Any], where: str) -> dict[str, Any]:
    """A root span's `metadata` (JSON text of an object, an object, or flattened: `_unflattened`)
    as attributes: its scalar keys that no attribute has, and `final_state`; none without it."""
    raw = attrs["metadata"] if "metadata" in attrs else _unflattened(attrs, "metadata")
    if raw is None:
        return {}
    value = parse_json_text(raw, None) if isinstance(raw, str) else raw
    if not isinstance(value, dict):
        raise TraceError(where, "must be a JSON object (as text)")
    found = {k: v for k, v in value.items() if isinstance(v, (str, int, float, bool)) and k not in attrs}
    if FINAL_STATE in value:
        found[FINAL_STATE] = value[FINAL_STATE]
    return found
