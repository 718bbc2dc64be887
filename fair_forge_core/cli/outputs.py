"""The files `evaluate` and `compare` write for CI systems (`fair_forge_core.exports`): `--junit`,
`--markdown`, `--jsonl`, `--csv`, and the step summary.

Every output named is checked before any judging (`common.check_writable`), and two outputs
naming one file are refused (exit 2, naming both flags). When the environment variable
`GITHUB_STEP_SUMMARY` names a file (GitHub Actions sets it for each step), the Markdown
summary is appended to it — with or without `--markdown` — as GitHub expects of a step;
an empty value is no file. The outputs are written before the gates are read, so a failing
gate (exit 1) or a regressed comparison still leaves them for the CI to show.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from fair_forge_core.cli.common import CliError, check_writable, write_output

if TYPE_CHECKING:
    from datetime import datetime

    from fair_forge_core.schemas import Comparison, EvaluationResult

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def step_summary() -> Path | None:
    """The file `GITHUB_STEP_SUMMARY` names, or None when it is unset or empty."""
    value = os.environ.get(STEP_SUMMARY, "")
    return Path(value) if value else None


def check_outputs(args: argparse.Namespace, flags: dict[str, str]) -> None:
    """`CliError` unless each output of `flags` (flag → the `args` attribute) that is given can
    be written, no two name the same file, and the step summary's file can be appended to."""
    given = [(flag, path) for flag, name in flags.items() if (path := getattr(args, name, None)) is not None]
    seen: dict[Path, str] = {}
    for flag, path in given:
        check_writable(path, flag)
        resolved = path.resolve()
        if resolved in seen:
            raise CliError(f"{seen[resolved]} and {flag} name the same file: {path}")
        seen[resolved] = flag
    summary = step_summary()
    if summary is not None:
        check_writable(summary, STEP_SUMMARY)


def _append(text: str, destination: Path) -> None:
    try:
        with destination.open("a", encoding="utf-8") as file:
            file.write(text)
    except OSError as exc:
        raise CliError(f"cannot write {destination}: {exc.strerror or exc}") from None


def _write_all(args: argparse.Namespace, writers: dict[str, Callable[[], str]], stdout: TextIO) -> list[Path]:
    """Write each output of `writers` (`args` attribute → its text) that is given, then append
    the Markdown to the step summary when there is one; the paths written."""
    written = []
    for name, text in writers.items():
        path = getattr(args, name, None)
        if path is not None:
            write_output(text(), path, stdout)
            written.append(path)
    summary = step_summary()
    if summary is not None and "markdown" in writers:
        _append(writers["markdown"](), summary)
        written.append(summary)
    return written


def write_evaluation_outputs(
    args: argparse.Namespace,
    result: EvaluationResult,
    ci_level: float,
    stdout: TextIO,
    timing: tuple[datetime, float] | None = None,
) -> list[Path]:
    """`evaluate`'s CI outputs that were asked for; the paths written. `timing` (when the
    evaluation started, its wall-clock seconds) goes into the JUnit file's `time` and `timestamp`
    (`exports.EvaluationTiming`). `exports` is imported only when an output is written."""

    def junit() -> str:
        from fair_forge_core import exports

        return exports.junit_evaluation(result, None if timing is None else exports.EvaluationTiming(*timing))

    def markdown() -> str:
        from fair_forge_core import exports

        return exports.markdown_evaluation(result, ci_level)

    def jsonl() -> str:
        from fair_forge_core import exports

        return exports.jsonl_rows(result)

    def csv() -> str:
        from fair_forge_core import exports

        return exports.csv_rows(result)

    return _write_all(args, {"junit": junit, "markdown": markdown, "jsonl": jsonl, "csv": csv}, stdout)


def write_comparison_outputs(
    args: argparse.Namespace, comparison: Comparison, baseline: str, candidate: str, stdout: TextIO
) -> list[Path]:
    """`compare`'s CI outputs that were asked for; the paths written."""
    from fair_forge_core import exports

    return _write_all(
        args,
        {
            "junit": lambda: exports.junit_comparison(comparison, args.require_conclusive),
            "markdown": lambda: exports.markdown_comparison(comparison, baseline, candidate),
        },
        stdout,
    )


EVALUATE_OUTPUTS = {
    "--out": "out",
    "--html": "html",
    "--otel-events": "otel_events",
    "--junit": "junit",
    "--markdown": "markdown",
    "--jsonl": "jsonl",
    "--csv": "csv",
}
COMPARE_OUTPUTS = {"--out": "out", "--junit": "junit", "--markdown": "markdown"}
