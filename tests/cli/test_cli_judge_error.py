"""`fair-forge evaluate --judge-error FILE`: the report `fair-forge calibrate` wrote for the judge
corrects the run (`aggregated_metrics.judge_corrected`, the headline line, the Markdown summary),
a gate can name the corrected figure (`--fail-if-lower-bound 'corrected.pass_pow_k<X'`), and a
calibration of another judge, or a file that is neither a report nor a `config.judge_error`, is
exit 2 naming it; the pytest plugin's `assert_pass_pow_k(..., corrected=True)` reads the corrected
figure. The offline judge calibrated on the starter set; the run is examples/flaky_tasks.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fair_forge_core.judge_error import correct_suite
from fair_forge_core.judge_error_input import judge_error_of_json, judged_tasks
from fair_forge_core.pytest_plugin import assert_pass_at_k, assert_pass_pow_k
from fair_forge_core.schemas import EvaluationResult
from tests.cli.test_cli import ROOT, run_cli_in_process

FLAKY = ROOT / "examples" / "flaky_tasks.json"
STARTER = ROOT / "examples" / "calibration" / "starter.jsonl"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("calibration") / "calibration.json"
    done = run_cli_in_process("calibrate", STARTER, "--out", path, "--quiet")
    assert done.returncode == 0, done.stderr
    return path


def test_the_calibration_report_corrects_the_run(report: Path, tmp_path: Path) -> None:
    out, markdown = tmp_path / "result.json", tmp_path / "summary.md"
    done = run_cli_in_process("evaluate", FLAKY, "--judge-error", report, "--out", out, "--markdown", markdown)
    assert done.returncode == 0, done.stderr
    result = EvaluationResult.model_validate_json(out.read_text())
    corrected = result.aggregated_metrics.judge_corrected
    calibration = json.loads(report.read_text())
    assert corrected is not None and corrected.judge == calibration["judge"]["identity"]
    assert (corrected.tpr.successes, corrected.tpr.n) == (calibration["tpr"]["successes"], calibration["tpr"]["n"])
    assert corrected.source == "calibration.json"
    # The same model over the result's own conversations gives the same figures.
    expected = correct_suite(
        judged_tasks(result.per_conversation_metrics), 3, judge_error_of_json(calibration, "calibration.json")
    )
    assert corrected == expected
    line = f"pass^3 (per task, corrected for the judge's error) = {corrected.pass_pow_k:.3f}"
    assert line in done.stderr and line in markdown.read_text()
    assert f"observed pass^3 = {result.aggregated_metrics.per_task.pass_pow_k:.3f}" in done.stderr  # type: ignore[union-attr]


def test_a_gate_on_the_corrected_figure(report: Path, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    run = ("evaluate", FLAKY, "--judge-error", report, "--out", out, "--quiet")
    met = run_cli_in_process(*run, "--fail-if-lower-bound", "corrected.pass_pow_k<0.05")
    assert met.returncode == 0, met.stderr
    bound = EvaluationResult.model_validate_json(out.read_text()).aggregated_metrics.judge_corrected.pass_pow_k_ci_low  # type: ignore[union-attr]
    assert bound is not None and 0.05 <= bound < 0.99
    failed = run_cli_in_process(*run, "--fail-if-lower-bound", "corrected.pass_pow_k<0.99")
    assert failed.returncode == 1
    assert f"lower bound of pass^3 (per task, corrected for the judge's error) = {bound:.4f}" in failed.stderr
    # Without the judge's error the corrected figure was not measured: the gate fails.
    unmeasured = run_cli_in_process(
        "evaluate", FLAKY, "--out", out, "--quiet", "--fail-if-lower-bound", "corrected.pass_pow_k<0.05"
    )
    assert unmeasured.returncode == 1 and "was not measured" in unmeasured.stderr


def test_another_judges_calibration_or_a_malformed_file_is_exit_2(report: Path, tmp_path: Path) -> None:
    other = json.loads(report.read_text())
    other["judge"]["identity"] = "ab" * 32
    (tmp_path / "other.json").write_text(json.dumps(other))
    refused = run_cli_in_process("evaluate", FLAKY, "--judge-error", tmp_path / "other.json", "--quiet")
    assert refused.returncode == 2
    assert "config.judge_error.judge" in refused.stderr and "abababababababab" in refused.stderr
    (tmp_path / "bad.json").write_text(json.dumps({"judge": "x", "tpr": {"successes": 5, "n": 4}}))
    malformed = run_cli_in_process("evaluate", FLAKY, "--judge-error", tmp_path / "bad.json", "--quiet")
    assert malformed.returncode == 2 and "tnr" in malformed.stderr
    old = json.loads(report.read_text())
    del old["judge"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    unnamed = run_cli_in_process("evaluate", FLAKY, "--judge-error", tmp_path / "old.json", "--quiet")
    assert unnamed.returncode == 2 and "names no judge" in unnamed.stderr


def test_the_pytest_assertion_reads_the_corrected_figure(report: Path, tmp_path: Path) -> None:
    out, plain = tmp_path / "result.json", tmp_path / "plain.json"
    assert run_cli_in_process("evaluate", FLAKY, "--judge-error", report, "--out", out, "--quiet").returncode == 0
    corrected = EvaluationResult.model_validate_json(out.read_text()).aggregated_metrics.judge_corrected
    assert corrected is not None and corrected.pass_pow_k_ci_low is not None and corrected.pass_pow_k is not None
    bound = corrected.pass_pow_k_ci_low
    assert_pass_pow_k(out, lower_bound_at_least=bound, corrected=True)
    assert_pass_at_k(out, at_least=corrected.pass_at_k, corrected=True)  # type: ignore[arg-type]
    with pytest.raises(AssertionError) as failed:
        assert_pass_pow_k(out, lower_bound_at_least=bound + 0.01, corrected=True)
    assert str(failed.value) == (
        f"lower bound of pass^3 (per task, corrected for the judge's error) = {bound:.4f} (95% posterior bound, "
        f"TPR {corrected.tpr.successes}/{corrected.tpr.n}, TNR {corrected.tnr.successes}/{corrected.tnr.n}; "
        f"95% interval) is below {bound + 0.01:g} by 0.0100"
    )
    with pytest.raises(ValueError, match=r"bounds are at 0\.95, not 0\.9"):
        assert_pass_pow_k(out, lower_bound_at_least=0.1, level=0.9, corrected=True)
    # Evaluated without the calibration: the corrected figure was not measured, so it fails.
    assert run_cli_in_process("evaluate", FLAKY, "--out", plain, "--quiet").returncode == 0
    assert_pass_pow_k(plain, lower_bound_at_least=0.1)  # today's figure passes
    with pytest.raises(AssertionError, match=r"pass\^3 \(per task, corrected for the judge's error\) .*not measured"):
        assert_pass_pow_k(plain, lower_bound_at_least=0.1, corrected=True)


def test_judge_samples_print_the_judge_noise_line(tmp_path: Path) -> None:
    body = json.loads(FLAKY.read_text())
    body["config"] = {**body.get("config", {}), "judge_samples": 3}
    request, out = tmp_path / "request.json", tmp_path / "result.json"
    request.write_text(json.dumps(body))
    done = run_cli_in_process("evaluate", request, "--out", out)
    assert done.returncode == 0, done.stderr
    noise = EvaluationResult.model_validate_json(out.read_text()).aggregated_metrics.judge_noise
    # The offline judge is deterministic: its three samples of a turn always agree.
    assert noise is not None and noise.estimator == "latent_class" and noise.tasks == 4
    assert noise.judge_share is not None and noise.judge_share < 1e-6
    line = (
        "judge noise: 0% of the variance in judged success is between the judge's samples of one transcript"
        " (latent class, 4 task(s)); agent 100%"
    )
    assert line in done.stderr
