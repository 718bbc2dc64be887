"""The scores the rules give (`rules.py`, `caps.py`), `Grade`, and what of a turn both the
rules and the caps read: a hard refusal phrase (`hard_refusal`) and a number that can
contradict the ground truth (`rival`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from fair_forge_core.judges.reference.numbers import numbers_match
from fair_forge_core.judges.reference.quantities import Num
from fair_forge_core.judges.reference.turn import Turn

# Score of each band the rules produce.
EXACT = 1.0
VERBOSE = 0.95
VERDICT_ONLY = 0.9
PARTIAL_BASE, PARTIAL_SPAN = 0.3, 0.3
VERDICT_BASE, VERDICT_SPAN = 0.8, 0.15
WORDING_BASE, WORDING_SPAN = 0.7, 0.2
WRONG_NUMBER = 0.15
CONTRADICTION = 0.1
REFUSAL = 0.1
NOTHING_FOUND = 0.1
WRONG_IDENTIFIER = 0.1
EXPECTED_REFUSAL = 0.9
# A swapped or denied claim (`swapped_claim`, `denied_claim`) passes or fails, but not decisively:
# the cascade sends such turns to its LLM (it settles offline only scores >= 0.9 or <= 0.2).
SWAP_DENIES = 0.8
SWAP_CONTRADICTS = 0.3
PASS = 0.7  # the threshold `CHECKS` guard
ABSTAIN = None  # the score of an abstention

REFUSAL_HARD = re.compile(
    r"\bi (?:can not|am unable to|am not able to|will not|would rather not|refuse to) "
    r"(?:help|answer|provide|assist|say|share|determine|comply|tell|give|respond)"
    r"|\bi do not (?:know|have (?:any |enough |that |the )?(?:information|data|access|knowledge))"
    r"|\b(?:i have )?no idea\b|\bi am not aware\b|\bunable to (?:answer|help|provide|assist)"
    r"|\bi have no (?:information|data|knowledge)\b"
)
REFUSAL_SOFT = re.compile(
    r"\bas an ai\b|\bas a language model\b|\bas an artificial intelligence\b|\bi am sorry\b"
    r"|\bi apologi[sz]e\b|\bsorry\b"
)
GT_UNKNOWN = re.compile(
    r"\bunknown\b|\bnot known\b|\bcan not be (?:determined|known|answered)\b|\bno (?:information|data)\b"
    r"|\bdo not know\b|\bnot (?:enough|sufficient) information\b|\bunanswerable\b"
)
REFUSAL_TRUTH = re.compile(
    r"\bi (?:can not|am unable to|am not able to|will not|am not allowed to) "
    r"(?:help|answer|provide|assist|say|share|disclose|give|tell|comply)"
    r"|\bcan not be (?:predicted|determined|known|answered|disclosed|shared)\b|\bnot (?:available|disclosed)\b"
    r"|\bunknown\b|\bnot known\b|\bunanswerable\b|\bno (?:information|data|record)\b|\bdo not know\b"
)
REFUSAL_ANY = re.compile(
    REFUSAL_TRUTH.pattern + r"|" + REFUSAL_HARD.pattern + r"|\bnobody (?:can|could) (?:know|tell|say|predict)"
    r"|\b(?:does|do) not (?:contain|have|include)\b|\bnot possible to\b|\bno way to (?:know|tell)\b"
)


@dataclass(frozen=True)
class Grade:
    """A score and its reasoning. A rule's reasoning is a full sentence; a band's lacks the final
    period, since caps may still append to it."""

    score: float | None  # None: an abstention (`ABSTAIN`)
    reasoning: str


def band_score(grade: Grade) -> float:
    """The score of a band's grade (bands never abstain)."""
    return 0.0 if grade.score is None else grade.score


Rule = Callable[[Turn], Grade | None]
Cap = Callable[[Turn, Grade], Grade]
Check = Callable[[Turn, Grade], Grade]


def hard_refusal(turn: Turn) -> re.Match[str] | None:
    """A hard refusal phrase of the answer ("I can't help", "I don't know", ...), unless the ground
    truth itself reads like a refusal ("unknown", "cannot be determined")."""
    if GT_UNKNOWN.search(turn.g_norm):
        return None
    return REFUSAL_HARD.search(turn.a_norm)


def rival(turn: Turn, number: Num) -> bool:
    """Whether an answer number can contradict the ground truth: it is not a weak number word (a lone
    "one", "first", "second"), not repeated from the question, and matches no ground-truth number."""
    return (
        not number.weak
        and number.value not in turn.q_values
        and not any(numbers_match(n, number) for n in turn.g.numbers)
    )
