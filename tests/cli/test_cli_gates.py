"""`fair-forge evaluate`'s CI gates on bounds, not points, and what a new user ran into:
outputs checked before judging, plain progress off a terminal, thresholds named when
refused, and requests in the traces form (issue #15)."""

from __future__ import annotations

import io
import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.cli import ProgressBar, main
from fair_forge_testing.builders import conversation, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply, judge_responder, last_user_text
from tests.cli.test_cli import CALCULATOR, ROOT, run_cli_in_process

REFERENCE_JUDGE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}
N, C, K = 20, 15, 3  # 20 conversations of one turn, 15 right


def request_file(path: Path, config: dict[str, Any] | None = None, n: int = N, c: int = C) -> Path:
    conversations = [
        conversation(
            f"s{i}",
            [turn(f"q{i}", f"What is {i} plus 7?", f"It is {i + 7}." if i < c else "No idea.", str(i + 7))],
        )
        for i in range(n)
    ]
    path.write_text(json.dumps({"connector": REFERENCE_JUDGE, "datasets": conversations, "config": config or {"k": K}}))
    return path


def wilson_low(n: int, c: int, level: float) -> float:
    """Wilson's score interval's low end, written out from the formula (not from our code)."""
    z = statistics.NormalDist().inv_cdf(0.5 + level / 2)
    p = c / n
    return (p + z**2 / (2 * n) - z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))) / (1 + z**2 / n)


def printed_bound(stderr: str) -> float:
    return float(re.search(r"lower bound of pass\S+(?: \([a-z -]+\))? = (\d\.\d{4})", stderr).group(1))  # type: ignore[union-attr]


# --------------------------------------------------------------------------- --fail-if-lower-bound


def test_wilson_bound_matches_a_published_value() -> None:
    # Newcombe (1998), Statistics in Medicine 17:857, Table I example: 81/263 → 0.2553 to 0.3662
    from fair_forge_core.stats import wilson_interval

    low, high = wilson_interval(263, 81, 0.95)
    assert (round(low, 4), round(high, 4)) == (0.2553, 0.3662)
    assert wilson_interval(10, 0, 0.95)[0] == 0.0 and wilson_interval(10, 10, 0.95)[1] == 1.0


@pytest.mark.parametrize("level", [0.95, 0.8])
@pytest.mark.parametrize("metric", ["pass_pow_k", "pass_at_k"])
def test_frequentist_gate_reads_the_wilson_bound_pushed_through_the_metric(
    tmp_path: Path, metric: str, level: float
) -> None:
    request = request_file(
        tmp_path / "r.json", {"k": K, "statistical_mode": {"mode": "frequentist", "ci_level": level}}
    )
    low = wilson_low(N, C, level)
    bound = low**K if metric == "pass_pow_k" else 1 - (1 - low) ** K
    point = (C / N) ** K if metric == "pass_pow_k" else 1 - (1 - C / N) ** K
    assert bound < point - 0.01

    failing = run_cli_in_process("evaluate", request, "--quiet", "--fail-if-lower-bound", f"{metric}<{bound + 0.001}")
    assert failing.returncode == 1, failing.stderr
    assert printed_bound(failing.stderr) == round(bound, 4)
    symbol = f"pass^{K} (pooled plug-in)" if metric == "pass_pow_k" else f"pass@{K} (pooled plug-in)"
    assert (
        f"FAILED: lower bound of {symbol} = {bound:.4f} (from the {level:.0%} Wilson bound of {C}/{N} conversations)"
        in failing.stderr
    )
    assert f"is below {bound + 0.001:g} by 0.0010 (--fail-if-lower-bound {metric}<{bound + 0.001:g})" in failing.stderr

    passing = run_cli_in_process(
        "evaluate", request, "--fail-if-lower-bound", f"{metric}<{bound - 0.001}", "--out", tmp_path / "o.json"
    )
    assert passing.returncode == 0, passing.stderr
    assert f"gate met: lower bound of {symbol} = {bound:.4f}" in passing.stderr


