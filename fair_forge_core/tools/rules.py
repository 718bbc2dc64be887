"""Value agreement and the ``$…`` rules of expected parameter values (see `fair_forge_core.tools`).

`values_agree` compares one expected value, which may hold rules at any depth, with a
used value; `parameter_agreement` scores two parameter sets key by key.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable, Hashable, Mapping
from typing import Any, NamedTuple

_APPROX_SLACK_ULPS = 4 * sys.float_info.epsilon
"""Slack of an ``$approx`` bound, relative to the magnitude of the numbers compared: a
few units in the last place, so that a bound written in decimal (1000000.01 against
1000000 with tol 0.01) is inclusive despite binary rounding, while no real
difference (1e15 + 100 against 1e15) hides in it."""


_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})
"""The JSON scalar types: two values of one of these types agree exactly when they are equal."""


def is_number(value: Any) -> bool:
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


def normalise_text(text: str) -> str:
    """Case-folded, runs of whitespace collapsed to one space, stripped."""
    return " ".join(text.split()).casefold()


def _approx_matcher(rule: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """The matcher of ``{"$approx": x, "tol": t, "rel": r}``, or None if malformed."""
    if not set(rule) <= {"$approx", "tol", "rel"} or not all(is_number(v) for v in rule.values()):
        return None
    target = rule["$approx"]
    tol = rule.get("tol", 0.0)
    rel = rule.get("rel", 0.0)
    if not all(math.isfinite(v) for v in (target, tol, rel)) or tol < 0 or rel < 0:
        return None

    exact = all(type(v) is int for v in rule.values())  # integers subtract exactly: no slack for rounding

    def matches(used: Any) -> bool:
        if not is_number(used):
            return False
        magnitude = max(abs(used), abs(target))
        slack = 0 if exact and type(used) is int else _APPROX_SLACK_ULPS * max(magnitude, tol)
        return bool(abs(used - target) <= max(tol, rel * magnitude) + slack)

    return matches


_RULE_KEYS = 3
"""The most keys a rule has (``$approx``, ``tol``, ``rel``): a larger dict is plain without looking further."""


def _any_of_options(value: Any) -> list[Any] | None:
    """The options of ``{"$any_of": [...]}``, or None if `value` is not that rule."""
    if type(value) is not dict and not isinstance(value, Mapping):
        return None
    if len(value) != 1 or "$any_of" not in value:
        return None
    options = value["$any_of"]
    return options if isinstance(options, list) else None


def _single_rule_matcher(value: Any) -> Callable[[Any], bool] | None:
    """The matcher of a rule other than ``$any_of`` (whose options `Agreement` matches), or None
    if `value` is no such rule (the shapes are in `fair_forge_core.tools`)."""
    if type(value) in _PLAIN_SCALARS or not isinstance(value, Mapping) or not value or len(value) > _RULE_KEYS:
        return None
    keys = set(value)
    if keys == {"$literal"}:
        return _literal_matcher(value["$literal"])
    if keys == {"$any"}:
        return (lambda _used: True) if value["$any"] is True else None
    if keys == {"$text"}:
        if not isinstance(value["$text"], str):
            return None
        target = normalise_text(value["$text"])
        return lambda used: isinstance(used, str) and normalise_text(used) == target
    if "$approx" in keys:
        return _approx_matcher(value)
    return None


def _literal_matcher(target: Any) -> Callable[[Any], bool]:
    """The matcher of ``{"$literal": target}``: `target` compared as plain data, its own "$" keys
    never read as rules (canonical forms, `Agreement.form`, know no rules)."""
    agreement = Agreement()
    form = agreement.form(target)

    def matches(used: Any) -> bool:
        theirs = agreement.form(used)
        if form is _NOT_PLAIN or theirs is _NOT_PLAIN:
            return bool(target == used)
        return bool(form == theirs)

    return matches


def is_rule(value: Any) -> bool:
    """Whether `value` is an argument rule (`{"$any_of": …}`, `{"$approx": …}`, `{"$text": …}`,
    `{"$any": true}`, `{"$literal": …}`) rather than a plain value."""
    return _any_of_options(value) is not None or _single_rule_matcher(value) is not None


def values_agree(expected: Any, used: Any) -> bool:
    """Whether a used value agrees with an expected value (which may hold rules).

    Numbers compare by value (5 == 5.0), bools only with bools (True ≠ 1), strings
    only with strings ("5" ≠ 5), None only with None. Dicts agree when they have the
    same keys and every value agrees (key order is irrelevant); lists and tuples
    when they have the same length and agree position by position. Rules in
    `expected`, at any depth, are applied instead of equality.

    One comparison; many comparisons of the same values share an `Agreement`, which
    makes each cost about one lookup once every value has been seen.
    """
    return Agreement().agrees(expected, used)


class Items(NamedTuple):
    """A mapping's items as `Agreement.agreeing_items` compares them: its keys, the ids of its
    (key, canonical form) pairs whose value holds no rule, and the keys held apart (a value that
    holds a rule or is not JSON data), compared one by one."""

    keys: frozenset[Any]
    plain: frozenset[int]
    apart: tuple[Any, ...]


Form = Hashable
"""A value's canonical form (`Agreement.form`): equal for two plain values exactly when they agree."""

