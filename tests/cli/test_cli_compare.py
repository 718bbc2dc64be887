"""`fair-forge compare`: the CLI side of "is B better than A?" (issue #15), run as a user runs it.

The inputs are built with `fair_forge_testing.builders` and judged by the offline
`ReferenceJudge`: a task is "What is a plus b?", a right attempt answers the sum, a wrong
one "No idea.". Each scenario says which attempts each version gets right.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fair_forge_testing.builders import conversation, provenance_json, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply
from tests.cli.test_cli import ROOT, run_cli, run_cli_in_process

REFERENCE_JUDGE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}
Pattern = list[tuple[bool, ...]]


def attempts(assistant: str, pattern: Pattern, *, first_task: int = 0) -> list[dict[str, Any]]:
    """One conversation per attempt: task i (`task-i`) attempted len(pattern[i]) times,
    answered right where the pattern says True."""
    conversations = []
    for offset, outcomes in enumerate(pattern):
        task = first_task + offset
        for attempt, right in enumerate(outcomes):
            total = 2 * task + 7
            answer = f"It is {total}." if right else "No idea."
            conversations.append(
                conversation(
                    f"{assistant}-{task}-{attempt}",
                    [turn(f"q{task}-{attempt}", f"What is {task} plus {task + 7}?", answer, str(total))],
                    assistant_id=assistant,
                    task_id=f"task-{task}",
                )
            )
    return conversations


def request_file(path: Path, conversations: list[dict[str, Any]], k: int = 3) -> Path:
    path.write_text(json.dumps({"connector": REFERENCE_JUDGE, "datasets": conversations, "config": {"k": k}}))
    return path


ALL_RIGHT: Pattern = [(True, True, True)] * 12
ONE_IN_THREE: Pattern = [(True, False, False)] * 12
MIXED: Pattern = [(True, False, True), (False, True, True), (True, True, False), (False, False, True)] * 3
# MIXED with one more right attempt, at one task: a difference of 1/36 in pass@1.
NEARLY_MIXED: Pattern = [(True, True, True), *MIXED[1:]]


# --------------------------------------------------------------------------- reading the output


ROW = re.compile(
    r"^(pass\S+(?: \(per-task plug-in\))?)\s{2,}(\d+)\s{2,}(\S+)\s{2,}(\S+)\s{2,}(\S+)\s{2,}(\S+|\[.*?\])\s{2,}(\S+)\s{2,}(yes|no)$"
)


def table(stdout: str) -> dict[str, list[str]]:
    """The printed table: metric label → its cells (tasks, baseline, candidate, difference, interval, p, significant)."""
    rows = {}
    for line in stdout.splitlines():
        match = ROW.match(line)
        if match:
            rows[match.group(1)] = list(match.groups()[1:])
    return rows


def label(metric: str, k: int) -> str:
    """The documented names (docs/statistics.md's glossary): the per-task unbiased figures are
    plain pass@k / pass^k, the plug-in ones carry "(per-task plug-in)"."""
    if metric.endswith("_unbiased"):
        return metric.removesuffix("_unbiased").replace("@k", f"@{k}").replace("^k", f"^{k}")
    if metric == "pass@1":
        return metric
    return metric.replace("@k", f"@{k}").replace("^k", f"^{k}") + " (per-task plug-in)"


def assert_printed(cell: str, value: float | None, decimals: int = 3) -> None:
    """A printed cell shows `value` rounded to `decimals` ("—" for None)."""
    if value is None:
        assert cell == "—"
        return
    assert math.isclose(float(cell), value, abs_tol=0.5 * 10**-decimals + 1e-12), (cell, value)


def assert_table_equals_json(stdout: str, comparison: dict[str, Any]) -> None:
    rows = table(stdout)
    assert len(rows) == len(comparison["metrics"]) >= 1
    for metric in comparison["metrics"]:
        tasks, baseline, candidate, difference, interval, p_holm, significant = rows[
            label(metric["metric"], metric["k"])
        ]
        assert int(tasks) == metric["tasks"]
        assert_printed(baseline, metric["baseline"])
        assert_printed(candidate, metric["candidate"])
        assert_printed(difference, metric["difference"])
        low, high = (float(x) for x in interval.strip("[]").split(","))
        assert_printed(str(low), metric["ci_low"])
        assert_printed(str(high), metric["ci_high"])
        if p_holm == "<0.001":
            assert metric["p_value_holm"] < 0.001
        elif p_holm == "—":
            assert metric["p_value_holm"] is None
        else:
            assert_printed(p_holm, metric["p_value_holm"])
        assert (significant == "yes") is metric["significant"]


def compare_files(*args: str | Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None, Path]:
    """Run `compare … --out`; the process, the comparison JSON (None when not written), its path."""
    out = Path(str(args[0])).parent / "comparison.json"
    out.unlink(missing_ok=True)
    process = run_cli_in_process("compare", *args, "--out", out)
    return process, (json.loads(out.read_text()) if out.exists() else None), out


# --------------------------------------------------------------------------- verdicts


def test_a_clear_regression_in_one_file_with_two_assistants_exits_1(tmp_path: Path) -> None:
    both = request_file(tmp_path / "both.json", attempts("v1", ALL_RIGHT) + attempts("v2", ONE_IN_THREE))
    process, comparison, _ = compare_files(both, both, "--baseline-assistant", "v1", "--candidate-assistant", "v2")
    assert process.returncode == 1, process.stderr
    assert comparison is not None and comparison["verdict"] == "regressed"
    assert "verdict: REGRESSED — the candidate is significantly worse than the baseline" in process.stdout
    assert comparison["verdict_explanation"] in process.stdout
    assert comparison["shared_tasks"] == 12 and comparison["k"] == 3
    pass_at_1 = comparison["metrics"][0]
    assert pass_at_1["metric"] == "pass@1" and pass_at_1["difference"] == pytest.approx(1 / 3 - 1)
    assert_table_equals_json(process.stdout, comparison)
    # the one file was judged once: 12 tasks × 3 attempts × 2 assistants, one progress run
    assert process.stderr.count(f"judging {both} 1/") == 1
    mde = {label(m["metric"], m["k"]): m["minimum_detectable_effect"] for m in comparison["metrics"]}
    line = next(line for line in process.stdout.splitlines() if line.startswith("minimum detectable effect"))
    for name, value in re.findall(r"(pass\S+(?: \(per-task plug-in\))?) ±(\d\.\d{3})", line):
        assert_printed(value, mde[name])
    assert "shared tasks needed" not in process.stdout  # only for an inconclusive verdict


def test_identical_agents_are_no_significant_change_exit_0_or_4_when_a_conclusion_is_required(
    tmp_path: Path,
) -> None:
    baseline = request_file(tmp_path / "a.json", attempts("v1", MIXED))
    candidate = request_file(tmp_path / "b.json", attempts("v1", MIXED))
    process, comparison, _ = compare_files(baseline, candidate)
    assert process.returncode == 0, process.stderr
    assert comparison is not None and comparison["verdict"] == "inconclusive"
    assert all(m["difference"] == 0 and not m["significant"] for m in comparison["metrics"])
    assert "verdict: INCONCLUSIVE — no significant difference either way" in process.stdout
    assert "shared tasks needed to settle it: none would — no difference was observed" in process.stdout
    assert_table_equals_json(process.stdout, comparison)

    required = run_cli_in_process("compare", baseline, candidate, "--require-conclusive", "--quiet")
    assert required.returncode == 4, required.stderr
    assert required.stdout == process.stdout  # the same report, only the exit code differs


def test_a_small_difference_is_inconclusive_and_says_how_many_tasks_would_settle_it(tmp_path: Path) -> None:
    baseline = request_file(tmp_path / "a.json", attempts("v1", MIXED))
    candidate = request_file(tmp_path / "b.json", attempts("v2", NEARLY_MIXED))
    process, comparison, _ = compare_files(baseline, candidate)
    assert process.returncode == 0, process.stderr
    assert comparison is not None and comparison["verdict"] == "inconclusive"
    assert comparison["metrics"][0]["difference"] == pytest.approx(1 / 36)
    assert_table_equals_json(process.stdout, comparison)
    line = next(line for line in process.stdout.splitlines() if line.startswith("shared tasks needed"))
    printed = dict(re.findall(r"(pass\S+(?: \(per-task plug-in\))?) (\d+) \(difference", line))
    expected = {label(m["metric"], m["k"]): m["tasks_needed"] for m in comparison["metrics"] if m["tasks_needed"]}
    assert printed and {name: int(n) for name, n in printed.items()} == expected
    assert expected["pass@1"] > 12  # more tasks than were given
    assert run_cli_in_process("compare", baseline, candidate, "--require-conclusive", "--quiet").returncode == 4


def test_an_improvement_exits_0_even_when_a_conclusion_is_required(tmp_path: Path) -> None:
    baseline = request_file(tmp_path / "a.json", attempts("v1", ONE_IN_THREE))
    candidate = request_file(tmp_path / "b.json", attempts("v2", ALL_RIGHT))
    process = run_cli_in_process("compare", baseline, candidate, "--require-conclusive")
    assert process.returncode == 0, process.stderr
    assert "verdict: IMPROVED — the candidate is significantly better than the baseline" in process.stdout


def test_the_docs_example_prints_what_the_docs_show() -> None:
    process = run_cli_in_process(
        "compare", "examples/compare/baseline.json", "examples/compare/candidate.json", "--quiet"
    )
    assert process.returncode == 0, process.stderr
    assert "verdict: IMPROVED" in process.stdout
    page = (ROOT / "docs" / "how-to" / "compare.md").read_text()  # docs/how-to/compare.md "Compare two agents"
    assert process.stdout in page  # pasted as it is printed


# --------------------------------------------------------------------------- inputs


def test_result_files_give_the_same_comparison_as_the_requests_they_came_from(tmp_path: Path) -> None:
    baseline = request_file(tmp_path / "a.json", attempts("v1", MIXED))
    candidate = request_file(tmp_path / "b.json", attempts("v2", ONE_IN_THREE))
    for name in ("a", "b"):
        assert (
            run_cli_in_process(
                "evaluate", tmp_path / f"{name}.json", "--out", tmp_path / f"{name}.result.json"
            ).returncode
            == 0
        )
    # a POST /run response body: the result and its request id
    response = json.loads((tmp_path / "b.result.json").read_text()) | {"request_id": "req-1"}
    (tmp_path / "b.response.json").write_text(json.dumps(response))

    tasks = ("--seed", "7", "--population", "tasks")
    from_requests, expected, _ = compare_files(baseline, candidate, *tasks)
    from_results, actual, _ = compare_files(tmp_path / "a.result.json", tmp_path / "b.response.json", *tasks)
    mixed, mixed_json, _ = compare_files(tmp_path / "a.result.json", candidate, *tasks)
    assert from_requests.returncode == from_results.returncode == mixed.returncode == 1
    assert expected is not None and expected["seed"] == 7
    assert actual == expected == mixed_json
    assert "judging" not in from_results.stderr  # results are not judged again


def test_a_result_says_its_format_and_one_written_before_format_version_is_still_read(tmp_path: Path) -> None:
    request_file(tmp_path / "a.json", attempts("v1", MIXED))
    assert run_cli_in_process("evaluate", tmp_path / "a.json", "--out", tmp_path / "a.result.json").returncode == 0
    result = json.loads((tmp_path / "a.result.json").read_text())
    assert result["format_version"] == "fair-forge-result/1"  # docs/response.md#top-level
    legacy = {key: value for key, value in result.items() if key != "format_version"}
    (tmp_path / "legacy.result.json").write_text(json.dumps(legacy))
    (tmp_path / "future.result.json").write_text(json.dumps(result | {"format_version": "fair-forge-result/9"}))
    candidate = request_file(tmp_path / "b.json", attempts("v2", ONE_IN_THREE))

    current, expected, _ = compare_files(tmp_path / "a.result.json", candidate)
    before, actual, _ = compare_files(tmp_path / "legacy.result.json", candidate)
    assert current.returncode == before.returncode
    assert expected is not None and actual == expected
    future = run_cli_in_process("compare", tmp_path / "future.result.json", candidate)
    assert future.returncode == 2
    assert "future.result.json: a result in format 'fair-forge-result/9', which this version does not read" in (
        future.stderr
    )


def test_evaluate_the_cli_and_the_pytest_plugin_compare_alike(tmp_path: Path) -> None:
    """One orchestration (`compare.compare_sides`) behind the three faces: `config.compare` in the
    result, `fair-forge compare` of that result's two assistants, and `assert_no_regression` of
    it give one comparison, the paired efficiency included."""
    from fair_forge_core.pytest_plugin import FairForge, assert_no_regression

    conversations = attempts("v1", ONE_IN_THREE) + attempts("v2", MIXED)
    for m in conversations:  # what each side spent: v2 a cent cheaper per attempt
        m["conversation"][0]["agent_usage"] = {"cost_usd": 0.03 if m["assistant_id"] == "v1" else 0.02}
    config = {"k": 3, "efficiency": True, "compare": {"baseline": "v1", "candidate": "v2", "seed": 5}}
    result = FairForge().evaluate({"connector": REFERENCE_JUDGE, "datasets": conversations, "config": config})
    (tmp_path / "both.result.json").write_text(result.model_dump_json())
    in_result = result.aggregated_metrics.comparison
    assert in_result is not None and in_result.efficiency is not None

    choose = ("--baseline-assistant", "v1", "--candidate-assistant", "v2", "--seed", "5")
    process, from_cli, _ = compare_files(tmp_path / "both.result.json", tmp_path / "both.result.json", *choose)
    assert process.returncode == 0, process.stderr
    from_plugin = assert_no_regression(result, result, baseline_assistant="v1", candidate_assistant="v2", seed=5)
    assert from_cli == in_result.model_dump(mode="json") == from_plugin.model_dump(mode="json")
    cost = next(e for e in in_result.efficiency if e.measure == "cost_usd")
    assert cost.tasks == 12 and cost.difference == pytest.approx(0.02 - 0.03)


def test_k_confidence_and_seed_are_the_comparisons(tmp_path: Path) -> None:
    baseline = request_file(tmp_path / "a.json", attempts("v1", MIXED))
    candidate = request_file(tmp_path / "b.json", attempts("v2", NEARLY_MIXED))
    process, comparison, _ = compare_files(baseline, candidate, "--k", "1", "--confidence", "0.9", "--seed", "3")
    assert process.returncode == 0, process.stderr
    assert comparison is not None
    assert (comparison["k"], comparison["confidence"], comparison["seed"]) == (1, 0.9, 3)
    assert [m["metric"] for m in comparison["metrics"]] == ["pass@1"]
    assert "90% interval" in process.stdout and "k = 1, confidence 90%" in process.stdout
    _, default_k, _ = compare_files(baseline, candidate)
    assert default_k is not None and default_k["k"] == 3  # the results' k


def test_unmatched_tasks_and_unscored_conversations_are_warnings_on_stderr(tmp_path: Path) -> None:
    # the baseline attempted tasks 0-13, the candidate 2-15: 0, 1 and 14, 15 are unmatched
    baseline = request_file(tmp_path / "a.json", attempts("v1", MIXED + MIXED[:2]))
    candidate = request_file(
        tmp_path / "b.json", attempts("v2", MIXED, first_task=2) + attempts("v2", MIXED[:2], first_task=14)
    )
    assert run_cli_in_process("evaluate", baseline, "--out", tmp_path / "a.result.json").returncode == 0
    result = json.loads((tmp_path / "a.result.json").read_text())
    for metrics in result["per_conversation_metrics"][6:8]:  # task-2's first two attempts: unscored
        metrics.update(is_scored=False, is_fully_correct=None)
    (tmp_path / "a.result.json").write_text(json.dumps(result))

    process, comparison, _ = compare_files(tmp_path / "a.result.json", candidate)
    assert process.returncode in (0, 1), process.stderr
    assert comparison is not None
    assert comparison["baseline_only_tasks"] == ["task-0", "task-1"]
    assert comparison["candidate_only_tasks"] == ["task-14", "task-15"]
    # (each side without provenance is a warning too: not what this test is about)
    warnings = [
        line for line in process.stderr.splitlines() if line.startswith("warning:") and "provenance" not in line
    ]
    assert warnings == [
        "warning: 2 task(s) scored only for the baseline, not compared: task-0, task-1",
        "warning: 2 task(s) scored only for the candidate, not compared: task-14, task-15",
        "warning: 2 unscored baseline conversation(s) left out: task-2 ×2",
    ]
    assert "warning" not in process.stdout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["a.json", "both.json"],
            "both.json holds the conversations of 2 assistants (v1, v2): choose one with --candidate-assistant",
        ),
        (
            ["both.json", "both.json", "--baseline-assistant", "v1", "--candidate-assistant", "v3"],
            "both.json: --candidate-assistant v3: no conversation of assistant 'v3'; assistants present: ['v1', 'v2']",
        ),
        (["a.json", "a.json"], "BASELINE and CANDIDATE are the same conversations"),
        (["both.json", "both.json"], "BASELINE and CANDIDATE are the same conversations"),
        (["a.json", "neither.json"], "neither.json: neither a result (per_conversation_metrics) nor a request"),
        (["a.json", "error.json"], "error.json: an error response, not a result: No datasets provided"),
        (["a.json", "k5.json"], "the baseline's k (3) and the candidate's k (5) differ: choose one with --k"),
        (["a.json", "elsewhere.json"], "no task was scored on both sides: nothing to compare"),
        (["a.json", "missing.json"], "cannot read file"),
        (
            ["a.json", "a.json", "--confidence", "1.5"],
            "argument --confidence: must be between 0 and 1 (exclusive), got 1.5",
        ),
        (["a.json", "a.json", "--seed", "-1"], "argument --seed: must be at least 0, got -1"),
        (["a.json", "a.json", "--k", "0"], "argument --k: must be at least 1, got 0"),
    ],
)
def test_bad_input_exits_2_naming_the_file_or_the_flag(tmp_path: Path, arguments: list[str], message: str) -> None:
    request_file(tmp_path / "both.json", attempts("v1", MIXED) + attempts("v2", MIXED))
    request_file(tmp_path / "a.json", attempts("v1", MIXED))
    request_file(tmp_path / "k5.json", attempts("v2", MIXED), k=5)
    request_file(tmp_path / "elsewhere.json", attempts("v2", MIXED, first_task=100))
    (tmp_path / "neither.json").write_text(json.dumps({"datasets": []}))
    (tmp_path / "error.json").write_text(json.dumps({"success": False, "error": "No datasets provided"}))
    process = run_cli_in_process("compare", *(str(tmp_path / a) if a.endswith(".json") else a for a in arguments))
    assert process.returncode == 2, process.stderr
    assert message in process.stderr
    assert "Traceback" not in process.stderr and process.stdout == ""


def test_an_unwritable_out_exits_2_before_anything_is_judged(tmp_path: Path) -> None:
    baseline = request_file(tmp_path / "a.json", attempts("v1", MIXED))
    candidate = request_file(tmp_path / "b.json", attempts("v2", MIXED))
    process = run_cli_in_process("compare", baseline, candidate, "--out", tmp_path / "no-such-dir" / "c.json")
    assert process.returncode == 2
    assert (
        process.stderr
        == f"error: --out {tmp_path / 'no-such-dir' / 'c.json'}: the directory {tmp_path / 'no-such-dir'} does not exist\n"
    )


def test_an_evaluation_that_cannot_run_exits_3(tmp_path: Path) -> None:
    with FakeLLMServer(responder=lambda request: Reply(status=401)) as server:
        body = {
            "connector": {
                "class_path": "langchain_openai.ChatOpenAI",
                "params": {"model": "judge", "base_url": server.base_url, "api_key": "sk-refused-0123456789"},
            },
            "datasets": attempts("v2", MIXED),
        }
        candidate = tmp_path / "b.json"
        candidate.write_text(json.dumps(body))
        baseline = request_file(tmp_path / "a.json", attempts("v1", MIXED))
        process = run_cli("compare", baseline, candidate)  # a subprocess: its whole stderr, log lines included
    assert process.returncode == 3, process.stderr
    assert f"error: evaluation failed: {candidate}: the judge provider refused the request" in process.stderr
    assert "0123456789" not in process.stderr and process.stdout == ""


# --------------------------------------------------------------------------- small samples (issue: headlines a CI can trust)


def test_the_issues_22_of_24_against_8_of_24_on_8_tasks_is_regressed_exit_1(tmp_path: Path) -> None:
    # Today's code printed INCONCLUSIVE, exit 0, and "1 shared task needed to settle it".
    v1: Pattern = [(True, True, True)] * 6 + [(True, True, False)] * 2
    v2: Pattern = [(True, False, False)] * 8
    both = request_file(tmp_path / "both.json", attempts("v1", v1) + attempts("v2", v2))
    process, comparison, _ = compare_files(both, both, "--baseline-assistant", "v1", "--candidate-assistant", "v2")
    assert process.returncode == 1, process.stderr
    assert comparison is not None and comparison["verdict"] == "regressed"
    assert (comparison["baseline_successes"], comparison["candidate_successes"]) == (22, 8)
    assert "verdict: REGRESSED" in process.stdout and "shared tasks needed" not in process.stdout
    assert_table_equals_json(process.stdout, comparison)
    assert (
        "exact sign-flip test over the per-task differences (fewer than 10 tasks): "
        "pass@1, pass@3 (per-task plug-in), pass^3 (per-task plug-in), pass@3, pass^3" in process.stdout
    )
    # pass@3 (per-task unbiased) is 1 on every task for both sides: no variation
    assert "pass@3 n/a (no variation)" in process.stdout
    assert "warning" not in process.stderr  # one file, one evaluation: judged alike


def test_a_mcnemar_test_that_ran_prints_no_not_tested_note(tmp_path: Path) -> None:
    # Today's code printed `p 0.031 yes IMPROVED` and, below, "fewer than 10: not tested".
    both = request_file(tmp_path / "both.json", attempts("v1", [(False,)] * 6) + attempts("v2", [(True,)] * 6))
    process, comparison, _ = compare_files(both, both, "--baseline-assistant", "v1", "--candidate-assistant", "v2")
    assert process.returncode == 0, process.stderr
    assert comparison is not None and comparison["verdict"] == "improved"
    assert comparison["metrics"][0]["p_value"] == 2 / 64  # exact McNemar, c = 6, b = 0
    assert "not tested" not in process.stdout
    assert "McNemar (exact): baseline-only successes b = 0, candidate-only c = 6, p = 0.031" in process.stdout


def test_too_few_tasks_to_test_anything_is_not_tested_exit_5_even_without_require_conclusive(tmp_path: Path) -> None:
    both = request_file(tmp_path / "both.json", attempts("v1", [(True,) * 3] * 5) + attempts("v2", [(False,) * 3] * 5))
    # Five tasks lost 3/3 → 0/3: the attempt-level test (the default) sees it, p = 2/20⁵
    default = run_cli_in_process("compare", both, both, "--baseline-assistant", "v1", "--candidate-assistant", "v2")
    assert default.returncode == 1 and "verdict: REGRESSED" in default.stdout
    # while 5 tasks are too few for any task-level test
    choose = ("--baseline-assistant", "v1", "--candidate-assistant", "v2", "--population", "tasks")
    process, comparison, _ = compare_files(both, both, *choose)
    assert process.returncode == 5, process.stderr
    assert comparison is not None and comparison["verdict"] == "not_tested"
    assert "verdict: NOT TESTED — too few shared tasks for any test to show a difference" in process.stdout
    assert_table_equals_json(process.stdout, comparison)
    notes = [line for line in process.stdout.splitlines() if line.startswith("note:")]
    assert len(notes) == 5 and all(
        line.endswith("5 tasks cannot show a difference at 95%: the exact sign-flip test's smallest p-value is 0.0625")
        for line in notes
    )
    # every per-task difference is −1: no minimum detectable effect, and the tasks needed are
    # what the exact test needs to be able to reject (2/2⁶ ≤ 0.05 < 2/2⁵), never fewer than 5 + 1
    line = next(line for line in process.stdout.splitlines() if line.startswith("minimum detectable effect"))
    assert line.count("n/a (no variation)") == 5
    line = next(line for line in process.stdout.splitlines() if line.startswith("shared tasks needed"))
    assert [int(n) for n in re.findall(r" (\d+) \(difference", line)] == [6] * 5
    required = run_cli_in_process("compare", both, both, *choose, "--require-conclusive", "--quiet")
    assert required.returncode == 5 and required.stdout == process.stdout


# --------------------------------------------------------------------------- judged alike?


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """a.result.json (MIXED) and b.result.json (NEARLY_MIXED: inconclusive), evaluated once."""
    folder = tmp_path_factory.mktemp("judged")
    for name, assistant, pattern in (("a", "v1", MIXED), ("b", "v2", NEARLY_MIXED)):
        request = request_file(folder / f"{name}.json", attempts(assistant, pattern))
        assert run_cli_in_process("evaluate", request, "--out", folder / f"{name}.result.json").returncode == 0
    return folder


def with_provenance(results: Path, name: str, value: dict[str, Any] | None) -> Path:
    data = json.loads((results / f"{name}.result.json").read_text()) | {"provenance": value}
    path = results / f"{name}.{'none' if value is None else abs(hash(json.dumps(value, sort_keys=True)))}.json"
    path.write_text(json.dumps(data))
    return path


def test_sides_judged_alike_compare_without_a_warning_even_when_required(results: Path) -> None:
    baseline, candidate = (
        with_provenance(results, "a", provenance_json()),
        with_provenance(results, "b", provenance_json()),
    )
    process, comparison, _ = compare_files(baseline, candidate, "--require-same-judge")
    assert process.returncode == 0, process.stderr
    assert comparison is not None and comparison["judging_differences"] == []
    assert "warning" not in process.stderr


def test_sides_judged_differently_are_warnings_and_a_refusal_under_require_same_judge(results: Path) -> None:
    baseline = with_provenance(results, "a", provenance_json())
    candidate = with_provenance(results, "b", provenance_json(threshold=0.8, k=5, prompt_hash="d" * 64))
    expected = [
        f"different prompt_hash: baseline {'b' * 12} vs candidate {'d' * 12}",
        "different threshold: baseline 0.7 vs candidate 0.8",
        "different k: baseline 3 vs candidate 5",
    ]
    process, comparison, _ = compare_files(baseline, candidate)
    assert process.returncode == 0, process.stderr  # a warning only: the verdict decides
    assert comparison is not None and comparison["judging_differences"] == expected
    assert [line for line in process.stderr.splitlines() if line.startswith("warning:")] == [
        f"warning: {line}" for line in expected
    ]
    assert "warning" not in process.stdout

    refused = run_cli_in_process("compare", baseline, candidate, "--require-same-judge")
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout == "" and "Traceback" not in refused.stderr
    assert refused.stderr.splitlines()[-1] == (
        "error: --require-same-judge: the baseline and the candidate were not judged alike "
        "(3 difference(s), listed above)"
    )
    assert [line for line in refused.stderr.splitlines() if line.startswith("warning:")] == [
        f"warning: {line}" for line in expected
    ]


def right_answers_wrong_arguments(assistant: str) -> list[dict[str, Any]]:
    """12 tasks × 3 attempts whose answers are right and whose calculator calls have wrong arguments."""
    conversations = attempts(assistant, ALL_RIGHT)
    for c in conversations:
        c["conversation"][0] |= {
            "agentic": {"tools_used": [{"tool_name": "add", "parameters": {"a": 1, "b": 1}}]},
            "ground_truth_agentic": {"expected_tools": [{"tool_name": "add", "parameters": {"a": 2, "b": 9}}]},
        }
    return conversations


@pytest.mark.parametrize(
    ("config", "difference"),
    [
        ({"require_tool_correctness": False}, "different require_tool_correctness: baseline True vs candidate False"),
        (
            {"tool_weights": {"selection": 1, "parameters": 0, "sequence": 0, "utilization": 0}},
            "different tool_weights: baseline",
        ),
        ({"max_unscored_share": 1.0}, "different max_unscored_share: baseline 0.1 vs candidate 1"),
        ({"judge_samples": 3}, "different judge_samples: baseline 1 vs candidate 3"),
        ({"judge_vote": "mean"}, "different judge_vote: baseline majority vs candidate mean"),
        ({"judge_cascade": True}, "different judge_cascade: baseline False vs candidate True"),
    ],
    ids=[
        "require_tool_correctness",
        "tool_weights",
        "max_unscored_share",
        "judge_samples",
        "judge_vote",
        "judge_cascade",
    ],
)
def test_a_candidate_judged_under_other_rules_is_refused_under_require_same_judge(
    tmp_path: Path, config: dict[str, Any], difference: str
) -> None:
    # Issues #32 and #34: rule changes that turn every failure into a pass compared as "improved", exit 0;
    # judge_samples, judge_vote and judge_cascade were not compared at all.
    baseline = request_file(tmp_path / "a.json", right_answers_wrong_arguments("v1"))
    candidate = tmp_path / "b.json"
    body = json.loads(baseline.read_text())
    body["config"] |= config
    candidate.write_text(json.dumps(body))
    refused = run_cli_in_process("compare", baseline, candidate, "--require-same-judge")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stdout == "" and "Traceback" not in refused.stderr
    warnings = [line for line in refused.stderr.splitlines() if line.startswith("warning: different")]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: {difference}"), refused.stderr
    # Without the flag the same difference is a warning and the verdict decides.
    warned = run_cli_in_process("compare", baseline, candidate)
    assert warned.returncode != 2, warned.stdout + warned.stderr
    assert [line for line in warned.stderr.splitlines() if line.startswith("warning: different")] == warnings


def test_a_side_without_provenance_cannot_be_checked_and_is_refused_under_require_same_judge(results: Path) -> None:
    baseline = with_provenance(results, "a", provenance_json())
    candidate = with_provenance(results, "b", None)
    line = "warning: the candidate's result has no provenance: how it was judged cannot be checked"
    process = run_cli_in_process("compare", baseline, candidate)
    assert process.returncode == 0 and line in process.stderr.splitlines()
    refused = run_cli_in_process("compare", baseline, candidate, "--require-same-judge")
    assert refused.returncode == 2 and refused.stdout == ""
    assert line in refused.stderr.splitlines() and "(1 difference(s), listed above)" in refused.stderr
