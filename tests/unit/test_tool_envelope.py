"""`tool_envelope`: a serialised LangChain `ToolMessage` recorded as a tool's output → the output.

The shapes are LangChain's own serialisations of a `ToolMessage` (made here by langchain_core
when it is installed: `model_dump`, `dumpd`, `messages_to_dict`), and the hand-written ones
the module docstring names.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fair_forge_core.importers.langchain_messages import read_tool_message
from fair_forge_core.importers.tool_envelope import ToolResult, unwrap_tool_message

MODEL_DUMP = {"content": "boom", "type": "tool", "tool_call_id": "c1", "status": "error", "artifact": {"raw": 1}}
DUMPD = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"]}
DUMPD |= {"kwargs": {"content": "ok", "type": "tool", "tool_call_id": "c2"}}
MESSAGES_TO_DICT = {"type": "tool", "data": {"content": ["a", {"type": "text", "text": "b"}], "tool_call_id": "c3"}}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (MODEL_DUMP, ToolResult("boom", True, "c1")),
        (json.dumps(MODEL_DUMP), ToolResult("boom", True, "c1")),  # as a span attribute holds it
        (DUMPD, ToolResult("ok", False, "c2")),  # `dumpd` leaves status "success" out
        (
            MESSAGES_TO_DICT,
            ToolResult([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], False, "c3"),
        ),
        (MODEL_DUMP | {"status": "success"}, ToolResult("boom", False, "c1")),
        (MODEL_DUMP | {"status": "ERROR"}, ToolResult("boom", False, "c1")),  # exactly "error"
        (MODEL_DUMP | {"tool_call_id": ""}, ToolResult("boom", True, None)),
    ],
)
def test_a_tool_message_gives_its_content_its_error_status_and_its_call(value: Any, expected: ToolResult) -> None:
    assert unwrap_tool_message(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"type": "tool", "content": "a tool's own output that has a type"},  # no tool_call_id
        {"content": "x", "tool_call_id": "c1"},  # no type
        DUMPD | {"id": ["langchain", "schema", "messages", "AIMessage"]},
        DUMPD | {"type": "secret"},
        {"type": "tool", "data": "x"},
        '{"content": "x"',  # JSON that does not parse
        "plain text",
        '["a list"]',
        42,
        None,
    ],
)
def test_anything_else_is_the_tool_s_output_itself(value: Any) -> None:
    assert unwrap_tool_message(value) is None


def test_langchain_s_own_serialisations_are_unwrapped() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    load = pytest.importorskip("langchain_core.load")
    message = messages.ToolMessage(content=[{"type": "text", "text": "t"}, "u"], tool_call_id="c9", status="error")
    for value in (message.model_dump(), load.dumpd(message), messages.message_to_dict(message)):
        assert unwrap_tool_message(json.loads(json.dumps(value))) == ToolResult(
            [{"type": "text", "text": "t"}, {"type": "text", "text": "u"}], True, "c9"
        )


def test_a_tool_message_in_a_message_list_is_read_by_the_same_rule() -> None:
    assert read_tool_message(MESSAGES_TO_DICT["data"]) == ("c3", unwrap_tool_message(MESSAGES_TO_DICT).content, False)
    assert read_tool_message({"tool_call_id": 7, "content": "x", "status": "error"}) == (7, "x", True)
