"""One text as the rules read it (`Text`: its numbers, words and clause tokens), the
identifiers in it (`identifiers`, `find_code`: `turn.py`, module docstring), and the word
two texts say with opposite polarity (`negation_flip`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fair_forge_core.judges.reference.numbers import distinct_numbers, read_numbers
from fair_forge_core.judges.reference.quantities import NUMBER_WORDS, Num
from fair_forge_core.judges.reference.text import (
    BOUNDARY,
    STOPWORDS,
    TOKEN_RE,
    blank,
    clause_tokens,
    negated,
    normalise,
    stem,
)

MAX_IDENTIFIERS = 20  # identifiers of the ground truth looked for

_ID_RE = re.compile(r"[a-z0-9]+(?:[-./@_+][a-z0-9]+)*")
ALNUM_RE = re.compile(r"[a-z0-9]+")


def _is_identifier(span: str) -> bool:
    """An e-mail, or a code: 4+ letters and digits with both, or 7+ digits (module docstring)."""
    code = "".join(ALNUM_RE.findall(span))
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
        out.append(("".join(ALNUM_RE.findall(m.group())), m.start(), m.end()))
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
