"""The caps, each of which may lower a band's score, and the checks, each of which may turn a
passing grade into an abstention: `score_answer` applies them in the order of `rules.CAPS`
and `rules.CHECKS` (`rules.py`, module docstring)."""

from __future__ import annotations

import re

from fair_forge_core.judges.reference.dates import CALENDAR_WORDS
from fair_forge_core.judges.reference.grade import ABSTAIN, PASS, Grade, band_score, hard_refusal, rival
from fair_forge_core.judges.reference.numbers import alternative_pairs, numbers_match, true_equations
from fair_forge_core.judges.reference.quantities import Num
from fair_forge_core.judges.reference.text import (
    STOPWORDS,
    TOKEN_RE,
    stem,
)
from fair_forge_core.judges.reference.turn import Turn

TYPO_CAP = 0.7
TYPOS_CAP = 0.5
HEDGE_CAP = 0.6
REFUSAL_HEDGE_CAP = 0.5

_HEDGES = re.compile(
    r"\bnot (?:entirely |completely |totally |100 percent )?(?:sure|certain|positive)\b|\bi guess\b"
    r"|\bmaybe\b|\bperhaps\b|\bpossibly\b|\bmight (?:also )?be\b|\bcould (?:also )?be\b|\beither\b|\bif i recall\b"
    r"|\bhard to say\b|\bi am not confident\b|\bunsure\b"
)


# --------------------------------------------------------------------------- caps


def typo_cap(turn: Turn, grade: Grade) -> Grade:
    """One key term found only misspelt caps the score at 0.7, two or more at 0.5 (`lexicon`)."""
    typos = turn.coverage.typos
    if len(typos) == 1:
        term, seen = typos[0]
        return Grade(
            min(band_score(grade), TYPO_CAP),
            f'{grade.reasoning}; "{seen}" is a misspelling of "{term}" (rule: typo cap)',
        )
    if typos:
        return Grade(
            min(band_score(grade), TYPOS_CAP),
            f"{grade.reasoning}; {len(typos)} key terms are misspelt (rule: typo cap)",
        )
    return grade


def hedge_cap(turn: Turn, grade: Grade) -> Grade:
    """A hedge in the answer ("not sure", "maybe", "perhaps", "either", "could (also) be", ...) that
    the ground truth does not also use caps the score at 0.6."""
    hedge = _HEDGES.search(turn.a.norm)
    if not hedge or _HEDGES.search(turn.g.norm) or band_score(grade) <= HEDGE_CAP:
        return grade
    return Grade(HEDGE_CAP, f'{grade.reasoning}; the answer hedges ("{hedge.group()}") (rule: hedge cap)')


def number_hedge_cap(turn: Turn, grade: Grade) -> Grade:
    """Hedging between numbers caps the score at 0.6: the answer offers explicit alternatives
    (`numbers.alternative_pairs`: "X or Y", "X/Y", "between X and Y"), one of which matches a
    required number while the other can contradict (`rival`) and has no other unit than the
    matching one: "41 or 42" for "42". Numbers merely listed side by side and restatements in
    another unit ("100 °C, or 212 °F") are not alternatives. The first such pair is named."""
    if band_score(grade) <= HEDGE_CAP:
        return grade
    required = turn.coverage.required
    for pair in alternative_pairs(turn.a.norm, turn.a.all_numbers):
        for right, wrong in (pair, pair[::-1]):
            if (
                rival(turn, wrong)
                and not (right.unit and wrong.unit and right.unit != wrong.unit)
                and any(numbers_match(n, right) for n in required)
            ):
                return Grade(
                    HEDGE_CAP,
                    f'{grade.reasoning}; the answer hedges between "{right.describe(turn.a.norm)}" and '
                    f'"{wrong.describe(turn.a.norm)}" (rule: number hedge)',
                )
    return grade


def refusal_hedge_cap(turn: Turn, grade: Grade) -> Grade:
    """A hard refusal phrase next to all the facts (`refusal` did not decide) caps the score at 0.5."""
    hard = hard_refusal(turn)
    if hard is None or band_score(grade) <= REFUSAL_HEDGE_CAP:
        return grade
    return Grade(REFUSAL_HEDGE_CAP, f'{grade.reasoning}; it also says "{hard.group()}" (rule: refusal hedge)')


# --------------------------------------------------------------------------- checks

_SUPERLATIVES = frozenset(
    [
        "largest",
        "biggest",
        "smallest",
        "tallest",
        "shortest",
        "oldest",
        "youngest",
        "highest",
        "lowest",
        "longest",
        "deepest",
        "fastest",
        "slowest",
        "closest",
        "farthest",
        "furthest",
        "best",
        "worst",
        "most",
        "least",
        "first",
        "last",
        "only",
        "also",
    ]
)
# "last" or "first" before one of these is a time reference ("it expired last month"), not a superlative.
_TIME_REFERENCE_WORDS = frozenset(["last", "first"])
_TIME_UNITS = CALENDAR_WORDS | frozenset(
    ["night", "day", "week", "weekend", "month", "year", "morning", "evening", "afternoon", "quarter"]
)
_CAPITALISED_RE = re.compile(r"(?<![\w.@-])([A-Z][A-Za-z]+)")
_SENTENCE_END_RE = re.compile(r"[.!?:;\n]\s*$|^\s*$")
MAX_CLAIM_WORDS = 2000  # answer words an extra claim is looked for among


