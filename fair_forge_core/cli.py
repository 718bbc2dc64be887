"""`fair-forge` (or `python -m fair_forge_core`): evaluate a request and render reports, with no AWS and no server.

    fair-forge evaluate request.json [--out result.json] [--html report.html] [--fail-under-pass-pow-k X]
    fair-forge report result.json [-o report.html]

A file name of `-` reads the JSON from standard input (`fair-forge evaluate - < request.json`).

`evaluate` reads the same JSON as `POST /run` (connector, datasets, config), builds the
judge from `connector` under the same allowlist and key rules as the service
(`fair_forge_core.connectors`), shows a progress bar on stderr while the judge works,
and writes the result JSON (to `--out`, else to stdout) and optionally the HTML report.
Without `connector.params.api_key`, the key comes from `LLM_API_KEY` — never for a
connector whose endpoint the file chooses. `FAIR_FORGE_EXTRA_CONNECTORS` extends the
allowlist, as for the service. `report` renders the HTML report of a saved result (the
CLI's output or a `POST /run` response body).

Exit codes: 0 done (and the threshold met); 1 `--fail-under-pass-pow-k` not met (the
outputs are written first); 2 bad input: a message naming the file and the field, no
stack trace; 3 the evaluation could not run (the judge provider refused, or no
conversation could be scored). Messages never contain an API key.

Heavy modules (pydantic, LangChain, the judges) are imported by the command that needs
them, so `--help` stays instant.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

EXIT_OK, EXIT_THRESHOLD, EXIT_BAD_INPUT, EXIT_EVALUATION_FAILED = 0, 1, 2, 3


class CliError(Exception):
    """A failure to report as one line on stderr, with its exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


class ProgressBar:
    """A one-line text progress bar, redrawn in place with a carriage return.

    Call it as `on_progress(done, total)`; redraws are throttled to `min_interval_s`
    except the last, so a fast judge does not flood a log. `finish()` ends the line.
    """

    def __init__(self, stream: TextIO, label: str = "judging", width: int = 28, min_interval_s: float = 0.1) -> None:
        self.stream, self.label, self.width, self.min_interval_s = stream, label, width, min_interval_s
        self._last_draw: float | None = None
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and self._last_draw is not None and now - self._last_draw < self.min_interval_s:
            return
        self._last_draw = now
        share = done / total if total else 1.0
        filled = round(share * self.width)
        bar = "█" * filled + "░" * (self.width - filled)
        self.stream.write(f"\r{self.label} {bar} {done}/{total} ({share:4.0%})")
        self.stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


# --------------------------------------------------------------------------- arguments


def _threshold(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from fair_forge_core.trace_formats import TRACE_FORMATS

    parser = argparse.ArgumentParser(
        prog="fair-forge",
        description="Evaluate AI-agent conversations (pass@K, pass^K, tool correctness) and render HTML reports.",
        epilog="Exit codes: 0 ok, 1 threshold not met, 2 bad input, 3 evaluation failed.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{evaluate,report,convert}")

    evaluate = commands.add_parser(
        "evaluate",
        help="run an evaluation from a request file (the body of POST /run)",
        description="Run an evaluation locally from a request file: the same JSON as the body of POST /run.",
    )
    evaluate.add_argument("request", type=Path, help="request JSON: connector, datasets, config ('-': stdin)")
    evaluate.add_argument("--out", type=Path, help="write the result JSON here (default: stdout)")
    evaluate.add_argument("--html", type=Path, help="also write the HTML report here")
    evaluate.add_argument(
        "--fail-under-pass-pow-k",
        type=_threshold,
        metavar="X",
        help="exit 1 when the aggregated pass_pow_k (the posterior mean in Bayesian mode) is below X, for CI pipelines",
    )
    evaluate.add_argument("--quiet", action="store_true", help="no progress bar or summary on stderr")

    report = commands.add_parser(
        "report",
        help="render the HTML report of a result JSON",
        description="Render one self-contained HTML report from a result JSON (the CLI's output or a /run response).",
    )
    report.add_argument("result", type=Path, help="result JSON ('-': stdin)")
    report.add_argument("-o", "--out", type=Path, help="write the HTML here (default: stdout)")
    report.add_argument("--title", default="Agent evaluation report", help="the report's title")

    convert = commands.add_parser(
        "convert",
        help="turn agent traces and a references file into a request",
        description=(
            "Turn agent traces and a references file (ground truth by task_id) "
            "into the body of POST /run, judged by the offline judge until you set another connector."
        ),
    )
    convert.add_argument("traces", type=Path, help="traces: JSON (a list, or one trace) or JSON Lines ('-': stdin)")
    convert.add_argument("--from", dest="source", choices=TRACE_FORMATS, required=True, help="the traces' format")
    convert.add_argument("--references", type=Path, required=True, help="references: JSON list or JSON Lines")
    convert.add_argument(
        "--task-key",
        help="what matches a trace to its task: its id (default), metadata.<name>, or first_user_message",
    )
    convert.add_argument("-o", "--out", type=Path, help="write the request here (default: stdout)")
    return parser


# --------------------------------------------------------------------------- helpers


STDIN = Path("-")


def _name(path: Path) -> str:
    """How messages name a file (standard input is `<stdin>`)."""
    return "<stdin>" if path == STDIN else str(path)


def _read_text(path: Path, what: str, stdin: TextIO) -> str:
    """The text of `path` (standard input for `-`); `CliError` naming the file otherwise."""
    try:
        return stdin.read() if path == STDIN else path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {what} {_name(path)}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"{_name(path)} is not UTF-8 text") from None


