"""The geometry of the report's charts: numbers in, coordinates out, no markup.

The templates only place these numbers; every position, tick and outline is decided
here, so it can be checked without parsing SVG. Coordinates are SVG user units of the
chart's `viewBox`, printed with one decimal (`coord`) as the report always has.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fair_forge_core.compare.labels import metric_label

Point = tuple[float, float]
Scale = Callable[[int, float], Point]
"""A chart's (K, probability) to its (x, y)."""

PASS_AT_COLOUR = "#2563eb"
PASS_POW_COLOUR = "#ea580c"

# Curve series: (metric of a curve point, symbol shown before K, colour, stroke dash pattern, "" for solid)
CURVE_SERIES: tuple[tuple[str, str, str, str], ...] = (
    ("pass_at_k", "pass@", PASS_AT_COLOUR, ""),
    ("pass_pow_k", "pass^", PASS_POW_COLOUR, "7 5"),
)
# The corrected series (`judge_corrected.curve`), drawn over the observed ones in colours of their own.
CORRECTED_AT_COLOUR = "#0d9488"
CORRECTED_POW_COLOUR = "#9333ea"
CORRECTED_SERIES: tuple[tuple[str, str, str, str], ...] = (
    ("pass_at_k", "pass@", CORRECTED_AT_COLOUR, ""),
    ("pass_pow_k", "pass^", CORRECTED_POW_COLOUR, "7 5"),
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
class CorrectedSeries:
    """One series of `judge_corrected.curve` over the chart: its posterior band (`band`, low to
    high), its mean line through the same K (`ks`), and the marker of its point at the configured k
    (`marker`, None when the curve has no point at k)."""

    metric: str
    symbol: str
    colour: str
    dash: str
    ks: list[int]
    means: list[float]
    band: Band
    line: list[Point]
    marker: Marker | None


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
    corrected: list[CorrectedSeries]


def band_outline(ks: Sequence[int], lows: Sequence[float], highs: Sequence[float], scale: Scale) -> list[Point]:
    """The outline of a band: its lower bounds left to right, then its upper bounds right to left."""
    outline = [scale(k, low) for k, low in zip(ks, lows, strict=True)]
    return outline + [scale(k, high) for k, high in reversed(list(zip(ks, highs, strict=True)))]


def corrected_series(corrected: Sequence[Mapping[str, Any]], k: int, scale: Scale, k_max: int) -> list[CorrectedSeries]:
    """The corrected pass@K and pass^K of `corrected` (`judge_corrected.curve`) on the observed
    chart's axes (`scale`): their points with K ≤ `k_max` (the chart's x axis), each series' band from
    its `_ci_low` and `_ci_high`, its mean line and, at the configured `k`, a marker. None of it when
    the curve is empty (the "identity" method: the figures are today's)."""
    shown = [(index, p) for index, p in enumerate(corrected) if p["k"] <= k_max]
    if not shown:
        return []
    ks = [p["k"] for _, p in shown]
    drawn = []
    for metric, symbol, colour, dash in CORRECTED_SERIES:
        means = [p[metric] for _, p in shown]
        lows, highs = [p[f"{metric}_ci_low"] for _, p in shown], [p[f"{metric}_ci_high"] for _, p in shown]
        band = Band(metric, colour, lows, highs, band_outline(ks, lows, highs, scale))
        marker = next(
            (Marker(index, k, p[metric], scale(k, p[metric]), 4.5) for index, p in shown if p["k"] == k), None
        )
        line = [scale(point_k, mean) for point_k, mean in zip(ks, means, strict=True)]
        drawn.append(CorrectedSeries(metric, symbol, colour, dash, ks, means, band, line, marker))
    return drawn


def curve_chart(curve: Sequence[Mapping[str, Any]], k: int, corrected: Sequence[Mapping[str, Any]] = ()) -> CurveChart:
    """The pass@K / pass^K chart of `curve` (the result's curve points, K = 1…k_max), marking the
    configured `k`; with `corrected` (`judge_corrected.curve`), its series drawn over them
    (`corrected_series`)."""
    width, height = 760, 340
    left, right, top, bottom = 56, 24, 24, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    k_max: int = curve[-1]["k"]

    def x(point_k: int) -> float:
        return left + (point_k - 1) / max(k_max - 1, 1) * plot_w

    def y(value: float) -> float:
        return top + (1 - value) * plot_h

    def scale(point_k: int, value: float) -> Point:
        return (x(point_k), y(value))

    step = 1 if k_max <= 20 else nice_step(k_max)
    guide = None
    if 1 <= k <= k_max:
        guide = Guide(x(k), top, top + plot_h, (x(k) + 6, top + plot_h - 8))
    bands = []
    for metric, _, colour, _ in CURVE_SERIES:
        lows = [p[f"{metric}_ci_low"] for p in curve]
        highs = [p[f"{metric}_ci_high"] for p in curve]
        if all(v is not None for v in lows + highs):
            bands.append(Band(metric, colour, lows, highs, band_outline([p["k"] for p in curve], lows, highs, scale)))
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
        corrected=corrected_series(corrected, k, scale, k_max),
    )


