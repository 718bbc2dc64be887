"""The HTML report: every figure present, every number identical to the JSON result, user text escaped."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from fair_forge_core.evaluate import build_result, evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.metrics import TurnJudgement, conversation_metrics
from fair_forge_core.report import TIER_LABELS, TOOL_DIMENSIONS, ReportError, format_number, render_html
from fair_forge_core.schemas import EvaluationResult, RunRequest
from tests.report_html import Element, by_id, parse, resolve, tied_numbers

ROOT = Path(__file__).resolve().parents[2]


def evaluate_example(name: str, **config: Any) -> EvaluationResult:
    body = json.loads((ROOT / "examples" / name).read_text())
    body["config"] = {**body.get("config", {}), **config}
    request = RunRequest.model_validate(body)
    return evaluate_sync(request.datasets, ReferenceJudge(), request.config)


@pytest.fixture(scope="module")
def support() -> EvaluationResult:
    """Bayesian, two assistants, tasks with three attempts, failing turns with tools."""
    return evaluate_example("support_agents.json")


@pytest.fixture(scope="module")
def calculator() -> EvaluationResult:
    """Frequentist, one assistant."""
    return evaluate_example("calculator.json")


def as_json(result: EvaluationResult) -> dict[str, Any]:
    """The result exactly as a client reads it: serialised and parsed back."""
    return json.loads(json.dumps(result.model_dump(mode="json")))


def classed(elements: list[Element], tag: str, cls: str) -> list[Element]:
    return [e for e in elements if e.tag == tag and cls in e.classes]


# --------------------------------------------------------------------------- structure


def test_every_figure_and_section_is_present(support: EvaluationResult) -> None:
    elements = parse(render_html(support))
    for ident in (
        "report",
        "summary",
        "tier",
        "kpis",
        "kpi-pass-at-k",
        "kpi-pass-pow-k",
        "kpi-success-rate",
        "kpi-unscored",
        "kpi-unbiased",
        "kpi-pooled",
        "kpi-tier",
        "warnings",
        "fig-pass-curves",
        "fig-tool-breakdown",
        "tool-by-conversation",
        "assistants",
        "assistants-table",
        "conversations",
        "conversations-table",
    ):
        assert by_id(elements, ident) is not None, ident
    lines = {e.attrs["data-series"] for e in classed(elements, "polyline", "line")}
    assert lines == {"pass_at_k", "pass_pow_k"}
    assert (
        "stroke-dasharray"
        not in next(e for e in classed(elements, "polyline", "line") if e.attrs["data-series"] == "pass_at_k").attrs
    )  # pass@K solid, as in the paper
    assert (
        "stroke-dasharray"
        in next(e for e in classed(elements, "polyline", "line") if e.attrs["data-series"] == "pass_pow_k").attrs
    )
    for series in ("pass_at_k", "pass_pow_k"):
        ks = [int(e.attrs["data-k"]) for e in classed(elements, "circle", "point") if e.attrs["data-series"] == series]
        assert ks == list(range(1, 11))
    dimensions = [e.attrs["data-dimension"] for e in classed(elements, "g", "bar")]
    assert dimensions == [key for key, _, _ in TOOL_DIMENSIONS]
    rows = [e for e in elements if e.tag == "tr" and "conv" in e.classes]
    assert len(rows) == len(support.per_conversation_metrics)


def test_every_number_shown_is_the_json_value(support: EvaluationResult) -> None:
    data = as_json(support)
    elements = parse(render_html(support))
    tied = tied_numbers(elements)
    for element, path, shown in tied:
        assert shown == resolve(data, path), path
        if element.tag == "circle":  # a chart point: its value is in data-value and its tooltip
            assert element.text.strip().endswith(format_number(shown)), path
        elif "tier" in element.classes:
            assert element.text.strip() == TIER_LABELS[shown], path
        elif "explanation" in element.classes:
            assert element.text.strip() == shown, path
        else:
            assert element.text.strip() == format_number(shown), (path, element.text)
    paths = {json.dumps(path) for _, path, _ in tied}
    agg = data["aggregated_metrics"]
    # the headline figures, both curves at every k, their bands' ends and every per-assistant figure are tied
    for name in (
        "pass_at_k",
        "pass_pow_k",
        "pass_at_k_ci_low",
        "pass_at_k_ci_high",
        "pass_pow_k_ci_low",
        "pass_pow_k_ci_high",
        "conversation_success_rate",
        "fully_correct_conversations",
        "total_conversations",
        "unscored_conversations",
        "pass_at_k_unbiased",
        "pass_pow_k_unbiased",
        "interpretation",
        "conservative_interpretation",
    ):
        assert json.dumps(["aggregated_metrics", name]) in paths, name
    for index in range(len(agg["curve"])):
        for metric in ("pass_at_k", "pass_pow_k"):
            assert json.dumps(["aggregated_metrics", "curve", index, metric]) in paths
    for assistant in agg["by_assistant"]:
        for name in ("pass_at_k", "pass_pow_k", "conversation_success_rate", "pass_pow_k_ci_low", "interpretation"):
            assert json.dumps(["aggregated_metrics", "by_assistant", assistant, name]) in paths
    for index, conversation in enumerate(data["per_conversation_metrics"]):
        for turn in range(len(conversation["correctness_scores"])):
            assert json.dumps(["per_conversation_metrics", index, "correctness_scores", turn]) in paths
    # the headline as the JSON has it: readiness is decided per task, so the big tile is the
    # per-task pass@k, and the pooled figure is in its own tile, under its qualified name
    tile, pooled = by_id(elements, "kpi-pass-at-k"), by_id(elements, "kpi-pooled")
    assert agg["readiness"]["basis"] == "per_task"
    assert tile is not None and format_number(agg["per_task"]["pass_at_k"]) in tile.text
    assert pooled is not None and format_number(agg["pass_at_k"]) in pooled.text
    assert "pass@3 (pooled posterior mean)" in pooled.text


def test_headline_values_are_exact_not_rounded(support: EvaluationResult) -> None:
    page = render_html(support)
    agg = support.aggregated_metrics
    assert f'data-value="{json.dumps(agg.pass_at_k)}"' in page
    assert f'data-value="{json.dumps(agg.pass_pow_k)}"' in page
    assert f'data-interpretation="{agg.interpretation}"' in page


def test_json_file_form_gives_the_same_numbers_and_shows_the_request_id(support: EvaluationResult) -> None:
    from_model = tied_numbers(parse(render_html(support)))
    response_body = {**as_json(support), "request_id": "req-1234"}
    page = render_html(response_body)
    from_json = tied_numbers(parse(page))
    assert [(p, v) for _, p, v in from_model] == [(p, v) for _, p, v in from_json]
    assert "request req-1234" in page


def test_bayesian_mode_draws_credible_bands_equal_to_the_curve_bounds(support: EvaluationResult) -> None:
    data = as_json(support)
    elements = parse(render_html(support))
    figure = by_id(elements, "fig-pass-curves")
    assert figure is not None and figure.attrs["data-bands"] == "true"
    bands = {e.attrs["data-series"]: e for e in classed(elements, "polygon", "band")}
    assert set(bands) == {"pass_at_k", "pass_pow_k"}
    curve = data["aggregated_metrics"]["curve"]
    for series, band in bands.items():
        assert json.loads(band.attrs["data-low"]) == [p[f"{series}_ci_low"] for p in curve]
        assert json.loads(band.attrs["data-high"]) == [p[f"{series}_ci_high"] for p in curve]
    assert "credible interval" in figure.text


def test_frequentist_mode_draws_no_band(calculator: EvaluationResult) -> None:
    elements = parse(render_html(calculator))
    figure = by_id(elements, "fig-pass-curves")
    assert figure is not None and figure.attrs["data-bands"] == "false"
    assert classed(elements, "polygon", "band") == []
    assert "credible" not in figure.text
    assert all("ci_" not in path[-1] for _, path, _ in tied_numbers(elements) if isinstance(path[-1], str))


def test_assistant_comparison_only_with_several_assistants(
    support: EvaluationResult, calculator: EvaluationResult
) -> None:
    assert by_id(parse(render_html(calculator)), "assistants") is None
    elements = parse(render_html(support))
    rows = [e.attrs["data-assistant"] for e in elements if e.tag == "tr" and "data-assistant" in e.attrs]
    assert rows == sorted(support.aggregated_metrics.by_assistant or {})
    assert len(rows) == 2


def test_tool_breakdown_bars_are_the_means_of_the_json_scores(support: EvaluationResult) -> None:
    data = as_json(support)
    scores = [s for c in data["per_conversation_metrics"] for s in c["tool_correctness_scores"] if s is not None]
    elements = parse(render_html(support))
    for bar in classed(elements, "g", "bar"):
        key = bar.attrs["data-dimension"]
        assert json.loads(bar.attrs["data-mean"]) == pytest.approx(sum(s[key] for s in scores) / len(scores), abs=1e-12)
        assert int(bar.attrs["data-count"]) == len(scores)
        assert bar.text.strip().endswith(format_number(json.loads(bar.attrs["data-mean"])))
    heat_rows = [e for e in elements if e.tag == "tr" and "data-conversation" in e.attrs]
    with_tools = [i for i, c in enumerate(data["per_conversation_metrics"]) if any(c["tool_correctness_scores"])]
    assert [int(r.attrs["data-conversation"]) for r in heat_rows] == with_tools


def test_an_unmeasured_utilization_is_left_out_of_its_mean_not_drawn_as_zero(support: EvaluationResult) -> None:
    # docs/tool-rubric.md#what-was-not-reported-is-not-measured: null utilization is no 0 in the figure.
    data = as_json(support)
    first = next(c for c in data["per_conversation_metrics"] if any(c["tool_correctness_scores"]))
    for score in first["tool_correctness_scores"]:
        if score is not None:
            score["result_utilization"] = None
    scores = [s for c in data["per_conversation_metrics"] for s in c["tool_correctness_scores"] if s is not None]
    measured = [s["result_utilization"] for s in scores if s["result_utilization"] is not None]
    assert 0 < len(measured) < len(scores)
    elements = parse(render_html(data))
    (bar,) = [b for b in classed(elements, "g", "bar") if b.attrs["data-dimension"] == "result_utilization"]
    assert json.loads(bar.attrs["data-mean"]) == pytest.approx(sum(measured) / len(measured), abs=1e-12)
    assert int(bar.attrs["data-count"]) == len(measured)
    # the first heat row is the first conversation with tools: its utilization cell is empty
    cells = [e for e in classed(elements, "td", "heat") if e.attrs["data-dimension"] == "result_utilization"]
    assert (cells[0].attrs["data-mean"], cells[0].text.strip()) == ("null", "—")
    assert all(cell.attrs["data-mean"] != "null" for cell in cells[1:])


def test_no_tool_figure_numbers_without_expected_tools(calculator: EvaluationResult) -> None:
    data = as_json(calculator)
    for conversation in data["per_conversation_metrics"]:
        conversation["tool_correctness_scores"] = [None] * len(conversation["tool_correctness_scores"])
    elements = parse(render_html(data))
    figure = by_id(elements, "fig-tool-breakdown")
    assert figure is not None and "not evaluated" in figure.text
    assert classed(elements, "g", "bar") == []


def test_failing_turns_are_highlighted_with_the_judges_reasons(support: EvaluationResult) -> None:
    data = as_json(support)
    elements = parse(render_html(support))
    failing = [(c, i) for c in data["per_conversation_metrics"] for i in c["interactions"] if i["is_correct"] is False]
    assert failing, "the example has failing turns"
    highlighted = [e for e in elements if e.tag == "tr" and "turn-fail" in e.classes]
    assert len(highlighted) == len(failing)
    assert all(e.attrs["data-failing"] == "true" for e in highlighted)
    for (_, interaction), row in zip(failing, highlighted, strict=True):
        assert interaction["qa_id"] in row.text
        assert interaction["judge_reasoning"] in row.text
    failing_conversations = [e for e in elements if e.tag == "tr" and "conv-fail" in e.classes]
    assert len(failing_conversations) == sum(1 for c in data["per_conversation_metrics"] if not c["is_fully_correct"])
    assert "<details open>" in render_html(support)  # failing conversations are expanded


def test_user_strings_are_escaped(calculator: EvaluationResult) -> None:
    data = as_json(calculator)
    evil = '<script>alert("x")</script>'
    conversation = data["per_conversation_metrics"][0]
    conversation["session_id"] = evil
    conversation["assistant_id"] = 'agent" onmouseover="alert(1)'
    conversation["task_id"] = "<b>task</b>"
    conversation["interactions"][0]["qa_id"] = "<img src=x onerror=alert(1)>"
    conversation["interactions"][0]["judge_reasoning"] = f"reason {evil} & more"
    data["warnings"] = [f"warning {evil}"]
    page = render_html(data)
    assert "<script" not in page and "<img" not in page and "<b>task" not in page
    assert 'onmouseover="alert' not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    elements = parse(page)
    assert any(e.tag == "td" and e.text == evil for e in elements)  # shown as text, not run
    assert any(evil in e.text for e in elements if e.tag == "p" and "reason" in e.classes)


def test_report_is_self_contained_and_deterministic(support: EvaluationResult) -> None:
    page = render_html(support)
    lowered = page.lower()
    for forbidden in ("<script", "<link", " src=", "url(", "@import", "http://", "https://", "<iframe", "<img"):
        assert forbidden not in lowered, forbidden
    assert "content-security-policy" in lowered and "default-src 'none'" in page
    assert page == render_html(support)
    assert page == render_html(as_json(support))


def test_result_without_per_turn_detail_still_marks_failing_turns(support: EvaluationResult) -> None:
    data = as_json(support)
    for conversation in data["per_conversation_metrics"]:
        conversation["interactions"] = None
    elements = parse(render_html(data))
    chips = [e for e in elements if e.tag == "span" and "chip" in e.classes]
    turns = [
        (score, score is not None and t not in c["correct_indices"], c["threshold"])
        for c in data["per_conversation_metrics"]
        for t, score in enumerate(c["correctness_scores"])
    ]
    # the chip is the answer's verdict (score against the threshold), its title also the turn's
    failing_answers = sum(1 for score, _, threshold in turns if score is not None and score < threshold)
    assert sum(1 for e in chips if "chip-fail" in e.classes) == failing_answers > 0
    assert [e.attrs["title"].endswith("turn fail") for e in chips] == [failing for _, failing, _ in turns]
    assert "Per-turn detail was left out" in render_html(data)


def right_answer_wrong_tool() -> EvaluationResult:
    """calculator.json with the first turn's tool call renamed: its answer is still right, its
    tools are not, so the turn (and the conversation) fail under require_tool_correctness."""
    body = json.loads((ROOT / "examples" / "calculator.json").read_text())
    body["datasets"][0]["conversation"][0]["agentic"]["tools_used"][0]["tool_name"] = "not_the_calculator"
    request = RunRequest.model_validate(body)
    return evaluate_sync(request.datasets, ReferenceJudge(), request.config)


def test_a_right_answer_on_a_turn_its_tools_failed_is_not_red() -> None:
    result = right_answer_wrong_tool()
    interaction = result.per_conversation_metrics[0].interactions[0]  # type: ignore[index]
    assert (interaction.answer_correct, interaction.tool_correct, interaction.is_correct) == (True, False, False)
    elements = parse(render_html(result))
    row = next(e for e in elements if e.tag == "tr" and e.attrs.get("data-index") == "0")
    assert "conv-fail" in row.classes  # the conversation still fails
    chip = next(
        e
        for e in elements
        if "chip" in e.classes
        and e.attrs.get("data-field") == '["per_conversation_metrics", 0, "correctness_scores", 0]'
    )
    assert "chip-pass" in chip.classes and chip.attrs["title"] == "turn 1: answer pass, turn fail"
    turn = next(e for e in elements if e.tag == "tr" and "turn" in e.classes)
    assert "turn-fail" in turn.classes  # the turn row stays failed
    answer = next(e for e in elements if e.tag == "td" and "answer" in e.classes)
    assert "answer-pass" in answer.classes and "✓" in answer.text
    css = (ROOT / "fair_forge_core" / "report" / "templates" / "report.css").read_text()
    assert "tr.turn-fail td.answer-pass { background:#f0fdf4; }" in css


def test_per_conversation_rates_are_explained_and_left_out_for_one_turn(calculator: EvaluationResult) -> None:
    data = as_json(calculator)
    assert [c["total_interactions"] for c in data["per_conversation_metrics"]] == [2, 1]
    elements = parse(render_html(data))
    paths = {e.attrs["data-field"] for e in elements if "data-field" in e.attrs}
    for metric in ("pass_at_k", "pass_pow_k"):
        assert json.dumps(["per_conversation_metrics", 0, metric]) in paths  # two turns: shown
        assert json.dumps(["per_conversation_metrics", 1, metric]) not in paths  # one turn: left out
    hidden = [e for e in elements if e.tag == "td" and "rates-hidden" in e.classes]
    assert [e.text.strip() for e in hidden] == ["—", "—"]
    headers = [
        e
        for e in elements
        if e.tag == "th" and e.text.strip() in ("pass@2 (per-conversation)", "pass^2 (per-conversation)")
    ]
    assert len(headers) == 2 and all("taken as the k draws" in e.attrs["title"] for e in headers)
    caption = next(e for e in elements if e.tag == "p" and "caption" in e.classes and "treat its turns" in e.text)
    assert "left out (—) for a one-turn conversation" in caption.text


def test_unscored_turns_show_their_error() -> None:
    request = RunRequest.model_validate(json.loads((ROOT / "examples" / "calculator.json").read_text()))
    config = request.config
    first, second = request.datasets[0], request.datasets[1]
    judged = [TurnJudgement(score=1.0, reasoning="fine")]
    conversations = [
        conversation_metrics(
            first, [TurnJudgement(score=None, error="provider timed out")] * len(first.conversation), config
        ),
        conversation_metrics(second, judged * len(second.conversation), config),
    ]
    result = build_result(conversations, config)
    elements = parse(render_html(result))
    assert [e for e in elements if e.tag == "tr" and "conv-unscored" in e.classes]
    assert any("provider timed out" in e.text for e in elements if e.tag == "p" and "error" in e.classes)
    tile = by_id(elements, "kpi-unscored")
    assert tile is not None and "1" in tile.text


def test_an_error_response_or_another_document_is_refused(support: EvaluationResult) -> None:
    with pytest.raises(ReportError, match="error response"):
        render_html({"success": False, "error": "No datasets provided", "request_id": "r"})
    broken = copy.deepcopy(as_json(support))
    del broken["aggregated_metrics"]["pass_at_k"]
    with pytest.raises(ValidationError, match=r"aggregated_metrics\.pass_at_k"):
        render_html(broken)
    with pytest.raises(ReportError):
        render_html([1, 2])  # type: ignore[arg-type]


def test_a_jobs_result_json_renders_like_the_run_response(calculator: EvaluationResult) -> None:
    # GET /jobs/{id} hands out the /run response plus the job's id.
    job_result = {**as_json(calculator), "request_id": "r-1", "job_id": "0123456789abcdef"}
    assert render_html(job_result) == render_html({**as_json(calculator), "request_id": "r-1"})
