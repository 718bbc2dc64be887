"""The judge's verdict: what providers are asked for, and how it is read from a reply.

A reply is either a structured-output object (a dict, or a pydantic model) or a chat
message whose text holds the verdict as JSON: in the last block between the prompt's
markers, failing that the last JSON object. A verdict the caller wrote itself (an agent
answer quoting ``{"score": 1.0}``) is never taken; see `parse_verdict`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

VERDICT_SCHEMA: dict[str, Any] = {
    "title": "judge_verdict",
    "description": "The grade of one agent answer against its ground truth.",
    "type": "object",
    "properties": {
        "score": {"type": "number", "description": "Correctness from 0.0 to 1.0."},
        "reasoning": {"type": "string", "description": "One or two sentences explaining the score."},
    },
    "required": ["score", "reasoning"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Verdict:
    score: float
    reasoning: str


class VerdictParseError(ValueError):
    """The judge's reply holds no usable verdict."""


MAX_REASONING_CHARS = 1_000
"""Reasoning kept per verdict: a longer text is cut (and marked), so a judge that rambles
cannot make every copy of its verdict in the response and the logs large."""

MAX_REPLY_CHARS = 64_000
"""How much of a judge's message text is searched for a verdict (the end of it, where the
last block is); a verdict is a few hundred characters."""


def compact(text: str) -> str:
    """`text` without whitespace: how a verdict's text is compared with the caller's."""
    return "".join(text.split())


def parse_verdict(raw: Any, *, bos: str, eos: str, caller_text: str = "") -> Verdict:
    """A `Verdict` from a structured-output dict/object or a chat message.

    Message text: the JSON of the last block between `bos` and `eos`; failing that, the
    last JSON object anywhere in the text (only the last `MAX_REPLY_CHARS` characters are
    searched). A block whose text, whitespace aside, occurs in `caller_text` (the
    `compact` of what the caller sent: an agent answer carrying a forged
    ``{"score": 1.0}`` the model quoted back) is never taken. The score must be a finite
    number (not a bool) in [0, 1], or it is a `VerdictParseError` — never clamped. The
    reasoning is kept to `MAX_REASONING_CHARS`.
    """
    if isinstance(raw, BaseMessage):
        raw = _json_in_text(_message_text(raw)[-MAX_REPLY_CHARS:], bos=bos, eos=eos, caller_text=caller_text)
    elif hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        raise VerdictParseError(f"expected a JSON object, got {type(raw).__name__}")
    score = raw.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise VerdictParseError("the reply has no numeric score")
    if not 0.0 <= score <= 1.0:
        raise VerdictParseError(f"score {score} is outside [0, 1]")
    reasoning = raw.get("reasoning", "")
    reasoning = reasoning if isinstance(reasoning, str) else str(reasoning)
    if len(reasoning) > MAX_REASONING_CHARS:
        reasoning = reasoning[: MAX_REASONING_CHARS - 1] + "…"
    return Verdict(score=float(score), reasoning=reasoning)


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(block if isinstance(block, str) else str(block.get("text", "")) for block in content)


def _marker_blocks(text: str, bos: str, eos: str) -> list[str]:
    """The texts between each `bos` and the next `eos` (or the end), in order."""
    blocks = []
    at = text.find(bos) if bos else -1
    while at >= 0:
        start = at + len(bos)
        end = text.find(eos, start) if eos else -1
        blocks.append(text[start : end if end >= 0 else None])
        at = text.find(bos, end + len(eos)) if end >= 0 else -1
    return blocks


def _json_objects(text: str) -> list[str]:
    """The texts of the top-level JSON objects in `text`, in order."""
    decoder = json.JSONDecoder()
    found, at = [], text.find("{")
    while at >= 0:
        try:
            _, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        found.append(text[at:end])
        at = text.find("{", end)
    return found


def _json_in_text(text: str, *, bos: str, eos: str, caller_text: str) -> Any:
    """The verdict object of a reply: the last marker block that parses, else the last JSON
    object, skipping any whose text occurs in `caller_text` (see `parse_verdict`)."""
    for candidates in (_marker_blocks(text, bos, eos), _json_objects(text)):
        for candidate in reversed(candidates):
            try:
                value = json.loads(candidate)
            except ValueError:
                continue
            if isinstance(value, dict) and not (caller_text and compact(candidate) in caller_text):
                return value
    raise VerdictParseError("no JSON object in the reply (a verdict quoted from the caller's text is not one)")
