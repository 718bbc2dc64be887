"""The scoring rules, one function each, and `score_answer`, which applies them in order.

`score_answer` walks four ordered lists:

1. `RULES`: decisive rules. The first that returns a `Grade` is the score, as it is; a
   grade whose score is None is an abstention (`ABSTAIN`): the judge cannot decide.
2. `BANDS`: when no rule decided, the first band that applies gives a provisional grade
   (the last band always applies).
3. `CAPS`: each cap in turn may lower the band's score and adds its reason.
4. `CHECKS`: each may turn a passing grade (score >= 0.7) into an abstention, when the
   pass rests on something the rules cannot verify.

Each reasoning text the judge can produce is written in exactly one of these functions,
and each names its rule ("(rule: ...)"), so searching for a reasoning finds its rule.
"""

from __future__ import annotations

import re

from fair_forge_core.judges.reference.caps import extra_claim, hedge_cap, number_hedge_cap, refusal_hedge_cap, typo_cap
from fair_forge_core.judges.reference.grade import (
    ABSTAIN,
    CONTRADICTION,
    EXACT,
    EXPECTED_REFUSAL,
    GT_UNKNOWN,
    NOTHING_FOUND,
    PARTIAL_BASE,
    PARTIAL_SPAN,
    REFUSAL,
    REFUSAL_ANY,
    REFUSAL_SOFT,
    REFUSAL_TRUTH,
    SWAP_CONTRADICTS,
    SWAP_DENIES,
    VERBOSE,
    VERDICT_BASE,
    VERDICT_ONLY,
    VERDICT_SPAN,
    WORDING_BASE,
    WORDING_SPAN,
    WRONG_IDENTIFIER,
    WRONG_NUMBER,
    Cap,
    Check,
    Grade,
    Rule,
    hard_refusal,
    rival,
)
from fair_forge_core.judges.reference.parsed import Text
from fair_forge_core.judges.reference.text import (
    ANTONYMS,
    NEGATORS,
    TOKEN_RE,
    comparisons,
    plain_words,
    said_plainly,
    stem,
)
from fair_forge_core.judges.reference.turn import Turn


def _polarity(verdict: str | None, text: Text) -> str:
    """The yes/no the ground truth reads as: its leading verdict, else "no" when it has any negator."""
    return verdict or ("no" if any(t in NEGATORS for t in text.clauses) else "yes")


def _refusal_truth(turn: Turn) -> bool:
    """Whether the ground truth is itself a refusal or says the answer cannot be known. A "not
    available" or "not disclosed" after a leading yes/no is the answer to a yes/no question, not a
    refusal ("Is the item in stock?" - "No, it is not available.")."""
    found = REFUSAL_TRUTH.search(turn.g_norm)
    return found is not None and not (turn.g_verdict is not None and found.group().startswith("not "))


# --------------------------------------------------------------------------- decisive rules


def empty_answer(turn: Turn) -> Grade | None:
    """0.0 when the normalised answer has no ASCII letter or digit (accents are stripped first, so "é"
    counts; a text in another script alone reads as empty)."""
    if TOKEN_RE.search(turn.a_norm):
        return None
    return Grade(0.0, "Empty answer: there is nothing to grade.")


def empty_ground_truth(turn: Turn) -> Grade | None:
    """0.0 when the ground truth is blank: there is nothing to grade against."""
    if turn.ground_truth.strip():
        return None
    return Grade(0.0, "Empty ground truth: the answer cannot be graded against it.")


def normalised_match(turn: Turn) -> Grade | None:
    """1.0 when answer and ground truth have the same words once normalised (`text.normalise`) and
    punctuation and the articles a/an/the are dropped."""
    if plain_words(turn.a_norm) != plain_words(turn.g_norm):
        return None
    return Grade(EXACT, "Exact match with the ground truth after normalisation (rule: normalised match).")


