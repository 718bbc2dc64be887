"""LangChain messages → `ImportedTrace`s.

A trace is `{"id", "messages", "metadata"?, "assistant_id"?}` or a bare list of messages
(its id is then `trace-<index>`); the input is a list of traces or one trace. Errors name
the field from the root `traces` (``traces[2].messages[5].data.tool_calls[0]``).

A message may be serialised in any of the ways LangChain writes one (langchain_core
`messages/base.py` `message_to_dict`, `load/serializable.py` `Serializable.to_json`), all
read by `message_fields`:

- `messages_to_dict`: `{"type": "human"|"ai"|"tool"|"system"|"chat"|"AIMessageChunk"…, "data": {…}}`;
- `dumpd`: `{"lc": 1, "type": "constructor", "id": [..., "HumanMessage"], "kwargs": {…}}`
  (the class name, last in `id`, gives the kind; default fields such as a tool message's
  `status: "success"` are left out by LangChain);
- the message's own fields, `{"type": "ai", "content": …}` (`model_dump`, as LangSmith
  stores messages), or an OpenAI-style `{"role": "user"|"assistant"|"tool"|…}`, which
  LangChain's `convert_to_messages` also accepts.

The rules (shared ones in `importers.trace`):

- a human message starts a turn (its text is the query: a string, or the `text` parts of a
  list of content blocks); system and developer messages are context, skipped; a
  `RemoveMessage` (LangGraph state) is skipped with a warning; a `ChatMessage` is read by
  its `role`; a legacy `FunctionMessage` is an error (it answers no call id);
- an AI message is one step: its `tool_calls` (`name`, `args` object, `id`) then its
  `invalid_tool_calls` (`args` the text that failed to parse, kept in
  `unparsed_arguments`), in that order, as LangChain keeps them apart. As LangChain's own
  `AIMessage` does, when neither has an entry the calls are read from
  `tool_call_chunks`, else from `additional_kwargs.tool_calls` (OpenAI format). Its text
  is the `text` blocks of its content; `tool_use`/`tool_call` content blocks repeat its
  `tool_calls` and are not counted again, unless their `id` is in neither list: then the
  block is read as a call, with a warning. Server-side tool blocks are not read (warning);
- a tool message answers the call with its `tool_call_id`; its content is the result and
  `status: "error"` makes it `is_error`, by the rule every importer applies to a tool message
  (`tool_envelope`); its `artifact` (the raw output kept for the program, not the model) is
  not read.
"""

from __future__ import annotations

from typing import Any

from fair_forge_core.importers.openai_chat import read_tool_call
from fair_forge_core.importers.tool_envelope import read_tool_fields
from fair_forge_core.importers.trace import (
    ImportedTrace,
    RawCall,
    TraceError,
    TurnBuilder,
    read_text,
    traces_of_message_lists,
)

# Every `type` of `messages_to_dict`, class name of `dumpd`, `role` of an OpenAI-style
# message, to what it is here.
_KINDS = {
    **dict.fromkeys(("human", "user", "HumanMessage", "HumanMessageChunk"), "human"),
    **dict.fromkeys(("ai", "assistant", "AIMessage", "AIMessageChunk"), "ai"),
    **dict.fromkeys(("tool", "ToolMessage", "ToolMessageChunk"), "tool"),
    **dict.fromkeys(("system", "developer", "SystemMessage", "SystemMessageChunk"), "system"),
    **dict.fromkeys(("chat", "ChatMessage", "ChatMessageChunk"), "chat"),
    **dict.fromkeys(("function", "FunctionMessage", "FunctionMessageChunk"), "function"),
    **dict.fromkeys(("remove", "RemoveMessage"), "remove"),
}
_CALL_BLOCKS = {"tool_use": "input", "tool_call": "args"}  # block type → where its arguments are
_SERVER_BLOCKS = frozenset({"server_tool_use", "server_tool_call"})


def traces_from_langchain(data: Any) -> list[ImportedTrace]:
    """The traces of `data`: a list of traces, or one trace (see the module docstring)."""
    return traces_of_message_lists(data, is_message, read_messages)


def is_message(value: Any) -> bool:
    """Whether `value` is a message in one of the shapes `message_fields` reads: a LangChain
    serialised object, or an object whose `role` or `type` is a message kind."""
    if not isinstance(value, dict):
        return False
    return "lc" in value or _kind(value.get("role")) is not None or _kind(value.get("type")) is not None


def message_fields(message: Any, where: str) -> tuple[str, dict[str, Any], str]:
    """`(kind, fields, fields' path)` of a message in any shape of the module docstring;
    kind is human, ai, tool, system, function or remove."""
    if not isinstance(message, dict):
        raise TraceError(where, "a message is an object")
    if "lc" in message:
        class_id, fields = message.get("id"), message.get("kwargs")
        if message.get("type") != "constructor" or not isinstance(class_id, list) or not class_id:
            raise TraceError(f"{where}.type", "a serialised message is a `constructor` with an `id`")
        kind, where_kind, fields_where = _kind(class_id[-1]), f"{where}.id", f"{where}.kwargs"
    elif "role" in message:
        kind, where_kind, fields, fields_where = _kind(message["role"]), f"{where}.role", message, where
    elif "data" in message:
        kind, where_kind, fields, fields_where = (
            _kind(message.get("type")),
            f"{where}.type",
            message["data"],
            f"{where}.data",
        )
    else:
        kind, where_kind, fields, fields_where = _kind(message.get("type")), f"{where}.type", message, where
    if not isinstance(fields, dict):
        raise TraceError(fields_where, "must be an object")
    if kind == "chat":  # a ChatMessage: its role says what it is
        kind, where_kind = _kind(fields.get("role")), f"{fields_where}.role"
        kind = None if kind == "chat" else kind
    if kind is None:
        raise TraceError(where_kind, "is not a LangChain message type")
    return kind, fields, fields_where


