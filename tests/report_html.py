"""Reading the HTML report in tests: its elements, their attributes and text, and the numbers it ties to the JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

VOID = frozenset({"meta", "link", "br", "hr", "img", "input", "col", "source", "wbr", "area", "base", "embed"})
SVG_LEAVES = frozenset({"line", "polyline", "polygon", "rect", "path"})


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    classes: set[str] = field(default_factory=set)


class _Collector(HTMLParser):
    """Every element in document order, with the text it contains (its descendants' included)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self._open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        element = Element(tag, values, classes=set(values.get("class", "").split()))
        self.elements.append(element)
        if tag not in VOID and tag not in SVG_LEAVES:
            self._open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        self.elements.append(Element(tag, values, classes=set(values.get("class", "").split())))

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self._open) - 1, -1, -1):
            if self._open[index].tag == tag:
                del self._open[index:]
                return

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element.text += data


def parse(page: str) -> list[Element]:
    collector = _Collector()
    collector.feed(page)
    collector.close()
    return collector.elements


def by_id(elements: list[Element], ident: str) -> Element | None:
    return next((e for e in elements if e.attrs.get("id") == ident), None)


def resolve(data: Any, path: list[str | int]) -> Any:
    """The value at `path` (the report's `data-field`) in the JSON result."""
    for key in path:
        data = data[key]
    return data


def tied_numbers(elements: list[Element]) -> list[tuple[Element, list[str | int], Any]]:
    """(element, JSON path, value shown) for every element tied to a value of the result."""
    return [
        (e, json.loads(e.attrs["data-field"]), json.loads(e.attrs["data-value"]))
        for e in elements
        if "data-field" in e.attrs
    ]