def expected_refusal(turn: Turn) -> Grade | None:
    """When the ground truth is itself a refusal or says the answer cannot be known ("I can't share
    that", "That cannot be predicted", "Unknown", "The information is not available"): 0.9 for an
    answer that refuses or says so too ("I don't know", "nobody can know", "the record does not
    contain it"), 0.1 for one that does neither (it answers what should not be answered)."""
    if not _refusal_truth(turn):
        return None
    found = REFUSAL_ANY.search(turn.a_norm)
    if found:
        return Grade(
            EXPECTED_REFUSAL,
            f'The ground truth declines to answer and so does the answer ("{found.group()}") (rule: expected refusal).',
        )
    return Grade(REFUSAL, "The ground truth declines to answer but the answer gives one (rule: expected refusal).")


def wrong_identifier(turn: Turn) -> Grade | None:
    """0.1 when an identifier of the ground truth (`turn.identifiers`: an e-mail, a code mixing
    letters and digits, 7+ digits) is not in the answer exactly (separators and case aside) while
    the answer states an identifier of its own: another code, however close ("QX7PLM" for
    "QX7PML", "j.smith@..." for "j.smyth@..."), is a wrong fact, never a typo."""
    found, missing, spans = turn.id_found
    if not missing or len(spans) <= len(found):
        return None
    return Grade(
        WRONG_IDENTIFIER,
        f'The answer does not give the identifier "{missing[0]}" but another one (rule: wrong identifier).',
    )


def refusal(turn: Turn) -> Grade | None:
    """0.1 for a refusal that does not state the ground truth's facts: a hard refusal phrase ("I
    can't help", "I don't know", "I'm unable to", "no idea", ...) while some key fact is missing, or
    a soft one ("as an AI", "sorry", ...) while no key fact at all is found (there being some).
    A hard phrase next to all the facts is hedging instead (`refusal_hedge_cap`). Skipped when the
    ground truth itself reads like a refusal ("unknown", "cannot be determined")."""
    hard = hard_refusal(turn)
    cov = turn.coverage
    found: re.Match[str] | None = hard
    if hard is None or cov.ratio >= 1.0:
        soft = None if GT_UNKNOWN.search(turn.g_norm) else REFUSAL_SOFT.search(turn.a_norm)
        found = soft if soft and cov.n_facts and cov.n_found == 0 else None
    if found is None:
        return None
    return Grade(
        REFUSAL,
        f'The answer is a refusal ("{found.group()}") and does not state the ground truth (rule: refusal).',
    )


def wrong_number(turn: Turn) -> Grade | None:
    """0.15 when a number the ground truth requires is absent from the answer and the answer states
    a comparable number instead: one that can contradict (not a weak number word, not repeated from
    the question, matching no ground-truth number) and has the same dimension or no unit on one
    side. The first missing number with such a rival, and its first rival, are named."""
    missing_numbers = turn.coverage.missing_numbers
    if not missing_numbers:
        return None
    last = turn.last_number
    for want in turn.result_numbers:
        if want in missing_numbers and last is not None:
            return Grade(
                WRONG_NUMBER,
                f'The answer ends with "{last.describe(turn.a.norm)}" where the ground truth has '
                f'"{want.describe(turn.g.norm)}" (rule: wrong number).',
            )
    others = [x for x in turn.a_numbers if rival(turn, x)]
    for want in missing_numbers:
        rivals = [x for x in others if want.dim is None or x.dim is None or x.dim == want.dim]
        if rivals:
            return Grade(
                WRONG_NUMBER,
                f'The answer gives "{rivals[0].describe(turn.a.norm)}" where the ground truth has '
                f'"{want.describe(turn.g.norm)}" (rule: wrong number).',
            )
    return None


def yes_no_contradiction(turn: Turn) -> Grade | None:
    """0.1 when answer and ground truth both open with a yes/no (among their first three words) and
    these differ."""
    if not (turn.g_verdict and turn.a_verdict and turn.g_verdict != turn.a_verdict):
        return None
    return Grade(
        CONTRADICTION,
        f'The answer says "{turn.a_verdict}" where the ground truth says "{turn.g_verdict}" (rule: contradiction).',
    )


def negation(turn: Turn) -> Grade | None:
    """0.1 when a content word both texts use is negated in one and not in the other
    (`turn.negation_flip`: "not", "never", "no", "zero", ... within the four words before it, in the
    same clause, not across a preposition). One answer occurrence with the ground truth's polarity
    suffices."""
    flipped, _ = turn.negation
    if not flipped:
        return None
    return Grade(
        CONTRADICTION,
        f'"{flipped}" is negated in one of the answer and the ground truth but not in the other (rule: negation).',
    )


