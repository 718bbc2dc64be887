"""Every output reads `ConversationMetrics.checks` (docs/checks.md): a plug-in check registered in
one file, fair_forge_testing/max_tool_calls_check.py, shows in the JSON, JUnit, Markdown, JSONL and
CSV, the OpenTelemetry events and the HTML report with no line of those outputs naming it.

examples/calculator.json, counted by hand: conversation_001 makes 1 tool call (its first turn),
conversation_002 none; the reference judge finds both right. So with `max_calls` 0 the plug-in
check fails conversation_001 ("1 tool call(s), at most 0 allowed") and passes conversation_002
("0 tool call(s), at most 0 allowed"), and with `max_calls` 1 it passes both.

The plug-in is loaded by `FAIR_FORGE_EXTRA_CHECKS` in a fresh interpreter (the service's `/run`
through real API Gateway events, and the `fair-forge` CLI); the exports of the `/run` response
are then written in this process, where the plug-in is not loaded: a check these outputs have
never heard of must still show.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.checks import registered_checks
from fair_forge_core.exports import csv_rows, jsonl_rows, junit_evaluation, markdown_evaluation
from fair_forge_core.otel_events import evaluation_events
from fair_forge_core.report import render_html
from fair_forge_core.schemas import CheckResult, EvaluationResult
from tests.cli.test_cli import run_cli
from tests.report_html import Element, parse
from tests.unit.test_exports import markdown_table, valid_junit
from tests.unit.test_report import evaluate_example

ROOT = Path(__file__).resolve().parents[2]
PLUG_IN = {"FAIR_FORGE_EXTRA_CHECKS": "fair_forge_testing.max_tool_calls_check"}
NAME = "max_tool_calls"
FAILED = "conversation_001"
PASSED = "conversation_002"
FAILED_REASON = "1 tool call(s), at most 0 allowed"
PASSED_REASON = "0 tool call(s), at most 0 allowed"

_RUN = """
import json, sys
from handler.app import lambda_handler
from handler.local import LocalLambdaContext, make_proxy_event
for line in sys.stdin:
    body, headers = json.loads(line)
    event = make_proxy_event("POST", "/run", json.dumps(body), headers={"Content-Type": "application/json", **headers})
    response = lambda_handler(event, LocalLambdaContext(timeout_s=60.0))
    print("RESPONSE=" + json.dumps({"status": response["statusCode"], "raw": response.get("body") or ""}), flush=True)
"""
"""POST /run as API Gateway sends it (`handler.local.make_proxy_event`), the raw body answered:
`handler_client.call_handler` reads every body as JSON, and the HTML report is not."""


def request(max_calls: int) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((ROOT / "examples" / "calculator.json").read_text())
    body["config"] = {**body.get("config", {}), "checks": {NAME: {"max_calls": max_calls}}}
    return body


def run_with_plug_in(calls: list[tuple[dict[str, Any], dict[str, str]]]) -> list[tuple[int, str]]:
    """POST /run with each (body, headers) in one fresh interpreter that loads the plug-in:
    (status, raw body) of each."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN],
        input="".join(json.dumps(call) + "\n" for call in calls),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore", **PLUG_IN},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = [
        json.loads(line.removeprefix("RESPONSE=")) for line in done.stdout.splitlines() if line.startswith("RESPONSE=")
    ]
    assert len(answers) == len(calls), done.stderr[-3000:]
    return [(a["status"], a["raw"]) for a in answers]


def as_result(body: dict[str, Any]) -> EvaluationResult:
    return EvaluationResult.model_validate({k: v for k, v in body.items() if k != "request_id"})


def by_session(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["session_id"]: c for c in body["per_conversation_metrics"]}


def own(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in conversation["checks"] if c["name"] == NAME]


# --------------------------------------------------------------------------- the assertions, output by output


def assert_json(body: dict[str, Any]) -> None:
    conversations = by_session(body)
    assert [(c["outcome"], c["scope"], c["required"], c["reason"]) for c in own(conversations[FAILED])] == [
        ("failed", "conversation", True, FAILED_REASON)
    ]
    assert [(c["outcome"], c["reason"]) for c in own(conversations[PASSED])] == [("passed", PASSED_REASON)]
    # the plug-in decides: every other check of conversation_001 passed, and it is not fully correct
    assert all(c["outcome"] == "passed" for c in conversations[FAILED]["checks"] if c["name"] != NAME)
    assert (conversations[FAILED]["is_fully_correct"], conversations[PASSED]["is_fully_correct"]) == (False, True)
    assert body["provenance"]["checks"] == {NAME: {"max_calls": 0}}


def junit_cases(xml: str) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in valid_junit(xml).iter("testcase")}


def assert_junit(xml: str) -> None:
    found = junit_cases(xml)
    failure = found[f"conversation {FAILED}"].find("failure")
    assert failure is not None
    assert failure.get("message") == FAILED_REASON and (failure.text or "").splitlines() == [FAILED_REASON]
    passed = found[f"conversation {PASSED}"]
    assert passed.find("failure") is None and passed.find("skipped") is None
    assert "tool call(s)" not in ET.tostring(passed, encoding="unicode")


