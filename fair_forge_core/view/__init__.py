"""`fair-forge view`: results side by side as a static site (docs/how-to/reports.md "The viewer: runs side by side").

`build_site(results)` gives the site's files (relative path → bytes): nothing to host, no
server, no network; it works from a CI artifact, GitHub Pages or `file://`.

- `index.html`, `viewer.css`, `viewer.js`: the viewer (`assets/`), a page of four views
  reached by the URL fragment, so that every view has a permalink: `#runs` (every run: when,
  labels, assistants, readiness, headline pass^k and its bounds, cost; sortable, filtered by
  text, status and assistant), `#tasks` (each task's pass rate and label across runs, the runs
  where it changed marked; the headline over time with its interval band), `#diff/<a>/<b>` (two
  runs compared: `fair-forge compare`'s verdict and changed tasks for a run and the one before
  it and for any two of the last `PAIRED_RUNS`, `compared_pairs`; for others, the tasks whose
  figure changed and the command that compares them) and `#diff/<a>/<b>/<task>` (that task's
  attempts in both runs side by side, each with its first failing reason and a link to it).
- `runs/<id>/report.html`: the HTML report (`fair_forge_core.report.render_html`) of each of
  the last `reports` runs (default `DEFAULT_REPORTS`; a report holds every conversation, about
  2 KB each, so a thousand runs of 500 would make a site of a gigabyte): the conversation
  drill-down, one rendering of a conversation, the report's, reached from any view. An older
  run's attempts still show their outcome and first failing reason in the side by side.
- `data/*.js`: the data, as scripts that hand it to the viewer (`FF.put(name, value)`), since
  a page opened from `file://` may load scripts but not fetch files. The index first
  (`data/index.js`); the tasks (`data/tasks.js`), a run's conversations (`data/runs/<id>.js`)
  and a comparison (`data/diff/<a>-<b>.js`) only when a view needs them.

The rules of the figures are `view.data`'s. Importing this package costs nothing (`--help`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fair_forge_core.schemas import EvaluationResult

ASSETS = ("index.html", "viewer.css", "viewer.js")
DEFAULT_REPORTS = 20
PAIRED_RUNS = 30
"""Any two of the last this many runs are compared (`compared_pairs`): a CI history of the Action's
default `view-history` (30) and the run itself."""


def data_script(name: str, value: Any) -> bytes:
    """A data file: `FF.put(name, JSON.parse("…"));`. Parsed as JSON, not read as a script's
    object literal, so that a key such as `__proto__` (a label's) stays a key; the text made safe
    inside a script (no `</`)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    literal = json.dumps(text, ensure_ascii=False).replace("</", "<\\/")
    return f"FF.put({json.dumps(name)},JSON.parse({literal}));\n".encode()


def compared_pairs(runs: Sequence[Any]) -> list[tuple[Any, Any]]:
    """The pairs of runs the site holds `fair-forge compare`'s comparison of (earlier, later): each
    run with the one before it, and any two of the last `PAIRED_RUNS` (435 pairs; a comparison
    costs about 15 ms: all pairs of a thousand runs would take two hours)."""
    chosen: dict[tuple[str, str], tuple[Any, Any]] = {}
    for earlier, later in [*itertools.pairwise(runs), *itertools.combinations(runs[-PAIRED_RUNS:], 2)]:
        chosen.setdefault((earlier.id, later.id), (earlier, later))
    return list(chosen.values())


def build_site(results: Sequence[tuple[str, EvaluationResult]], *, reports: int = DEFAULT_REPORTS) -> dict[str, bytes]:
    """The site of `results` (each with the name of the file it came from), as the module
    docstring lays it out, with the reports of the last `reports` runs. An empty sequence is a
    ValueError: a site of no run shows nothing."""
    from fair_forge_core.report import render_html
    from fair_forge_core.view.data import ordered_runs, run_comparison, run_details, run_row, task_matrix

    if not results:
        raise ValueError("no result to show")
    runs = ordered_runs(results)
    files: dict[str, bytes] = {
        name: resources.files("fair_forge_core.view").joinpath("assets", name).read_bytes() for name in ASSETS
    }
    pairs = []
    for before, after in compared_pairs(runs):
        comparison = run_comparison(before, after)
        pairs.append([before.id, after.id, comparison is not None])
        if comparison is not None:
            files[f"data/diff/{before.id}-{after.id}.js"] = data_script(f"diff/{before.id}-{after.id}", comparison)
    reported = {run.id for run in runs[len(runs) - reports :]} if reports > 0 else set()
    rows = [{**run_row(run), "report": run.id in reported} for run in runs]
    files["data/index.js"] = data_script("index", {"runs": rows, "pairs": pairs, "paired_runs": PAIRED_RUNS})
    files["data/tasks.js"] = data_script("tasks", task_matrix(runs))
    for run in runs:
        files[f"data/runs/{run.id}.js"] = data_script(f"runs/{run.id}", run_details(run))
        if run.id in reported:
            files[f"runs/{run.id}/report.html"] = render_html(run.result, title=f"{run.id}: {run.source}").encode()
    return files
