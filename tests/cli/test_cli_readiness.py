"""What a CI reads: the readiness headline, the exit code and the HTML badge never say more than
was measured (the cases a new user hit, reproduced with the offline judge, which abstains on
turns it cannot decide)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fair_forge_testing.builders import conversation, turn
from fair_forge_testing.handler_client import call_handler, run_in_subprocess
from tests.cli.test_cli import run_cli_in_process
from tests.report_html import parse

REFERENCE_JUDGE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}
UNDECIDABLE = ("Did the package arrive?", "The package is still in transit.", "Yes")  # the offline judge abstains


def sums(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        conversation(f"sum-{i}", [turn(f"q{i}", f"What is {i} plus 7?", f"It is {i + 7}.", str(i + 7))])
        for i in range(start, start + count)
    ]


def deliveries(count: int) -> list[dict[str, Any]]:
    """Two-turn conversations whose second turn the offline judge cannot decide."""
    return [
        conversation(
            f"delivery-{i}",
            [turn(f"d{i}a", f"What is {i} plus 1?", f"{i + 1}", str(i + 1)), turn(f"d{i}b", *UNDECIDABLE)],
        )
        for i in range(count)
    ]


def write(path: Path, datasets: list[dict[str, Any]], **config: Any) -> Path:
    path.write_text(json.dumps({"connector": REFERENCE_JUDGE, "datasets": datasets, "config": config}))
    return path


def test_a_third_unscored_is_not_enough_evidence_exit_1_and_no_green_badge(tmp_path: Path) -> None:
    request = write(tmp_path / "r.json", sums(24) + deliveries(12))
    html = tmp_path / "report.html"
    process = run_cli_in_process("evaluate", request, "--out", tmp_path / "result.json", "--html", html)
    result = json.loads((tmp_path / "result.json").read_text())
    aggregated = result["aggregated_metrics"]
    assert aggregated["interpretation"] == "reliable"  # the seeds' tier over the 24 scored: unchanged
    assert aggregated["readiness"]["status"] == "insufficient_evidence"
    assert process.returncode == 1, process.stderr  # the outputs are written first
    assert (
        "readiness: reliable on 24 of 36 conversations; 12 unscored (the judge abstained) — not enough evidence"
        in process.stderr
    )
    assert "FAILED: not enough evidence: 12 of 36 conversation(s) unscored" in process.stderr
    badge = next(e for e in parse(html.read_text()) if e.attrs.get("id") == "readiness")
    assert "readiness-insufficient" in badge.classes and badge.text.strip() == "Not enough evidence"
    assert not any(c.startswith("readiness-reliable") for c in badge.classes)

    allowed = run_cli_in_process("evaluate", request, "--quiet", "--allow-unscored")
    assert allowed.returncode == 0, allowed.stderr


def test_a_sufficient_result_has_its_tier_badge_and_a_small_one_is_preliminary(tmp_path: Path) -> None:
    for count, state, label in (
        (30, "readiness-reliable", "Reliable"),
        (5, "readiness-preliminary", "Reliable · preliminary"),
    ):
        html = tmp_path / f"{count}.html"
        process = run_cli_in_process(
            "evaluate", write(tmp_path / f"{count}.json", sums(count)), "--out", tmp_path / "o.json", "--html", html
        )
        assert process.returncode == 0, process.stderr
        badge = next(e for e in parse(html.read_text()) if e.attrs.get("id") == "readiness")
        assert state in badge.classes and badge.text.strip() == label
    assert "— preliminary: fewer than 30 scored conversations" in process.stderr
    assert "warning: Only 5 scored conversation(s)" in process.stderr  # the sample-size warning beside the tier


def per_task_request(path: Path) -> Path:
    """3 tasks × 3 attempts, each task right 2 times in 3."""
    rows = []
    for task in range(3):
        for attempt in range(3):
            right = attempt != task
            i = task * 3 + attempt
            answer = f"It is {i + 7}." if right else "No idea."
            rows.append(
                conversation(
                    f"t{task}-{attempt}",
                    [turn(f"q{i}", f"What is {i} plus 7?", answer, str(i + 7))],
                    task_id=f"task-{task}",
                )
            )
    return write(path, rows, k=3)


def test_gates_read_the_per_task_figures_when_there_are_tasks(tmp_path: Path) -> None:
    # Pooled plug-in pass^3 is (6/9)^3 = 0.296, above 0.2; per task no task succeeded 3 times in 3: 0.
    request = per_task_request(tmp_path / "r.json")
    process = run_cli_in_process("evaluate", request, "--out", tmp_path / "o.json", "--fail-under-pass-pow-k", "0.2")
    aggregated = json.loads((tmp_path / "o.json").read_text())["aggregated_metrics"]
    assert abs(aggregated["pass_pow_k"] - (6 / 9) ** 3) < 1e-12 and aggregated["per_task"]["pass_pow_k"] == 0.0
    assert process.returncode == 1, process.stderr
    assert (
        "FAILED: pass^3 = 0.0000 (per task, τ-bench, 3 task(s) with 3 or more attempts) is below "
        "--fail-under-pass-pow-k 0.2 by 0.2000" in process.stderr
    )
    assert "readiness: inconsistent per task over 3 task(s)" in process.stderr
    bound = aggregated["per_task"]["pass_at_k_ci_low"]
    gated = run_cli_in_process("evaluate", request, "--quiet", "--fail-if-lower-bound", f"pass_at_k<{bound - 0.01}")
    assert gated.returncode == 0, gated.stderr
    failing = run_cli_in_process(
        "evaluate", request, "--fail-if-lower-bound", f"pass_at_k<{bound + 0.01}", "--out", tmp_path / "p.json"
    )
    assert failing.returncode == 1
    assert f"lower bound of pass@3 = {bound:.4f} (95% Wilson bound over 3 task(s)" in failing.stderr


def test_a_request_the_judge_only_abstained_on_is_a_200_that_says_so() -> None:
    body = {"connector": REFERENCE_JUDGE, "datasets": deliveries(3)}
    response = call_handler(body)
    assert response.status == 200, response.body
    aggregated = response.body["aggregated_metrics"]
    assert aggregated["unscored_conversations"] == 3 and aggregated["pass_pow_k"] is None
    assert aggregated["readiness"]["status"] == "insufficient_evidence" and aggregated["readiness"]["tier"] is None
    assert aggregated["readiness"]["summary"] == (
        "no conversation scored of 3; 3 unscored (the judge abstained) — not enough evidence (more than 10% unscored)"
    )


def test_the_log_line_carries_the_readiness() -> None:
    body = {"connector": REFERENCE_JUDGE, "datasets": sums(4) + deliveries(2)}
    (response,), out = run_in_subprocess([body])
    assert response["status"] == 200
    (finished,) = [json.loads(line) for line in out.splitlines() if '"evaluation finished"' in line]
    readiness = response["body"]["aggregated_metrics"]["readiness"]
    assert finished["readiness_status"] == readiness["status"] == "insufficient_evidence"
    assert (finished["readiness_tier"], finished["readiness_basis"]) == (readiness["tier"], "conversations")
    assert (finished["readiness_scored"], finished["readiness_total"]) == (4, 6)
    assert finished["readiness_summary"] == readiness["summary"]
