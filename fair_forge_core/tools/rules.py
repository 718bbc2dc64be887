"""Value agreement and the ``$…`` rules of expected parameter values (see `fair_forge_core.tools`).

`values_agree` compares one expected value, which may hold rules at any depth, with a
used value; `parameter_agreement` scores two parameter sets key by key.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable, Mapping
from typing import Any

_APPROX_SLACK_ULPS = 4 * sys.float_info.epsilon
"""Slack of an ``$approx`` bound, relative to the magnitude of the numbers compared: a
few units in the last place, so that a bound written in decimal (1000000.01 against
1000000 with tol 0.01) is inclusive despite binary rounding, while no real
difference (1e15 + 100 against 1e15) hides in it."""


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})
"""The JSON scalar types: two values of one of these types agree exactly when they are equal."""


def _is_number(value: Any) -> bool:
    """True for real numbers a float can hold; bools are not numbers here.

    An integer beyond the float range (JSON allows any length) is compared as an
    opaque value instead, since `math.isclose` and friends cannot take it.
    """
    kind = type(value)
    if kind is float:
        return True
    if kind is int:  # the common case, without the slow ABC check
        return bool(-sys.float_info.max <= value <= sys.float_info.max)
    return kind is not bool and isinstance(value, numbers.Real)


def _normalise_text(text: str) -> str:
    """Case-folded, runs of whitespace collapsed to one space, stripped."""
    return " ".join(text.split()).casefold()


def _approx_matcher(rule: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """The matcher of ``{"$approx": x, "tol": t, "rel": r}``, or None if malformed."""
    if not set(rule) <= {"$approx", "tol", "rel"} or not all(_is_number(v) for v in rule.values()):
        return None
    target = rule["$approx"]
    tol = rule.get("tol", 0.0)
    rel = rule.get("rel", 0.0)
    if not all(math.isfinite(v) for v in (target, tol, rel)) or tol < 0 or rel < 0:
        return None

    exact = all(type(v) is int for v in rule.values())  # integers subtract exactly: no slack for rounding

    def matches(used: Any) -> bool:
        if not _is_number(used):
            return False
        magnitude = max(abs(used), abs(target))
        slack = 0 if exact and type(used) is int else _APPROX_SLACK_ULPS * max(magnitude, tol)
        return bool(abs(used - target) <= max(tol, rel * magnitude) + slack)

    return matches


def _rule_matcher(value: Any) -> Callable[[Any], bool] | None:
    """The matcher of a rule (the shapes are in `fair_forge_core.tools`), or None if `value` is no rule."""
    if type(value) in _PLAIN_SCALARS or not isinstance(value, Mapping) or not value:
        return None
    keys = set(value)
    if keys == {"$any"}:
        return (lambda _used: True) if value["$any"] is True else None
    if keys == {"$text"}:
        if not isinstance(value["$text"], str):
            return None
        target = _normalise_text(value["$text"])
        return lambda used: isinstance(used, str) and _normalise_text(used) == target
    if keys == {"$any_of"}:
        options = value["$any_of"]
        if not isinstance(options, list):
            return None
        return lambda used: any(values_agree(option, used) for option in options)
    if "$approx" in keys:
        return _approx_matcher(value)
    return None


def is_rule(value: Any) -> bool:
    """Whether `value` is an argument rule (`{"$any_of": …}`, `{"$approx": …}`, `{"$text": …}`,
    `{"$any": true}`) rather than a plain value."""
    return _rule_matcher(value) is not None


def values_agree(expected: Any, used: Any) -> bool:
    """Whether a used value agrees with an expected value (which may hold rules).

    Numbers compare by value (5 == 5.0), bools only with bools (True ≠ 1), strings
    only with strings ("5" ≠ 5), None only with None. Dicts agree when they have the
    same keys and every value agrees (key order is irrelevant); lists and tuples
    when they have the same length and agree position by position. Rules in
    `expected`, at any depth, are applied instead of equality.
    """
    kind = type(expected)
    if kind is type(used) and kind in _PLAIN_SCALARS:  # fast path: same JSON scalar type
        return bool(expected == used)
    matcher = _rule_matcher(expected)
    if matcher is not None:
        return matcher(used)
    verdict = _scalars_agree(expected, used)
    if verdict is None:
        verdict = _containers_agree(expected, used)
    if verdict is not None:
        return verdict
    if expected is None or used is None:
        return expected is None and used is None
    return bool(expected == used)


def _scalars_agree(expected: Any, used: Any) -> bool | None:
    """`values_agree` when either side is a bool, a number or a string, tried in that order (a
    bool only agrees with a bool, a number with a number, a string with a string); None when
    neither side is one of them."""
    if isinstance(expected, bool) or isinstance(used, bool):
        return isinstance(expected, bool) and isinstance(used, bool) and expected == used
    if _is_number(expected) or _is_number(used):
        return _is_number(expected) and _is_number(used) and expected == used
    if isinstance(expected, str) or isinstance(used, str):
        return isinstance(expected, str) and isinstance(used, str) and expected == used
    return None


def _containers_agree(expected: Any, used: Any) -> bool | None:
    """`values_agree` when either side is a mapping, else a list or tuple (a mapping only agrees
    with a mapping of the same keys, a sequence with a sequence of the same length, values
    compared by `values_agree`); None when neither side is one of them."""
    if isinstance(expected, Mapping) or isinstance(used, Mapping):
        return (
            isinstance(expected, Mapping)
            and isinstance(used, Mapping)
            and set(expected) == set(used)
            and all(values_agree(expected[key], used[key]) for key in expected)
        )
    if isinstance(expected, list | tuple) or isinstance(used, list | tuple):
        return (
            isinstance(expected, list | tuple)
            and isinstance(used, list | tuple)
            and len(expected) == len(used)
            and all(values_agree(e, u) for e, u in zip(expected, used, strict=True))
        )
    return None


def parameter_agreement(expected: Mapping[str, Any], used: Mapping[str, Any]) -> tuple[float, list[str]]:
    """The share of keys whose values agree, and the sorted keys that do not.

    Keys are the union of both sides; a key present on one side only disagrees
    (also under ``{"$any": true}``). Two empty parameter sets agree fully (1.0).
    """
    keys = set(expected) | set(used)
    if not keys:
        return 1.0, []
    wrong = sorted(
        key for key in keys if key not in expected or key not in used or not values_agree(expected[key], used[key])
    )
    return (len(keys) - len(wrong)) / len(keys), wrong
