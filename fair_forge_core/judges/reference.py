"""The built-in offline judge: a LangChain chat model that grades by rules, not by a model.

`ReferenceJudge` is a genuine `BaseChatModel`, so the judge path (prompt, structured
output or markers, parsing, retries) is the same for it as for Groq or OpenAI. It
reads the turn with `parse_judge_request` from the last human message and grades it
with `score_answer`, a pure, deterministic function of (query, answer, ground truth):
standard library only, no model files, no network, about a millisecond per turn
(bounded for long texts: see "Bounded work" below).

Reply formats
-------------
- Tools bound (`bind_tools`, which the base `with_structured_output` uses; the base
  class ignores its `method` argument, so "json_mode" and "json_schema" take the same
  path): an `AIMessage` with one tool call named after the bound tool (the tool whose
  parameters have a `score` field, else the one `tool_choice` names, else the first),
  args `{"score": float, "reasoning": str}`.
- No tools: marker mode, the text `<bos>{json}<eos>`. The markers are read from the
  human message's final instruction line ("written between X and Y, ..."); when that
  line is absent the defaults ```` ```json ```` and ```` ``` ```` are used. The line is
  split at its last " and ", so an end marker that itself contains " and " is misread.
- No judge data in the last human message: a reply *without* a score (plain text,
  no tool call) that says so. The caller's parser then records a parse failure,
  exactly as for a model that answers off-format; nothing is scored 0.0 by mistake.

Scoring rules (`score_answer`), first decisive rule wins
--------------------------------------------------------
Text is normalised first: Unicode NFKC, accents stripped, casefolded, curly quotes
straightened, contractions expanded ("isn't" -> "is not", "can't" -> "can not"), a few
aliases folded ("united states" -> "usa", "world war ii" -> "ww2").

1. Empty answer -> 0.0. Empty ground truth -> 0.0 (nothing to grade against).
2. Normalised match (same words once punctuation and the articles a/an/the are
   dropped) -> 1.0.
3. Refusal ("I can't help", "I don't know", "I'm unable to", "as an AI", ...) that
   does not also state the ground truth's facts -> 0.1. A hard refusal phrase next to
   all the facts counts as hedging (cap 0.5). Skipped when the ground truth itself
   reads like a refusal ("unknown", "cannot be determined").
4. Wrong number -> 0.15: a number the ground truth requires is absent from the answer
   and the answer states a comparable number instead (one that matches no ground
   truth number, is not just repeated from the question, and is not a weak number
   word such as a lone "one", "first", "second"). Numbers are read from digits
   ("1,000", "3.14", "-5", "21st", "$20"), number words ("eight", "twenty-five",
   "one hundred and five", "a dozen", "1.5 million", spoken years "nineteen twelve")
   and carry their unit when one follows; "8 minutes and 20 seconds" or "5 feet 11
   inches" is one quantity. Digit runs longer than 40 are ignored. Two numbers match
   when
   - they are equal (`1,000` = `1000` = "one thousand", `1.5 million` = `1,500,000`);
   - the less precise one has decimals and the other rounds to it (`3.14` ~ `3.14159`;
     `1.5 million` ~ `1,520,000`); an integer is never rounded (`1999` != `2000`)
     unless it is marked approximate and round: "about 8 billion" ~ `8.1 billion`,
     "about 300,000" ~ `299,792` (within half its last significant place and 5 %;
     "about" needs a scale word or two trailing zeros, so "about 20" != `24`);
   - percentages: `25%` = "25 percent" = "25 per cent" = a bare `25` = a bare fraction
     `0.25` (a percentage on one side and a plain decimal on the other are read as
     the same share);
   - units of one dimension are converted (length, mass, time, volume, area, speed,
     temperature) and compared within 1 % (0.6 K for temperatures): `5 km` = `5000 m`,
     `100 °C` = `212 °F`. Different currencies or different dimensions never match.
     A unit on one side only does not prevent a match.
5. Contradiction -> 0.1: the answer opens with the opposite yes/no of the ground
   truth; or a term both texts share is negated ("not", "never", "no", "zero", ...
   within the four words before it, in the same clause, not across a preposition) in
   one and not the other (one answer occurrence with the right polarity suffices); or
   the answer uses the antonym of a ground-truth term it does not itself contain
   (true/false, increase/decrease, before/after, ...).
6. Key-term coverage. Key facts are the ground truth's required numbers and its
   content terms (stopwords, yes/no and negators dropped) that are not already in the
   question - echoing the question proves nothing. If no key fact is left the
   question's terms are used after all (unless the ground truth is a bare yes/no
   verdict). A term is found when the answer has it exactly, with the same crude
   stem ("cities"/"city", "discovered"/"discovery"), through a small synonym list, or
   as the same word with another common suffix ("photosynthesis"/"photosynthetic");
   it is found with a typo when an answer word is within Damerau-Levenshtein distance
   1 (terms of 5+ letters) or 2 (8+ letters, lengths within 1). A stem or suffix
   variant one edit away from a term of 5+ letters is a typo too, unless the extra
   letter is a regular ending: plural "s" ("planet"/"planets", but "Paris"/"Pariss"),
   past "d" after "e" ("create"/"created"), demonym "n" after "a" ("Korea"/"Korean");
   so "Pariss", "Berlinn", "Franc" (for "France") and "German" (for "Germany") are
   capped as one typo (0.7, still a pass). A run of capitalised
   words in the ground truth ("William Shakespeare", "Leonardo da Vinci", "Pacific
   Ocean") is one fact, found when any distinctive word of it is found (not a
   particle like "da" nor a generic word like "Ocean"), unless every occurrence
   follows another capitalised name absent from the ground truth ("Theodore
   Roosevelt" for "Franklin D. Roosevelt"). Then:
   - all found, no typo -> 0.95 (right and complete, worded differently or verbose);
   - yes/no verdict agrees but supporting facts are missing -> 0.8 + 0.15 x coverage;
   - every number and proper name of the ground truth present (there is at least one;
     a proper name is a word capitalised other than at a sentence start), only plain
     words missing, at most one or half of them -> 0.7 + 0.2 x share of plain words
     found (rubric: right with a minor flaw - "I have refunded $59.90" for "A full
     refund of $59.90 was issued");
   - some missing -> 0.3 + 0.3 x coverage (0.3-0.6, rubric's completeness cap);
   - none found -> 0.1 (wrong or off-topic);
   - one typo caps at 0.7, two or more at 0.5;
   - hedging ("not sure", "maybe", "perhaps", "either", ...) absent from the ground
     truth caps at 0.6;
   - hedging between numbers caps at 0.6: the answer offers explicit alternatives -
     "X or Y" (also "or maybe/perhaps/possibly"), "X/Y" (values within a factor of 2,
     not a date "7/4/1776" nor "24/7"), "between X and Y" - one of which matches a
     required number while another contradicts it (not a weak number word, matches
     no ground-truth number, not repeated from the question, no other unit than the
     matching one): "41 or 42" for "42". Numbers merely listed side by side ("21°C in
     Lisbon and 25°C in Madrid", "270 US dollars at a rate of 1.08") and restatements
     in another unit ("100 °C, or 212 °F") are not alternatives.
   With no key fact at all (ground truth "Yes", "No", "It is not."), the verdict is
   compared -> 0.95 when the answer opens with the same yes/no; 0.9 when it has no
   yes/no but restates terms of the ground truth with the same polarity (rule 5 found
   no flip) or, sharing no term, its polarity (any negator = "no") agrees.

Known limits: no real paraphrase understanding (synonyms beyond the small list are
missed: "how hot or cold" for "temperature" fails), a wrong extra claim next to the
right fact is not detected ("Canberra, also the largest city"), nor a reversed
comparison or order ("the Earth is larger than the Sun" contains "Sun"), fractions and
"half"/"quarter" are not read as numbers, a wrong entity one letter away from the
right one ("Venus"/"Venue") passes as a typo. Terms of four letters or fewer get no
typo tolerance, so "Iran"/"Iraq" is a wrong fact, not a typo (and "Marrs" is not found
for "Mars"); a dropped final "s" reads as a singular ("Pari" for "Paris" passes). A hedge
listed with commas only ("41, 42" without "or") is not seen.

Bounded work
------------
Scoring is linear in the length of the texts: every step is a single pass, a set or
dict look-up, or bounded by these caps (each text field may hold 100,000 characters):
- numbers: the first `MAX_NUMBERS` (200) distinct numbers of each text are compared
  (at most 200 x 200 pairs); a ground-truth number first stated after that is ignored,
  an answer number after that is not seen. `MAX_ALTERNATIVES` (50) alternative pairs.
- key terms: the first `MAX_TERMS` (200) of the ground truth are looked for.
- typos: only among the first `MAX_TYPO_WORDS` (1,000) distinct answer words of 4 to
  `MAX_TYPO_LEN` (30) letters; longer terms get no typo tolerance. Candidates come from
  indexes (symmetric deletion of one or two letters; three-letter pieces by position
  for terms of 15+ letters), never from comparing every term with every word.
Measured: about 0.3 s for a 100,000-character answer and ground truth (up to 0.6 s
with a 100,000-character query too, for adversarial texts), against 50 s before the
caps; at most about 10 ms (number-dense texts; typically well under 1 ms) for a judge
message of up to `INLINE_MAX_CHARS` (1,000) characters. `_agenerate` scores such short
turns inline and longer ones with `asyncio.to_thread` (about 0.1 ms extra), so the event
loop is never blocked for long and a caller's `asyncio.wait_for` timeout can fire.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from fair_forge_core.judges.prompt import parse_judge_request

__all__ = ["ReferenceJudge", "score_answer"]

DEFAULT_BOS = "```json"
DEFAULT_EOS = "```"

# Score of each band the rules produce.
EXACT = 1.0
VERBOSE = 0.95
VERDICT_ONLY = 0.9
TYPO_CAP = 0.7
TYPOS_CAP = 0.5
HEDGE_CAP = 0.6
REFUSAL_HEDGE_CAP = 0.5
PARTIAL_BASE, PARTIAL_SPAN = 0.3, 0.3
VERDICT_BASE, VERDICT_SPAN = 0.8, 0.15
WORDING_BASE, WORDING_SPAN = 0.7, 0.2
WRONG_NUMBER = 0.15
CONTRADICTION = 0.1
REFUSAL = 0.1
NOTHING_FOUND = 0.1

# Work bounds: what one turn may look at, whatever the size of its texts (module docstring,
# "Bounded work").
MAX_NUMBERS = 200  # distinct numbers compared per text
MAX_TERMS = 200  # key terms of the ground truth looked for
MAX_TYPO_WORDS = 1000  # distinct answer words a misspelling is looked for among
MAX_TYPO_LEN = 30  # longer terms and words get no typo tolerance
MAX_ALTERNATIVES = 50  # pairs of explicit alternatives ("41 or 42") examined in the answer
INLINE_MAX_CHARS = 1000  # `_agenerate` scores a longer judge message in a worker thread

# --------------------------------------------------------------------------- normalising

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
    )
)


def _normalise(text: str) -> str:
    """Casefolded, accent-free, contraction-expanded text; punctuation kept."""
    for sup, repl in _SUPERSCRIPTS.items():
        text = text.replace(sup, repl)
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    text = text.casefold()
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    for pattern, repl in _ALIASES:
        text = pattern.sub(repl, text)
    return text


def _normalise_each(words: Sequence[str]) -> list[str]:
    """`_normalise` of each word, in one pass over them all (a NUL keeps them apart)."""
    if not words:
        return []
    joined = " \0 ".join(w.replace("\0", " ") for w in words)
    return [part.strip() for part in _normalise(joined).split("\0")]


def _wordlist(text: str) -> list[str]:
    return text.split()


_CLAUSE_RE = re.compile(r"[a-z0-9]+|[.,;:!?()\[\]]|--|-\s|\s-")
_ARTICLES = frozenset({"a", "an", "the"})
_CLAUSE_WORDS = frozenset({"but", "however", "although", "though", "whereas", "while", "yet"})
_BOUNDARY = "|"
_PREPOSITIONS = frozenset(
    _wordlist(
        "at in on from of to with for by into onto over under about between among through throughout "
        "during after before since until within without near across along toward towards via per"
    )
)

_STOPWORDS = frozenset(
    _wordlist(
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
_NEGATORS = frozenset({"not", "no", "never", "none", "nothing", "nobody", "nowhere", "neither", "nor", "zero"})

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

_ANTONYMS: dict[str, str] = {}
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
):
    _ANTONYMS[_a], _ANTONYMS[_b] = _b, _a

_SUFFIXES = ("ational", "ations", "ation", "ings", "ing", "edly", "ied", "ies", "ed", "es", "ly", "s", "y")


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
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


def _canon(word: str) -> str:
    return _SYNONYMS.get(word, word)


# --------------------------------------------------------------------------- numbers

_UNIT_DEFS: dict[str, tuple[str | None, float | None, tuple[str, ...]]] = {
    # canonical: (dimension, factor to the dimension's base unit, aliases)
    "mm": ("length", 0.001, ("mm", "millimeter", "millimeters", "millimetre", "millimetres")),
    "cm": ("length", 0.01, ("cm", "centimeter", "centimeters", "centimetre", "centimetres")),
    "m": ("length", 1.0, ("m", "meter", "meters", "metre", "metres")),
    "km": ("length", 1000.0, ("km", "kilometer", "kilometers", "kilometre", "kilometres")),
    "inch": ("length", 0.0254, ("inch", "inches")),
    "ft": ("length", 0.3048, ("ft", "foot", "feet")),
    "yd": ("length", 0.9144, ("yd", "yard", "yards")),
    "mi": ("length", 1609.344, ("mi", "mile", "miles")),
    "mg": ("mass", 1e-6, ("mg", "milligram", "milligrams")),
    "g": ("mass", 0.001, ("g", "gram", "grams", "gramme", "grammes")),
    "kg": ("mass", 1.0, ("kg", "kgs", "kilogram", "kilograms", "kilo", "kilos")),
    "tonne": ("mass", 1000.0, ("tonne", "tonnes", "ton", "tons", "metric ton", "metric tons")),
    "lb": ("mass", 0.45359237, ("lb", "lbs", "pound", "pounds")),
    "oz": ("mass", 0.028349523125, ("oz", "ounce", "ounces")),
    "ms": ("time", 0.001, ("ms", "millisecond", "milliseconds")),
    "s": ("time", 1.0, ("s", "sec", "secs", "second", "seconds")),
    "min": ("time", 60.0, ("min", "mins", "minute", "minutes")),
    "h": ("time", 3600.0, ("h", "hr", "hrs", "hour", "hours")),
    "day": ("time", 86400.0, ("day", "days")),
    "week": ("time", 604800.0, ("week", "weeks")),
    "month": ("time", 2629800.0, ("month", "months")),
    "year": ("time", 31557600.0, ("year", "years", "yr", "yrs")),
    "ml": ("volume", 0.001, ("ml", "milliliter", "milliliters", "millilitre", "millilitres")),
    "l": ("volume", 1.0, ("l", "liter", "liters", "litre", "litres")),
    "gal": ("volume", 3.785411784, ("gal", "gallon", "gallons")),
    "m2": (
        "area",
        1.0,
        ("m2", "m^2", "sq m", "square meter", "square meters", "square metre", "square metres"),
    ),
    "km2": (
        "area",
        1e6,
        (
            "km2",
            "km^2",
            "sq km",
            "square kilometer",
            "square kilometers",
            "square kilometre",
            "square kilometres",
        ),
    ),
    "mi2": ("area", 2589988.110336, ("mi2", "mi^2", "sq mi", "square mile", "square miles")),
    "ha": ("area", 1e4, ("ha", "hectare", "hectares")),
    "acre": ("area", 4046.8564224, ("acre", "acres")),
    "km/h": ("speed", 1 / 3.6, ("km/h", "kmh", "kph", "kilometers per hour", "kilometres per hour")),
    "mph": ("speed", 0.44704, ("mph", "miles per hour")),
    "m/s": ("speed", 1.0, ("m/s", "meters per second", "metres per second")),
    "degc": ("temperature", None, ("°c", "° c", "degrees celsius", "degree celsius", "celsius", "degrees c")),
    "degf": (
        "temperature",
        None,
        ("°f", "° f", "degrees fahrenheit", "degree fahrenheit", "fahrenheit", "degrees f"),
    ),
    "kelvin": ("temperature", None, ("kelvin", "kelvins")),
    "deg": (None, None, ("°", "degrees", "degree")),
    "%": ("percent", 1.0, ("%", "percent", "pct", "percentage points")),
    "usd": ("currency", None, ("usd", "dollar", "dollars", "us dollars")),
    "eur": ("currency", None, ("eur", "euro", "euros")),
    "gbp": ("currency", None, ("gbp", "pounds sterling", "sterling")),
    "jpy": ("currency", None, ("jpy", "yen")),
}
_UNIT_OF_ALIAS = {alias: unit for unit, (_, _, aliases) in _UNIT_DEFS.items() for alias in aliases}
_UNIT_RE = re.compile(
    r"(\s*)(" + "|".join(re.escape(a) for a in sorted(_UNIT_OF_ALIAS, key=len, reverse=True)) + r")(?![a-z0-9])"
)
_CURRENCY_SIGNS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy"}
_SCALES = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9}
_SCALE_RE = re.compile(r"\s*(hundred|thousand|million|billion|trillion|bn)(?![a-z])")
_DIGITS_RE = re.compile(
    r"(?<![\w.^])(?:(?P<cur>[$€£¥])\s?)?(?P<neg>-)?(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<dec>\d+))?"
    r"(?P<ord>st|nd|rd|th)?"
)

_UNITS_W = {
    w: i
    for i, w in enumerate(
        _wordlist(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen"
        )
    )
}
_TENS_W = {w: 10 * (i + 2) for i, w in enumerate(_wordlist("twenty thirty forty fifty sixty seventy eighty ninety"))}
_ORDINALS_W = {
    w: i + 1
    for i, w in enumerate(
        _wordlist(
            "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
            "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth"
        )
    )
}
_ORDINALS_W.update(
    {
        w: 10 * (i + 2)
        for i, w in enumerate(
            _wordlist("twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth")
        )
    }
)
_WEAK_WORDS = frozenset({"one", "first", "second"})
_NUMBER_WORDS = frozenset(_UNITS_W) | frozenset(_TENS_W) | frozenset(_ORDINALS_W) | {"dozen", *_SCALES}
_BIG_WORDS = frozenset({"hundred", "thousand", "million", "billion", "trillion", "dozen"})
_WORD_TOKEN_RE = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class _Num:
    """One number read from a text."""

    value: float
    quantum: float  # the value of one step in the last written digit
    decimals: int  # digits written after the point (of the mantissa, before a scale word)
    unit: str | None
    weak: bool  # a lone "one"/"first"/"second": may match, never counts as a different number
    start: int
    end: int
    approx: float = 0.0  # rounding step of an explicitly approximate round number ("about 8 billion")

    @property
    def dim(self) -> str | None:
        return _UNIT_DEFS[self.unit][0] if self.unit else None

    def describe(self, text: str) -> str:
        return text[self.start : self.end].strip()


def _read_unit(text: str, at: int) -> tuple[str | None, int]:
    """The unit right after position `at` (blanks allowed before it), and where it ends."""
    match = _UNIT_RE.match(text, at)
    if match is None:
        return None, at
    space, alias = match.group(1), match.group(2)
    if alias == "s" and not space:  # "1990s" is a decade, not seconds
        return None, at
    return _UNIT_OF_ALIAS[alias], match.end()


def _numbers(text: str) -> list[_Num]:
    """The numbers in normalised `text`, digits and words, with their units."""
    found: list[_Num] = []
    for match in _DIGITS_RE.finditer(text):
        if len(match.group("int")) > 40 or len(match.group("dec") or "") > 40:
            continue  # not a fact anyone states; and 10 ** 400 would overflow
        mantissa = float(match.group("int").replace(",", "") + ("." + match.group("dec") if match.group("dec") else ""))
        decimals = len(match.group("dec") or "")
        end = match.end()
        scale = 1.0
        scale_match = _SCALE_RE.match(text, end)
        if scale_match and not match.group("ord"):
            scale = _SCALES[scale_match.group(1)]
            end = scale_match.end()
        value = mantissa * scale * (-1.0 if match.group("neg") else 1.0)
        unit = _CURRENCY_SIGNS.get(match.group("cur") or "")
        if unit is None and not match.group("ord"):
            unit, end = _read_unit(text, end)
        approx = 0.0
        if not decimals and _APPROX_RE.search(text, max(0, match.start() - 16), match.start()):
            digits = match.group("int").replace(",", "")
            zeros = len(digits) - len(digits.rstrip("0"))
            if scale > 1 or zeros >= 2:
                approx = scale * 10.0**zeros
        found.append(_Num(value, scale * 10.0**-decimals, decimals, unit, False, match.start(), end, approx))
    found.extend(_word_numbers(text))
    return _compound(sorted(found, key=lambda n: n.start), text)


_APPROX_RE = re.compile(r"(?:about|around|approximately|approx\.?|roughly|nearly|almost|circa|some|~|≈)\s*$")
_COMPOUND_GAP_RE = re.compile(r"\s*(?:,\s*)?(?:and\s+)?")


def _compound(numbers: list[_Num], text: str) -> list[_Num]:
    """Merge "8 minutes and 20 seconds", "5 feet 11 inches" into one quantity in the smaller unit."""
    out: list[_Num] = []
    for num in numbers:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.unit
            and num.unit
            and prev.dim == num.dim
            and prev.dim in ("time", "length", "mass")
            and (_UNIT_DEFS[prev.unit][1] or 0) > (_UNIT_DEFS[num.unit][1] or 0)
            and _COMPOUND_GAP_RE.fullmatch(text, prev.end, num.start)
        ):
            factor = _UNIT_DEFS[num.unit][1] or 1.0
            value = (_to_base(prev) + _to_base(num)) / factor
            out[-1] = _Num(value, num.quantum, num.decimals, num.unit, False, prev.start, num.end)
        else:
            out.append(num)
    return out


def _word_numbers(text: str) -> list[_Num]:
    """Numbers written in words: "eight", "twenty-five", "one hundred and five", "a dozen"."""
    tokens = list(_WORD_TOKEN_RE.finditer(text))
    words = [t.group() for t in tokens]

    def adjacent(k: int) -> bool:  # tokens k-1 and k are separated by blanks or a hyphen only
        return re.fullmatch(r"[\s-]*", text[tokens[k - 1].end() : tokens[k].start()]) is not None

    found: list[_Num] = []
    i = 0
    while i < len(tokens):
        j, current, total, last, ordinal, used, last_used = i, 0.0, 0.0, "start", False, 0, i
        if words[i] == "a":
            if i + 1 < len(words) and words[i + 1] in _BIG_WORDS and adjacent(i + 1):
                current, last, j = 1.0, "unit", i + 1
            else:
                i += 1
                continue
        while j < len(words) and (j == i or adjacent(j)):
            w = words[j]
            if (
                w == "and"
                and last in ("hundred", "scale")
                and j + 1 < len(words)
                and (words[j + 1] in _UNITS_W or words[j + 1] in _TENS_W)
            ):
                j += 1
                continue
            if w in _UNITS_W and (last in ("start", "hundred", "scale") or (last == "tens" and 0 < _UNITS_W[w] < 10)):
                current += _UNITS_W[w]
                last = "unit"
            elif w in _ORDINALS_W and (
                last in ("start", "hundred", "scale") or (last == "tens" and _ORDINALS_W[w] < 10)
            ):
                current += _ORDINALS_W[w]
                ordinal = True
            elif w in _TENS_W and last in ("start", "hundred", "scale"):
                current += _TENS_W[w]
                last = "tens"
            elif w == "hundred" and last in ("unit", "tens"):
                current *= 100
                last = "hundred"
            elif w in _SCALES and w != "hundred" and last in ("unit", "tens", "hundred"):
                total += current * _SCALES[w]
                current, last = 0.0, "scale"
            elif w == "dozen" and last in ("unit", "tens"):
                current *= 12
                last = "scale"
            else:
                break
            used += 1
            last_used = j
            j += 1
            if ordinal:
                break
        if used == 0:
            i += 1
            continue
        end = tokens[last_used].end()
        weak = used == 1 and words[i] in _WEAK_WORDS
        unit = None
        if not ordinal:
            unit, end = _read_unit(text, end)
        found.append(_Num(total + current, 1.0, 0, unit, weak, tokens[i].start(), end))
        i = last_used + 1
    return _spoken_years(found, text)


def _spoken_years(numbers: list[_Num], text: str) -> list[_Num]:
    """Read "nineteen twelve" and "twenty twenty" as years: a one-word 10-20 followed by 10-99."""
    out: list[_Num] = []
    for num in numbers:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.unit is None
            and 10 <= prev.value <= 20
            and " " not in text[prev.start : prev.end].strip()
            and 10 <= num.value <= 99
            and not num.weak
            and text[prev.end : num.start].isspace()
        ):
            out[-1] = _Num(prev.value * 100 + num.value, 1.0, 0, num.unit, False, prev.start, num.end)
        else:
            out.append(num)
    return out


def _to_base(num: _Num) -> float:
    unit = num.unit or ""
    if unit == "degc":
        return num.value + 273.15
    if unit == "degf":
        return (num.value - 32.0) * 5.0 / 9.0 + 273.15
    factor = _UNIT_DEFS[unit][1] if unit in _UNIT_DEFS else None
    return num.value * (factor if factor is not None else 1.0)


def _close(x: _Num, y: _Num, x_scale: float = 1.0) -> bool:
    """Equal; or equal once the more precise number is rounded to the decimals the coarser one
    writes; or within half a rounding step (and 5 %) of an explicitly approximate round number."""
    xv, xq = x.value * x_scale, x.quantum * x_scale
    if abs(xv - y.value) <= 1e-9 * max(1.0, abs(xv), abs(y.value)):
        return True
    coarse_q, coarse_d = (xq, x.decimals) if xq >= y.quantum else (y.quantum, y.decimals)
    if coarse_d >= 1 and abs(xv - y.value) <= coarse_q / 2 * (1 + 1e-9):
        return True
    step = max(x.approx * x_scale, y.approx)
    diff = abs(xv - y.value)
    return step > 0 and diff < step / 2 and diff <= 0.05 * max(abs(xv), abs(y.value))


def _numbers_match(g: _Num, a: _Num) -> bool:
    g_dim, a_dim = g.dim, a.dim
    if (g_dim == "percent" and a_dim is None) or (a_dim == "percent" and g_dim is None):
        pct, bare = (g, a) if g_dim == "percent" else (a, g)
        return _close(pct, bare) or _close(pct, bare, 0.01)
    if g_dim is not None and a_dim is not None:
        if g_dim != a_dim:
            return False
        if g.unit != a.unit:
            if g_dim == "currency":
                return False
            x, y = _to_base(g), _to_base(a)
            if g_dim == "temperature":
                return abs(x - y) <= 0.6
            return abs(x - y) <= 0.01 * max(abs(x), abs(y)) + 1e-12
    return _close(g, a)


def _distinct_numbers(numbers: Sequence[_Num]) -> list[_Num]:
    """The first MAX_NUMBERS numbers that differ in anything matching looks at (first occurrence kept)."""
    out: dict[tuple[float, float, int, str | None, bool, float], _Num] = {}
    for num in numbers:
        key = (num.value, num.quantum, num.decimals, num.unit, num.weak, num.approx)
        if key not in out:
            out[key] = num
            if len(out) >= MAX_NUMBERS:
                break
    return list(out.values())


def _blank(text: str, spans: Sequence[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


# --------------------------------------------------------------------------- phrases

_REFUSAL_HARD = re.compile(
    r"\bi (?:can not|am unable to|am not able to|will not|would rather not|refuse to) "
    r"(?:help|answer|provide|assist|say|share|determine|comply|tell|give|respond)"
    r"|\bi do not (?:know|have (?:any |enough |that |the )?(?:information|data|access|knowledge))"
    r"|\b(?:i have )?no idea\b|\bi am not aware\b|\bunable to (?:answer|help|provide|assist)"
    r"|\bi have no (?:information|data|knowledge)\b"
)
_REFUSAL_SOFT = re.compile(
    r"\bas an ai\b|\bas a language model\b|\bas an artificial intelligence\b|\bi am sorry\b"
    r"|\bi apologi[sz]e\b|\bsorry\b"
)
_GT_UNKNOWN = re.compile(
    r"\bunknown\b|\bnot known\b|\bcan not be (?:determined|known|answered)\b|\bno (?:information|data)\b"
    r"|\bdo not know\b|\bnot (?:enough|sufficient) information\b|\bunanswerable\b"
)
_HEDGES = re.compile(
    r"\bnot (?:entirely |completely |totally |100 percent )?(?:sure|certain|positive)\b|\bi guess\b"
    r"|\bmaybe\b|\bperhaps\b|\bpossibly\b|\bmight be\b|\bcould be\b|\beither\b|\bif i recall\b"
    r"|\bhard to say\b|\bi am not confident\b|\bunsure\b"
)
_TOKEN_RE = re.compile(r"[a-z0-9]+(?:\^[23])?")


def _clause_tokens(text: str) -> list[str]:
    out: list[str] = []
    for match in _CLAUSE_RE.finditer(text):
        token = match.group()
        if not token[0].isalnum() or token in _CLAUSE_WORDS:
            out.append(_BOUNDARY)
        else:
            out.append(token)
    return out


def _negated(tokens: list[str], at: int, window: int = 4) -> bool:
    """Whether the word at `at` is negated: an odd number of negators among the `window` words before
    it, looking back no further than a clause boundary or a preposition ("not solid at room ...")."""
    flips = 0
    for k in range(at - 1, max(-1, at - 1 - window), -1):
        if tokens[k] == _BOUNDARY or tokens[k] in _PREPOSITIONS:
            break
        if tokens[k] in _NEGATORS:
            flips += 1
    return flips % 2 == 1


def _leading_verdict(tokens: list[str]) -> str | None:
    for token in [t for t in tokens if t != _BOUNDARY][:3]:
        if token in ("yes", "yeah", "yep"):
            return "yes"
        if token in ("no", "nope"):
            return "no"
    return None


def _osa_distance(a: str, b: str, limit: int) -> int:
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
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass
class _Text:
    """One normalised text: its numbers, its words and its clause tokens."""

    norm: str
    all_numbers: list[_Num]  # every number, in text order
    numbers: list[_Num]  # the first MAX_NUMBERS distinct ones: those that are compared
    words: list[str]  # all word tokens, numbers blanked out
    clauses: list[str]  # clause tokens, numbers blanked out

    @classmethod
    def of(cls, raw: str, norm: str | None = None) -> _Text:
        norm = _normalise(raw) if norm is None else norm
        numbers = _numbers(norm)
        # "zero" stays: it is also a negator ("zero snakes").
        blanked = _blank(norm, [(n.start, n.end) for n in numbers if norm[n.start : n.end].strip() != "zero"])
        return cls(norm, numbers, _distinct_numbers(numbers), _TOKEN_RE.findall(blanked), _clause_tokens(blanked))

    @property
    def content(self) -> list[str]:
        """Content words in order, one per stem."""
        seen: set[str] = set()
        out: list[str] = []
        for word in self.words:
            if word in _STOPWORDS or word.isdigit() or len(word) < 2 or word in _NUMBER_WORDS:
                continue
            stem = _stem(word)
            if stem not in seen:
                seen.add(stem)
                out.append(word)
        return out


def _plain_words(norm: str) -> list[str]:
    return [w for w in _TOKEN_RE.findall(norm) if w not in _ARTICLES]


_OR_GAP_RE = re.compile(r"\s*,?\s*or(?:\s+(?:maybe|perhaps|possibly))?\s+")
_SLASH_GAP_RE = re.compile(r"\s*/\s*")
_AND_GAP_RE = re.compile(r"\s+and\s+")
_BETWEEN_RE = re.compile(r"\bbetween\s+$")


def _alternatives(norm: str, x: _Num, y: _Num) -> bool:
    """Whether the consecutive numbers `x` and `y` are offered as alternatives (`_alternative_pairs`)."""
    if _OR_GAP_RE.fullmatch(norm, x.end, y.start):
        return True
    if _AND_GAP_RE.fullmatch(norm, x.end, y.start):
        return _BETWEEN_RE.search(norm, max(0, x.start - 10), x.start) is not None
    return (
        _SLASH_GAP_RE.fullmatch(norm, x.end, y.start) is not None
        and not norm[max(0, x.start - 2) : x.start].rstrip().endswith("/")
        and not norm[y.end : y.end + 2].lstrip().startswith("/")
        and min(x.value, y.value) > 0
        and max(x.value, y.value) <= 2 * min(x.value, y.value)
    )


def _alternative_pairs(text: _Text) -> list[tuple[_Num, _Num]]:
    """Numbers the answer offers as explicit alternatives: "X or Y" (also "or maybe/perhaps/possibly"),
    "X/Y" (values within a factor of 2, not part of a date like "7/4/1776" nor "24/7"), and
    "between X and Y"; the first MAX_ALTERNATIVES pairs of consecutive numbers."""
    pairs = []
    for x, y in zip(text.all_numbers, text.all_numbers[1:], strict=False):
        if _alternatives(text.norm, x, y):
            pairs.append((x, y))
            if len(pairs) >= MAX_ALTERNATIVES:
                break
    return pairs


def _number_hedge(a: _Text, g: _Text, required: Sequence[_Num], q_values: set[float]) -> tuple[_Num, _Num] | None:
    """(right, wrong) when the answer offers, as explicit alternatives (`_alternative_pairs`), a number
    the ground truth requires next to one of the same kind that contradicts it: "41 or 42" for "42".
    The wrong one is a number that is not weak, matches no number of the ground truth, is not
    repeated from the question, and has no other unit than the right one."""
    for pair in _alternative_pairs(a):
        for right, wrong in (pair, pair[::-1]):
            if (
                wrong.weak
                or wrong.value in q_values
                or (right.unit and wrong.unit and right.unit != wrong.unit)
                or not any(_numbers_match(n, right) for n in required)
                or any(_numbers_match(n, wrong) for n in g.numbers)
            ):
                continue
            return right, wrong
    return None


class _Occurrences:
    """Where each word (by stem) occurs among the raw answer's whitespace-separated words; built on
    first use, once per turn."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._words: list[str] = []
        self._tokens: list[list[str]] = []
        self._at: dict[str, list[int]] | None = None

    def _index(self) -> dict[str, list[int]]:
        if self._at is None:
            self._words = [m.group() for m in _RAW_WORD_RE.finditer(unicodedata.normalize("NFKC", self.raw))]
            distinct = list(dict.fromkeys(self._words))
            tokens_of = {w: _TOKEN_RE.findall(n) for w, n in zip(distinct, _normalise_each(distinct), strict=True)}
            self._at = {}
            for k, word in enumerate(self._words):
                tokens = tokens_of[word]
                self._tokens.append(tokens)
                for stem in dict.fromkeys(_stem(t) for t in tokens):
                    self._at.setdefault(stem, []).append(k)
        return self._at

    def other_name_before(self, member: str, run: list[str], g_words: set[str]) -> bool:
        """Whether every occurrence of `member` in the answer follows a capitalised word foreign to the
        ground truth - "Theodore Roosevelt" where the ground truth says "Franklin D. Roosevelt"."""
        positions = self._index().get(_stem(member), [])
        conflicts = 0
        for k in positions:
            if k == 0:
                continue
            prev, prev_tokens = self._words[k - 1], self._tokens[k - 1]
            if (
                prev[:1].isupper()
                and prev[-1] not in ".,;:!?"
                and prev_tokens
                and all(t not in _STOPWORDS and t not in g_words and t not in run for t in prev_tokens)
            ):
                conflicts += 1
        return bool(positions) and conflicts == len(positions)


