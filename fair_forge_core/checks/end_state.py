"""`end_state`: the end state a conversation should leave behind (`Dataset.expected_state`), compared
with the one the caller reports (`Dataset.final_state`). Required: a conversation whose end state
does not match is not fully correct. Pure: no I/O. Docs: docs/how-to/task-checks.md "Check the end state".

Rule: `expected_state` states what must hold, key by key. Its nested objects are walked down to
their leaves — a leaf is anything that is not an object, or an object that is an argument rule
(`$approx`, `$any_of`, `$text`, `$any`, `$literal`: `fair_forge_core.tools`) — and each leaf is compared with
the value at the same path of `final_state` by the tool rubric's `values_agree` (5 == 5.0,
True ≠ 1, key order irrelevant, lists position by position, rules applied). A path missing from
the final state disagrees. Keys of the final state that the expected state does not name are not
checked. The state matches when every leaf agrees; an expected state of `{}` (anywhere: a nested
`{}` asks for nothing) always does. A
top-level expected value that is not an object is one leaf, at the path "" (the whole state).

Paths are JSON Pointers (RFC 6901, `json_pointer`): "/order/status" is the key "status" of the
key "order"; a key holding "~" or "/" is escaped ("~0", "~1"), so the key "a.b" ("/a.b") and the
key "b" of "a" ("/a/b") never share a path, nor do "a/b" ("/a~1b") and "a" → "b".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from fair_forge_core.checks.base import judged_outcome, register_check, result
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.schemas import CheckResult, Dataset, EvaluationConfig, StateCheck, StateDifference
from fair_forge_core.tools.rules import Agreement, is_rule

MAX_STATE_KEYS = 5
"""How many disagreeing keys of an end state a reason names (the rest are counted)."""

_MISSING = object()


def json_pointer(keys: Iterable[str]) -> str:
    """The RFC 6901 JSON Pointer of a path of object keys: "" for none (the whole document),
    else each key after a "/", its "~" written "~0" and its "/" written "~1" (in that order)."""
    return "".join("/" + key.replace("~", "~0").replace("/", "~1") for key in keys)


def _leaves(expected: Any, final: Any) -> Iterator[tuple[str, Any, Any]]:
    """(JSON Pointer, leaf, the final state's value at that path or `_MISSING`) of every leaf of
    `expected`, in its key order.

    One walk down both states together, so a leaf costs its depth once (not the depth again
    for each level above it). An `expected` that is no object is one leaf, at the path ""."""
    stack: list[tuple[str, Any, Any]] = [("", expected, final)]
    while stack:
        path, node, actual = stack.pop()
        if not (isinstance(node, dict) and node and not is_rule(node)):
            if not (isinstance(node, dict) and not node):  # a nested {} asks for nothing
                yield path, node, actual
            continue
        children = [(path + json_pointer((key,)), value, _child(actual, key)) for key, value in node.items()]
        stack.extend(reversed(children))  # popped in key order


def _child(state: Any, key: str) -> Any:
    """`state[key]`, or `_MISSING` when `state` is no dict holding `key` (or is missing itself)."""
    if isinstance(state, dict) and key in state:
        return state[key]
    return _MISSING


def compare_state(expected: Any, final: Any) -> StateCheck:
    """The per-key comparison of `final` with `expected` (module docstring)."""
    if isinstance(expected, dict) and not expected:
        return StateCheck(matches=True, checked=0, mismatched=0, diff=[])
    diff = []
    agreement = Agreement()  # one state: each value's canonical form computed once
    for path, leaf, actual in _leaves(expected, final):
        present = actual is not _MISSING
        agrees = present and agreement.agrees(leaf, actual)
        diff.append(
            StateDifference(
                path=path, expected=leaf, actual=actual if present else None, present=present, agrees=agrees
            )
        )
    mismatched = sum(1 for d in diff if not d.agrees)
    return StateCheck(matches=mismatched == 0, checked=len(diff), mismatched=mismatched, diff=diff)


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def state_reason(check: StateCheck) -> str:
    """`end state: 2 of 5 key(s) disagree: path: expected X, got Y; …` (absent keys say so, at
    most `MAX_STATE_KEYS` named), or `end state: matches (5 key(s) checked)`."""
    if check.matches:
        return f"end state: matches ({check.checked} key(s) checked)"
    wrong = [d for d in check.diff if not d.agrees]
    parts = [
        f"{d.path}: expected {_value(d.expected)}, got {_value(d.actual) if d.present else 'nothing (absent)'}"
        for d in wrong[:MAX_STATE_KEYS]
    ]
    if len(wrong) > MAX_STATE_KEYS:
        parts.append(f"… and {len(wrong) - MAX_STATE_KEYS} more")
    return f"end state: {check.mismatched} of {check.checked} key(s) disagree: " + "; ".join(parts)


@register_check
@dataclass(frozen=True)
class EndStateCheck:
    """A conversation with an `expected_state` (`Dataset.checks_state`): passed when the state
    matches (`compare_state`), else failed; its `StateCheck` is the result's `state_check`."""

    name: ClassVar[str] = "end_state"

    @classmethod
    def for_config(cls, config: EvaluationConfig) -> EndStateCheck:
        return cls()

    def questions(self, dataset: Dataset) -> Sequence[JudgeQuestion]:
        return ()

    def check(self, dataset: Dataset, judged: Sequence[TurnJudgement]) -> list[CheckResult]:
        if not dataset.checks_state:
            return []
        check = compare_state(dataset.expected_state, dataset.final_state)
        outcome = judged_outcome(check.matches)
        return [result(self, outcome=outcome, reason=state_reason(check), required=True, view=check)]

    def spec(self) -> dict[str, Any]:
        return {}