def _known(turn: Turn) -> set[str]:
    """Stems of every word of the question and the ground truth, and their first five letters."""
    words = [*turn.q.words, *turn.g.words]
    return {stem(w) for w in words} | {w[:4] for w in words if len(w) >= 4}


def _matched_unit_words(turn: Turn) -> set[str]:
    """The words of each answer number that matches a ground-truth number: its unit words ("212
    degrees Fahrenheit" for "100 °C" gives "212", "degrees", "fahrenheit")."""
    return {
        word
        for number in turn.a_numbers
        if any(numbers_match(n, number) for n in turn.g.numbers)
        for word in TOKEN_RE.findall(number.describe(turn.a.norm))
    }


def _extra_number(turn: Turn) -> Num | None:
    """The first answer number that is an extra claim (`extra_claim`, first case), else None."""
    g_units = {n.unit for n in turn.g.numbers}
    checked = true_equations(turn.a.norm, turn.a.all_numbers)
    for number in turn.a_numbers:
        comparable = not turn.g.numbers or (number.unit is not None and number.unit in g_units)
        if (
            comparable
            and number.start not in checked
            and not number.weak
            and not turn.echoes_question(number)
            and not any(numbers_match(n, number) or numbers_match(number, n) for n in turn.g.numbers)
        ):
            return number
    return None


def _extra_name(turn: Turn, known: set[str]) -> str | None:
    """The first capitalised word of the answer that is an extra claim (`extra_claim`, second
    case; `known` is `_known(turn)`), as written, else None."""
    unit_words: set[str] | None = None  # computed on first need
    raw = turn.answer[: MAX_CLAIM_WORDS * 12]
    for match in _CAPITALISED_RE.finditer(raw):
        word = match.group(1)
        if (word.isupper() and len(word) <= 4) or _SENTENCE_END_RE.search(
            raw[max(0, match.start() - 3) : match.start()]
        ):
            continue
        norm = word.casefold()
        if norm in STOPWORDS or norm in CALENDAR_WORDS or stem(norm) in known or norm[:4] in known:
            continue
        if unit_words is None:
            unit_words = _matched_unit_words(turn)
        if norm in unit_words:
            continue
        return word
    return None


def _extra_superlative(turn: Turn, known: set[str]) -> str | None:
    """The first superlative, "only", "first" or "also" of the answer that is an extra claim
    (`extra_claim`, third case; `known` is `_known(turn)`), else None."""
    words = turn.a.words[:MAX_CLAIM_WORDS]
    for i, word in enumerate(words):
        if word in _TIME_REFERENCE_WORDS and i + 1 < len(words) and words[i + 1] in _TIME_UNITS:
            continue  # "last month", "first week": when, not a superlative
        if word in _SUPERLATIVES and stem(word) not in known:
            return word
    return None


def extra_claim(turn: Turn, grade: Grade) -> Grade:
    """Abstain instead of passing when the answer adds a claim that neither the question nor the
    ground truth can confirm, so that a wrong extra claim beside the right fact is not passed:

    - a number that is not weak, repeats no question number, matches no ground-truth number and
      is not part of a true equation (`numbers.true_equations`: "21 = 3 × 7" is checked
      arithmetic), when the ground truth has no number ("Leonardo da Vinci painted it in 1889")
      or has one in the same unit ("It freezes at 10 °C" beside "100 °C"; a rate or another
      currency beside a conversion is not a claim of that kind);
    - a capitalised word, not at a sentence start, not an all-capitals acronym of up to four
      letters, a month or weekday, nor the unit of a number that matches the ground truth ("212
      degrees Fahrenheit" for "100 °C"), that the question and the ground truth lack (by stem or
      first four letters: "Japanese" for "Japan" is known) ("She also wrote 'Jane Eyre'");
    - a superlative, "only", "first" or "also" the question and the ground truth lack ("Mercury,
      also the largest planet"), except a "last" or "first" before a time unit or a weekday ("it
      expired last month": a time reference, like "yesterday").

    Looked for among the answer's first MAX_CLAIM_WORDS words. A true extra claim abstains too:
    the judge cannot tell it from a false one. Not checked when the ground truth is a bare yes/no
    and the answer opens with an explicit yes/no (the verdict is what is graded: "Yes, sale items
    can be exchanged within 30 days." for "yes")."""
    if grade.score is None or grade.score < PASS:
        return grade
    if not turn.coverage.n_facts and turn.a_verdict is not None:
        return grade  # a yes/no question answered with an explicit yes/no: the verdict is what is graded
    known = _known(turn)
    number = _extra_number(turn)
    if number is not None:
        return Grade(
            ABSTAIN,
            f'The answer adds "{number.describe(turn.a.norm)}", which the ground truth cannot confirm '
            "(rule: extra claim).",
        )
    name = _extra_name(turn, known)
    if name is not None:
        return Grade(ABSTAIN, f'The answer adds "{name}", which the ground truth cannot confirm (rule: extra claim).')
    superlative = _extra_superlative(turn, known)
    if superlative is not None:
        return Grade(
            ABSTAIN, f'The answer adds a "{superlative}" claim the ground truth cannot confirm (rule: extra claim).'
        )
    return grade
