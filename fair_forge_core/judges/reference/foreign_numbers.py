"""Number words in French, Spanish, German and Portuguese (`numbers.py`, module docstring):
"sept", "quarante-cinq", "soixante-dix", "veinticuatro", "treinta y cinco", "vinte e seis",
"neunundzwanzig", "sechzig"."""

from __future__ import annotations

import functools
import re

from fair_forge_core.judges.reference.quantities import Num, read_unit

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


def foreign_numbers(text: str) -> list[Num]:
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
            unit, end = read_unit(text, end)
            found.append(Num(float(total + current), 1.0, 0, unit, False, start, end))
            i = j
        else:
            i += 1
    return found
