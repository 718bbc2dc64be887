"""`fair-forge evaluate` and flaky tasks (#25 §5): the tasks listed, `--max-flaky-tasks` and
`--min-task-pass-rate` passing, failing, and failing when nothing was measured. The example's
tasks, counted by hand: opening_hours and shipping_cost pass 3 of 3, order_status 2 of 3,
return_window 0 of 3."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from scipy.stats import binomtest

from fair_forge_core.cli import main
from tests.cli.test_cli import CALCULATOR, ROOT, run_cli_in_process

FLAKY = ROOT / "examples" / "flaky_tasks.json"


def evaluate(*args: str | Path) -> tuple[int, str, str]:
    """`fair-forge evaluate` in this process: (exit code, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["evaluate", *map(str, args)], stdout, stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def interval(passed: int, attempts: int, level: float = 0.95) -> str:
    ci = binomtest(passed, attempts).proportion_ci(confidence_level=level, method="exact")
    return f"{ci.low:.3f} to {ci.high:.3f}"


def test_evaluate_lists_the_flaky_and_failing_tasks_whatever_the_request_asked(tmp_path: Path) -> None:
    body = json.loads(FLAKY.read_text())
    del body["config"]["task_stability"]
    request = tmp_path / "r.json"
    request.write_text(json.dumps(body))
    code, stdout, stderr = evaluate(request)
    assert code == 0, stderr
    assert "task_stability" not in json.loads(stdout)["aggregated_metrics"]  # the JSON is as the request asked
    assert "tasks: 2 stable, 1 flaky, 1 failing\n" in stderr
    assert f"  flaky: order_status, 2 of 3 attempts passed (95% interval {interval(2, 3)})\n" in stderr
    assert f"  failing: return_window, 0 of 3 attempts passed (95% interval {interval(0, 3)})\n" in stderr
    assert "opening_hours" not in stderr  # the stable tasks are counted, not listed

    code, stdout, _ = evaluate(FLAKY, "--quiet")
    assert json.loads(stdout)["aggregated_metrics"]["task_stability"]["flaky"] == 1


def test_the_interval_follows_the_requests_ci_level(tmp_path: Path) -> None:
    body = json.loads(FLAKY.read_text())
    body["config"]["statistical_mode"] = {"ci_level": 0.8}
    request = tmp_path / "r.json"
    request.write_text(json.dumps(body))
    _, _, stderr = evaluate(request)
    assert f"order_status, 2 of 3 attempts passed (80% interval {interval(2, 3, 0.8)})" in stderr


def test_max_flaky_tasks_fails_above_n_and_names_the_tasks() -> None:
    code, _, stderr = evaluate(FLAKY, "--max-flaky-tasks", "0")
    assert code == 1
    assert "FAILED: 1 of 4 task(s) flaky, more than --max-flaky-tasks 0 by 1: order_status\n" in stderr
    code, _, stderr = evaluate(FLAKY, "--max-flaky-tasks", "1")
    assert code == 0, stderr
    assert "gate met: 1 of 4 task(s) flaky, at most --max-flaky-tasks 1\n" in stderr


def test_min_task_pass_rate_fails_below_x_and_names_every_task_below() -> None:
    code, _, stderr = evaluate(FLAKY, "--quiet", "--min-task-pass-rate", "0.7")  # 2/3 < 0.7, 0/3 < 0.7
    assert code == 1
    assert (
        "FAILED: 2 of 4 task(s) pass less often than --min-task-pass-rate 0.7: order_status 2/3, return_window 0/3\n"
        in stderr
    )
    code, _, stderr = evaluate(FLAKY, "--quiet", "--min-task-pass-rate", "0.6")  # 2/3 ≥ 0.6
    assert code == 1 and "than --min-task-pass-rate 0.6: return_window 0/3\n" in stderr
    code, _, stderr = evaluate(FLAKY, "--min-task-pass-rate", "0")
    assert code == 0, stderr
    assert (
        "gate met: every one of 4 task(s) passes at least --min-task-pass-rate 0 (lowest: return_window 0/3)" in stderr
    )


@pytest.mark.parametrize("gate", [["--max-flaky-tasks", "5"], ["--min-task-pass-rate", "0"]])
def test_a_task_gate_fails_when_a_task_has_fewer_than_two_attempts(gate: list[str]) -> None:
    # calculator.json has no task ids: every conversation is a task of one attempt.
    code, _, stderr = evaluate(CALCULATOR, "--quiet", *gate)
    assert code == 1
    assert (
        "FAILED: 2 of 2 task(s) have fewer than 2 scored attempts, so their stability was not measured: "
        f"{' '.join(gate)} cannot be met\n" in stderr
    )
    assert "tasks:" not in evaluate(CALCULATOR)[2]  # nothing to list either


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--max-flaky-tasks", "-1"], "--max-flaky-tasks: must be at least 0, got -1"),
        (["--max-flaky-tasks", "one"], "--max-flaky-tasks: must be a whole number, got 'one'"),
        (["--min-task-pass-rate", "1.5"], "--min-task-pass-rate: must be between 0 and 1, got 1.5"),
    ],
)
def test_a_bad_task_gate_value_exits_2_naming_its_flag(arguments: list[str], message: str) -> None:
    process = run_cli_in_process("evaluate", FLAKY, *arguments)
    assert process.returncode == 2
    assert message in process.stderr and process.stdout == ""


def test_a_task_gate_fails_on_one_task_not_measured_and_names_each_assistants_task(tmp_path: Path) -> None:
    body = json.loads(FLAKY.read_text())
    once = json.loads(json.dumps(body["datasets"][0]))
    once.update(session_id="once", task_id="asked_once")
    request = tmp_path / "r.json"
    request.write_text(json.dumps({**body, "datasets": [*body["datasets"], once]}))
    # The example's 4 tasks plus one asked once: 0 flaky would pass on the labelled tasks alone.
    code, _, stderr = evaluate(request, "--quiet", "--max-flaky-tasks", "1")
    assert code == 1
    assert "FAILED: 1 of 5 task(s) have fewer than 2 scored attempts" in stderr
    # A second assistant that always fails order_status: its own failing task, named with it.
    other = [
        {**json.loads(json.dumps(d)), "assistant_id": "agent_b", "session_id": f"b-{d['session_id']}"}
        for d in body["datasets"]
        if d["task_id"] == "order_status"
    ]
    for dataset in other:
        for batch in dataset["conversation"]:
            batch["assistant"] = "I cannot help with that."
    request.write_text(json.dumps({**body, "datasets": [*body["datasets"], *other]}))
    code, _, stderr = evaluate(request, "--min-task-pass-rate", "0.5")
    assert code == 1
    assert "pass less often than --min-task-pass-rate 0.5: order_status (agent_b) 0/3, return_window (" in stderr
