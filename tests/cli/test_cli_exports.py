"""`fair-forge evaluate` and `compare` writing the outputs CI systems read (#26 §2): `--junit`
(validated against the JUnit report schema, tests/data/junit.xsd), `--markdown` and the step
summary under `GITHUB_STEP_SUMMARY`, `--jsonl` and `--csv`; written when a gate fails too,
checked before anything is judged. The writers themselves: tests/unit/test_exports.py.

flaky_tasks.json, counted by hand: 4 tasks of 3 attempts; order_status passes 2 of 3 and
return_window 0 of 3, so 2 of the 4 task cases fail; 12 conversations of one turn."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pytest
import xmlschema

from fair_forge_core.cli import main
from tests.cli.test_cli import ROOT, run_cli
from tests.cli.test_cli_compare import ALL_RIGHT, ONE_IN_THREE, attempts, request_file

FLAKY = ROOT / "examples" / "flaky_tasks.json"
SCHEMA = xmlschema.XMLSchema(ROOT / "tests" / "data" / "junit.xsd")


def cli(*args: str | Path) -> tuple[int, str, str]:
    """The CLI in this process: (exit code, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main([*map(str, args)], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def junit(path: Path) -> ET.Element:
    SCHEMA.validate(str(path))
    return ET.parse(path).getroot()


def test_evaluate_writes_every_output_when_a_gate_fails(tmp_path: Path) -> None:
    out = {name: tmp_path / name for name in ("result.json", "junit.xml", "summary.md", "turns.jsonl", "turns.csv")}
    before = datetime.now(UTC)
    process = run_cli(
        "evaluate",
        FLAKY,
        "--out",
        out["result.json"],
        "--junit",
        out["junit.xml"],
        "--markdown",
        out["summary.md"],
        "--jsonl",
        out["turns.jsonl"],
        "--csv",
        out["turns.csv"],
        "--max-flaky-tasks",
        "0",
    )
    assert process.returncode == 1, process.stderr
    assert "FAILED: 1 of 4 task(s) flaky" in process.stderr
    for path in out.values():
        assert f"wrote {path}\n" in process.stderr
    result = json.loads(out["result.json"].read_text())

    root = junit(out["junit.xml"])
    assert (root.get("tests"), root.get("failures")) == ("4", "2")
    # Timed by the run (#33): a timestamp at the second of its start in UTC, within this test's span.
    (suite,) = root.findall("testsuite")
    when = datetime.fromisoformat(suite.get("timestamp", "")).replace(tzinfo=UTC)
    assert before.replace(microsecond=0) <= when <= datetime.now(UTC)
    assert suite.get("time") == root.get("time") and float(root.get("time", "-1")) >= 0
    failed = {case.get("name") for case in root.iter("testcase") if case.find("failure") is not None}
    assert failed == {"task order_status", "task return_window"}

    summary = out["summary.md"].read_text()
    assert summary.startswith("## Fair-Forge evaluation\n")
    assert f"- readiness: {result['aggregated_metrics']['readiness']['summary']}; pass@3 = " in summary
    assert "| task return_window | support_agent | failed | 0 of 3 |" in summary

    lines = [json.loads(line) for line in out["turns.jsonl"].read_text().splitlines()]
    rows = list(csv.DictReader(io.StringIO(out["turns.csv"].read_text())))
    conversations = result["per_conversation_metrics"]
    assert len(lines) == len(rows) == len(conversations) == 12
    for line, row, conversation in zip(lines, rows, conversations, strict=True):
        assert line["session_id"] == row["session_id"] == conversation["session_id"]
        assert line["answer_score"] == float(row["answer_score"]) == conversation["correctness_scores"][0]
        assert line["is_fully_correct"] is conversation["is_fully_correct"]
        assert row["is_fully_correct"] == ("true" if conversation["is_fully_correct"] else "false")


def test_the_markdown_is_appended_to_the_step_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, _, stderr = cli("evaluate", FLAKY, "--out", tmp_path / "r.json", "--markdown", tmp_path / "s.md")
    assert code == 0, stderr
    assert summary.read_text() == "earlier step\n" + (tmp_path / "s.md").read_text()
    # without --markdown the step still gets its summary; a second step appends again
    code, _, _ = cli("evaluate", FLAKY, "--out", tmp_path / "r.json", "--quiet")
    assert code == 0
    assert summary.read_text().count("## Fair-Forge evaluation\n") == 2


def test_an_unwritable_step_summary_or_output_exits_2_before_judging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing" / "x"
    for flag in ("--junit", "--markdown", "--jsonl", "--csv"):
        code, stdout, stderr = cli("evaluate", FLAKY, flag, missing)
        assert code == 2
        assert stderr == f"error: {flag} {missing}: the directory {missing.parent} does not exist\n"
        assert stdout == ""
    code, _, stderr = cli("evaluate", FLAKY, "--csv", tmp_path / "a", "--jsonl", tmp_path / "a")
    assert (code, stderr) == (2, f"error: --jsonl and --csv name the same file: {tmp_path / 'a'}\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(missing))
    code, _, stderr = cli("evaluate", FLAKY, "--quiet")
    assert code == 2 and stderr.startswith(f"error: GITHUB_STEP_SUMMARY {missing}: the directory")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "")  # empty: no summary, as unset
    assert cli("evaluate", FLAKY, "--quiet")[0] == 0


def test_compare_writes_junit_and_markdown_when_it_regressed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    both = request_file(tmp_path / "both.json", attempts("v1", ALL_RIGHT) + attempts("v2", ONE_IN_THREE))
    summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, stdout, stderr = cli(
        "compare",
        both,
        both,
        "--baseline-assistant",
        "v1",
        "--candidate-assistant",
        "v2",
        "--out",
        tmp_path / "c.json",
        "--junit",
        tmp_path / "c.xml",
        "--markdown",
        tmp_path / "c.md",
        "--quiet",
    )
    assert code == 1, stderr
    comparison = json.loads((tmp_path / "c.json").read_text())
    assert comparison["verdict"] == "regressed"
    cases = {case.get("name"): case for case in junit(tmp_path / "c.xml").iter("testcase")}
    assert set(cases) == {m["metric"] for m in comparison["metrics"]} | {"attempts", "verdict"}
    verdict = cases["verdict"].find("failure")
    assert verdict is not None and verdict.get("message") == comparison["verdict_explanation"]
    for metric in comparison["metrics"]:
        regressed = metric["significant"] and metric["difference"] < 0
        assert (cases[metric["metric"]].find("failure") is not None) is regressed
    markdown = (tmp_path / "c.md").read_text()
    assert markdown.startswith("## Fair-Forge comparison: Regressed\n")
    assert f"- baseline: {both} (assistant v1) — 36 of 36 attempts fully correct" in markdown
    assert summary.read_text() == markdown
    assert stdout.startswith("baseline:")  # the table on stdout is unchanged


def test_compare_refuses_two_outputs_naming_one_file(tmp_path: Path) -> None:
    both = request_file(tmp_path / "both.json", attempts("v1", ALL_RIGHT) + attempts("v2", ONE_IN_THREE))
    same = tmp_path / "same"
    code, _, stderr = cli(
        "compare",
        both,
        both,
        "--baseline-assistant",
        "v1",
        "--candidate-assistant",
        "v2",
        "--out",
        same,
        "--junit",
        same,
    )
    assert (code, stderr) == (2, f"error: --out and --junit name the same file: {same}\n")
