"""`config.efficiency` in the CLI: `evaluate` prints one line of it, `compare` the paired
efficiency after the verdict (never changing it). Values by hand from the inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.cli.common import EXIT_BAD_INPUT, EXIT_NOT_TESTED
from fair_forge_testing.builders import conversation, turn
from tests.cli.test_cli import run_cli, run_cli_in_process


def test_evaluate_prints_the_medians_and_the_cost_per_successful_task(tmp_path: Path) -> None:
    process = run_cli_in_process("evaluate", "examples/efficiency.json", "--out", tmp_path / "r.json")
    assert process.returncode == 0, process.stderr
    line = next(x for x in process.stderr.splitlines() if x.startswith("efficiency"))
    # steps 4, 2, 2: median 2, p95 at h = 1.9 → 2 + 0.9·2; cost (0.007 + 0.002 + 0.003) / 2 successes
    assert "steps 2 / 3.8" in line and "cost per successful task $0.006 (2 of 3 scored" in line


def test_compare_prints_the_paired_efficiency_after_the_verdict(tmp_path: Path) -> None:
    conversations = [
        conversation(
            f"{who}-{t}",
            [turn("q", f"What is {t} plus 1?", f"It is {t + 1}.", str(t + 1), agent_usage={"cost_usd": cost})],
            assistant_id=who,
            task_id=f"t{t}",
        )
        for who, cost in (("old", 0.004), ("new", 0.002))
        for t in range(3)
    ]
    request = {"connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"}, "datasets": conversations}
    for efficiency in (True, False):
        path = tmp_path / f"both-{efficiency}.json"
        path.write_text(json.dumps({**request, "config": {"k": 1, "efficiency": efficiency}}))
        out = tmp_path / f"comparison-{efficiency}.json"
        choose = ("--baseline-assistant", "old", "--candidate-assistant", "new", "--quiet", "--out", out)
        process = run_cli_in_process("compare", path, path, *choose)
        assert process.returncode == EXIT_NOT_TESTED, process.stderr  # 3 tasks: not tested, whatever the cost
        lines = process.stdout.splitlines()
        cost = [x for x in lines if x.strip().startswith("cost_usd:")]
        if not efficiency:
            assert cost == [] and "efficiency" not in json.loads(out.read_text())
            continue
        # every task −0.002: the sign-flip test's smallest p over 3 tasks, 2/2³
        assert cost == ["  cost_usd: 0.004 → 0.002, difference -0.002 [-0.002, -0.002], p = 0.250 (sign-flip, 3 tasks)"]
        assert lines.index(cost[0]) > next(i for i, x in enumerate(lines) if x.startswith("verdict:"))
        assert json.loads(out.read_text())["verdict"] == "not_tested"


OVER_THE_BOUND = [
    pytest.param([{"cost_usd": 1e308}] * 2, "cost_usd", id="cost 1e308 twice"),
    pytest.param([{"latency_s": 1.5e308}] * 2, "latency_s", id="latency 1.5e308 twice"),
    pytest.param([{"input_tokens": 10**400}], "input_tokens", id="tokens 10**400"),
    pytest.param([{"output_tokens": int("9" * 4300)}] * 2, "output_tokens", id="4,300-digit tokens"),
]


def _usage_request(path: Path, usages: list[dict[str, Any]]) -> Path:
    turns = [turn(f"q{n}", "What is 2 plus 2?", "4", "4", agent_usage=usage) for n, usage in enumerate(usages)]
    request = {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"},
        "datasets": [conversation("s", turns)],
        "config": {"k": 1, "efficiency": True},
    }
    path.write_text(json.dumps(request))
    return path


@pytest.mark.parametrize(("usages", "field"), OVER_THE_BOUND)
def test_agent_usage_over_its_bound_is_bad_input_not_a_failed_gate(
    tmp_path: Path, usages: list[dict[str, Any]], field: str
) -> None:
    """Each of these was an `OverflowError` traceback and exit 1, the code of a failed gate."""
    path = _usage_request(tmp_path / "usage.json", usages)
    process = run_cli_in_process("evaluate", path, "--out", tmp_path / "r.json")
    assert process.returncode == EXIT_BAD_INPUT, process.stderr
    assert f"datasets[0].conversation[0].agent_usage.{field}: Input should be less than or equal to" in process.stderr
    assert "Traceback" not in process.stderr and not (tmp_path / "r.json").exists()


def test_agent_usage_over_its_bound_in_a_process_prints_no_traceback(tmp_path: Path) -> None:
    path = _usage_request(tmp_path / "usage.json", [{"cost_usd": 1e308}] * 2)
    process = run_cli("evaluate", path, "--out", tmp_path / "r.json")
    assert process.returncode == EXIT_BAD_INPUT, process.stderr
    assert "Traceback" not in process.stderr and "agent_usage.cost_usd" in process.stderr


def test_a_result_file_with_an_efficiency_beyond_its_bound_is_bad_input_for_compare(tmp_path: Path) -> None:
    # A result file is read back by `compare`: a hand-made 1e308 once overflowed its sums (traceback).
    good = tmp_path / "good.json"
    assert run_cli_in_process("evaluate", "examples/efficiency.json", "--out", good, "--quiet").returncode == 0
    result = json.loads(good.read_text())
    for metrics in result["per_conversation_metrics"]:
        if metrics.get("efficiency"):
            metrics["efficiency"] |= {"cost_usd": 1e308, "latency_s": 1.7e308}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(result))
    process = run_cli_in_process("compare", good, bad)
    assert process.returncode == EXIT_BAD_INPUT, process.stderr
    assert (
        "Traceback" not in process.stderr
        and ".efficiency.cost_usd: Input should be less than or equal to" in process.stderr
    )
