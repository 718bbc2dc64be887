"""Reading text: normalisation, word lists, stems, synonyms and antonyms, clause tokens.

Every rule compares normalised text: Unicode NFKC, accents stripped, casefolded, curly
quotes straightened, contractions expanded ("isn't" -> "is not", "can't" -> "can not"),
a few aliases folded ("united states" -> "usa", "world war ii" -> "ww2").
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'", "\u2212": "-", "\u2013": "-"})
_SUPERSCRIPTS = {"\u00b2": "^2", "\u00b3": "^3"}
_CONTRACTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), repl)
    for pattern, repl in (
        (r"\bcan't\b", "can not"),
        (r"\bcannot\b", "can not"),
        (r"\bwon't\b", "will not"),
        (r"\bshan't\b", "shall not"),
        (r"\bain't\b", "is not"),
        (r"n't\b", " not"),
        (r"\bi'm\b", "i am"),
        (r"'re\b", " are"),
        (r"'ve\b", " have"),
        (r"'ll\b", " will"),
        (r"'d\b", " would"),
        (r"\b(it|that|what|there|he|she|who|here|where|this)'s\b", r"\1 is"),
        (r"'s\b", ""),
        (r"s'(?=\s|$)", "s"),
    )
)
_ALIASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), repl)
    for pattern, repl in (
        (r"\bunited states of america\b|\bunited states\b|\bu\.s\.a\.?|\bu\.s\.(?=\s|$)", "usa"),
        (r"\bunited kingdom\b|\bu\.k\.", "uk"),
        (r"\bworld war (?:ii|two|2)\b|\bwwii\b|\bww ii\b", "ww2"),
        (r"\bworld war (?:i|one|1)\b|\bwwi\b", "ww1"),
        (r"\bper cent\b", "percent"),
        (r"\bnyc\b", "new york city"),
        (r"\bd\.c\.", "dc"),
        (r"\bbldg\.?(?=\s|$|,)", "building"),
        (r"\bave\.(?=\s|$|,)", "avenue"),
        (r"(?<=[a-z] )st\.?(?=\s*(?:$|[,;)]))", "street"),
        (r"(?<=[a-z] )rd\.?(?=\s*(?:$|[,;)]))", "road"),
        # negations worded as one word or idiom: "not" + the positive word
        (r"\bno longer\b", "not"),
        (r"\bout of stock\b", "not in stock"),
        (r"\bunavailable\b", "not available"),
        (r"\bexcluded\b", "not included"),
        (r"\b(?:prohibited|forbidden|banned|disallowed)\b", "not allowed"),
        (r"\binvalid\b", "not valid"),
        (r"\bclosed\b", "not open"),
        (r"\bunsafe\b", "not safe"),
        (r"\bimpossible\b", "not possible"),
        (r"\billegal\b", "not legal"),
        (r"\bincorrect\b", "not correct"),
        (r"\btoo late to\b", "can not"),
    )
)
# The aliases in one pass (they do not overlap; each is literal text, no group references).
_ALIAS_RE = re.compile("|".join(f"(?P<a{i}>{pattern.pattern})" for i, (pattern, _) in enumerate(_ALIASES)))
_ALIAS_REPL = {f"a{i}": repl for i, (_, repl) in enumerate(_ALIASES)}
_RAW_CODES = re.compile(r"\b(?:[A-Z]{2}|USA?)\b")
US_STATES = dict(
    pair.split("=")
    for pair in [
        "AL=alabama",
        "AK=alaska",
        "AZ=arizona",
        "AR=arkansas",
        "CA=california",
        "CO=colorado",
        "CT=connecticut",
        "DE=delaware",
        "FL=florida",
        "GA=georgia",
        "HI=hawaii",
        "ID=idaho",
        "IL=illinois",
        "IN=indiana",
        "IA=iowa",
        "KS=kansas",
        "KY=kentucky",
        "LA=louisiana",
        "ME=maine",
        "MD=maryland",
        "MA=massachusetts",
        "MI=michigan",
        "MN=minnesota",
        "MS=mississippi",
        "MO=missouri",
        "MT=montana",
        "NE=nebraska",
        "NV=nevada",
        "NH=new_hampshire",
        "NJ=new_jersey",
        "NM=new_mexico",
        "NY=new_york",
        "NC=north_carolina",
        "ND=north_dakota",
        "OH=ohio",
        "OK=oklahoma",
        "OR=oregon",
        "PA=pennsylvania",
        "RI=rhode_island",
        "SC=south_carolina",
        "SD=south_dakota",
        "TN=tennessee",
        "TX=texas",
        "UT=utah",
        "VT=vermont",
        "VA=virginia",
        "WA=washington",
        "WV=west_virginia",
        "WI=wisconsin",
        "WY=wyoming",
        "US=usa",
        "USA=usa",
    ]
)


def expand_codes(raw: str, other_norm: str) -> str:
    """`raw` with each upper-case US state code ("CA", "TX") and "US" written out, but only where the
    other text (normalised) names that state: "CA" is California when the ground truth says so,
    otherwise it stays a code (and "CO" stays apart from "California")."""

    def repl(match: re.Match[str]) -> str:
        name = US_STATES.get(match.group(), "").replace("_", " ")
        return name if name and re.search(rf"\b{name}\b", other_norm) else match.group()

    return _RAW_CODES.sub(repl, raw)


def normalise(text: str) -> str:
    """Casefolded, accent-free, contraction-expanded text; punctuation kept."""
    for sup, repl in _SUPERSCRIPTS.items():
        text = text.replace(sup, repl)
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    text = text.casefold()
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    return _ALIAS_RE.sub(lambda m: _ALIAS_REPL[m.lastgroup or ""], text)


def normalise_each(words: Sequence[str]) -> list[str]:
    """`normalise` of each word, in one pass over them all (a NUL keeps them apart)."""
    if not words:
        return []
    joined = " \0 ".join(w.replace("\0", " ") for w in words)
    return [part.strip() for part in normalise(joined).split("\0")]


def wordlist(text: str) -> list[str]:
    return text.split()


_CLAUSE_RE = re.compile(r"[a-z0-9]+|[.,;:!?()\[\]]|--|-\s|\s-")
ARTICLES = frozenset({"a", "an", "the"})
_CLAUSE_WORDS = frozenset({"but", "however", "although", "though", "whereas", "while", "yet"})
BOUNDARY = "|"
PREPOSITIONS = frozenset(
    wordlist(
        "at in on from of to with for by into onto over under about between among through throughout "
        "during after before since until within without near across along toward towards via per"
    )
)

STOPWORDS = frozenset(
    wordlist(
        """
    a an the and or of to in on at by for with from into onto upon over under about above below
    as than then so such that this these those there here it its itself they them their theirs
    he him his she her hers we us our ours you your yours i me my mine who whom whose which what
    when where why how is are was were be been being am do does did done doing has have had having
    will would shall should can could may might must also too very just only really actually indeed
    quite rather some any each every all both either neither more most much many other another same
    own if because since until while after before during through between against among per via
    approximately roughly around nearly almost about exactly precisely total overall
    located situated called named known considered answer question correct correctly right
    yes yeah yep no nope not never none nothing nobody nowhere zero nor
    well please thank thanks sure certainly definitely absolutely course
    throughout within without across along toward towards usually often typically generally mainly
    mostly commonly primarily main went go goes gone going get gets got
    equals equal equaling equalling yields result results amounts
    s t d ll m o re ve y e g etc ie eg vs
    """
    )
)
NEGATORS = frozenset({"not", "no", "never", "none", "nothing", "nobody", "nowhere", "neither", "nor", "zero"})

_SYNONYMS: dict[str, str] = {
    "automobile": "car",
    "vehicle": "car",
    "large": "big",
    "huge": "big",
    "largest": "biggest",
    "smallest": "tiniest",
    "quick": "fast",
    "rapid": "fast",
    "begin": "start",
    "commence": "start",
    "end": "finish",
    "died": "death",
    "dead": "death",
    "physician": "doctor",
    "purchase": "buy",
    "bought": "buy",
    "wrote": "write",
    "written": "write",
    "author": "writer",
    "h2o": "water",
    "america": "usa",
    "britain": "uk",
    "ocean": "sea",
}

ANTONYMS: dict[str, str] = {}
for _a, _b in (
    ("true", "false"),
    ("correct", "incorrect"),
    ("increase", "decrease"),
    ("increases", "decreases"),
    ("increased", "decreased"),
    ("higher", "lower"),
    ("more", "less"),
    ("larger", "smaller"),
    ("bigger", "smaller"),
    ("heavier", "lighter"),
    ("older", "younger"),
    ("faster", "slower"),
    ("longer", "shorter"),
    ("earlier", "later"),
    ("before", "after"),
    ("north", "south"),
    ("east", "west"),
    ("positive", "negative"),
    ("hot", "cold"),
    ("alive", "dead"),
    ("legal", "illegal"),
    ("possible", "impossible"),
    ("always", "never"),
    ("maximum", "minimum"),
    ("acid", "base"),
    ("acidic", "alkaline"),
    ("odd", "even"),
    ("win", "lose"),
    ("won", "lost"),
    ("open", "shut"),
    ("prime", "composite"),
    ("valid", "expired"),
):
    ANTONYMS[_a], ANTONYMS[_b] = _b, _a

_SUFFIXES = ("ational", "ations", "ation", "ings", "ing", "edly", "ied", "ies", "ed", "es", "ly", "s", "y")


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude stem: one common suffix, then a final 'e', removed; stems keep 3+ letters."""
    if word.isdigit():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                continue
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) >= 4:
        word = word[:-1]
    return word


