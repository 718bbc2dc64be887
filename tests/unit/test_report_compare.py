"""The report's comparison section: the verdict, the forest plot where the axis puts each
difference, the per-metric table, what was not paired; and no trace of it without a comparison."""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.report import render_html
from fair_forge_core.report.charts import (
    FOREST_HIGHER,
    FOREST_LOWER,
    FOREST_NEUTRAL,
    forest_plot,
    forest_range,
)
from fair_forge_core.report.values import FORMATS, VERDICT_LABELS
from fair_forge_core.schemas import EvaluationResult, RunRequest
from tests.report_html import VOID, Element, by_id, parse, resolve, tied_numbers

ROOT = Path(__file__).resolve().parents[2]
BODY = json.loads((ROOT / "examples" / "compare_agents.json").read_text())
TASKS = sorted({d["task_id"] for d in BODY["datasets"]})
BASELINE, CANDIDATE = BODY["config"]["compare"]["baseline"], BODY["config"]["compare"]["candidate"]
# The axis half-widths the forest plot documents (charts.FOREST_RANGES), written out here on purpose.
DOCUMENTED_RANGES = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0)


def evaluate_body(body: dict[str, Any]) -> EvaluationResult:
    request = RunRequest.model_validate(body)
    return evaluate_sync(request.datasets, ReferenceJudge(), request.config)


def as_json(result: EvaluationResult) -> dict[str, Any]:
    return json.loads(json.dumps(result.model_dump(mode="json")))


@pytest.fixture(scope="module")
def improved() -> dict[str, Any]:
    """examples/compare_agents.json as is: every metric significantly higher for the candidate."""
    return as_json(evaluate_body(BODY))


@pytest.fixture(scope="module")
def partial() -> dict[str, Any]:
    """The baseline keeps two attempts a task (< k = 3: the unbiased metrics are not computed) and
    the candidate loses its last task (scored for the baseline only)."""
    seen: dict[tuple[str, str], int] = defaultdict(int)
    datasets = []
    for dataset in BODY["datasets"]:
        key = (dataset["assistant_id"], dataset["task_id"])
        seen[key] += 1
        if dataset["assistant_id"] == BASELINE and seen[key] > 2:
            continue
        if dataset["assistant_id"] == CANDIDATE and dataset["task_id"] == TASKS[-1]:
            continue
        datasets.append(dataset)
    return as_json(evaluate_body({**BODY, "datasets": datasets}))


@pytest.fixture(scope="module")
def few() -> dict[str, Any]:
    """Four tasks: nothing can be tested (2/2⁴ > 0.05), the verdict is not_tested and tasks_needed is set."""
    return as_json(evaluate_body({**BODY, "datasets": [d for d in BODY["datasets"] if d["task_id"] in TASKS[:4]]}))


@pytest.fixture(scope="module")
def regressed() -> dict[str, Any]:
    """The example with the two assistants swapped: every metric significantly lower."""
    config = {**BODY["config"], "compare": {"baseline": CANDIDATE, "candidate": BASELINE}}
    return as_json(evaluate_body({**BODY, "config": config}))


def comparison_of(data: dict[str, Any]) -> dict[str, Any]:
    comparison: dict[str, Any] = data["aggregated_metrics"]["comparison"]
    assert comparison is not None
    return comparison


def section(page: str) -> list[Element]:
    """The elements of the comparison section, in document order."""
    start = page.index('<section id="comparison"')
    return parse(page[start : page.index("</section>", start) + len("</section>")])


def classed(elements: list[Element], tag: str, cls: str) -> list[Element]:
    return [e for e in elements if e.tag == tag and cls in e.classes]


def forest_rows(elements: list[Element]) -> list[Element]:
    return classed(elements, "g", "forest-row")


def documented_half_width(comparison: dict[str, Any]) -> float:
    """R of the axis [−R, R] by its documented rule: the first documented range ≥ max |value|."""
    values = [m[n] for m in comparison["metrics"] for n in ("difference", "ci_low", "ci_high") if m[n] is not None]
    widest = max(abs(v) for v in values)
    return next(r for r in DOCUMENTED_RANGES if widest <= r + 1e-9)


def axis_x(elements: list[Element], comparison: dict[str, Any], value: float) -> float:
    """Where the axis drawn in the page maps `value`: left + (value + R) / 2R · (right − left)."""
    (axis,) = classed(elements, "line", "forest-axis")
    left, right = float(axis.attrs["x1"]), float(axis.attrs["x2"])
    half = documented_half_width(comparison)
    return left + (value + half) / (2 * half) * (right - left)