_NOT_PLAIN = object()
"""The form of a value that is not JSON data (`Agreement.form`): such values are compared structurally."""


class Agreement:
    """`values_agree` for one comparison of many values (one turn's calls, one trajectory, one end
    state): every value's canonical form is computed once, so the work is near-linear in the
    bytes compared rather than in values × pairs × options.

    The canonical form (`form`) of a JSON value: ("b", v) for a bool, ("n", v) for any other int
    or float (Python compares them by value and hashes equal values alike: 5 and 5.0 agree, -0.0
    and 0.0 too, an integer beyond the float range equals only itself), ("s", v) for a string,
    ("z",) for None, and for a mapping or a list (or tuple) a small integer standing for the
    frozenset of (key, form) pairs, or the tuple of forms, of its items (hash-consed, so that
    comparing two forms never walks them again). Two values without rules agree by `values_agree`
    exactly when their forms are equal (`tests/unit/test_rules.py` checks this against the
    brute-force definition). A value that is not JSON data (a Decimal, an object) has no form and
    is compared structurally, as `values_agree` defines it.

    An ``$any_of``'s options are split once: those without rules are a set of forms, looked up
    with the used value's form; those holding rules are checked one by one. A dict is rejected
    on its length before its keys are looked at.

    Memos are keyed by `id()`; the values are held with them, so an id is never reused while
    this object lives. Keep one for one comparison, then drop it.
    """

    def __init__(self) -> None:
        self._interned: dict[Hashable, int] = {}
        self._forms: dict[int, tuple[Any, Form]] = {}
        self._ruled: dict[int, tuple[Any, bool]] = {}
        self._options: dict[int, tuple[Any, frozenset[Form], list[Any]]] = {}
        self._texts: dict[int, tuple[str, str]] = {}
        self._matchers: dict[int, tuple[Any, Callable[[Any], bool] | None]] = {}
        self._items: dict[tuple[int, bool], tuple[Any, Items]] = {}

    def agrees(self, expected: Any, used: Any) -> bool:
        """`values_agree(expected, used)`."""
        kind = type(expected)
        if kind is type(used) and kind in _PLAIN_SCALARS:  # fast path: same JSON scalar type
            return bool(expected == used)
        if kind in _PLAIN_SCALARS:
            verdict = _scalars_agree(expected, used)
            if verdict is not None:
                return verdict
        elif not self.holds_rule(expected):
            mine, theirs = self.form(expected), self.form(used)
            if mine is not _NOT_PLAIN and theirs is not _NOT_PLAIN:
                return mine == theirs
        else:
            options = _any_of_options(expected)
            if options is not None:
                return self._any_of_agrees(options, used)
            matcher = self._matcher(expected)
            if matcher is not None:
                return matcher(used)
        verdict = _scalars_agree(expected, used)
        if verdict is None:
            verdict = self._containers_agree(expected, used)
        if verdict is not None:
            return verdict
        if expected is None or used is None:
            return expected is None and used is None
        return bool(expected == used)

    def holds_rule(self, value: Any) -> bool:
        """Whether `value` is a rule or holds one at any depth (memoised for containers)."""
        if type(value) in _PLAIN_SCALARS:
            return False
        if not value and type(value) in (dict, list):  # an empty container holds nothing
            return False
        known = self._ruled.get(id(value))
        if known is not None:
            return known[1]
        if type(value) is dict and not any(type(key) is str and key[:1] == "$" for key in value):
            ruled = any(self.holds_rule(item) for item in value.values())  # no "$" key: no rule at this level
        elif is_rule(value):
            ruled = True
        elif isinstance(value, Mapping):
            ruled = any(self.holds_rule(item) for item in value.values())
        elif isinstance(value, list | tuple):
            ruled = any(self.holds_rule(item) for item in value)
        else:
            ruled = False
        self._ruled[id(value)] = (value, ruled)
        return ruled

    def form(self, value: Any) -> Form:
        """The canonical form of `value` (class docstring), `_NOT_PLAIN` for a value that is not JSON data."""
        kind = type(value)
        if kind is str:
            return ("s", value)
        if kind is bool:
            return ("b", value)
        if kind is int or kind is float:
            return ("n", value)
        if value is None:
            return ("z",)
        known = self._forms.get(id(value))
        if known is not None:
            return known[1]
        form = self._container_form(value)
        self._forms[id(value)] = (value, form)
        return form

    def _container_form(self, value: Any) -> Form:
        key: Hashable
        if isinstance(value, Mapping):
            items = [(k, self.form(item)) for k, item in value.items()]
            if any(item is _NOT_PLAIN for _, item in items):
                return _NOT_PLAIN
            key = ("d", frozenset(items))
        elif isinstance(value, list | tuple):
            forms = tuple([self.form(item) for item in value])
            if any(item is _NOT_PLAIN for item in forms):
                return _NOT_PLAIN
            key = ("l", forms)
        elif isinstance(value, str):
            return ("s", str(value))
        elif isinstance(value, bool):
            return ("b", bool(value))
        elif type(value) in (int, float) or isinstance(value, int | float):
            return ("n", value)
        else:
            return _NOT_PLAIN
        return self._interned.setdefault(key, len(self._interned))

    def items(self, mapping: Mapping[Any, Any], *, expected: bool) -> Items:
        """`mapping`'s items as `Items` (memoised): what `agreeing_items` compares in bulk. On the
        `expected` side a value holding a rule is held apart; on the used side rules mean nothing
        (a rule-shaped dict is plain data), so only a value that is not JSON data is."""
        known = self._items.get((id(mapping), expected))
        if known is not None:
            return known[1]
        plain: list[int] = []
        apart: list[Any] = []
        for key, value in mapping.items():
            form = _NOT_PLAIN if expected and self.holds_rule(value) else self.form(value)
            if form is _NOT_PLAIN:
                apart.append(key)
            else:
                plain.append(self._interned.setdefault(("i", key, form), len(self._interned)))
        items = Items(frozenset(mapping), frozenset(plain), tuple(apart))
        self._items[(id(mapping), expected)] = (mapping, items)
        return items

    def agreeing_items(self, expected: Mapping[Any, Any], used: Mapping[Any, Any]) -> tuple[int, int]:
        """(keys on both sides whose values agree by `agrees`, keys on both sides).

        The items without rules are compared as one intersection of sets of (key, form) ids,
        in C, so a pair of calls costs about its smaller side's items once, and the
        keys held apart (a rule, or a value that is not JSON data) one `agrees` each."""
        mine, theirs = self.items(expected, expected=True), self.items(used, expected=False)
        agree = len(mine.plain & theirs.plain)
        for key in dict.fromkeys(mine.apart + theirs.apart):
            if key in expected and key in used:
                agree += self.agrees(expected[key], used[key])
        return agree, len(mine.keys & theirs.keys)

    def _any_of_agrees(self, options: list[Any], used: Any) -> bool:
        known = self._options.get(id(options))
        if known is None:
            # One pass: an option holding a rule is matched alone, every other is indexed by its form.
            rest: list[Any] = []
            forms: list[Form] = []
            for option in options:
                form = _NOT_PLAIN if self.holds_rule(option) else self.form(option)
                if form is _NOT_PLAIN:
                    rest.append(option)
                else:
                    forms.append(form)
            indexed = frozenset(forms)
            known = (options, indexed, rest)
            self._options[id(options)] = known
        _, indexed, rest = known
        used_form = self.form(used)
        if used_form is _NOT_PLAIN:  # not JSON data: no form to look up, every option compared
            return any(self.agrees(option, used) for option in options)
        return used_form in indexed or any(self.agrees(option, used) for option in rest)

    def _matcher(self, rule: Any) -> Callable[[Any], bool] | None:
        """`_single_rule_matcher(rule)`, built once per rule; a ``$text`` rule normalises each
        used string once (`_normalised`)."""
        known = self._matchers.get(id(rule))
        if known is None:
            matcher = _single_rule_matcher(rule)
            if matcher is not None and set(rule) == {"$text"}:
                target = normalise_text(rule["$text"])
                matcher = lambda used: isinstance(used, str) and self._normalised(used) == target  # noqa: E731
            known = (rule, matcher)
            self._matchers[id(rule)] = known
        return known[1]

    def _normalised(self, text: str) -> str:
        known = self._texts.get(id(text))
        if known is None:
            known = (text, normalise_text(text))
            self._texts[id(text)] = known
        return known[1]

    def _containers_agree(self, expected: Any, used: Any) -> bool | None:
        """`values_agree` when either side is a mapping, else a list or tuple (a mapping only agrees
        with a mapping of the same keys, a sequence with a sequence of the same length, values
        compared by `agrees`; lengths first, a mapping's plain items as one set test); None when
        neither side is one of them."""
        if isinstance(expected, Mapping) or isinstance(used, Mapping):
            if not (isinstance(expected, Mapping) and isinstance(used, Mapping)) or len(expected) != len(used):
                return False
            mine, theirs = self.items(expected, expected=True), self.items(used, expected=False)
            if mine.keys != theirs.keys:
                return False
            if theirs.apart:  # a used value that is not JSON data: every key compared
                return all(self.agrees(expected[key], used[key]) for key in expected)
            # The items without rules in one subset test (in C), the rules one by one.
            return mine.plain <= theirs.plain and all(self.agrees(expected[key], used[key]) for key in mine.apart)
        if isinstance(expected, list | tuple) or isinstance(used, list | tuple):
            return (
                isinstance(expected, list | tuple)
                and isinstance(used, list | tuple)
                and len(expected) == len(used)
                and all(self.agrees(e, u) for e, u in zip(expected, used, strict=True))
            )
        return None


