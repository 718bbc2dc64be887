"""Reading a request's JSON: no NaN or infinities, no lone surrogates, errors with line and column."""

from __future__ import annotations

import json
import math
import re
from typing import Any


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
UNION_TAGS = frozenset({ONE_CONNECTOR, CONNECTOR_LIST})
"""The tags of the request's tagged unions (`schemas.request.Connectors`). Pydantic puts a
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
