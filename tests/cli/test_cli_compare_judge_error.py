"""`fair-forge compare` of two results corrected for the judge's error (`evaluate --judge-error`;
issue #36 item 5): the corrected comparison in the JSON (`judge_corrected`), the lines after the
verdict, the Markdown section and the JUnit properties; a verdict within the judge's error band,
`--require-judge-robust`; one side corrected (not measured); two judges or two calibrations; a
perfect calibration (identity); and `config.compare` with `--html`.

The sides are examples/compare's, judged offline, the calibration the starter set's (`calibrate`);
"mixed" is the baseline with its first five tasks (by name) answered as the candidate answers
them, a candidate the attempt-level test cannot call better but whose corrected pass^3 is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.exports.markdown import cell
from fair_forge_core.schemas import Comparison, EvaluationResult
from tests.cli.test_cli import ROOT, run_cli_in_process

EXAMPLES = ROOT / "examples" / "compare"
STARTER = ROOT / "examples" / "calibration" / "starter.jsonl"
MIXED_TASKS = 5


def evaluate(request: Path, out: Path, *flags: str | Path) -> Path:
    done = run_cli_in_process("evaluate", request, "--out", out, "--quiet", *flags)
    assert done.returncode == 0, done.stderr
    return out


def mixed_request(path: Path) -> Path:
    baseline = json.loads((EXAMPLES / "baseline.json").read_text())
    candidate = json.loads((EXAMPLES / "candidate.json").read_text())
    chosen = sorted({d["task_id"] for d in baseline["datasets"]})[:MIXED_TASKS]
    datasets = [d for d in baseline["datasets"] if d["task_id"] not in chosen] + [
        d | {"assistant_id": "support-bot-v1", "session_id": f"{d['session_id']}-mixed"}
        for d in candidate["datasets"]
        if d["task_id"] in chosen
    ]
    path.write_text(json.dumps(baseline | {"datasets": datasets}))
    return path


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The calibration and the result files: each side corrected with it, the baseline also
    uncorrected, the mixed candidate corrected."""
    folder = tmp_path_factory.mktemp("compare-judge-error")
    calibration = folder / "calibration.json"
    done = run_cli_in_process("calibrate", STARTER, "--out", calibration, "--quiet")
    assert done.returncode == 0, done.stderr
    flags = ("--judge-error", calibration)
    return {
        "calibration": calibration,
        "baseline": evaluate(EXAMPLES / "baseline.json", folder / "baseline.result.json", *flags),
        "candidate": evaluate(EXAMPLES / "candidate.json", folder / "candidate.result.json", *flags),
        "plain": evaluate(EXAMPLES / "baseline.json", folder / "plain.result.json"),
        "mixed": evaluate(mixed_request(folder / "mixed.json"), folder / "mixed.result.json", *flags),
    }


def compare(tmp_path: Path, baseline: Path, candidate: Path, *flags: str) -> tuple[Any, Comparison]:
    out = tmp_path / "comparison.json"
    done = run_cli_in_process("compare", baseline, candidate, "--out", out, *flags)
    return done, Comparison.model_validate_json(out.read_text())


def corrected_of(path: Path) -> Any:
    return EvaluationResult.model_validate_json(path.read_text()).aggregated_metrics.judge_corrected


