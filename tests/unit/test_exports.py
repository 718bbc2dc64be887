"""The writers of `fair_forge_core.exports` (#26 §2): JUnit XML validated against the JUnit
report schema (tests/data/junit.xsd, written from the format's documentation), the Markdown summary parsed back and
its numbers compared with the result and with intervals written out from their formulas, and
the per-turn rows read back by `csv` / `json` (and pandas when it is installed).

The examples' outcomes, counted by hand: flaky_tasks.json has 4 tasks of 3 attempts —
opening_hours and shipping_cost pass 3 of 3, order_status 2 of 3 (status-3 fails),
return_window 0 of 3; tool_policy.json's second conversation calls a forbidden tool;
end_state.json's second conversation ends with the order still open and no email sent.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from scipy.stats import binomtest

from fair_forge_core.compare import compare
from fair_forge_core.evaluate import build_result
from fair_forge_core.exports import (
    ROW_FIELDS,
    EvaluationTiming,
    cases,
    csv_rows,
    jsonl_rows,
    junit_comparison,
    junit_evaluation,
    markdown_comparison,
    markdown_evaluation,
)
from fair_forge_core.metrics import TurnJudgement, conversation_metrics
from fair_forge_core.schemas import Comparison, EvaluationConfig, EvaluationResult
from fair_forge_testing.builders import conversation, datasets, turn
from tests.unit.test_report import evaluate_example

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = xmlschema.XMLSchema(ROOT / "tests" / "data" / "junit.xsd")


@pytest.fixture(scope="module")
def flaky() -> EvaluationResult:
    return evaluate_example("flaky_tasks.json")


@pytest.fixture(scope="module")
def support() -> EvaluationResult:
    """Bayesian at 0.9, two assistants, tasks with three attempts, failing turns with tools."""
    return evaluate_example("support_agents.json")


def valid_junit(text: str) -> ET.Element:
    """The parsed document, after checking it against the schema (raises with the reason)."""
    SCHEMA.validate(text)
    return ET.fromstring(text)


@pytest.mark.parametrize(
    "broken",
    [
        '<testsuites><testsuite tests="1"><testcase name="a"/></testsuite></testsuites>',  # a suite without name
        '<testsuites><testsuite name="s" tests="-1"/></testsuites>',  # a negative count
        '<testsuites><testsuite name="s" tests="1"><testcase/></testsuite></testsuites>',  # a case without name
        '<testsuites><testsuite name="s" tests="1"><testcase name="a"><failure/><skipped/></testcase>'
        "</testsuite></testsuites>",  # a failed and skipped case
        '<testsuites><testsuite name="s" tests="1"><case name="a"/></testsuite></testsuites>',  # an unknown element
    ],
)
def test_the_schema_refuses_what_the_readers_would(broken: str) -> None:
    assert not SCHEMA.is_valid(broken)
    assert SCHEMA.is_valid('<testsuites><testsuite name="s" tests="1"><testcase name="a"/></testsuite></testsuites>')


def cases_by_name(root: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in root.iter("testcase")}


def wilson(n: int, c: int, level: float) -> tuple[float, float]:
    """Wilson's score interval, written out from the formula (not from our code)."""
    z = statistics.NormalDist().inv_cdf(0.5 + level / 2)
    p = c / n
    centre, half = p + z**2 / (2 * n), z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return max(0.0, (centre - half) / (1 + z**2 / n)), min(1.0, (centre + half) / (1 + z**2 / n))


def markdown_table(text: str, heading: str) -> list[dict[str, str]]:
    """The first table after `### heading`, as rows keyed by the header's cells."""
    lines = text.splitlines()
    start = lines.index(f"### {heading}")
    table = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip("|").split(" | ")])
        elif table:
            break
    header, _, *rows = table
    return [dict(zip(header, row, strict=True)) for row in rows]


def interval_of(text: str) -> tuple[float, float]:
    low, high = text.strip("[]").split(", ")
    return float(low), float(high)


# --------------------------------------------------------------------------- JUnit


