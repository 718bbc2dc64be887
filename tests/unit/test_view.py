"""The viewer's data (`fair_forge_core.view`, issue #39): the runs' order, the headline, the
tasks over time and what changed, the consecutive comparisons, and the site's files.

The results are real evaluations by the offline judge (`fair_forge_testing.viewer_runs`); what
each test expects follows from how the suites were built (which tasks pass), not from the
viewer's own output."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from fair_forge_core.view import build_site, data_script
from fair_forge_core.view.data import ordered_runs, run_comparison, run_details, run_row, task_matrix
from fair_forge_testing.viewer_runs import ASSISTANT, suite_result, task_name

TASKS = [task_name(n) for n in range(10)]
FLIPPED = {task_name(2), task_name(5), task_name(8)}


@pytest.fixture(scope="module")
def two_runs() -> tuple[Any, Any]:
    before = suite_result([t for t in TASKS if t != task_name(9)])
    after = suite_result([t for t in TASKS if t not in FLIPPED and t != task_name(9)])
    return before, after


def scripts(files: dict[str, bytes]) -> dict[str, Any]:
    """What each data file hands to the viewer: name → value."""
    found = {}
    for path, content in files.items():
        if path.startswith("data/"):
            match = re.fullmatch(rb'FF\.put\(("[^"]+"),JSON\.parse\((".*")\)\);\n', content, re.S)
            assert match, path
            found[json.loads(match.group(1))] = json.loads(json.loads(match.group(2)))
    return found


def test_the_tasks_that_changed_are_the_flipped_ones(two_runs: tuple[Any, Any]) -> None:
    runs = ordered_runs([("before.json", two_runs[0]), ("after.json", two_runs[1])])
    matrix = task_matrix(runs)
    expected = sorted(f"{ASSISTANT}/{t}" for t in FLIPPED)
    assert sorted(matrix["runs"][1]["changed"]) == expected and matrix["runs"][0]["changed"] == []
    comparison = run_comparison(runs[0], runs[1])
    assert comparison is not None
    assert sorted(task["task"] for task in comparison["changed_tasks"]) == expected
    for task in comparison["changed_tasks"]:  # each went from 3 of 3 to 0 of 3
        assert (task["baseline_successes"], task["candidate_successes"], task["candidate_attempts"]) == (3, 0, 3)
    figures = dict(zip(matrix["tasks"], matrix["runs"][1]["figures"], strict=True))
    assert figures[f"{ASSISTANT}/{task_name(2)}"][:3] == [3, 0, "failing"]
    assert figures[f"{ASSISTANT}/{task_name(0)}"][:3] == [3, 3, "stable"]


def test_the_headline_is_the_per_task_pass_pow_k_with_its_bounds(two_runs: tuple[Any, Any]) -> None:
    [run] = ordered_runs([("before.json", two_runs[0])])
    row = run_row(run)
    per_task = two_runs[0].aggregated_metrics.per_task
    assert row["headline"] == {
        "name": "pass^3",  # the per-task figure, as every output names it
        "value": per_task.pass_pow_k,
        "low": per_task.pass_pow_k_ci_low,
        "high": per_task.pass_pow_k_ci_high,
    }
    assert row["headline"]["value"] == pytest.approx(9 / 10)  # 9 tasks pass every attempt, 1 none
    assert row["assistants"] == [ASSISTANT] and row["conversations"] == 30


def test_results_without_their_run_keep_the_order_given(two_runs: tuple[Any, Any]) -> None:
    before, after = two_runs
    runs = ordered_runs([("z.json", after), ("a.json", before)])
    assert [(r.id, r.source) for r in runs] == [("r0001", "z.json"), ("r0002", "a.json")]


def test_a_run_s_details_name_each_attempt_and_its_first_failing_reason(two_runs: tuple[Any, Any]) -> None:
    [run] = ordered_runs([("after.json", two_runs[1])])
    details = run_details(run)
    attempts = details["tasks"][f"{ASSISTANT}/{task_name(2)}"]
    assert [a["session"] for a in attempts] == [f"{task_name(2)}-attempt-{n}" for n in range(3)]
    assert {a["outcome"] for a in attempts} == {"fail"}
    assert all(a["reason"] and a["reason"].startswith("turn 1: answer_correctness") for a in attempts)
    assert {a["outcome"] for a in details["tasks"][f"{ASSISTANT}/{task_name(0)}"]} == {"pass"}


def test_the_site_holds_the_viewer_the_data_and_every_run_s_report(two_runs: tuple[Any, Any]) -> None:
    files = build_site([("before.json", two_runs[0]), ("after.json", two_runs[1])])
    assert {"index.html", "viewer.css", "viewer.js", "data/index.js", "data/tasks.js"} <= set(files)
    assert {
        "runs/r0001/report.html",
        "runs/r0002/report.html",
        "data/runs/r0001.js",
        "data/diff/r0001-r0002.js",
    } <= set(files)
    data = scripts(files)
    assert [run["id"] for run in data["index"]["runs"]] == ["r0001", "r0002"]
    assert data["index"]["pairs"] == [["r0001", "r0002", True]]
    assert b"<!DOCTYPE html>" in files["runs/r0002/report.html"][:200]
    # The page loads nothing from elsewhere: every src and href is the site's own, relative.
    page = files["index.html"].decode()
    assert not re.search(r'(src|href)="(https?:)?//', page)


def test_the_site_compares_each_run_with_the_one_before_and_any_two_of_the_last_ones() -> None:
    from fair_forge_core.view import PAIRED_RUNS, compared_pairs
    from fair_forge_core.view.data import Run

    count = PAIRED_RUNS + 5
    runs = [Run(f"r{n:04d}", f"{n}.json", None) for n in range(1, count + 1)]  # type: ignore[arg-type]
    pairs = {(a.id, b.id) for a, b in compared_pairs(runs)}
    consecutive = {(f"r{n:04d}", f"r{n + 1:04d}") for n in range(1, count)}
    recent = [f"r{n:04d}" for n in range(count - PAIRED_RUNS + 1, count + 1)]
    any_two = {(a, b) for i, a in enumerate(recent) for b in recent[i + 1 :]}
    assert pairs == consecutive | any_two
    expected = (
        (count - 1) + PAIRED_RUNS * (PAIRED_RUNS - 1) // 2 - (PAIRED_RUNS - 1)
    )  # both hold the last runs' consecutive pairs
    assert len(pairs) == expected
    assert all(a < b for a, b in pairs)  # always earlier → later


def test_a_data_script_cannot_close_its_script_element() -> None:
    value = {"labels": {"branch": "</script><script>alert(1)</script>", "__proto__": "kept as a key"}}
    script = data_script("index", value)
    assert b"</script" not in script
    match = re.fullmatch(rb'FF\.put\("index",JSON\.parse\((".*")\)\);\n', script, re.S)
    assert match and json.loads(json.loads(match.group(1))) == value


def test_no_result_is_refused() -> None:
    with pytest.raises(ValueError):
        build_site([])