# --------------------------------------------------------------------------- the section


def test_the_section_states_the_verdict_and_its_figures(improved: dict[str, Any]) -> None:
    comparison = comparison_of(improved)
    elements = parse(render_html(improved))
    assert [e.attrs["id"] for e in elements if e.tag == "section"].index("comparison") == [
        e.attrs["id"] for e in elements if e.tag == "section"
    ].index("assistants") + 1, "the comparison follows the assistants"
    mine = section(render_html(improved))
    (verdict,) = classed(mine, "span", "verdict")
    assert comparison["verdict"] == "improved" and verdict.text == "Improved"
    (explanation,) = classed(mine, "p", "verdict-explanation")
    assert explanation.text == comparison["verdict_explanation"]
    facts = {
        dt.text: dd.text
        for dt, dd in zip([e for e in mine if e.tag == "dt"], [e for e in mine if e.tag == "dd"], strict=True)
    }
    assert facts["Confidence"] == "95%"
    assert facts["Shared tasks"] == str(comparison["shared_tasks"]) == "12"
    assert facts["P(candidate better)"] == "> 0.999" and comparison["probability_candidate_better"] > 0.999
    pass_at_1 = comparison["metrics"][0]
    assert pass_at_1["metric"] == "pass@1"
    assert facts["Minimum detectable effect"].startswith(f"{pass_at_1['minimum_detectable_effect']:.3f}")
    assert (
        facts["Successes / scored attempts"]
        == f"baseline {comparison['baseline_successes']} / {comparison['baseline_attempts']}"
        f" · candidate {comparison['candidate_successes']} / {comparison['candidate_attempts']}"
    )
    assert "Tasks needed" not in facts  # only for an inconclusive verdict


def test_every_number_in_the_section_is_the_json_value_in_its_format(improved: dict[str, Any]) -> None:
    tied = tied_numbers(section(render_html(improved)))
    assert len(tied) > 60
    for element, path, shown in tied:
        assert path[:2] == ["aggregated_metrics", "comparison"]
        assert shown == resolve(improved, path), path
        style = element.attrs.get("data-format", "number")
        text = FORMATS[style](shown)
        if element.tag == "circle":  # a dot: its value is in its tooltip
            assert element.text.endswith(text), path
        else:
            assert element.text.strip() == text, (path, element.text)
    # the exact spellings a reader sees
    row = next(e for e in classed(section(render_html(improved)), "tr", "compare-row"))
    assert "+0.583" in row.text and "0.0005" in row.text and "[+0.333, +0.806]" in row.text


def test_each_dot_is_where_the_axis_maps_its_difference(improved: dict[str, Any], few: dict[str, Any]) -> None:
    for data in (improved, few):
        comparison = comparison_of(data)
        elements = section(render_html(data))
        dots = classed(elements, "circle", "forest-dot")
        assert len(dots) == len(comparison["metrics"])
        for dot, metric in zip(dots, comparison["metrics"], strict=True):
            assert float(dot.attrs["cx"]) == pytest.approx(
                axis_x(elements, comparison, metric["difference"]), abs=0.051
            )


def test_each_interval_runs_from_ci_low_to_ci_high(improved: dict[str, Any], few: dict[str, Any]) -> None:
    for data in (improved, few):
        comparison = comparison_of(data)
        elements = section(render_html(data))
        lines = classed(elements, "line", "forest-ci")
        assert len(lines) == len(comparison["metrics"])
        for line, metric in zip(lines, comparison["metrics"], strict=True):
            assert json.loads(line.attrs["data-ci-low"]) == metric["ci_low"]
            assert json.loads(line.attrs["data-ci-high"]) == metric["ci_high"]
            assert float(line.attrs["x1"]) == pytest.approx(axis_x(elements, comparison, metric["ci_low"]), abs=0.051)
            assert float(line.attrs["x2"]) == pytest.approx(axis_x(elements, comparison, metric["ci_high"]), abs=0.051)
    # few has intervals on both sides of 0: the axis does span negative differences
    assert min(m["ci_low"] for m in comparison_of(few)["metrics"]) < 0


