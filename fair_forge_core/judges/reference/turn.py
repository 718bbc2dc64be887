"""One turn to score and the facts the rules read from it, each computed once, on first use.

Key facts are the ground truth's required numbers and its content terms (stopwords,
yes/no and negators dropped) that are not already in the question - echoing the
question proves nothing. If no key fact is left the question's terms are used after all
(unless the ground truth is a bare yes/no verdict). A multi-word name of the ground truth
is one fact (`names.fact_groups`), found only with its last distinctive word (the family
name: "Alexander Bell" does not state "Alexander Fleming").

Identifiers (`identifiers`: an e-mail, or a code of 4+ letters and digits mixing both, or
of 7+ digits: "KT-2041-BL", "1Z999AA10123456784", "555-123-4567") are facts of their own,
found only exactly, separators and case aside ("DE89 3704 0044" = "DE893704 0044"): no
typo tolerance, and their digits are not numbers.

Numbers and the question: an answer number that repeats a question number ("2 feet" for
"How many inches are in 2 feet?") never states a required number, even one it converts
to. A ground-truth number the question also has is required when the ground truth states
nothing else ("If I have 10 apples and eat 5, how many are left?" - "5"); the answer's
last number must then match it (`result_numbers`). A required 0 is stated by "none", "no
...", "nothing" when the answer has no other number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from fair_forge_core.judges.reference.claims import claim_stance, denial_word, swapped_claim
from fair_forge_core.judges.reference.lexicon import Lexicon
from fair_forge_core.judges.reference.names import (
    GENERIC_NAME_WORDS,
    NAME_PARTICLES,
    Occurrences,
    fact_groups,
    name_runs,
    proper_nouns,
)
from fair_forge_core.judges.reference.numbers import numbers_match
from fair_forge_core.judges.reference.parsed import ALNUM_RE, Text, find_code, identifiers, negation_flip
from fair_forge_core.judges.reference.quantities import Num
from fair_forge_core.judges.reference.text import (
    NEGATORS,
    canon,
    expand_codes,
    leading_verdict,
    normalise,
    said_plainly,
    stem,
)

MAX_TERMS = 200  # key terms of the ground truth looked for (package docstring, "Bounded work")
_NONE_FORM_RE = re.compile(r"\b(?:none|nothing|nobody|no|zero|not any|neither)\b")


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


def _fact_found(
    group: list[str], how: dict[str, str | None], named: bool, occurrences: Occurrences, g_words: set[str]
) -> bool:
    """Whether the answer states the term fact `group` (`Turn.coverage`), given `how` each term was
    found (`Lexicon.find`: None not found, "" as written, else the misspelt word) and whether the
    fact holds a proper name: one of its distinctive words (not a particle nor a generic word;
    all its words when it has no other) is found, unless every one found follows another
    capitalised name absent from the ground truth, or the fact is a name whose family name (its
    last distinctive word) is missing."""
    heads = [t for t in group if t not in GENERIC_NAME_WORDS and t not in NAME_PARTICLES] or group
    hits = [t for t in heads if how[t] is not None]
    if len(group) > 1 and hits and all(how[t] == "" and occurrences.other_name_before(t, group, g_words) for t in hits):
        return False  # the answer names someone else: "Theodore Roosevelt" for "Franklin Roosevelt"
    if named and len(heads) > 1 and how[heads[-1]] is None:
        return False  # the family name is missing: "Alexander Bell" for "Alexander Fleming"
    return bool(hits)


class Turn:
    """The query, answer and ground truth of one turn, read as the rules need them."""

    def __init__(self, query: str, answer: str, ground_truth: str) -> None:
        self.query = query
        self.answer = answer
        self.ground_truth = ground_truth

    @cached_property
    def _plain(self) -> tuple[str, str]:
        """The normalised answer and ground truth before state codes are written out."""
        return normalise(self.answer), normalise(self.ground_truth)

    @cached_property
    def a_norm(self) -> str:
        expanded = expand_codes(self.answer, self._plain[1])
        return self._plain[0] if expanded == self.answer else normalise(expanded)

    @cached_property
    def g_norm(self) -> str:
        expanded = expand_codes(self.ground_truth, self._plain[0])
        return self._plain[1] if expanded == self.ground_truth else normalise(expanded)

    @cached_property
    def g_ids(self) -> list[tuple[str, int, int]]:
        """The ground truth's identifiers (`identifiers`)."""
        return identifiers(self.g_norm, self.g.all_numbers)

    @cached_property
    def id_found(self) -> tuple[list[str], list[str], list[tuple[int, int]]]:
        """(identifiers found, identifiers missing, answer spans that are identifiers: those
        found and any other identifier-like span)."""
        tokens = list(ALNUM_RE.finditer(self.a_norm)) if self.g_ids else []
        found, missing, spans = [], [], []
        for code, _, _ in self.g_ids:
            span = find_code(tokens, code)
            if span is None:
                missing.append(code)
            else:
                found.append(code)
                spans.append(span)
        spans.extend((start, end) for _, start, end in identifiers(self.a_norm, self.a.all_numbers))
        return found, missing, spans

    @cached_property
    def a_numbers(self) -> list[Num]:
        """The answer's compared numbers outside identifiers."""
        spans = self.id_found[2]
        return [n for n in self.a.numbers if not any(a <= n.start < b for a, b in spans)]

    @cached_property
    def g_numbers(self) -> list[Num]:
        """The ground truth's compared numbers outside identifiers."""
        spans = [(a, b) for _, a, b in self.g_ids]
        return [n for n in self.g.numbers if not any(a <= n.start < b for a, b in spans)]

    @cached_property
    def q_numbers(self) -> list[tuple[float, str | None]]:
        """(value, unit) of each question number."""
        return [(n.value, n.unit) for n in self.q.all_numbers]

    def echoes_question(self, number: Num) -> bool:
        """Whether an answer number repeats a question number (value, and unit when both have one)."""
        return any(
            v == number.value and (u is None or number.unit is None or u == number.unit) for v, u in self.q_numbers
        )

    @cached_property
    def result_numbers(self) -> list[Num]:
        """Ground-truth numbers that are also in the question, required when the ground truth
        states nothing else (module docstring); their match is the answer's last number."""
        required, key_terms = self.key_facts
        if required or key_terms or self.g_ids or self.g_verdict is not None:
            return []
        return [n for n in self.g_numbers if n.value in self.q_values and not n.weak][:1]

    @cached_property
    def last_number(self) -> Num | None:
        """The answer's last number outside identifiers (what a calculation's answer ends with)."""
        spans = self.id_found[2]
        outside = [n for n in self.a.all_numbers if not any(a <= n.start < b for a, b in spans)]
        return outside[-1] if outside else None

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
    def a_stance(self) -> str | None:
        """The yes/no the answer gives: its leading yes/no, else what it says of the question's claim
        (`claim_stance` against the question), else of the ground truth's claim when that has terms
        of its own; None when neither is decided."""
        if self.a_verdict is not None:
            return self.a_verdict
        stance = claim_stance(self.q, self.a)
        if stance is None and self.g.content:
            g_stance = claim_stance(self.g, self.a)
            if g_stance is not None:
                g_polarity = self.g_verdict or ("no" if any(t in NEGATORS for t in self.g.clauses) else "yes")
                stance = g_polarity if g_stance == "yes" else ("yes" if g_polarity == "no" else "no")
        return stance

    @cached_property
    def claim_swap(self) -> tuple[list[str], list[str]] | None:
        """`swapped_claim` of the question and the answer."""
        return swapped_claim(self.q, self.a)

    @cached_property
    def denial(self) -> str | None:
        """`denial_word` of the question and the answer."""
        return denial_word(self.q, self.a)

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
        already in the question. After a leading "no", words the ground truth only says negated are
        the verdict restated, not facts ("No, the meeting did not take place." has no key term; "No,
        it moved to Friday." keeps "moved" and "friday"). Weak numbers ("one", "first") are required
        only when nothing else is; the question's terms are used when nothing else is and the ground
        truth has no yes/no verdict. The first MAX_TERMS key terms."""
        g_numbers = [n for n in self.g_numbers if n.value not in self.q_values]
        required = [n for n in g_numbers if not n.weak]
        g_content, key_terms = self._key_terms()
        if not key_terms and not required:
            required = [n for n in g_numbers if n.weak]
        if not key_terms and not required and self.g_verdict is None and not self.g_ids:
            key_terms = list(g_content)  # only echoes left: use them rather than nothing
        return required, key_terms[:MAX_TERMS]

    def _key_terms(self) -> tuple[list[str], list[str]]:
        """(the ground truth's content words outside its identifiers, those of them not in the
        question by stem or synonym): after a leading "no", only the words it says plainly
        (`key_facts`)."""
        q, g = self.q, self.g
        q_content = q.content
        q_stems = {stem(w) for w in q_content} | {stem(canon(w)) for w in q_content}
        g_content = g.content
        codes = [code for code, _, _ in self.g_ids]
        g_content = [w for w in g_content if not any(w in code for code in codes)]
        key_terms = [w for w in g_content if stem(w) not in q_stems and stem(canon(w)) not in q_stems]
        if self.g_verdict == "no" and key_terms:
            # "No, the meeting did not take place.": the negated words restate the "no", they are no fact.
            plain = {stem(w) for w in g_content if said_plainly(g.clauses, w)}
            key_terms = [w for w in key_terms if stem(w) in plain]
        return g_content, key_terms

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
            if _fact_found(group, how, named, occurrences, g_words):
                facts_found += 1
            else:
                missing.append(" ".join(group))
                n_named_missing += named
                n_wording_missing += not named
        found_numbers = self._numbers_found(required)
        required = [*required, *self.result_numbers]
        missing_numbers = [n for n, found in zip(required, found_numbers, strict=True) if not found]
        ids_found, ids_missing, _ = self.id_found
        missing.extend(ids_missing)
        n_named += len(self.g_ids)
        n_named_missing += len(ids_missing)
        groups = groups + [[code] for code, _, _ in self.g_ids]
        n_facts = len(groups) + len(required)
        n_found = facts_found + sum(found_numbers) + len(ids_found)
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

    def _numbers_found(self, required: list[Num]) -> list[bool]:
        """Whether the answer states each of the `required` numbers, then each of the
        `result_numbers`: a required number by a number the answer states that does not echo the
        question (a required 0 also by "none", "no ...", "nothing" when there is no such number),
        a result number by the answer's last number."""
        stated = [x for x in self.a_numbers if not self.echoes_question(x)]
        none_form = not stated and _NONE_FORM_RE.search(self.a_norm) is not None
        found_numbers = [
            any(numbers_match(n, x) for x in stated) or (n.value == 0 and n.unit is None and none_form)
            for n in required
        ]
        last = self.last_number
        found_numbers += [last is not None and numbers_match(n, last) for n in self.result_numbers]
        return found_numbers

    def missing_facts(self) -> str:
        """The first missing term facts and numbers, as the reasonings list them."""
        cov = self.coverage
        return ", ".join([*cov.missing[:3], *(n.describe(self.g.norm) for n in cov.missing_numbers[:2])])
