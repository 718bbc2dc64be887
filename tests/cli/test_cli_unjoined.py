"""Trace attempts the references cannot be joined to are kept unscored with their cause, never
dropped (`importers.references`; docs/how-to/traces.md): ten attempts of one task, six right and
four wrong that cannot be joined, through `convert` → `evaluate`'s gates and its Markdown summary
(the GitHub Action's PR comment: tests/cli/test_github_action.py; `POST /run`:
tests/service/test_traces_api.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_cli import run_cli_in_process

TASK = "refund"
STATE = {"order": {"status": "refunded"}}
REFERENCES = [{"task_id": TASK, "ground_truth_assistant": "12", "expected_state": STATE}]
UNJOINED = (
    "4 trace attempt(s) could not be joined to the references (2 state_not_reported, 1 not_joined, 1 turns_differ)"
)
"""What every output says of the four; counted independently: attempts 6 and 7 report no state, 8
has one more turn than the references give, 9's task is 'refund ' (and the order of equal counts
is the causes' names)."""


def attempt(
    number: int, *, right: bool, task: str = TASK, state: Any = STATE, extra_turn: bool = False
) -> dict[str, Any]:
    """An openai-format trace of `task`: one turn answered right ("It is 12.") or wrong, and its
    `final_state` (None: not reported); `extra_turn` adds a second user turn."""
    messages = [
        {"role": "user", "content": "How much is refunded for order 7?"},
        {"role": "assistant", "content": "It is 12." if right else "No idea."},
    ]
    if extra_turn:
        messages += [{"role": "user", "content": "Are you sure?"}, {"role": "assistant", "content": "No idea."}]
    metadata: dict[str, Any] = {"task": task}
    if state is not None:
        metadata["final_state"] = state
    return {"id": f"attempt-{number}", "metadata": metadata, "messages": messages}


def ten_attempts() -> list[dict[str, Any]]:
    """Six right; four wrong, none of which can be joined: no final_state (twice), one extra user
    turn, a task name with a trailing space. Counted, the task passes 6 of 10 times."""
    return [attempt(n, right=True) for n in range(6)] + [
        attempt(6, right=False, state=None),
        attempt(7, right=False, state=None),
        attempt(8, right=False, extra_turn=True),
        attempt(9, right=False, task=TASK + " "),
    ]


def scenario_files(folder: Path) -> tuple[Path, Path]:
    traces, references = folder / "traces.json", folder / "references.json"
    traces.write_text(json.dumps(ten_attempts()))
    references.write_text(json.dumps(REFERENCES))
    return traces, references


def convert(folder: Path, *flags: str) -> tuple[Any, Path]:
    traces, references = scenario_files(folder)
    request = folder / "request.json"
    done = run_cli_in_process(
        "convert",
        traces,
        "--from",
        "openai",
        "--references",
        references,
        "--task-key",
        "metadata.task",
        "-o",
        request,
        *flags,
    )
    return done, request


def test_convert_keeps_the_unjoined_attempts_unscored_and_exits_6(tmp_path: Path) -> None:
    done, request = convert(tmp_path)
    assert done.returncode == 6, done.stderr
    datasets = json.loads(request.read_text())["datasets"]  # written all the same
    assert [(d["session_id"], d["task_id"], d.get("unscored", {}).get("cause")) for d in datasets] == [
        *((f"attempt-{n}", TASK, None) for n in range(6)),
        ("attempt-6", TASK, "state_not_reported"),
        ("attempt-7", TASK, "state_not_reported"),
        ("attempt-8", TASK, "turns_differ"),
        ("attempt-9", TASK + " ", "not_joined"),  # its own task name, never guessed
    ]
    assert (
        "warning: trace 'attempt-9': its task 'refund ' matches no task of the references (did you mean 'refund'?)"
        ": kept as an unscored conversation (not_joined)"
    ) in done.stderr.splitlines()
    assert (
        "warning: trace 'attempt-8': its 2 turn(s) differ from task 'refund''s references: turn 1 without a reference"
        in done.stderr
    )
    assert f"error: {UNJOINED}: kept as unscored conversations in the request" in done.stderr


def test_allow_unjoined_exits_0_with_the_same_request(tmp_path: Path) -> None:
    refused, request = convert(tmp_path)
    written = request.read_text()
    allowed, _ = convert(tmp_path, "--allow-unjoined")
    assert (refused.returncode, allowed.returncode) == (6, 0)
    assert request.read_text() == written
    assert (
        f"{UNJOINED}: kept as unscored conversations in the request, which readiness counts; allowed by --allow-unjoined"
        in allowed.stderr
    )


def test_the_task_gate_fails_and_says_why_and_the_summary_counts_them(tmp_path: Path) -> None:
    _, request = convert(tmp_path)
    result, markdown = tmp_path / "result.json", tmp_path / "summary.md"
    done = run_cli_in_process(
        "evaluate", request, "--out", result, "--markdown", markdown, "--min-task-pass-rate", "0.9"
    )
    assert done.returncode == 1, done.stderr
    failed = [line for line in done.stderr.splitlines() if line.startswith("FAILED: ")]
    assert f"FAILED: not enough evidence: 4 of 10 conversation(s) unscored ({UNJOINED}), more than" in failed[0]
    aggregated = json.loads(result.read_text())["aggregated_metrics"]
    assert (aggregated["total_conversations"], aggregated["unscored_conversations"]) == (6, 4)
    assert aggregated["unscored_by_cause"] == {"not_joined": 1, "state_not_reported": 2, "turns_differ": 1}
    assert aggregated["readiness"]["status"] == "insufficient_evidence"
    summary = markdown.read_text()
    assert f"**{UNJOINED}**: kept as unscored conversations." in summary
    assert "| not_joined: its task 'refund ' matches no task of the references (did you mean 'refund'?) |" in summary
