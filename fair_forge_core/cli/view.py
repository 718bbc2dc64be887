"""`fair-forge view RESULTS… --out DIR`: the results as a static site of runs side by side
(`fair_forge_core.view`: the runs, the tasks over time, the diff of any two, each run's report).

Each RESULT is a result file (`evaluate`'s output, a `POST /run` response, a job's result) or a
directory, whose `*.json` result files are taken in name order (a file there that is not a
result, whether not JSON, not an object or not valid as a result, is skipped and named on
stderr with why). Exit 2 when no result is found, a named file is not a result, or DIR cannot
be written; the site is written to DIR (created; the data and reports of an earlier site there
removed first) and its index named on stderr.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from fair_forge_core.cli.common import EXIT_OK, CliError, display_name, read_json, say
from fair_forge_core.view import DEFAULT_REPORTS


def add_view_parser(commands: Any) -> None:
    """The `view` command's arguments."""
    view = commands.add_parser(
        "view",
        help="write a static site of results side by side: runs, tasks over time, diffs, reports",
        description=(
            "Write a static site (HTML, CSS, JS and data files: no server, no network; open index.html, "
            "publish it as a CI artifact or on GitHub Pages) of the results side by side."
        ),
    )
    view.add_argument("results", type=Path, nargs="+", help="result JSON files, or directories of them")
    view.add_argument("--out", type=Path, required=True, help="the site's directory (created)")
    view.add_argument(
        "--reports",
        type=_count,
        default=DEFAULT_REPORTS,
        metavar="N",
        help=f"the HTML report of the last N runs (default {DEFAULT_REPORTS}; 0: none): each holds every conversation",
    )


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number, 0 or more, got {text}")
    return int(text)


def _result_files(paths: list[Path]) -> list[tuple[Path, bool]]:
    """Each file to read, and whether it was named (a file named must be a result; one found in a
    directory may be another JSON file, and is skipped)."""
    found: list[tuple[Path, bool]] = []
    for path in paths:
        if path.is_dir():
            found.extend((file, False) for file in sorted(path.glob("*.json")))
        else:
            found.append((path, True))
    return found


def cmd_view(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from fair_forge_core.view import build_site

    results = _results(args.results, stdin, stderr)
    files = build_site(results, reports=args.reports)
    out: Path = args.out
    try:
        _write_site(out, files)
    except OSError as exc:
        raise CliError(f"--out {display_name(out)}: {exc.strerror or exc}") from None
    say(stderr, f"wrote {out / 'index.html'} ({len(results)} run(s), {len(files)} files)")
    return EXIT_OK


def _results(paths: list[Path], stdin: TextIO, stderr: TextIO) -> list[tuple[str, Any]]:
    """The results to show (the module docstring's rules)."""
    from pydantic import ValidationError

    from fair_forge_core.schemas import EvaluationResult

    results: list[tuple[str, Any]] = []
    for path, named in _result_files(paths):
        try:
            data = read_json(path, "result file", stdin)
            if not isinstance(data, dict):
                raise CliError(f"{display_name(path)}: not an evaluation result (not a JSON object)")
            data = {k: v for k, v in data.items() if k not in ("request_id", "job_id")}
            results.append((path.name, EvaluationResult.model_validate(data)))
        except (CliError, ValidationError) as exc:
            if named:
                raise CliError(f"{display_name(path)}: not an evaluation result") from None
            say(stderr, f"skipped {display_name(path)}: {_why(exc)}")
    if not results:
        raise CliError("no evaluation result among " + ", ".join(display_name(p) for p in paths))
    return results


def _why(exc: Exception) -> str:
    """Why a file of a directory is skipped: not JSON, not an object, or not a result."""
    return "not an evaluation result" if not isinstance(exc, CliError) else str(exc).split(": ", 1)[-1]


def _write_site(out: Path, files: dict[str, bytes]) -> None:
    """Write the site into `out`, the data and reports of an earlier site there removed first (a
    run it had and this one has not would otherwise stay)."""
    import shutil

    for part in ("data", "runs"):
        if (out / part).is_dir() and (out / "index.html").is_file():
            shutil.rmtree(out / part)
    for name, content in files.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
