"""Proper names in the ground truth: capitalised runs that form one fact, and names in the answer.

A run of capitalised words in the ground truth ("William Shakespeare", "Leonardo da
Vinci", "Pacific Ocean") is one fact (`fact_groups`). Which of its words must be found,
and when a found word belongs to someone else ("Theodore Roosevelt" for "Franklin D.
Roosevelt"), is decided in `turn.Turn.coverage`.
"""

from __future__ import annotations

import re
import unicodedata

from fair_forge_core.judges.reference.text import STOPWORDS, TOKEN_RE, normalise, normalise_each, stem, wordlist

GENERIC_NAME_WORDS = frozenset(
    wordlist(
        "ocean sea river lake mount mountain mountains desert island islands bay gulf university college "
        "city state states republic kingdom empire war president king queen prince princess saint st sir "
        "dr mr mrs ms general company inc corporation north south east west new great"
    )
)
NAME_PARTICLES = frozenset({"da", "de", "del", "der", "di", "du", "la", "le", "van", "von", "bin", "ibn", "al"})
_RAW_WORD_RE = re.compile(r"\S+")
_INITIAL_RE = re.compile(r"^[A-Z]\.$|^(?:Jr|Sr|St|Dr|Mr|Mrs|Ms)\.$")


def name_runs(raw: str) -> list[list[str]]:
    """Runs of two or more capitalised words in `raw` ("William Shakespeare", "Leonardo da Vinci"),
    as lists of normalised content words. A run stops at punctuation (initials like "D." excepted)."""
    runs: list[list[str]] = []
    current: list[str] = []
    pending: list[str] = []  # particles waiting for a capitalised word
    for match in _RAW_WORD_RE.finditer(unicodedata.normalize("NFKC", raw)):
        word = match.group()
        core = word.strip("\"'()[]{}“”‘’,;:!?")
        stops = word[-1] in ',;:!?)"”' or (word.endswith(".") and not _INITIAL_RE.match(core))
        core = core.rstrip(".")
        if core[:1].isupper():
            current.extend(pending)
            current.append(core)
            pending = []
        elif current and core.lower() in NAME_PARTICLES:
            pending.append(core)
            continue
        else:
            if len(current) >= 2:
                runs.append(current)
            current, pending = [], []
            continue
        if stops:
            if len(current) >= 2:
                runs.append(current)
            current, pending = [], []
    if len(current) >= 2:
        runs.append(current)
    out = []
    for run in runs:
        words = [w for w in TOKEN_RE.findall(normalise(" ".join(run))) if w not in STOPWORDS and len(w) > 1]
        if len(words) >= 2:
            out.append(words)
    return out


def proper_nouns(raw: str) -> set[str]:
    """Normalised words written capitalised in `raw` other than at the start of a sentence."""
    cores: dict[str, None] = {}
    sentence_start = True
    for match in _RAW_WORD_RE.finditer(unicodedata.normalize("NFKC", raw)):
        word = match.group()
        core = word.lstrip("\"'([{“‘")
        if core[:1].isupper() and not sentence_start:
            cores[core] = None
        sentence_start = word.rstrip("\"')]}”’")[-1:] in (".", "!", "?", ":") and not _INITIAL_RE.match(core)
    return {t for norm in normalise_each(list(cores)) for t in TOKEN_RE.findall(norm)}


def fact_groups(key_terms: list[str], runs: list[list[str]]) -> list[list[str]]:
    """Key terms as facts: the key terms of one name run form one fact, any other term is its own."""
    groups: list[list[str]] = []
    grouped: set[str] = set()
    terms = set(key_terms)
    for run in runs:
        members = [t for t in run if t in terms and t not in grouped]
        if len(members) >= 2:
            groups.append(members)
            grouped.update(members)
    return groups + [[t] for t in key_terms if t not in grouped]


class Occurrences:
    """Where each word (by stem) occurs among the raw answer's whitespace-separated words; built on
    first use, once per turn."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._words: list[str] = []
        self._tokens: list[list[str]] = []
        self._at: dict[str, list[int]] | None = None

    def _index(self) -> dict[str, list[int]]:
        """Answer word positions by stem."""
        if self._at is None:
            self._words = [m.group() for m in _RAW_WORD_RE.finditer(unicodedata.normalize("NFKC", self.raw))]
            distinct = list(dict.fromkeys(self._words))
            tokens_of = {w: TOKEN_RE.findall(n) for w, n in zip(distinct, normalise_each(distinct), strict=True)}
            self._at = {}
            for k, word in enumerate(self._words):
                tokens = tokens_of[word]
                self._tokens.append(tokens)
                for key in dict.fromkeys(stem(t) for t in tokens):
                    self._at.setdefault(key, []).append(k)
        return self._at

    def other_name_before(self, member: str, run: list[str], g_words: set[str]) -> bool:
        """Whether every occurrence of `member` in the answer follows a capitalised word foreign to the
        ground truth - "Theodore Roosevelt" where the ground truth says "Franklin D. Roosevelt", "Theo
        van Gogh" for "Vincent van Gogh" (name particles in between are skipped)."""
        positions = self._index().get(stem(member), [])
        conflicts = 0
        for k in positions:
            before = k - 1
            while before >= 0 and self._words[before] in NAME_PARTICLES:
                before -= 1
            if before < 0:
                continue
            prev, prev_tokens = self._words[before], self._tokens[before]
            if (
                prev[:1].isupper()
                and prev[-1] not in ".,;:!?"
                and prev_tokens
                and all(t not in STOPWORDS and t not in g_words and t not in run for t in prev_tokens)
            ):
                conflicts += 1
        return bool(positions) and conflicts == len(positions)
