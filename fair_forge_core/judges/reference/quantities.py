"""The vocabulary numbers are read with (`numbers.py`): units and their dimensions, scale
words, English number words, and `Num`, one number read from a text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fair_forge_core.judges.reference.text import wordlist

UNIT_DEFS: dict[str, tuple[str | None, float | None, tuple[str, ...]]] = {
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
_UNIT_OF_ALIAS = {alias: unit for unit, (_, _, aliases) in UNIT_DEFS.items() for alias in aliases}
_UNIT_RE = re.compile(
    r"(\s*)(" + "|".join(re.escape(a) for a in sorted(_UNIT_OF_ALIAS, key=len, reverse=True)) + r")(?![a-z0-9])"
)
CURRENCY_SIGNS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy"}
SCALES = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9}
SCALE_RE = re.compile(r"\s*(hundred|thousand|million|billion|trillion|bn)(?![a-z])")
DIGITS_RE = re.compile(
    r"(?<![\w.^])(?:(?P<cur>[$€£¥])\s?)?(?P<neg>-)?(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<dec>\d+))?"
    r"(?P<ord>st|nd|rd|th)?"
)

UNITS_W = {
    w: i
    for i, w in enumerate(
        wordlist(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
            "sixteen seventeen eighteen nineteen"
        )
    )
}
TENS_W = {w: 10 * (i + 2) for i, w in enumerate(wordlist("twenty thirty forty fifty sixty seventy eighty ninety"))}
ORDINALS_W = {
    w: i + 1
    for i, w in enumerate(
        wordlist(
            "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
            "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth"
        )
    )
}
ORDINALS_W.update(
    {
        w: 10 * (i + 2)
        for i, w in enumerate(wordlist("twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth"))
    }
)
WEAK_WORDS = frozenset({"one", "first", "second"})
NUMBER_WORDS = frozenset(UNITS_W) | frozenset(TENS_W) | frozenset(ORDINALS_W) | {"dozen", *SCALES}
BIG_WORDS = frozenset({"hundred", "thousand", "million", "billion", "trillion", "dozen"})
WORD_TOKEN_RE = re.compile(r"[a-z]+")


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
        return UNIT_DEFS[self.unit][0] if self.unit else None

    def describe(self, text: str) -> str:
        """The number as written in `text`, the text it was read from."""
        return text[self.start : self.end].strip()


def read_unit(text: str, at: int) -> tuple[str | None, int]:
    """The unit right after position `at` (blanks allowed before it), and where it ends."""
    match = _UNIT_RE.match(text, at)
    if match is None:
        return None, at
    space, alias = match.group(1), match.group(2)
    if alias == "s" and not space:  # "1990s" is a decade, not seconds
        return None, at
    return _UNIT_OF_ALIAS[alias], match.end()
