"""One turn to score and the facts the rules read from it, each computed once, on first use.

Key facts are the ground truth's required numbers and its content terms (stopwords,
yes/no and negators dropped) that are not already in the question - echoing the
question proves nothing. If no key fact is left the question's terms are used after all
(unless the ground truth is a bare yes/no verdict). A multi-word name of the ground truth
is one fact (`names.fact_groups`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from fair_forge_core.judges.reference.lexicon import Lexicon
from fair_forge_core.judges.reference.names import (
    GENERIC_NAME_WORDS,
    NAME_PARTICLES,
    Occurrences,
    fact_groups,
    name_runs,
    proper_nouns,
)
from fair_forge_core.judges.reference.numbers import NUMBER_WORDS, Num, distinct_numbers, numbers_match, read_numbers
from fair_forge_core.judges.reference.text import (
    BOUNDARY,
    STOPWORDS,
    TOKEN_RE,
    blank,
    canon,
    clause_tokens,
    leading_verdict,
    negated,
    normalise,
    stem,
)

MAX_TERMS = 200  # key terms of the ground truth looked for (package docstring, "Bounded work")


@dataclass
class Text:
    """One normalised text: its numbers, its words and its clause tokens."""

    norm: str
    all_numbers: list[Num]  # every number, in text order
    numbers: list[Num]  # the first MAX_NUMBERS distinct ones: those that are compared
    words: list[str]  # all word tokens, numbers blanked out
    clauses: list[str]  # clause tokens, numbers blanked out

    @classmethod
    def of(cls, raw: str, norm: str | None = None) -> Text:
        """Read `raw`; `norm` is its normalised form when already computed."""
        norm = normalise(raw) if norm is None else norm
        numbers = read_numbers(norm)
        # "zero" stays: it is also a negator ("zero snakes").
        blanked = blank(norm, [(n.start, n.end) for n in numbers if norm[n.start : n.end].strip() != "zero"])
        return cls(norm, numbers, distinct_numbers(numbers), TOKEN_RE.findall(blanked), clause_tokens(blanked))

    @property
    def content(self) -> list[str]:
        """Content words in order, one per stem."""
        seen: set[str] = set()
        out: list[str] = []
        for word in self.words:
            if word in STOPWORDS or word.isdigit() or len(word) < 2 or word in NUMBER_WORDS:
                continue
            word_stem = stem(word)
            if word_stem not in seen:
                seen.add(word_stem)
                out.append(word)
        return out


def negation_flip(g: Text, a: Text) -> tuple[str | None, int]:
    """(a content word both texts use that is negated in one and not in the other, or None; how many
    content words they share). The ground truth's first occurrence is compared with every occurrence
    in the answer: one with the same polarity is enough."""
    a_positions: dict[str, list[int]] = {}
    for i, token in enumerate(a.clauses):
        if token != BOUNDARY and token not in STOPWORDS:
            a_positions.setdefault(stem(token), []).append(i)
    seen: set[str] = set()
    for i, token in enumerate(g.clauses):
        if token == BOUNDARY or token in STOPWORDS or token.isdigit():
            continue
        token_stem = stem(token)
        if token_stem in seen or token_stem not in a_positions:
            continue
        seen.add(token_stem)
        want = negated(g.clauses, i)
        if all(negated(a.clauses, j) != want for j in a_positions[token_stem]):
            return token, len(seen)
    return None, len(seen)


@dataclass(frozen=True)
class Coverage:
    """Which key facts of the ground truth the answer states."""

    groups: list[list[str]]  # the key terms as facts: a name run is one fact, any other term its own
    required: list[Num]  # the numbers the ground truth requires
    missing: list[str]  # the term facts not found, each as its terms joined by blanks
    missing_numbers: list[Num]
    typos: list[tuple[str, str]]  # (key term, the misspelt answer word it was found as)
    n_named: int  # term facts holding a proper name of the ground truth
    n_named_missing: int
    n_wording_missing: int  # term facts without a proper name that are missing
    n_facts: int  # term facts and required numbers
    n_found: int
    ratio: float  # n_found / n_facts, 1.0 when there is no key fact


class Turn:
    """The query, answer and ground truth of one turn, read as the rules need them."""

    def __init__(self, query: str, answer: str, ground_truth: str) -> None:
        self.query = query
        self.answer = answer
        self.ground_truth = ground_truth

    @cached_property
    def a_norm(self) -> str:
        return normalise(self.answer)

    @cached_property
    def g_norm(self) -> str:
        return normalise(self.ground_truth)

    @cached_property
    def q(self) -> Text:
        return Text.of(self.query)

    @cached_property
    def a(self) -> Text:
        return Text.of(self.answer, self.a_norm)

    @cached_property
    def g(self) -> Text:
        return Text.of(self.ground_truth, self.g_norm)

    @cached_property
    def q_values(self) -> set[float]:
        """The values of the question's numbers: a number repeated from the question proves nothing."""
        return {n.value for n in self.q.all_numbers}

    @cached_property
    def g_verdict(self) -> str | None:
        return leading_verdict(self.g.clauses)

    @cached_property
    def a_verdict(self) -> str | None:
        return leading_verdict(self.a.clauses)

    @cached_property
    def lexicon(self) -> Lexicon:
        return Lexicon(self.a.words)

    @cached_property
    def negation(self) -> tuple[str | None, int]:
        """`negation_flip` of the ground truth and the answer."""
        return negation_flip(self.g, self.a)

    @cached_property
    def key_facts(self) -> tuple[list[Num], list[str]]:
        """(required numbers, key terms): the ground truth's numbers and content words that are not
        already in the question. Weak numbers ("one", "first") are required only when nothing else
        is; the question's terms are used when nothing else is and the ground truth has no yes/no
        verdict. The first MAX_TERMS key terms."""
        q, g = self.q, self.g
        g_numbers = [n for n in g.numbers if n.value not in self.q_values]
        required = [n for n in g_numbers if not n.weak]
        q_content = q.content
        q_stems = {stem(w) for w in q_content} | {stem(canon(w)) for w in q_content}
        g_content = g.content
        key_terms = [w for w in g_content if stem(w) not in q_stems and stem(canon(w)) not in q_stems]
        if not key_terms and not required:
            required = [n for n in g_numbers if n.weak]
        if not key_terms and not required and self.g_verdict is None:
            key_terms = list(g_content)  # only echoes left: use them rather than nothing
        return required, key_terms[:MAX_TERMS]

    @cached_property
    def coverage(self) -> Coverage:
        """Each key fact looked for in the answer. A name run is found when any distinctive word of it
        is found (not a particle like "da" nor a generic word like "Ocean"), unless every occurrence
        follows another capitalised name absent from the ground truth ("Theodore Roosevelt" for
        "Franklin D. Roosevelt"). A proper name is a word capitalised other than at a sentence start."""
        required, key_terms = self.key_facts
        groups = fact_groups(key_terms, name_runs(self.ground_truth))
        lexicon = self.lexicon
        occurrences = Occurrences(self.answer)
        g_words = set(self.g.words)
        facts_found = 0
        typos: list[tuple[str, str]] = []
        missing: list[str] = []
        names = proper_nouns(self.ground_truth)
        n_named = n_named_missing = n_wording_missing = 0
        for group in groups:
            named = any(t in names for t in group)
            n_named += named
            how = {term: lexicon.find(term) for term in group}
            typos.extend((term, seen) for term, seen in how.items() if seen)
            heads = [t for t in group if t not in GENERIC_NAME_WORDS and t not in NAME_PARTICLES] or group
            hits = [t for t in heads if how[t] is not None]
            if (
                len(group) > 1
                and hits
                and all(how[t] == "" and occurrences.other_name_before(t, group, g_words) for t in hits)
            ):
                hits = []  # the answer names someone else: "Theodore Roosevelt" for "Franklin Roosevelt"
            if hits:
                facts_found += 1
            else:
                missing.append(" ".join(group))
                n_named_missing += named
                n_wording_missing += not named
        found_numbers = [any(numbers_match(n, x) for x in self.a.numbers) for n in required]
        missing_numbers = [n for n, found in zip(required, found_numbers, strict=True) if not found]
        n_facts = len(groups) + len(required)
        n_found = facts_found + sum(found_numbers)
        return Coverage(
            groups=groups,
            required=required,
            missing=missing,
            missing_numbers=missing_numbers,
            typos=typos,
            n_named=n_named,
            n_named_missing=n_named_missing,
            n_wording_missing=n_wording_missing,
            n_facts=n_facts,
            n_found=n_found,
            ratio=n_found / n_facts if n_facts else 1.0,
        )

    def missing_facts(self) -> str:
        """The first missing term facts and numbers, as the reasonings list them."""
        cov = self.coverage
        return ", ".join([*cov.missing[:3], *(n.describe(self.g.norm) for n in cov.missing_numbers[:2])])
