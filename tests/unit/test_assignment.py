"""`fair_forge_core.tools.pairing.best_assignment` against scipy's `linear_sum_assignment`.

The oracle is scipy itself (`maximize=True`, float64 input), which the tool rubric used
before #27. `_optimal_assignments` keeps the pairs chosen, not only their total, so the
property is the same assignment, ties included — not merely an optimum of equal weight.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from fair_forge_core.tools.pairing import best_assignment


def scipys(weights: list[list[int]] | list[list[float]]) -> list[tuple[int, int]]:
    if not weights or not weights[0]:
        return []
    rows, columns = linear_sum_assignment(np.array(weights, dtype=float), maximize=True)
    return [(int(row), int(column)) for row, column in zip(rows, columns, strict=True)]


def total(weights: list[list[int]], cells: list[tuple[int, int]]) -> int:
    return sum(weights[row][column] for row, column in cells)


@st.composite
def matrices(draw: st.DrawFn) -> list[list[int]]:
    """0×0 … 8×10 integer matrices; small ranges make ties common, large ones reach 2**53."""
    rows = draw(st.integers(0, 8))
    columns = draw(st.integers(0, 10)) if rows else 0
    high = draw(st.sampled_from([1, 2, 3, 12, 1000, 2**40, 2**53 - 1]))
    cell = st.integers(0, high)
    return [[draw(cell) for _ in range(columns)] for _ in range(rows)]


@settings(max_examples=2000, derandomize=True, deadline=None)
@given(matrices())
def test_same_assignment_as_scipy(weights: list[list[int]]) -> None:
    ours, theirs = best_assignment(weights), scipys(weights)
    assert total(weights, ours) == total(weights, theirs)
    assert ours == theirs


def test_same_assignment_as_scipy_on_a_seeded_sweep() -> None:
    # Every shape 0×0 … 8×10, 40 matrices each, weights of 0..1 (ties everywhere) up to 2**52.
    generator = random.Random(27)
    for rows in range(9):
        for columns in range(11):
            for _ in range(40):
                high = generator.choice([1, 2, 5, 60, 2**20, 2**52])
                weights = [[generator.randint(0, high) for _ in range(columns)] for _ in range(rows)]
                assert best_assignment(weights) == scipys(weights), weights


def test_float_weights_choose_as_scipy_does() -> None:
    # `_optimal_assignments` passes agreements as floats beyond 2**53: thirds and sevenths round.
    generator = random.Random(3)
    for _ in range(500):
        rows, columns = generator.randint(1, 6), generator.randint(1, 7)
        weights = [[generator.randint(0, 6) / generator.choice([1, 3, 7]) for _ in range(columns)] for _ in range(rows)]
        assert best_assignment(weights) == scipys(weights), weights


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ([], []),
        ([[]], []),
        ([[5]], [(0, 0)]),
        # Greedy takes 9 and is left with 0 (total 9); the optimum is 8 + 7 = 15.
        ([[9, 8], [7, 0]], [(0, 1), (1, 0)]),
        # Tall: three rows, two columns; rows 1 and 2 take them (5 + 6 = 11 beats 4 + 6, 4 + 2, 5 + 1 …).
        ([[4, 1], [5, 2], [3, 6]], [(1, 0), (2, 1)]),
        # A constant matrix: the identity (scipy's rule, #11602 there).
        ([[1, 1, 1], [1, 1, 1]], [(0, 0), (1, 1)]),
    ],
)
def test_hand_worked_assignments(weights: list[list[int]], expected: list[tuple[int, int]]) -> None:
    assert best_assignment(weights) == expected