@dataclass(frozen=True)
class Bar:
    """One dimension's bar, drawn over a track starting at `track_start`; its label left of it, its value right."""

    key: str
    label: str
    mean: float | None
    """None: measured on no turn (drawn empty, its value a dash)."""
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


def bar_chart(means: Sequence[tuple[str, str, float | None, int]], emphasised: str) -> BarChart:
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
                0 if mean is None else max(mean * track, 0),
                (left - 12, top + 21),
                (width - right + 10, top + 21),
            )
        )
    return BarChart(width, row * len(means) + 8, track, bars)


def meter_percent(value: float | None) -> float:
    """How much of a 0…1 meter is filled, in percent; an absent value fills none of it."""
    return 0.0 if value is None else max(min(value, 1.0), 0.0) * 100


def heat_colour(score: float | None) -> str:
    """A light background from red (0) through amber to green (1); none for a value not measured."""
    if score is None:
        return "transparent"
    hue = round(120 * min(max(score, 0.0), 1.0))
    return f"hsl({hue} 70% 88%)"


# --------------------------------------------------------------------------- forest plot

FOREST_RANGES = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0)
"""The half-widths R the forest plot's x axis may have: it spans [−R, R] (see `forest_plot`)."""

FOREST_HIGHER = "#059669"
"""A metric significantly higher for the candidate."""
FOREST_LOWER = "#be123c"
"""A metric significantly lower for the candidate."""
FOREST_NEUTRAL = "#475569"
"""A metric without a significant difference (or not tested)."""


def forest_range(values: Sequence[float]) -> float:
    """The half-width R of the forest plot's axis: the first of `FOREST_RANGES` (0.1, 0.2,
    0.4, 0.6, 0.8, 1) at least max |v| over `values` (with 1e-9 of slack for rounding), 1
    when max |v| passes 1 (a difference of two rates cannot) and 0.1 when `values` is empty."""
    widest = max((abs(v) for v in values), default=0.0)
    return next((r for r in FOREST_RANGES if widest <= r + 1e-9), FOREST_RANGES[-1])


def difference_label(value: float) -> str:
    """A tick label on the difference axis: signed, shortest form, a true minus sign
    (−0.5, 0, +0.5)."""
    value = round(value, 9) + 0.0  # + 0.0: −0.0 is 0
    return "0" if value == 0 else f"{value:+g}".replace("-", "−")


@dataclass(frozen=True)
class ForestRow:
    """One metric of a comparison. `state` is "higher" / "lower" (significant, the candidate
    higher / lower), "not_significant", "not_tested" (no p-value) or "not_computed" (no
    difference: no dot, no interval, `not_computed_anchor` says so). `dot` is the centre of
    the difference; `interval` the x of ci_low and ci_high, None without both."""

    index: int
    metric: str
    label: str
    state: str
    colour: str
    significant: bool
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    y: float
    dot: Point | None
    interval: tuple[float, float] | None
    label_anchor: Point
    difference_anchor: Point
    p_anchor: Point
    mark_anchor: Point
    not_computed_anchor: Point
    band: tuple[float, float]


