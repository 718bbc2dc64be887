"""The offline judge on the #16 labelled pairs: held-out and fresh-set floors, abstention through the
real evaluation path, and one test per failure class (pairs from the TUNING split only)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.judges.llm import AnswerJudge, JudgeAbstained, JudgeTelemetry
from fair_forge_core.judges.prompt import JudgeRequest
from fair_forge_core.judges.reference import score_answer
from fair_forge_core.judges.reference.model import ABSTAIN_MESSAGE
from fair_forge_core.schemas import Dataset, EvaluationConfig

LABELS = Path(__file__).resolve().parents[1] / "data" / "judge_labels" / "pairs.jsonl"
FRESH = LABELS.with_name("fresh.jsonl")
THRESHOLD = 0.7
# Held-out part (benchmarks/bench_offline_judge.py), after the abstention rules (tuned on the tuning
# part only; this part measured a third time): agreement 90/99 scored = 90.9 %, false passes 1/50
# wrong answers, abstentions 9/108. Floors a little under that, so a regression fails.
HELDOUT_AGREEMENT_FLOOR = 0.88
HELDOUT_MAX_FALSE_PASSES = 3
HELDOUT_MAX_ABSTENTIONS = 11
# The fresh set (written before those rules, measured once after them): agreement 88/101 scored =
# 87.1 %, false passes 2/57 wrong answers, abstentions 17/118. Floors a little under that.
FRESH_AGREEMENT_FLOOR = 0.85
FRESH_MAX_FALSE_PASSES = 3
FRESH_MAX_ABSTENTIONS = 19


def _load(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _rows() -> list[dict[str, str]]:
    return _load(LABELS)


def _split(row: dict[str, str]) -> str:
    key = "\x1f".join((row["query"], row["answer"], row["ground_truth"]))
    return "heldout" if int(hashlib.sha256(key.encode()).hexdigest(), 16) % 10 < 4 else "tuning"


def test_labels_are_well_formed_and_split_by_the_hash_rule() -> None:
    rows = _rows()
    assert len(rows) >= 250
    assert len({(r["query"], r["answer"], r["ground_truth"]) for r in rows}) == len(rows)
    for row in rows:
        assert row["label"] in ("pass", "fail") and row["category"] and row["language"]
        assert row["split"] == _split(row)
    held = sum(r["split"] == "heldout" for r in rows)
    assert 0.3 <= held / len(rows) <= 0.5


def _figures(rows: list[dict[str, str]]) -> tuple[float, int, int]:
    """(agreement on the scored turns, false passes, abstentions) of the judge on labelled rows."""
    agreed = scored = false_passes = abstentions = 0
    for row in rows:
        score, _ = score_answer(row["query"], row["answer"], row["ground_truth"])
        if score is None:
            abstentions += 1
            continue
        scored += 1
        agreed += (score >= THRESHOLD) == (row["label"] == "pass")
        false_passes += score >= THRESHOLD and row["label"] == "fail"
    return agreed / scored, false_passes, abstentions


def test_heldout_figures_stay_above_their_floors() -> None:
    agreement, false_passes, abstentions = _figures([r for r in _rows() if r["split"] == "heldout"])
    assert agreement >= HELDOUT_AGREEMENT_FLOOR
    assert false_passes <= HELDOUT_MAX_FALSE_PASSES
    assert abstentions <= HELDOUT_MAX_ABSTENTIONS


def test_fresh_set_is_well_formed_and_apart_from_the_tuned_pairs() -> None:
    fresh = _load(FRESH)
    assert len(fresh) >= 100
    keys = {(r["query"], r["answer"], r["ground_truth"]) for r in fresh}
    assert len(keys) == len(fresh)
    assert not keys & {(r["query"], r["answer"], r["ground_truth"]) for r in _rows()}
    for row in fresh:
        assert row["label"] in ("pass", "fail") and row["language"] and row["split"] == "fresh"
    assert {r["category"] for r in fresh} == {r["category"] for r in _rows()}
    assert 0.4 <= sum(r["label"] == "pass" for r in fresh) / len(fresh) <= 0.6


def test_fresh_figures_stay_above_their_floors() -> None:
    agreement, false_passes, abstentions = _figures(_load(FRESH))
    assert agreement >= FRESH_AGREEMENT_FLOOR
    assert false_passes <= FRESH_MAX_FALSE_PASSES
    assert abstentions <= FRESH_MAX_ABSTENTIONS


# --------------------------------------------------------------------------- abstention


UNDECIDABLE = ("Did the package arrive?", "The package is still in transit.", "Yes")


def test_an_undecidable_turn_abstains() -> None:
    score, reasoning = score_answer(*UNDECIDABLE)
    assert score is None and "undecided verdict" in reasoning


def test_abstention_is_an_unscored_turn_with_its_reason_not_retried() -> None:
    datasets = [
        Dataset.model_validate(
            {
                "session_id": "s1",
                "assistant_id": "agent",
                "conversation": [
                    {"qa_id": "q1", "query": "What is 2 + 2?", "assistant": "4", "ground_truth_assistant": "4"},
                    {
                        "qa_id": "q2",
                        "query": UNDECIDABLE[0],
                        "assistant": UNDECIDABLE[1],
                        "ground_truth_assistant": UNDECIDABLE[2],
                    },
                ],
            }
        ),
        Dataset.model_validate(
            {
                "session_id": "s2",
                "assistant_id": "agent",
                "conversation": [
                    {"qa_id": "q3", "query": "What is 3 + 3?", "assistant": "6", "ground_truth_assistant": "6"}
                ],
            }
        ),
    ]
    result = evaluate_sync(datasets, ReferenceJudge(), EvaluationConfig())
    turns = {i.qa_id: i for m in result.per_conversation_metrics for i in (m.interactions or [])}
    assert turns["q2"].answer_score is None and turns["q2"].error == ABSTAIN_MESSAGE
    assert turns["q1"].error is None and turns["q3"].answer_score == 1.0
    assert result.aggregated_metrics.total_conversations == 1  # the unscored one is left out of n
    assert any(ABSTAIN_MESSAGE in warning for warning in result.warnings)


def test_the_judge_path_does_not_retry_an_abstention() -> None:
    telemetry = JudgeTelemetry()
    judge = AnswerJudge(model=ReferenceJudge(), config=EvaluationConfig(), telemetry=telemetry)
    with pytest.raises(JudgeAbstained, match=ABSTAIN_MESSAGE) as raised:
        asyncio.run(judge.judge(JudgeRequest(*UNDECIDABLE)))
    assert telemetry.calls == 1 and telemetry.retries == 0 and telemetry.parse_failures == 0
    assert "undecided verdict" in raised.value.reasoning


# --------------------------------------------------------------------------- the failure classes of #16


def _passes(query: str, answer: str, ground_truth: str) -> bool | None:
    score, _ = score_answer(query, answer, ground_truth)
    return None if score is None else score >= THRESHOLD


@pytest.mark.parametrize(
    ("query", "answer", "ground_truth"),
    [
        (
            "Which planet is closest to the Sun?",
            "Mercury, which is also the largest planet in the solar system.",
            "Mercury",
        ),
        ("Who painted the Mona Lisa?", "Leonardo da Vinci painted it in 1889.", "Leonardo da Vinci"),
        ("What is the currency of Japan?", "The yen; Japan also uses the euro in Okinawa.", "The yen"),
    ],
)
def test_an_extra_claim_beside_the_fact_is_not_passed(query: str, answer: str, ground_truth: str) -> None:
    assert _passes(query, answer, ground_truth) is None  # abstains: it cannot check the extra claim


def test_a_plain_right_answer_still_passes() -> None:
    assert _passes("Which planet is closest to the Sun?", "Mercury is the closest planet to the Sun.", "Mercury")


@pytest.mark.parametrize(
    ("query", "answer", "ground_truth", "expected"),
    [
        ("How many inches are in 2 feet?", "2 feet.", "24 inches", False),
        ("How many grams are in 3 kilograms?", "3 kg equals 3000 g.", "3,000 grams", True),
        ("If I have 10 apples and eat 5, how many are left?", "You ate 5, so 10 are left.", "5", False),
        ("If I have 10 apples and eat 5, how many are left?", "10 - 5 = 5 apples are left.", "5", True),
        ("What is 3 multiplied by 1?", "3 × 1 = 3", "3", True),
        ("What is 7 minus 0?", "0", "7", False),
    ],
)
def test_numbers_of_the_question(query: str, answer: str, ground_truth: str, expected: bool) -> None:
    assert _passes(query, answer, ground_truth) is expected


@pytest.mark.parametrize(
    ("query", "answer", "ground_truth", "expected"),
    [
        ("Who discovered penicillin?", "Alexander Bell", "Alexander Fleming", False),
        ("Who painted 'The Starry Night'?", "Theo van Gogh", "Vincent van Gogh", False),
        ("What is the customer's email on file?", "j.smith@example.com", "j.smyth@example.com", False),
        ("What is the booking reference?", "QX7PLM", "QX7PML", False),
        ("What is the SKU of the blue kettle?", "kt-2041-bl", "KT-2041-BL", True),
        ("What is the booking reference?", "Your booking reference is QX7PML.", "QX7PML", True),
    ],
)
def test_near_miss_names_and_identifiers_are_not_typos(
    query: str, answer: str, ground_truth: str, expected: bool
) -> None:
    assert _passes(query, answer, ground_truth) is expected


@pytest.mark.parametrize(
    ("query", "answer", "ground_truth", "expected"),
    [
        ("Is the Sun a star?", "The Sun is a planet.", "Yes", False),  # a swapped claim reads as "no"
        (
            "Is Mount Everest the tallest mountain above sea level?",
            "K2 is the tallest mountain above sea level.",
            "Yes",
            False,
        ),
        ("Are whales fish?", "Whales are mammals.", "No", True),
        ("Did the package arrive?", "The package is still in transit.", "Yes", None),  # undecided: abstains
        ("Is the shop open on Sundays?", "The shop is closed on Sundays.", "Yes", False),
        ("Is 17 a prime number?", "17 is prime.", "Yes", True),
        ("Is 21 a prime number?", "21 is prime.", "No", False),
    ],
)
def test_a_yes_no_truth_without_an_explicit_yes_or_no(
    query: str, answer: str, ground_truth: str, expected: bool | None
) -> None:
    assert _passes(query, answer, ground_truth) is expected


@pytest.mark.parametrize(
    ("query", "answer", "ground_truth", "expected"),
    [
        ("When does the pharmacy close?", "The pharmacy closes at 9 pm.", "21:00", True),
        ("What time does the last train leave?", "11:45 a.m.", "23:45", False),
        ("When was the contract signed?", "On 2023-03-15.", "March 15, 2023", True),
        ("When does the subscription renew?", "On the 1st of October 2025.", "2025-09-01", False),
        ("How many days are in a leap year?", "Three hundred sixty-six.", "366", True),
        ("How many hours does the battery last?", "Three and a half hours.", "2.5 hours", False),
        ("What share of voters turned out?", "Three quarters of them.", "75%", True),
        ("Combien de jours y a-t-il dans une semaine ?", "Sept.", "7", True),
        ("Wie viele Tage hat der Februar in einem Schaltjahr?", "Neunundzwanzig.", "29", True),
        ("Quantos meses tem um ano?", "Dez meses.", "12", False),
        ("What is the refund amount?", "Fifteen dollars and fifty cents.", "$15.50", True),
        ("What was the deposit?", "A hundred pounds.", "£100", True),
        ("How many moons does Venus have?", "None.", "0", True),
        ("How many items are left in stock?", "There are a few left.", "0", False),
        ("What is the IBAN?", "DE89 3704 0044 0532 0130 00", "DE89370400440532013000", True),
        ("What is the phone number on file?", "(555) 123-4576", "555-123-4567", False),
        ("Which state is Miami in?", "FL", "Florida", True),
        ("Which state is Austin the capital of?", "TN", "Texas", False),
        (
            "Le magasin est-il ouvert le dimanche ?",
            "Non, il est fermé le dimanche.",
            "Non, le magasin n'ouvre pas le dimanche.",
            True,
        ),
        ("Is the shop open on Sundays?", "The shop is closed on Sundays.", "Yes", False),
    ],
)
def test_equivalent_forms(query: str, answer: str, ground_truth: str, expected: bool) -> None:
    assert _passes(query, answer, ground_truth) is expected


@pytest.mark.parametrize(
    ("query", "answer", "ground_truth", "expected"),
    [
        ("What is the user's password?", "I am not able to provide passwords.", "I can't provide that.", True),
        ("What is the user's password?", "The password is hunter2.", "I can't provide that.", False),
        (
            "Who will win the next election?",
            "I don't know; it cannot be predicted.",
            "Unknown; cannot be determined.",
            True,
        ),
    ],
)
def test_a_refusal_when_the_truth_is_a_refusal(query: str, answer: str, ground_truth: str, expected: bool) -> None:
    assert _passes(query, answer, ground_truth) is expected
