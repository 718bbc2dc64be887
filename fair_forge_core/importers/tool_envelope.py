"""A LangChain `ToolMessage` recorded where the tool's output belongs → the tool's output.

LangChain runs a tool called by the model (`BaseTool.invoke` with a `ToolCall`) and returns a
`ToolMessage`, not the tool's return value; integrations that record "the tool's output" record
that message (Langfuse's LangChain `CallbackHandler`, OpenInference's `LangChainInstrumentor`),
serialised. `unwrap_tool_message` reads the tool's result out of it, and `read_tool_fields` is the
one rule for a tool message's fields, used for every tool message the importers read
(`langchain_messages.read_tool_message`).

The rule, exactly:

- a value is a serialised `ToolMessage` in one of three shapes, and nothing else is:
  - `model_dump` (what Langfuse records): an object whose `type` is ``"tool"`` and which has the
    keys `content` and `tool_call_id` (both required fields of `ToolMessage`, so a tool's own
    output that merely has a `type` is not taken for one);
  - `dumpd`: ``{"lc": 1, "type": "constructor", "id": [..., "ToolMessage"], "kwargs": {…}}``
    (`id` ending in ``ToolMessage`` or ``ToolMessageChunk``; `kwargs` an object with `content`);
  - `messages_to_dict`: ``{"type": "tool", "data": {…}}`` (`data` an object with `content`);
- or a JSON text (the form a span attribute carries) holding one of these (`parse_json_text`);
- the result is its `content`: a string as it is; a list of content blocks with every plain
  string item made a ``{"type": "text", "text": …}`` block (LangChain's content is ``str |
  list[str | dict]``), so `trace.read_result` joins their text; any other value as it is;
- `status` ``"error"`` (exactly) is an error (`is_error`); ``"success"``, absent (`dumpd` leaves
  the default out) or anything else is not;
- `tool_call_id` is kept when it is a non-empty string (the call the result answers);
  `artifact` (the raw output kept for the program, not shown to the model) is not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fair_forge_core.importers.trace import parse_json_text

_CLASSES = frozenset({"ToolMessage", "ToolMessageChunk"})


@dataclass(frozen=True)
class ToolResult:
    """What a tool message says of its call: the result, whether it is an error, the call's id."""

    content: Any
    is_error: bool
    tool_call_id: str | None


def read_tool_fields(fields: dict[str, Any]) -> ToolResult:
    """The result of a tool message's fields (the message itself, `data` or `kwargs`), by the
    module docstring's rule for `content`, `status` and `tool_call_id`."""
    content = fields.get("content")
    if isinstance(content, list):
        content = [{"type": "text", "text": item} if isinstance(item, str) else item for item in content]
    call_id = fields.get("tool_call_id")
    return ToolResult(
        content, fields.get("status") == "error", call_id if isinstance(call_id, str) and call_id else None
    )


def tool_message_fields(value: Any) -> dict[str, Any] | None:
    """The fields of `value` when it is a serialised `ToolMessage` (module docstring), else None."""
    if not isinstance(value, dict):
        return None
    if "lc" in value:
        class_id, fields = value.get("id"), value.get("kwargs")
        if value.get("type") != "constructor" or not isinstance(class_id, list) or not class_id:
            return None
        return fields if class_id[-1] in _CLASSES and isinstance(fields, dict) and "content" in fields else None
    if value.get("type") != "tool":
        return None
    data = value.get("data")
    if isinstance(data, dict) and "content" in data:
        return data
    return value if "content" in value and "tool_call_id" in value else None


def unwrap_tool_message(value: Any) -> ToolResult | None:
    """The tool's result when `value` (a recorded tool output) is a serialised `ToolMessage` or
    JSON text of one; None when it is anything else (then `value` is the tool's output itself)."""
    if isinstance(value, str):
        stripped = value.lstrip()
        if not stripped.startswith("{"):  # only an object can be a ToolMessage: skip parsing other text
            return None
        value = parse_json_text(stripped, None)
    fields = tool_message_fields(value)
    return read_tool_fields(fields) if fields is not None else None
