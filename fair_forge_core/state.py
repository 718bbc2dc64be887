"""The end state a conversation should leave behind (`Dataset.expected_state`), compared with the
one the caller reports (`Dataset.final_state`). Pure: no I/O. Docs: docs/how-to/task-checks.md "Check the end state".

Rule: `expected_state` states what must hold, key by key. Its nested objects are walked down to
their leaves — a leaf is anything that is not an object, or an object that is an argument rule
(`$approx`, `$any_of`, `$text`, `$any`: `fair_forge_core.tools`) — and each leaf is compared with
the value at the same path of `final_state` by the tool rubric's `values_agree` (5 == 5.0,
True ≠ 1, key order irrelevant, lists position by position, rules applied). A path missing from
the final state disagrees. Keys of the final state that the expected state does not name are not
checked. The state matches when every leaf agrees; an expected state of `{}` (anywhere: a nested
`{}` asks for nothing) always does. A
top-level expected value that is not an object is one leaf, at the path "" (the whole state).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fair_forge_core.schemas import StateCheck, StateDifference
from fair_forge_core.tools.rules import is_rule, values_agree

_MISSING = object()


def _leaves(expected: Any, path: str = "") -> Iterator[tuple[str, list[str], Any]]:
    """(dotted path, keys, leaf) of every leaf of `expected`, in its key order."""
    if isinstance(expected, dict) and expected and not is_rule(expected):
        for key, value in expected.items():
            yield from ((p, [key, *keys], leaf) for p, keys, leaf in _leaves(value, f"{path}.{key}" if path else key))
        return
    if not (isinstance(expected, dict) and not expected and path):  # a nested {} asks for nothing
        yield path, [], expected


def _at(state: Any, keys: list[str]) -> Any:
    for key in keys:
        if not isinstance(state, dict) or key not in state:
            return _MISSING
        state = state[key]
    return state


def compare_state(expected: Any, final: Any) -> StateCheck:
    """The per-key comparison of `final` with `expected` (module docstring)."""
    if isinstance(expected, dict) and not expected:
        return StateCheck(matches=True, checked=0, mismatched=0, diff=[])
    diff = []
    for path, keys, leaf in _leaves(expected):
        actual = _at(final, keys)
        present = actual is not _MISSING
        agrees = present and values_agree(leaf, actual)
        diff.append(
            StateDifference(
                path=path, expected=leaf, actual=actual if present else None, present=present, agrees=agrees
            )
        )
    mismatched = sum(1 for d in diff if not d.agrees)
    return StateCheck(matches=mismatched == 0, checked=len(diff), mismatched=mismatched, diff=diff)
