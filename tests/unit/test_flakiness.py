"""Flakiness per task (`fair_forge_core.flakiness`, #25 §5): labels from hand counts, intervals
against scipy's exact binomial interval and against the Beta quantiles written out by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import beta, binomtest

from fair_forge_core.flakiness import summary, task_stability
from fair_forge_core.metrics import aggregate
from fair_forge_core.report import format_number, render_html
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_core.stats import clopper_pearson_interval
from fair_forge_testing.builders import scored_conversation
from fair_forge_testing.handler_client import call_handler
from tests.report_html import Element, by_id, parse

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "flaky_tasks.json"

CASES = [(2, 0), (2, 1), (2, 2), (3, 1), (3, 2), (5, 4), (10, 7), (20, 0), (7, 7), (40, 13)]


def attempts(task_id: str | None, *outcomes: bool | None, assistant_id: str = "agent") -> list[Any]:
    """One conversation per outcome (True passed, False failed, None unscored) of `task_id`."""
    return [scored_conversation(f"{task_id}-{i}", outcome, task_id, assistant_id) for i, outcome in enumerate(outcomes)]


# --------------------------------------------------------------------------- the interval


@pytest.mark.parametrize("level", [0.95, 0.9, 0.8])
@pytest.mark.parametrize(("n", "c"), CASES)
def test_the_interval_is_scipys_exact_binomial_interval(n: int, c: int, level: float) -> None:
    expected = binomtest(c, n).proportion_ci(confidence_level=level, method="exact")
    low, high = clopper_pearson_interval(n, c, level)
    assert low == pytest.approx(expected.low, abs=1e-10)
    assert high == pytest.approx(expected.high, abs=1e-10)


@pytest.mark.parametrize("level", [0.95, 0.5])
@pytest.mark.parametrize(("n", "c"), CASES)
def test_the_interval_is_the_beta_quantiles_of_its_definition(n: int, c: int, level: float) -> None:
    alpha = 1 - level
    low = 0.0 if c == 0 else float(beta.ppf(alpha / 2, c, n - c + 1))
    high = 1.0 if c == n else float(beta.ppf(1 - alpha / 2, c + 1, n - c))
    assert clopper_pearson_interval(n, c, level) == pytest.approx((low, high), abs=1e-12)


@pytest.mark.parametrize("n", [2, 3, 10])
def test_at_the_edges_the_interval_has_a_closed_form(n: int) -> None:
    # c = n: P(all n pass) = p^n = α/2 at the low end; c = 0: (1 − p)^n = α/2 at the high end.
    assert clopper_pearson_interval(n, n, 0.95) == pytest.approx((0.025 ** (1 / n), 1.0), abs=1e-12)
    assert clopper_pearson_interval(n, 0, 0.95) == pytest.approx((0.0, 1 - 0.025 ** (1 / n)), abs=1e-12)
    assert clopper_pearson_interval(n, n, 0.95)[1] == 1.0 and clopper_pearson_interval(n, 0, 0.95)[0] == 0.0


@pytest.mark.parametrize(("n", "c", "level"), [(0, 0, 0.95), (2, 3, 0.95), (2, 1, 1.0), (2, 1, 0.0)])
def test_the_interval_refuses_impossible_counts_and_levels(n: int, c: int, level: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        clopper_pearson_interval(n, c, level)


# --------------------------------------------------------------------------- the labels


def test_tasks_are_labelled_from_their_scored_attempts_and_listed_flaky_first() -> None:
    conversations = [
        *attempts("b-stable", True, True, True),
        *attempts("z-flaky", True, False, True),
        *attempts("a-stable", True, True),
        *attempts("failing", False, False, False, False),
        *attempts("a-flaky", False, True),
    ]
    stability = task_stability(conversations, 0.95)
    assert [(t.task_id, t.label, t.attempts, t.passed) for t in stability.tasks] == [
        ("a-flaky", "flaky", 2, 1),
        ("z-flaky", "flaky", 3, 2),
        ("failing", "failing", 4, 0),
        ("a-stable", "stable", 2, 2),
        ("b-stable", "stable", 3, 3),
    ]
    assert (stability.stable, stability.flaky, stability.failing, stability.unlabelled) == (2, 2, 1, 0)
    flaky = stability.tasks[1]
    expected = binomtest(2, 3).proportion_ci(confidence_level=0.95, method="exact")
    assert (flaky.pass_rate, flaky.ci_low, flaky.ci_high) == pytest.approx((2 / 3, expected.low, expected.high))
    assert stability.ci_level == 0.95 and stability.interval_method == "clopper_pearson"
    assert summary(stability) == "tasks: 2 stable, 2 flaky, 1 failing"


def test_unscored_conversations_are_not_attempts_but_are_counted() -> None:
    conversations = [
        *attempts("two-scored", True, None, False, None),  # 2 attempts, 1 passed: flaky
        *attempts("one-scored", True, None, None),  # 1 attempt: not labelled
        *attempts("none-scored", None, None),  # no attempt: not labelled
    ]
    stability = task_stability(conversations, 0.9)
    assert [(t.task_id, t.attempts, t.passed, t.unscored, t.label) for t in stability.tasks] == [
        ("two-scored", 2, 1, 2, "flaky")
    ]
    low, high = binomtest(1, 2).proportion_ci(confidence_level=0.9, method="exact")
    assert (stability.tasks[0].ci_low, stability.tasks[0].ci_high) == pytest.approx((low, high))
    assert stability.unlabelled == 2
    assert summary(stability) == "tasks: 0 stable, 1 flaky, 0 failing, 2 with fewer than 2 scored attempts"


def test_a_conversation_without_a_task_id_is_a_task_of_its_own() -> None:
    # Two conversations without a task_id, even with one session id, are two tasks of one attempt each.
    conversations = [
        scored_conversation("same", True),
        scored_conversation("same", False),
        *attempts("t", False, False),
    ]
    stability = task_stability(conversations, 0.95)
    assert [(t.task_id, t.label) for t in stability.tasks] == [("t", "failing")]
    assert stability.unlabelled == 2
    assert task_stability([scored_conversation("s", True)], 0.95).tasks == []


def test_aggregate_carries_it_only_when_asked_for_each_assistant_too() -> None:
    conversations = [
        *attempts("t1", True, True, assistant_id="a"),
        *attempts("t1", False, False, assistant_id="b"),
        *attempts("t2", True, False, assistant_id="a"),
    ]
    plain = aggregate(conversations, EvaluationConfig(k=2))
    assert plain.task_stability is None and "task_stability" not in plain.model_dump(mode="json")
    asked = aggregate(conversations, EvaluationConfig(k=2, task_stability=True))
    assert asked.task_stability is not None and asked.by_assistant is not None
    # Each assistant's attempts at a task are its own: a always passes t1, b never does; neither is flaky.
    assert [(t.task_id, t.assistant_id, t.label, t.passed, t.attempts) for t in asked.task_stability.tasks] == [
        ("t2", "a", "flaky", 1, 2),
        ("t1", "b", "failing", 0, 2),
        ("t1", "a", "stable", 2, 2),
    ]
    a, b = asked.by_assistant["a"].task_stability, asked.by_assistant["b"].task_stability
    assert a is not None and b is not None
    assert [(t.task_id, t.label) for t in a.tasks] == [("t2", "flaky"), ("t1", "stable")]
    assert [(t.task_id, t.label) for t in b.tasks] == [("t1", "failing")]


# --------------------------------------------------------------------------- the service


def test_the_service_labels_the_examples_tasks_when_asked() -> None:
    body = json.loads(EXAMPLE.read_text())
    response = call_handler(body)
    assert response.status == 200, response.body
    stability = response.body["aggregated_metrics"]["task_stability"]
    # The example, by hand: opening_hours and shipping_cost 3 of 3, order_status 2 of 3, return_window 0 of 3.
    assert [(t["task_id"], t["label"], t["passed"], t["attempts"]) for t in stability["tasks"]] == [
        ("order_status", "flaky", 2, 3),
        ("return_window", "failing", 0, 3),
        ("opening_hours", "stable", 3, 3),
        ("shipping_cost", "stable", 3, 3),
    ]
    assert (stability["stable"], stability["flaky"], stability["failing"], stability["unlabelled"]) == (2, 1, 1, 0)
    for task in stability["tasks"]:
        interval = binomtest(task["passed"], task["attempts"]).proportion_ci(confidence_level=0.95, method="exact")
        assert (task["ci_low"], task["ci_high"]) == pytest.approx((interval.low, interval.high), abs=1e-10)

    body["config"].pop("task_stability")
    plain = call_handler(body)
    assert plain.status == 200 and "task_stability" not in plain.body["aggregated_metrics"]


def test_a_task_stability_that_is_not_a_boolean_is_a_400_naming_the_field() -> None:
    body = json.loads(EXAMPLE.read_text())
    body["config"]["task_stability"] = "yes"
    response = call_handler(body)
    assert response.status == 400
    assert response.body["details"][0]["field"] == "config.task_stability"


# --------------------------------------------------------------------------- the HTML report


def stability_rows(page: str) -> list[Element]:
    return [e for e in parse(page) if e.tag == "tr" and "task" in e.classes]


@pytest.mark.parametrize("asked", [True, False])
def test_the_report_lists_the_labelled_tasks_whatever_the_request_asked(asked: bool) -> None:
    body = json.loads(EXAMPLE.read_text())
    body["config"] = {"k": 3, "task_stability": asked, "statistical_mode": {"ci_level": 0.8}}
    response = call_handler(body)
    assert response.status == 200, response.body
    elements = parse(render_html(response.body))  # the JSON as a client reads it: the level from provenance
    section = by_id(elements, "task-stability")
    assert (
        section is not None and "2 stable, 1 flaky, 1 failing" in section.text and "80% Clopper–Pearson" in section.text
    )
    rows = stability_rows(render_html(response.body))
    assert [(r.attrs["data-task"], r.attrs["data-label"]) for r in rows] == [
        ("order_status", "flaky"),
        ("return_window", "failing"),
        ("opening_hours", "stable"),
        ("shipping_cost", "stable"),
    ]
    pills = [
        e for e in elements if e.tag == "span" and "pill" in e.classes and e.text in {"Flaky", "Failing", "Stable"}
    ]
    assert [(p.text, sorted(p.classes)) for p in pills] == [
        ("Flaky", ["pill", "pill-unscored"]),
        ("Failing", ["pill", "pill-fail"]),
        ("Stable", ["pill", "pill-pass"]),
        ("Stable", ["pill", "pill-pass"]),
    ]
    for row in rows:
        passed, attempts = int(row.attrs["data-passed"]), int(row.attrs["data-attempts"])
        ci = binomtest(passed, attempts).proportion_ci(confidence_level=0.8, method="exact")
        low, high = json.loads(row.attrs["data-ci-low"]), json.loads(row.attrs["data-ci-high"])
        assert (low, high) == pytest.approx((ci.low, ci.high), abs=1e-10)
        assert f"{passed} / {attempts}" in row.text and f"{format_number(low)} – {format_number(high)}" in row.text


def test_the_report_has_no_task_stability_without_a_task_of_two_attempts() -> None:
    body = json.loads((ROOT / "examples" / "calculator.json").read_text())
    page = render_html(call_handler(body).body)
    assert by_id(parse(page), "task-stability") is None and "Task stability" not in page
