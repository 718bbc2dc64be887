"""The rules every importer shares (`fair_forge_core.importers.trace`): the one walk up a span
tree (`nearest_marked`) and the bound on what a turn spent (`TurnBuilder.usage`). Expected
answers are worked out by hand from the trees drawn in each test."""

from __future__ import annotations

import itertools

import pytest

from fair_forge_core.importers.trace import TurnBuilder, nearest_marked


def walk(parents: dict[str, str | None], marked: set[str]) -> tuple[dict[str, str | None], list[str]]:
    """`nearest_marked` over the tree `parents` (child → parent), and the nodes it asked the parent of."""
    asked: list[str] = []

    def parent_of(node: str) -> str | None:
        asked.append(node)
        return parents[node]

    return nearest_marked(parents, parent_of, marked.__contains__), asked


def test_each_node_gets_the_first_marked_node_on_its_way_up_itself_included() -> None:
    # r ← T ← a ← b, and r ← c: T is marked
    found, _ = walk({"r": None, "T": "r", "a": "T", "b": "a", "c": "r"}, {"T"})
    assert found == {"r": None, "T": "T", "a": "T", "b": "T", "c": None}


def test_a_cycle_ends_the_walk_and_a_marked_node_on_it_is_found_in_any_order() -> None:
    # x → y → x (no mark): None for both and for z, which leads into it; p → T → q → p: T found
    parents = {"x": "y", "y": "x", "z": "x", "p": "T", "T": "q", "q": "p"}
    for order in itertools.permutations(parents):
        found = nearest_marked(order, parents.__getitem__, {"T"}.__contains__)
        assert found == {"x": None, "y": None, "z": None, "p": "T", "T": "T", "q": "T"}


@pytest.mark.parametrize("bottom_first", [False, True])
def test_a_long_chain_is_walked_once_whatever_the_order(bottom_first: bool) -> None:
    """20,000 nodes in one chain under a marked root: each node's parent is asked for at most
    once (a walk per node to the root asked 200 million times), and no recursion limit is met."""
    size = 20_000
    parents: dict[str, str | None] = {"n0": None} | {f"n{i}": f"n{i - 1}" for i in range(1, size)}
    if bottom_first:
        parents = dict(reversed(parents.items()))
    found, asked = walk(parents, {"n0"})
    assert len(asked) == len(set(asked)) <= size
    assert set(found.values()) == {"n0"}


def test_a_turn_total_over_its_bound_is_left_out_and_said_once() -> None:
    builder = TurnBuilder("traces[0]")
    builder.user("q")
    builder.usage("traces[0].calls[0]", input_tokens=6 * 10**11, output_tokens=1, cost_usd=999_999.5)
    builder.usage("traces[0].calls[1]", input_tokens=6 * 10**11, output_tokens=2, cost_usd=0.5)  # cost at the bound
    builder.usage("traces[0].calls[2]", input_tokens=1, output_tokens=3)
    builder.assistant("a", "traces[0].calls[2]")
    (turn,) = builder.turns()
    assert turn.agent_usage == {"output_tokens": 6, "cost_usd": 1_000_000.0}  # the bound itself is allowed
    assert builder.warnings == [
        "traces[0].calls[1]: input_tokens takes the turn's total over 1,000,000,000,000, the most"
        " agent_usage.input_tokens may be; the turn's input_tokens is unknown"
    ]
    builder.user("q2")
    builder.usage("traces[0].calls[3]", latency_s=1e308, cost_usd=1_000_000.0)
    assert builder.turns()[1].agent_usage == {"cost_usd": 1_000_000.0}
