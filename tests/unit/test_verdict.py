"""The verdict model: the schema sent to providers, and what a reply's verdict object may hold."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from fair_forge_core.judges.verdict import (
    MAX_REASONING_CHARS,
    VERDICT_SCHEMA,
    Verdict,
    VerdictParseError,
    parse_verdict,
)

# What providers were sent before the schema was derived from `Verdict`: byte for byte the same.
SENT_SCHEMA: dict[str, Any] = {
    "title": "judge_verdict",
    "description": "The grade of one agent answer against its ground truth.",
    "type": "object",
    "properties": {
        "score": {"type": "number", "description": "Correctness from 0.0 to 1.0."},
        "reasoning": {"type": "string", "description": "One or two sentences explaining the score."},
    },
    "required": ["score", "reasoning"],
    "additionalProperties": False,
}


def test_the_schema_sent_to_providers_is_unchanged() -> None:
    assert VERDICT_SCHEMA == SENT_SCHEMA
    assert json.dumps(VERDICT_SCHEMA) == json.dumps(SENT_SCHEMA)


def parse(raw: Any) -> Verdict:
    return parse_verdict(raw, bos="```json", eos="```")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (None, "expected a JSON object, got NoneType"),
        ([0.5], "expected a JSON object, got list"),
        (AIMessage(content="no verdict"), "no JSON object in the reply"),
        ({"reasoning": "no score"}, "the reply has no numeric score"),
        ({"score": None}, "the reply has no numeric score"),
        ({"score": True}, "the reply has no numeric score"),
        ({"score": "0.7"}, "the reply has no numeric score"),
        ({"score": float("nan")}, "the reply has no numeric score"),
        ({"score": float("inf")}, "the reply has no numeric score"),
        ({"score": 1.01}, "score 1.01 is outside [0, 1]"),
        ({"score": 2}, "score 2 is outside [0, 1]"),
        ({"score": -0.5}, "score -0.5 is outside [0, 1]"),
        (AIMessage(content='{"score": 7, "reasoning": "r"}'), "score 7 is outside [0, 1]"),
    ],
)
def test_an_unusable_verdict_says_why(raw: Any, message: str) -> None:
    with pytest.raises(VerdictParseError) as refused:
        parse(raw)
    assert str(refused.value).startswith(message)


def test_an_int_score_is_a_float_and_extra_keys_are_ignored() -> None:
    verdict = parse({"score": 1, "reasoning": "r", "confidence": "high"})
    assert verdict.score == 1.0 and isinstance(verdict.score, float)
    assert verdict.reasoning == "r"


@pytest.mark.parametrize(
    ("raw", "reasoning"),
    [
        ({"score": 0.5}, ""),
        ({"score": 0.5, "reasoning": 3}, "3"),
        ({"score": 0.5, "reasoning": None}, "None"),
        ({"score": 0.5, "reasoning": ["a", "b"]}, "['a', 'b']"),
        ({"score": 0.5, "reasoning": "x" * MAX_REASONING_CHARS}, "x" * MAX_REASONING_CHARS),
        ({"score": 0.5, "reasoning": "x" * (MAX_REASONING_CHARS + 1)}, "x" * (MAX_REASONING_CHARS - 1) + "…"),
    ],
)
def test_reasoning_is_text_of_bounded_length(raw: dict[str, Any], reasoning: str) -> None:
    assert parse(raw).reasoning == reasoning


def test_a_verdict_is_immutable() -> None:
    from pydantic import ValidationError

    verdict = parse({"score": 0.5, "reasoning": "r"})
    with pytest.raises(ValidationError):
        verdict.score = 1.0  # type: ignore[misc]
    assert (verdict.score, verdict.reasoning) == (0.5, "r")
    assert hash(verdict) == hash(Verdict(score=0.5, reasoning="r"))


def test_a_pydantic_reply_is_read_through_its_fields() -> None:
    from pydantic import BaseModel

    class Reply(BaseModel):
        score: float
        reasoning: str

    assert parse(Reply(score=0.25, reasoning="r")) == parse({"score": 0.25, "reasoning": "r"})
