"""`fair-forge convert`: turn agent traces (`fair_forge_core.importers`; a JSON or JSON Lines
file, or OTLP protobuf for `--from otel` / `openinference` / `langfuse`, told by its content) and a
references file (JSON, or JSON Lines whose records messages name by line) into the body of
`POST /run`, judged by the offline judge until another connector is set.

A trace attempt that cannot be joined to the references (`importers.references`: `not_joined`,
`turns_differ`, `state_not_reported`) is kept in the request as an unscored conversation with its
cause, and one warning line says why; the request is written, and the exit code is then
`EXIT_UNJOINED` (6) unless `--allow-unjoined` (0). No trace joined at all is exit 2."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from fair_forge_core.cli.common import (
    EXIT_OK,
    EXIT_UNJOINED,
    STDIN,
    CliError,
    display_name,
    json_dump,
    read_text,
    say,
    write_output,
)


def _read_traces(path: Path, stdin: TextIO) -> Any:
    """The traces file: JSON or JSON Lines (`_read_records`), or, by its content whatever its
    name, OTLP protobuf (`otlp_shapes.looks_like_protobuf`: bytes that are no JSON, starting as
    an `ExportTraceServiceRequest` does), given to the importer as the bytes it is."""
    from fair_forge_core.importers.otlp_shapes import looks_like_protobuf

    try:
        if path != STDIN:
            raw = path.read_bytes()
        elif (buffer := getattr(stdin, "buffer", None)) is not None:
            raw = buffer.read()
        else:  # a text stream with no bytes beneath (a test's): text it is
            return _read_records(path, "traces file", stdin)[0]
    except OSError as exc:
        raise CliError(f"cannot read traces file {display_name(path)}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        if looks_like_protobuf(raw):
            return raw
        raise CliError(f"{display_name(path)} is not UTF-8 text, nor OTLP protobuf") from None
    try:
        return _parse_records(path, text)[0]
    except CliError:
        if looks_like_protobuf(raw):
            return raw
        raise


def _read_records(path: Path, what: str, stdin: TextIO) -> tuple[Any, list[int] | None]:
    """A JSON document, or JSON Lines (one value a line) as a list with the line number of each
    value (None for a JSON document), for messages to name a record by its line."""
    return _parse_records(path, read_text(path, what, stdin))


def _parse_records(path: Path, text: str) -> tuple[Any, list[int] | None]:
    """`_read_records` of the text read."""
    from fair_forge_core.schemas import describe_json_error, loads_json

    try:
        return loads_json(text), None
    except RecursionError:
        raise CliError(f"{display_name(path)}: nested too deeply to read") from None
    except ValueError as whole:
        try:
            numbered = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
            return [loads_json(line) for _, line in numbered], [number for number, _ in numbered]
        except (ValueError, RecursionError):
            raise CliError(
                f"{display_name(path)} is neither JSON nor JSON Lines: {describe_json_error(whole)}"
            ) from None


def _reference_line(field: str, lines: list[int] | None) -> str:
    """`"line N: "` for a `references[i]…` field of a JSON Lines references file, else `""`."""
    index = field.removeprefix("references[").partition("]")[0]
    if lines is None or not field.startswith("references[") or not index.isdigit() or int(index) >= len(lines):
        return ""
    return f"line {lines[int(index)]}: "


def cmd_convert(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    if str(args.traces) == "-" and str(args.references) == "-":
        raise CliError("the traces and the references cannot both be read from stdin ('-')")
    traces = _read_traces(args.traces, stdin)
    return write_request(args.source, traces, display_name(args.traces), args, stdin, stdout, stderr)


def write_request(
    trace_format: str,
    traces: Any,
    traces_name: str,
    args: argparse.Namespace,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
) -> int:
    """Join `traces` (of `trace_format`, named `traces_name` in errors) with the references file
    `args.references` by `args.task_key`, write the request to `args.out` (module docstring), and
    return the exit code: `EXIT_OK`, or `EXIT_UNJOINED` unless `args.allow_unjoined`. Also what
    `fair-forge pull --references` writes."""
    from fair_forge_core.importers import TraceError, datasets_from_traces, unjoined_causes
    from fair_forge_core.tiers import unjoined_phrase

    references, lines = _read_records(args.references, "references file", stdin)
    if not isinstance(references, list):
        references, lines = [references], None
    try:
        datasets, warnings, trace_count = datasets_from_traces(trace_format, traces, references, task_key=args.task_key)
    except TraceError as exc:
        if exc.field == "task_key":
            raise CliError(f"--task-key: {exc.problem}") from None
        if exc.field.startswith("references"):
            raise CliError(f"{display_name(args.references)}: {_reference_line(exc.field, lines)}{exc}") from None
        raise CliError(f"{traces_name}: {exc}") from None
    for warning in warnings:
        say(stderr, f"warning: {warning}")
    unjoined = unjoined_causes(datasets)
    if len(datasets) == sum(unjoined.values()):
        raise CliError("no trace matched a task of the references: nothing to evaluate")
    request = {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}},
        "datasets": datasets,
        "config": {},
    }
    write_output(json_dump(request), args.out, stdout)
    say(stderr, f"{len(datasets)} conversation(s) from {trace_count} trace(s)")
    if not unjoined:
        return EXIT_OK
    what = f"{unjoined_phrase(unjoined)}: kept as unscored conversations in the request, which readiness counts"
    if args.allow_unjoined:
        say(stderr, f"{what}; allowed by --allow-unjoined")
        return EXIT_OK
    say(stderr, f"error: {what} (pass --allow-unjoined to accept them)")
    return EXIT_UNJOINED
