"""`fair-forge report`: render the HTML report of a saved result (the CLI's output or a
`POST /run` response body)."""

from __future__ import annotations

import argparse
from typing import TextIO

from fair_forge_core.cli.common import EXIT_OK, CliError, display_name, read_json, say, validation_message, write_output


def cmd_report(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from pydantic import ValidationError

    from fair_forge_core.report import ReportError, render_html

    data = read_json(args.result, "result file", stdin)
    try:
        page = render_html(data, title=args.title)
    except ReportError as exc:
        raise CliError(f"{display_name(args.result)}: {exc}") from None
    except ValidationError as exc:
        from fair_forge_core.schemas import EvaluationResult

        raise CliError(validation_message(args.result, "result", exc, EvaluationResult), multiline=True) from None
    write_output(page, args.out, stdout)
    if args.out is not None:
        say(stderr, f"wrote {args.out}")
    return EXIT_OK