def _read_json(path: Path, what: str, stdin: TextIO) -> dict[str, Any]:
    """The JSON object in `path` (standard input for `-`); `CliError` naming the file otherwise."""
    from fair_forge_core.schemas import describe_json_error, loads_json

    text = _read_text(path, what, stdin)
    try:
        data = loads_json(text)
    except ValueError as exc:
        raise CliError(f"{_name(path)} is not valid JSON: {describe_json_error(exc)}") from None
    except RecursionError:
        raise CliError(f"{_name(path)} is nested too deeply") from None
    if not isinstance(data, dict):
        raise CliError(f"{_name(path)} must hold a JSON object, got {type(data).__name__}")
    return data


def _validation_message(path: Path, what: str, error: Any) -> str:
    """A pydantic `ValidationError` as 'file: invalid what: field: message', every field listed."""
    from fair_forge_core.schemas import field_path

    details = [(field_path(e["loc"]) or "(top level)", e["msg"]) for e in error.errors(include_input=False)]
    first_field, first_message = details[0]
    lines = [f"{_name(path)}: invalid {what}: {first_field}: {first_message}"]
    if len(details) > 1:
        lines += [f"  {name}: {message}" for name, message in details[1:20]]
        if len(details) > 20:
            lines.append(f"  … and {len(details) - 20} more")
    return "\n".join(lines)


def _write(text: str, destination: Path | None, stdout: TextIO) -> None:
    if destination is None:
        stdout.write(text)
        stdout.flush()
        return
    try:
        destination.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {destination}: {exc.strerror or exc}") from None


def _redacted(message: str, secrets: Sequence[str]) -> str:
    from fair_forge_core.redact import redact

    return redact(message, secrets)


# --------------------------------------------------------------------------- commands


def _build_judge(request: Any, path: Path) -> Any:
    """The judge model of a validated request, under the service's allowlist and key rules
    and the operator's environment as the service reads it (`JudgeEnvironment`)."""
    from fair_forge_core import connectors
    from fair_forge_core.connectors.environment import JudgeEnvironment, SettingsError

    try:
        environment = JudgeEnvironment.read()
    except SettingsError as exc:
        raise CliError(str(exc)) from None
    params = request.connector.params
    secrets = [*connectors.secret_values(params), environment.server_api_key_env or ""]
    try:
        return connectors.build_chat_model(
            request.connector.class_path,
            params,
            extra_connectors=environment.extra_connectors,
            server_key=lambda: environment.server_api_key_env,
            # A model server on this machine is a normal judge for a local run.
            policy=environment.endpoint_policy(also_allowed=connectors.LOOPBACK_NETWORKS),
        )
    except connectors.ConnectorNotAllowed as exc:
        allowed = ", ".join(sorted(set(connectors.allowed_connectors(environment.extra_connectors).values())))
        raise CliError(
            f"{_name(path)}: connector.class_path: {_redacted(str(exc), secrets)}; allowed: {allowed}"
        ) from None
    except connectors.ConnectorError as exc:
        raise CliError(f"{_name(path)}: connector: {connectors.REFUSAL_PREFIX}{_redacted(str(exc), secrets)}") from None


