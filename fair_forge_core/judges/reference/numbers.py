"""Reading numbers: digits and number words, with their units, and when two numbers match.

Numbers are read from digits ("1,000", "3.14", "-5", "21st", "$20"), number words
("eight", "twenty-five", "one hundred and five", "a dozen", "1.5 million", spoken years
"nineteen twelve") and carry their unit when one follows; "8 minutes and 20 seconds" or
"5 feet 11 inches" is one quantity. Digit runs longer than 40 are ignored. Two numbers
match (`numbers_match`) when

- they are equal (`1,000` = `1000` = "one thousand", `1.5 million` = `1,500,000`);
- the less precise one has decimals and the other rounds to it (`3.14` ~ `3.14159`;
  `1.5 million` ~ `1,520,000`); an integer is never rounded (`1999` != `2000`) unless it
  is marked approximate and round: "about 8 billion" ~ `8.1 billion`, "about 300,000" ~
  `299,792` (within half its last significant place and 5 %; "about" needs a scale word
  or two trailing zeros, so "about 20" != `24`);
- percentages: `25%` = "25 percent" = "25 per cent" = a bare `25` = a bare fraction
  `0.25` (a percentage on one side and a plain decimal on the other are read as the
  same share);
- units of one dimension are converted (length, mass, time, volume, area, speed,
  temperature) and compared within 1 % (0.6 K for temperatures): `5 km` = `5000 m`,
  `100 °C` = `212 °F`. Different currencies or different dimensions never match. A unit
  on one side only does not prevent a match.

Also read (`_special_numbers`, before the plain digits, whose digits they take):

- times of day as minutes after midnight (unit "clock"): "14:30", "2:30 pm", "9 am",
  "11:45 p.m.", "11 o'clock in the morning", "half past three in the afternoon", "9 h 30",
  "noon", "midnight"; "14:30" =
  "2:30 PM";
- full dates as yyyymmdd (unit "date"): "2023-03-15", "March 15, 2023", "15 March 2023",
  "the 1st of September 2025", "15. März 2023", "15 de marzo de 2023" (month names in
  English, French, Spanish, German and Portuguese); a bare year in the ground truth
  matches a full date of that year in the answer, not the other way round;
- proper fractions "1/4" (both parts of one or two digits, not part of a date), and the
  words "half", "a/one/two ... third(s)/quarter(s)/fifth(s) ...", "X and a half";
- number words in French, Spanish, German and Portuguese (`_foreign_numbers`): "sept",
  "quarante-cinq", "soixante-dix", "veinticuatro", "treinta y cinco", "vinte e seis",
  "neunundzwanzig", "sechzig"; words that are also common English or ambiguous ("once",
  "cent", "un", "une", "null") are left out;
- "X dollars and Y cents" is X + Y/100 dollars; "pounds" (a mass) matches "£" (sterling)
  of the same value.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fair_forge_core.judges.reference.text import wordlist

# Work bounds (package docstring, "Bounded work").
MAX_NUMBERS = 200  # distinct numbers compared per text
MAX_ALTERNATIVES = 50  # pairs of explicit alternatives ("41 or 42") examined in the answer

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
    "eur": ("currency", None, ("eur", "euro", "euros", "€")),
    "cent": ("currency", None, ("cent", "cents")),
    "clock": ("clock", None, ()),
    "date": ("date", None, ()),
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
        wordlist(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen"
        )
    )
}
_TENS_W = {w: 10 * (i + 2) for i, w in enumerate(wordlist("twenty thirty forty fifty sixty seventy eighty ninety"))}
_ORDINALS_W = {
    w: i + 1
    for i, w in enumerate(
        wordlist(
            "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
            "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth"
        )
    )
}
_ORDINALS_W.update(
    {
        w: 10 * (i + 2)
        for i, w in enumerate(wordlist("twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth"))
    }
)
_WEAK_WORDS = frozenset({"one", "first", "second"})
NUMBER_WORDS = frozenset(_UNITS_W) | frozenset(_TENS_W) | frozenset(_ORDINALS_W) | {"dozen", *_SCALES}
_BIG_WORDS = frozenset({"hundred", "thousand", "million", "billion", "trillion", "dozen"})
_WORD_TOKEN_RE = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class Num:
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
        """The unit's dimension ("length", "currency", ...), None without one."""
        return _UNIT_DEFS[self.unit][0] if self.unit else None

    def describe(self, text: str) -> str:
        """The number as written in `text`, the text it was read from."""
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