def test_the_gate_is_on_the_bound_not_the_point(tmp_path: Path) -> None:
    request = request_file(tmp_path / "r.json")
    point = (C / N) ** K  # 0.4219
    bound = wilson_low(N, C, 0.95) ** K  # 0.1902
    between = (point + bound) / 2
    on_point = run_cli_in_process("evaluate", request, "--quiet", "--fail-under-pass-pow-k", str(between))
    on_bound = run_cli_in_process("evaluate", request, "--quiet", "--fail-if-lower-bound", f"pass_pow_k<{between}")
    assert (on_point.returncode, on_bound.returncode) == (0, 1)


def test_bayesian_gate_reads_the_credible_bound_the_result_carries(tmp_path: Path) -> None:
    from scipy.stats import beta

    config = {"k": K, "statistical_mode": {"mode": "bayesian", "ci_level": 0.9, "prior": [1, 1]}}
    request = request_file(tmp_path / "r.json", config)
    low = float(beta.ppf(0.05, 1 + C, 1 + N - C))
    expected = {"pass_pow_k": low**K, "pass_at_k": 1 - (1 - low) ** K}
    process = run_cli_in_process(
        "evaluate",
        request,
        "--out",
        tmp_path / "result.json",
        "--fail-if-lower-bound",
        f"pass_pow_k<{expected['pass_pow_k'] + 0.001}",
        "--fail-if-lower-bound",
        f"pass_at_k<{expected['pass_at_k'] - 0.001}",
    )
    assert process.returncode == 1, process.stderr
    aggregated = json.loads((tmp_path / "result.json").read_text())["aggregated_metrics"]
    assert aggregated["pass_pow_k_ci_low"] == pytest.approx(expected["pass_pow_k"], rel=1e-9)
    assert (
        f"FAILED: lower bound of pass^{K} (pooled posterior mean) = {expected['pass_pow_k']:.4f} (90% credible bound) "
        "is below" in process.stderr
    )
    assert (
        f"gate met: lower bound of pass@{K} (pooled posterior mean) = {expected['pass_at_k']:.4f} (90% credible bound)"
        in process.stderr
    )
    assert process.stderr.count("FAILED:") == 1  # every gate is checked, and only the failing one fails


# --------------------------------------------------------------------------- --max-unscored


def poisoned(request: dict[str, Any]) -> Reply | dict[str, Any]:
    """The judge answers 422 (this turn only, no retry) for the turns about poison."""
    if "poison" in last_user_text(request):
        return Reply(status=422, error_message="the judge cannot read this turn")
    return judge_responder(request)