def _scalars_agree(expected: Any, used: Any) -> bool | None:
    """`values_agree` when either side is a bool, a number or a string, tried in that order (a
    bool only agrees with a bool, a number with a number, a string with a string); None when
    neither side is one of them."""
    if isinstance(expected, bool) or isinstance(used, bool):
        return isinstance(expected, bool) and isinstance(used, bool) and expected == used
    if is_number(expected) or is_number(used):
        return is_number(expected) and is_number(used) and expected == used
    if isinstance(expected, str) or isinstance(used, str):
        return isinstance(expected, str) and isinstance(used, str) and expected == used
    return None


def parameter_agreement(
    expected: Mapping[str, Any], used: Mapping[str, Any], agreement: Agreement | None = None
) -> tuple[float, list[str]]:
    """The share of keys whose values agree, and the sorted keys that do not.

    Keys are the union of both sides; a key present on one side only disagrees
    (also under ``{"$any": true}``). Two empty parameter sets agree fully (1.0).
    Values are compared by `agreement` (a fresh `Agreement` if not given).
    """
    agreement = agreement or Agreement()
    keys = set(expected) | set(used)
    if not keys:
        return 1.0, []
    wrong = sorted(
        key for key in keys if key not in expected or key not in used or not agreement.agrees(expected[key], used[key])
    )
    return (len(keys) - len(wrong)) / len(keys), wrong


