"""Pairing of expected with used calls of one turn (see `fair_forge_core.tools`, *Pairing*).

Per tool name, a table of integer parameter agreements (`name_tables`); the
assignments of maximal total agreement (`_optimal_assignments`); the in-order
alignment of the two call lists (`_in_order_alignment`); and the tie-break among
equal assignments by the longest run kept in order (`pair_calls`).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fair_forge_core.schemas import ExpectedToolCall, ToolCall
from fair_forge_core.tools.rules import Agreement, parameter_agreement

AnyCall = ToolCall | ExpectedToolCall


@dataclass(frozen=True)
class CallPair:
    """An expected call (index into the expected list) paired with a used call."""

    expected: int
    used: int
    agreement: float
    wrong_keys: tuple[str, ...]


@dataclass(frozen=True)
class NameTable:
    """For one tool name: its expected and used indices (each in call order) and, for every
    (expected, used) pair of them, `weights[row][column]`: the parameter agreement scaled
    to an integer by the turn's common denominator (see `name_tables`), so that totals
    compare exactly and fast."""

    expected: list[int]
    used: list[int]
    weights: list[list[int]]
    scale: int  # the weight of full agreement


def call_order(calls: Sequence[AnyCall]) -> list[int]:
    """Indices of `calls` in call order: by ``step`` (ties in list order) when every call
    has one, else list order — a partial numbering cannot say where the others go."""
    if calls and all(call.step is not None for call in calls):
        return sorted(range(len(calls)), key=lambda i: (calls[i].step, i))
    return list(range(len(calls)))


def _indices_by_name(calls: Sequence[AnyCall]) -> dict[str, list[int]]:
    """Indices of `calls` grouped by tool name, each group in call order."""
    groups: dict[str, list[int]] = {}
    for index in call_order(calls):
        groups.setdefault(calls[index].tool_name, []).append(index)
    return groups


def _agreement_counts(expected: Mapping[str, Any], used: Mapping[str, Any], agreement: Agreement) -> tuple[int, int]:
    """(keys whose values agree, keys on either side): `parameter_agreement` as two integers.

    Both counted by set intersections (`Agreement.agreeing_items`): a pair costs about its
    smaller parameter set in C, each value's canonical form having been computed once."""
    agree, common = agreement.agreeing_items(expected, used)
    return agree, len(expected) + len(used) - common