def cmd_evaluate(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from pydantic import ValidationError

    from fair_forge_core.schemas import RunRequest

    body = _read_json(args.request, "request file", stdin)
    try:
        request = RunRequest.model_validate(body)
    except ValidationError as exc:
        raise CliError(_validation_message(args.request, "request", exc)) from None
    judge = _build_judge(request, args.request)

    from fair_forge_core.evaluate import NoConversationScored, evaluate_sync
    from fair_forge_core.judges.llm import JudgeProviderRefused

    progress = None if args.quiet else ProgressBar(stderr)
    try:
        result = evaluate_sync(request.datasets, judge.model, request.config, on_progress=progress)
    except (JudgeProviderRefused, NoConversationScored) as exc:
        raise CliError(
            f"evaluation failed: {_redacted(str(exc), sorted(judge.secrets))}", EXIT_EVALUATION_FAILED
        ) from None
    finally:
        if progress is not None:
            progress.finish()

    payload = result.model_dump(mode="json")
    _write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", args.out, stdout)
    if args.html is not None:
        from fair_forge_core.report import render_html

        _write(render_html(result), args.html, stdout)

    agg = result.aggregated_metrics
    k = agg.k
    if not args.quiet:
        stderr.write(
            f"tier: {agg.interpretation} — pass@{k} = {agg.pass_at_k:.3f}, pass^{k} = {agg.pass_pow_k:.3f} "
            f"({agg.fully_correct_conversations}/{agg.total_conversations} conversations fully correct)\n"
        )
        for warning in result.warnings:
            stderr.write(f"warning: {warning}\n")
        for path in (args.out, args.html):
            if path is not None:
                stderr.write(f"wrote {path}\n")
    threshold = args.fail_under_pass_pow_k
    # evaluate() raises when nothing was scored, so pass_pow_k is a number here
    if threshold is not None and agg.pass_pow_k is not None and agg.pass_pow_k < threshold:
        stderr.write(f"FAILED: pass^{k} = {agg.pass_pow_k:.4f} is below --fail-under-pass-pow-k {threshold:g}\n")
        return EXIT_THRESHOLD
    return EXIT_OK


def cmd_report(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from pydantic import ValidationError

    from fair_forge_core.report import ReportError, render_html

    data = _read_json(args.result, "result file", stdin)
    try:
        page = render_html(data, title=args.title)
    except ReportError as exc:
        raise CliError(f"{_name(args.result)}: {exc}") from None
    except ValidationError as exc:
        raise CliError(_validation_message(args.result, "result", exc)) from None
    _write(page, args.out, stdout)
    if args.out is not None:
        stderr.write(f"wrote {args.out}\n")
    return EXIT_OK


def _read_records(path: Path, what: str, stdin: TextIO) -> Any:
    """A JSON document, or JSON Lines (one value a line) as a list."""
    from fair_forge_core.schemas import describe_json_error, loads_json

    text = _read_text(path, what, stdin)
    try:
        return loads_json(text)
    except ValueError as whole:
        try:
            return [loads_json(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            raise CliError(f"{_name(path)} is neither JSON nor JSON Lines: {describe_json_error(whole)}") from None


def cmd_convert(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from fair_forge_core.importers import TraceError, datasets_from_traces

    traces_data = _read_records(args.traces, "traces file", stdin)
    references = _read_records(args.references, "references file", stdin)
    if not isinstance(references, list):
        references = [references]
    try:
        datasets, warnings, trace_count = datasets_from_traces(
            args.source, traces_data, references, task_key=args.task_key
        )
    except TraceError as exc:
        where = _name(args.references) if exc.field.startswith("references") else _name(args.traces)
        raise CliError(f"{where}: {exc}") from None
    for warning in warnings:
        stderr.write(f"warning: {warning}\n")
    if not datasets:
        raise CliError("no trace matched a task of the references: nothing to evaluate")
    request = {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}},
        "datasets": datasets,
        "config": {},
    }
    _write(json.dumps(request, indent=2, ensure_ascii=False) + "\n", args.out, stdout)
    stderr.write(f"{len(datasets)} conversation(s) from {trace_count} trace(s)\n")
    return EXIT_OK


def main(
    argv: Sequence[str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    """Run the CLI and return its exit code (see the module docstring)."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)
    command = {"evaluate": cmd_evaluate, "report": cmd_report, "convert": cmd_convert}[args.command]
    try:
        return command(args, stdin, stdout, stderr)
    except CliError as exc:
        stderr.write(f"error: {exc}\n")
        return exc.code
