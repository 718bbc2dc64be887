"""`python -m fair_forge_core`: run as a user runs it, in a subprocess, on the examples."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from fair_forge_core.cli import ProgressBar, main

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = ROOT / "examples" / "calculator.json"
KEY = "sk-cli-test-5f4e3d2c1b0a9988"


def run_cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI; its output decoded as is (no newline translation, so the bar's carriage returns stay)."""
    process = subprocess.run(
        [sys.executable, "-m", "fair_forge_core", *map(str, args)], cwd=ROOT, capture_output=True, timeout=120, env=env
    )
    return subprocess.CompletedProcess(
        process.args, process.returncode, process.stdout.decode("utf-8"), process.stderr.decode("utf-8")
    )


def run_cli_in_process(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`run_cli` without the subprocess: the CLI's `main` in this process, from the repository root,
    with an empty stdin; its exit code and its output as `run_cli` gives them. What a process would
    also write to its stderr is captured too: argparse's usage errors (before `SystemExit`), Python
    warnings, and log records of level WARNING and above (logging's last resort in a process).

    For the tests of what the CLI computes and prints, where a fresh interpreter per call (~0.8 s of
    imports) only costs time; the tests of the process itself (the entry point, the environment,
    signals) use `run_cli`.
    """
    argv = [*map(str, args)]
    stdout, stderr = io.StringIO(), io.StringIO()
    records = logging.StreamHandler(stderr)
    records.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(records)
    try:
        with (
            contextlib.chdir(ROOT),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("default")  # a process's own filters: these four ignored, the rest shown
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: stderr.write(
                warnings.formatwarning(message, category, filename, lineno, line)
            )
            try:
                code = main(argv, stdout, stderr, io.StringIO(""))
            except SystemExit as exc:  # as the interpreter exits with it
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    stderr.write(f"{exc.code}\n")
                    code = 1
    finally:
        root.removeHandler(records)
    return subprocess.CompletedProcess(["fair-forge", *argv], code, stdout.getvalue(), stderr.getvalue())


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("cli")
    return run_cli("evaluate", CALCULATOR, "--out", out / "result.json", "--html", out / "report.html"), out


def test_evaluate_writes_the_json_result_and_the_html_report(
    evaluated: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    process, out = evaluated
    assert process.returncode == 0, process.stderr
    result = json.loads((out / "result.json").read_text())
    assert result["success"] is True
    assert len(result["per_conversation_metrics"]) == len(json.loads(CALCULATOR.read_text())["datasets"])
    assert result["aggregated_metrics"]["interpretation"] in (
        "reliable",
        "functional",
        "inconsistent",
        "needs_improvement",
    )
    page = (out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    for ident in ('id="fig-pass-curves"', 'id="fig-tool-breakdown"', 'id="conversations"'):
        assert ident in page
    assert f'data-value="{json.dumps(result["aggregated_metrics"]["pass_pow_k"])}"' in page
    assert process.stdout == ""  # with --out, stdout stays clean


def test_evaluate_shows_plain_progress_lines_and_a_summary_on_stderr_when_it_is_not_a_terminal(
    evaluated: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    # A captured stderr is not a terminal: plain lines, no carriage-return redraws
    # (the bar redrawn in place is tested in process, on a terminal-like stream).
    process, out = evaluated
    stderr = process.stderr
    assert "\r" not in stderr
    progress = [line for line in stderr.split("\n") if line.startswith("judging")]
    assert progress[0] == "judging 1/3" and progress[-1] == "judging 3/3"  # the first line and the final one
    assert "readiness:" in stderr and f"wrote {out / 'result.json'}" in stderr


def test_the_first_example_does_not_warn_that_k_exceeds_its_conversations(
    evaluated: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    # #33 item 11: calculator.json has 2 conversations; at k = 3 its unbiased estimators were null
    # and every run warned so. Its k is its 2 conversations.
    process, out = evaluated
    result = json.loads((out / "result.json").read_text())
    assert result["aggregated_metrics"]["total_conversations"] == result["aggregated_metrics"]["k"] == 2
    assert result["aggregated_metrics"]["pass_pow_k_unbiased"] == 1.0  # C(2, 2)/C(2, 2)
    assert not [w for w in result["warnings"] if "exceeds" in w] and "exceeds" not in process.stderr


def test_evaluate_prints_a_line_about_the_goals(tmp_path: Path) -> None:
    # #33 item 11: examples/goal.json has one goal, which the offline judge abstains on.
    process = run_cli_in_process("evaluate", ROOT / "examples" / "goal.json", "--out", tmp_path / "goal.json")
    assert process.returncode == 0, process.stderr
    lines = [line for line in process.stderr.splitlines() if line.startswith("goals: ")]
    assert lines == [
        "goals: 1 conversation(s) with a goal — 0 achieved, 0 not achieved, 1 not judged "
        "(the judge fair-forge-reference cannot decide a conversation's goal); reported, not required"
    ]
    plain = run_cli_in_process("evaluate", CALCULATOR, "--out", tmp_path / "calculator.json")
    assert "goals:" not in plain.stderr  # no goal, no line


def test_evaluate_without_out_prints_the_json_to_stdout() -> None:
    process = run_cli("evaluate", CALCULATOR, "--quiet")
    assert process.returncode == 0, process.stderr
    assert json.loads(process.stdout)["success"] is True
    assert process.stderr == ""


def test_threshold_not_met_exits_1_after_writing_the_result(tmp_path: Path) -> None:
    # calculator.json scores pass^2 = 1.0, and a threshold above 1 is now refused: support_agents.json's is 0.491
    support = ROOT / "examples" / "support_agents.json"
    process = run_cli("evaluate", support, "--out", tmp_path / "r.json", "--fail-under-pass-pow-k", "0.5")
    assert process.returncode == 1, process.stderr
    assert "below --fail-under-pass-pow-k 0.5" in process.stderr
    assert json.loads((tmp_path / "r.json").read_text())["success"] is True


def test_threshold_met_exits_0(tmp_path: Path) -> None:
    process = run_cli("evaluate", CALCULATOR, "--out", tmp_path / "r.json", "--fail-under-pass-pow-k", "0")
    assert process.returncode == 0, process.stderr


def test_a_bad_request_file_exits_2_naming_the_field(tmp_path: Path) -> None:
    body = json.loads(CALCULATOR.read_text())
    del body["datasets"][0]["conversation"][1]["query"]
    body["config"]["treshold"] = 0.5
    request = tmp_path / "bad.json"
    request.write_text(json.dumps(body))
    process = run_cli("evaluate", request)
    assert process.returncode == 2
    assert "datasets[0].conversation[1].query: Field required" in process.stderr
    assert "config.treshold" in process.stderr
    assert "Traceback" not in process.stderr and process.stdout == ""


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
        ("[1, 2]", "must hold a JSON object, got list"),
        (json.dumps({"datasets": []}), "connector: Field required"),
        ('{"config": {"threshold": NaN}}', "NaN is not a JSON number"),  # as POST /run refuses it
    ],
)
def test_unreadable_requests_exit_2_with_a_clear_message(tmp_path: Path, content: str, message: str) -> None:
    request = tmp_path / "request.json"
    request.write_text(content)
    process = run_cli("evaluate", request)
    assert process.returncode == 2
    assert message in process.stderr
    assert "Traceback" not in process.stderr


def test_a_missing_file_and_a_refused_connector_exit_2(tmp_path: Path) -> None:
    missing = run_cli("evaluate", tmp_path / "nope.json")
    assert missing.returncode == 2 and "cannot read request file" in missing.stderr
    body = json.loads(CALCULATOR.read_text())
    body["connector"]["class_path"] = "os.system"
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    refused = run_cli("evaluate", request)
    assert refused.returncode == 2
    assert 'connector.class_path: class_path "os.system" is not an allowed connector' in refused.stderr
    assert "fair_forge_core.judges.ReferenceJudge" in refused.stderr  # the allowed list is shown
    assert "Traceback" not in refused.stderr


def test_report_renders_a_saved_result(
    evaluated: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    _, out = evaluated
    process = run_cli("report", out / "result.json", "-o", tmp_path / "again.html")
    assert process.returncode == 0, process.stderr
    assert (tmp_path / "again.html").read_text() == (out / "report.html").read_text()


def test_report_of_an_error_response_exits_2(tmp_path: Path) -> None:
    error = tmp_path / "error.json"
    error.write_text(json.dumps({"success": False, "error": "No datasets provided", "request_id": "r-1"}))
    process = run_cli("report", error)
    assert process.returncode == 2
    assert "error response, not a result: No datasets provided" in process.stderr


def test_help_does_not_import_the_heavy_modules() -> None:
    code = (
        "import sys\n"
        "from fair_forge_core.cli import build_parser\n"
        "build_parser().format_help()\n"
        "heavy = [m for m in ('pydantic', 'langchain_core', 'numpy', 'scipy') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    process = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert process.stdout.strip() == "[]", process.stderr
    assert run_cli("--help").returncode == 0


NOT_IMPORTED_BY_EVALUATE = (
    # the other commands' modules
    "fair_forge_core.cli.calibrate",
    "fair_forge_core.cli.compare",
    "fair_forge_core.cli.compare_text",
    "fair_forge_core.cli.convert",
    "fair_forge_core.cli.report",
    "fair_forge_core.cli.run",
    "fair_forge_core.calibration",
    # outputs not asked for: the CI files, the HTML report, the OpenTelemetry events
    "fair_forge_core.exports",
    "fair_forge_core.compare",
    "fair_forge_core.report",
    "jinja2",
    "fair_forge_core.otel_events",
    "fair_forge_core.otel_sdk",
    # figures not asked for (config.judge_error, comparisons), and AWS
    "fair_forge_core.judge_error",
    "numpy",
    "scipy",
    "boto3",
    "botocore",
)
"""Modules that `fair-forge evaluate` of the offline example with `--out` alone must not import
(issue #38 item 2: the first command imports what the request needs)."""


def test_evaluate_imports_only_what_the_request_needs(tmp_path: Path) -> None:
    # In a fresh interpreter, so that "not imported" means something: the CLI's entry point,
    # then the offline example evaluated with --out alone.
    out = tmp_path / "result.json"
    code = (
        "import json, sys\n"
        "from fair_forge_core.cli import main\n"
        f"code = main(['evaluate', {str(CALCULATOR)!r}, '--out', {str(out)!r}, '--quiet'])\n"
        f"print(json.dumps([code, [m for m in {NOT_IMPORTED_BY_EVALUATE!r} if m in sys.modules]]))\n"
    )
    process = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, process.stderr
    assert json.loads(process.stdout.strip().splitlines()[-1]) == [0, []]
    assert json.loads(out.read_text())["per_conversation_metrics"]  # it did evaluate


def test_the_lazy_names_of_the_cli_package_are_its_commands() -> None:
    import fair_forge_core.cli as cli
    from fair_forge_core.cli.calibrate import OFFLINE_JUDGE, cmd_calibrate
    from fair_forge_core.cli.compare import cmd_compare, format_comparison, metric_label
    from fair_forge_core.cli.run import cmd_run

    assert (cli.OFFLINE_JUDGE, cli.cmd_calibrate, cli.cmd_compare, cli.cmd_run) == (
        OFFLINE_JUDGE,
        cmd_calibrate,
        cmd_compare,
        cmd_run,
    )
    assert (cli.format_comparison, cli.metric_label) == (format_comparison, metric_label)
    assert all(getattr(cli, name) is not None for name in cli.__all__)  # every name of __all__, lazy or not
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = cli.nope  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- in process


def test_connector_errors_never_show_the_key(tmp_path: Path) -> None:
    body = json.loads(CALCULATOR.read_text())
    body["connector"] = {
        "class_path": "langchain_openai.chat_models.ChatOpenAI",
        # pydantic echoes a bad value in its error: here, the key
        "params": {"model": "judge", "base_url": "http://127.0.0.1:9/v1", "api_key": KEY, "temperature": KEY},
    }
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    stdout, stderr = io.StringIO(), io.StringIO()
    assert main(["evaluate", str(request)], stdout, stderr) == 2
    assert "Failed to create LLM connector" in stderr.getvalue()
    assert KEY[-12:] not in stderr.getvalue() + stdout.getvalue()


def test_the_servers_key_never_goes_to_an_endpoint_the_file_chooses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_API_KEY", KEY)
    body = json.loads(CALCULATOR.read_text())
    body["connector"] = {
        "class_path": "langchain_openai.ChatOpenAI",
        "params": {"model": "judge", "base_url": "http://127.0.0.1:9/v1"},
    }
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    stderr = io.StringIO()
    assert main(["evaluate", str(request)], io.StringIO(), stderr) == 2
    assert "api_key is required when connector.params sets base_url" in stderr.getvalue()
    assert KEY not in stderr.getvalue()


def test_progress_bar_redraws_one_line_throttled_and_ends_complete() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, width=10, min_interval_s=60.0)
    for done in range(1, 101):
        bar(done, 100)
    bar.finish()
    text = stream.getvalue()
    assert text.count("\r") == 2  # the first draw and the last: the rest were throttled
    assert text.endswith("100/100 (100%)\n")
    assert text.count("\n") == 1
    assert "██████████" in text


def test_a_malformed_environment_is_named_as_the_service_names_it() -> None:
    # The CLI reads the operator's judge settings with the service's own class (JudgeEnvironment).
    environment = {**os.environ, "FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS": "10.0.0.0/33"}
    done = run_cli("evaluate", CALCULATOR, env=environment)
    assert done.returncode == 2
    assert "error: Invalid environment variable FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS" in done.stderr
    assert "Traceback" not in done.stderr


def test_convert_then_evaluate_the_openai_traces() -> None:
    traces = ROOT / "examples" / "traces"
    converted = run_cli(
        "convert",
        traces / "openai_chat.json",
        "--from",
        "openai",
        "--references",
        traces / "openai_chat.references.jsonl",
        "--task-key",
        "metadata.task",
    )
    assert converted.returncode == 0, converted.stderr
    assert "warning" not in converted.stderr
    request = json.loads(converted.stdout)
    assert [d["task_id"] for d in request["datasets"]] == ["weather-paris", "compare-cities", "budget"]
    evaluated = subprocess.run(
        [sys.executable, "-m", "fair_forge_core", "evaluate", "-", "--quiet"],
        input=converted.stdout,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads(evaluated.stdout)
    tools = [s for m in result["per_conversation_metrics"] for s in m["tool_correctness_scores"] if s is not None]
    assert len(tools) == 3 and all(s["is_correct"] for s in tools)  # the parallel Lima/Oslo calls included


def test_convert_reports_an_unreadable_trace_by_its_field(tmp_path: Path) -> None:
    broken = tmp_path / "traces.json"
    broken.write_text(json.dumps([{"id": "t", "messages": [{"role": "user", "content": "q"}, {"role": "robot"}]}]))
    references = tmp_path / "refs.jsonl"
    references.write_text(json.dumps({"task_id": "t", "ground_truth_assistant": "a"}) + "\n")
    done = run_cli("convert", broken, "--from", "openai", "--references", references)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {broken}: traces[0].messages[1].role: unknown role 'robot'")


def test_convert_reports_an_invalid_reference_by_its_field_and_the_importers_choices(tmp_path: Path) -> None:
    traces = tmp_path / "traces.json"
    traces.write_text(json.dumps([{"id": "t", "messages": [{"role": "user", "content": "q"}]}]))
    references = tmp_path / "refs.jsonl"
    references.write_text(json.dumps({"task_id": "t", "ground_truth_assistant": 3}) + "\n")
    done = run_cli("convert", traces, "--from", "openai", "--references", references)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: {references}: references[0].ground_truth_assistant: Input should be a valid string\n",
    )
    references.write_text(json.dumps({"task_id": "t", "ground_truth_assistant": "a"}) + "\n")
    done = run_cli("convert", traces, "--from", "openai", "--references", references)
    assert done.returncode == 0
    assert "warning: traces[0]: turn 0 ('q') has no final answer; judged as an empty answer\n" in done.stderr


def test_version_through_the_console_script_and_main(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    expected = f"fair-forge {version('fair-forge-agentic')}\n"  # the installed distribution's metadata
    script = Path(sys.executable).parent / "fair-forge"  # the console script pip wrote into this venv
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == expected


def test_an_unknown_key_in_a_request_file_says_which_key_was_meant(tmp_path: Path) -> None:
    body = json.loads(CALCULATOR.read_text())
    body["config"]["treshold"] = 0.5
    body["config"]["statistical_mode"] = "bayes"
    body["datasets"][0]["conversation"][0]["agentic"]["tools_used"][0]["paramters"] = {}
    request = tmp_path / "typo.json"
    request.write_text(json.dumps(body))
    process = run_cli("evaluate", request)
    assert process.returncode == 2
    assert "config.treshold: unknown key (did you mean threshold?)" in process.stderr
    # the field as the file writes it: a string, not the `.mode` of the object it would stand for
    assert "config.statistical_mode: Input should be 'frequentist' or 'bayesian'" in process.stderr
    assert "statistical_mode.mode" not in process.stderr
    assert "datasets[0].conversation[0].agentic.tools_used[0].paramters: unknown key (did you mean parameters?)" in (
        process.stderr
    )
    assert "Traceback" not in process.stderr


TRACES_DIR = ROOT / "examples" / "traces"


@pytest.mark.parametrize(
    "traces",
    [
        TRACES_DIR / "openai_chat.json",  # a list of traces
        TRACES_DIR / "otel_genai.json",  # an OTLP export request: an object, but no request
    ],
)
def test_evaluate_on_a_traces_file_says_to_convert_it(traces: Path) -> None:
    process = run_cli("evaluate", traces)
    assert process.returncode == 2
    assert process.stderr.startswith(f"error: {traces}")
    assert "looks like a traces file, not a request" in process.stderr
    assert "fair-forge convert FILE --from FORMAT --references REFS" in process.stderr
    assert '{"connector", "traces": {"format", "items"}, "references"}' in process.stderr
    assert process.stdout == ""


def test_convert_names_an_unknown_reference_key_with_its_line(tmp_path: Path) -> None:
    references = tmp_path / "refs.jsonl"
    lines = (TRACES_DIR / "openai_chat.references.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    record["ground_truth_asistant"] = record.pop("ground_truth_assistant")
    references.write_text("\n".join([lines[0], "", json.dumps(record), *lines[2:]]) + "\n")  # a blank line 2
    done = run_cli("convert", TRACES_DIR / "openai_chat.json", "--from", "openai", "--references", references)
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"error: {references}: line 3: references[1].ground_truth_asistant: unknown key "
        "(did you mean ground_truth_assistant?)\n"
    )


def test_convert_with_a_task_key_no_trace_has_says_so_once_listing_the_names_seen() -> None:
    done = run_cli(
        "convert",
        TRACES_DIR / "openai_chat.json",
        "--from",
        "openai",
        "--references",
        TRACES_DIR / "openai_chat.references.jsonl",
        "--task-key",
        "metadata.tsak",
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: --task-key: no trace has metadata.tsak as text (did you mean metadata.task?); "
        "metadata names (with text values) in the traces: task\n"
    )