def test_max_unscored_fails_above_n_unscored_conversations(tmp_path: Path) -> None:
    with FakeLLMServer(responder=poisoned) as server:
        conversations = [
            conversation(
                f"s{i}",
                [
                    turn(
                        f"q{i}",
                        f"How many {'poison' if i % 4 == 0 else 'apple'} trees in row {i}?",
                        f"{i + 2}",
                        f"{i + 2}",
                    )
                ],
            )
            for i in range(16)
        ]
        body = {
            "connector": {
                "class_path": "langchain_openai.ChatOpenAI",
                "params": {"model": "judge", "base_url": server.base_url, "api_key": "sk-gate-test-0123456789"},
            },
            "datasets": conversations,
        }
        request = tmp_path / "r.json"
        request.write_text(json.dumps(body))
        allowed = run_cli_in_process("evaluate", request, "--quiet", "--allow-unscored")
        over = run_cli_in_process("evaluate", request, "--quiet", "--allow-unscored", "--max-unscored", "3")
        at = run_cli_in_process(
            "evaluate", request, "--allow-unscored", "--max-unscored", "4", "--out", tmp_path / "o.json"
        )
    assert json.loads(allowed.stdout)["aggregated_metrics"]["unscored_conversations"] == 4
    assert allowed.returncode == 0  # 4 of 16 unscored is allowed, and no other gate
    assert over.returncode == 1, over.stderr
    assert "FAILED: 4 conversation(s) unscored, more than --max-unscored 3 by 1\n" in over.stderr
    assert at.returncode == 0, at.stderr
    assert "gate met: 4 conversation(s) unscored, at most --max-unscored 4" in at.stderr


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--fail-under-pass-pow-k", "1.5"], "--fail-under-pass-pow-k: must be between 0 and 1, got 1.5"),
        (["--fail-under-pass-pow-k", "-0.1"], "--fail-under-pass-pow-k: must be between 0 and 1, got -0.1"),
        (["--fail-under-pass-pow-k", "high"], "--fail-under-pass-pow-k: must be a number, got 'high'"),
        (["--fail-under-pass-pow-k", "nan"], "--fail-under-pass-pow-k: must be a finite number, got nan"),
        (["--fail-if-lower-bound", "pass_pow_k<2"], "--fail-if-lower-bound: must be between 0 and 1, got 2"),
        (
            ["--fail-if-lower-bound", "pass@k<0.5"],
            "--fail-if-lower-bound: expected METRIC<X with METRIC one of pass_at_k, pass_pow_k, corrected.pass_at_k, corrected.pass_pow_k, got 'pass@k<0.5'",
        ),
        (["--fail-if-lower-bound", "pass_pow_k>0.5"], "--fail-if-lower-bound: expected METRIC<X"),
        (["--max-unscored", "-1"], "--max-unscored: must be at least 0, got -1"),
        (["--max-unscored", "2.5"], "--max-unscored: must be a whole number, got '2.5'"),
    ],
)
def test_a_bad_gate_value_exits_2_naming_its_flag(arguments: list[str], message: str) -> None:
    process = run_cli_in_process("evaluate", CALCULATOR, *arguments)
    assert process.returncode == 2
    assert message in process.stderr
    assert "judging" not in process.stderr and process.stdout == ""


@pytest.mark.parametrize("flag", ["--out", "--html"])
def test_an_unwritable_output_exits_2_before_judging(tmp_path: Path, flag: str) -> None:
    missing = tmp_path / "no-such-dir" / "file"
    process = run_cli_in_process("evaluate", CALCULATOR, flag, missing)
    assert process.returncode == 2
    assert process.stderr == f"error: {flag} {missing}: the directory {missing.parent} does not exist\n"
    directory = run_cli_in_process("evaluate", CALCULATOR, flag, tmp_path)
    assert directory.returncode == 2
    assert directory.stderr == f"error: {flag} {tmp_path}: is a directory\n"  # no "judging" line before it


def test_the_writability_check_leaves_nothing_behind(tmp_path: Path) -> None:
    existing = tmp_path / "report.html"
    existing.write_text("old")
    process = run_cli_in_process(
        "evaluate",
        CALCULATOR,
        "--out",
        tmp_path / "result.json",
        "--html",
        tmp_path / "file.html",
        "--quiet",
        "--fail-under-pass-pow-k",
        "0.5",
        "--max-unscored",
        "0",
    )
    assert process.returncode == 0, process.stderr
    refused = run_cli_in_process(
        "evaluate", CALCULATOR, "--out", tmp_path / "new.json", "--html", tmp_path / "missing" / "r.html"
    )
    assert refused.returncode == 2
    assert not (tmp_path / "new.json").exists() and existing.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.html", "report.html", "result.json"]


# --------------------------------------------------------------------------- progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_off_a_terminal_is_plain_lines_every_few_seconds_and_the_last() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, interactive=False, plain_interval_s=60.0)
    for done in range(1, 401):
        bar(done, 400)
    bar.finish()
    assert stream.getvalue() == "judging 1/400\njudging 400/400\n"