def name_tables(
    expected: Sequence[ExpectedToolCall], used: Sequence[ToolCall], agreement: Agreement | None = None
) -> list[NameTable]:
    """Per expected tool name, the parameter agreement of its expected and used calls.

    An agreement is agree/keys (1 when neither side has a key); every table of a turn
    scales them by the same L, the least common multiple of the turn's key counts, so
    each weight agree·(L/keys) is an integer and sums compare exactly. Computed once per
    turn; the pairing, its in-order alignment and the tool-call F1 read it. Values are
    compared by one `Agreement` for the turn (`agreement`, or a fresh one), so each
    parameter value's canonical form is computed once, not once per pair.
    """
    agreement = agreement or Agreement()
    used_by_name = _indices_by_name(used)
    counts = {
        name: (
            expected_indices,
            used_by_name.get(name, []),
            [
                [
                    _agreement_counts(expected[e].parameters, used[u].parameters, agreement)
                    for u in used_by_name.get(name, [])
                ]
                for e in expected_indices
            ],
        )
        for name, expected_indices in _indices_by_name(expected).items()
    }
    scale = math.lcm(*{max(keys, 1) for _, _, rows in counts.values() for row in rows for _, keys in row})
    return [
        NameTable(
            expected_indices,
            used_indices,
            [[agree * (scale // keys) if keys else scale for agree, keys in row] for row in rows],
            scale,
        )
        for expected_indices, used_indices, rows in counts.values()
    ]


def best_assignment(weights: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """A one-to-one (row, column) assignment of maximum total weight, with
    ``min(rows, columns)`` pairs, in increasing row order; [] for an empty matrix.

    Crouse's shortest augmenting path (the Jonker–Volgenant family, O(rows² · columns)),
    step for step as scipy's `linear_sum_assignment(weights, maximize=True)` does it
    (scipy/optimize/rectangular_lsap.cpp): the same operations in the same order, so on
    ties it chooses the same optimum — `_optimal_assignments` keeps the pairs chosen,
    not only their total. Ours so that a request does not import scipy and numpy (~0.5 s
    of CPU) for matrices of a few tool calls. Integer weights are exact (Python ints);
    float weights round as scipy's float64 do.
    """
    rows, columns = len(weights), len(weights[0]) if weights else 0
    if not rows or not columns:
        return []
    transpose = columns < rows  # the solver wants rows ≤ columns
    if transpose:
        rows, columns = columns, rows
        cost = [[-weights[j][i] for j in range(columns)] for i in range(rows)]
    else:
        cost = [[-weight for weight in row] for row in weights]  # maximise = minimise the negation
    row_potential: list[float] = [0] * rows
    column_potential: list[float] = [0] * columns
    column_of_row = [-1] * rows
    row_of_column = [-1] * columns
    for current in range(rows):
        sink, lowest, path, distance, rows_seen, columns_seen = _augmenting_path(
            cost, row_potential, column_potential, row_of_column, current
        )
        row_potential[current] += lowest
        for i in rows_seen:
            if i != current:
                row_potential[i] += lowest - distance[column_of_row[i]]
        for j in columns_seen:
            column_potential[j] -= lowest - distance[j]
        j = sink
        while True:  # flip the path: each row on it takes the column after it
            i = path[j]
            row_of_column[j] = i
            column_of_row[i], j = j, column_of_row[i]
            if i == current:
                break
    if transpose:
        return sorted((column, row) for row, column in enumerate(column_of_row))
    return list(enumerate(column_of_row))


def _augmenting_path(
    cost: Sequence[Sequence[float]],
    row_potential: Sequence[float],
    column_potential: Sequence[float],
    row_of_column: Sequence[int],
    start: int,
) -> tuple[int, float, list[int], list[float], set[int], set[int]]:
    """Dijkstra from row `start` over reduced costs to the nearest free column: (that
    column, its distance, the row before each column on the paths, each column's
    distance, the rows and the columns reached). Columns are scanned from the last
    (scipy's order: a constant matrix gets the identity); among equally near columns
    the first free one scanned ends the search."""
    columns = len(cost[0])
    remaining = list(range(columns - 1, -1, -1))
    distance: list[float] = [math.inf] * columns
    path = [-1] * columns
    rows_seen: set[int] = set()
    columns_seen: set[int] = set()
    reached: float = 0
    i = start
    while True:
        rows_seen.add(i)
        index, lowest = -1, math.inf
        cost_row, potential = cost[i], row_potential[i]
        for position, j in enumerate(remaining):
            reduced = reached + cost_row[j] - potential - column_potential[j]
            if reduced < distance[j]:
                path[j], distance[j] = i, reduced
            if distance[j] < lowest or (distance[j] == lowest and row_of_column[j] == -1):
                index, lowest = position, distance[j]
        reached = lowest
        j = remaining[index]
        columns_seen.add(j)
        remaining[index] = remaining[-1]
        remaining.pop()
        if row_of_column[j] == -1:
            return j, reached, path, distance, rows_seen, columns_seen
        i = row_of_column[j]


_EXACT_SEARCH_LIMIT = 720
"""Most pairings of one name enumerated to find all of maximal agreement (6!), and most
combinations of such pairings searched for the longest in-order run."""

_SEARCH_BUDGET = 100_000
"""Most steps of that search: combinations × #expected × #used (one LCS each). Every turn
with at most five calls on each side is within both bounds."""

_Assignment = tuple[tuple[int, int], ...]  # (row, column) cells of one name table


def _assignments(rows: int, columns: int) -> Iterable[_Assignment]:
    """Every one-to-one assignment of ``min(rows, columns)`` pairs, the in-order one first."""
    if rows <= columns:
        return (tuple(enumerate(chosen)) for chosen in itertools.permutations(range(columns), rows))
    return (
        tuple((row, column) for column, row in enumerate(chosen))
        for chosen in itertools.permutations(range(rows), columns)
    )


def _optimal_assignments(table: NameTable, preferred: set[tuple[int, int]]) -> list[_Assignment]:
    """The assignments of one name of maximal total agreement (exactly).

    All of them when there are at most `_EXACT_SEARCH_LIMIT` assignments to look at;
    otherwise one, found by integer weights that rank by total agreement first and
    by the number of `preferred` (expected index, used index) pairs second.
    """
    rows, columns = len(table.expected), len(table.used)
    if columns == 0:
        return [()]
    if math.perm(max(rows, columns), min(rows, columns)) <= _EXACT_SEARCH_LIMIT:
        best: list[_Assignment] = []
        best_total = -1
        for assignment in _assignments(rows, columns):
            total = sum(table.weights[r][c] for r, c in assignment)
            if total > best_total:
                best, best_total = [assignment], total
            elif total == best_total:
                best.append(assignment)
        return best
    levels = min(rows, columns) + 1  # more than any count of preferred pairs: agreement always ranks first
    if table.scale * levels * min(rows, columns) >= 2**53:
        # Beyond float64's exact integers (a turn whose calls have many different key counts):
        # agreement to float precision, ties not ranked. No realistic turn gets here.
        return [tuple(best_assignment([[weight / table.scale for weight in row] for row in table.weights]))]
    weights = [
        [weight * levels + ((table.expected[r], table.used[c]) in preferred) for c, weight in enumerate(row)]
        for r, row in enumerate(table.weights)
    ]
    return [tuple(best_assignment(weights))]


def _in_order_alignment(
    expected: Sequence[AnyCall], used: Sequence[AnyCall], tables: Sequence[NameTable]
) -> set[tuple[int, int]]:
    """(expected, used) pairs of one in-order alignment of the two call sequences: same-name
    pairs, increasing on both sides, with the highest total agreement (then the most pairs)."""
    weight_of = {
        (table.expected[r], table.used[c]): weight
        for table in tables
        for r, row in enumerate(table.weights)
        for c, weight in enumerate(row)
    }
    first, second = call_order(expected), call_order(used)
    zero = (0, 0)
    best = [[zero] * (len(second) + 1) for _ in range(len(first) + 1)]
    for i in range(len(first) - 1, -1, -1):
        for j in range(len(second) - 1, -1, -1):
            candidate = max(best[i + 1][j], best[i][j + 1])
            weight = weight_of.get((first[i], second[j]))
            if weight is not None:
                after = best[i + 1][j + 1]
                candidate = max(candidate, (after[0] + weight, after[1] + 1))
            best[i][j] = candidate
    chain: set[tuple[int, int]] = set()
    i = j = 0
    while i < len(first) and j < len(second):
        weight = weight_of.get((first[i], second[j]))
        after = best[i + 1][j + 1]
        if weight is not None and best[i][j] == (after[0] + weight, after[1] + 1):
            chain.add((first[i], second[j]))
            i, j = i + 1, j + 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return chain


def longest_common_subsequence(first: Sequence[int], second: Sequence[int]) -> list[int]:
    """One longest common subsequence of two sequences (deterministic)."""
    lengths = [[0] * (len(second) + 1) for _ in range(len(first) + 1)]
    for i in range(len(first) - 1, -1, -1):
        for j in range(len(second) - 1, -1, -1):
            if first[i] == second[j]:
                lengths[i][j] = lengths[i + 1][j + 1] + 1
            else:
                lengths[i][j] = max(lengths[i + 1][j], lengths[i][j + 1])
    common: list[int] = []
    i = j = 0
    while i < len(first) and j < len(second):
        if first[i] == second[j]:
            common.append(first[i])
            i, j = i + 1, j + 1
        elif lengths[i + 1][j] >= lengths[i][j + 1]:
            i += 1
        else:
            j += 1
    return common


def pair_calls(
    expected: Sequence[ExpectedToolCall],
    used: Sequence[ToolCall],
    tables: Sequence[NameTable],
    sequence_matters: bool,
    agreement: Agreement | None = None,
) -> list[CallPair]:
    """Pair expected with used calls of the same name: maximal total parameter agreement
    (exactly), then the most calls kept in order (see `fair_forge_core.tools`).

    The longest in-order run is searched for exhaustively only where it is scored
    (`sequence_matters`) and the search is small (`_EXACT_SEARCH_LIMIT` combinations and
    `_SEARCH_BUDGET` steps); otherwise ties go to the pairs of the in-order alignment.
    """
    alignment = _in_order_alignment(expected, used, tables)
    options = [_optimal_assignments(table, alignment) for table in tables]
    combinations = math.prod(len(choices) for choices in options)
    search_steps = combinations * len(expected) * len(used)
    if sequence_matters and 1 < combinations <= _EXACT_SEARCH_LIMIT and search_steps <= _SEARCH_BUDGET:
        expected_order = call_order(expected)
        used_position = {index: position for position, index in enumerate(call_order(used))}

        def kept_in_order(combination: Iterable[_Assignment]) -> int:
            partners = sorted(
                (used_position[table.used[c]], table.expected[r])
                for table, assignment in zip(tables, combination, strict=True)
                for r, c in assignment
            )
            return len(longest_common_subsequence(expected_order, [e for _, e in partners]))

        chosen = list(max(itertools.product(*options), key=kept_in_order))  # max keeps the first of equals
    else:

        def agreeing(table: NameTable, assignment: _Assignment) -> int:
            return sum((table.expected[r], table.used[c]) in alignment for r, c in assignment)

        chosen = [
            max(choices, key=functools.partial(agreeing, table)) for table, choices in zip(tables, options, strict=True)
        ]
    pairs = []
    for table, assignment in zip(tables, chosen, strict=True):
        for r, c in assignment:
            e, u = table.expected[r], table.used[c]
            share, wrong = parameter_agreement(expected[e].parameters, used[u].parameters, agreement)
            pairs.append(CallPair(e, u, share, tuple(wrong)))
    return sorted(pairs, key=lambda pair: pair.expected)
