"""`fair-forge calibrate`: judge human-labelled pairs with a connector, exactly as `POST /run`
judges a turn, and report how well the judge agrees with the labels
(`fair_forge_core.calibration`). The pairs are JSON Lines, a JSON list, or the body of
`POST /calibrate` (its connector and config apply unless the flags say otherwise)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from fair_forge_core.cli.common import (
    EXIT_EVALUATION_FAILED,
    EXIT_OK,
    CliError,
    check_writable,
    display_name,
    json_dump,
    judges_of,
    read_json,
    read_text,
    say,
    say_lines,
    write_output,
)
from fair_forge_core.cli.progress import progress_bar

OFFLINE_JUDGE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}


def _labelled_pairs(path: Path, stdin: TextIO) -> tuple[dict[str, Any], list[int] | None]:
    """The calibration body a LABELLED file gives, and for JSON Lines the line of each pair.

    A JSON list: the pairs. A JSON object with `pairs`: the body of `POST /calibrate`.
    Otherwise JSON Lines, one pair a line (blank lines skipped). `CliError` naming the file,
    and the line, when it is none of these.
    """
    from fair_forge_core.schemas import describe_json_error, loads_json

    text = read_text(path, "labelled pairs file", stdin)
    try:
        data = loads_json(text)
    except ValueError:
        data = None  # not one JSON document: JSON Lines
    if isinstance(data, list):
        return {"pairs": data}, None
    if isinstance(data, dict) and "pairs" in data:
        return data, None
    pairs, lines = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            pairs.append(loads_json(line))
        except ValueError as exc:
            raise CliError(
                f"{display_name(path)}: line {number} is not valid JSON: {describe_json_error(exc)}"
            ) from None
        lines.append(number)
    if not pairs:
        raise CliError(f"{display_name(path)}: no labelled pairs")
    return {"pairs": pairs}, lines


def _calibration_request(args: argparse.Namespace, stdin: TextIO) -> tuple[Any, Path]:
    """The validated `CalibrationRequest` of the arguments, and the file that names the judge."""
    from pydantic import ValidationError

    from fair_forge_core.schemas import CalibrationRequest, error_message, field_path

    body, lines = _labelled_pairs(args.labelled, stdin)
    connector_path = args.labelled
    if args.connector is not None:
        connector = read_json(args.connector, "connector file", stdin)
        body["connector"] = connector.get("connector", connector)
        connector_path = args.connector
    body.setdefault("connector", OFFLINE_JUDGE)
    config = body.get("config", {})
    if isinstance(config, dict):  # anything else is refused below, naming `config`
        flags = {"threshold": args.threshold, "max_concurrency": args.max_concurrency}
        body["config"] = config | {name: value for name, value in flags.items() if value is not None}
    try:
        return CalibrationRequest.model_validate(body), connector_path
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_input=False):
            loc = error["loc"]
            if loc[:1] == ("pairs",) and lines is not None and len(loc) > 1 and isinstance(loc[1], int):
                where = f"line {lines[loc[1]]}" + (f": {field_path(loc[2:])}" if len(loc) > 2 else "")
            elif loc[:1] == ("connector",) and args.connector is not None:
                where = f"{display_name(args.connector)}: {field_path(loc)}"
            else:
                where = field_path(loc) or "(top level)"
            problems.append(f"{where}: {error_message(CalibrationRequest, error)}")
        more = "".join(f"\n  {p}" for p in problems[1:20])
        raise CliError(f"{display_name(args.labelled)}: invalid labelled pairs: {problems[0]}{more}") from None


def cmd_calibrate(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    """`fair-forge calibrate`: judge the labelled pairs, print `calibration.format_report`,
    write the `CalibrationReport` JSON to `--out`; exit 3 when the judge could not run."""
    check_writable(args.out, "--out")
    request, connector_path = _calibration_request(args, stdin)
    (judge,) = judges_of(request.connector, request.config.evaluation_config(), connector_path)

    from fair_forge_core.calibration import NoPairScored, calibrate_sync, format_report
    from fair_forge_core.judges.llm import JudgeProviderRefused
    from fair_forge_core.redact import redact

    progress = progress_bar(stderr, args.quiet)
    try:
        report = calibrate_sync(request.pairs, judge.model, config=request.config, on_progress=progress)
    except (JudgeProviderRefused, NoPairScored) as exc:
        message = redact(str(exc), sorted(judge.secrets))
        raise CliError(
            f"calibration failed: {display_name(args.labelled)}: {message}", EXIT_EVALUATION_FAILED
        ) from None
    finally:
        if progress is not None:
            progress.finish()
    say_lines(stdout, format_report(report))
    if args.out is not None:
        write_output(json_dump(report.model_dump(mode="json")), args.out, stdout)
    if not args.quiet:
        for warning in report.warnings:
            say(stderr, f"warning: {warning}")
        if args.out is not None:
            say(stderr, f"wrote {args.out}")
    return EXIT_OK
