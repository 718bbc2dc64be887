"""Numbers written in a special form (`numbers.py`, module docstring): full dates, times of
day, proper fractions ("1/4", "two fifths", "half") and "X and a half"; and `Spans`, the
character spans already read."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from fair_forge_core.judges.reference.quantities import UNITS_W, Num, read_unit
from fair_forge_core.judges.reference.text import wordlist


class Spans:
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


def _dates(text: str) -> list[Num]:
    """Full dates as yyyymmdd (unit "date"), in the order of `_DATE_RES`; impossible months and
    days are left out."""
    found: list[Num] = []
    for date_re in _DATE_RES:
        for m in date_re.finditer(text):
            month = int(m.group("m")) if "m" in m.groupdict() and m.group("m") else _MONTHS[m.group("mon")]
            day, year = int(m.group("d")), int(m.group("y"))
            if 1 <= month <= 12 and 1 <= day <= 31:
                found.append(Num(year * 10000 + month * 100 + day, 1.0, 0, "date", False, m.start(), m.end()))
    return found


def _times_of_day(text: str) -> list[Num]:
    """Times of day as minutes after midnight (unit "clock"): digits ("14:30", "9 am"; a bare
    hour without minutes or a marker is not a time), hour words with a marker ("eleven
    o'clock"), "half past three" and the like, then "noon" and "midnight"."""
    found: list[Num] = []
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
    return found


def special_numbers(text: str) -> list[Num]:
    """Dates, times of day and digit fractions (module docstring), not overlapping one another:
    of two that overlap, the one that starts first is kept, or the longer one when both start
    at the same place, or else the one read first (dates, times, digit fractions, word fractions)."""
    found = _dates(text) + _times_of_day(text)
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
                continue  # "and a half" is `halves`; "a half"/"one half" the first alternative
            value = 0.5
        else:
            n = 1 if m.group("n") in ("a", "an", "one") else UNITS_W[m.group("n")]
            value = n / _FRACTION_DENOMS[m.group("d")]
        out.append(Num(value, 1e-6, 6, None, False, m.start(), m.end()))
    return out


_AND_A_HALF_RE = re.compile(r"\s+and\s+(?:a|one)\s+(half|quarter)\b")


def halves(numbers: list[Num], text: str) -> list[Num]:
    """ "two and a half hours" is 2.5 hours: the fraction joins the number before it, whose unit
    then follows the fraction."""
    out: list[Num] = []
    for num in numbers:
        m = _AND_A_HALF_RE.match(text, num.end) if num.unit is None and num.value >= 1 else None
        if m is None:
            out.append(num)
            continue
        unit, end = read_unit(text, m.end())
        extra = 0.5 if m.group(1) == "half" else 0.25
        out.append(Num(num.value + extra, 0.25, 2, unit, False, num.start, end))
    merged: list[Num] = []
    for num in out:  # drop what a merge swallowed ("a half" read on its own)
        if merged and num.start < merged[-1].end:
            continue
        merged.append(num)
    return merged