def test_the_zero_line_and_the_ticks_sit_at_their_values(improved: dict[str, Any], few: dict[str, Any]) -> None:
    for data in (improved, few):
        comparison = comparison_of(data)
        elements = section(render_html(data))
        (zero,) = classed(elements, "line", "forest-zero")
        assert float(zero.attrs["x1"]) == float(zero.attrs["x2"])
        assert float(zero.attrs["x1"]) == pytest.approx(axis_x(elements, comparison, 0.0), abs=0.051)
        ticks = [e for e in classed(elements, "text", "tick") if "data-position" in e.attrs]
        half = documented_half_width(comparison)
        values = [float(t.text.replace("−", "-")) for t in ticks]
        assert values == pytest.approx([-half, -half / 2, 0, half / 2, half])
        for tick, value in zip(ticks, values, strict=True):
            assert float(tick.attrs["x"]) == pytest.approx(axis_x(elements, comparison, value), abs=0.051)


@pytest.mark.parametrize(
    ("values", "half"),
    [
        ([0.05], 0.1),
        ([0.1], 0.1),
        ([0.15, -0.02], 0.2),
        ([-0.39], 0.4),
        ([0.61], 0.8),
        ([0.2000000000001], 0.2),
        ([1.0], 1.0),
        ([1.3], 1.0),
        ([], 0.1),
    ],
)
def test_the_axis_range_is_the_first_documented_half_width_that_fits(values: list[float], half: float) -> None:
    assert forest_range(values) == half


def synthetic(*metrics: tuple[str, float | None, float | None, float | None, float | None, bool]) -> dict[str, Any]:
    """A comparison's JSON with (metric, difference, ci_low, ci_high, p_value_holm, significant) rows."""
    return {
        "k": 3,
        "metrics": [
            {"metric": name, "difference": d, "ci_low": lo, "ci_high": hi, "p_value_holm": p, "significant": s}
            for name, d, lo, hi, p, s in metrics
        ],
    }


def test_forest_plot_rows_states_and_colours_follow_the_documented_rules() -> None:
    plot = forest_plot(
        synthetic(
            ("pass@1", -0.1, -0.15, -0.05, 0.001, True),
            ("pass@k", 0.02, -0.03, 0.07, 0.4, False),
            ("pass^k", 0.01, -0.01, 0.03, None, False),
            ("pass@k_unbiased", None, None, None, None, False),
        )
    )
    assert plot is not None
    assert (plot.x_min, plot.x_max) == (-0.2, 0.2)
    width = plot.plot_right - plot.left
    assert plot.rows[0].dot == (plot.left + 0.25 * width, plot.top + 0.5 * plot.row_height)
    assert plot.rows[0].interval == pytest.approx((plot.left + 0.125 * width, plot.left + 0.375 * width))
    assert plot.zero.x == plot.left + width / 2
    assert [r.state for r in plot.rows] == ["lower", "not_significant", "not_tested", "not_computed"]
    assert [r.colour for r in plot.rows] == [FOREST_LOWER, FOREST_NEUTRAL, FOREST_NEUTRAL, FOREST_NEUTRAL]
    assert plot.rows[3].dot is None and plot.rows[3].interval is None
    # one name per figure (issue #33 item 2): the plug-in figures carry their qualifier, the
    # per-task unbiased ones are the plain names
    assert [r.label for r in plot.rows] == [
        "pass@1",
        "pass@3 (per-task plug-in)",
        "pass^3 (per-task plug-in)",
        "pass@3",
    ]
    assert forest_plot(synthetic(("pass@1", None, None, None, None, False))) is None


def test_significant_rows_are_marked_in_text_not_only_colour(
    improved: dict[str, Any], regressed: dict[str, Any], few: dict[str, Any]
) -> None:
    expected = {"improved": ("▲ significant", FOREST_HIGHER), "regressed": ("▼ significant", FOREST_LOWER)}
    for data in (improved, regressed, few):
        comparison = comparison_of(data)
        elements = section(render_html(data))
        marks = classed(elements, "text", "forest-mark")  # one a row, in the rows' order
        table = classed(elements, "tr", "compare-row")
        for mark, tr, metric in zip(marks, table, comparison["metrics"], strict=True):
            if metric["significant"]:
                text, colour = expected[comparison["task_level_verdict"]]
                assert mark.text == text and mark.attrs["fill"] == colour
                assert tr.text.count("yes") == 1 and text.split()[0] in tr.text
            else:
                assert "significant" not in mark.text or mark.text == "not significant"
                assert mark.attrs["fill"] == FOREST_NEUTRAL
                assert "▲" not in tr.text and "▼" not in tr.text
        if comparison["task_level_verdict"] == "not_tested":
            assert {e.text for e in classed(elements, "text", "forest-mark")} == {"not tested"}
        else:
            assert all(m["significant"] for m in comparison["metrics"])


