"""`fair-forge convert --from <format>` on every trace example, piped into `fair-forge evaluate -`,
as a user would run it: a request on stdout, every trace matched to a task, every conversation evaluated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from examples.run_local import TRACE_EXAMPLES
from tests.cli.test_cli import ROOT, run_cli

TRACES = ROOT / "examples" / "traces"


@pytest.mark.parametrize("name", sorted(TRACE_EXAMPLES))
def test_convert_then_evaluate_every_trace_example(name: str) -> None:
    trace_format, task_key = TRACE_EXAMPLES[name]
    references = (TRACES / name).with_suffix(".references.jsonl")
    converted = run_cli(
        "convert", TRACES / name, "--from", trace_format, "--references", references, "--task-key", task_key
    )
    assert converted.returncode == 0, converted.stderr
    assert not [w for w in converted.stderr.splitlines() if "matches no" in w or "has no reference" in w]
    request = json.loads(converted.stdout)
    tasks = {json.loads(line)["task_id"] for line in references.read_text().splitlines() if line.strip()}
    assert {d["task_id"] for d in request["datasets"]} == tasks  # every task of the references ran
    evaluated = subprocess.run(
        [sys.executable, "-m", "fair_forge_core", "evaluate", "-", "--quiet"],
        input=converted.stdout,
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
    done = run_cli("convert", TRACES / "openai_chat.json", "--from", "csv", "--references", Path("x"))
    assert done.returncode == 2
    assert "invalid choice: 'csv'" in done.stderr
