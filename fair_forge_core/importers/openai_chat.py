"""OpenAI chat-completions messages → `ImportedTrace`s.

A trace is `{"id", "messages", "metadata"?, "assistant_id"?}` or a bare list of messages
(its id is then `trace-<index>`). The rules (shared ones in `importers.trace`):

- a `user` message starts a turn (its text is the query: a string, or the `text` parts of
  a list of content parts); `system` and `developer` messages are context, skipped;
- each `assistant` message with `tool_calls` is one step; each call's
  `function.arguments` is a JSON string;
- a `tool` message answers the call with its `tool_call_id`; chat-completions has no
  error flag, so a tool's error message is kept as its result, as text.
"""

from __future__ import annotations

from typing import Any

from fair_forge_core.importers.trace import (
    ImportedTrace,
    RawCall,
    TraceError,
    TurnBuilder,
    read_text,
    traces_of_message_lists,
)

_CONTEXT_ROLES = frozenset({"system", "developer"})


def traces_from_openai(data: Any) -> list[ImportedTrace]:
    """The traces of `data`: a list of traces, or one trace (see the module docstring)."""
    return traces_of_message_lists(data, _is_message, _read_messages)


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value


def _read_messages(messages: list[Any], where: str, builder: TurnBuilder) -> None:
    for position, message in enumerate(messages):
        here = f"{where}[{position}]"
        if not _is_message(message):
            raise TraceError(here, "a message is an object with a `role`")
        role = message["role"]
        if not isinstance(role, str):
            raise TraceError(f"{here}.role", "must be a string")
        if role in _CONTEXT_ROLES:
            continue
        if role == "user":
            builder.user(read_text(message.get("content"), f"{here}.content"))
        elif role == "assistant":
            builder.assistant(assistant_text(message, here), here)
            builder.step(tool_calls(message, here), here)
        elif role == "tool":
            builder.result(message.get("tool_call_id"), message.get("content"), f"{here}.tool_call_id")
        else:
            raise TraceError(f"{here}.role", f"unknown role {role!r}")


def assistant_text(message: dict[str, Any], where: str) -> str:
    """An assistant message's text: `""` when its `content` is null (see `read_text`).
    Shared with formats that embed chat-completions messages (OpenAI Agents SDK spans)."""
    content = message.get("content")
    return "" if content is None else read_text(content, f"{where}.content")


def tool_calls(message: dict[str, Any], where: str) -> list[RawCall]:
    """An assistant message's `tool_calls`, each a `RawCall` whose `call_id` is the call's `id`."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise TraceError(f"{where}.tool_calls", "must be a list")
    return [read_tool_call(call, f"{where}.tool_calls[{n}]") for n, call in enumerate(calls)]


def read_tool_call(call: Any, where: str) -> RawCall:
    """One chat-completions `tool_calls` entry (`{"id", "function": {"name", "arguments"}}`) as a `RawCall`."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise TraceError(f"{where}.function", "must be an object with a `name`")
    call_id = call.get("id")
    return RawCall(
        name=function.get("name"),
        arguments=function.get("arguments"),
        where=where,
        call_id=call_id if isinstance(call_id, str) else None,
    )