def test_a_metric_without_a_difference_is_listed_as_not_computed_with_its_note(partial: dict[str, Any]) -> None:
    comparison = comparison_of(partial)
    missing = [m for m in comparison["metrics"] if m["difference"] is None]
    assert [m["metric"] for m in missing] == ["pass@k_unbiased", "pass^k_unbiased"]
    elements = section(render_html(partial))
    rows = {r.attrs["data-metric"]: r for r in forest_rows(elements)}
    assert set(rows) == {m["metric"] for m in comparison["metrics"]}
    for metric in comparison["metrics"]:
        row = rows[metric["metric"]]
        if metric["difference"] is None:
            assert row.attrs["data-state"] == "not_computed" and "not computed" in row.text
        else:
            assert "not computed" not in row.text
    assert len(classed(elements, "circle", "forest-dot")) == len(comparison["metrics"]) - len(missing)
    assert len(classed(elements, "line", "forest-ci")) == len(comparison["metrics"]) - len(missing)
    assert [e.text for e in classed(elements, "text", "forest-missing")] == ["not computed"] * len(missing)
    table = {r.attrs["data-metric"]: r for r in classed(elements, "tr", "compare-row")}
    for metric in missing:
        assert f"not computed: {metric['note']}" in table[metric["metric"]].text
    notes = by_id(elements, "comparison-metric-notes")
    assert notes is not None
    assert [li.text for li in notes_items(elements)] == [
        f"pass@3: not computed — {missing[0]['note']}",
        f"pass^3: not computed — {missing[1]['note']}",
    ]


def notes_items(elements: list[Element]) -> list[Element]:
    return [e for e in elements if e.tag == "li" and "data-metric-index" in e.attrs]


def test_unpaired_tasks_unscored_counts_and_notes_are_listed(partial: dict[str, Any]) -> None:
    comparison = comparison_of(partial)
    assert comparison["baseline_only_tasks"] == [TASKS[-1]] and comparison["notes"]
    elements = section(render_html(partial))
    unmatched = by_id(elements, "comparison-unmatched")
    assert unmatched is not None
    baseline_only = next(e for e in elements if e.tag == "p" and e.attrs.get("data-side") == "baseline")
    assert baseline_only.text == f"Tasks scored only for the baseline (1): {TASKS[-1]}"
    candidate_only = next(e for e in elements if e.tag == "p" and e.attrs.get("data-side") == "candidate")
    assert candidate_only.text == "Tasks scored only for the candidate (0): none"
    assert "Unscored conversations left out: baseline 0, candidate 0." in unmatched.text
    notes = by_id(elements, "comparison-notes")
    assert notes is not None
    assert [e.text for e in elements if e.tag == "li" and "data-metric-index" not in e.attrs] == comparison["notes"]


def test_a_not_tested_verdict_states_the_tasks_needed(few: dict[str, Any], improved: dict[str, Any]) -> None:
    comparison = comparison_of(few)
    # four tasks × 3 attempts: the task-level tests cannot be tested (2/2⁴ > 0.05), while the
    # attempt-level test (the gate of `config.compare`) can: the tasks needed are the task level's
    assert comparison["task_level_verdict"] == "not_tested" and comparison["verdict"] == "improved"
    data = with_comparison(few, compare_tasks(few))
    elements = section(render_html(data))
    (verdict,) = classed(elements, "span", "verdict")
    assert verdict.text == VERDICT_LABELS["not_tested"] == "Not tested"
    assert "verdict-not_tested" in verdict.classes
    assert by_id(section(render_html(few)), "comparison-tasks-needed") is not None
    needed = by_id(elements, "comparison-tasks-needed")
    assert needed is not None and needed.text.startswith(f"Tasks needed{comparison['metrics'][0]['tasks_needed']} ")
    header = [e.text for e in elements if e.tag == "th" and e.attrs.get("scope") == "col"]
    assert header[-1] == "Tasks needed"
    assert by_id(section(render_html(improved)), "comparison-tasks-needed") is None


# --------------------------------------------------------------------------- without a comparison