def read_numbers(text: str) -> list[Num]:
    """The numbers in normalised `text`, digits and words, with their units (module docstring)."""
    found = _special_numbers(text)
    taken = _Spans([(n.start, n.end) for n in found])
    for match in _DIGITS_RE.finditer(text):
        if taken.covers(match.start()):
            continue
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
        found.append(Num(value, scale * 10.0**-decimals, decimals, unit, False, match.start(), end, approx))
    words = [n for n in _word_numbers(text) if not taken.covers(n.start)]
    found.extend(words)
    taken = _Spans([(n.start, n.end) for n in found])
    found.extend(n for n in _foreign_numbers(text) if not taken.covers(n.start))
    return _halves(_compound(sorted(found, key=lambda n: n.start), text), text)


_APPROX_RE = re.compile(r"(?:about|around|approximately|approx\.?|roughly|nearly|almost|circa|some|~|≈)\s*$")
_COMPOUND_GAP_RE = re.compile(r"\s*(?:,\s*)?(?:and\s+)?")


def _compound(numbers: list[Num], text: str) -> list[Num]:
    """Merge "8 minutes and 20 seconds", "5 feet 11 inches" into one quantity in the smaller unit,
    and "15 dollars and 50 cents" into 15.5 dollars."""
    out: list[Num] = []
    for num in numbers:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.dim == "currency"
            and prev.unit != "cent"
            and num.unit == "cent"
            and _COMPOUND_GAP_RE.fullmatch(text, prev.end, num.start)
        ):
            out[-1] = Num(prev.value + num.value / 100, 0.01, 2, prev.unit, False, prev.start, num.end)
        elif (
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
            out[-1] = Num(value, num.quantum, num.decimals, num.unit, False, prev.start, num.end)
        else:
            out.append(num)
    return out


def _word_numbers(text: str) -> list[Num]:
    """Numbers written in words: "eight", "twenty-five", "one hundred and five", "a dozen"."""
    tokens = list(_WORD_TOKEN_RE.finditer(text))
    words = [t.group() for t in tokens]

    def adjacent(k: int) -> bool:  # tokens k-1 and k are separated by blanks or a hyphen only
        return re.fullmatch(r"[\s-]*", text[tokens[k - 1].end() : tokens[k].start()]) is not None

    found: list[Num] = []
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
        found.append(Num(total + current, 1.0, 0, unit, weak, tokens[i].start(), end))
        i = last_used + 1
    return _spoken_years(found, text)


def _spoken_years(numbers: list[Num], text: str) -> list[Num]:
    """Read "nineteen twelve" and "twenty twenty" as years: a one-word 10-20 followed by 10-99."""
    out: list[Num] = []
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
            out[-1] = Num(prev.value * 100 + num.value, 1.0, 0, num.unit, False, prev.start, num.end)
        else:
            out.append(num)
    return out


def _to_base(num: Num) -> float:
    """The value in its dimension's base unit (kelvin for temperatures); the value itself without a unit."""
    unit = num.unit or ""
    if unit == "degc":
        return num.value + 273.15
    if unit == "degf":
        return (num.value - 32.0) * 5.0 / 9.0 + 273.15
    factor = _UNIT_DEFS[unit][1] if unit in _UNIT_DEFS else None
    return num.value * (factor if factor is not None else 1.0)


def _close(x: Num, y: Num, x_scale: float = 1.0) -> bool:
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


def numbers_match(g: Num, a: Num) -> bool:
    """Whether the ground truth's number `g` and the answer's number `a` match (module docstring)."""
    g_dim, a_dim = g.dim, a.dim
    if {g.unit, a.unit} == {"lb", "gbp"}:  # "100 pounds" may be sterling
        return _close(g, a)
    if a_dim == "date" and g_dim is None:  # a year, stated as a full date
        return g.decimals == 0 and g.value == a.value // 10000
    if (g_dim in ("date", "clock")) != (a_dim in ("date", "clock")) and g_dim and a_dim:
        return False
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


def distinct_numbers(numbers: Sequence[Num]) -> list[Num]:
    """The first MAX_NUMBERS numbers that differ in anything matching looks at (first occurrence kept)."""
    out: dict[tuple[float, float, int, str | None, bool, float], Num] = {}
    for num in numbers:
        key = (num.value, num.quantum, num.decimals, num.unit, num.weak, num.approx)
        if key not in out:
            out[key] = num
            if len(out) >= MAX_NUMBERS:
                break
    return list(out.values())


_OR_GAP_RE = re.compile(r"\s*,?\s*or(?:\s+(?:maybe|perhaps|possibly))?\s+")
_SLASH_GAP_RE = re.compile(r"\s*/\s*")
_AND_GAP_RE = re.compile(r"\s+and\s+")
_BETWEEN_RE = re.compile(r"\bbetween\s+$")


def _alternatives(norm: str, x: Num, y: Num) -> bool:
    """Whether the consecutive numbers `x` and `y` are offered as alternatives (`alternative_pairs`)."""
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


def alternative_pairs(norm: str, numbers: Sequence[Num]) -> list[tuple[Num, Num]]:
    """The `numbers` (all of normalised text `norm`, in order) it offers as explicit alternatives: "X or Y" (also "or maybe/perhaps/possibly"),
    "X/Y" (values within a factor of 2, not part of a date like "7/4/1776" nor "24/7"), and
    "between X and Y"; the first MAX_ALTERNATIVES pairs of consecutive numbers."""
    pairs: list[tuple[Num, Num]] = []
    for x, y in itertools.pairwise(numbers):
        if _alternatives(norm, x, y):
            pairs.append((x, y))
            if len(pairs) >= MAX_ALTERNATIVES:
                break
    return pairs


_OPERATOR_GAP_RE = re.compile(r"\s*([-+*/\u00d7\u00f7x:]|times|plus|minus|divided by|multiplied by)\s*")
_EQUALS_GAP_RE = re.compile(r"\s*(?:=|equals|is|makes|gives)\s*")
_OPERATIONS: dict[str, Callable[[float, float], float | None]] = {
    "+": lambda x, y: x + y,
    "plus": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "minus": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "\u00d7": lambda x, y: x * y,
    "x": lambda x, y: x * y,
    "times": lambda x, y: x * y,
    "multiplied by": lambda x, y: x * y,
    "/": lambda x, y: x / y if y else None,
    "\u00f7": lambda x, y: x / y if y else None,
    ":": lambda x, y: x / y if y else None,
    "divided by": lambda x, y: x / y if y else None,
}
MAX_EQUATIONS = 50  # number triples checked as equations


def _operation(norm: str, x: Num, y: Num) -> Callable[[float, float], float | None] | None:
    """The arithmetic operation written between consecutive numbers `x` and `y`, if any."""
    gap = _OPERATOR_GAP_RE.fullmatch(norm, x.end, y.start)
    return None if gap is None else _OPERATIONS[gap.group(1)]


def true_equations(norm: str, numbers: Sequence[Num]) -> set[int]:
    """The start positions of the numbers of normalised text `norm` (all its numbers, in order) that
    take part in a true equation of three consecutive numbers: "x op y = z" or "z = x op y", op one of
    + - * x × / ÷ : or its word ("times", "divided by"), "=" also "equals", "is", "makes", "gives";
    true when z is x op y within a millionth ("21 = 3 × 7", "10 - 5 = 5 apples"). Units are not read
    ("3 kg × 2 = 6" is true). Such numbers are checked arithmetic, not claims needing a source. The
    first MAX_EQUATIONS triples only; chains ("2 × 3 × 4 = 24") are not read."""
    confirmed: set[int] = set()
    for x, y, z in itertools.islice(zip(numbers, numbers[1:], numbers[2:], strict=False), MAX_EQUATIONS):
        if _EQUALS_GAP_RE.fullmatch(norm, y.end, z.start) and (op := _operation(norm, x, y)):
            result, value = op(x.value, y.value), z.value
        elif _EQUALS_GAP_RE.fullmatch(norm, x.end, y.start) and (op := _operation(norm, y, z)):
            result, value = op(y.value, z.value), x.value
        else:
            continue
        if result is not None and abs(result - value) <= 1e-6 * max(1.0, abs(value)):
            confirmed.update((x.start, y.start, z.start))
    return confirmed


class _Spans:
    """Sorted, disjoint character spans; `covers(i)` by bisection."""

    def __init__(self, spans: Sequence[tuple[int, int]]) -> None:
        self.spans = sorted(spans)
        self.starts = [a for a, _ in self.spans]

    def covers(self, at: int) -> bool:
        k = bisect.bisect_right(self.starts, at) - 1
        return k >= 0 and self.spans[k][0] <= at < self.spans[k][1]


_MONTHS: dict[str, int] = {}
for _names in (
    "january february march april may june july august september october november december",
    "janvier fevrier mars avril mai juin juillet aout septembre octobre novembre decembre",
    "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "januar februar marz april mai juni juli august september oktober november dezember",
    "janeiro fevereiro marco abril maio junho julho agosto setembro outubro novembro dezembro",
    "jan feb mar apr may jun jul aug sep oct nov dec",
):
    for _i, _name in enumerate(wordlist(_names)):
        _MONTHS.setdefault(_name, _i + 1)
_MONTHS["sept"] = 9
CALENDAR_WORDS = frozenset(_MONTHS) | frozenset(
    wordlist(
        "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays "
        "fridays saturdays sundays"
    )
)
_MONTH_RE = "(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_RES = (
    re.compile(r"(?<![\d-])(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?!\d)"),
    re.compile(
        r"(?<!\d)(?P<d>\d{1,2})(?:st|nd|rd|th|er|o)?\.?\s+(?:of\s+|de\s+)?"
        + _MONTH_RE
        + r",?\s+(?:de\s+)?(?P<y>\d{4})(?!\d)"
    ),
    re.compile(r"\b" + _MONTH_RE + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<y>\d{4})(?!\d)"),
)
_HOUR_WORDS = {
    w: i for i, w in enumerate(wordlist("zero one two three four five six seven eight nine ten eleven twelve"))
}
_TIME_RE = re.compile(
    r"(?<![\d.:])(?P<h>\d{1,2})(?:(?::|\s?h\s?)(?P<mi>\d{2}))?\s*"
    r"(?P<ampm>a\.?\s?m\b\.?|p\.?\s?m\b\.?|o'?clock)?(?P<part>\s+in the (?:morning|afternoon|evening)|\s+at night)?"
)
_WORD_TIME_RE = re.compile(
    r"\b(?P<h>" + "|".join(_HOUR_WORDS) + r")\s+(?P<ampm>o'?clock|a\.?m\b\.?|p\.?m\b\.?)"
    r"(?P<part>\s+in the (?:morning|afternoon|evening)|\s+at night)?"
)
_NOON_RE = re.compile(r"\b(?:noon|midday|midnight)\b")
_PAST_RE = re.compile(
    r"\b(?P<q>half past|(?:a )?quarter past|(?:a )?quarter to)\s+(?P<h>\d{1,2}|" + "|".join(_HOUR_WORDS) + r")\b"
    r"(?:\s*(?P<ampm>a\.?\s?m\b\.?|p\.?\s?m\b\.?))?(?P<part>\s+in the (?:morning|afternoon|evening)|\s+at night)?"
)


