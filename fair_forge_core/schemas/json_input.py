"""Reading a request's JSON: no NaN or infinities, no lone surrogates, errors with line and column;
pydantic errors as field paths, an unknown key with the nearest known one (`did_you_mean`)."""

from __future__ import annotations

import difflib
import json
import math
import re
import types
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, Union, get_args, get_origin

from pydantic import Field

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic_core import ErrorDetails


def is_none(value: object) -> bool:
    return value is None


def omitted_when_none(**kwargs: Any) -> Any:
    """A field that defaults to None and is left out of the JSON while None: how every field
    added to a request or a result after the first release is declared, so that requests and
    results that do not use it serialise (and hash: `provenance.datasets_hash`) byte for byte
    as before."""
    return Field(None, exclude_if=is_none, **kwargs)


class NonFiniteNumber(ValueError):
    """A JSON text holds NaN, Infinity, or a number too large for a float (``1e309``),
    which Python's json reads as infinity but RFC 8259 gives no meaning."""


def _refuse_constant(name: str) -> float:
    raise NonFiniteNumber(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise NonFiniteNumber(f"{shown} is too large for a number")
    return value


class LoneSurrogate(ValueError):
    """A JSON string escapes half of a UTF-16 surrogate pair (``"\\ud800"``): valid JSON
    syntax, but no Unicode text, and nothing downstream (logs, responses) can encode it."""


# Only a text that writes a \uD800–\uDFFF escape can hold a lone surrogate (raw UTF-8 cannot).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse_lone_surrogates(value: Any) -> None:
    """`LoneSurrogate` if any string or key in the parsed JSON holds one (valid pairs were
    already joined into one character by the parser)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and _SURROGATE.search(item):
                raise LoneSurrogate(
                    "a string holds a lone UTF-16 surrogate escape (\\ud800 to \\udfff), which is not text"
                )
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def loads_json(data: str | bytes) -> Any:
    """`json.loads` that refuses NaN, ±Infinity and overflowing numbers with `NonFiniteNumber`
    (a NaN tool parameter could never agree with anything, and a NaN score would poison
    the sums) and lone surrogates with `LoneSurrogate`. Other malformed JSON raises
    `json.JSONDecodeError` (a `ValueError`) as usual."""
    value = json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)
    escape = _SURROGATE_ESCAPE.search(data) if isinstance(data, str) else _SURROGATE_ESCAPE_BYTES.search(data)
    if escape is not None:
        _refuse_lone_surrogates(value)
    return value


def describe_json_error(error: ValueError) -> str:
    """A one-line reason a JSON text was refused, with its line and column when known.

    Never quotes the text itself, which could hold a key.
    """
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at line {error.lineno}, column {error.colno}"
    return str(error) if isinstance(error, NonFiniteNumber | LoneSurrogate) else "not valid JSON"


ONE_CONNECTOR = "one connector"
CONNECTOR_LIST = "connector list"
EVERY_TOOL_LIMIT = "one limit for every tool"
PER_TOOL_LIMITS = "limits per tool"
UNION_TAGS = frozenset({ONE_CONNECTOR, CONNECTOR_LIST, EVERY_TOOL_LIMIT, PER_TOOL_LIMITS})
"""The tags of the request's tagged unions (`schemas.request.Connectors`, `.PerToolLimit`). Pydantic puts a
union's tag in an error's location; it names no field, so `field_path` leaves it out."""


def field_path(location: tuple[int | str, ...]) -> str:
    """A pydantic error location as a path: `("datasets", 0, "conversation")` → `"datasets[0].conversation"`;
    the tags of `UNION_TAGS` are left out (`connector[1].class_path`)."""
    path = ""
    for part in location:
        if part in UNION_TAGS:
            continue
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def did_you_mean(name: str, known: Iterable[str], shown_as: str = "{}") -> str:
    """`" (did you mean <closest>?)"` for the known name closest to `name` (`difflib.get_close_matches`,
    its default cutoff 0.6), or `""` when none is close: the one hint every unknown name gets
    (a request's keys, a references record's, a connector's parameters, `task_key`). `shown_as`
    writes the name found (`"metadata.{}"`: compared without a prefix every candidate shares)."""
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {shown_as.format(close[0])}?)" if close else ""


def _arms(annotation: Any) -> list[Any]:
    """The types a field's annotation may hold, with `Annotated`, `Optional` and unions unwrapped."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _arms(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return [arm for arg in get_args(annotation) for arm in _arms(arg)]
    return [annotation]


def _is_model(value: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(value, type) and issubclass(value, BaseModel)


def known_keys(model: type[BaseModel], location: tuple[int | str, ...]) -> set[str]:
    """The keys the object holding `location`'s last part accepts, `model` being the root: the
    field names of the model(s) found by following the location's parts through the fields'
    annotations (list items by index, dict values by key, every arm of a union; the tags of
    `UNION_TAGS` are skipped). Empty when the location leads to no model."""
    current: list[Any] = [model]
    for part in location[:-1]:
        if part in UNION_TAGS:
            continue
        following: list[Any] = []
        for arm in (arm for annotation in current for arm in _arms(annotation)):
            if isinstance(part, int) and get_origin(arm) is list:
                following.append(get_args(arm)[0])
            elif isinstance(part, str) and _is_model(arm) and part in arm.model_fields:
                following.append(arm.model_fields[part].annotation)
            elif isinstance(part, str) and get_origin(arm) is dict:
                following.append(get_args(arm)[1])
        current = following
    return {name for annotation in current for arm in _arms(annotation) if _is_model(arm) for name in arm.model_fields}


UNKNOWN_KEY = "unknown key"
"""The message of a key no model field has (pydantic's `extra_forbidden`), before its hint."""


def error_message(model: type[BaseModel], error: ErrorDetails) -> str:
    """A pydantic error's message for a person, `model` being what was validated: an unknown
    key is `unknown key` with the nearest accepted key (`did_you_mean`); any other error keeps
    pydantic's message. Never the offending value."""
    if error["type"] != "extra_forbidden":
        return error["msg"]
    name = error["loc"][-1] if error["loc"] else ""
    return UNKNOWN_KEY + (did_you_mean(name, known_keys(model, error["loc"])) if isinstance(name, str) else "")