# --------------------------------------------------------------------------- the scorer


def score_answer(query: str, answer: str, ground_truth: str) -> tuple[float, str]:
    """Score `answer` against `ground_truth` for `query`: (score in [0, 1], one-sentence reason).

    Pure and deterministic; the rules and their order are described in the module
    docstring. The reasoning names the rule that decided the score.
    """
    a_norm = _normalise(answer)
    if not _TOKEN_RE.search(a_norm):
        return 0.0, "Empty answer: there is nothing to grade."
    if not ground_truth.strip():
        return 0.0, "Empty ground truth: the answer cannot be graded against it."
    g_norm = _normalise(ground_truth)
    if _plain_words(a_norm) == _plain_words(g_norm):
        return EXACT, "Exact match with the ground truth after normalisation (rule: normalised match)."

    q, a, g = _Text.of(query), _Text.of(answer, a_norm), _Text.of(ground_truth, g_norm)

    # Required numbers: the ground truth's, minus those repeated from the question.
    q_values = {n.value for n in q.all_numbers}
    g_numbers = [n for n in g.numbers if n.value not in q_values]
    required = [n for n in g_numbers if not n.weak]

    # Key terms: the ground truth's content words not already in the question (the first MAX_TERMS).
    q_content = q.content
    q_stems = {_stem(w) for w in q_content} | {_stem(_canon(w)) for w in q_content}
    g_content = g.content
    key_terms = [w for w in g_content if _stem(w) not in q_stems and _stem(_canon(w)) not in q_stems]
    g_verdict = _leading_verdict(g.clauses)
    a_verdict = _leading_verdict(a.clauses)
    if not key_terms and not required:
        required = [n for n in g_numbers if n.weak]
    if not key_terms and not required and g_verdict is None:
        key_terms = list(g_content)  # only echoes left: use them rather than nothing
    key_terms = key_terms[:MAX_TERMS]

    # Find each fact in the answer. A multi-word name of the ground truth is one fact.
    groups = _fact_groups(key_terms, _name_runs(ground_truth))
    lexicon = _Lexicon(a.words)
    occurrences = _Occurrences(answer)
    g_words = set(g.words)
    facts_found = 0
    typos: list[tuple[str, str]] = []
    missing: list[str] = []
    names = _proper_nouns(ground_truth)
    n_named = n_named_missing = n_wording_missing = 0
    for group in groups:
        named = any(t in names for t in group)
        n_named += named
        how = {term: lexicon.find(term) for term in group}
        typos.extend((term, seen) for term, seen in how.items() if seen)
        heads = [t for t in group if t not in _GENERIC_NAME_WORDS and t not in _NAME_PARTICLES] or group
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
    found_numbers = [any(_numbers_match(n, x) for x in a.numbers) for n in required]
    missing_numbers = [n for n, found in zip(required, found_numbers, strict=True) if not found]
    n_facts = len(groups) + len(required)
    n_found = facts_found + sum(found_numbers)
    coverage = n_found / n_facts if n_facts else 1.0

    # 3. Refusals.
    if not _GT_UNKNOWN.search(g.norm):
        hard = _REFUSAL_HARD.search(a.norm)
        soft = _REFUSAL_SOFT.search(a.norm)
        refusal = hard if hard and coverage < 1.0 else soft if soft and n_facts and n_found == 0 else None
        if refusal:
            phrase = refusal.group()
            return (
                REFUSAL,
                f'The answer is a refusal ("{phrase}") and does not state the ground truth (rule: refusal).',
            )
    else:
        hard = None

    # 4. Wrong numbers.
    if missing_numbers:
        others = [
            x
            for x in a.numbers
            if not x.weak and x.value not in q_values and not any(_numbers_match(n, x) for n in g.numbers)
        ]
        for want in missing_numbers:
            rivals = [x for x in others if want.dim is None or x.dim is None or x.dim == want.dim]
            if rivals:
                return WRONG_NUMBER, (
                    f'The answer gives "{rivals[0].describe(a.norm)}" where the ground truth has '
                    f'"{want.describe(g.norm)}" (rule: wrong number).'
                )

    # 5. Contradictions.
    if g_verdict and a_verdict and g_verdict != a_verdict:
        return CONTRADICTION, (
            f'The answer says "{a_verdict}" where the ground truth says "{g_verdict}" (rule: contradiction).'
        )
    flipped, shared = _negation_flip(g, a)
    if flipped:
        return CONTRADICTION, (
            f'"{flipped}" is negated in one of the answer and the ground truth but not in the other (rule: negation).'
        )
    g_stems = {_stem(w) for w in g.words}
    for term in g_content:
        opposite = _ANTONYMS.get(term)
        if (
            opposite
            and _stem(term) not in lexicon.by_stem
            and opposite in lexicon.order
            and _stem(opposite) not in g_stems
        ):
            return CONTRADICTION, (
                f'The answer says "{opposite}" where the ground truth says "{term}" (rule: contradiction).'
            )

    # 6. Coverage.
    if n_facts == 0:
        g_polarity = g_verdict or ("no" if any(t in _NEGATORS for t in g.clauses) else "yes")
        if a_verdict == g_polarity:
            score, why = VERBOSE, f'The answer gives the same verdict "{a_verdict}" as the ground truth'
        elif a_verdict is None and shared:
            # The answer restates shared terms with the ground truth's polarity (no flip above).
            score, why = VERDICT_ONLY, "The answer restates the ground truth's claim with the same polarity"
        else:
            a_polarity = a_verdict or ("no" if any(t in _NEGATORS for t in a.clauses) else "yes")
            if a_polarity != g_polarity:
                return CONTRADICTION, (
                    f'The answer reads as "{a_polarity}" where the ground truth says "{g_polarity}" '
                    "(rule: contradiction)."
                )
            score, why = VERDICT_ONLY, f'The answer reads as "{a_polarity}" like the ground truth'
        why += " (rule: verdict)"
    elif coverage < 1.0 and g_verdict and a_verdict == g_verdict:
        score = VERDICT_BASE + VERDICT_SPAN * coverage
        why = f'The verdict "{a_verdict}" matches; {n_facts - n_found} of {n_facts} supporting facts missing'
        why += " (rule: verdict, coverage)"
    elif n_found == 0:
        what = ", ".join([*missing[:3], *(n.describe(g.norm) for n in missing_numbers[:2])])
        return (
            NOTHING_FOUND,
            f"The answer contains none of the ground truth's key facts ({what}) (rule: coverage).",
        )
    elif (
        coverage < 1.0
        and n_named + len(required) > 0
        and not n_named_missing
        and not missing_numbers
        and n_wording_missing <= max(1, (len(groups) - n_named) // 2)
    ):
        n_wording = len(groups) - n_named
        score = WORDING_BASE + WORDING_SPAN * (n_wording - n_wording_missing) / n_wording
        why = (
            "Every number and name of the ground truth is present; only wording differs "
            f"(missing {', '.join(missing[:3])}) (rule: coverage, minor flaw)"
        )
    elif coverage < 1.0:
        score = PARTIAL_BASE + PARTIAL_SPAN * coverage
        what = ", ".join([*missing[:3], *(n.describe(g.norm) for n in missing_numbers[:2])])
        why = f"Partly right: {n_found} of {n_facts} key facts found, missing {what} (rule: coverage)"
    else:
        score, why = (
            VERBOSE,
            "All key facts of the ground truth are present, worded differently or more verbosely",
        )
        why += " (rule: coverage)"

    if len(typos) == 1:
        term, seen = typos[0]
        if score > TYPO_CAP:
            score = TYPO_CAP
        why += f'; "{seen}" is a misspelling of "{term}" (rule: typo cap)'
    elif len(typos) > 1:
        if score > TYPOS_CAP:
            score = TYPOS_CAP
        why += f"; {len(typos)} key terms are misspelt (rule: typo cap)"
    hedge = _HEDGES.search(a.norm)
    if hedge and not _HEDGES.search(g.norm) and score > HEDGE_CAP:
        score = HEDGE_CAP
        why += f'; the answer hedges ("{hedge.group()}") (rule: hedge cap)'
    alternatives = _number_hedge(a, g, required, q_values) if score > HEDGE_CAP else None
    if alternatives:
        score = HEDGE_CAP
        right, wrong = alternatives
        why += (
            f'; the answer hedges between "{right.describe(a.norm)}" and "{wrong.describe(a.norm)}" '
            "(rule: number hedge)"
        )
    if hard and score > REFUSAL_HEDGE_CAP:
        score = REFUSAL_HEDGE_CAP
        why += f'; it also says "{hard.group()}" (rule: refusal hedge)'
    return round(score, 4), why + "."


_MORPH_TAILS = frozenset(
    _wordlist(
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


class _Lexicon:
    """The answer's words, indexed so that finding a term costs about the same whatever the answer's
    length: by stem and synonym, by suffix-variant base, and (for typos) by the strings left after
    deleting one or two letters (symmetric-delete search; candidates are then checked with
    `_osa_distance`)."""

    def __init__(self, words: Sequence[str]) -> None:
        self.order = {w: i for i, w in enumerate(dict.fromkeys(words))}  # distinct, first occurrence first
        self.by_stem: dict[str, list[str]] = {}
        for word in self.order:
            for key in dict.fromkeys((_stem(word), _stem(_canon(word)))):
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
            eligible = (w for w in self.order if w not in _STOPWORDS and 4 <= len(w) <= MAX_TYPO_LEN)
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
        variants = [*self.by_stem.get(_stem(term), ()), *self.by_stem.get(_stem(_canon(term)), ())]
        variants += [w for base in _morph_bases(term) for w in self._bases().get(base, ()) if _morph_variant(term, w)]
        slip = None
        for word in dict.fromkeys(variants):
            if len(term) >= 5 and not _inflection(term, word) and _osa_distance(term, word, 1) == 1:
                slip = slip or word
            else:
                return ""
        if slip is not None or len(term) < 5 or len(term) > MAX_TYPO_LEN:
            return slip
        for word in self._candidates(self._index(1), term, 1):
            if _osa_distance(term, word, 1) <= 1:
                return word
        if len(term) >= 8:
            for word in self._near_candidates(term):
                if abs(len(word) - len(term)) <= 1 and _osa_distance(term, word, 2) <= 2:
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


_GENERIC_NAME_WORDS = frozenset(
    _wordlist(
        "ocean sea river lake mount mountain mountains desert island islands bay gulf university college "
        "city state states republic kingdom empire war president king queen prince princess saint st sir "
        "dr mr mrs ms general company inc corporation north south east west new great"
    )
)
_NAME_PARTICLES = frozenset({"da", "de", "del", "der", "di", "du", "la", "le", "van", "von", "bin", "ibn", "al"})
_RAW_WORD_RE = re.compile(r"\S+")
_INITIAL_RE = re.compile(r"^[A-Z]\.$|^(?:Jr|Sr|St|Dr|Mr|Mrs|Ms)\.$")


def _name_runs(raw: str) -> list[list[str]]:
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
        elif current and core.lower() in _NAME_PARTICLES:
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
        words = [w for w in _TOKEN_RE.findall(_normalise(" ".join(run))) if w not in _STOPWORDS and len(w) > 1]
        if len(words) >= 2:
            out.append(words)
    return out


def _proper_nouns(raw: str) -> set[str]:
    """Normalised words written capitalised in `raw` other than at the start of a sentence."""
    cores: dict[str, None] = {}
    sentence_start = True
    for match in _RAW_WORD_RE.finditer(unicodedata.normalize("NFKC", raw)):
        word = match.group()
        core = word.lstrip("\"'([{“‘")
        if core[:1].isupper() and not sentence_start:
            cores[core] = None
        sentence_start = word.rstrip("\"')]}”’")[-1:] in (".", "!", "?", ":") and not _INITIAL_RE.match(core)
    return {t for norm in _normalise_each(list(cores)) for t in _TOKEN_RE.findall(norm)}


def _fact_groups(key_terms: list[str], runs: list[list[str]]) -> list[list[str]]:
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


def _negation_flip(g: _Text, a: _Text) -> tuple[str | None, int]:
    """(a content word both texts use that is negated in one and not in the other, or None; how many
    content words they share). The ground truth's first occurrence is compared with every occurrence
    in the answer: one with the same polarity is enough."""
    a_positions: dict[str, list[int]] = {}
    for i, token in enumerate(a.clauses):
        if token != _BOUNDARY and token not in _STOPWORDS:
            a_positions.setdefault(_stem(token), []).append(i)
    seen: set[str] = set()
    for i, token in enumerate(g.clauses):
        if token == _BOUNDARY or token in _STOPWORDS or token.isdigit():
            continue
        stem = _stem(token)
        if stem in seen or stem not in a_positions:
            continue
        seen.add(stem)
        want = _negated(g.clauses, i)
        if all(_negated(a.clauses, j) != want for j in a_positions[stem]):
            return token, len(seen)
    return None, len(seen)


# --------------------------------------------------------------------------- the chat model

# Greedy first group: the pair is split at the last " and ", so a start marker may contain " and "
# (an end marker containing " and " is ambiguous in the prompt's wording and is read wrongly).
_MARKERS_RE = re.compile(r"written between (.*) and (.*?), and nothing else\.?\s*$")


def _text_of(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        block if isinstance(block, str) else str(block.get("text", "")) if isinstance(block, dict) else ""
        for block in content
    )


def _last_human(messages: Sequence[BaseMessage]) -> BaseMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, HumanMessage) or m.type == "human"), None)