def test_one_case_per_task_a_flaky_or_failing_task_fails_with_the_judges_reasons(flaky: EvaluationResult) -> None:
    root = valid_junit(junit_evaluation(flaky))
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == ("testsuites", "4", "2", "0")
    [suite] = root.findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (
        "support_agent",
        "4",
        "2",
        "0",
    )
    found = cases_by_name(root)
    assert set(found) == {"task opening_hours", "task order_status", "task return_window", "task shipping_cost"}
    assert found["task opening_hours"].find("failure") is None and found["task shipping_cost"].find("failure") is None
    failure = found["task order_status"].find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith("2 of 3 scored attempt(s) passed; status-3: turn 1 (q1)")
    status_3 = next(m for m in flaky.per_conversation_metrics if m.session_id == "status-3")
    reasoning = status_3.interactions[0].judge_reasoning  # type: ignore[index]
    assert reasoning and reasoning in (failure.text or "")
    # every failing attempt of the failing task is named, each with its own reasoning
    text = found["task return_window"].find("failure").text or ""  # type: ignore[union-attr]
    assert [line.split(":")[0] for line in text.splitlines()] == ["returns-1", "returns-2", "returns-3"]


def test_a_suite_per_assistant_with_its_counts_and_its_readiness(support: EvaluationResult) -> None:
    root = valid_junit(junit_evaluation(support))
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert set(suites) == {"support_agent_v1", "support_agent_v2"}
    for assistant, suite in suites.items():
        # counted here from the JSON: a task fails when any scored attempt is not fully correct
        mine = [m for m in support.per_conversation_metrics if m.assistant_id == assistant]
        tasks = {m.task_id for m in mine}
        failing = {m.task_id for m in mine if m.is_scored and not m.is_fully_correct}
        assert (suite.get("tests"), suite.get("failures")) == (str(len(tasks)), str(len(failing)))
        assert {case.get("classname") for case in suite.iter("testcase")} == {assistant}
        properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
        own = support.aggregated_metrics.by_assistant[assistant]  # type: ignore[index]
        assert properties["readiness"] == own.readiness.summary  # type: ignore[union-attr]
        assert float(properties["pass_pow_k"] or "nan") == own.pass_pow_k
    assert root.get("failures") == str(sum(int(s.get("failures") or 0) for s in suites.values()))


def test_tool_policy_violations_and_the_end_state_are_failure_reasons() -> None:
    policy = evaluate_example("tool_policy.json")
    failure = cases_by_name(valid_junit(junit_evaluation(policy)))["conversation refund-breaks-the-rules"].find(
        "failure"
    )
    assert failure is not None
    broken = policy.per_conversation_metrics[1]
    violations = broken.interactions[0].tool_policy.violations  # type: ignore[index,union-attr]
    assert len(violations) == 2  # a forbidden tool and one call too many
    # the line is the tool_policy result's reason, which names every broken rule
    [result] = [c for c in broken.checks if c.name == "tool_policy"]
    line = f"turn 1 (q1): {result.reason}"
    assert line in (failure.text or "").splitlines()
    assert line == "turn 1 (q1): tool policy: " + "; ".join(v.message for v in violations)

    state = evaluate_example("end_state.json")
    found = cases_by_name(valid_junit(junit_evaluation(state)))
    assert found["conversation refund-ok"].find("failure") is None
    failure = found["conversation refund-said-not-done"].find("failure")
    assert failure is not None
    assert (failure.get("message") or "").startswith("end state: 2 of ")
    assert '/order/status: expected {"$any_of": ["refunded", "cancelled"]}, got "open"' in (failure.text or "")
    assert "/email_sent: expected true, got nothing (absent)" in (failure.text or "")


def unscored_result() -> EvaluationResult:
    """One conversation scored right, one whose second turn the judge could not score, one
    whose only turn failed with a reasoning full of control characters."""
    config = EvaluationConfig(k=1)
    data = datasets(
        conversation("fine", [turn("q1", "2+2?", "4", "4")]),
        conversation("half", [turn("q1", "2+2?", "4", "4"), turn("q2", "3+3?", "6", "6")]),
        conversation("noisy", [turn("q1", "2+2?", "5", "4")]),
    )
    metrics = [
        conversation_metrics(data[0], [TurnJudgement(1.0, "right")], config),
        conversation_metrics(
            data[1], [TurnJudgement(1.0, "right"), TurnJudgement(None, error="provider timed out")], config
        ),
        conversation_metrics(data[2], [TurnJudgement(0.0, "wrong\x00\x07 sum\x1b[31m \ufffe")], config),
    ]
    return build_result(metrics, config)


