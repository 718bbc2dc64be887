"""The HTML report of a run corrected for the judge's error (issue #36): the corrected pass@K and
pass^K bands and mean lines over Figure 1, the corrected key figures beside the observed ones with
the calibration's counts and source, "identity" saying the figures are today's, and the judge-noise
line. The figures' correctness is tested in tests/unit/test_judge_error.py; here, that the report
shows exactly the result's own fields."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fair_forge_core.headline import CORRECTED_LABEL
from fair_forge_core.judge_noise import SampledAttempt, noise_decomposition
from fair_forge_core.report import format_number, render_html
from fair_forge_core.report.charts import CORRECTED_AT_COLOUR, CORRECTED_POW_COLOUR
from fair_forge_core.schemas import EvaluationResult, NoiseDecomposition
from tests.report_html import Element, by_id, parse, resolve, tied_numbers
from tests.unit.test_report import as_json, evaluate_example

T, F = True, False


def reference_identity() -> str:
    """The offline judge's identity on examples/flaky_tasks.json: what a calibration of it names."""
    return evaluate_example("flaky_tasks.json").provenance.judges[0].identity  # type: ignore[union-attr]


def corrected_run(tpr: tuple[int, int], tnr: tuple[int, int], source: str | None, **config: Any) -> EvaluationResult:
    judge_error = {
        "judge": reference_identity(),
        "tpr": {"successes": tpr[0], "n": tpr[1]},
        "tnr": {"successes": tnr[0], "n": tnr[1]},
        "source": source,
    }
    return evaluate_example("flaky_tasks.json", judge_error=judge_error, **config)


def noisy_judge() -> NoiseDecomposition:
    """A split with the judge's samples disagreeing (the offline judge's never do)."""
    tasks = {
        "a": [SampledAttempt(T, ((T, F, T),)), SampledAttempt(T, ((T, T, T),)), SampledAttempt(T, ((F, F, F),))],
        "b": [SampledAttempt(T, ((T, F, F),)), SampledAttempt(T, ((F, T, T),)), SampledAttempt(T, ((T, T, F),))],
    }
    return noise_decomposition(tasks, 3)


@pytest.fixture(scope="module")
def corrected() -> EvaluationResult:
    """The starter calibration's counts (TPR 25/29, TNR 26/26), Monte Carlo; with a noisy judge's split."""
    result = corrected_run((25, 29), (26, 26), "calibration.json", judge_samples=3)
    assert result.aggregated_metrics.judge_corrected is not None
    assert result.aggregated_metrics.judge_corrected.method == "monte_carlo"
    result.aggregated_metrics.judge_noise = noisy_judge()
    return result


@pytest.fixture(scope="module")
def identity() -> EvaluationResult:
    """A perfect calibration, its source a file name a browser would read as markup."""
    result = corrected_run((29, 29), (26, 26), "<b>perfect</b>.json")
    assert result.aggregated_metrics.judge_corrected is not None
    assert result.aggregated_metrics.judge_corrected.method == "identity"
    return result


def classed(elements: list[Element], tag: str, cls: str) -> dict[str, Element]:
    """The elements of `tag` with class `cls`, by their data-series."""
    return {e.attrs["data-series"]: e for e in elements if e.tag == tag and cls in e.classes}


def points(element: Element) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in (p.split(",") for p in element.attrs["points"].split())]


def text(element: Element | None) -> str:
    assert element is not None
    return " ".join(element.text.split())


def test_the_corrected_bands_and_mean_lines_are_drawn_over_figure_1(corrected: EvaluationResult) -> None:
    curve = as_json(corrected)["aggregated_metrics"]["judge_corrected"]["curve"]
    assert [p["k"] for p in curve] == list(range(1, 11))
    elements = parse(render_html(corrected))
    bands, lines = classed(elements, "polygon", "corrected-band"), classed(elements, "polyline", "corrected-line")
    assert set(bands) == set(lines) == {"pass_at_k", "pass_pow_k"}
    assert {bands["pass_at_k"].attrs["fill"], bands["pass_pow_k"].attrs["fill"]} == {
        CORRECTED_AT_COLOUR,
        CORRECTED_POW_COLOUR,
    }
    observed_x = [x for x, _ in points(classed(elements, "polyline", "line")["pass_pow_k"])]
    for metric in ("pass_at_k", "pass_pow_k"):
        band, line = bands[metric], lines[metric]
        # low bounds left to right, then high bounds back: two points per K
        assert len(points(band)) == 2 * len(curve) == 20
        assert json.loads(band.attrs["data-low"]) == [p[f"{metric}_ci_low"] for p in curve]
        assert json.loads(band.attrs["data-high"]) == [p[f"{metric}_ci_high"] for p in curve]
        assert json.loads(line.attrs["data-mean"]) == [p[metric] for p in curve]
        assert json.loads(line.attrs["data-k"]) == list(range(1, 11))
        assert [x for x, _ in points(line)] == observed_x  # on the observed curves' K axis
        lows, highs = points(band)[:10], points(band)[10:][::-1]
        for (_, low), (_, mean), (_, high) in zip(lows, points(line), highs, strict=True):
            assert high <= mean <= low  # SVG y grows downwards: the band encloses its mean
    assert "stroke-dasharray" in lines["pass_pow_k"].attrs and "stroke-dasharray" not in lines["pass_at_k"].attrs


