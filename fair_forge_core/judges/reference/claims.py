"""What an answer says of a claim, the claim of a question or of a ground truth: affirms or
denies it (`claim_stance`), restates it with one part swapped (`swapped_claim`), or says a
word that denies it (`denial_word`)."""

from __future__ import annotations

from fair_forge_core.judges.reference.lexicon import osa_distance
from fair_forge_core.judges.reference.numbers import numbers_match
from fair_forge_core.judges.reference.parsed import Text, negation_flip
from fair_forge_core.judges.reference.quantities import NUMBER_WORDS
from fair_forge_core.judges.reference.text import (
    ANTONYMS,
    ARTICLES,
    BOUNDARY,
    NEGATORS,
    PREPOSITIONS,
    STOPWORDS,
    canon,
    negated,
    said_plainly,
    stem,
    wordlist,
)

COPULAS = frozenset({"is", "are", "was", "were"})
MAX_SWAP_CLAIM = 2  # claim words a swap may replace
MAX_SWAP_ANSWER = 3  # answer words a swap may put in their place


def _content_tokens(tokens: list[str]) -> list[str]:
    """The content words of clause tokens, in order (stopwords, numbers and one-letter words dropped)."""
    return [t for t in tokens if t not in STOPWORDS and len(t) > 1 and not t.isdigit() and t not in NUMBER_WORDS]


def _same_word(x: str, y: str) -> bool:
    """The same word by stem or synonym, or one typo apart (words of 5+ letters)."""
    return (
        stem(x) == stem(y)
        or stem(canon(x)) == stem(canon(y))
        or (min(len(x), len(y)) >= 5 and osa_distance(x, y, 1) <= 1)
    )


def _first_clause(a: Text) -> list[str]:
    """The tokens of the first clause of `a` that has a content word (none: tokens without one)."""
    clause: list[str] = []
    for token in a.clauses:
        if token != BOUNDARY:
            clause.append(token)
        elif _content_tokens(clause):
            break
        else:
            clause = []
    return clause


def _replacement(claim: list[str], clause: list[str]) -> tuple[list[str], list[str]] | None:
    """(claim words, answer words) when the answer clause `clause` (tokens) has no negator and its
    content words are the content words `claim` with one run of 1 to MAX_SWAP_CLAIM of them (not
    all) replaced by 1 to MAX_SWAP_ANSWER other words, none of them a claim word by stem, synonym
    or one typo; else None. A negated clause ("It is never solid at room temperature") is no swap:
    `negation_flip` reads it."""
    if NEGATORS.intersection(clause):
        return None
    said = _content_tokens(clause)
    most = min(len(claim), len(said))
    kept_before = 0
    while kept_before < most and _same_word(claim[kept_before], said[kept_before]):
        kept_before += 1
    kept_after = 0
    while kept_after < most - kept_before and _same_word(claim[-1 - kept_after], said[-1 - kept_after]):
        kept_after += 1
    replaced = claim[kept_before : len(claim) - kept_after]
    put = said[kept_before : len(said) - kept_after]
    if not (
        kept_before + kept_after >= 1
        and 1 <= len(replaced) <= MAX_SWAP_CLAIM
        and 1 <= len(put) <= MAX_SWAP_ANSWER
        and not any(_same_word(word, term) for word in put for term in claim)
    ):
        return None
    return replaced, put


def _antonym_said(claim: Text, a: Text, terms: list[str]) -> bool:
    """Whether answer `a` says the antonym of one of the claim's `terms` and not the term itself,
    both said plainly (not negated) in their texts (`claim_stance`)."""
    a_words = set(a.words)
    for term in terms:
        opposite = ANTONYMS.get(term)
        if (
            opposite
            and opposite in a_words
            and term not in a_words
            and said_plainly(claim.clauses, term)
            and said_plainly(a.clauses, opposite)
        ):
            return True
    return False


def claim_stance(claim: Text, a: Text) -> str | None:
    """Whether answer `a` affirms ("yes") or denies ("no") the claim of text `claim` (a question or
    a ground truth), or None when it does neither:

    - "no" when a content word of the claim is negated in the answer and not in the claim (or the
      reverse), or the answer has the antonym of one of its content words, both not negated
      ("closed" for "open", "composite" for "prime"; "not expired" does not deny "valid", nor
      "expired" "no longer valid");
    - "yes" when the answer states the claim's content words and numbers (words by stem or synonym;
      all of them, or all but one when there are three or more and the answer does not put other
      words in its place: "Paris is the capital of France." does not affirm "Is Paris the capital
      of Germany?"), none with the other polarity;
    - None otherwise: "Whales are mammals." neither affirms nor denies "Are whales fish?"."""
    terms = [w for w in claim.content if len(w) > 1]
    numbers = [n for n in claim.numbers if not n.weak]
    if not terms and not numbers:
        return None
    flipped, _ = negation_flip(claim, a)
    if flipped:
        return "no"
    if _antonym_said(claim, a, terms):
        return "no"
    a_stems = {stem(w) for w in a.words} | {stem(canon(w)) for w in a.words}
    found = sum(stem(t) in a_stems or stem(canon(t)) in a_stems for t in terms)
    found += sum(any(numbers_match(n, x) for x in a.numbers) for n in numbers)
    total = len(terms) + len(numbers)
    if found == total:
        return "yes"
    if found == total - 1 and total >= 3:
        claim_words = _content_tokens([t for t in claim.clauses if t != BOUNDARY])
        if _replacement(claim_words, _first_clause(a)) is None:
            return "yes"  # one word dropped, not swapped for another
    return None