def antonym(turn: Turn) -> Grade | None:
    """0.1 when the answer uses the antonym of a ground-truth content word (true/false,
    increase/decrease, before/after, valid/expired, ...), neither of them negated ("it has not
    expired" does not contradict "valid", nor "it expired" "no longer valid"), that the answer does
    not contain (by stem) and whose antonym the ground truth does not contain either. The first
    such ground-truth word is named."""
    lexicon = turn.lexicon
    g_stems = {stem(w) for w in turn.g.words}
    for term in turn.g.content:
        opposite = ANTONYMS.get(term)
        if (
            opposite
            and stem(term) not in lexicon.by_stem
            and opposite in lexicon.order
            and stem(opposite) not in g_stems
            and said_plainly(turn.g.clauses, term)
            and said_plainly(turn.a.clauses, opposite)
        ):
            return Grade(
                CONTRADICTION,
                f'The answer says "{opposite}" where the ground truth says "{term}" (rule: contradiction).',
            )
    return None


def reversed_comparison(turn: Turn) -> Grade | None:
    """0.1 when the answer compares with the question's comparative and puts a key term of the ground
    truth on the wrong side: after "than" with the same comparative ("The Earth is larger than the
    Sun." for "Which is larger, the Sun or the Earth?" - "The Sun"), or before it with its antonym
    ("The Sun is smaller than the Earth."), and not on the other side too (`text.comparisons`; a
    negated comparison, "Nothing is larger than the Sun", is not read)."""
    key_terms = turn.key_facts[1]
    if not key_terms or "than" not in turn.a.clauses:
        return None
    q_stems = {stem(w) for w in turn.q.words}
    opposites = {ANTONYMS[w] for w in turn.q.words if w in ANTONYMS}
    for comparative, before, after in comparisons(turn.a.clauses):
        if stem(comparative) in q_stems:
            wrong_side, right_side = after, before
        elif comparative in opposites or stem(ANTONYMS.get(comparative, "")) in q_stems:
            wrong_side, right_side = before, after
        else:
            continue
        wrong_stems, right_stems = {stem(w) for w in wrong_side}, {stem(w) for w in right_side}
        for term in key_terms:
            if stem(term) in wrong_stems and stem(term) not in right_stems:
                return Grade(
                    CONTRADICTION,
                    f'The answer puts "{term}" on the wrong side of "{comparative} than" (rule: reversed comparison).',
                )
    return None


def polarity_contradiction(turn: Turn) -> Grade | None:
    """0.1 when the ground truth has no key fact ("Yes", "No", "It is not.") and the answer's stance
    (`Turn.a_stance`: its leading yes/no, else whether it affirms or denies the question's claim)
    is the other polarity than the ground truth's (its leading yes/no, else "no" when it has any
    negator, else "yes")."""
    if turn.coverage.n_facts or turn.a_stance is None:
        return None
    a_polarity, g_polarity = turn.a_stance, _polarity(turn.g_verdict, turn.g)
    if a_polarity == g_polarity:
        return None
    return Grade(
        CONTRADICTION,
        f'The answer reads as "{a_polarity}" where the ground truth says "{g_polarity}" (rule: contradiction).',
    )


def swapped_claim(turn: Turn) -> Grade | None:
    """When the ground truth has no key fact (a yes/no), the answer's stance is undecided, and the
    answer restates the claim of the copular yes/no question with one part swapped for another
    (`Turn.claim_swap`: "Whales are mammals." for "Are whales fish?", "K2 is the tallest
    mountain above sea level." for "Is Mount Everest the tallest mountain above sea level?"), the
    answer reads as "no": 0.8 when the ground truth reads as "no", 0.3 when it reads as "yes".
    Neither score is decisive (a swap for a hyponym or a description, "A tomato is a berry." for
    "Is a tomato a fruit?", is no denial): both pass or fail, and the cascade asks its LLM. As a
    rule's score is final, extra claims beside the swap are not checked (`extra_claim`), as for an
    explicit yes/no: "The Earth is a sphere, as shown in 1522." passes for "Is the Earth flat?" - "No"."""
    if turn.coverage.n_facts or turn.a_stance is not None or turn.claim_swap is None:
        return None
    claimed, said = (" ".join(words) for words in turn.claim_swap)
    return _implied_no(turn, f'The answer says "{said}" where the question asks about "{claimed}"', "swapped claim")