@dataclass(frozen=True)
class ForestPlot:
    """The forest plot of a comparison: one row per metric, in the comparison's order.

    The x axis spans differences [x_min, x_max] = [−R, R] over the plot from `left` to
    `plot_right`: a difference d is drawn at x = left + (d − x_min) / (x_max − x_min) ·
    (plot_right − left), so 0 is the middle (`zero`). Rows are `row_height` tall from `top`
    down to `bottom`, where the axis is; row i is centred at y = top + (i + ½)·row_height.
    """

    width: int
    height: int
    left: int
    plot_right: int
    top: int
    bottom: int
    row_height: int
    x_min: float
    x_max: float
    zero: Guide
    ticks: list[Tick]
    axis_label_anchor: Point
    lower_label_anchor: Point
    higher_label_anchor: Point
    difference_heading_anchor: Point
    p_heading_anchor: Point
    rows: list[ForestRow]


def forest_plot(comparison: Mapping[str, Any]) -> ForestPlot | None:
    """The forest plot of `comparison` (the JSON of a `Comparison`), or None when no metric
    has a difference (nothing to draw).

    Geometry: the x range is [−R, R] with R = `forest_range` of every difference, ci_low and
    ci_high there is, so 0 is always in the middle and every interval fits; ticks at −R,
    −R/2, 0, R/2 and R. A row's state comes from `significant` and the sign of `difference`
    (see `ForestRow`); its colour is `FOREST_HIGHER`, `FOREST_LOWER` or `FOREST_NEUTRAL`.
    """
    metrics: Sequence[Mapping[str, Any]] = comparison["metrics"]
    if not any(m["difference"] is not None for m in metrics):
        return None
    shown = [m[name] for m in metrics for name in ("difference", "ci_low", "ci_high") if m[name] is not None]
    half = forest_range(shown)
    width, left, plot_right, top, row_height = 900, 250, 610, 34, 34  # room for "pass^3 (per-task plug-in)" in bold
    bottom = top + row_height * len(metrics)
    height = bottom + 50

    def x(value: float) -> float:
        return left + (value + half) / (2 * half) * (plot_right - left)

    rows = []
    for index, m in enumerate(metrics):
        y = top + (index + 0.5) * row_height
        difference = m["difference"]
        if difference is None:
            state, colour = "not_computed", FOREST_NEUTRAL
        elif m["significant"]:
            state, colour = ("higher", FOREST_HIGHER) if difference > 0 else ("lower", FOREST_LOWER)
        elif m["p_value_holm"] is None:
            state, colour = "not_tested", FOREST_NEUTRAL
        else:
            state, colour = "not_significant", FOREST_NEUTRAL
        low, high = m["ci_low"], m["ci_high"]
        rows.append(
            ForestRow(
                index=index,
                metric=m["metric"],
                label=metric_label(m["metric"], comparison["k"]),
                state=state,
                colour=colour,
                significant=bool(m["significant"]),
                difference=difference,
                ci_low=low,
                ci_high=high,
                y=y,
                dot=None if difference is None else (x(difference), y),
                interval=None if difference is None or low is None or high is None else (x(low), x(high)),
                label_anchor=(left - 14, y + 4),
                difference_anchor=(plot_right + 20, y + 4),
                p_anchor=(plot_right + 86, y + 4),
                mark_anchor=(plot_right + 168, y + 4),
                not_computed_anchor=(x(0) + 10, y + 4),
                band=(y - row_height / 2, y + row_height / 2),
            )
        )
    ticks = [
        Tick(difference_label(value), x(value), (x(value), bottom + 18))
        for value in (-half, -half / 2, 0.0, half / 2, half)
    ]
    return ForestPlot(
        width=width,
        height=height,
        left=left,
        plot_right=plot_right,
        top=top,
        bottom=bottom,
        row_height=row_height,
        x_min=-half,
        x_max=half,
        zero=Guide(x(0.0), top - 6, bottom, (x(0.0), bottom + 18)),
        ticks=ticks,
        axis_label_anchor=(left + (plot_right - left) / 2, bottom + 40),
        lower_label_anchor=(left, top - 12),
        higher_label_anchor=(plot_right, top - 12),
        difference_heading_anchor=(plot_right + 20, top - 12),
        p_heading_anchor=(plot_right + 86, top - 12),
        rows=rows,
    )
