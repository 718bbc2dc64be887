"""The report's chart geometry, checked on numbers rather than on SVG."""

from __future__ import annotations

from typing import Any

import pytest

from fair_forge_core.report.charts import (
    CORRECTED_POW_COLOUR,
    MAX_MARKED_POINTS,
    bar_chart,
    curve_chart,
    heat_colour,
    meter_percent,
    nice_step,
    svg_points,
)


def curve(k_max: int, bands: bool = False) -> list[dict[str, Any]]:
    points = []
    for k in range(1, k_max + 1):
        at, pow_ = 1 - 0.5**k, 0.9**k
        point: dict[str, Any] = {"k": k, "pass_at_k": at, "pass_pow_k": pow_}
        for metric, value in (("pass_at_k", at), ("pass_pow_k", pow_)):
            point[f"{metric}_ci_low"] = value * 0.9 if bands else None
            point[f"{metric}_ci_high"] = min(value * 1.1, 1.0) if bands else None
        points.append(point)
    return points


@pytest.mark.parametrize(("span", "step"), [(10, 1), (21, 5), (40, 5), (60, 10), (150, 20), (1000, 100)])
def test_ticks_step_by_one_two_or_five_times_a_power_of_ten(span: int, step: int) -> None:
    assert nice_step(span) == step


def test_the_curve_spans_the_plot_from_k_1_to_k_max() -> None:
    chart = curve_chart(curve(10), k=3)
    for series in chart.series:
        assert series.line[0][0] == chart.left and series.line[-1][0] == chart.plot_right
    assert [t.label for t in chart.x_ticks] == [str(k) for k in range(1, 11)]
    top, bottom = chart.y_ticks[-1].position, chart.y_ticks[0].position  # probability 1 is drawn at the top
    assert top < bottom
    for series in chart.series:
        assert all(top <= y <= bottom for _, y in series.line)


def test_the_configured_k_is_marked_and_labelled() -> None:
    chart = curve_chart(curve(10), k=3)
    assert chart.guide is not None and chart.guide.x == chart.series[0].markers[2].centre[0]
    assert {m.radius for s in chart.series for m in s.markers if m.k == 3} == {4.5}
    assert [label.metric for label in chart.point_labels] == ["pass_at_k", "pass_pow_k"]


def test_past_forty_points_only_the_configured_k_keeps_a_visible_marker() -> None:
    chart = curve_chart(curve(MAX_MARKED_POINTS + 10), k=3)
    visible = [m.k for s in chart.series for m in s.markers if m.radius > 0]
    assert visible == [3, 3]
    assert len(chart.x_ticks) < 12


def test_bands_only_with_every_bound_and_they_enclose_the_line() -> None:
    assert curve_chart(curve(10), k=3).bands == []
    chart = curve_chart(curve(10, bands=True), k=3)
    assert [band.metric for band in chart.bands] == ["pass_at_k", "pass_pow_k"]
    band = chart.bands[0]
    assert len(band.outline) == 20 and band.outline[0][0] == band.outline[-1][0] == chart.left


def test_the_corrected_curve_is_drawn_on_the_observed_axes_and_only_within_them() -> None:
    assert curve_chart(curve(10), k=3).corrected == []
    assert curve_chart(curve(10), k=3, corrected=[]).corrected == []  # "identity": no curve, no band
    chart = curve_chart(curve(10), k=3, corrected=curve(12, bands=True))
    assert [c.metric for c in chart.corrected] == ["pass_at_k", "pass_pow_k"]
    pow_k = chart.corrected[1]
    assert pow_k.colour == CORRECTED_POW_COLOUR and pow_k.ks == list(range(1, 11))  # K 11 and 12 are off the axis
    assert [x for x, _ in pow_k.line] == [x for x, _ in chart.series[1].line]
    assert len(pow_k.band.outline) == 20 and pow_k.band.outline[0][0] == pow_k.band.outline[-1][0] == chart.left
    assert pow_k.marker is not None and (pow_k.marker.k, pow_k.marker.index) == (3, 2)
    assert pow_k.marker.centre == pow_k.line[2]
    assert curve_chart(curve(10), k=20, corrected=curve(10, bands=True)).corrected[0].marker is None


def test_bars_are_proportional_to_the_means() -> None:
    chart = bar_chart([("a", "A", 1.0, 3), ("b", "B", 0.25, 3), ("c", "C", 0.0, 3)], emphasised="b")
    assert [bar.length for bar in chart.bars] == [chart.track, chart.track / 4, 0]
    assert [bar.emphasised for bar in chart.bars] == [False, True, False]
    assert chart.bars[1].track_start[1] > chart.bars[0].track_start[1]


def test_svg_numbers_keep_one_decimal_and_meters_and_colours_are_clamped() -> None:
    assert svg_points([(1, 2.25), (3.04, 4)]) == "1.0,2.2 3.0,4.0"
    assert (meter_percent(None), meter_percent(-1), meter_percent(0.5), meter_percent(2)) == (0.0, 0.0, 50.0, 100.0)
    assert heat_colour(-1) == "hsl(0 70% 88%)" and heat_colour(1.5) == "hsl(120 70% 88%)"