def test_without_a_comparison_the_page_is_the_one_it_always_was(improved: dict[str, Any]) -> None:
    with_comparison = render_html(improved)
    stripped = copy.deepcopy(improved)
    stripped["aggregated_metrics"]["comparison"] = None
    without = render_html(stripped)
    # the same request evaluated without config.compare renders the same bytes
    assert without == render_html(evaluate_body({**BODY, "config": {"k": BODY["config"]["k"]}}))
    assert 'id="comparison"' not in without and "forest" not in without and "verdict-" not in without
    # and the comparison adds its section and its CSS, nothing else
    start = with_comparison.index('<section id="comparison"')
    end = with_comparison.index("</section>\n", start) + len("</section>\n")
    css_start = with_comparison.index("#comparison h3")
    css_end = with_comparison.index("</style>")
    assert with_comparison[:css_start] + with_comparison[css_end:start] + with_comparison[end:] == without


# --------------------------------------------------------------------------- valid, escaped, self-contained


class _Nesting(HTMLParser):
    """Fails on an end tag that does not close the innermost open element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.open[-1] if self.open else None}>")
        else:
            self.open.pop()


def test_the_page_nests_properly_is_self_contained_and_deterministic(
    improved: dict[str, Any], partial: dict[str, Any], few: dict[str, Any]
) -> None:
    for data in (improved, partial, few):
        page = render_html(data)
        checker = _Nesting()
        checker.feed(page)
        checker.close()
        assert checker.errors == [] and checker.open == []
        ids = [e.attrs["id"] for e in parse(page) if "id" in e.attrs]
        assert len(ids) == len(set(ids))
        lowered = page.lower()
        for forbidden in ("<script", "<link", " src=", "url(", "@import", "http://", "https://", "<iframe", "<img"):
            assert forbidden not in lowered, forbidden
        assert page == render_html(data) == render_html(EvaluationResult.model_validate(data))
    # the checker does catch a misnested page
    broken = _Nesting()
    broken.feed("<div><p></div></p>")
    assert broken.errors


def test_text_from_the_comparison_is_escaped(partial: dict[str, Any]) -> None:
    data = copy.deepcopy(partial)
    evil = '<script>alert("x")</script>'
    comparison = comparison_of(data)
    comparison["verdict_explanation"] = f"because {evil}"
    comparison["notes"] = [f"note {evil}"]
    comparison["baseline_only_tasks"] = [evil]
    comparison["baseline_unscored_by_task"] = {evil: 2}
    comparison["metrics"][3]["note"] = f"metric {evil}"
    page = render_html(data)
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    elements = section(page)
    assert any(e.tag == "code" and e.text == evil for e in elements)
    assert any(e.tag == "li" and e.text == f"note {evil}" for e in elements)


# --------------------------------------------------------------------------- small samples and judging


def with_comparison(data: dict[str, Any], comparison: Any) -> dict[str, Any]:
    """`data` with its comparison replaced by `comparison` (a `Comparison`), as its JSON."""
    page = copy.deepcopy(data)
    page["aggregated_metrics"]["comparison"] = json.loads(json.dumps(comparison.model_dump(mode="json")))
    return page


def compare_tasks(data: dict[str, Any]) -> Any:
    """The comparison of `data`'s two assistants gated by the task-level tests (`population="tasks"`)."""
    from fair_forge_core.compare import compare, outcomes_from_result

    return compare(outcomes_from_result(data, BASELINE), outcomes_from_result(data, CANDIDATE), k=3, population="tasks")


def css_rule(page: str, selector: str) -> str:
    start = page.index(selector + " {")
    return page[start : page.index("}", start)]


def test_the_issues_8_task_regression_is_regressed_with_the_exact_test_named(improved: dict[str, Any]) -> None:
    from fair_forge_core.compare import compare

    base = [(f"t{i}", j < (3 if i < 6 else 2)) for i in range(8) for j in range(3)]
    cand = [(f"t{i}", j < 1) for i in range(8) for j in range(3)]
    data = with_comparison(improved, compare(base, cand, k=3, population="tasks"))
    elements = section(render_html(data))
    (verdict,) = classed(elements, "span", "verdict")
    assert verdict.text == "Regressed"
    rows = classed(elements, "tr", "compare-row")
    assert len(rows) == 5 and all("exact sign-flip" in row.text for row in rows)
    # pass@3 unbiased: 1 on every task for both sides — no variation, not a dash
    unbiased = next(row for row in rows if row.attrs["data-metric"] == "pass@k_unbiased")
    assert "n/a (no variation)" in unbiased.text
    others = [row for row in rows if row.attrs["data-metric"] != "pass@k_unbiased"]
    assert all("n/a (no variation)" not in row.text for row in others)


