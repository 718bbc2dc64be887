"""`fair_forge_core.compare.sides`: the one orchestration of a comparison of two sides, its steps
and its refusals (`ComparisonRefused`), independent of the face that runs it."""

from __future__ import annotations

import pytest

from fair_forge_core.compare import ComparedSide, ComparisonRefused, compare, compare_sides, side_of
from fair_forge_core.schemas import ConversationEfficiency, ConversationMetrics, Provenance
from fair_forge_testing.builders import provenance_json, scored_conversation


def attempts(assistant: str, pattern: dict[str, list[bool | None]]) -> list[ConversationMetrics]:
    """One conversation per attempt, task by task, as the pattern says (None: unscored)."""
    return [
        scored_conversation(f"{assistant}-{task}-{n}", correct, task_id=task, assistant_id=assistant)
        for task, outcomes in pattern.items()
        for n, correct in enumerate(outcomes)
    ]


TWELVE = {f"t{i}": [True, i % 2 == 0, False] for i in range(12)}


def test_side_of_picks_one_assistant_and_refuses_an_ambiguous_or_absent_one() -> None:
    both = attempts("v1", TWELVE) + attempts("v2", TWELVE)
    assert [m.assistant_id for m in side_of(both, "v2", "candidate").conversations] == ["v2"] * 36
    with pytest.raises(ComparisonRefused) as several:
        side_of(both, None, "baseline")
    assert (several.value.kind, several.value.side) == ("several_assistants", "baseline")
    assert str(several.value) == "holds the conversations of 2 assistants (v1, v2)"
    with pytest.raises(ComparisonRefused) as absent:
        side_of(both, "v3", "candidate")
    assert (absent.value.kind, absent.value.side, absent.value.assistant) == ("no_such_assistant", "candidate", "v3")
    assert str(absent.value) == "no conversation of assistant 'v3'; assistants present: ['v1', 'v2']"
    assert isinstance(absent.value, ValueError)  # what `evaluate` has always raised for it


def test_the_comparison_is_paired_compare_of_the_outcomes_with_the_judging_recorded() -> None:
    base, cand = attempts("v1", TWELVE), attempts("v2", {t: [True, True, o[2]] for t, o in TWELVE.items()})
    other = Provenance.model_validate(provenance_json(threshold=0.75))
    compared = compare_sides(
        ComparedSide(base, 3, Provenance.model_validate(provenance_json())),
        ComparedSide(cand, 3, other),
        seed=4,
        prior=(2.0, 3.0),
    )
    difference = "different threshold: baseline 0.7 vs candidate 0.75"
    expected = compare(
        [(m.task_id or "", m.is_fully_correct) for m in base],
        [(m.task_id or "", m.is_fully_correct) for m in cand],
        k=3,
        seed=4,
        prior=(2.0, 3.0),
        judging=[difference],
    )
    assert compared.comparison == expected
    assert compared.warnings == [difference]


def test_k_is_the_sides_unless_given_and_differing_ks_are_refused() -> None:
    base, cand = attempts("v1", TWELVE), attempts("v2", TWELVE)
    assert compare_sides(ComparedSide(base, 5), ComparedSide(cand, 5), one_evaluation=True).comparison.k == 5
    assert compare_sides(ComparedSide(base, 3), ComparedSide(cand, 5), k=2, one_evaluation=True).comparison.k == 2
    for k_base, k_cand in ((3, 5), (3, None), (None, None)):
        with pytest.raises(ComparisonRefused) as refused:
            compare_sides(ComparedSide(base, k_base), ComparedSide(cand, k_cand), one_evaluation=True)
        assert refused.value.kind == "k_differs" and refused.value.side is None


def test_sides_judged_differently_are_warnings_and_a_refusal_under_require_same_judge() -> None:
    base, cand = attempts("v1", TWELVE), attempts("v2", TWELVE)
    # No provenance on either side: how they were judged cannot be checked, one line per side.
    unchecked = compare_sides(ComparedSide(base, 3), ComparedSide(cand, 3))
    assert unchecked.warnings == [
        "the baseline's result has no provenance: how it was judged cannot be checked",
        "the candidate's result has no provenance: how it was judged cannot be checked",
    ]
    with pytest.raises(ComparisonRefused) as refused:
        compare_sides(ComparedSide(base, 3), ComparedSide(cand, 3), require_same_judge=True)
    assert refused.value.kind == "not_judged_alike"
    assert refused.value.differences == refused.value.warnings == unchecked.warnings
    # Two sides of one evaluation are judged alike by construction: nothing to check, nothing refused.
    alike = compare_sides(ComparedSide(base, 3), ComparedSide(cand, 3), one_evaluation=True, require_same_judge=True)
    assert alike.warnings == [] and alike.comparison.judging_differences == []


def test_no_shared_task_is_refused_after_the_warnings_unless_not_required() -> None:
    base = attempts("v1", {f"a{i}": [True] for i in range(12)})
    cand = attempts("v2", {"b0": [True, None], "b1": [None]})
    with pytest.raises(ComparisonRefused) as refused:
        compare_sides(ComparedSide(base, 3), ComparedSide(cand, 3), one_evaluation=True)
    assert refused.value.kind == "no_shared_task"
    assert str(refused.value) == "no task was scored on both sides: nothing to compare"
    # 12 baseline-only tasks: ten named, the rest counted; b1 has no scored attempt (unscored only).
    assert refused.value.warnings == [
        "12 task(s) scored only for the baseline, not compared: a0, a1, a10, a11, a2, a3, a4, a5, a6, a7, … and 2 more",
        "1 task(s) scored only for the candidate, not compared: b0",
        "2 unscored candidate conversation(s) left out: b0 ×1, b1 ×1",
    ]
    stands = compare_sides(
        ComparedSide(base, 3), ComparedSide(cand, 3), one_evaluation=True, require_shared_tasks=False
    )
    assert stands.comparison.shared_tasks == 0 and stands.warnings == refused.value.warnings
    assert "no task was scored on both sides: nothing to compare" in stands.comparison.notes


def spent(conversation: ConversationMetrics, cost: float) -> ConversationMetrics:
    efficiency = ConversationEfficiency(
        turns=1,
        steps=1,
        tool_calls=0,
        failed_tool_calls=0,
        repeated_tool_calls=0,
        input_tokens=None,
        output_tokens=None,
        latency_s=None,
        cost_usd=cost,
    )
    return conversation.model_copy(update={"efficiency": efficiency})


def test_what_the_sides_spent_is_compared_when_every_conversation_carries_it() -> None:
    base = [spent(m, 0.004) for m in attempts("v1", TWELVE)]
    cand = [spent(m, 0.001) for m in attempts("v2", TWELVE)]
    compared = compare_sides(ComparedSide(base, 3), ComparedSide(cand, 3), one_evaluation=True)
    assert compared.comparison.efficiency is not None
    cost = next(e for e in compared.comparison.efficiency if e.measure == "cost_usd")
    # every scored attempt of every task: 0.004 against 0.001, over the 12 shared tasks
    assert cost.tasks == 12 and cost.difference == pytest.approx(0.001 - 0.004)
    without = compare_sides(ComparedSide(attempts("v1", TWELVE), 3), ComparedSide(cand, 3), one_evaluation=True)
    assert without.comparison.efficiency is None  # one side does not carry it