def test_on_a_terminal_the_bar_is_redrawn_in_place() -> None:
    stderr = Terminal()
    assert main(["evaluate", str(CALCULATOR)], io.StringIO(), stderr) == 0
    first_line = stderr.getvalue().split("\n")[0]
    assert first_line.startswith("\rjudging ") and first_line.endswith("3/3 (100%)")


def test_off_a_terminal_evaluate_never_writes_a_carriage_return() -> None:
    stderr = io.StringIO()
    assert main(["evaluate", str(CALCULATOR)], io.StringIO(), stderr) == 0
    assert "\r" not in stderr.getvalue()
    assert stderr.getvalue().startswith("judging 1/3\n") and "judging 3/3\n" in stderr.getvalue()


# --------------------------------------------------------------------------- traces requests


TRACES = ROOT / "examples" / "traces"


def traces_request(items: list[Any], references: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "connector": REFERENCE_JUDGE,
        "traces": {"format": "openai", "items": items},
        "references": references,
        **extra,
    }


def test_evaluate_takes_the_traces_form_as_convert_then_evaluate_does(tmp_path: Path) -> None:
    items = json.loads((TRACES / "openai_chat.json").read_text())
    references = [
        json.loads(line) for line in (TRACES / "openai_chat.references.jsonl").read_text().splitlines() if line.strip()
    ]
    request = tmp_path / "traces.json"
    request.write_text(json.dumps(traces_request(items, references, task_key="metadata.task", config={"k": 1})))
    direct = run_cli_in_process("evaluate", request, "--quiet")
    assert direct.returncode == 0, direct.stderr
    converted = run_cli_in_process(
        "convert",
        TRACES / "openai_chat.json",
        "--from",
        "openai",
        "--references",
        TRACES / "openai_chat.references.jsonl",
        "--task-key",
        "metadata.task",
        "-o",
        tmp_path / "converted.json",
    )
    assert converted.returncode == 0
    body = json.loads((tmp_path / "converted.json").read_text()) | {"config": {"k": 1}}
    (tmp_path / "converted.json").write_text(json.dumps(body))
    via_convert = run_cli_in_process("evaluate", tmp_path / "converted.json", "--quiet")
    once, again = json.loads(direct.stdout), json.loads(via_convert.stdout)
    del once["run"]["started_at"], again["run"]["started_at"]  # when each ran: all else, the tasks' hash too, agrees
    assert once == again


def test_import_warnings_are_printed_and_come_first_in_the_result(tmp_path: Path) -> None:
    items = [{"id": "t", "messages": [{"role": "user", "content": "What is 2 plus 2?"}]}]
    request = tmp_path / "traces.json"
    request.write_text(
        json.dumps(traces_request(items, [{"task_id": "t", "ground_truth_assistant": "4"}], config={"k": 1}))
    )
    process = run_cli_in_process("evaluate", request, "--out", tmp_path / "result.json")
    assert process.returncode == 0, process.stderr
    warning = "traces[0]: turn 0 ('What is 2 plus 2?') has no final answer; judged as an empty answer"
    assert f"warning: {warning}\n" in process.stderr
    assert json.loads((tmp_path / "result.json").read_text())["warnings"][0] == warning


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            traces_request(
                [{"id": "t", "messages": [{"role": "user", "content": "q"}, {"role": "robot"}]}],
                [{"task_id": "t", "ground_truth_assistant": "a"}],
            ),
            "traces.items[0].messages[1].role: unknown role 'robot'",
        ),
        (
            traces_request(
                [{"id": "t", "messages": [{"role": "user", "content": "q"}]}],
                [{"task_id": "u", "ground_truth_assistant": "a"}],
            ),
            "no trace matched a task of the references: nothing to evaluate",
        ),
        (
            traces_request([{"id": "t", "messages": []}], [{"task_id": "t", "ground_truth_assistant": 3}]),
            "invalid traces request: references[0].ground_truth_assistant: Input should be a valid string",
        ),
        (traces_request([{"id": "t"}], []) | {"datasets": []}, "send datasets or traces, not both"),
    ],
)
def test_an_unreadable_traces_request_exits_2_naming_the_file_and_the_field(
    tmp_path: Path, body: dict[str, Any], message: str
) -> None:
    request = tmp_path / "traces.json"
    request.write_text(json.dumps(body))
    process = run_cli_in_process("evaluate", request)
    assert process.returncode == 2
    assert process.stderr.startswith(f"error: {request}: {message}")
    assert "Traceback" not in process.stderr and process.stdout == ""