def assert_markdown(text: str) -> None:
    worst = markdown_table(text, "Worst cases")
    assert [(w["case"], w["outcome"], w["first reason"]) for w in worst] == [
        (f"conversation {FAILED}", "failed", FAILED_REASON)
    ]


def assert_rows(jsonl: str, csv_text: str) -> None:
    rows = [json.loads(line) for line in jsonl.splitlines()]
    group = [f"{NAME}.outcome", f"{NAME}.score", f"{NAME}.cause", f"{NAME}.reason"]
    assert list(rows[0])[-4:] == group  # a check no registry lists comes after the built-in ones
    cells = [(r["session_id"], r["turn_index"], *(r[c] for c in group)) for r in rows]
    assert cells == [  # a conversation's result, repeated on each of its turns
        (FAILED, 0, "failed", None, None, FAILED_REASON),
        (FAILED, 1, "failed", None, None, FAILED_REASON),
        (PASSED, 0, "passed", None, None, PASSED_REASON),
    ]
    read = list(csv.DictReader(io.StringIO(csv_text)))
    assert list(read[0]) == list(rows[0])
    assert [(r["session_id"], r[f"{NAME}.outcome"], r[f"{NAME}.score"], r[f"{NAME}.reason"]) for r in read] == [
        (FAILED, "failed", "", FAILED_REASON),
        (FAILED, "failed", "", FAILED_REASON),
        (PASSED, "passed", "", PASSED_REASON),
    ]


def attribute(record: dict[str, Any], key: str) -> Any:
    values = [next(iter(a["value"].values())) for a in record["attributes"] if a["key"] == key]
    return values[0] if values else None


def assert_events(records: list[dict[str, Any]]) -> None:
    mine = [r for r in records if attribute(r, "gen_ai.evaluation.name") == NAME]
    assert [
        (
            attribute(r, "gen_ai.conversation.id"),
            attribute(r, "gen_ai.evaluation.score.label"),
            attribute(r, "gen_ai.evaluation.explanation"),
            attribute(r, "gen_ai.evaluation.score.value"),
            attribute(r, "fair_forge.qa_id"),
        )
        for r in mine
    ] == [(FAILED, "fail", FAILED_REASON, None, None), (PASSED, "pass", PASSED_REASON, None, None)]


def checks_shown(elements: list[Element]) -> dict[str, list[Element]]:
    """The check results the report shows under each conversation (by session), in page order."""
    shown: dict[str, list[Element]] = {}
    session = ""
    for element in elements:
        if element.tag == "tr" and "conv" in element.classes:
            session = element.attrs["data-session"]
        elif element.tag == "p" and element.attrs.get("data-check"):
            shown.setdefault(session, []).append(element)
    return shown


def assert_html(page: str) -> None:
    shown = checks_shown(parse(page))
    [failed] = [e for e in shown[FAILED] if e.attrs["data-check"] == NAME]
    [passed] = [e for e in shown[PASSED] if e.attrs["data-check"] == NAME]
    assert "check-fail" in failed.classes and "check-pass" in passed.classes
    assert failed.text == f"{NAME}: failed — {FAILED_REASON}"
    assert passed.text == f"{NAME}: passed — {PASSED_REASON}"