def _clock(hour: int, minute: int, marker: str, part: str) -> int | None:
    """Minutes after midnight, or None for an impossible time."""
    pm = marker.startswith("p") or "afternoon" in part or "evening" in part or "night" in part
    am = marker.startswith("a") or "morning" in part
    if minute > 59 or hour > 24 or ((am or pm) and not 1 <= hour <= 12):
        return None
    if pm and hour != 12:
        hour += 12
    elif am and hour == 12:
        hour = 0
    return (hour % 24) * 60 + minute


def _special_numbers(text: str) -> list[Num]:
    """Dates, times of day and digit fractions (module docstring), not overlapping one another."""
    found: list[Num] = []
    for date_re in _DATE_RES:
        for m in date_re.finditer(text):
            month = int(m.group("m")) if "m" in m.groupdict() and m.group("m") else _MONTHS[m.group("mon")]
            day, year = int(m.group("d")), int(m.group("y"))
            if 1 <= month <= 12 and 1 <= day <= 31:
                found.append(Num(year * 10000 + month * 100 + day, 1.0, 0, "date", False, m.start(), m.end()))
    for m in _TIME_RE.finditer(text):
        if m.group("mi") is None and m.group("ampm") is None:
            continue
        minutes = _clock(int(m.group("h")), int(m.group("mi") or 0), m.group("ampm") or "", m.group("part") or "")
        if minutes is not None:
            found.append(Num(minutes, 1.0, 0, "clock", False, m.start(), m.end()))
    for m in _WORD_TIME_RE.finditer(text):
        minutes = _clock(_HOUR_WORDS[m.group("h")], 0, m.group("ampm"), m.group("part") or "")
        if minutes is not None:
            found.append(Num(minutes, 1.0, 0, "clock", False, m.start(), m.end()))
    for m in _PAST_RE.finditer(text):
        hour = int(m.group("h")) if m.group("h").isdigit() else _HOUR_WORDS[m.group("h")]
        offset = {"half past": 30, "quarter past": 15, "quarter to": -15}[m.group("q").removeprefix("a ")]
        minutes = _clock(hour, 0, m.group("ampm") or "", m.group("part") or "")
        if minutes is not None:
            found.append(Num((minutes + offset) % 1440, 1.0, 0, "clock", False, m.start(), m.end()))
    for m in _NOON_RE.finditer(text):
        found.append(Num(0 if m.group() == "midnight" else 720, 1.0, 0, "clock", False, m.start(), m.end()))
    for m in _FRACTION_RE.finditer(text):
        top, den = int(m.group(1)), int(m.group(2))
        if 0 < top < den:
            found.append(Num(top / den, 1e-6, 6, None, False, m.start(), m.end()))
    found.extend(_word_fractions(text))
    out: list[Num] = []
    end = -1
    for num in sorted(found, key=lambda n: (n.start, -n.end)):
        if num.start >= end:
            out.append(num)
            end = num.end
    return out


