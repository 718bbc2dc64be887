"""`fair_forge_core.trusted`: a result model built without validation is the one validation makes
of the same values, every field required, and a class it cannot build is refused."""

from __future__ import annotations

import pytest

from fair_forge_core.schemas import CheckResult, InteractionResult
from fair_forge_core.trusted import fields_of, made, trusted

VALUES = {
    "qa_id": "q1",
    "answer_score": 0.75,
    "answer_correct": True,
    "tool_correct": None,
    "is_correct": True,
    "judge_reasoning": "right",
    "error": None,
    "observation": "seen",
    "judged_by": None,
    "judge_votes": None,
    "judge_agreement": None,
    "tool_policy": None,
}


def test_a_trusted_result_is_the_validated_one() -> None:
    built, validated = trusted(InteractionResult, dict(VALUES)), InteractionResult(**VALUES)
    assert built == validated and built.model_dump_json() == validated.model_dump_json()
    assert built.model_fields_set == set(InteractionResult.model_fields)
    assert built.model_fields_set is fields_of(InteractionResult)  # the one shared set
    again = made(InteractionResult, {**built.__dict__, "qa_id": "q2"}, fields_of(InteractionResult))
    assert (again.qa_id, built.qa_id) == ("q2", "q1")  # its own values; the first untouched
    copied = built.model_copy(update={"error": "e"})  # a copy gets a set of its own
    assert copied.error == "e" and built.error is None and copied.model_fields_set is not built.model_fields_set


def test_every_field_and_no_other_is_required() -> None:
    with pytest.raises(ValueError, match=r"InteractionResult needs every field and no other: \['answer_agreement'"):
        trusted(InteractionResult, {**VALUES, "answer_agreement": 1.0})
    missing = {name: value for name, value in VALUES.items() if name != "error"}
    with pytest.raises(ValueError, match=r"needs every field and no other: \['error'\]"):
        trusted(InteractionResult, missing)


def test_a_class_with_private_attributes_is_refused() -> None:
    with pytest.raises(TypeError, match="CheckResult has private attributes"):
        fields_of(CheckResult)
