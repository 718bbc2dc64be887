"""`fair-forge view` in a real browser (issue #39): the site built from the examples' results and
two generated runs of one suite, opened from file:// in headless Chromium (tests/browser/conftest.py).

The user's path of the issue: filter to failing tasks, open the diff of the last two runs and
see the three tasks that changed, open one of them down to its failing turn's reason, follow a
permalink back to the same view; no request leaves the page, no serious accessibility violation,
in light and dark, on a desktop and on a phone. What is expected follows from how the two runs
were built (`fair_forge_testing.viewer_runs`: which tasks pass), not from the viewer's output."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.cli import main
from fair_forge_core.schemas import EvaluationResult
from fair_forge_core.schemas.run import RunInfo
from fair_forge_testing.viewer_runs import ASSISTANT, suite_result, task_name
from tests.browser.conftest import axe_violations, log_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ("flaky_tasks", "support_agents", "calculator")
TASKS = [task_name(n) for n in range(10)]
FLIPPED = (task_name(2), task_name(5), task_name(8))
ALWAYS_FAILING = task_name(9)


def dated(result: EvaluationResult, minutes: int, **labels: str) -> EvaluationResult:
    started = (datetime.now(UTC) + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    run = RunInfo(started_at=started, tasks_hash="0" * 64, labels=labels, ci=None)
    return result.model_copy(update={"run": run})


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples' results (by `fair-forge evaluate`, the offline judge) and the suite run twice,
    the second time with FLIPPED failing, written as result files; the site by `fair-forge view`.
    Built on a thread of its own: Playwright's sync API runs an event loop on this one, and the
    evaluations run theirs (`evaluate.run_sync`)."""
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path_factory.mktemp("viewer")
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(build_site_files, root).result()


def build_site_files(root: Path) -> Path:
    results = root / "results"
    results.mkdir()
    for name in EXAMPLES:
        code = main(
            ["evaluate", str(ROOT / "examples" / f"{name}.json"), "--out", str(results / f"{name}.json"), "--quiet"],
            io.StringIO(),
            io.StringIO(),
        )
        assert code in (0, 1)  # 1: a gate of the example's own (readiness) failed; the result is written
    before = dated(suite_result([t for t in TASKS if t != ALWAYS_FAILING]), 10, branch="main", commit="a1b2c3")
    after = dated(
        suite_result([t for t in TASKS if t not in FLIPPED and t != ALWAYS_FAILING]), 20, branch="main", commit="d4e5f6"
    )
    (results / "suite-1.json").write_text(before.model_dump_json())
    (results / "suite-2.json").write_text(after.model_dump_json())
    (results / "notes.json").write_text(json.dumps({"not": "a result"}))  # skipped, as a user's other JSON would be
    stderr = io.StringIO()
    assert main(["view", str(results), "--out", str(root / "site")], io.StringIO(), stderr) == 0, stderr.getvalue()
    assert "skipped" in stderr.getvalue() and "notes.json" in stderr.getvalue()
    return root / "site"


def open_site(new_page: Any, site: Path, fragment: str = "", **options: Any) -> Any:
    page = new_page(site_root=site, **options)
    page.goto((site / "index.html").as_uri() + fragment)
    page.wait_for_selector("main#view > section, main#view > [role=alert]")  # a view, or why there is none
    return page


def no_problems(page: Any) -> None:
    problems = log_of(page).problems()
    assert not problems, problems
    found = axe_violations(page)
    assert not found, "\n".join(map(str, found))


def test_failing_tasks_then_the_diff_of_the_last_two_runs_down_to_the_failing_reason(new_page: Any, site: Path) -> None:
    page = open_site(new_page, site)
    assert page.locator("#runs-table tbody tr").count() == len(EXAMPLES) + 2
    no_problems(page)

    page.click("nav a[data-view=tasks]")
    page.wait_for_selector("#tasks-table")
    page.select_option("#filter-tasks", "failing")
    page.wait_for_function("location.hash === '#tasks?show=failing'")  # the filter is in the address
    failing = page.locator("#tasks-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.task)")
    ours = sorted(t for t in failing if t.startswith(ASSISTANT + "/"))
    assert ours == sorted(f"{ASSISTANT}/{t}" for t in (*FLIPPED, ALWAYS_FAILING))
    assert page.locator("#tasks-table td.changed").count() >= len(FLIPPED)  # the runs where they changed, marked
    assert page.locator("svg.chart polyline.curve").count() == 1 and page.locator("svg.chart polygon.band").count() == 1
    page.select_option("#filter-runs", "all")  # every run's column, the filter kept
    page.wait_for_function("location.hash === '#tasks?show=failing&runs=all'")
    assert page.locator("#tasks-table thead th").count() == 1 + len(EXAMPLES) + 2
    no_problems(page)

    page.click("nav a[data-view=diff]")  # the last two runs by default
    page.wait_for_selector("#changed-tasks li")
    assert "Diff r0004 → r0005" in page.locator("#diff-title").inner_text()
    changed = page.locator("#changed-tasks li").evaluate_all("items => items.map(i => i.dataset.task)")
    assert sorted(changed) == sorted(f"{ASSISTANT}/{t}" for t in FLIPPED)
    assert "Verdict:" in page.locator("#verdict").inner_text()
    no_problems(page)

    page.locator(f'#changed-tasks li[data-task="{ASSISTANT}/{FLIPPED[0]}"] a').click()
    page.wait_for_selector("#side-by-side")
    before, after = page.locator("#side-by-side .side").all()
    assert before.locator("li[data-outcome=pass]").count() == 3 and after.locator("li[data-outcome=fail]").count() == 3
    reason = after.locator("li .reason").first.inner_text()
    assert reason.startswith("turn 1: answer_correctness")
    permalink, side_text = page.url, page.locator("#side-by-side").inner_text()
    no_problems(page)

    # Down to the failing turn: the run's report, the attempt's conversation expanded, its reason.
    session = after.locator("li a").first.inner_text()
    after.locator("li a").first.click()
    page.wait_for_selector(f'tr[data-session="{session}"]')
    target = page.evaluate("location.hash")
    assert page.locator(target).get_attribute("data-session") == session  # the link lands on the attempt's row
    detail = page.locator(f'tr[data-session="{session}"] + tr.detail')
    assert detail.locator("details[open]").count() == 1
    judged = json.loads((site.parent / "results" / "suite-2.json").read_text())
    [attempt] = [c for c in judged["per_conversation_metrics"] if c["session_id"] == session]
    assert attempt["interactions"][0]["judge_reasoning"] in detail.inner_text()  # the judge's reason for the turn
    assert not log_of(page).problems(), log_of(page).problems()

    # The permalink opens the same view in a new page.
    again = new_page(site_root=site)
    again.goto(permalink)
    again.wait_for_selector("#side-by-side")
    assert again.locator("#side-by-side").inner_text() == side_text
    assert again.locator("#side-by-side h3").inner_text() == f"{ASSISTANT}/{FLIPPED[0]}"
    assert not log_of(again).problems()