# --------------------------------------------------------------------------- no workflow command from the data

HOSTILE_TASK = "t1\n::error title=all gates met::none failed\r::add-mask::FAILED\n  ::warning::x ##[add-mask]FAILED"
RUNNER_LINE = re.compile(r"\r\n|\r|\n")  # how GitHub's runner splits a step's output into lines


def runner_commands(output: str) -> list[str]:
    """The lines of `output` that GitHub's runner would read as a workflow command: `::` once the
    leading whitespace is trimmed, or the older `##[` anywhere in the line."""
    return [line for line in RUNNER_LINE.split(output) if line.lstrip().startswith("::") or "##[" in line]


def hostile_request(path: Path) -> Path:
    """Two attempts (one right) of a task, and of an assistant, whose ids carry workflow commands
    after line breaks, plus a right one of a plain task."""
    conversations = [
        conversation(
            f"s{i}",
            [turn(f"q{i}", "What is 1 plus 7?", "It is 8." if i != 1 else "No idea.", "8")],
            assistant_id="a\n::error::assistant",
            task_id=HOSTILE_TASK if i < 2 else "plain",
        )
        for i in range(4)
    ]
    path.write_text(json.dumps({"connector": REFERENCE_JUDGE, "datasets": conversations, "config": {"k": 2}}))
    return path


def test_a_task_id_with_workflow_commands_reaches_the_runner_as_text(tmp_path: Path) -> None:
    request = hostile_request(tmp_path / "request.json")
    done = run_cli_in_process("evaluate", request, "--min-task-pass-rate", "0.9", "--max-flaky-tasks", "5")
    assert done.returncode == 1, done.stderr
    assert runner_commands(done.stdout + "\n" + done.stderr) == []
    # The failure still names the task, its line breaks shown as `\n` / `\r` on one line.
    shown = HOSTILE_TASK.replace("\n", "\\n").replace("\r", "\\r")
    failed = [line for line in done.stderr.splitlines() if line.startswith("FAILED:")]
    assert len(failed) == 1 and "1 of 2 task(s) pass less often than --min-task-pass-rate 0.9" in failed[0]
    assert shown.replace("##[", "#\u200b#[") + " 1/2" in failed[0]
    # The result JSON printed on stdout keeps the ids' values exactly.
    result = json.loads(done.stdout)
    assert {c["task_id"] for c in result["per_conversation_metrics"]} == {HOSTILE_TASK, "plain"}

    compared = run_cli_in_process("compare", request, request, "--baseline-assistant", "a\n::error::assistant")
    assert runner_commands(compared.stdout + "\n" + compared.stderr) == []


def test_an_unknown_key_with_workflow_commands_is_named_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"connector": REFERENCE_JUDGE, "datasets": [], "x\n::add-mask::FAILED": 1}))
    done = run_cli_in_process("evaluate", path)
    assert done.returncode == 2
    assert runner_commands(done.stdout + "\n" + done.stderr) == []
    assert "x\\n::add-mask::FAILED" in done.stderr


def test_a_line_break_in_a_value_of_an_error_is_shown_not_broken(tmp_path: Path) -> None:
    missing = tmp_path / "no\n::error::such.json"
    done = run_cli_in_process("evaluate", missing)
    assert done.returncode == 2
    assert runner_commands(done.stderr) == []
    assert len(done.stderr.splitlines()) == 1 and "no\\n::error::such.json" in done.stderr