def _markers(text: str) -> tuple[str, str]:
    """The bos/eos markers the final instruction line asks for, or the defaults."""
    last_line = text.rstrip("\n").rsplit("\n", 1)[-1]
    match = _MARKERS_RE.search(last_line)
    if match is None:
        return DEFAULT_BOS, DEFAULT_EOS
    return match.group(1), match.group(2)


def _tool_name(tools: Sequence[dict[str, Any]], tool_choice: Any) -> str | None:
    """The tool to call: one with a `score` parameter, else the one named by `tool_choice`, else the first."""
    names = [t.get("function", {}).get("name") or t.get("name") for t in tools]
    for tool, name in zip(tools, names, strict=True):
        params = tool.get("function", {}).get("parameters") or tool.get("parameters") or {}
        if name and "score" in params.get("properties", {}):
            return str(name)
    if isinstance(tool_choice, dict):
        chosen = tool_choice.get("function", {}).get("name") or tool_choice.get("name")
        if chosen:
            return str(chosen)
    if isinstance(tool_choice, str) and tool_choice in names:
        return tool_choice
    return str(names[0]) if names and names[0] else None


class ReferenceJudge(BaseChatModel):
    """The offline judge: a `BaseChatModel` that grades with `score_answer`, no model, no network.

    Reads the turn from the last human message (`parse_judge_request`); answers with a
    tool call when tools are bound (so `with_structured_output` works), otherwise with
    `<bos>{"score": ..., "reasoning": ...}<eos>` using the markers the prompt asked for.
    Without judge data it replies with an explanation and no score, which the caller's
    parser counts as a parse failure. Its only setting is a name, `model` (as in the
    provider classes); the connector rules refuse any other parameter.
    """

    model_config = ConfigDict(populate_by_name=True)

    model_name: str = Field("fair-forge-reference", alias="model")

    @property
    def _llm_type(self) -> str:
        return "fair-forge-reference"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as OpenAI tool schemas; the judge then replies with a call to the score tool."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, **kwargs))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # A short turn takes at most about 10 ms: scored inline. A long one (up to about half a second
        # for 3 x 100,000 characters) goes to a worker thread, so that it neither blocks the event
        # loop nor outlives a caller's timeout (asyncio.wait_for returns; the thread finishes).
        human = _last_human(messages)
        if human is None or len(_text_of(human)) <= INLINE_MAX_CHARS:
            message = self._reply(messages, **kwargs)
        else:
            message = await asyncio.to_thread(self._reply, messages, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _reply(
        self,
        messages: list[BaseMessage],
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **_: Any,
    ) -> AIMessage:
        human = _last_human(messages)
        text = _text_of(human) if human is not None else ""
        request = parse_judge_request(text) if text else None
        if request is None:
            return AIMessage(
                content="No evaluation data found in the last human message, so no score is given "
                "(expected the judge prompt built by build_judge_messages)."
            )
        score, reasoning = score_answer(request.query, request.answer, request.ground_truth)
        verdict = {"score": score, "reasoning": reasoning}
        name = _tool_name(tools, tool_choice) if tools and tool_choice != "none" else None
        if name:
            return AIMessage(
                content="",
                tool_calls=[{"name": name, "args": verdict, "id": "call_reference_judge", "type": "tool_call"}],
            )
        bos, eos = _markers(text)
        return AIMessage(content=f"{bos}{json.dumps(verdict, ensure_ascii=False)}{eos}")