def denied_claim(turn: Turn) -> Grade | None:
    """When the ground truth has no key fact (a yes/no), the answer opens with no yes/no, and it says
    a denying participle ("cancelled", "avoided", "rejected", "failed", "expired", ...) next to the
    claim of the yes/no question (`Turn.denial`: "It should be avoided during pregnancy." for "Is
    the medication safe during pregnancy?"), the answer reads as "no" - even when it restates the
    claim's words ("The transfer failed." for "Did the transfer go through?"): 0.8 when the ground
    truth reads as "no", 0.3 when it reads as "yes". Not decisive, like `swapped_claim`: what is
    denied may be another part of the claim ("Alcohol should be avoided." for "Does the drug
    interact with alcohol?" reads as "no"). Extra claims beside it are not checked, as for
    `swapped_claim`."""
    if turn.coverage.n_facts or turn.a_verdict is not None or turn.denial is None:
        return None
    return _implied_no(turn, f'The answer says "{turn.denial}" of the question\'s claim', "denied claim")


def _implied_no(turn: Turn, what: str, rule: str) -> Grade:
    """An answer that reads as "no" without saying it (`swapped_claim`, `denied_claim`): 0.8 when
    the ground truth reads as "no", 0.3 when it reads as "yes"."""
    if _polarity(turn.g_verdict, turn.g) == "no":
        return Grade(SWAP_DENIES, f'{what}: a "no", like the ground truth (rule: {rule}).')
    return Grade(SWAP_CONTRADICTS, f'{what}: a "no" where the ground truth says "yes" (rule: {rule}).')


def undecided_verdict(turn: Turn) -> Grade | None:
    """Abstain when the ground truth has no key fact (a yes/no) and the answer neither says yes or
    no nor affirms or denies the question's claim (`Turn.a_stance` is None): "Whales are mammals."
    for "Are whales fish?" - reading it as yes or no would be a guess."""
    if turn.coverage.n_facts or turn.a_stance is not None:
        return None
    return Grade(
        ABSTAIN, "The answer neither says yes or no nor restates or denies the claim (rule: undecided verdict)."
    )


def nothing_found(turn: Turn) -> Grade | None:
    """0.1 when the ground truth has key facts and the answer states none of them (wrong or
    off-topic), unless the answer gives the ground truth's yes/no verdict (`verdict_with_missing_facts`).
    Names the first three missing terms and two missing numbers."""
    cov = turn.coverage
    if not cov.n_facts or cov.n_found or (turn.g_verdict and turn.a_stance == turn.g_verdict):
        return None
    return Grade(
        NOTHING_FOUND,
        f"The answer contains none of the ground truth's key facts ({turn.missing_facts()}) (rule: coverage).",
    )


# --------------------------------------------------------------------------- bands


def same_verdict(turn: Turn) -> Grade | None:
    """0.95 when the ground truth has no key fact and the answer opens with the yes/no the ground
    truth reads as."""
    if turn.coverage.n_facts or turn.a_verdict is None or turn.a_verdict != _polarity(turn.g_verdict, turn.g):
        return None
    return Grade(VERBOSE, f'The answer gives the same verdict "{turn.a_verdict}" as the ground truth (rule: verdict)')


def restated_claim(turn: Turn) -> Grade | None:
    """0.9 when the ground truth has no key fact and the answer has no yes/no but restates terms of
    the ground truth with the same polarity (`negation` found no flip among them)."""
    _, shared = turn.negation
    if turn.coverage.n_facts or turn.a_verdict is not None or not shared:
        return None
    return Grade(VERDICT_ONLY, "The answer restates the ground truth's claim with the same polarity (rule: verdict)")


def same_polarity(turn: Turn) -> Grade | None:
    """0.9 when the ground truth has no key fact and the answer reads as its polarity (the opposite
    was decided by `polarity_contradiction`)."""
    if turn.coverage.n_facts:
        return None
    return Grade(VERDICT_ONLY, f'The answer reads as "{turn.a_stance}" like the ground truth (rule: verdict)')


