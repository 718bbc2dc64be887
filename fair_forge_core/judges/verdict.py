"""The judge's verdict: what providers are asked for, and how it is read from a reply.

A reply is either a structured-output object (a dict, or a pydantic model) or a chat
message whose text holds the verdict as JSON: in the last block between the prompt's
markers, failing that the last JSON object. A verdict the caller wrote itself (an agent
answer quoting ``{"score": 1.0}``, or restating it by value) is never taken; see
`parse_verdict` and `CallerText`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cached_property
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

MAX_REASONING_CHARS = 1_000
"""Reasoning kept per verdict: a longer text is cut (and marked), so a judge that rambles
cannot make every copy of its verdict in the response and the logs large."""

MAX_REPLY_CHARS = 64_000
"""How much of a judge's message text is searched for a verdict (the end of it, where the
last block is); a verdict is a few hundred characters."""


def bounded_reasoning(value: object) -> str:
    """A verdict's reasoning as text (a non-text value as its `str`), cut to `MAX_REASONING_CHARS`
    with a final "…" when longer."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_REASONING_CHARS else text[: MAX_REASONING_CHARS - 1] + "…"


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
        return bounded_reasoning(value)


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


FORGED = "a verdict quoted from the caller's text is not one"
"""Why a reply's only verdict was not taken: the caller wrote it (`CallerText`)."""

SCAN_WORK_PER_CHAR = 8
"""How many characters of JSON decoding `CallerText` may spend per character of the caller's
text (plus `SCAN_WORK_FLOOR`) looking for the objects in it. Honest text costs about one
(each object is decoded once, a stray ``{`` fails at once); only text built to make decoding
restart deep inside itself costs more, and past the budget nothing the judge replies is taken."""

SCAN_WORK_FLOOR = 4_096


class CallerText:
    """Everything the caller wrote in one judge question, as a reply's verdict candidates are
    compared with it. A candidate is the caller's own, and never taken, when

    - its text, whitespace aside, occurs in the caller's text (a verbatim quote), or
    - it says what a JSON object in the caller's text says: the same value, once each is
      read as a verdict of the question's kind (`model`: its fields only, absent ones at their
      defaults; other keys ignored, as validation ignores them), with keys in any order,
      strings compared whitespace aside and after their escapes are decoded (``\u0073core``
      is ``score``), numbers by value (``1``, ``1.0`` and ``1e0`` are one number; ``-0.0`` is
      ``0.0``). The objects are every object found in the texts at any depth, and in every
      string inside them (JSON quoted as a string), so a verdict restated from a tool result
      or an escaped transcript is caught too;
    - the caller's text is too costly to search (`SCAN_WORK_PER_CHAR`): then no candidate is
      taken, and the turn goes unscored rather than risk a forged verdict.

    Work is linear in the caller's text and computed only when a reply is read."""

    def __init__(self, texts: Iterable[str | None]) -> None:
        self._texts = [text for text in texts if text]
        self._keys_by_model: dict[type[BaseModel], set[str] | None] = {}

    @cached_property
    def compacted(self) -> str:
        return "\n".join(compact(text) for text in self._texts)

    @cached_property
    def _objects(self) -> list[dict[str, Any]] | None:
        """The JSON objects in the texts (class docstring), or None past the work budget."""
        budget = SCAN_WORK_FLOOR + SCAN_WORK_PER_CHAR * sum(len(text) for text in self._texts)
        found: list[dict[str, Any]] = []
        pending = list(self._texts)
        while pending:
            text = pending.pop()
            at = text.find("{")
            while at >= 0:
                try:
                    value, end = _DECODER.raw_decode(text, at)
                except json.JSONDecodeError as exc:
                    budget -= exc.pos - at + 1
                    at = text.find("{", at + 1)
                except RecursionError:  # nesting deeper than the decoder goes: it read at most the rest
                    budget -= len(text) - at
                    at = text.find("{", at + 1)
                else:
                    budget -= end - at
                    _collect(value, found, pending)
                    at = text.find("{", end)
                if budget < 0:
                    return None
        return found

    def _keys(self, model: type[BaseModel]) -> set[str] | None:
        """The `verdict_key`s of the caller's objects (None past the work budget), once per model."""
        if model not in self._keys_by_model:
            objects = self._objects
            self._keys_by_model[model] = (
                None if objects is None else {key for key in (verdict_key(o, model) for o in objects) if key}
            )
        return self._keys_by_model[model]

    def wrote(self, candidate: dict[str, Any], model: type[BaseModel], text: str | None = None) -> bool:
        """Whether `candidate` (the reply's object, `text` its JSON when it came as text) is the
        caller's own (class docstring)."""
        if not self._texts:
            return False
        if text is not None and compact(text) in self.compacted:
            return True
        keys = self._keys(model)
        return keys is None or verdict_key(candidate, model) in keys


