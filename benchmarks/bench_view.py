"""The viewer at scale (issue #39 item 3): `fair-forge view`'s site of 1,000 runs × 100 tasks × 5
attempts, its sizes, and its first view in headless Chromium.

The runs are one suite of 100 tasks (`task-000` …), 5 one-turn attempts each, one assistant;
each task has a pass probability of its own and each run draws its attempts from it (seeded), so
tasks are stable, flaky and failing and change between runs. Their metrics are built directly
(`fair_forge_testing.builders.scored_conversation`, then `evaluate.build_result`: what the
judge would have said is not what is measured here), with a run of their own (`run.started_at`
a minute apart). Measured: the build (`view.build_site`, the default 20 reports), the files'
sizes, and the first view: from the start of the page's navigation to the runs table drawn
(`performance.now()` in the page), then the tasks view's table drawn after the click, in
Debian's Chromium driven by Playwright (each a median of 5 loads).

    python -m benchmarks.bench_view [--runs 1000] [--tasks 100] [--attempts 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.common import header, verdict
from fair_forge_core.evaluate import build_result
from fair_forge_core.schemas import EvaluationConfig, EvaluationResult
from fair_forge_core.schemas.run import RunInfo
from fair_forge_core.view import build_site
from fair_forge_testing.builders import scored_conversation

FIRST_VIEW_S = 1.0
INDEX_BYTES = 2_000_000


def suite_runs(runs: int, tasks: int, attempts: int, seed: int = 39) -> list[tuple[str, EvaluationResult]]:
    rng = random.Random(seed)
    rates = [rng.choice([1.0, 1.0, 0.95, 0.8, 0.5, 0.0]) for _ in range(tasks)]
    config = EvaluationConfig(k=attempts)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    results = []
    for number in range(runs):
        conversations = [
            scored_conversation(f"run{number}-t{t}-a{a}", rng.random() < rates[t], task_id=f"task-{t:03d}")
            for t in range(tasks)
            for a in range(attempts)
        ]
        result = build_result(conversations, config)
        started = (start + timedelta(minutes=number)).strftime("%Y-%m-%dT%H:%M:%SZ")
        labels = {"commit": f"{rng.getrandbits(40):010x}", "branch": "main"}
        result.run = RunInfo(started_at=started, tasks_hash="0" * 64, labels=labels, ci=None)
        results.append((f"run-{number:04d}.json", result))
    return results


def first_views(site: Path, loads: int = 5) -> tuple[list[float], list[float]]:
    """Seconds from navigation start to the runs table, and from the click to the tasks table."""
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM_ARGS, chromium_path

    runs_view, tasks_view = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=list(CHROMIUM_ARGS))
        for _ in range(loads):
            page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
            page.goto((site / "index.html").as_uri())
            page.wait_for_selector("#runs-table tbody tr")
            runs_view.append(page.evaluate("performance.now()") / 1000)
            clicked = page.evaluate("performance.now()")
            page.click("nav a[data-view=tasks]")
            page.wait_for_selector("#tasks-table tbody tr")
            tasks_view.append((page.evaluate("performance.now()") - clicked) / 1000)
            page.context.close()
        browser.close()
    return runs_view, tasks_view


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--attempts", type=int, default=5)
    args = parser.parse_args()
    header(f"fair-forge view: {args.runs} runs × {args.tasks} tasks × {args.attempts} attempts")
    made = time.perf_counter()
    results = suite_runs(args.runs, args.tasks, args.attempts)
    print(f"  results made in             {time.perf_counter() - made:.1f} s (not the viewer's)")
    built = time.perf_counter()
    files = build_site(results)
    build_s = time.perf_counter() - built
    with tempfile.TemporaryDirectory() as folder:
        site = Path(folder)
        for name, content in files.items():
            (site / name).parent.mkdir(parents=True, exist_ok=True)
            (site / name).write_bytes(content)
        runs_view, tasks_view = first_views(site)
    size = lambda prefix: sum(len(c) for n, c in files.items() if n.startswith(prefix))  # noqa: E731
    index = len(files["data/index.js"])
    print(
        f"  build_site                  {build_s:.1f} s, {len(files)} files, {sum(map(len, files.values())) / 1e6:.1f} MB"
    )
    print(f"  index (data/index.js)       {index / 1e6:.2f} MB; tasks {len(files['data/tasks.js']) / 1e6:.2f} MB")
    print(
        f"  per-run data / reports      {size('data/runs/') / 1e6:.1f} MB / {size('runs/') / 1e6:.1f} MB (20 reports)"
    )
    print(
        f"  first view (runs table)     {statistics.median(runs_view):.3f} s (min {min(runs_view):.3f}, max {max(runs_view):.3f})"
    )
    print(
        f"  tasks view after the click  {statistics.median(tasks_view):.3f} s (min {min(tasks_view):.3f}, max {max(tasks_view):.3f})"
    )
    print(verdict(statistics.median(runs_view) <= FIRST_VIEW_S, f"first view ≤ {FIRST_VIEW_S} s"))
    print(verdict(index <= INDEX_BYTES, f"index ≤ {INDEX_BYTES / 1e6:g} MB"))


if __name__ == "__main__":
    main()