_FRACTION_RE = re.compile(r"(?<![\d/.,])(\d{1,2})/(\d)(?![\d/])")
_FRACTION_DENOMS = {
    "half": 2,
    "halves": 2,
    "third": 3,
    "thirds": 3,
    "quarter": 4,
    "quarters": 4,
    "fourth": 4,
    "fourths": 4,
    "fifth": 5,
    "fifths": 5,
    "sixth": 6,
    "sixths": 6,
    "eighth": 8,
    "eighths": 8,
    "tenth": 10,
    "tenths": 10,
}
_WORD_FRACTION_RE = re.compile(
    r"\b(?P<n>a|an|one|two|three|four|five|six|seven|nine)[\s-]+(?P<d>" + "|".join(_FRACTION_DENOMS) + r")\b"
    r"|\b(?P<half>half)\b(?!\s+past)"
)


def _word_fractions(text: str) -> list[Num]:
    """ "a quarter", "two fifths", "three quarters", a lone "half" (not "half past")."""
    out = []
    for m in _WORD_FRACTION_RE.finditer(text):
        if m.group("half"):
            if text[max(0, m.start() - 6) : m.start()].endswith(("and a ", "a ", "one ")):
                continue  # "and a half" is `_halves`; "a half"/"one half" the first alternative
            value = 0.5
        else:
            n = 1 if m.group("n") in ("a", "an", "one") else _UNITS_W[m.group("n")]
            value = n / _FRACTION_DENOMS[m.group("d")]
        out.append(Num(value, 1e-6, 6, None, False, m.start(), m.end()))
    return out


