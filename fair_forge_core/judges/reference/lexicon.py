"""Finding a ground-truth term among the answer's words: exactly, by stem, synonym or suffix, or misspelt.

A term is found when the answer has it exactly, with the same crude stem
("cities"/"city", "discovered"/"discovery"), through a small synonym list, or as the same
word with another common suffix ("photosynthesis"/"photosynthetic"); it is found with a
typo when an answer word is within Damerau-Levenshtein distance 1 (terms of 5+ letters)
or 2 (8+ letters, lengths within 1). A stem or suffix variant one edit away from a term
of 5+ letters is a typo too, unless the extra letter is a regular ending: plural "s"
("planet"/"planets", but "Paris"/"Pariss"), past "d" after "e" ("create"/"created"),
demonym "n" after "a" ("Korea"/"Korean"). Terms of four letters or fewer get no typo
tolerance, so "Iran"/"Iraq" is a wrong fact, not a typo (and "Marrs" is not found for
"Mars"); a dropped final "s" reads as a singular ("Pari" for "Paris" passes).
"""

from __future__ import annotations

from collections.abc import Sequence

from fair_forge_core.judges.reference.text import STOPWORDS, canon, stem, wordlist

# Work bounds (package docstring, "Bounded work").
MAX_TYPO_WORDS = 1000  # distinct answer words a misspelling is looked for among
MAX_TYPO_LEN = 30  # longer terms and words get no typo tolerance


def osa_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment (Damerau-Levenshtein) distance, or limit + 1 once it exceeds `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def _common_prefix(a: str, b: str) -> int:
    """How many leading letters `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


_MORPH_TAILS = frozenset(
    wordlist(
        "s es ed ing ic ical al ally ist ists ism y ies ion ions ive ity er ers or ors ly ment ness "
        "is sis tic tical t ce cy n an ans ian ians ese ish e"
    )
) | {""}


def _morph_variant(a: str, b: str) -> bool:
    """Same word up to a common suffix ("photosynthesis"/"photosynthetic", "economy"/"economic")."""
    prefix = _common_prefix(a, b)
    return prefix >= 5 and a[prefix:] in _MORPH_TAILS and b[prefix:] in _MORPH_TAILS


_MAX_TAIL = max(len(tail) for tail in _MORPH_TAILS)


def _morph_bases(word: str) -> list[str]:
    """`word` without each suffix it may carry as a variant ("economic" -> "economic", "econom", ...),
    keeping 5+ letters: two words are suffix variants only if they share one of these."""
    return [
        word[: len(word) - k] for k in range(min(_MAX_TAIL, len(word) - 5) + 1) if word[len(word) - k :] in _MORPH_TAILS
    ]


def _deletions(word: str, depth: int) -> set[str]:
    """`word` and every string made from it by deleting up to `depth` letters."""
    out = {word}
    frontier = {word}
    for _ in range(depth):
        frontier = {w[:i] + w[i + 1 :] for w in frontier for i in range(len(w))}
        out |= frontier
    return out


def _inflection(a: str, b: str) -> bool:
    """Whether the longer of two words is the other plus a regular ending: a plural or verb "s"
    ("planet"/"planets", not "paris"/"pariss"), a past "d" ("agree"/"agreed") or a demonym "n"
    ("korea"/"korean")."""
    short, long = (a, b) if len(a) < len(b) else (b, a)
    if len(long) != len(short) + 1 or not long.startswith(short):
        return False
    extra, last = long[-1], short[-1]
    return (extra == "s" and last != "s") or (extra == "d" and last == "e") or (extra == "n" and last == "a")


_PIECES_FROM = 15  # terms this long are matched with two typos through pieces, not deletions


