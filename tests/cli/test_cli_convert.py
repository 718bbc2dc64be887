"""`fair-forge convert --from <format>` on every trace example, piped into `fair-forge evaluate -`,
as a user would run it: a request on stdout, every trace matched to a task, every conversation evaluated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from examples.run_local import TRACE_CONFIGS, TRACE_EXAMPLES
from tests.cli.test_cli import ROOT, run_cli, run_cli_in_process

TRACES = ROOT / "examples" / "traces"


@pytest.mark.parametrize("name", sorted(TRACE_EXAMPLES))
def test_convert_then_evaluate_every_trace_example(name: str) -> None:
    trace_format, task_key = TRACE_EXAMPLES[name]
    references = (TRACES / name).with_suffix(".references.jsonl")
    converted = run_cli_in_process(
        "convert", TRACES / name, "--from", trace_format, "--references", references, "--task-key", task_key
    )
    assert converted.returncode == 0, converted.stderr
    assert not [w for w in converted.stderr.splitlines() if "matches no" in w or "has no reference" in w]
    request = json.loads(converted.stdout)
    tasks = {json.loads(line)["task_id"] for line in references.read_text().splitlines() if line.strip()}
    assert {d["task_id"] for d in request["datasets"]} == tasks  # every task of the references ran
    # convert writes `config: {}`; an example's own config (make run's) is set as a user would set it
    # (support_tasks.json has a goal, which the offline judge cannot decide: it must not be required).
    request["config"].update(TRACE_CONFIGS.get(name, {}))
    evaluated = subprocess.run(
        [sys.executable, "-m", "fair_forge_core", "evaluate", "-", "--quiet"],
        input=json.dumps(request),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads(evaluated.stdout)
    assert [m["session_id"] for m in result["per_conversation_metrics"]] == [
        d["session_id"] for d in request["datasets"]
    ]
    assert all(m["is_scored"] for m in result["per_conversation_metrics"])


def test_an_unknown_format_is_refused_by_name() -> None:
    done = run_cli_in_process("convert", TRACES / "openai_chat.json", "--from", "csv", "--references", Path("x"))
    assert done.returncode == 2
    assert "invalid choice: 'csv'" in done.stderr


def test_a_file_nested_too_deeply_and_stdin_twice_are_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    # In a process of its own: in this one, a finalizer the garbage collector runs at the depth of
    # the failed parse (an earlier test's object) can add its own RecursionError to stderr.
    done = run_cli("convert", deep, "--from", "openai", "--references", TRACES / "openai_chat.references.jsonl")
    assert (done.returncode, done.stderr) == (2, f"error: {deep}: nested too deeply to read\n")
    done = run_cli_in_process("convert", "-", "--from", "openai", "--references", "-")
    assert (done.returncode, done.stderr) == (
        2,
        "error: the traces and the references cannot both be read from stdin ('-')\n",
    )


def test_tool_results_that_are_not_finite_or_hold_a_lone_surrogate_stay_text_and_evaluate(tmp_path: Path) -> None:
    traces = json.loads((TRACES / "openai_chat.json").read_text())
    traces[0]["messages"][3]["content"] = "NaN"
    traces[1]["messages"][3]["content"] = '"\\ud800 x"'
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(traces))
    references = TRACES / "openai_chat.references.jsonl"
    converted = run_cli_in_process(
        "convert", path, "--from", "openai", "--references", references, "--task-key", "metadata.task"
    )
    assert converted.returncode == 0, converted.stderr
    request = json.loads(converted.stdout)
    results = [
        c.get("result") for d in request["datasets"][:2] for b in d["conversation"] for c in b["agentic"]["tools_used"]
    ]
    assert "NaN" in results and '"\\ud800 x"' in results
    evaluated = subprocess.run(
        [sys.executable, "-m", "fair_forge_core", "evaluate", "-", "--quiet"],
        input=converted.stdout,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert evaluated.returncode == 0, evaluated.stderr


def test_convert_writes_a_tasks_fields_from_the_references_and_names_the_line_of_a_conflict(tmp_path: Path) -> None:
    state = {"order": {"status": "cancelled"}}
    messages = [{"role": "user", "content": "Cancel order 7"}, {"role": "assistant", "content": "Done."}]
    traces_file, refs_file = tmp_path / "traces.json", tmp_path / "refs.jsonl"
    traces_file.write_text(json.dumps([{"id": "run-0", "metadata": {"final_state": state}, "messages": messages}]))
    task = {"goal": "The order is cancelled", "expected_state": state, "tool_policy": {"max_tool_calls": 1}}
    refs = [{"task_id": "run-0", "ground_truth_assistant": "Cancelled", **task}]
    refs_file.write_text(json.dumps(refs[0]) + "\n")
    done = run_cli_in_process("convert", traces_file, "--from", "openai", "--references", refs_file)
    assert done.returncode == 0, done.stderr
    (dataset,) = json.loads(done.stdout)["datasets"]
    assert {name: dataset[name] for name in task} == task
    assert dataset["final_state"] == state
    refs_file.write_text(json.dumps(refs[0]) + "\n\n" + json.dumps({**refs[0], "turn": 1, "goal": "Other"}) + "\n")
    done = run_cli_in_process("convert", traces_file, "--from", "openai", "--references", refs_file)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: {refs_file}: line 3: references[1].goal: differs from references[0].goal: a task has one goal\n",
    )