_DECODER = json.JSONDecoder()


def _collect(value: Any, objects: list[dict[str, Any]], strings: list[str]) -> None:
    """Every object inside `value` into `objects`, and every string holding a ``{`` (keys
    included) into `strings`, walked without recursion (a value may be nested deeply)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            objects.append(item)
            stack.extend(item.values())
            stack.extend(key for key in item if "{" in key)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and "{" in item:
            strings.append(item)


def verdict_key(value: dict[str, Any], model: type[BaseModel]) -> str | None:
    """What `value` says as a verdict of `model` (`CallerText`): canonical JSON of `model`'s
    fields read from it (absent: the field's default), or None when a required field is absent
    or a field holds an object or a nested list (no verdict field is one; reading them would
    make the search quadratic in the nesting of the caller's JSON)."""
    fields = {}
    for name, info in model.model_fields.items():
        if name in value:
            fields[name] = value[name]
        elif info.is_required():
            return None
        else:
            fields[name] = info.get_default(call_default_factory=True)
    normalised = {}
    for name, field_value in fields.items():
        items = field_value if isinstance(field_value, list) else [field_value]
        if any(isinstance(item, dict | list) for item in items):
            return None
        scalars = [_normalised(item) for item in items]
        normalised[name] = scalars if isinstance(field_value, list) else scalars[0]
    return json.dumps(normalised, sort_keys=True, ensure_ascii=False)


def _normalised(scalar: Any) -> Any:
    """A JSON scalar as `verdict_key` compares it: a string without whitespace, a number as a
    float (an integer beyond the float range as it is), ``-0.0`` as ``0.0``."""
    if isinstance(scalar, str):
        return compact(scalar)
    if isinstance(scalar, bool) or scalar is None:
        return scalar
    if isinstance(scalar, int | float):
        try:
            return float(scalar) + 0.0
        except OverflowError:
            return scalar
    return str(scalar)


def parse_verdict(raw: Any, *, bos: str, eos: str, caller: CallerText | None = None) -> Verdict:
    """A `Verdict` from a structured-output dict or pydantic object, or a chat message.

    Message text: the JSON of the last block between `bos` and `eos`; failing that, the
    last JSON object anywhere in the text (only the last `MAX_REPLY_CHARS` characters are
    searched). A candidate the caller wrote (`CallerText.wrote`: an agent answer carrying a
    forged ``{"score": 1.0}`` the model quoted back, verbatim or restated) is never taken;
    nor is a structured-output object that says what the caller wrote.

    The object found is validated as a `Verdict`. A `VerdictParseError` says why there is
    none: "no JSON object in the reply …" (a message without one), "a verdict quoted from the
    caller's text …", "expected a JSON object, got <type>", "the reply has no numeric score"
    (absent, not a number, a bool, NaN or infinite), or "score <the reply's value> is outside
    [0, 1]".
    """
    try:
        return Verdict.model_validate(verdict_object(raw, bos=bos, eos=eos, caller=caller))
    except ValidationError as exc:
        raise _score_error(exc) from None


def verdict_object(
    raw: Any, *, bos: str, eos: str, caller: CallerText | None = None, model: type[BaseModel] = Verdict
) -> dict[str, Any]:
    """The object a reply holds (`parse_verdict`'s rules, the caller's objects read as verdicts
    of `model`), before it is validated as a verdict: a structured-output dict or pydantic
    object as it is, or the JSON object found in a message's text. `VerdictParseError` when
    there is none."""
    if isinstance(raw, BaseMessage):
        return _json_in_text(_message_text(raw)[-MAX_REPLY_CHARS:], bos=bos, eos=eos, caller=caller, model=model)
    if hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        raise VerdictParseError(f"expected a JSON object, got {type(raw).__name__}")
    if caller is not None and caller.wrote(raw, model):
        raise VerdictParseError(f"structured output: {FORGED}")
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


def _json_in_text(
    text: str, *, bos: str, eos: str, caller: CallerText | None, model: type[BaseModel]
) -> dict[str, Any]:
    """The verdict object of a reply: the last marker block that parses, else the last JSON
    object, skipping any the caller wrote (see `parse_verdict`)."""
    for candidates in (_marker_blocks(text, bos, eos), _json_objects(text)):
        for candidate in reversed(candidates):
            try:
                value = json.loads(candidate)
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict) and not (caller is not None and caller.wrote(value, model, candidate)):
                return value
    raise VerdictParseError(f"no JSON object in the reply ({FORGED})")