def test_both_sides_corrected_with_one_calibration(sides: dict[str, Path], tmp_path: Path) -> None:
    markdown, junit = tmp_path / "summary.md", tmp_path / "junit.xml"
    done, comparison = compare(
        tmp_path, sides["baseline"], sides["candidate"], "--markdown", str(markdown), "--junit", str(junit)
    )
    assert done.returncode == 0, done.stderr
    corrected = comparison.judge_corrected
    assert corrected is not None and corrected.measured and corrected.method == "monte_carlo"
    assert corrected.shared_judge_draws and corrected.same_judge and corrected.notes == []
    assert (corrected.k, corrected.tasks, corrected.draws, corrected.seed) == (3, 12, 4000, 0)
    pow_k = corrected.pass_pow_k
    assert pow_k is not None and corrected.pass_at_k is not None
    # The baseline's draws are its own correction's (stream 1, seed 0, every task compared); the
    # candidate's, on another noise stream, agree with its own within Monte Carlo error.
    base_own, cand_own = corrected_of(sides["baseline"]), corrected_of(sides["candidate"])
    assert pow_k.baseline == pytest.approx(base_own.pass_pow_k, rel=1e-12)
    assert corrected.pass_at_k.baseline == pytest.approx(base_own.pass_at_k, rel=1e-12)
    assert pow_k.candidate == pytest.approx(cand_own.pass_pow_k, abs=0.01)
    assert pow_k.difference == pytest.approx(pow_k.candidate - pow_k.baseline, abs=1e-12)
    assert pow_k.ci_low > 0 and corrected.verdict == "improved" and comparison.verdict == "improved"
    assert corrected.within_judge_error is False
    line = (
        f"pass^3: baseline {pow_k.baseline:.3f} → candidate {pow_k.candidate:.3f}, difference {pow_k.difference:+.3f}, "
        f"95% interval [{pow_k.ci_low:+.3f}, {pow_k.ci_high:+.3f}]"
    )
    assert line in done.stdout and "one judge, one calibration: shared judge draws" in done.stdout
    assert "corrected verdict: improved" in done.stdout
    summary = markdown.read_text()
    assert "### Corrected for the judge's error" in summary and f"- {cell(line)}" in summary
    assert '<property name="within_judge_error" value="false"' in junit.read_text()
    assert '<property name="judge_corrected_verdict" value="improved"' in junit.read_text()


def test_a_verdict_the_corrected_comparison_disagrees_with(sides: dict[str, Path], tmp_path: Path) -> None:
    done, comparison = compare(tmp_path, sides["baseline"], sides["mixed"])
    corrected = comparison.judge_corrected
    assert corrected is not None and corrected.pass_pow_k is not None
    assert comparison.verdict == "inconclusive" and done.returncode == 0  # the gates are unchanged
    assert corrected.pass_pow_k.ci_low > 0 and corrected.verdict == "improved"
    assert corrected.within_judge_error is True
    assert "corrected verdict: WITHIN THE JUDGE'S ERROR BAND" in done.stdout
    assert "is within the judge's error band" in corrected.explanation
    strict = run_cli_in_process("compare", sides["baseline"], sides["mixed"], "--require-judge-robust")
    assert strict.returncode == 1
    assert (
        "--require-judge-robust: the observed verdict (inconclusive) is within the judge's error band" in strict.stderr
    )
    robust = run_cli_in_process("compare", sides["baseline"], sides["candidate"], "--require-judge-robust")
    assert robust.returncode == 0, robust.stderr


def test_one_side_corrected_is_not_measured(sides: dict[str, Path], tmp_path: Path) -> None:
    done, comparison = compare(tmp_path, sides["plain"], sides["candidate"])
    assert done.returncode == 0 and comparison.verdict == "improved"
    corrected = comparison.judge_corrected
    assert corrected is not None and not corrected.measured
    assert corrected.reason == "only the candidate was corrected for its judge's error, not the baseline"
    assert corrected.pass_pow_k is None and corrected.verdict is None and corrected.within_judge_error is None
    assert "corrected for the judge's error: NOT MEASURED" in done.stdout and "(not a pass)" in done.stdout
    strict = run_cli_in_process("compare", sides["plain"], sides["candidate"], "--require-judge-robust")
    assert strict.returncode == 1 and "was not measured" in strict.stderr


def test_neither_side_corrected_has_no_corrected_comparison(sides: dict[str, Path], tmp_path: Path) -> None:
    result = json.loads(sides["plain"].read_text())
    (tmp_path / "again.json").write_text(json.dumps(result))
    done, comparison = compare(tmp_path, sides["plain"], tmp_path / "again.json")
    assert comparison.judge_corrected is None and "judge_corrected" not in comparison.model_dump(mode="json")
    assert "corrected for the judge's error" not in done.stdout
    assert done.returncode == 0 and comparison.verdict == "inconclusive"
    strict = run_cli_in_process("compare", sides["plain"], tmp_path / "again.json", "--require-judge-robust")
    assert strict.returncode == 1 and "neither side was corrected" in strict.stderr