def test_runs_sort_and_filter_and_keep_their_address(new_page: Any, site: Path) -> None:
    page = open_site(new_page, site)
    page.locator("#runs-table th button", has_text="pass^k").click()
    page.wait_for_function("location.hash.includes('sort=headline')")
    shown = page.locator("#runs-table tbody tr td:nth-child(5)").evaluate_all(
        "cells => cells.map(c => parseFloat(c.firstChild.textContent))"
    )
    values = [v for v in shown if v == v]  # NaN (a run without a headline) last
    assert values == sorted(values, reverse=True)
    page.fill("#search", "commit=d4e5f6")  # a label of the second suite run, as the table shows it
    page.wait_for_function("document.querySelectorAll('#runs-table tbody tr').length === 1")
    assert page.locator("#runs-table tbody tr").get_attribute("data-run") == "r0005"
    address = page.url
    assert "q=commit%3Dd4e5f6" in address  # the search is in the address: a permalink of the filtered table
    reopened = open_site(new_page, site, "#" + address.split("#", 1)[1])
    assert reopened.locator("th[aria-sort]").inner_text().startswith("pass^k")
    assert reopened.locator("#runs-table tbody tr").count() == 1 and reopened.input_value("#search") == "commit=d4e5f6"
    page.fill("#search", "")  # cleared: every run again
    page.wait_for_function(f"document.querySelectorAll('#runs-table tbody tr').length === {len(EXAMPLES) + 2}")
    assert not log_of(page).problems() and not log_of(reopened).problems()


def test_two_runs_the_site_did_not_compare_list_what_changed_and_name_the_command(new_page: Any, site: Path) -> None:
    page = open_site(new_page, site, "#diff/r0001/r0005")  # an example's run and the suite's: two assistants
    page.wait_for_selector("#verdict")
    verdict = page.locator("#verdict").inner_text()
    assert (
        "No comparison of these two runs" in verdict and "fair-forge compare flaky_tasks.json suite-2.json" in verdict
    )
    assert page.locator("#changed-tasks li").count() == 0  # no task in common
    page.select_option("#diff-baseline", "r0004")  # the two suite runs: compared
    page.wait_for_function("location.hash === '#diff/r0004/r0005'")
    page.wait_for_selector("#changed-tasks li")
    assert page.locator("#verdict").inner_text().startswith("Verdict:")
    unknown = open_site(new_page, site, "#diff/r0001/r9999")
    assert "no run r9999" in unknown.locator("main [role=alert]").inner_text()
    assert not log_of(page).problems() and not log_of(unknown).problems()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_view_on_a_phone_and_in_both_schemes(new_page: Any, site: Path, scheme: str) -> None:
    from tests.browser.conftest import PHONE

    for fragment in ("#runs", "#tasks", f"#diff/r0004/r0005/{ASSISTANT}%2F{FLIPPED[1]}"):
        page = open_site(new_page, site, fragment, color_scheme=scheme, **PHONE)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")  # no sideways page
        no_problems(page)


def screenshots(out: Path) -> None:
    """The docs' pictures of the four views (docs/how-to/reports.md "The viewer: runs side by side"), of this test's site:
    `.venv/bin/python -m tests.browser.test_viewer docs/`."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM_ARGS, DESKTOP, chromium_path

    with tempfile.TemporaryDirectory() as folder:
        site = build_site_files(Path(folder))
        views = {
            "viewer-runs.png": "#runs",
            "viewer-tasks.png": "#tasks?show=changed",
            "viewer-diff.png": f"#diff/r0004/r0005/{ASSISTANT}%2F{FLIPPED[0]}",
        }
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(), args=list(CHROMIUM_ARGS))
            page = browser.new_context(**DESKTOP).new_page()
            for name, fragment in views.items():
                page.goto((site / "index.html").as_uri() + fragment)
                page.wait_for_selector("main#view section")
                page.screenshot(path=str(out / name))
            page.goto((site / "runs" / "r0005" / "report.html").as_uri() + "#conversations")
            page.screenshot(path=str(out / "viewer-report.png"))
            browser.close()


if __name__ == "__main__":
    import sys

    screenshots(Path(sys.argv[1]))