def test_an_unscored_conversation_is_skipped_with_why_and_control_characters_never_break_the_xml() -> None:
    root = valid_junit(junit_evaluation(unscored_result()))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    found = cases_by_name(root)
    skipped = found["conversation half"].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "unscored: turn 2 (q2): provider timed out"
    failure = found["conversation noisy"].find("failure")
    assert failure is not None
    assert "wrong sum[31m" in (failure.text or "")


def test_a_required_goal_fails_when_not_achieved_and_skips_when_not_judged() -> None:
    config = EvaluationConfig(k=1, require_goal=True)
    goal = {"goal": "The order is refunded"}
    data = datasets(
        conversation("missed", [turn("q1", "Refund A-1", "Done", "Done")], **goal),
        conversation("unjudged", [turn("q1", "Refund A-2", "Done", "Done")], **goal),
    )
    metrics = [
        conversation_metrics(
            data[0], [TurnJudgement(1.0, "right")], config, goal=TurnJudgement(0.2, "no refund\nwas issued")
        ),
        conversation_metrics(data[1], [TurnJudgement(1.0, "right")], config, goal=None),
    ]
    found = cases_by_name(valid_junit(junit_evaluation(build_result(metrics, config))))
    failure = found["conversation missed"].find("failure")
    assert failure is not None and failure.get("message") == "goal not achieved (score 0.200): no refund was issued"
    skipped = found["conversation unjudged"].find("skipped")
    # the unjudged goal's reason is its check result's, as every output prints it
    [goal_result] = [c for c in metrics[1].checks if c.name == "goal"]
    assert (goal_result.outcome, goal_result.reason) == ("unscored", "the goal was not judged")
    assert skipped is not None and skipped.get("message") == "unscored: the goal was not judged"

    # the example under require_goal: the offline judge abstains on every goal, so it is skipped
    example = evaluate_example("goal.json", require_goal=True)
    [case] = cases_by_name(valid_junit(junit_evaluation(example))).values()
    assert "cannot decide" in (case.find("skipped").get("message") or "")  # type: ignore[union-attr]


def test_a_task_with_an_unscored_attempt_is_skipped_unless_a_scored_one_failed() -> None:
    config = EvaluationConfig(k=1)
    data = datasets(*(conversation(f"a{i}", [turn("q1", "2+2?", "4", "4")], task_id="sum") for i in range(3)))

    def only_case(first: TurnJudgement) -> ET.Element:
        judgements = [first, TurnJudgement(1.0, "right"), TurnJudgement(None, error="timed out")]
        metrics = [conversation_metrics(d, [j], config) for d, j in zip(data, judgements, strict=True)]
        [case] = cases_by_name(valid_junit(junit_evaluation(build_result(metrics, config)))).values()
        return case

    # Two attempts passed, one was not measured: not a pass.
    measured_in_part = only_case(TurnJudgement(1.0, "right"))
    assert measured_in_part.find("failure") is None
    assert measured_in_part.find("skipped").get("message", "") + (measured_in_part.findtext("skipped") or "") != ""
    assert "a2: turn 1 (q1): timed out" in ET.tostring(measured_in_part, encoding="unicode")
    # A scored attempt failed: a failure, whatever the unscored one would have said, which is noted.
    failed = only_case(TurnJudgement(0.0, "wrong"))
    assert failed.find("failure") is not None and failed.find("skipped") is None
    assert failed.findtext("system-out") == "a2: unscored: turn 1 (q1): timed out"


def test_conversations_sharing_a_session_id_are_distinct_cases() -> None:
    config = EvaluationConfig(k=1)
    data = datasets(*(conversation("same", [turn("q1", "2+2?", "4", "4")]) for _ in range(2)))
    result = build_result([conversation_metrics(d, [TurnJudgement(1.0, "right")], config) for d in data], config)
    assert [c.name for c in cases(result.per_conversation_metrics)] == [
        "conversation same [0]",
        "conversation same [1]",
    ]
    valid_junit(junit_evaluation(result))