def test_the_legend_names_the_corrected_figures_as_the_headline_does(corrected: EvaluationResult) -> None:
    elements = parse(render_html(corrected))
    legend = [e for e in elements if e.tag == "li" and "corrected" in e.classes]
    assert [text(e) for e in legend] == [
        "pass@K (per task, corrected for the judge's error) — posterior mean and 95% band",
        "pass^K (per task, corrected for the judge's error) — posterior mean and 95% band",
    ]
    assert CORRECTED_LABEL == "per task, corrected for the judge's error"
    assert text(by_id(elements, "corrected-caption")) == (
        "Over them, pass@K (per task, corrected for the judge's error) and pass^K (per task, corrected for the "
        "judge's error): their posterior means and 95% posterior bands at the judge's measured error (TPR 25/29, "
        "TNR 26/26, calibration.json), over the 4 tasks with 3 or more attempts: per task, where the observed "
        "curves are pooled over conversations."
    )


def test_the_corrected_key_figures_stand_beside_the_observed_ones(corrected: EvaluationResult) -> None:
    data = as_json(corrected)
    c, observed = data["aggregated_metrics"]["judge_corrected"], data["aggregated_metrics"]["per_task"]
    elements = parse(render_html(corrected))
    tile = by_id(elements, "kpi-corrected")
    assert tile is not None and "wide" in tile.classes
    assert text(tile) == (
        "pass@3 / pass^3 (per task, corrected for the judge's error)"
        f"{c['pass_at_k']:.3f}/{c['pass_pow_k']:.3f}"
        f"pass@3 95% posterior {c['pass_at_k_ci_low']:.3f} – {c['pass_at_k_ci_high']:.3f} · "
        f"pass^3 95% posterior {c['pass_pow_k_ci_low']:.3f} – {c['pass_pow_k_ci_high']:.3f} · "
        f"observed {observed['pass_at_k']:.3f}/{observed['pass_pow_k']:.3f} per task · "
        "TPR 25/29, TNR 26/26, calibration.json · posterior, 4000 seeded draws; 2 task(s) clipped to [0, 1]"
    )
    assert c["clipped_tasks"] == ["opening_hours", "shipping_cost"] and c["draws"] == 4000


def test_every_corrected_number_shown_is_the_json_value(corrected: EvaluationResult) -> None:
    data = as_json(corrected)
    tied = tied_numbers(parse(render_html(corrected)))
    shown = {json.dumps(path): (element, value) for element, path, value in tied}
    base = ["aggregated_metrics", "judge_corrected"]
    for name in ("pass_at_k", "pass_pow_k", "pass_at_k_ci_low", "pass_at_k_ci_high", "pass_pow_k_ci_low"):
        element, value = shown[json.dumps([*base, name])]
        assert value == resolve(data, [*base, name]) and element.text.strip() == format_number(value)
    for metric in ("pass_at_k", "pass_pow_k"):  # the marker at k = 3, the curve's third point
        element, value = shown[json.dumps([*base, "curve", 2, metric])]
        assert element.tag == "circle" and value == data["aggregated_metrics"]["judge_corrected"][metric]
        assert (
            text(element)
            == f"{metric.replace('_at_k', '@3').replace('_pow_k', '^3')} ({CORRECTED_LABEL}) = {value:.3f}"
        )


def test_the_judge_noise_line(corrected: EvaluationResult) -> None:
    noise = corrected.aggregated_metrics.judge_noise
    assert noise is not None and noise.judge_share is not None
    line = by_id(parse(render_html(corrected)), "judge-noise")
    judge = round(noise.judge_share * 100)
    assert judge == 80
    assert text(line) == (
        "judge noise: 80% of the variance in judged success is between the judge's samples of one transcript "
        f"(latent class, {noise.tasks} task(s)); agent 20%"
    )
    assert line is not None and json.loads(line.attrs["data-judge-share"]) == noise.judge_share
    assert line.attrs["data-estimator"] == "latent_class"


def test_a_perfect_calibration_says_the_figures_are_todays_and_draws_no_band(identity: EvaluationResult) -> None:
    data = as_json(identity)
    c, observed = data["aggregated_metrics"]["judge_corrected"], data["aggregated_metrics"]["per_task"]
    page = render_html(identity)
    elements = parse(page)
    assert not classed(elements, "polygon", "corrected-band") and not classed(elements, "polyline", "corrected-line")
    assert by_id(elements, "corrected-caption") is None
    assert not [e for e in elements if e.tag == "li" and "corrected" in e.classes]
    assert (c["pass_pow_k"], c["pass_at_k"]) == (observed["pass_pow_k"], observed["pass_at_k"])
    assert text(by_id(elements, "kpi-corrected")) == (
        "pass@3 / pass^3 (per task, corrected for the judge's error)"
        f"{c['pass_at_k']:.3f}/{c['pass_pow_k']:.3f}"
        f"pass@3 95% Wilson {c['pass_at_k_ci_low']:.3f} – {c['pass_at_k_ci_high']:.3f} · "
        f"pass^3 95% Wilson {c['pass_pow_k_ci_low']:.3f} – {c['pass_pow_k_ci_high']:.3f} · "
        f"observed {observed['pass_at_k']:.3f}/{observed['pass_pow_k']:.3f} per task · "
        "TPR 29/29, TNR 26/26, <b>perfect</b>.json · "
        "exact judge: today's figures"
    )
    # the calibration's source is the user's text: written escaped, never as markup
    assert "&lt;b&gt;perfect&lt;/b&gt;.json" in page and "<b>perfect</b>" not in page
    assert by_id(elements, "judge-noise") is None  # one sample a turn: no split


def test_without_the_judges_error_the_report_is_as_it_was() -> None:
    page = render_html(evaluate_example("flaky_tasks.json"))
    elements = parse(page)
    for ident in ("kpi-corrected", "corrected-caption", "judge-noise"):
        assert by_id(elements, ident) is None
    assert "corrected-band" not in page.split("</style>")[1] and "corrected-line" not in page.split("</style>")[1]
