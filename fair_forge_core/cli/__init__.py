"""`fair-forge` (or `python -m fair_forge_core`): evaluate a request, compare two agents and
render reports, with no AWS and no server.

    fair-forge evaluate request.json [--out result.json] [--html report.html]
        [--fail-under-pass-pow-k X] [--fail-if-lower-bound 'METRIC<X' ...] [--max-unscored N]
        [--allow-unscored] [--max-cost-usd X] [--judge-cache DIR]
        [--junit FILE] [--markdown FILE] [--jsonl FILE] [--csv FILE]
    fair-forge compare BASELINE CANDIDATE [--baseline-assistant ID] [--candidate-assistant ID]
        [--population attempts|tasks] [--confidence 0.95] [--seed 0] [--k K] [--out comparison.json]
        [--require-conclusive] [--require-judge-robust]
        [--require-same-judge] [--junit FILE] [--markdown FILE]
    fair-forge run TASKS (--agent SPEC | --agent-url URL) (--attempts K | --until-decided Q [--max-attempts N])
        [-o recorded.json] [--evaluate [--result FILE] [evaluate's flags]]
    fair-forge report result.json [-o report.html]
    fair-forge view RESULT_OR_DIR... --out site/
    fair-forge convert traces.json --from FORMAT --references refs.jsonl [-o request.json]
    fair-forge pull langfuse|phoenix|langsmith [--since ISO] [--until ISO] [--session ID] [--tag T]
        [--filter EXPR] [--project ID] [--max-pages N] [--max-bytes N] [-o traces.json]
    fair-forge calibrate LABELLED.jsonl [--connector CONNECTOR.json] [--threshold 0.7] [--out report.json]
    fair-forge --version

A file name of `-` reads the JSON from standard input (`fair-forge evaluate - < request.json`).

Each command is one module of this package, whose docstring states its rules:
`cli.evaluate` (`evaluate`, its judge's cost and cache), `cli.gates` (the gates of `evaluate`),
`cli.run` (`run`: an agent on a TASKS file, fixed or adaptive attempts),
`cli.compare` (its text: `cli.compare_text`), `cli.report`, `cli.view` (the site: `fair_forge_core.view`), `cli.convert`, `cli.pull` (`pull`: its flags `cli.pull_args`, the stores' APIs
`pull_stores`), `cli.calibrate`; the outputs for CI systems
(`--junit`, `--markdown`, `--jsonl`, `--csv`, the step summary) `cli.outputs`. The parser and the flags' types
are `cli.parser`; the progress bar `cli.progress`; what the commands share (reading files,
validation messages, writing, building judges and ledgers, the exit codes, `CliError`)
`cli.common`.

Exit codes: 0 done (every gate met; compare: improved, or no significant change); 1 a
gate of `evaluate` failed, readiness "insufficient_evidence" included (the outputs are written
first), or compare's verdict is
`regressed` (or within the judge's error band under `--require-judge-robust`); 2 bad input: a message naming the file and the field, or the flag, no stack
trace; 3 the evaluation could not run (the judge provider refused, or no conversation
could be scored); 4 compare's verdict is `inconclusive` under `--require-conclusive`;
5 compare's verdict is `not_tested` (too few shared tasks for any test to reach
significance), always. `pull`: 7 stopped at `--max-pages` or `--max-bytes` with more to fetch (what was fetched
is written); 8 the store refused, failed or could not be reached (`cli.pull`). Messages never contain an API key, and never a workflow command: every
line written to stdout or stderr goes through `cli.common.say` (`safe_text.log_line`: a line
break in a value is shown as `\n`, no line starts with `::`, no `##[`), JSON through
`cli.common.json_dump`.

Heavy modules (pydantic, LangChain, numpy, scipy, the judges) are imported by the command
that needs them, so `--help` stays instant; the modules of the commands other than `evaluate`
are imported when that command runs (or one of their names is asked of this package).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from fair_forge_core.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_EVALUATION_FAILED,
    EXIT_INCONCLUSIVE,
    EXIT_NOT_TESTED,
    EXIT_OK,
    EXIT_REGRESSED,
    EXIT_THRESHOLD,
    STDIN,
    CliError,
    say,
    say_lines,
)
from fair_forge_core.cli.evaluate import cmd_evaluate, format_usage
from fair_forge_core.cli.gates import GATE_METRICS, GateFigure, GateMetric, LowerBoundGate, lower_bound
from fair_forge_core.cli.parser import EPILOG, build_parser
from fair_forge_core.cli.progress import ProgressBar, is_terminal
from fair_forge_core.cli.startup import end_startup, pause_startup_collection

if TYPE_CHECKING:
    from fair_forge_core.cli.calibrate import OFFLINE_JUDGE, cmd_calibrate
    from fair_forge_core.cli.compare import cmd_compare, format_comparison, metric_label
    from fair_forge_core.cli.convert import cmd_convert
    from fair_forge_core.cli.pull import cmd_pull
    from fair_forge_core.cli.report import cmd_report
    from fair_forge_core.cli.run import cmd_run
    from fair_forge_core.cli.view import cmd_view

_LAZY = {
    "OFFLINE_JUDGE": "calibrate",
    "cmd_calibrate": "calibrate",
    "cmd_compare": "compare",
    "format_comparison": "compare",
    "metric_label": "compare",
    "cmd_convert": "convert",
    "cmd_pull": "pull",
    "cmd_report": "report",
    "cmd_run": "run",
    "cmd_view": "view",
}
"""Names of this package from the modules of the commands other than `evaluate` (name → module of
`fair_forge_core.cli`): imported when first asked for, so `fair-forge evaluate` does not import
the other commands."""
_COMMANDS = {
    "run": "cmd_run",
    "compare": "cmd_compare",
    "report": "cmd_report",
    "view": "cmd_view",
    "convert": "cmd_convert",
    "pull": "cmd_pull",
    "calibrate": "cmd_calibrate",
}


def _lazy(name: str) -> Any:
    """A name of `_LAZY`, from its command's module (imported now): the module's `__getattr__`
    (hidden from the type checker, which sees the names' imports above)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


if not TYPE_CHECKING:
    __getattr__ = _lazy


__all__ = [
    "EPILOG",
    "EXIT_BAD_INPUT",
    "EXIT_EVALUATION_FAILED",
    "EXIT_INCONCLUSIVE",
    "EXIT_NOT_TESTED",
    "EXIT_OK",
    "EXIT_REGRESSED",
    "EXIT_THRESHOLD",
    "GATE_METRICS",
    "OFFLINE_JUDGE",
    "STDIN",
    "CliError",
    "GateFigure",
    "GateMetric",
    "LowerBoundGate",
    "ProgressBar",
    "build_parser",
    "cmd_calibrate",
    "cmd_compare",
    "cmd_convert",
    "cmd_evaluate",
    "cmd_pull",
    "cmd_report",
    "cmd_run",
    "cmd_view",
    "console_main",
    "format_comparison",
    "format_usage",
    "is_terminal",
    "lower_bound",
    "main",
    "metric_label",
]


def main(
    argv: Sequence[str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the CLI and return its exit code (see the module docstring)."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)
    if args.command != "evaluate":  # evaluate's start-up ends when its judging begins (cli.startup)
        end_startup()
    command = cmd_evaluate if args.command == "evaluate" else _lazy(_COMMANDS[args.command])
    try:
        return command(args, stdin, stdout, stderr)
    except CliError as exc:
        (say_lines if exc.multiline else say)(stderr, f"error: {exc}")
        return exc.code


def console_main() -> int:
    """`fair-forge` as a process of its own (the console script, `python -m fair_forge_core`):
    `main` with no garbage collection during its start-up (`cli.startup`)."""
    pause_startup_collection()
    try:
        return main()
    finally:
        end_startup()
