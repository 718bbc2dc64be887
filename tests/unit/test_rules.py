"""`fair_forge_core.tools.rules.Agreement` against the brute-force definition of `values_agree`.

The oracle (`brute_force_agree`) is `values_agree` as it was before issue #32 (commit 53aec10):
every rule applied by walking both values, every ``$any_of`` option compared in turn. The
canonical-form index must give the same verdict on every pair, also when one `Agreement`
compares many pairs (its memos are shared), and a large ``$any_of`` against a large object is
answered right with work that grows with the values, not with options × keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fair_forge_core.tools import rules
from fair_forge_core.tools.rules import Agreement, _approx_matcher, is_number, normalise_text, values_agree

# --------------------------------------------------------------------------- the oracle (53aec10)


def _old_matcher(value: Any) -> Callable[[Any], bool] | None:
    if type(value) in (str, int, float, bool, type(None)) or not isinstance(value, Mapping) or not value:
        return None
    keys = set(value)
    if keys == {"$any"}:
        return (lambda _used: True) if value["$any"] is True else None
    if keys == {"$text"}:
        if not isinstance(value["$text"], str):
            return None
        target = normalise_text(value["$text"])
        return lambda used: isinstance(used, str) and normalise_text(used) == target
    if keys == {"$any_of"}:
        options = value["$any_of"]
        if not isinstance(options, list):
            return None
        return lambda used: any(brute_force_agree(option, used) for option in options)
    if "$approx" in keys:
        return _approx_matcher(value)
    return None


def brute_force_agree(expected: Any, used: Any) -> bool:
    """`values_agree` of 53aec10, step for step."""
    kind = type(expected)
    if kind is type(used) and kind in (str, int, float, bool, type(None)):
        return bool(expected == used)
    matcher = _old_matcher(expected)
    if matcher is not None:
        return matcher(used)
    if isinstance(expected, bool) or isinstance(used, bool):
        return isinstance(expected, bool) and isinstance(used, bool) and expected == used
    if is_number(expected) or is_number(used):
        return is_number(expected) and is_number(used) and expected == used
    if isinstance(expected, str) or isinstance(used, str):
        return isinstance(expected, str) and isinstance(used, str) and expected == used
    if isinstance(expected, Mapping) or isinstance(used, Mapping):
        return (
            isinstance(expected, Mapping)
            and isinstance(used, Mapping)
            and set(expected) == set(used)
            and all(brute_force_agree(expected[key], used[key]) for key in expected)
        )
    if isinstance(expected, list | tuple) or isinstance(used, list | tuple):
        return (
            isinstance(expected, list | tuple)
            and isinstance(used, list | tuple)
            and len(expected) == len(used)
            and all(brute_force_agree(e, u) for e, u in zip(expected, used, strict=True))
        )
    if expected is None or used is None:
        return expected is None and used is None
    return bool(expected == used)


# --------------------------------------------------------------------------- values

# Few distinct scalars, so that equal values (and 5 against 5.0, 0.0 against -0.0) are common;
# integers at and beyond the float range (`is_number`), and 2**53 + 1 against its float.
SCALARS = st.sampled_from(
    [
        0,
        1,
        5,
        -0.0,
        0.0,
        1.0,
        5.0,
        5.5,
        True,
        False,
        None,
        "",
        "5",
        "a",
        "New  York",
        "new york",
        2**53 + 1,
        float(2**53),
        10**400,
        -(10**400),
        int(1.7976931348623157e308),
        1.7976931348623157e308,
    ]
)
KEYS = st.sampled_from(["a", "b", "c", "$any", "$text", "$any_of", "$approx", "tol"])


def _rules(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Rules, well formed and malformed (a malformed one is a plain dict)."""
    return st.one_of(
        st.builds(lambda options: {"$any_of": options}, st.lists(children, max_size=4)),
        st.builds(lambda option: {"$any_of": option}, children),  # not a list: a plain dict
        st.builds(lambda text: {"$text": text}, st.sampled_from(["new YORK", " a ", "5", ""])),
        st.just({"$text": 5}),
        st.sampled_from([{"$any": True}, {"$any": 1}, {"$any": True, "a": 1}]),
        st.builds(
            lambda target, tol: {"$approx": target, "tol": tol},
            st.sampled_from([0, 1, 5, 5.0, 1e15, 10**400]),
            st.sampled_from([0, 0.01, 0.5, 1]),
        ),
    )


VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(KEYS, children, max_size=3),
        _rules(children),
    ),
    max_leaves=12,
)