class Lexicon:
    """The answer's words, indexed so that finding a term costs about the same whatever the answer's
    length: by stem and synonym, by suffix-variant base, and (for typos) by the strings left after
    deleting one or two letters (symmetric-delete search; candidates are then checked with
    `osa_distance`)."""

    def __init__(self, words: Sequence[str]) -> None:
        self.order = {w: i for i, w in enumerate(dict.fromkeys(words))}  # distinct, first occurrence first
        self.by_stem: dict[str, list[str]] = {}
        for word in self.order:
            for key in dict.fromkeys((stem(word), stem(canon(word)))):
                self.by_stem.setdefault(key, []).append(word)
        self._by_base: dict[str, list[str]] | None = None
        self._typo_words: list[str] | None = None
        self._by_deletion: dict[tuple[int, int], dict[str, list[str]]] = {}  # (depth, word length or 0)
        self._by_piece: dict[tuple[str, int], list[str]] | None = None

    def _bases(self) -> dict[str, list[str]]:
        if self._by_base is None:
            self._by_base = {}
            for word in self.order:
                for base in _morph_bases(word):
                    self._by_base.setdefault(base, []).append(word)
        return self._by_base

    def _typo_candidates(self) -> list[str]:
        """The words a misspelling may be: the first MAX_TYPO_WORDS distinct non-stopwords of 4 to
        MAX_TYPO_LEN letters."""
        if self._typo_words is None:
            eligible = (w for w in self.order if w not in STOPWORDS and 4 <= len(w) <= MAX_TYPO_LEN)
            self._typo_words = [w for _, w in zip(range(MAX_TYPO_WORDS), eligible, strict=False)]
        return self._typo_words

    def _index(self, depth: int, length: int = 0) -> dict[str, list[str]]:
        """Typo candidates by deletion string: depth 1 over all of them, depth 2 for one word length."""
        key = (depth, length if depth > 1 else 0)
        if key not in self._by_deletion:
            index: dict[str, list[str]] = {}
            for word in self._typo_candidates():
                if depth == 1 or len(word) == length:
                    for deleted in _deletions(word, depth):
                        index.setdefault(deleted, []).append(word)
            self._by_deletion[key] = index
        return self._by_deletion[key]

    def _candidates(self, index: dict[str, list[str]], term: str, depth: int) -> list[str]:
        found = {w for deleted in _deletions(term, depth) for w in index.get(deleted, ())}
        return sorted(found, key=self.order.__getitem__)

    def find(self, term: str) -> str | None:
        """How `term` appears in the answer: "" when found (exact, stem, synonym, suffix variant),
        the misspelt answer word when found only with a typo, None when absent.

        A stem or suffix variant one edit away from a term of 5+ letters that is not a regular
        ending ("Pariss", "Berlinn", "Franc" for "France") is a typo, not the same word."""
        if term in self.order:
            return ""
        variants = [*self.by_stem.get(stem(term), ()), *self.by_stem.get(stem(canon(term)), ())]
        variants += [w for base in _morph_bases(term) for w in self._bases().get(base, ()) if _morph_variant(term, w)]
        slip = None
        for word in dict.fromkeys(variants):
            if len(term) >= 5 and not _inflection(term, word) and osa_distance(term, word, 1) == 1:
                slip = slip or word
            else:
                return ""
        if slip is not None or len(term) < 5 or len(term) > MAX_TYPO_LEN:
            return slip
        for word in self._candidates(self._index(1), term, 1):
            if osa_distance(term, word, 1) <= 1:
                return word
        if len(term) >= 8:
            for word in self._near_candidates(term):
                if abs(len(word) - len(term)) <= 1 and osa_distance(term, word, 2) <= 2:
                    return word
        return None

    def _near_candidates(self, term: str) -> list[str]:
        """Answer words that may be two edits from `term` (8+ letters), in answer order.

        Up to 14 letters: words sharing a string left after deleting up to two letters from each
        (the words of lengths within 1 are indexed so, on first need). From 15 letters: words holding,
        within two places of where the term has it, one of five disjoint three-letter pieces of the
        term - two edits touch at most four of them."""
        if len(term) <= _PIECES_FROM - 1:
            lengths = (len(term) - 1, len(term), len(term) + 1)
            found = {w for n in lengths for w in self._candidates(self._index(2, n), term, 2)}
        else:
            pieces = self._pieces()
            found = set()
            for i in range(5):
                start = i * len(term) // 5
                trigram = term[start : start + 3]
                for at in range(max(0, start - 2), start + 3):
                    found.update(pieces.get((trigram, at), ()))
        return sorted(found, key=self.order.__getitem__)

    def _pieces(self) -> dict[tuple[str, int], list[str]]:
        """Typo candidates of _PIECES_FROM - 1 letters or more by (three-letter piece, position)."""
        if self._by_piece is None:
            self._by_piece = {}
            for word in self._typo_candidates():
                if len(word) >= _PIECES_FROM - 1:
                    for at in range(len(word) - 2):
                        self._by_piece.setdefault((word[at : at + 3], at), []).append(word)
        return self._by_piece