def otel_records(events: list[Any]) -> list[dict[str, Any]]:
    from fair_forge_core.otel_events import otlp_logs_json

    logs = otlp_logs_json(events, 0)
    records: list[dict[str, Any]] = logs["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    return records


# --------------------------------------------------------------------------- through /run and through the CLI


def test_a_plug_in_check_shows_in_every_output_of_run() -> None:
    """POST /run (JSON, then the HTML report by `Accept: text/html`) with the plug-in loaded by the
    service; the CI outputs of its JSON, written here, where no such check is registered."""
    (status, raw), (html_status, page), (one_status, one_raw) = run_with_plug_in(
        [(request(0), {}), (request(0), {"Accept": "text/html"}), (request(1), {})]
    )
    assert (status, html_status, one_status) == (200, 200, 200), raw[:500]
    body = json.loads(raw)
    assert_json(body)
    # max_calls 1: the same conversation passes, so the plug-in's verdict is the one that failed it
    assert by_session(json.loads(one_raw))[FAILED]["is_fully_correct"] is True
    assert_html(page)

    result = as_result(body)
    assert NAME not in {check.name for check in registered_checks()}  # the exports have never heard of it
    assert_junit(junit_evaluation(result))
    assert_markdown(markdown_evaluation(result, 0.95))
    assert_rows(jsonl_rows(result), csv_rows(result))
    assert_events(otel_records(evaluation_events(result)))
    assert_html(render_html(result))


def test_a_plug_in_check_shows_in_every_output_of_the_cli(tmp_path: Path) -> None:
    """`fair-forge evaluate` with the plug-in loaded writes it into every file it writes."""
    request_file = tmp_path / "request.json"
    request_file.write_text(json.dumps(request(0)))
    files = {name: tmp_path / name for name in ("result.json", "j.xml", "s.md", "t.jsonl", "t.csv", "e.json", "r.html")}
    flags = ("--out", "--junit", "--markdown", "--jsonl", "--csv", "--otel-events", "--html")
    args = [arg for flag, path in zip(flags, files.values(), strict=True) for arg in (flag, path)]
    process = run_cli("evaluate", request_file, *args, "--quiet", env={**os.environ, **PLUG_IN})
    assert process.returncode == 0, process.stderr
    read = {name: path.read_text() for name, path in files.items()}
    assert_json(json.loads(read["result.json"]))
    assert_junit(read["j.xml"])
    assert_markdown(read["s.md"])
    assert_rows(read["t.jsonl"], read["t.csv"])
    assert_events(json.loads(read["e.json"])["resourceLogs"][0]["scopeLogs"][0]["logRecords"])
    assert_html(read["r.html"])


# --------------------------------------------------------------------------- a check with a score, a cause, advisory


@pytest.fixture(scope="module")
def with_made_up() -> EvaluationResult:
    """calculator.json, its first conversation given two results of a check no code knows: an
    advisory one that failed with a score, and a required one that is unscored with a cause."""
    result = evaluate_example("calculator.json")
    first = result.per_conversation_metrics[0]
    assert first.is_fully_correct is True
    extra = [
        CheckResult.model_validate(
            {
                "name": "made_up",
                "scope": "conversation",
                "turn": None,
                "outcome": "failed",
                "required": False,
                "score": 0.25,
                "reason": "advisory & <b>marked</b>",
                "cause": None,
                "detail": {"anything": [1, 2]},
            }
        ),
        CheckResult.model_validate(
            {
                "name": "also_made_up",
                "scope": "turn",
                "turn": 1,
                "outcome": "unscored",
                "required": True,
                "score": None,
                "reason": "the grader\nabstained",
                "cause": "abstained",
                "detail": None,
            }
        ),
    ]
    # the verdict as `checks.conversation_verdict` gives it: a required result unscored leaves it unscored
    changed = first.model_copy(update={"checks": [*first.checks, *extra], "is_scored": False, "is_fully_correct": None})
    return result.model_copy(update={"per_conversation_metrics": [changed, *result.per_conversation_metrics[1:]]})


def test_an_unknown_check_shows_its_outcome_cause_score_and_reason_in_the_report(
    with_made_up: EvaluationResult,
) -> None:
    elements = parse(render_html(with_made_up))
    shown = {e.attrs["data-check"]: e for e in elements if e.tag == "p" and e.attrs.get("data-check")}
    made_up, also = shown["made_up"], shown["also_made_up"]
    assert made_up.text == "made_up (not required): failed, score 0.250 — advisory & <b>marked</b>"  # escaped: text
    [score] = [
        e
        for e in elements
        if e.attrs.get("data-field")
        == json.dumps(
            ["per_conversation_metrics", 0, "checks", len(with_made_up.per_conversation_metrics[0].checks) - 2, "score"]
        )
    ]
    assert json.loads(score.attrs["data-value"]) == 0.25
    assert also.text == "also_made_up: unscored (abstained) — the grader\nabstained"
    assert "check-unscored" in also.classes and "check-fail" in made_up.classes
    # the turn's result sits in its turn's row, the conversation's under the turns
    turn_rows = [e for e in elements if e.tag == "tr" and "turn" in e.classes]
    assert "also_made_up: unscored" in turn_rows[1].text and "made_up (not required)" not in turn_rows[1].text


def test_only_required_results_explain_a_case_and_every_result_is_a_column(with_made_up: EvaluationResult) -> None:
    found = junit_cases(junit_evaluation(with_made_up))
    skipped = found["conversation conversation_001"].find("skipped")
    # unscored by the required result alone, its reason on one line; the advisory failure is no reason
    assert skipped is not None and (skipped.text or "").splitlines() == [
        "turn 2 (q1_interaction2): the grader abstained"
    ]
    rows = [json.loads(line) for line in jsonl_rows(with_made_up).splitlines()]
    assert [(r["made_up.outcome"], r["made_up.score"], r["also_made_up.cause"]) for r in rows] == [
        ("failed", 0.25, None),
        ("failed", 0.25, "abstained"),
        (None, None, None),
    ]
    events = [
        e.attributes
        for e in evaluation_events(with_made_up)
        if e.attributes["gen_ai.evaluation.name"] == "also_made_up"
    ]
    assert events == [
        {
            "gen_ai.evaluation.name": "also_made_up",
            "error.type": "abstained",
            "gen_ai.evaluation.explanation": "the grader\nabstained",
            "gen_ai.conversation.id": "conversation_001",
            "fair_forge.qa_id": "q1_interaction2",
        }
    ]