def test_a_timed_evaluation_carries_time_and_timestamp_and_its_cases_none(support: EvaluationResult) -> None:
    # #33: the JUnit files had no time/timestamp. The start is given in another zone: UTC is written.
    started = datetime(2026, 12, 2, 3, 4, 5, 678000, tzinfo=timezone(timedelta(hours=2)))
    root = valid_junit(junit_evaluation(support, EvaluationTiming(started, 12.3456)))
    assert root.get("time") == "12.346"
    suites = root.findall("testsuite")
    assert len(suites) == 2  # two assistants, judged together: each suite carries the evaluation's time
    assert {(s.get("time"), s.get("timestamp")) for s in suites} == {("12.346", "2026-12-02T01:04:05")}
    assert all(case.get("time") is None for case in root.iter("testcase"))  # not timed one by one
    untimed = valid_junit(junit_evaluation(support))
    assert untimed.get("time") is None and all(s.get("timestamp") is None for s in untimed.iter("testsuite"))
    with pytest.raises(ValueError, match="aware start"):
        EvaluationTiming(datetime(2026, 1, 1), 1.0)  # a naive start has no zone to convert from
    assert EvaluationTiming(started, 1e-7).time == "0.000"  # a decimal, never an exponent


def regressed() -> Comparison:
    """12 tasks of 3 attempts: the baseline passes every one, the candidate none."""
    baseline = [(f"t{i}", True) for i in range(12) for _ in range(3)]
    candidate = [(f"t{i}", False) for i in range(12) for _ in range(3)]
    return compare(baseline, candidate, k=3, seed=0)


def test_a_comparison_has_a_case_per_metric_and_the_verdict() -> None:
    comparison = regressed()
    assert comparison.verdict == "regressed"
    root = valid_junit(junit_comparison(comparison))
    found = cases_by_name(root)
    assert set(found) == {"pass@1", "pass@k", "pass^k", "pass@k_unbiased", "pass^k_unbiased", "attempts", "verdict"}
    lower = [m for m in comparison.metrics if m.significant and (m.difference or 0) < 0]
    untested = [m for m in comparison.metrics if m.p_value is None]
    suite = root.find("testsuite")
    assert suite is not None
    # the regressed metrics, the attempt-level test and the verdict fail; the untested metrics are skipped
    assert comparison.attempt_test is not None and comparison.attempt_test.verdict == "regressed"
    assert suite.get("failures") == str(len(lower) + 2)
    assert suite.get("skipped") == str(len(untested))
    assert suite.get("tests") == str(len(comparison.metrics) + 2)
    verdict = found["verdict"].find("failure")
    assert verdict is not None and verdict.get("message") == comparison.verdict_explanation


def test_too_few_tasks_is_a_skipped_verdict_and_inconclusive_fails_only_when_required() -> None:
    few = compare([("a", True), ("b", True)], [("a", False), ("b", True)], k=1)
    assert few.verdict == "not_tested"
    found = cases_by_name(valid_junit(junit_comparison(few)))
    assert found["verdict"].find("skipped") is not None
    assert all(case.find("skipped") is not None for case in found.values())

    same = compare([(f"t{i}", i % 2 == 0) for i in range(12)], [(f"t{i}", i % 3 == 0) for i in range(12)], k=1)
    assert same.verdict == "inconclusive"
    assert cases_by_name(valid_junit(junit_comparison(same)))["verdict"].find("failure") is None
    required = cases_by_name(valid_junit(junit_comparison(same, require_conclusive=True)))["verdict"]
    assert required.find("failure") is not None


# --------------------------------------------------------------------------- Markdown


def test_the_key_figures_are_the_results_with_wilson_intervals_in_frequentist_mode(flaky: EvaluationResult) -> None:
    text = markdown_evaluation(flaky, 0.95)
    agg = flaky.aggregated_metrics
    rows = {row["figure"]: row for row in markdown_table(text, "Key figures")}
    n, c, k = agg.total_conversations, agg.fully_correct_conversations, agg.k
    assert (n, c, k) == (12, 8, 3)  # counted by hand (module docstring)
    low, high = wilson(n, c, 0.95)
    expected = {
        "pass@3 (pooled plug-in)": (agg.pass_at_k, 1 - (1 - low) ** k, 1 - (1 - high) ** k),
        "pass^3 (pooled plug-in)": (agg.pass_pow_k, low**k, high**k),
        "fully correct conversations": (c / n, low, high),
        "pass@3": (agg.per_task.pass_at_k, agg.per_task.pass_at_k_ci_low, agg.per_task.pass_at_k_ci_high),  # type: ignore[union-attr]
        "pass^3": (
            agg.per_task.pass_pow_k,  # type: ignore[union-attr]
            agg.per_task.pass_pow_k_ci_low,  # type: ignore[union-attr]
            agg.per_task.pass_pow_k_ci_high,  # type: ignore[union-attr]
        ),
    }
    assert set(rows) == set(expected)
    for figure, (value, ci_low, ci_high) in expected.items():
        assert float(rows[figure]["value"]) == pytest.approx(value, abs=5e-4), figure
        assert interval_of(rows[figure]["95% interval"]) == pytest.approx((ci_low, ci_high), abs=5e-4), figure
    assert text.splitlines()[2].startswith(f"- readiness: {agg.readiness.summary}; pass@3 = ")  # type: ignore[union-attr]


