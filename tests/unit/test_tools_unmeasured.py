"""What was not reported is not measured (docs/tool-rubric.md#utilization, issue #33 item 4).

A turn whose calls returned no result and whose agent did not report `final_answer_uses_tools`
has no evidence about utilization: it is null, left out of overall (the weights renormalised
over the measured dimensions) and of the dimension floor. The expected overall scores are
computed here with fractions from the weights, independently of the code's float path.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from fair_forge_core.schemas import AgenticTrace, ExpectedToolCall, GroundTruthAgentic, ToolCall, ToolWeights
from fair_forge_core.tools import score_tool_calls


def turn(
    used: list[dict[str, Any]],
    expected: list[dict[str, Any]],
    *,
    answer: str = "The sum is 8.",
    weights: ToolWeights | None = None,
    uses_tools: bool | None = None,
    floor: float = 0.5,
) -> Any:
    trace = AgenticTrace(tools_used=[ToolCall.model_validate(c) for c in used], final_answer_uses_tools=uses_tools)
    truth = GroundTruthAgentic(expected_tools=[ExpectedToolCall.model_validate(c) for c in expected])
    return score_tool_calls(
        trace, truth, answer=answer, weights=weights or ToolWeights(), tool_threshold=0.75, dimension_floor=floor
    )


def renormalised(weights: dict[str, int], values: dict[str, Fraction]) -> Fraction:
    """Σ w·v / Σ w over the measured dimensions (those in `values`)."""
    return sum((weights[name] * value for name, value in values.items()), Fraction(0)) / sum(
        weights[name] for name in values
    )


CALL = {"tool_name": "calculator", "parameters": {"a": 5, "b": 3}}


def test_no_result_and_nothing_reported_is_not_measured_and_does_not_fail_the_turn() -> None:
    # Before #33 this scored utilization 0 → 0.75 overall, below the floor: a failing turn.
    score = turn([CALL], [CALL])
    assert score.result_utilization is None
    assert score.result_in_answer is None
    assert score.overall_correctness == 1.0  # (1 + 1 + 1) / 3
    assert score.is_correct is True
    assert "utilization not measured" in score.reasoning
    assert "below tool_dimension_floor" not in score.reasoning  # no floor on what was not measured


def test_the_weights_are_renormalised_over_the_measured_dimensions() -> None:
    # Used {a: 5, b: 3, c: 1} against {a: 5, b: 3}: parameters 2/3 (union {a, b, c}, two agree).
    weights = {"selection": 1, "parameters": 2, "sequence": 1, "utilization": 4}
    used = {"tool_name": "calculator", "parameters": {"a": 5, "b": 3, "c": 1}}
    score = turn([used], [CALL], weights=ToolWeights(**weights))
    expected = renormalised(weights, {"selection": Fraction(1), "parameters": Fraction(2, 3), "sequence": Fraction(1)})
    assert expected == Fraction(5, 6)
    assert score.parameter_accuracy == pytest.approx(2 / 3)
    assert score.overall_correctness == pytest.approx(float(expected), rel=1e-12)
    assert score.is_correct is True  # 5/6 ≥ 0.75; as a 0 utilization it was 10/3 / 8 = 0.42


def test_a_renormalised_score_still_fails_on_a_measured_dimension() -> None:
    # Every argument wrong: parameters 0, below the floor whatever utilization is.
    wrong = {"tool_name": "calculator", "parameters": {"a": 1, "b": 1}}
    score = turn([wrong], [CALL])
    assert score.result_utilization is None
    assert score.overall_correctness == pytest.approx(
        float(
            renormalised(
                {"selection": 1, "parameters": 1, "sequence": 1},
                {"selection": Fraction(1), "parameters": Fraction(0), "sequence": Fraction(1)},
            )
        )
    )
    assert score.is_correct is False
    assert "below tool_dimension_floor 0.5: parameters 0.00" in score.reasoning


@pytest.mark.parametrize("result", [True, None, "x", {"ok": False}, [None, True]])
def test_a_result_holding_no_evidence_is_not_measured_either(result: Any) -> None:
    # Bools, None and one-character strings are no evidence (`find_result_in_answer`).
    score = turn([{**CALL, "result": result}], [CALL])
    assert score.result_in_answer is None
    assert score.result_utilization is None
    assert score.is_correct is True


def test_evidence_is_measured_whatever_it_says() -> None:
    assert turn([{**CALL, "result": 8}], [CALL]).result_utilization == 1.0  # 8 is in the answer
    absent = turn([{**CALL, "result": 9}], [CALL])  # a result the answer does not show
    assert absent.result_utilization == 0.0
    assert absent.is_correct is False
    assert turn([CALL], [CALL], uses_tools=False).result_utilization == 0.0  # reported: measured
    assert turn([CALL], [CALL], uses_tools=True).result_utilization == 1.0
    assert turn([], [CALL]).result_utilization == 0.0  # expected tools, none used: nothing was used


def test_with_all_the_weight_on_an_unmeasured_dimension_the_tools_decide_nothing() -> None:
    weights = ToolWeights(selection=0, parameters=0, sequence=0, utilization=1)
    score = turn([CALL], [CALL], weights=weights)
    assert score.result_utilization is None
    assert score.overall_correctness is None
    assert score.is_correct is None
    measured = turn([{**CALL, "result": 8}], [CALL], weights=weights)
    assert (measured.overall_correctness, measured.is_correct) == (1.0, True)