def verdict_with_missing_facts(turn: Turn) -> Grade | None:
    """0.8 + 0.15 x coverage when the answer gives the ground truth's leading yes/no but some
    supporting facts are missing."""
    cov = turn.coverage
    if not (cov.ratio < 1.0 and turn.g_verdict and turn.a_stance == turn.g_verdict):
        return None
    return Grade(
        VERDICT_BASE + VERDICT_SPAN * cov.ratio,
        f'The verdict "{turn.a_stance}" matches; {cov.n_facts - cov.n_found} of {cov.n_facts} supporting facts '
        "missing (rule: verdict, coverage)",
    )


def minor_flaw(turn: Turn) -> Grade | None:
    """0.7 + 0.2 x (share of plain-word facts found) when every number and proper name of the ground
    truth is present (there is at least one) and only plain-word facts are missing, at most one or
    half of them (rubric: right with a minor flaw - "I have refunded $59.90" for "A full refund of
    $59.90 was issued")."""
    cov = turn.coverage
    n_wording = len(cov.groups) - cov.n_named
    if not (
        cov.ratio < 1.0
        and cov.n_named + len(cov.required) > 0
        and not cov.n_named_missing
        and not cov.missing_numbers
        and cov.n_wording_missing <= max(1, n_wording // 2)
    ):
        return None
    return Grade(
        WORDING_BASE + WORDING_SPAN * (n_wording - cov.n_wording_missing) / n_wording,
        "Every number and name of the ground truth is present; only wording differs "
        f"(missing {', '.join(cov.missing[:3])}) (rule: coverage, minor flaw)",
    )


def partial(turn: Turn) -> Grade | None:
    """0.3 + 0.3 x coverage (0.3-0.6, the rubric's completeness cap) when some key facts are missing."""
    cov = turn.coverage
    if cov.ratio >= 1.0:
        return None
    return Grade(
        PARTIAL_BASE + PARTIAL_SPAN * cov.ratio,
        f"Partly right: {cov.n_found} of {cov.n_facts} key facts found, missing {turn.missing_facts()} "
        "(rule: coverage)",
    )


def complete(turn: Turn) -> Grade:
    """0.95 when every key fact is found: right and complete, worded differently or verbose."""
    return Grade(
        VERBOSE, "All key facts of the ground truth are present, worded differently or more verbosely (rule: coverage)"
    )


RULES: tuple[Rule, ...] = (
    empty_answer,
    empty_ground_truth,
    normalised_match,
    expected_refusal,
    refusal,
    wrong_identifier,
    wrong_number,
    yes_no_contradiction,
    negation,
    antonym,
    reversed_comparison,
    denied_claim,
    polarity_contradiction,
    swapped_claim,
    undecided_verdict,
    nothing_found,
)
BANDS: tuple[Rule, ...] = (
    same_verdict,
    restated_claim,
    same_polarity,
    verdict_with_missing_facts,
    minor_flaw,
    partial,
    complete,
)
CAPS: tuple[Cap, ...] = (typo_cap, hedge_cap, number_hedge_cap, refusal_hedge_cap)
CHECKS: tuple[Check, ...] = (extra_claim,)


def score_answer(query: str, answer: str, ground_truth: str) -> tuple[float | None, str]:
    """Score `answer` against `ground_truth` for `query`: (score in [0, 1], one-sentence reason), or
    (None, reason) when the judge abstains (`undecided_verdict`, `extra_claim`).

    Pure and deterministic. The reasoning names the rule that decided the score.
    """
    turn = Turn(query, answer, ground_truth)
    for rule in RULES:
        if (decided := rule(turn)) is not None:
            return decided.score, decided.reasoning
    grade = next(banded for banded in (band(turn) for band in BANDS) if banded is not None)
    for cap in CAPS:
        grade = cap(turn, grade)
    reasoning = grade.reasoning + "."
    for check in CHECKS:
        checked = check(turn, Grade(grade.score, reasoning))
        if checked.score is None:
            return None, checked.reasoning
    return (None if grade.score is None else round(grade.score, 4)), reasoning