def test_a_not_tested_verdict_has_its_own_look_and_no_variation_reads_as_such(improved: dict[str, Any]) -> None:
    from fair_forge_core.compare import compare

    base = [(f"t{i}", True) for i in range(5) for _ in range(3)]
    cand = [(f"t{i}", False) for i in range(5) for _ in range(3)]
    comparison = compare(base, cand, k=3, population="tasks")
    assert comparison.verdict == "not_tested"
    data = with_comparison(improved, comparison)
    page = render_html(data)
    elements = section(page)
    (verdict,) = classed(elements, "span", "verdict")
    assert verdict.text == "Not tested" and "verdict-not_tested" in verdict.classes
    not_tested = css_rule(page, ".verdict-not_tested")
    for other in (".verdict-improved", ".verdict-inconclusive", ".verdict-regressed"):
        colours = css_rule(page, other)
        assert colours.split("{")[1] != not_tested.split("{")[1], other
    facts = {
        dt.text: dd.text
        for dt, dd in zip([e for e in elements if e.tag == "dt"], [e for e in elements if e.tag == "dd"], strict=True)
    }
    assert facts["Minimum detectable effect"].startswith("n/a (no variation)")
    assert facts["Tasks needed"].startswith("6 ")  # the exact test's minimum, 2/2⁶ ≤ 0.05
    notes = [li.text for li in notes_items(elements)]
    assert notes and all(
        note.endswith("5 tasks cannot show a difference at 95%: the exact sign-flip test's smallest p-value is 0.0625")
        for note in notes
    )


def test_judging_differences_are_listed(improved: dict[str, Any]) -> None:
    comparison = copy.deepcopy(comparison_of(improved))
    assert (
        comparison["judging_differences"] == [] and by_id(section(render_html(improved)), "comparison-judging") is None
    )
    lines = ["different threshold: baseline 0.7 vs candidate 0.8", "different k: baseline 3 vs candidate <5>"]
    data = copy.deepcopy(improved)
    data["aggregated_metrics"]["comparison"]["judging_differences"] = lines
    page = render_html(data)
    elements = section(page)
    block = by_id(elements, "comparison-judging")
    assert block is not None and block.text.startswith("Judged differently")
    items = [e.text for e in elements if e.tag == "li" and e.text in lines]
    assert items == lines
    assert "candidate &lt;5&gt;" in page  # escaped like every other text


def test_the_tasks_that_changed_are_a_table_worst_first_tied_to_the_json(improved: dict[str, Any]) -> None:
    from fair_forge_core.compare import compare

    spec_b = {"a": (3, 3), "b": (3, 3), "c": (3, 1), "d": (3, 2)}
    spec_c = {"a": (3, 0), "b": (3, 3), "c": (3, 3), "d": (3, 1)}
    base = [(t, i < c) for t, (n, c) in spec_b.items() for i in range(n)]
    cand = [(t, i < c) for t, (n, c) in spec_c.items() for i in range(n)]
    data = with_comparison(improved, compare(base, cand, k=3))
    elements = section(render_html(data))
    table = by_id(elements, "comparison-changed-tasks")
    assert table is not None
    rows = [e for e in elements if e.tag == "tr" and "changed-task" in e.classes]
    # −1 (a), −1/3 (d), +2/3 (c); b did not change
    assert [r.attrs["data-task"] for r in rows] == ["a", "d", "c"]
    assert rows[0].text.startswith("a3/30/3")
    changed = data["aggregated_metrics"]["comparison"]["changed_tasks"]
    tied = {tuple(path): value for _, path, value in tied_numbers(elements)}
    for i, task in enumerate(changed):
        assert tied[("aggregated_metrics", "comparison", "changed_tasks", i, "p_value")] == task["p_value"]
        assert tied[("aggregated_metrics", "comparison", "changed_tasks", i, "difference")] == task["difference"]
    population = by_id(elements, "comparison-population")
    assert population is not None and "--population attempts" in population.text


def test_equal_differences_read_no_variation_in_the_report(improved: dict[str, Any]) -> None:
    from fair_forge_core.compare import compare

    # per-task differences 2/3 − 1/3 and 1 − 2/3: equal, though not in floating point
    base = [(f"t{i}", j < (1 if i % 2 else 2)) for i in range(6) for j in range(3)]
    cand = [(f"t{i}", j < (2 if i % 2 else 3)) for i in range(6) for j in range(3)]
    comparison = compare(base, cand, k=1)
    assert comparison.metrics[0].standard_error == 0.0
    elements = section(render_html(with_comparison(improved, comparison)))
    (row,) = classed(elements, "tr", "compare-row")
    assert "n/a (no variation)" in row.text and "0.000" not in row.text.split("n/a")[-1]
