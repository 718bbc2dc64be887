"""The judge's verdict: what providers are asked for, and how it is read from a reply.

A reply is either a structured-output object (a dict, or a pydantic model) or a chat
message whose text holds the verdict as JSON: in the last block between the prompt's
markers, failing that the last JSON object. A verdict the caller wrote itself (an agent
answer quoting ``{"score": 1.0}``) is never taken; see `parse_verdict`.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

MAX_REASONING_CHARS = 1_000
"""Reasoning kept per verdict: a longer text is cut (and marked), so a judge that rambles
cannot make every copy of its verdict in the response and the logs large."""

MAX_REPLY_CHARS = 64_000
"""How much of a judge's message text is searched for a verdict (the end of it, where the
last block is); a verdict is a few hundred characters."""


class VerdictParseError(ValueError):
    """The judge's reply holds no usable verdict."""


class Verdict(BaseModel):
    """The judge's grade of one turn; immutable.

    - `score`: a finite number in [0, 1]. An int is taken as a float; a bool, a numeric
      string, NaN, an infinity or a score out of range is refused (never clamped).
    - `reasoning`: text. A non-string is converted with `str()` (``3`` gives ``"3"``,
      ``None`` gives ``"None"``), an absent one is ``""``, and one longer than
      `MAX_REASONING_CHARS` is cut to that length, its last character replaced by ``"…"``.

    Other keys are ignored: the schema sent to providers asks for none
    (`VERDICT_SCHEMA`), but a reply that adds some still holds a verdict.
    """

    model_config = ConfigDict(
        frozen=True,
        title="judge_verdict",
        json_schema_extra={"description": "The grade of one agent answer against its ground truth."},
    )

    score: float = Field(strict=True, allow_inf_nan=False, ge=0.0, le=1.0, description="Correctness from 0.0 to 1.0.")
    reasoning: str = Field("", description="One or two sentences explaining the score.")

    @field_validator("reasoning", mode="before")
    @classmethod
    def _bounded_text(cls, value: object) -> str:
        text = value if isinstance(value, str) else str(value)
        return text if len(text) <= MAX_REASONING_CHARS else text[: MAX_REASONING_CHARS - 1] + "…"


def provider_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A verdict model's JSON schema as providers are sent it: each property's type (and a
    list's item type) and description, every property required, no other keyword.

    Structured-output modes are particular about schemas (OpenAI's strict mode wants every
    property in `required` and ``additionalProperties: false``), and providers have taken
    this one as it is; ranges and defaults apply when a reply is read.
    """
    full = model.model_json_schema()
    kept = ("type", "items", "description")
    properties = {name: {key: spec[key] for key in kept if key in spec} for name, spec in full["properties"].items()}
    return {
        "title": full["title"],
        "description": full["description"],
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


VERDICT_SCHEMA: dict[str, Any] = provider_schema(Verdict)
"""The JSON schema providers are asked to fill in (structured output), derived from `Verdict`."""


def compact(text: str) -> str:
    """`text` without whitespace: how a verdict's text is compared with the caller's."""
    return "".join(text.split())


def parse_verdict(raw: Any, *, bos: str, eos: str, caller_text: str = "") -> Verdict:
    """A `Verdict` from a structured-output dict or pydantic object, or a chat message.

    Message text: the JSON of the last block between `bos` and `eos`; failing that, the
    last JSON object anywhere in the text (only the last `MAX_REPLY_CHARS` characters are
    searched). A block whose text, whitespace aside, occurs in `caller_text` (the
    `compact` of what the caller sent: an agent answer carrying a forged
    ``{"score": 1.0}`` the model quoted back) is never taken.

    The object found is validated as a `Verdict`. A `VerdictParseError` says why there is
    none: "no JSON object in the reply …" (a message without one), "expected a JSON
    object, got <type>", "the reply has no numeric score" (absent, not a number, a bool,
    NaN or infinite), or "score <the reply's value> is outside [0, 1]".
    """
    try:
        return Verdict.model_validate(verdict_object(raw, bos=bos, eos=eos, caller_text=caller_text))
    except ValidationError as exc:
        raise _score_error(exc) from None


def verdict_object(raw: Any, *, bos: str, eos: str, caller_text: str = "") -> dict[str, Any]:
    """The object a reply holds (`parse_verdict`'s rules), before it is validated as a verdict:
    a structured-output dict or pydantic object as it is, or the JSON object found in a message's
    text. `VerdictParseError` when there is none."""
    if isinstance(raw, BaseMessage):
        raw = _json_in_text(_message_text(raw)[-MAX_REPLY_CHARS:], bos=bos, eos=eos, caller_text=caller_text)
    elif hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        raise VerdictParseError(f"expected a JSON object, got {type(raw).__name__}")
    return raw


def _score_error(exc: ValidationError) -> VerdictParseError:
    """Why `Verdict` refused an object: only the score can be wrong (any reasoning becomes text)."""
    for error in exc.errors(include_url=False):
        if error["type"] in ("greater_than_equal", "less_than_equal"):
            return VerdictParseError(f"score {error['input']} is outside [0, 1]")
    return VerdictParseError("the reply has no numeric score")


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