def test_two_judges_rest_on_two_calibrations(sides: dict[str, Path], tmp_path: Path) -> None:
    """A candidate corrected with another judge's calibration (its identity rewritten: the offline
    judge is the only one here): independent judge draws, and every face says so."""
    result = json.loads(sides["candidate"].read_text())
    result["aggregated_metrics"]["judge_corrected"]["judge"] = "b" * 64
    other = tmp_path / "other-judge.json"
    other.write_text(json.dumps(result))
    done, comparison = compare(tmp_path, sides["baseline"], other)
    corrected = comparison.judge_corrected
    assert corrected is not None and corrected.measured
    assert corrected.same_judge is False and corrected.shared_judge_draws is False
    assert "different judges" in corrected.notes[0] and "two different calibrations" in corrected.notes[0]
    assert f"note: {corrected.notes[0]}" in done.stdout and "independent judge draws" in done.stdout


def calibration_of_the_judge(sides: dict[str, Path], path: Path, tpr: tuple[int, int], tnr: tuple[int, int]) -> None:
    """Write to `path` a `judge_error` for the judge the sides' calibration measured, with the
    counts `tpr` and `tnr` (successes, n) instead of the measured ones."""
    judge = json.loads(sides["calibration"].read_text())["judge"]["identity"]
    counts = {"tpr": {"successes": tpr[0], "n": tpr[1]}, "tnr": {"successes": tnr[0], "n": tnr[1]}}
    path.write_text(json.dumps({"judge": judge, **counts}))


def test_two_calibrations_of_one_judge_are_drawn_independently(sides: dict[str, Path], tmp_path: Path) -> None:
    calibration_of_the_judge(sides, tmp_path / "weaker.json", tpr=(85, 100), tnr=(80, 100))
    candidate = evaluate(
        EXAMPLES / "candidate.json", tmp_path / "weaker.result.json", "--judge-error", tmp_path / "weaker.json"
    )
    _, comparison = compare(tmp_path, sides["baseline"], candidate)
    corrected = comparison.judge_corrected
    assert corrected is not None and corrected.same_judge is True and corrected.shared_judge_draws is False
    assert corrected.notes == [
        "the sides were corrected with two different calibrations of one judge: the corrected comparison rests "
        "on both, drawn independently"
    ]


def test_a_perfect_calibration_is_identity(sides: dict[str, Path], tmp_path: Path) -> None:
    calibration_of_the_judge(sides, tmp_path / "perfect.json", tpr=(30, 30), tnr=(30, 30))
    flags = ("--judge-error", tmp_path / "perfect.json")
    base = evaluate(EXAMPLES / "baseline.json", tmp_path / "b.json", *flags)
    cand = evaluate(EXAMPLES / "candidate.json", tmp_path / "c.json", *flags)
    done, comparison = compare(tmp_path, base, cand)
    corrected = comparison.judge_corrected
    assert corrected is not None and corrected.method == "identity" and corrected.within_judge_error is False
    assert "both calibrations are perfect (n of n)" in corrected.explanation
    assert "the judge read as exact" in done.stdout


def test_config_compare_under_judge_error_and_the_report(sides: dict[str, Path], tmp_path: Path) -> None:
    """One evaluation of both assistants under `config.judge_error`: one calibration, shared draws;
    the HTML report's comparison shows the corrected comparison."""
    baseline = json.loads((EXAMPLES / "baseline.json").read_text())
    candidate = json.loads((EXAMPLES / "candidate.json").read_text())
    request = baseline | {
        "datasets": baseline["datasets"] + candidate["datasets"],
        "config": baseline["config"] | {"compare": {"baseline": "support-bot-v1", "candidate": "support-bot-v2"}},
    }
    (tmp_path / "both.json").write_text(json.dumps(request))
    html = tmp_path / "report.html"
    out = evaluate(tmp_path / "both.json", tmp_path / "both.result.json", "--judge-error", sides["calibration"])
    done = run_cli_in_process("report", out, "-o", html)
    assert done.returncode == 0, done.stderr
    comparison = EvaluationResult.model_validate_json(out.read_text()).aggregated_metrics.comparison
    assert comparison is not None and comparison.judge_corrected is not None
    corrected = comparison.judge_corrected
    assert corrected.shared_judge_draws is True and corrected.tasks == 12 and corrected.verdict == "improved"
    page = html.read_text()
    assert 'id="comparison-judge-corrected" data-within-judge-error="false"' in page
    assert "Corrected for the judge&#39;s error" in page or "Corrected for the judge's error" in page