def test_bayesian_figures_carry_the_results_credible_intervals_and_assistants_are_listed(
    support: EvaluationResult,
) -> None:
    text = markdown_evaluation(support, 0.9)
    agg = support.aggregated_metrics
    rows = {row["figure"]: row for row in markdown_table(text, "Key figures")}
    assert interval_of(rows["pass^3 (pooled posterior mean)"]["90% interval"]) == pytest.approx(
        (agg.pass_pow_k_ci_low, agg.pass_pow_k_ci_high), abs=5e-4
    )
    assert interval_of(rows["pass@3 (pooled posterior mean)"]["90% interval"]) == pytest.approx(
        (agg.pass_at_k_ci_low, agg.pass_at_k_ci_high), abs=5e-4
    )
    assistants = {row["assistant"]: row for row in markdown_table(text, "Assistants")}
    for name, own in (agg.by_assistant or {}).items():
        assert int(assistants[name]["fully correct"]) == own.fully_correct_conversations
        assert float(assistants[name]["pass^3 (pooled posterior mean)"]) == pytest.approx(own.pass_pow_k, abs=5e-4)


def test_flaky_and_failing_tasks_and_the_worst_cases_failing_first(flaky: EvaluationResult) -> None:
    text = markdown_evaluation(flaky, 0.95)
    tasks = markdown_table(text, "Tasks")
    assert [(t["task"], t["label"], t["passed"]) for t in tasks] == [
        ("order_status", "flaky", "2 of 3"),
        ("return_window", "failing", "0 of 3"),
    ]
    for task, passed in zip(tasks, (2, 0), strict=True):
        ci = binomtest(passed, 3).proportion_ci(confidence_level=0.95, method="exact")
        assert interval_of(task["95% interval (Clopper–Pearson)"]) == pytest.approx((ci.low, ci.high), abs=5e-4)
    worst = markdown_table(text, "Worst cases")
    assert [(w["case"], w["passed"]) for w in worst] == [
        ("task return_window", "0 of 3"),
        ("task order_status", "2 of 3"),
    ]
    assert worst[1]["first reason"].startswith("status-3: turn 1 (q1): answer score 0.")


def test_unscored_conversations_are_listed_after_the_failures_and_cells_are_escaped() -> None:
    result = unscored_result()
    text = markdown_evaluation(result, 0.95, title="My | agent")
    assert text.startswith("## My \\| agent\n")
    worst = markdown_table(text, "Worst cases")
    assert [(w["case"], w["outcome"]) for w in worst] == [
        ("conversation noisy", "failed"),
        ("conversation half", "skipped"),
    ]
    assert "1 of 3 conversation(s) unscored" in text


def test_efficiency_is_summarised_when_the_result_has_it() -> None:
    from fair_forge_core.efficiency import efficiency_line

    result = evaluate_example("efficiency.json")
    assert result.aggregated_metrics.efficiency is not None
    text = markdown_evaluation(result, 0.95)
    lines = text.splitlines()
    # The line is text from the data, escaped: its `$` (GitHub's math delimiter) carries a backslash.
    line = efficiency_line(result.aggregated_metrics.efficiency)
    assert "$" in line
    assert lines[lines.index("### Efficiency") + 2] == line.replace("$", "\\$")
    assert "### Efficiency" not in markdown_evaluation(evaluate_example("flaky_tasks.json"), 0.95)


