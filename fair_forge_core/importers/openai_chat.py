"""OpenAI chat-completions messages → `ImportedTrace`s.

A trace is `{"id", "messages", "metadata"?, "assistant_id"?}` or a bare list of messages
(its id is then `trace-<index>`). The rules:

- a `user` message starts a turn (its text is the query: a string, or the `text` parts of
  a list of content parts); `system` and `developer` messages are context, skipped;
- within a turn, each `assistant` message with `tool_calls` is one step: its calls share
  that `step` (they were made in parallel), numbered 1, 2, … per turn; each call's
  `function.arguments` is a JSON string that must hold an object (`""` is `{}`);
- a `tool` message answers the call with its `tool_call_id`; its content is the call's
  `result`, parsed as JSON when it is JSON, else kept as text (an error message
  included). A call never answered has no `result`; an id no call made is an error;
- the turn's answer is the last non-empty `assistant` content of the turn; a turn without
  one is an error (there is nothing to judge).
"""

from __future__ import annotations

import json
from typing import Any

from fair_forge_core.importers.trace import ImportedTrace, ImportedTurn, TraceError

_CONTEXT_ROLES = frozenset({"system", "developer"})


def traces_from_openai(data: Any) -> list[ImportedTrace]:
    """The traces of `data`: a list of traces, or one trace (see the module docstring)."""
    items = data if isinstance(data, list) and (not data or not _is_message(data[0])) else [data]
    return [_trace(item, f"traces[{index}]", index) for index, item in enumerate(items)]


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value


def _trace(item: Any, where: str, index: int) -> ImportedTrace:
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
    turns = _turns(item["messages"], f"{where}.messages")
    if not turns:
        raise TraceError(f"{where}.messages", "holds no user message")
    return ImportedTrace(trace_id=trace_id, assistant_id=assistant_id, turns=turns, metadata=metadata)


def _turns(messages: list[Any], where: str) -> list[ImportedTurn]:
    turns: list[ImportedTurn] = []
    answers: list[str | None] = []
    calls: dict[str, dict[str, Any]] = {}  # tool_call_id → the call, for the tool message that answers it
    step = 0
    for position, message in enumerate(messages):
        here = f"{where}[{position}]"
        if not _is_message(message):
            raise TraceError(here, "a message is an object with a `role`")
        role = message["role"]
        if role in _CONTEXT_ROLES:
            continue
        if role == "user":
            turns.append(ImportedTurn(query=_text(message.get("content"), f"{here}.content"), answer=""))
            answers.append(None)
            step = 0
            continue
        if not turns:
            raise TraceError(here, f"a {role!r} message before any user message")
        if role == "assistant":
            text = _text(message.get("content"), f"{here}.content") if message.get("content") is not None else ""
            if text.strip():
                answers[-1] = text
            if message.get("tool_calls"):
                step += 1
                for number, call in enumerate(message["tool_calls"]):
                    made = _call(call, f"{here}.tool_calls[{number}]", step)
                    calls[str(call.get("id"))] = made
                    turns[-1].tools_used.append(made)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in calls:
                raise TraceError(f"{here}.tool_call_id", f"no tool call has the id {call_id!r}")
            calls[call_id]["result"] = _result(message.get("content"))
        else:
            raise TraceError(f"{here}.role", f"unknown role {role!r}")
    for number, (turn, answer) in enumerate(zip(turns, answers, strict=True)):
        if answer is None:
            raise TraceError(where, f"turn {number} ({turn.query[:60]!r}) has no assistant answer")
        turn.answer = answer
    return turns


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    raise TraceError(where, "must be a string or a list of content parts")


def _call(call: Any, where: str, step: int) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise TraceError(f"{where}.function", "must be an object with a `name`")
    raw = function.get("arguments", "")
    try:
        parameters = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        raise TraceError(f"{where}.function.arguments", "not valid JSON") from None
    if not isinstance(parameters, dict):
        raise TraceError(f"{where}.function.arguments", "must hold a JSON object")
    return {"tool_name": function["name"], "parameters": parameters, "step": step}


def _result(content: Any) -> Any:
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if isinstance(content, str):
        try:
            return json.loads(content)
        except ValueError:
            return content
    return content
