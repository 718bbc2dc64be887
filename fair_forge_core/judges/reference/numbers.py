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

Fractions and "half"/"quarter" are not read as numbers.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
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
    """The numbers in normalised `text`, digits and words, with their units."""
    found: list[Num] = []
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
        found.append(Num(value, scale * 10.0**-decimals, decimals, unit, False, match.start(), end, approx))
    found.extend(_word_numbers(text))
    return _compound(sorted(found, key=lambda n: n.start), text)


_APPROX_RE = re.compile(r"(?:about|around|approximately|approx\.?|roughly|nearly|almost|circa|some|~|≈)\s*$")
_COMPOUND_GAP_RE = re.compile(r"\s*(?:,\s*)?(?:and\s+)?")


def _compound(numbers: list[Num], text: str) -> list[Num]:
    """Merge "8 minutes and 20 seconds", "5 feet 11 inches" into one quantity in the smaller unit."""
    out: list[Num] = []
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