def test_the_comparison_table_is_the_comparisons_numbers() -> None:
    comparison = regressed()
    text = markdown_comparison(comparison, "base.json", "cand.json")
    assert text.startswith("## Fair-Forge comparison: Regressed\n")
    assert f"**Verdict: regressed** — {comparison.verdict_explanation}" in text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| metric |"))
    header = [c.strip() for c in lines[start].strip("|").split(" | ")]
    rows = [
        dict(zip(header, [c.strip() for c in line.strip("|").split(" | ")], strict=True))
        for line in lines[start + 2 :]
        if line.startswith("|")
    ]
    assert len(rows) == len(comparison.metrics)
    for row, metric in zip(rows, comparison.metrics, strict=True):
        assert int(row["tasks"]) == metric.tasks
        for column, value in (
            ("baseline", metric.baseline),
            ("candidate", metric.candidate),
            ("difference", metric.difference),
        ):
            assert (row[column] == "—") if value is None else float(row[column]) == pytest.approx(value, abs=5e-4)
        assert row["significant"] == ("not tested" if metric.p_value is None else "yes" if metric.significant else "no")


# --------------------------------------------------------------------------- rows


BUILT_IN_ORDER = ("answer_correctness", "tool_correctness", "tool_policy", "end_state", "goal")
"""The built-in checks in the order they register (docs/checks.md "The built-in checks")."""


def expected_groups(data: dict[str, Any]) -> list[str]:
    """The check names of a result's JSON in the documented column order: registration order."""
    present = {c["name"] for conv in data["per_conversation_metrics"] for c in conv["checks"]}
    assert present <= set(BUILT_IN_ORDER), present  # the examples run only built-in checks
    return [name for name in BUILT_IN_ORDER if name in present]


def group_cells(conv: dict[str, Any], index: int, names: list[str]) -> dict[str, Any]:
    """Turn `index`'s check columns from the JSON `checks`: its own result of each check, else
    the conversation's, else nulls."""
    cells: dict[str, Any] = {}
    for name in names:
        mine = [c for c in conv["checks"] if c["name"] == name and c["turn"] == index]
        own = [c for c in conv["checks"] if c["name"] == name and c["scope"] == "conversation"]
        found = (mine or own or [None])[0]
        for column in ("outcome", "score", "cause", "reason"):
            cells[f"{name}.{column}"] = None if found is None else found[column]
    return cells


def expected_rows(result: EvaluationResult) -> list[dict[str, Any]]:
    """The rows, read from the result's JSON as a client reads it."""
    data = json.loads(json.dumps(result.model_dump(mode="json")))
    names = expected_groups(data)
    rows = []
    for position, conv in enumerate(data["per_conversation_metrics"]):
        for index, interaction in enumerate(conv["interactions"]):
            tool = conv["tool_correctness_scores"][index]
            rows.append(
                {
                    "conversation_index": position,
                    "session_id": conv["session_id"],
                    "assistant_id": conv["assistant_id"],
                    "task_id": conv["task_id"],
                    "turn_index": index,
                    "qa_id": interaction["qa_id"],
                    "answer_score": interaction["answer_score"],
                    "answer_correct": interaction["answer_correct"],
                    "tool_score": None if tool is None else tool["overall_correctness"],
                    "tool_correct": interaction["tool_correct"],
                    "is_correct": interaction["is_correct"],
                    "error": interaction["error"],
                    "judged_by": interaction["judged_by"],
                    "is_scored": conv["is_scored"],
                    "is_fully_correct": conv["is_fully_correct"],
                    **group_cells(conv, index, names),
                }
            )
    return rows


def from_csv(value: str, like: Any) -> Any:
    if value == "":
        return None
    if isinstance(like, bool):
        return {"true": True, "false": False}[value]
    return type(like)(value) if like is not None else value


@pytest.mark.parametrize("example", ["support_agents.json", "end_state.json", "tool_policy.json"])
def test_jsonl_and_csv_rows_read_back_as_the_results_turns(example: str) -> None:
    result = evaluate_example(example)
    expected = expected_rows(result)
    assert sum(m.total_interactions for m in result.per_conversation_metrics) == len(expected)
    assert [json.loads(line) for line in jsonl_rows(result).splitlines()] == expected
    read = list(csv.DictReader(io.StringIO(csv_rows(result))))
    columns = tuple(expected[0])
    assert tuple(read[0]) == columns and columns[: len(ROW_FIELDS)] == ROW_FIELDS
    assert len(read) == len(expected)
    for row, want in zip(read, expected, strict=True):
        assert {field: from_csv(row[field], want[field]) for field in columns} == want


