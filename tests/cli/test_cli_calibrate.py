"""`fair-forge calibrate`: the judge against human labels from the command line (issue #16)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.cli import main
from fair_forge_core.schemas import CalibrationReport
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply
from tests.cli.test_cli import ROOT, run_cli
from tests.service.test_calibrate_api import CALLER_KEY, KNOWN_PAIRS, OPENAI, scripted

STARTER = ROOT / "examples" / "calibration" / "starter.jsonl"


def cli(*args: str | Path) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main([str(a) for a in args], stdout=stdout, stderr=stderr, stdin=io.StringIO(""))
    return code, stdout.getvalue(), stderr.getvalue()


def jsonl(path: Path, pairs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    return path


def connector_file(path: Path, server: FakeLLMServer, api_key: str = CALLER_KEY) -> Path:
    params = {"model": "judge", "base_url": server.base_url, "api_key": api_key}
    path.write_text(json.dumps({"class_path": OPENAI, "params": params}))
    return path


def test_the_starter_set_on_the_offline_judge(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    process = run_cli("calibrate", STARTER, "--out", out)
    assert process.returncode == 0, process.stderr
    report = CalibrationReport.model_validate_json(out.read_text())
    assert report.pairs == report.scored + report.unscored == len(STARTER.read_text().splitlines())
    assert report.agreement is not None and report.tpr is not None and report.tnr is not None
    text = process.stdout
    assert text.startswith(
        f"{report.pairs} labelled pairs, {report.scored} scored, {report.unscored} unscored; threshold 0.7"
    )
    assert f"({report.agreement.successes}/{report.agreement.n}; 95% CI {report.agreement.ci_low:.1%}" in text
    assert f"Cohen's kappa    {report.kappa:6.3f}" in text
    assert f"({report.tpr.successes}/{report.tpr.n};" in text and f"({report.tnr.successes}/{report.tnr.n};" in text
    c = report.confusion
    assert f"judge pass  {c.judge_pass_human_pass:>12}{c.judge_pass_human_fail:>12}" in text
    assert "best threshold" in text and "rule: candidates" in text
    assert f"wrote {out}" in process.stderr


def test_chat_openai_with_known_scores(tmp_path: Path) -> None:
    labelled = jsonl(tmp_path / "pairs.jsonl", KNOWN_PAIRS)
    out = tmp_path / "report.json"
    with FakeLLMServer(responder=scripted) as server:
        code, stdout, stderr = cli(
            "calibrate", labelled, "--connector", connector_file(tmp_path / "c.json", server), "--out", out, "--quiet"
        )
    assert code == 0, stderr
    report = CalibrationReport.model_validate_json(out.read_text())
    assert (report.scored, report.unscored) == (10, 2)
    assert report.confusion.model_dump() == {
        "judge_pass_human_pass": 3,
        "judge_pass_human_fail": 1,
        "judge_fail_human_pass": 2,
        "judge_fail_human_fail": 4,
    }
    assert report.kappa == pytest.approx(0.4)
    assert "agreement         70.0%  (7/10;" in stdout
    assert "unscored               1           1   (not counted above)" in stdout
    assert "#10 a: judge call failed" in stdout and "#11 c: judge call failed" in stdout
    assert "best threshold   0.6: agreement 90.0% (9/10), +20.0%" in stdout
    assert CALLER_KEY not in stdout + stderr


def test_the_threshold_flag_and_the_body_form(tmp_path: Path) -> None:
    with FakeLLMServer(responder=scripted) as server:
        params = {"model": "judge", "base_url": server.base_url, "api_key": CALLER_KEY}
        body = {
            "connector": {"class_path": OPENAI, "params": params},
            "pairs": KNOWN_PAIRS[:10],
            "config": {"threshold": 0.6},
        }
        (tmp_path / "body.json").write_text(json.dumps(body))
        code, stdout, _ = cli("calibrate", tmp_path / "body.json", "--quiet")
        assert code == 0 and "threshold 0.6 " in stdout and "agreement         90.0%" in stdout
        code, stdout, _ = cli("calibrate", tmp_path / "body.json", "--threshold", "0.9", "--quiet")
        assert code == 0 and "threshold 0.9 " in stdout and "agreement         70.0%" in stdout  # 0.7 0.65 0.6 now fail


def test_a_json_list_and_a_run_request_as_connector(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.json"
    pairs.write_text(json.dumps(json.loads("[" + ",".join(STARTER.read_text().splitlines()[:6]) + "]")))
    run_request = ROOT / "examples" / "calculator.json"  # a /run request: its connector is the offline judge
    code, stdout, stderr = cli("calibrate", pairs, "--connector", run_request, "--quiet")
    assert code == 0, stderr
    assert stdout.startswith("6 labelled pairs, 6 scored")


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (
            [
                '{"query": "q", "answer": "a", "ground_truth": "g", "label": "pass"}',
                "",
                '{"query": "q", "answer": "a", "ground_truth": "g", "label": "ok"}',
            ],
            "invalid labelled pairs: line 3: label: Input should be 'pass' or 'fail'",
        ),
        (['{"query": "q", "answer": "a", "label": "pass"}'], "line 1: ground_truth: Field required"),
        (['{"query": "q", "answer": "a", "ground_truth": "g", "label": "pass"}', "{oops"], "line 2 is not valid JSON"),
        (["", "  "], "no labelled pairs"),
    ],
)
def test_bad_pairs_exit_2_naming_the_line(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, stdout, stderr = cli("calibrate", path)
    assert code == 2 and stdout == ""
    assert message in stderr, stderr
    assert "Traceback" not in stderr


def test_other_bad_input_exits_2(tmp_path: Path) -> None:
    code, _, stderr = cli("calibrate", tmp_path / "missing.jsonl")
    assert code == 2 and "cannot read labelled pairs file" in stderr
    (tmp_path / "c.json").write_text(json.dumps({"class_path": "os.system"}))
    code, _, stderr = cli("calibrate", STARTER, "--connector", tmp_path / "c.json")
    assert code == 2 and "c.json: connector.class_path" in stderr and "not an allowed connector" in stderr
    code, _, stderr = cli("calibrate", STARTER, "--out", tmp_path / "no" / "such" / "dir.json")
    assert code == 2 and "--out" in stderr and "does not exist" in stderr
    with pytest.raises(SystemExit) as exited:
        cli("calibrate", STARTER, "--threshold", "1.5")
    assert exited.value.code == 2


def test_a_refusing_judge_exits_3_without_the_key(tmp_path: Path) -> None:
    labelled = jsonl(tmp_path / "pairs.jsonl", KNOWN_PAIRS[:3])
    with FakeLLMServer() as server:
        server.enqueue(*[Reply(status=401, error_message=f"Incorrect API key provided: {CALLER_KEY}")] * 5)
        code, stdout, stderr = cli("calibrate", labelled, "--connector", connector_file(tmp_path / "c.json", server))
    assert code == 3 and stdout == ""
    assert "calibration failed" in stderr and "refused" in stderr
    assert CALLER_KEY not in stderr


def test_nothing_scored_exits_3(tmp_path: Path) -> None:
    labelled = jsonl(tmp_path / "pairs.jsonl", [KNOWN_PAIRS[-1]])
    with FakeLLMServer(responder=scripted) as server:
        code, _, stderr = cli("calibrate", labelled, "--connector", connector_file(tmp_path / "c.json", server))
    assert code == 3 and "no pair could be scored" in stderr


def test_help_lists_calibrate() -> None:
    process = run_cli("--help")
    assert "calibrate" in process.stdout
    process = run_cli("calibrate", "--help")
    assert process.returncode == 0 and "Wilson 95% intervals" in " ".join(process.stdout.split())
