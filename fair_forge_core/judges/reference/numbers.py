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

Also read (`dates.special_numbers`, before the plain digits, whose digits they take):

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
- number words in French, Spanish, German and Portuguese (`foreign_numbers.py`): "sept",
  "quarante-cinq", "soixante-dix", "veinticuatro", "treinta y cinco", "vinte e seis",
  "neunundzwanzig", "sechzig"; words that are also common English or ambiguous ("once",
  "cent", "un", "une", "null") are left out;
- "X dollars and Y cents" is X + Y/100 dollars; "pounds" (a mass) matches "£" (sterling)
  of the same value.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

from fair_forge_core.judges.reference.dates import Spans, halves, special_numbers
from fair_forge_core.judges.reference.foreign_numbers import foreign_numbers
from fair_forge_core.judges.reference.quantities import (
    BIG_WORDS,
    CURRENCY_SIGNS,
    DIGITS_RE,
    ORDINALS_W,
    SCALE_RE,
    SCALES,
    TENS_W,
    UNIT_DEFS,
    UNITS_W,
    WEAK_WORDS,
    WORD_TOKEN_RE,
    Num,
    read_unit,
)

# Work bounds (package docstring, "Bounded work").
MAX_NUMBERS = 200  # distinct numbers compared per text
MAX_ALTERNATIVES = 50  # pairs of explicit alternatives ("41 or 42") examined in the answer


def read_numbers(text: str) -> list[Num]:
    """The numbers in normalised `text`, digits and words, with their units (module docstring)."""
    found = special_numbers(text)
    taken = Spans([(n.start, n.end) for n in found])
    for match in DIGITS_RE.finditer(text):
        if taken.covers(match.start()):
            continue
        if len(match.group("int")) > 40 or len(match.group("dec") or "") > 40:
            continue  # not a fact anyone states; and 10 ** 400 would overflow
        mantissa = float(match.group("int").replace(",", "") + ("." + match.group("dec") if match.group("dec") else ""))
        decimals = len(match.group("dec") or "")
        end = match.end()
        scale = 1.0
        scale_match = SCALE_RE.match(text, end)
        if scale_match and not match.group("ord"):
            scale = SCALES[scale_match.group(1)]
            end = scale_match.end()
        value = mantissa * scale * (-1.0 if match.group("neg") else 1.0)
        unit = CURRENCY_SIGNS.get(match.group("cur") or "")
        if unit is None and not match.group("ord"):
            unit, end = read_unit(text, end)
        approx = 0.0
        if not decimals and _APPROX_RE.search(text, max(0, match.start() - 16), match.start()):
            digits = match.group("int").replace(",", "")
            zeros = len(digits) - len(digits.rstrip("0"))
            if scale > 1 or zeros >= 2:
                approx = scale * 10.0**zeros
        found.append(Num(value, scale * 10.0**-decimals, decimals, unit, False, match.start(), end, approx))
    words = [n for n in _word_numbers(text) if not taken.covers(n.start)]
    found.extend(words)
    taken = Spans([(n.start, n.end) for n in found])
    found.extend(n for n in foreign_numbers(text) if not taken.covers(n.start))
    return halves(_compound(sorted(found, key=lambda n: n.start), text), text)


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
            and (UNIT_DEFS[prev.unit][1] or 0) > (UNIT_DEFS[num.unit][1] or 0)
            and _COMPOUND_GAP_RE.fullmatch(text, prev.end, num.start)
        ):
            factor = UNIT_DEFS[num.unit][1] or 1.0
            value = (_to_base(prev) + _to_base(num)) / factor
            out[-1] = Num(value, num.quantum, num.decimals, num.unit, False, prev.start, num.end)
        else:
            out.append(num)
    return out


def _next_word(w: str, last: str, current: float, total: float) -> tuple[float, float, str, bool] | None:
    """The number in words read so far (`current` below the last scale word, `total` above it,
    `last` the kind of the previous word: "start", "unit", "tens", "hundred" or "scale") taken
    one word `w` further: the new (current, total, last, whether `w` is an ordinal), or None
    when `w` does not continue it. A unit follows a start, a hundred, a scale word, or a tens
    word when below 10 ("twenty-five"); so does an ordinal, which ends the number and leaves
    `last` as it was."""
    after_start = last in ("start", "hundred", "scale")
    if w in UNITS_W and (after_start or (last == "tens" and 0 < UNITS_W[w] < 10)):
        return current + UNITS_W[w], total, "unit", False
    if w in ORDINALS_W and (after_start or (last == "tens" and ORDINALS_W[w] < 10)):
        return current + ORDINALS_W[w], total, last, True
    if w in TENS_W and after_start:
        return current + TENS_W[w], total, "tens", False
    if w == "hundred" and last in ("unit", "tens"):
        return current * 100, total, "hundred", False
    if w in SCALES and w != "hundred" and last in ("unit", "tens", "hundred"):
        return 0.0, total + current * SCALES[w], "scale", False
    if w == "dozen" and last in ("unit", "tens"):
        return current * 12, total, "scale", False
    return None


def _word_numbers(text: str) -> list[Num]:
    """Numbers written in words: "eight", "twenty-five", "one hundred and five", "a dozen"."""
    tokens = list(WORD_TOKEN_RE.finditer(text))
    words = [t.group() for t in tokens]

    def adjacent(k: int) -> bool:  # tokens k-1 and k are separated by blanks or a hyphen only
        return re.fullmatch(r"[\s-]*", text[tokens[k - 1].end() : tokens[k].start()]) is not None

    found: list[Num] = []
    i = 0
    while i < len(tokens):
        j, current, total, last, ordinal, used, last_used = i, 0.0, 0.0, "start", False, 0, i
        if words[i] == "a":
            if i + 1 < len(words) and words[i + 1] in BIG_WORDS and adjacent(i + 1):
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
                and (words[j + 1] in UNITS_W or words[j + 1] in TENS_W)
            ):
                j += 1
                continue
            step = _next_word(w, last, current, total)
            if step is None:
                break
            current, total, last, ordinal = step
            used += 1
            last_used = j
            j += 1
            if ordinal:
                break
        if used == 0:
            i += 1
            continue
        end = tokens[last_used].end()
        weak = used == 1 and words[i] in WEAK_WORDS
        unit = None
        if not ordinal:
            unit, end = read_unit(text, end)
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
    factor = UNIT_DEFS[unit][1] if unit in UNIT_DEFS else None
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