class RuleCost(NamedTuple):
    """What comparing one expected value may cost (`rule_cost`)."""

    work: int
    """The `agrees` steps one comparison of the value with any used value takes at most, once
    every canonical form is known: 1 for a value without rules (one form compared); for a rule
    1, and for an ``$any_of`` 1 (its options without rules: one lookup together) plus the work
    of each option holding a rule; for an object holding rules 1 (its other items: one set
    test) plus the work of each value holding a rule; for a list holding rules 1 plus the
    work of every item (each is visited)."""
    widest_any_of: int
    """The most options of one ``$any_of`` in the value, at any depth (0: none)."""


def rule_cost(value: Any) -> RuleCost:
    """The `RuleCost` of comparing the expected `value` (a tool call's parameters, an end
    state): the service bounds the sum over the pairs of calls the rubric compares, and the
    options of each ``$any_of`` (docs/limits.md "Work per request")."""
    flat = type(value) is dict and all(type(item) in _PLAIN_SCALARS for item in value.values())
    if flat and not any(key[:1] == "$" for key in value if type(key) is str):
        return RuleCost(1, 0)  # most tool calls: flat arguments and no rule, no walk needed
    agreement = Agreement()
    widest = 0

    def work(item: Any) -> int:
        nonlocal widest
        if not agreement.holds_rule(item):
            return 1
        options = _any_of_options(item)
        if options is not None:
            widest = max(widest, len(options))
            return 1 + sum(work(option) for option in options if agreement.holds_rule(option))
        if _single_rule_matcher(item) is not None:
            return 1
        if isinstance(item, Mapping):
            return 1 + sum(work(child) for child in item.values() if agreement.holds_rule(child))
        return 1 + sum(work(child) for child in item)

    return RuleCost(work(value), widest)