def swapped_claim(q: Text, a: Text) -> tuple[list[str], list[str]] | None:
    """(claim words, answer words) when the answer restates the claim of a copular yes/no question
    with one part swapped for another, else None. "Are whales fish?" - "Whales are mammals."
    gives (["fish"], ["mammals"]); "Is Mount Everest the tallest mountain?" - "K2 is the tallest
    mountain." gives (["mount", "everest"], ["k2"]). A claim and its swap are one statement in the
    same frame, so the answer denies the question's claim.

    Exactly: the question opens with "is", "are", "was" or "were" and has two or more content words
    (in order: its claim); the answer's first clause with a content word has a copula too, and its
    content words are the claim's with a run of 1 to MAX_SWAP_CLAIM claim words (not all of them)
    replaced by 1 to MAX_SWAP_ANSWER other words - none of them a claim word by stem, synonym or
    one typo (that would be a reordering or a misspelling, not a swap). Nothing else may be added or
    dropped: "Paris is the capital of France." adds "capital" to "Is Paris in France?" and is no swap.
    A replaced word right after a preposition (articles aside) is an adjunct, and another adjunct
    does not deny it: "The store is open on Saturdays." for "Is the store open on Sundays?" is no
    swap (nor, so, "Paris is the capital of France." for "Is Paris the capital of Germany?").
    Numbers are not words here: "Is 21 a prime number?" has the claim ["prime", "number"]."""
    q_tokens = [t for t in q.clauses if t != BOUNDARY]
    if not q_tokens or q_tokens[0] not in COPULAS:
        return None
    claim = _content_tokens(q_tokens[1:])
    if len(claim) < 2:
        return None
    # Claim words governed by a preposition (articles aside): "sundays" in "open on Sundays".
    adjuncts: set[str] = set()
    previous = ""
    for token in q_tokens[1:]:
        if token in PREPOSITIONS or (token in ARTICLES and previous in PREPOSITIONS):
            previous = token if token in PREPOSITIONS else previous
            continue
        if previous in PREPOSITIONS:
            adjuncts.add(token)
        previous = token
    clause = _first_clause(a)
    if not COPULAS.intersection(clause):
        return None
    swap = _replacement(claim, clause)
    if swap is None or adjuncts.intersection(swap[0]):
        return None
    return swap


# Questions opening with one of these ask a yes/no question about their claim.
YES_NO_OPENERS = COPULAS | frozenset(wordlist("do does did can could has have had will would should shall may must"))
# Past participles that deny what they are said of ("The meeting was cancelled.": it was not held).
DENIAL_WORDS = frozenset(
    wordlist(
        "cancelled canceled postponed avoided rejected declined denied refused failed expired revoked "
        "suspended discontinued withdrawn"
    )
)


def denial_word(q: Text, a: Text) -> str | None:
    """A word of DENIAL_WORDS the answer says (not negated) in a clause with a content word of the
    question's claim, when the question is a yes/no question (it opens with "is", "does", "can",
    ...) whose claim lacks that word (by stem): "It should be avoided during pregnancy." for "Is the
    medication safe during pregnancy?" gives "avoided". None otherwise; "Was the flight cancelled?"
    - "It was cancelled." restates the claim instead."""
    q_tokens = [t for t in q.clauses if t != BOUNDARY]
    if not q_tokens or q_tokens[0] not in YES_NO_OPENERS:
        return None
    claim = {stem(t) for t in _content_tokens(q_tokens[1:])}
    clause_start = 0
    for i, token in enumerate([*a.clauses, BOUNDARY]):
        if token != BOUNDARY:
            continue
        clause = a.clauses[clause_start:i]
        clause_start = i + 1
        denials = [
            j
            for j, word in enumerate(clause)
            if word in DENIAL_WORDS and stem(word) not in claim and not negated(clause, j)
        ]
        if denials and any(stem(t) in claim for t in clause):  # one pass a clause: linear work
            return clause[denials[0]]
    return None
