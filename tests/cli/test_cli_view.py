"""`fair-forge view` (issue #39): which files it reads, what it refuses, what it writes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fair_forge_core.cli import main
from fair_forge_testing.viewer_runs import suite_result, task_name


def view(*args: str | Path) -> tuple[int, str]:
    stderr = io.StringIO()
    code = main(["view", *map(str, args)], io.StringIO(), stderr)
    return code, stderr.getvalue()


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    for number, passing in enumerate(([task_name(0), task_name(1)], [task_name(0)]), start=1):
        body = json.loads(suite_result(passing, tasks=3, attempts=2).model_dump_json())
        body["request_id"] = f"req-{number}"  # a POST /run response: read as its result
        (folder / f"run-{number}.json").write_text(json.dumps(body))
    return folder


def test_a_directory_s_results_become_a_site_and_other_json_is_skipped(results: Path, tmp_path: Path) -> None:
    (results / "config.json").write_text('{"not": "a result"}')
    code, stderr = view(results, "--out", tmp_path / "site")
    assert code == 0, stderr
    assert "skipped" in stderr and "config.json" in stderr
    site = tmp_path / "site"
    assert (site / "index.html").is_file() and (site / "runs" / "r0002" / "report.html").is_file()
    assert (site / "data" / "diff" / "r0001-r0002.js").is_file()  # one assistant, consecutive: compared
    assert f"wrote {site / 'index.html'} (2 run(s)" in stderr


def test_reports_only_for_the_last_runs(results: Path, tmp_path: Path) -> None:
    code, _ = view(results, "--out", tmp_path / "site", "--reports", "1")
    assert code == 0
    assert sorted(p.parent.name for p in (tmp_path / "site" / "runs").glob("*/report.html")) == ["r0002"]


@pytest.mark.parametrize("bad", ["not-json", "not-a-result"])
def test_a_named_file_that_is_not_a_result_exits_2(results: Path, tmp_path: Path, bad: str) -> None:
    named = tmp_path / "named.json"
    named.write_text("{ nope" if bad == "not-json" else '{"success": true}')
    code, stderr = view(results / "run-1.json", named, "--out", tmp_path / "site")
    assert code == 2 and "named.json" in stderr
    assert not (tmp_path / "site").exists()


def test_no_result_at_all_exits_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, stderr = view(empty, "--out", tmp_path / "site")
    assert code == 2 and "no evaluation result" in stderr


def test_a_list_or_broken_json_in_a_directory_is_skipped_saying_why(results: Path, tmp_path: Path) -> None:
    (results / "list.json").write_text("[1, 2]")
    (results / "broken.json").write_text("{ nope")
    code, stderr = view(results, "--out", tmp_path / "site")
    assert code == 0, stderr
    assert "skipped" in stderr and "list.json" in stderr and "broken.json" in stderr


def test_an_out_that_is_a_file_exits_2_naming_it(results: Path, tmp_path: Path) -> None:
    taken = tmp_path / "site"
    taken.write_text("a file")
    code, stderr = view(results, "--out", taken)
    assert code == 2 and "--out" in stderr and "Traceback" not in stderr


def test_a_site_written_again_keeps_no_run_of_the_earlier_one(results: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert view(results, "--out", site)[0] == 0
    (results / "run-2.json").unlink()
    assert view(results, "--out", site)[0] == 0
    assert sorted(p.name for p in (site / "data" / "runs").iterdir()) == ["r0001.js"]
    assert not (site / "runs" / "r0002").exists() and not (site / "data" / "diff").exists()
