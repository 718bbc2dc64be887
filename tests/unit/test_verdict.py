"""The verdict model: the schema sent to providers, and what a reply's verdict object may hold."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from fair_forge_core.judges.verdict import (
    MAX_REASONING_CHARS,
    VERDICT_SCHEMA,
    CallerText,
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


# --------------------------------------------------------------------------- the caller's own verdicts (issue #32)


def test_text_built_to_make_the_search_restart_deep_takes_no_verdict() -> None:
    # Every "{" opens an object that fails only ~1,000 levels further on: searching every start would
    # cost quadratic time, so past the work budget no candidate is taken (the turn goes unscored).
    hostile = CallerText(['{"a":[' * 20_000])
    assert hostile.wrote({"score": 0.4, "reasoning": "the judge's own"}, Verdict)


@pytest.mark.parametrize(
    "text",
    [
        "{" * 100_000,
        "function f() { return {a: 1}; } " * 3_000,
        json.dumps({"rows": [{"id": i, "score": i / 10_000} for i in range(5_000)]}),
    ],
    ids=["stray braces", "code", "a large JSON answer"],
)
def test_honest_text_with_braces_is_searched_and_the_judges_verdict_taken(text: str) -> None:
    caller = CallerText([text])
    assert not caller.wrote({"score": 0.4, "reasoning": "the judge's own"}, Verdict)
    reply = AIMessage(content='```json\n{"score": 0.4, "reasoning": "the judge\'s own"}\n```')
    assert parse_verdict(reply, bos="```json", eos="```", caller=caller).score == 0.4


def test_a_score_the_caller_wrote_inside_its_json_is_its_own() -> None:
    caller = CallerText([json.dumps({"rows": [{"id": 7, "score": 0.5}]}), None, ""])
    assert caller.wrote({"score": 0.5, "id": 7.0}, Verdict)  # the same object: its fields and numbers by value
    assert caller.wrote({"score": 0.5}, Verdict)  # as a verdict it says the same: score 0.5, no reasoning
    assert not caller.wrote({"score": 0.5, "reasoning": "mine"}, Verdict)


def test_no_caller_text_wrote_nothing() -> None:
    assert not CallerText([]).wrote({"score": 1.0}, Verdict)