def canon(word: str) -> str:
    """The word a synonym stands for ("automobile" -> "car"), else `word`."""
    return _SYNONYMS.get(word, word)


TOKEN_RE = re.compile(r"[a-z0-9]+(?:\^[23])?")


def clause_tokens(text: str) -> list[str]:
    """Word tokens, with punctuation and clause words ("but", "however", ...) as `BOUNDARY`."""
    out: list[str] = []
    for match in _CLAUSE_RE.finditer(text):
        token = match.group()
        if not token[0].isalnum() or token in _CLAUSE_WORDS:
            out.append(BOUNDARY)
        else:
            out.append(token)
    return out


def negated(tokens: list[str], at: int, window: int = 4) -> bool:
    """Whether the word at `at` is negated: an odd number of negators among the `window` words before
    it, looking back no further than a clause boundary or a preposition ("not solid at room ..."),
    except a preposition right after a negator, which the negator governs ("not in stock", "not for
    sale")."""
    flips = 0
    for k in range(at - 1, max(-1, at - 1 - window), -1):
        if tokens[k] == BOUNDARY:
            break
        if tokens[k] in PREPOSITIONS and not (k > 0 and tokens[k - 1] in NEGATORS):
            break
        if tokens[k] in NEGATORS:
            flips += 1
    return flips % 2 == 1


