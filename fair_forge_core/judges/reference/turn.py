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

from fair_forge_core.judges.reference.lexicon import Lexicon, osa_distance
from fair_forge_core.judges.reference.names import (
    GENERIC_NAME_WORDS,
    NAME_PARTICLES,
    Occurrences,
    fact_groups,
    name_runs,
    proper_nouns,
)
from fair_forge_core.judges.reference.numbers import distinct_numbers, numbers_match, read_numbers
from fair_forge_core.judges.reference.quantities import NUMBER_WORDS, Num
from fair_forge_core.judges.reference.text import (
    ANTONYMS,
    ARTICLES,
    BOUNDARY,
    NEGATORS,
    PREPOSITIONS,
    STOPWORDS,
    TOKEN_RE,
    blank,
    canon,
    clause_tokens,
    expand_codes,
    leading_verdict,
    negated,
    normalise,
    said_plainly,
    stem,
    wordlist,
)

MAX_TERMS = 200  # key terms of the ground truth looked for (package docstring, "Bounded work")
MAX_IDENTIFIERS = 20  # identifiers of the ground truth looked for

_ID_RE = re.compile(r"[a-z0-9]+(?:[-./@_+][a-z0-9]+)*")
_ALNUM_RE = re.compile(r"[a-z0-9]+")
_NONE_FORM_RE = re.compile(r"\b(?:none|nothing|nobody|no|zero|not any|neither)\b")


def _is_identifier(span: str) -> bool:
    """An e-mail, or a code: 4+ letters and digits with both, or 7+ digits (module docstring)."""
    code = "".join(_ALNUM_RE.findall(span))
    digits = sum(c.isdigit() for c in code)
    if "@" in span and "." in span.split("@")[-1]:
        return True
    if "," in span or (span.count(".") == 1 and not any(c.isalpha() for c in span)):
        return False  # 1,000,000 and 3.14159 are numbers
    return (len(code) >= 4 and 0 < digits < len(code)) or digits >= 7


def identifiers(norm: str, numbers: list[Num]) -> list[tuple[str, int, int]]:
    """(code without separators, start, end) of each identifier of normalised text, outside dates
    and times; the first MAX_IDENTIFIERS."""
    dated = [(n.start, n.end) for n in numbers if n.unit in ("date", "clock")]
    out = []
    for m in _ID_RE.finditer(norm):
        if any(a <= m.start() < b for a, b in dated) or not _is_identifier(m.group()):
            continue
        out.append(("".join(_ALNUM_RE.findall(m.group())), m.start(), m.end()))
        if len(out) >= MAX_IDENTIFIERS:
            break
    return out


def find_code(tokens: list[re.Match[str]], code: str) -> tuple[int, int] | None:
    """The span of consecutive answer tokens that spell `code` once joined, else None."""
    for i, token in enumerate(tokens):
        if not code.startswith(token.group()):
            continue
        joined, j = token.group(), i
        while len(joined) < len(code) and j + 1 < len(tokens):
            j += 1
            joined += tokens[j].group()
        if joined == code:
            return token.start(), tokens[j].end()
    return None


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
        tokens = list(_ALNUM_RE.finditer(self.a_norm)) if self.g_ids else []
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
        q, g = self.q, self.g
        g_numbers = [n for n in self.g_numbers if n.value not in self.q_values]
        required = [n for n in g_numbers if not n.weak]
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
        if not key_terms and not required:
            required = [n for n in g_numbers if n.weak]
        if not key_terms and not required and self.g_verdict is None and not self.g_ids:
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
            if named and len(heads) > 1 and how[heads[-1]] is None:
                hits = []  # the family name is missing: "Alexander Bell" for "Alexander Fleming"
            if hits:
                facts_found += 1
            else:
                missing.append(" ".join(group))
                n_named_missing += named
                n_wording_missing += not named
        stated = [x for x in self.a_numbers if not self.echoes_question(x)]
        none_form = not stated and _NONE_FORM_RE.search(self.a_norm) is not None
        found_numbers = [
            any(numbers_match(n, x) for x in stated) or (n.value == 0 and n.unit is None and none_form)
            for n in required
        ]
        last = self.last_number
        found_numbers += [last is not None and numbers_match(n, last) for n in self.result_numbers]
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

    def missing_facts(self) -> str:
        """The first missing term facts and numbers, as the reasonings list them."""
        cov = self.coverage
        return ", ".join([*cov.missing[:3], *(n.describe(self.g.norm) for n in cov.missing_numbers[:2])])
