"""Whether a tool result appears in the final answer (see `fair_forge_core.tools`, *result_in_answer*)."""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fair_forge_core.schemas import ToolCall
from fair_forge_core.tools.rules import is_number, normalise_text

MAX_RESULT_LEAVES = 256
"""How many leaf values of one turn's tool results `find_result_in_answer` looks for."""

_NUMBER_TOKEN = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w|\.\d)")


def _numbers_in(text: str) -> list[float]:
    """The number tokens of a text ("8." → 8, "1,000" → 1000, "-2.5" → -2.5)."""
    return [float(token.replace(",", "")) for token in _NUMBER_TOKEN.findall(text)]


def _leaf_values(value: Any) -> Iterator[Any]:
    """The numbers and strings at the leaves of a tool result (dict values and list items,
    at any depth), in order. Bools and None are no evidence ("true" is in many answers)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
        elif isinstance(item, str) or is_number(item):
            yield item


def find_result_in_answer(calls: Sequence[ToolCall], answer: str) -> bool | None:
    """Whether any tool result appears in the answer; None if there is nothing to look for.

    A result appears when one of its leaf values does (`_leaf_values`: the values of
    an object or list, at any depth, so ``{"temp_c": 18, "condition": "cloudy"}``
    appears in "It's 18°C and cloudy"). A number (not a bool) appears as a number
    token of the answer of equal value (relative tolerance 1e-9, for float noise; "1,000"
    reads as 1000). A string of two characters or more appears as whole words of the
    answer, case and runs of whitespace aside ("R-77" in "refund r-77", but "ok" not in
    "booked"); a shorter one, a bool or None is no evidence. None when no call returned
    a leaf that could be evidence. Only the first `MAX_RESULT_LEAVES` leaves of the
    turn's results (in call order) are looked for, which bounds the work.
    """
    results = [call.result for call in calls if call.result is not None]
    text = normalise_text(answer)
    answer_numbers: list[float] | None = None
    looked = False
    leaves = itertools.islice((leaf for result in results for leaf in _leaf_values(result)), MAX_RESULT_LEAVES)
    for leaf in leaves:
        if isinstance(leaf, str):
            needle = normalise_text(leaf)
            if len(needle) < 2:
                continue
            looked = True
            if _appears_as_words(needle, text):
                return True
            continue
        looked = True
        if answer_numbers is None:
            answer_numbers = sorted(_numbers_in(answer))
        # Candidates within twice the tolerance, then the exact test: near-linear in the numbers.
        window = 2e-9 * abs(leaf)
        at = bisect.bisect_left(answer_numbers, leaf - window)
        while at < len(answer_numbers) and answer_numbers[at] <= leaf + window:
            if math.isclose(answer_numbers[at], leaf, rel_tol=1e-9):
                return True
            at += 1
    return False if looked else None


def _appears_as_words(needle: str, text: str) -> bool:
    """Whether `needle` occurs in `text` not glued to a word character on either side."""
    at = text.find(needle)
    while at >= 0:
        end = at + len(needle)
        before = text[at - 1] if at else " "
        after = text[end] if end < len(text) else " "
        if not ((before.isalnum() or before == "_") and (needle[0].isalnum() or needle[0] == "_")) and not (
            (after.isalnum() or after == "_") and (needle[-1].isalnum() or needle[-1] == "_")
        ):
            return True
        at = text.find(needle, at + 1)
    return False
