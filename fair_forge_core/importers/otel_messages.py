"""The messages of one GenAI span (`otel_genai`): its `gen_ai.input.messages` /
`gen_ai.output.messages` attributes (JSON, strictly read), or the older per-message events
(`gen_ai.user.message`, `gen_ai.choice`, …) turned into the same `{"role", "parts"}` shape."""

from __future__ import annotations

import json
from typing import Any

from fair_forge_core.importers.otel_spans import EVENT_ROLES, WHERE, Span
from fair_forge_core.importers.trace import TraceError
from fair_forge_core.schemas.json_input import loads_json

Message = tuple[dict[str, Any], str]  # a message ({"role", "parts"}) and its field path


def span_messages(span: Span, warnings: list[str]) -> tuple[list[Message], list[Message]]:
    """A span's input and output messages, from its attributes or its older events;
    system messages left out, as are messages without parts (content not captured)."""
    inputs, outputs = _attribute(span, "gen_ai.input.messages"), _attribute(span, "gen_ai.output.messages")
    for name, body, where in span.events:
        role = EVENT_ROLES[name]
        if name == "gen_ai.choice":
            if body.get("index", 0) not in (0, "0"):
                continue  # the later choices are said below, with those of output attributes
            body = body.get("message") if isinstance(body.get("message"), dict) else {}
            where = f"{where}.message"
        message = {"role": role, "parts": _event_parts(body, where)}
        (outputs if name == "gen_ai.choice" else inputs).append((message, where))
    choices = sum(1 for name, body, _ in span.events if name == "gen_ai.choice") or len(outputs)
    if choices > 1:
        warnings.append(f"{span.where}: {choices} output choices; the first is read")
    keep = [(m, w) for m, w in inputs if m["role"] not in ("system", "developer") and m["parts"]]
    return keep, [(m, w) for m, w in outputs if m["parts"]]


def _attribute(span: Span, key: str) -> list[Message]:
    raw, where = span.attrs.get(key), f"{span.where}.attributes.{key}"
    if raw is None:
        return []
    if isinstance(raw, str):
        try:
            raw = loads_json(raw)  # strict JSON: NaN, ±Infinity and lone surrogates are refused too
        except (ValueError, RecursionError):  # nested deeper than Python's parser goes: not JSON to us
            raise TraceError(where, "is not JSON") from None
    if not isinstance(raw, list):
        raise TraceError(where, "must be a list of messages")
    messages = []
    for n, message in enumerate(raw):
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise TraceError(f"{where}[{n}]", "a message is an object with a `role` and a list of `parts`")
        parts = [p if isinstance(p, dict) else {"type": type(p).__name__} for p in message["parts"]]
        parts = [p for p in parts if p.get("type") != "text" or str(p.get("content", "")).strip()]
        messages.append(({"role": message.get("role"), "parts": parts}, str(message.get(WHERE) or f"{where}[{n}]")))
    return messages


def _event_parts(body: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """An older event's body (`content`, `tool_calls`, `id`) as the parts of a message;
    `tool_calls` is a list of objects (`{"id", "function": {"name", "arguments"}}`)."""
    parts: list[dict[str, Any]] = []
    content, call_id = body.get("content"), body.get("id", body.get("tool_call_id"))
    if call_id is not None and "content" in body:
        parts.append({"type": "tool_call_response", "id": call_id, "response": content})
    elif isinstance(content, list):
        parts += [{"type": "text", "content": p["text"]} for p in content if isinstance(p, dict) and "text" in p]
    elif content not in (None, ""):
        parts.append({"type": "text", "content": content if isinstance(content, str) else json.dumps(content)})
    tool_calls = body.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise TraceError(f"{where}.tool_calls", "must be a list of tool calls")
    for n, call in enumerate(tool_calls):
        if not isinstance(call, dict):
            raise TraceError(f"{where}.tool_calls[{n}]", 'a tool call is an object ({"id", "function"})')
        function = call["function"] if isinstance(call.get("function"), dict) else {}
        parts.append({"type": "tool_call", "id": call.get("id"), **function})
    return parts