def test_each_check_is_a_column_group_and_the_old_verdict_columns_are_gone() -> None:
    """end_state.json: its two conversations expect an end state; the second's does not match
    (module docstring), so its rows say `end_state.outcome` failed with the end state's reason."""
    result = evaluate_example("end_state.json")
    rows = [json.loads(line) for line in jsonl_rows(result).splitlines()]
    assert "state_matches" not in rows[0] and "goal_achieved" not in rows[0]
    assert [k for k in rows[0] if k.startswith("end_state.")] == [
        "end_state.outcome",
        "end_state.score",
        "end_state.cause",
        "end_state.reason",
    ]
    by_session = {row["session_id"]: row for row in rows}
    assert by_session["refund-ok"]["end_state.outcome"] == "passed"
    failed = by_session["refund-said-not-done"]
    assert failed["end_state.outcome"] == "failed" and failed["end_state.reason"].startswith("end state: 2 of ")
    assert failed["answer_correctness.outcome"] == "passed"  # the turn's own result, not the conversation's


def test_rows_without_per_turn_detail_come_from_the_scores(support: EvaluationResult) -> None:
    bare = support.without_interactions("test")
    rows = [json.loads(line) for line in jsonl_rows(bare).splitlines()]
    full = expected_rows(support)
    assert [r["answer_score"] for r in rows] == [r["answer_score"] for r in full]
    assert [r["is_correct"] for r in rows] == [r["is_correct"] for r in full]
    assert [r["answer_correct"] for r in rows] == [r["answer_correct"] for r in full]
    assert {r["qa_id"] for r in rows} == {None}


def test_pandas_reads_the_csv_as_the_jsonl(support: EvaluationResult) -> None:
    pandas = pytest.importorskip("pandas")
    from_csv_frame = pandas.read_csv(io.StringIO(csv_rows(support)))
    from_jsonl = pandas.read_json(io.StringIO(jsonl_rows(support)), lines=True)
    assert list(from_csv_frame.columns) == list(json.loads(jsonl_rows(support).splitlines()[0]))
    assert from_csv_frame["answer_score"].tolist() == pytest.approx(from_jsonl["answer_score"].tolist())
    assert from_csv_frame["is_correct"].tolist() == from_jsonl["is_correct"].tolist()


# --------------------------------------------------------------------------- text from the data stays text

HOSTILE_TASK = "</td></tr></table><details><summary>all gates met</summary>"
AGENT_TEXT = (
    'Done <img src="https://evil.example/pixel.png"> ![x](https://evil.example/i.png) '
    "[log in](https://evil.example/login) www.evil.example https://evil.example/x cc &#64;octocat @octocat a\\|b"
)


def hostile_result() -> EvaluationResult:
    """Two attempts of a task whose id closes the table and opens a `<details>`, by an assistant
    named with a tag; the failed one with a judge's reasoning quoting the agent's text."""
    config = EvaluationConfig(k=2)
    data = datasets(
        *(
            conversation(f"s{i}", [turn("q1", "2+2?", "4", "4")], assistant_id="<b>bot</b>", task_id=HOSTILE_TASK)
            for i in range(2)
        )
    )
    metrics = [
        conversation_metrics(data[0], [TurnJudgement(1.0, "right")], config),
        conversation_metrics(data[1], [TurnJudgement(0.0, f"The agent wrote: {AGENT_TEXT}")], config),
    ]
    return build_result(metrics, config)


def test_a_hostile_task_id_and_agent_text_render_as_text_in_the_summary() -> None:
    """Rendered by cmark-gfm (GitHub's renderer) with raw HTML kept, as GitHub keeps it for its
    sanitiser: no `<details>`, `<img>`, `<b>` or link, no mention, and every row of the
    worst-cases table keeps its five cells, the hostile id and text among them as written."""
    from tests.gfm import MENTION, Page, render

    text = markdown_evaluation(hostile_result(), 0.95, title="Evaluation of <b>bot</b>")
    page = Page(render(text))
    assert not {"details", "summary", "img", "a", "b"} & set(page.tags), page.tags
    assert not page.hrefs
    assert not MENTION.search("".join(page.text))
    plain = page.plain()
    assert HOSTILE_TASK in plain and "Evaluation of <b>bot</b>" in plain
    assert "cc &#64;octocat @octocat a\\|b" in plain
    worst = markdown_table(text, "Worst cases")
    assert [row["outcome"] for row in worst] == ["failed"]
    cells = [cell.strip() for cell in page.cells]
    start = cells.index("first reason") + 1
    assert cells[start : start + 5] == [
        f"task {HOSTILE_TASK}",
        "<b>bot</b>",
        "failed",
        "1 of 2",
        cells[start + 4],
    ]
    assert AGENT_TEXT in cells[start + 4].replace("\u200b", "")