@settings(max_examples=1000, deadline=None)
@given(VALUES, VALUES)
def test_agreement_is_the_brute_force_definition(expected: Any, used: Any) -> None:
    assert Agreement().agrees(expected, used) is brute_force_agree(expected, used)
    assert values_agree(expected, used) is brute_force_agree(expected, used)


@settings(max_examples=200, deadline=None)
@given(st.lists(VALUES, min_size=1, max_size=6), st.lists(VALUES, min_size=1, max_size=6))
def test_one_agreement_for_many_pairs_gives_each_pair_its_own_verdict(expected: list[Any], used: list[Any]) -> None:
    agreement = Agreement()  # as a turn's pairing uses it: one for every pair, memos shared
    for _ in range(2):  # the second round reads every memo
        for e in expected:
            for u in used:
                assert agreement.agrees(e, u) is brute_force_agree(e, u), (e, u)


@settings(max_examples=500, deadline=None)
@given(VALUES, VALUES)
def test_equal_forms_are_agreement_of_plain_values(first: Any, second: Any) -> None:
    agreement = Agreement()
    if agreement.holds_rule(first):
        return
    assert (agreement.form(first) == agreement.form(second)) is brute_force_agree(first, second)


def test_forms_of_the_edge_cases() -> None:
    agreement = Agreement()
    form = agreement.form
    assert form(5) == form(5.0) and hash(form(5)) == hash(form(5.0))
    assert form(-0.0) == form(0.0) == form(0)
    assert form(True) != form(1) and form(False) != form(0)
    assert form(2**53 + 1) != form(float(2**53))
    assert form(10**400) == form(10**400) != form(1.7976931348623157e308)
    assert form({"a": 1, "b": [1, 2]}) == form({"b": [1.0, 2], "a": 1})  # key order irrelevant
    assert form([1, 2]) != form([2, 1])  # lists are positional
    assert form([1, 2]) == form((1, 2))
    assert form("5") != form(5) and form(None) != form("")


# --------------------------------------------------------------------------- large options


def test_a_large_any_of_against_a_large_object_is_answered_right() -> None:
    state = {f"k{i}": i for i in range(100_000)}
    same = {f"k{i}": float(i) for i in range(100_000)}  # 5 == 5.0
    options: list[Any] = [{}] * 10_000
    assert values_agree({"$any_of": options}, state) is False
    assert values_agree({"$any_of": [*options, same]}, state) is True
    assert values_agree({"$any_of": [*options, {**same, "k7": True}]}, state) is False  # True ≠ 7
    ruled = {**same, "k7": {"$approx": 7.4, "tol": 0.5}}  # an option holding a rule: compared in turn
    assert values_agree({"$any_of": [*options, ruled]}, state) is True
    assert values_agree({"$any_of": [*options, {**ruled, "extra": 1}]}, state) is False


def test_the_work_grows_with_the_values_not_with_options_times_keys(monkeypatch: Any) -> None:
    """10,000 options against 100,000 keys: each container's form is built once, and no
    option compares the used object key by key (the old code built its key set per option)."""
    built: list[int] = []
    real = Agreement._container_form

    def counted(self: Agreement, value: Any) -> Any:
        built.append(len(value))
        return real(self, value)

    monkeypatch.setattr(Agreement, "_container_form", counted)
    state = {f"k{i}": i for i in range(100_000)}
    agreement = Agreement()
    expected = {"$any_of": [{} for _ in range(10_000)]}
    for _ in range(64):  # as 64 used calls of a turn would ask it again
        assert agreement.agrees(expected, state) is False
    assert len(built) == 10_000 + 1  # every option once, the state once
    assert sum(built) == 100_000  # the state's keys once, in all


def test_a_dict_of_rules_is_refused_on_its_length_first() -> None:
    looked_up: list[str] = []

    class Counting(dict[str, Any]):
        def __contains__(self, key: object) -> bool:
            looked_up.append(str(key))
            return super().__contains__(key)

    used = Counting({f"k{i}": i for i in range(1_000)})
    assert values_agree({"k1": {"$any": True}}, used) is False
    assert looked_up == []


def test_text_rules_normalise_each_used_text_once(monkeypatch: Any) -> None:
    normalised: list[int] = []
    real = rules.normalise_text
    monkeypatch.setattr(rules, "normalise_text", lambda text: normalised.append(len(text)) or real(text))
    long_text = "word " * 20_000
    agreement = Agreement()
    expected = {"$any_of": [{"$text": f"w{i}"} for i in range(1_000)]}
    assert agreement.agrees(expected, long_text) is False
    assert agreement.agrees(expected, long_text) is False
    assert normalised.count(len(long_text)) == 1