_AND_A_HALF_RE = re.compile(r"\s+and\s+(?:a|one)\s+(half|quarter)\b")


def _halves(numbers: list[Num], text: str) -> list[Num]:
    """ "two and a half hours" is 2.5 hours: the fraction joins the number before it, whose unit
    then follows the fraction."""
    out: list[Num] = []
    for num in numbers:
        m = _AND_A_HALF_RE.match(text, num.end) if num.unit is None and num.value >= 1 else None
        if m is None:
            out.append(num)
            continue
        unit, end = _read_unit(text, m.end())
        extra = 0.5 if m.group(1) == "half" else 0.25
        out.append(Num(num.value + extra, 0.25, 2, unit, False, num.start, end))
    merged: list[Num] = []
    for num in out:  # drop what a merge swallowed ("a half" read on its own)
        if merged and num.start < merged[-1].end:
            continue
        merged.append(num)
    return merged


_DE_TENS = {
    "zwanzig": 20,
    "dreissig": 30,
    "vierzig": 40,
    "funfzig": 50,
    "sechzig": 60,
    "siebzig": 70,
    "achtzig": 80,
    "neunzig": 90,
}
_FOREIGN_UNITS = {
    # French
    "zero": 0,
    "deux": 2,
    "trois": 3,
    "quatre": 4,
    "cinq": 5,
    "six": 6,
    "sept": 7,
    "huit": 8,
    "neuf": 9,
    "dix": 10,
    "onze": 11,
    "douze": 12,
    "treize": 13,
    "quatorze": 14,
    "quinze": 15,
    "seize": 16,
    "vingt": 20,
    "vingts": 20,
    "trente": 30,
    "quarante": 40,
    "cinquante": 50,
    "soixante": 60,
    # Spanish
    "cero": 0,
    "dos": 2,
    "tres": 3,
    "cuatro": 4,
    "cinco": 5,
    "seis": 6,
    "siete": 7,
    "ocho": 8,
    "nueve": 9,
    "diez": 10,
    "doce": 12,
    "trece": 13,
    "catorce": 14,
    "quince": 15,
    "dieciseis": 16,
    "diecisiete": 17,
    "dieciocho": 18,
    "diecinueve": 19,
    "veinte": 20,
    "treinta": 30,
    "cuarenta": 40,
    "cincuenta": 50,
    "sesenta": 60,
    "setenta": 70,
    "ochenta": 80,
    "noventa": 90,
    # Portuguese
    "dois": 2,
    "duas": 2,
    "quatro_": 4,
    "sete": 7,
    "oito": 8,
    "nove": 9,
    "dez": 10,
    "treze": 13,
    "quatorze_": 14,
    "dezesseis": 16,
    "dezasseis": 16,
    "dezessete": 17,
    "dezassete": 17,
    "dezoito": 18,
    "dezenove": 19,
    "dezanove": 19,
    "vinte": 20,
    "trinta": 30,
    "quarenta": 40,
    "cinquenta": 50,
    "sessenta": 60,
    "oitenta": 80,
    # German
    "eins": 1,
    "zwei": 2,
    "drei": 3,
    "vier": 4,
    "funf": 5,
    "sechs": 6,
    "sieben": 7,
    "acht": 8,
    "neun": 9,
    "zehn": 10,
    "elf": 11,
    "zwolf": 12,
    "dreizehn": 13,
    "vierzehn": 14,
    "funfzehn": 15,
    "sechzehn": 16,
    "siebzehn": 17,
    "achtzehn": 18,
    "neunzehn": 19,
    **_DE_TENS,
}
_FOREIGN_HUNDREDS = {"cent": 100, "cents": 100, "cien": 100, "ciento": 100, "cem": 100, "cento": 100, "hundert": 100}
_FOREIGN_THOUSANDS = {"mille": 1000, "mil": 1000, "tausend": 1000}
_FOREIGN_LINKS = frozenset({"et", "y", "e", "und"})
_DE_ONES = {"ein": 1, "zwei": 2, "drei": 3, "vier": 4, "funf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9}
_ES_VEINTI = {
    "veintiuno": 21,
    "veintiun": 21,
    "veintidos": 22,
    "veintitres": 23,
    "veinticuatro": 24,
    "veinticinco": 25,
    "veintiseis": 26,
    "veintisiete": 27,
    "veintiocho": 28,
    "veintinueve": 29,
}


@functools.lru_cache(maxsize=65536)
def _foreign_word(word: str) -> int | None:
    """The value of one French, Spanish, Portuguese or German number word, compounds included
    ("neunundzwanzig", "veinticuatro", "zweihundert"), else None."""
    if word in _FOREIGN_UNITS and not word.endswith("_"):
        return _FOREIGN_UNITS[word]
    if word in _ES_VEINTI:
        return _ES_VEINTI[word]
    if "und" in word:
        ones, _, tens = word.partition("und")
        if ones in _DE_ONES and tens in _DE_TENS:
            return _DE_ONES[ones] + _DE_TENS[tens]
    for scale_word, scale in (("hundert", 100), ("tausend", 1000)):
        if word.endswith(scale_word) and word != scale_word:
            head = word[: -len(scale_word)]
            lead = _DE_ONES.get(head)
            if lead is not None:
                return lead * scale
        if word.startswith(scale_word) and word != scale_word:
            tail = _foreign_word(word[len(scale_word) :])
            if tail is not None:
                return scale + tail
    return None


_FOREIGN_TOKEN_RE = re.compile(r"[a-z]+")


def _foreign_numbers(text: str) -> list[Num]:
    """Runs of foreign number words (see `_foreign_word`), joined by blanks, hyphens and the words
    "et"/"y"/"e"/"und": "quarante-cinq", "soixante-dix", "quatre-vingt-dix", "vingt et un",
    "treinta y cinco", "deux cents", "dos mil"."""
    tokens = list(_FOREIGN_TOKEN_RE.finditer(text))
    found: list[Num] = []
    i = 0
    while i < len(tokens):
        total, current, used, j, last_end = 0, 0, 0, i, tokens[i].end()
        while j < len(tokens):
            if j > i and re.fullmatch(r"[\s-]*", text[tokens[j - 1].end() : tokens[j].start()]) is None:
                break
            word = tokens[j].group()
            if word in _FOREIGN_LINKS and used and j + 1 < len(tokens) and _foreign_word(tokens[j + 1].group()):
                j += 1
                continue
            value = _foreign_word(word)
            if word in _FOREIGN_HUNDREDS and (used or word not in ("cent", "cents")):
                current = max(current, 1) * 100
            elif word in _FOREIGN_THOUSANDS:
                total += max(current, 1) * 1000
                current = 0
            elif value is not None:
                if word in ("vingt", "vingts") and current == 4:
                    current = 80
                else:
                    current += value
            else:
                break
            used += 1
            last_end = tokens[j].end()
            j += 1
        if used:
            start = tokens[i].start()
            end = last_end
            unit, end = _read_unit(text, end)
            found.append(Num(float(total + current), 1.0, 0, unit, False, start, end))
            i = j
        else:
            i += 1
    return found
