"""The geometry of the report's charts: numbers in, coordinates out, no markup.

The templates only place these numbers; every position, tick and outline is decided
here, so it can be checked without parsing SVG. Coordinates are SVG user units of the
chart's `viewBox`, printed with one decimal (`coord`) as the report always has.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Point = tuple[float, float]

PASS_AT_COLOUR = "#2563eb"
PASS_POW_COLOUR = "#ea580c"

# Curve series: (metric of a curve point, symbol shown before K, colour, stroke dash pattern, "" for solid)
CURVE_SERIES: tuple[tuple[str, str, str, str], ...] = (
    ("pass_at_k", "pass@", PASS_AT_COLOUR, ""),
    ("pass_pow_k", "pass^", PASS_POW_COLOUR, "7 5"),
)
CURVE_Y_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
# Past this many points the markers would merge into the line, so only the one at k is drawn.
MAX_MARKED_POINTS = 40


def coord(value: float) -> str:
    """A coordinate as the SVG text of the report: one decimal."""
    return f"{value:.1f}"


def svg_points(points: Sequence[Point]) -> str:
    """The `points` attribute of a polyline or polygon through `points`."""
    return " ".join(f"{coord(x)},{coord(y)}" for x, y in points)


def nice_step(span: int, target: int = 10) -> int:
    """A round step (1, 2, 5 × 10ⁿ) giving about `target` ticks over `span`."""
    raw = max(span / target, 1.0)
    magnitude = 10 ** math.floor(math.log10(raw))
    return int(next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw))


@dataclass(frozen=True)
class Tick:
    """A tick at `position` on its axis, its label written at `anchor`."""

    label: str
    position: float
    anchor: Point


@dataclass(frozen=True)
class Band:
    """The credible band of a series: its lower bounds left to right, then its upper bounds back."""

    metric: str
    colour: str
    lows: list[float]
    highs: list[float]
    outline: list[Point]


@dataclass(frozen=True)
class Marker:
    index: int
    k: int
    value: float
    centre: Point
    radius: float


@dataclass(frozen=True)
class Series:
    metric: str
    symbol: str
    colour: str
    dash: str
    line: list[Point]
    markers: list[Marker]


@dataclass(frozen=True)
class PointLabel:
    """The value at the configured k, written next to its marker."""

    metric: str
    colour: str
    value: float
    anchor: Point


@dataclass(frozen=True)
class Guide:
    """The dashed vertical line at the configured k."""

    x: float
    y1: int
    y2: int
    label_anchor: Point


@dataclass(frozen=True)
class CurveChart:
    width: int
    height: int
    left: int
    plot_right: int
    k_max: int
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    x_label_anchor: Point
    y_label_anchor: Point
    guide: Guide | None
    bands: list[Band]
    series: list[Series]
    point_labels: list[PointLabel]


def curve_chart(curve: Sequence[Mapping[str, Any]], k: int) -> CurveChart:
    """The pass@K / pass^K chart of `curve` (the result's curve points, K = 1…k_max), marking the configured `k`."""
    width, height = 760, 340
    left, right, top, bottom = 56, 24, 24, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    k_max: int = curve[-1]["k"]

    def x(point_k: int) -> float:
        return left + (point_k - 1) / max(k_max - 1, 1) * plot_w

    def y(value: float) -> float:
        return top + (1 - value) * plot_h

    step = 1 if k_max <= 20 else nice_step(k_max)
    guide = None
    if 1 <= k <= k_max:
        guide = Guide(x(k), top, top + plot_h, (x(k) + 6, top + plot_h - 8))
    bands = []
    for metric, _, colour, _ in CURVE_SERIES:
        lows = [p[f"{metric}_ci_low"] for p in curve]
        highs = [p[f"{metric}_ci_high"] for p in curve]
        if all(v is not None for v in lows + highs):
            outline = [(x(p["k"]), y(v)) for p, v in zip(curve, lows, strict=True)]
            outline += [(x(p["k"]), y(v)) for p, v in reversed(list(zip(curve, highs, strict=True)))]
            bands.append(Band(metric, colour, lows, highs, outline))
    marked = len(curve) <= MAX_MARKED_POINTS
    series = [
        Series(
            metric,
            symbol,
            colour,
            dash,
            [(x(p["k"]), y(p[metric])) for p in curve],
            [
                Marker(
                    index,
                    p["k"],
                    p[metric],
                    (x(p["k"]), y(p[metric])),
                    4.5 if p["k"] == k else (3.2 if marked else 0),
                )
                for index, p in enumerate(curve)
            ],
        )
        for metric, symbol, colour, dash in CURVE_SERIES
    ]
    at_k = next((p for p in curve if p["k"] == k), None)
    point_labels = []
    if at_k is not None:
        for metric, _, colour, _ in CURVE_SERIES:
            # pass@k sits above pass^k, so its label goes above the point and pass^k's below
            dy = -10 if metric == "pass_at_k" else 20
            point_labels.append(PointLabel(metric, colour, at_k[metric], (x(k) + 8, y(at_k[metric]) + dy)))
    return CurveChart(
        width=width,
        height=height,
        left=left,
        plot_right=width - right,
        k_max=k_max,
        y_ticks=[Tick(f"{v:g}", y(v), (left - 10, y(v) + 4)) for v in CURVE_Y_TICKS],
        x_ticks=[
            Tick(str(tick), x(tick), (x(tick), height - bottom + 20))
            for tick in sorted({1, *range(step, k_max + 1, step)})
        ],
        x_label_anchor=(left + plot_w / 2, height - 8),
        y_label_anchor=(16, top + plot_h / 2),
        guide=guide,
        bands=bands,
        series=series,
        point_labels=point_labels,
    )


@dataclass(frozen=True)
class Bar:
    """One dimension's bar, drawn over a track starting at `track_start`; its label left of it, its value right."""

    key: str
    label: str
    mean: float
    count: int
    emphasised: bool
    track_start: Point
    length: float
    label_anchor: Point
    value_anchor: Point


@dataclass(frozen=True)
class BarChart:
    width: int
    height: int
    track: int
    bars: list[Bar]


def bar_chart(means: Sequence[tuple[str, str, float, int]], emphasised: str) -> BarChart:
    """Horizontal bars on a 0…1 track for (key, label, mean, count) rows, one row each; the `emphasised` key stands out."""
    width, row, left, right = 440, 38, 104, 56
    track = width - left - right
    bars = []
    for i, (key, label, mean, count) in enumerate(means):
        top = 4 + i * row
        bars.append(
            Bar(
                key,
                label,
                mean,
                count,
                key == emphasised,
                (left, top + 6),
                max(mean * track, 0),
                (left - 12, top + 21),
                (width - right + 10, top + 21),
            )
        )
    return BarChart(width, row * len(means) + 8, track, bars)


def meter_percent(value: float | None) -> float:
    """How much of a 0…1 meter is filled, in percent; an absent value fills none of it."""
    return 0.0 if value is None else max(min(value, 1.0), 0.0) * 100


def heat_colour(score: float) -> str:
    """A light background from red (0) through amber to green (1)."""
    hue = round(120 * min(max(score, 0.0), 1.0))
    return f"hsl({hue} 70% 88%)"