# --------------------------------------------------------------------------- the judge's error and noise (#36)


@pytest.fixture(scope="module")
def judge_corrected() -> EvaluationResult:
    """flaky_tasks.json corrected for TPR 25/29, TNR 26/26 (the starter calibration's), with a noisy judge's split."""
    from tests.unit.test_report_judge_error import corrected_run, noisy_judge

    result = corrected_run((25, 29), (26, 26), "calibration.json", judge_samples=3)
    result.aggregated_metrics.judge_noise = noisy_judge()
    return result


def suite_properties(text: str) -> dict[str | None, str | None]:
    (suite,) = valid_junit(text).findall("testsuite")
    return {p.get("name"): p.get("value") for p in suite.iter("property")}


def test_junit_carries_the_corrected_figures_and_the_judges_noise(judge_corrected: EvaluationResult) -> None:
    corrected, noise = (
        judge_corrected.aggregated_metrics.judge_corrected,
        judge_corrected.aggregated_metrics.judge_noise,
    )
    assert corrected is not None and noise is not None
    properties = suite_properties(junit_evaluation(judge_corrected))
    judged = {
        name: value for name, value in properties.items() if name and name.startswith(("corrected.", "judge_noise."))
    }
    assert judged == {
        "corrected.pass_at_k": repr(corrected.pass_at_k),
        "corrected.pass_pow_k": repr(corrected.pass_pow_k),
        "corrected.pass_pow_k_ci_low": repr(corrected.pass_pow_k_ci_low),
        "corrected.pass_pow_k_ci_high": repr(corrected.pass_pow_k_ci_high),
        "corrected.method": "monte_carlo",
        "corrected.calibration": "TPR 25/29, TNR 26/26, calibration.json",
        "judge_noise.judge_share": repr(noise.judge_share),
        "judge_noise.estimator": "latent_class",
    }
    assert float(judged["corrected.pass_pow_k_ci_low"] or "nan") == corrected.pass_pow_k_ci_low


def test_junit_without_the_judges_error_has_no_such_property(flaky: EvaluationResult) -> None:
    properties = suite_properties(junit_evaluation(flaky))
    assert not [name for name in properties if name and name.startswith(("corrected.", "judge_noise."))]
    assert "per_task.pass_pow_k" in properties


def test_junit_of_a_perfect_calibration_says_identity_and_unnamed_sources_are_left_out() -> None:
    from tests.unit.test_report_judge_error import corrected_run

    result = corrected_run((29, 29), (26, 26), None)
    properties = suite_properties(junit_evaluation(result))
    per_task = result.aggregated_metrics.per_task
    assert per_task is not None
    assert properties["corrected.method"] == "identity"
    assert properties["corrected.calibration"] == "TPR 29/29, TNR 26/26"
    assert properties["corrected.pass_pow_k"] == repr(per_task.pass_pow_k)  # today's figure
    assert "judge_noise.judge_share" not in properties


def test_the_markdown_summary_carries_the_judge_noise_line(judge_corrected: EvaluationResult) -> None:
    lines = markdown_evaluation(judge_corrected, 0.95).splitlines()
    noise = judge_corrected.aggregated_metrics.judge_noise
    assert noise is not None and noise.judge_share is not None and round(noise.judge_share * 100) == 80
    line = (
        "- judge noise: 80% of the variance in judged success is between the judge's samples of one "
        f"transcript (latent class, {noise.tasks} task(s)); agent 20%"
    )
    assert line in lines
    # after the corrected figures, before the sample-size warning
    corrected = next(i for i, text in enumerate(lines) if text.startswith("- corrected for the judge's error"))
    assert lines[corrected + 1] == line and lines[corrected + 2].startswith("- warning: Only 12 scored")
    assert not [
        text
        for text in markdown_evaluation(evaluate_example("flaky_tasks.json"), 0.95).splitlines()
        if "judge noise" in text
    ]