def read_ai_message(fields: dict[str, Any], where: str, warnings: list[str]) -> tuple[str, list[RawCall]]:
    """`(text, calls)` of an AI message's fields (see the module docstring)."""
    content = fields.get("content")
    text = "" if content is None else text_of(content, f"{where}.content")
    calls: list[RawCall] = []
    for key in ("tool_calls", "invalid_tool_calls"):
        calls += [_lc_call(call, f"{where}.{key}[{n}]") for n, call in enumerate(_list(fields, key, where))]
    if not calls:
        calls = [
            _lc_call(c, f"{where}.tool_call_chunks[{n}]")
            for n, c in enumerate(_list(fields, "tool_call_chunks", where))
        ]
    extra = fields.get("additional_kwargs")
    if not calls and isinstance(extra, dict):
        calls = [
            _lc_call(c, f"{where}.additional_kwargs.tool_calls[{n}]")
            for n, c in enumerate(_list(extra, "tool_calls", f"{where}.additional_kwargs"))
        ]
    known = {call.call_id for call in calls}
    for n, block in enumerate(content if isinstance(content, list) else []):
        here, kind = f"{where}.content[{n}]", block.get("type") if isinstance(block, dict) else None
        block_id = block.get("id") if isinstance(block, dict) else None
        if not isinstance(kind, str) or not isinstance(block_id, str | None):
            if not isinstance(block, str):  # a plain string is text, read above
                warnings.append(f"{here}: not a content block (its type or id is not a string); left out")
            continue
        if kind in _CALL_BLOCKS and block_id not in known:
            warnings.append(f"{here}: a {kind} block in no tool_calls; read as a call")
            call_id = block.get("id")
            calls.append(
                RawCall(
                    block.get("name"),
                    block.get(_CALL_BLOCKS[kind]),
                    here,
                    call_id if isinstance(call_id, str) else None,
                )
            )
        elif kind in _SERVER_BLOCKS:
            warnings.append(f"{here}: a tool the model provider ran itself ({block.get('name')!r}); not read as a call")
    return text, calls


def read_tool_message(fields: dict[str, Any]) -> tuple[Any, Any, bool]:
    """`(tool_call_id, content, is_error)` of a tool message's fields: content and error by the
    one rule for tool messages (`tool_envelope.read_tool_fields`); the id as written, so that an
    id that is no string is named in the error of the result it cannot answer."""
    read = read_tool_fields(fields)
    return fields.get("tool_call_id"), read.content, read.is_error


def read_messages(messages: list[Any], where: str, builder: TurnBuilder) -> None:
    """Feed `messages` (their list at `where`) to `builder`, by the module docstring's rules."""
    for position, message in enumerate(messages):
        here = f"{where}[{position}]"
        kind, fields, fields_where = message_fields(message, here)
        if kind == "human":
            builder.user(text_of(fields.get("content"), f"{fields_where}.content"))
        elif kind == "ai":
            text, calls = read_ai_message(fields, fields_where, builder.warnings)
            builder.assistant(text, here)
            builder.step(calls, here)
        elif kind == "tool":
            call_id, content, is_error = read_tool_message(fields)
            builder.result(call_id, content, f"{fields_where}.tool_call_id", is_error=is_error)
        elif kind == "remove":
            builder.warnings.append(f"{here}: a RemoveMessage (LangGraph state), skipped")
        elif kind == "function":
            raise TraceError(here, "a legacy FunctionMessage answers no tool call id; it cannot be read")


def last_text(messages: Any, where: str, kind: str) -> str | None:
    """The text of the last `kind` message of a list, `None` if none (of LangChain's batches of
    messages, `[[…]]`, the first is read); in it a text is a human message and `[role, content]`
    a message, as LangChain's `convert_to_messages` reads them."""
    if isinstance(messages, list) and messages and isinstance(messages[0], list) and not _is_pair(messages[0]):
        messages, where = messages[0], f"{where}[0]"
    for position in range(len(messages) - 1 if isinstance(messages, list) else -1, -1, -1):
        message, here = messages[position], f"{where}[{position}]"
        if isinstance(message, str):
            message = {"role": "user", "content": message}
        elif _is_pair(message):
            message = {"role": message[0], "content": message[1]}
        found, fields, fields_where = message_fields(message, here)
        if found == kind:
            content = fields.get("content")
            return "" if content is None else text_of(content, f"{fields_where}.content")
    return None


def _is_pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)


def _kind(name: Any) -> str | None:
    return _KINDS.get(name) if isinstance(name, str) else None


def text_of(content: Any, where: str) -> str:
    """A message's text: `read_text`, where a content list may also hold plain strings (LangChain's
    `content: str | list[str | dict]`)."""
    if isinstance(content, list):
        content = [{"type": "text", "text": part} if isinstance(part, str) else part for part in content]
    return read_text(content, where)


def _list(fields: dict[str, Any], key: str, where: str) -> list[Any]:
    value = fields.get(key) or []
    if not isinstance(value, list):
        raise TraceError(f"{where}.{key}", "must be a list")
    return value


def _lc_call(call: Any, where: str) -> RawCall:
    """A LangChain `ToolCall`/`InvalidToolCall`/`ToolCallChunk` (`name`, `args`, `id`), or an
    OpenAI-format call (with `function`), as LangChain accepts both."""
    if not isinstance(call, dict):
        raise TraceError(where, "a tool call is an object")
    if "function" in call:
        return read_tool_call(call, where)
    call_id = call.get("id")
    return RawCall(call.get("name"), call.get("args"), where, call_id if isinstance(call_id, str) else None)