def said_plainly(tokens: list[str], word: str) -> bool:
    """Whether clause tokens have `word` at least once not negated (`negated`): "not expired" does
    not say "expired"."""
    return any(token == word and not negated(tokens, i) for i, token in enumerate(tokens))


MAX_COMPARISONS = 20  # "than" comparisons read from a text


def comparisons(tokens: list[str]) -> list[tuple[str, list[str], list[str]]]:
    """(comparative, words before it, words after "than") of each "X <comparative> than Y" of clause
    tokens, both sides within the clause and without stopwords ("The Earth is larger than the Sun."
    gives ("larger", ["earth"], ["sun"]); "more massive than" gives "massive"). A clause with a
    negator before the comparative ("Nothing is larger than the Sun") is left out: its order says
    the opposite. The first MAX_COMPARISONS."""
    out: list[tuple[str, list[str], list[str]]] = []
    for i, token in enumerate(tokens):
        if token != "than" or i == 0 or tokens[i - 1] == BOUNDARY:
            continue
        start = i - 1
        while start > 0 and tokens[start - 1] != BOUNDARY:
            start -= 1
        end = i + 1
        while end < len(tokens) and tokens[end] != BOUNDARY:
            end += 1
        before = tokens[start : i - 1]
        if any(t in NEGATORS for t in before):
            continue
        out.append(
            (
                tokens[i - 1],
                [t for t in before if t not in STOPWORDS],
                [t for t in tokens[i + 1 : end] if t not in STOPWORDS],
            )
        )
        if len(out) >= MAX_COMPARISONS:
            break
    return out


def leading_verdict(tokens: list[str]) -> str | None:
    """The verdict "yes" or "no" that one of the first three clause tokens states, else None."""
    for token in [t for t in tokens if t != BOUNDARY][:3]:
        if token in ("yes", "yeah", "yep", "oui", "ja", "sim"):
            return "yes"
        if token in ("no", "nope", "non", "nein", "nao"):
            return "no"
    return None


def plain_words(norm: str) -> list[str]:
    """The word tokens of normalised text without articles: what a normalised match compares."""
    return [w for w in TOKEN_RE.findall(norm) if w not in ARTICLES]


def blank(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """`text` with the characters of each span replaced by blanks (positions kept)."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)
