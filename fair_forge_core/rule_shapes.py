"""Whether an expected value's argument rules are well formed (docs/tool-rubric.md "Argument rules").

Rule: in an expected value (a tool call's expected parameters, an `expected_state`), at any
depth, an object with a key that begins with "$" is a rule, and it must be exactly one of:

- ``{"$any_of": [...]}``: a list of options (each checked in turn: an option may be a rule);
- ``{"$approx": x}`` with optional ``"tol"`` and ``"rel"``: x a finite number, tol and rel finite
  numbers ≥ 0 (bools are not numbers);
- ``{"$text": "..."}``: a string;
- ``{"$any": true}``: true, nothing else;
- ``{"$literal": v}``: v compared as plain data, never read as rules (the escape for a value
  that holds "$" keys of its own: nothing inside it is checked).

Anything else with a "$" key — an unknown operator (``$approxx``, ``$regex``), two operators,
a key the rule does not take, an operand of the wrong type (``{"$approx": "x"}``) — is a
mistake the request is refused for (a 400 naming the field), never read silently as a plain
value. Objects without a "$" key are plain data, their values checked in turn.

This module only checks shapes; `fair_forge_core.tools.rules` matches them (a test holds the
two to one definition). It imports nothing of the evaluation (only the hint of
`schemas.json_input`, when it names an unknown operator), so the request schemas can use it.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Mapping
from typing import Any

RULE_OPERATORS = ("$any_of", "$approx", "$text", "$any", "$literal")
"""Every operator a rule may have, in the order the docs list them."""

_APPROX_OPTIONS = frozenset({"tol", "rel"})
_SCALARS = (str, int, float, bool, type(None))


def is_finite_number(value: Any) -> bool:
    """A real number a float holds, finite; bools are not numbers."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    if isinstance(value, int):
        return bool(-sys.float_info.max <= value <= sys.float_info.max)
    return math.isfinite(value)


def _kind(value: Any) -> str:
    """How a problem names a JSON value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, numbers.Real):
        return "a number" if is_finite_number(value) else "a number beyond the float range"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    return "a list" if isinstance(value, list | tuple) else type(value).__name__


def _shape_problem(rule: Mapping[str, Any]) -> str | None:
    """What is wrong with the object `rule`, which has a "$" key (module docstring); None when
    it is a well-formed rule."""
    operators = sorted(key for key in rule if isinstance(key, str) and key.startswith("$"))
    unknown = [key for key in operators if key not in RULE_OPERATORS]
    if unknown:
        from fair_forge_core.schemas.json_input import did_you_mean

        return (
            f"{unknown[0]} is no rule{did_you_mean(unknown[0], RULE_OPERATORS)}: the rules are "
            f"{', '.join(RULE_OPERATORS)} ($literal for a value holding $ keys of its own)"
        )
    if len(operators) > 1:
        return f"one rule per object, not {' and '.join(operators)}"
    (operator,) = operators
    allowed = _APPROX_OPTIONS if operator == "$approx" else frozenset()
    if extra := sorted(str(key) for key in rule if key != operator and key not in allowed):
        takes = "takes only tol and rel besides it" if operator == "$approx" else "takes no other key"
        return f"{operator} {takes}, not {', '.join(extra)}"
    return _operand_problem(operator, rule)


def _operand_problem(operator: str, rule: Mapping[str, Any]) -> str | None:
    """What is wrong with the operand of the rule `operator` (and, for `$approx`, its tol and
    rel); None when they have the types the rule needs."""
    operand = rule[operator]
    if operator == "$any_of" and not isinstance(operand, list):
        return f"$any_of needs a list of options, not {_kind(operand)}"
    if operator == "$text" and not isinstance(operand, str):
        return f"$text needs a string, not {_kind(operand)}"
    if operator == "$any" and operand is not True:
        return f"$any needs true, not {_kind(operand) if operand is not False else 'false'}"
    if operator != "$approx":
        return None
    if not is_finite_number(operand):
        return f"$approx needs a finite number, not {_kind(operand)}"
    for option in sorted(_APPROX_OPTIONS & set(rule)):
        given = rule[option]
        if not is_finite_number(given) or given < 0:
            said = "a negative number" if is_finite_number(given) else _kind(given)
            return f"$approx's {option} needs a finite number ≥ 0, not {said}"
    return None


def _token(key: Any) -> str:
    """`key` as one JSON Pointer token (RFC 6901: "~" as "~0", "/" as "~1")."""
    return str(key).replace("~", "~0").replace("/", "~1")


def rule_problem(value: Any) -> str | None:
    """The first mistyped rule in the expected `value` (module docstring), as "<problem>" at the
    top or "at <JSON Pointer>: <problem>" inside it; None when every rule is well formed. Each
    object and list is visited once, in document order (depth first)."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, _SCALARS):
            continue
        children: list[tuple[str, Any]] = []
        if isinstance(item, Mapping):
            if any(isinstance(key, str) and key.startswith("$") for key in item):
                problem = _shape_problem(item)
                if problem is not None:
                    return f"at {path}: {problem}" if path else problem
                if "$any_of" in item:
                    children = [(f"{path}/$any_of/{index}", option) for index, option in enumerate(item["$any_of"])]
            else:
                children = [(f"{path}/{_token(key)}", child) for key, child in item.items()]
        elif isinstance(item, list | tuple):
            children = [(f"{path}/{index}", child) for index, child in enumerate(item)]
        stack.extend(reversed(children))
    return None


def checked_rules(value: Any) -> Any:
    """`value` itself when its rules are well formed; else a ValueError naming the first mistake
    (`rule_problem`): a pydantic validator of the request fields that may hold rules."""
    problem = rule_problem(value)
    if problem is not None:
        raise ValueError(f"a mistyped argument rule: {problem}")
    return value
