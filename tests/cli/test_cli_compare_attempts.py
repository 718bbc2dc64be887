"""`fair-forge compare`'s default question, issue #33's first case through the real CLI: the
example's 12 tasks × 3 attempts (examples/compare/candidate.json, 34/36 fully correct) against
the same agent with three of its always-passing tasks now always failing (25/36)."""

from __future__ import annotations

import copy
import itertools
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import ROOT, run_cli_in_process

EXAMPLE = json.loads((ROOT / "examples" / "compare" / "candidate.json").read_text())
BROKEN = ("basic-devices", "eu-data-region", "family-members")  # three tasks the example passes 3/3
WRONG = "I am not sure, please contact support."


def enumerated_p(tasks: list[tuple[int, int, int, int]]) -> float:
    """The doubled-tail p of Σ candidate successes over every placing of each task's c_b + c_c
    successes among its n_b + n_c attempts (equally likely given the totals; the candidate's
    attempts the last n_c), in exact fractions."""
    laws = []
    for n_b, c_b, n_c, c_c in tasks:
        placings = list(itertools.combinations(range(n_b + n_c), c_b + c_c))
        law: dict[int, Fraction] = {}
        for chosen in placings:
            x = sum(1 for i in chosen if i >= n_b)
            law[x] = law.get(x, Fraction(0)) + Fraction(1, len(placings))
        laws.append(law)
    t = sum(task[3] for task in tasks)
    lower = upper = Fraction(0)
    for outcome in itertools.product(*(law.items() for law in laws)):
        value, probability = sum(x for x, _ in outcome), math.prod((p for _, p in outcome), start=Fraction(1))
        lower += probability if value <= t else 0
        upper += probability if value >= t else 0
    return float(min(Fraction(1), 2 * min(lower, upper)))


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the example's candidate request, the same with the three BROKEN tasks answered wrong)."""
    folder = tmp_path_factory.mktemp("broken")
    body = copy.deepcopy(EXAMPLE)
    for dataset in body["datasets"]:
        if dataset["task_id"] in BROKEN:
            for turn in dataset["conversation"]:
                turn["assistant"] = WRONG
    path = folder / "broken.json"
    path.write_text(json.dumps(body))
    return ROOT / "examples" / "compare" / "candidate.json", path


def test_three_broken_tasks_of_twelve_are_regressed_exit_1_and_listed_first(broken: tuple[Path, Path]) -> None:
    baseline, candidate = broken
    out = candidate.parent / "comparison.json"
    process = run_cli_in_process("compare", baseline, candidate, "--out", out, "--quiet")
    comparison: dict[str, Any] = json.loads(out.read_text())
    # the numbers: 34/36 → 25/36 fully correct
    assert (comparison["baseline_successes"], comparison["baseline_attempts"]) == (34, 36)
    assert (comparison["candidate_successes"], comparison["candidate_attempts"]) == (25, 36)
    assert process.returncode == 1, process.stdout + process.stderr
    assert comparison["verdict"] == "regressed" and comparison["population"] == "attempts"
    assert process.stdout.count("verdict: REGRESSED") == 1
    # the three tasks first, each 3/3 → 0/3 with its own exact p, 2/C(6, 3) = 0.1
    changed = comparison["changed_tasks"]
    assert [t["task"] for t in changed[:3]] == sorted(BROKEN)
    for t in changed[:3]:
        assert (t["baseline_successes"], t["candidate_successes"], t["difference"]) == (3, 0, -1.0)
        assert t["p_value"] == pytest.approx(0.1, rel=1e-12)
    tasks = {t["task"]: t for t in changed}
    assert set(tasks) == set(BROKEN)  # nothing else changed
    lines = process.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("tasks that changed (3 of 12"))
    assert [lines[start + 2 + i].split()[0] for i in range(3)] == sorted(BROKEN)
    assert all(lines[start + 2 + i].split()[1:4] == ["3/3", "0/3", "-1.000"] for i in range(3))
    # the attempt-level p from an independent enumeration over the informative tasks
    counts = [(3, 3, 3, 0)] * 3 + [(3, 2, 3, 2)] * 2  # the two 2/3 tasks are unchanged
    expected = enumerated_p(counts)
    assert comparison["attempt_test"]["p_value"] == pytest.approx(expected, rel=1e-9)
    assert comparison["attempt_test"]["p_value"] < 0.05
    # the task-level tests stay, beside it (the INCONCLUSIVE, every Holm p 0.44)
    assert comparison["task_level_verdict"] == "inconclusive"
    assert "task-level verdict: INCONCLUSIVE" in process.stdout

    tasks_gate = run_cli_in_process("compare", baseline, candidate, "--population", "tasks", "--quiet")
    assert tasks_gate.returncode == 0 and "verdict: INCONCLUSIVE" in tasks_gate.stdout


def test_the_markdown_and_the_junit_list_the_changed_tasks(broken: tuple[Path, Path]) -> None:
    baseline, candidate = broken
    markdown, junit = candidate.parent / "compare.md", candidate.parent / "compare.xml"
    process = run_cli_in_process("compare", baseline, candidate, "--markdown", markdown, "--junit", junit, "--quiet")
    assert process.returncode == 1
    text = markdown.read_text()
    assert "### Tasks that changed (3 of 12)" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "| 3/3 | 0/3 |" in line]
    assert [row.split("|")[1].strip() for row in rows] == sorted(BROKEN)
    assert all(task in junit.read_text() for task in BROKEN)
