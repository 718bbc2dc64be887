"""`fair-forge evaluate`: run an evaluation locally from a request file.

`evaluate` reads the same JSON as `POST /run` — connector, config and either `datasets` or
`traces` (`{"format", "items"}`) with `references` and an optional `task_key`, imported by
`fair_forge_core.importers.datasets_from_traces`, whose warnings are printed and come first
in the result's `warnings` — builds the judge from `connector` under the same allowlist
and key rules as the service (`fair_forge_core.connectors`), shows its progress on stderr
(a bar redrawn in place on a terminal; otherwise one plain line such as `judging 120/400`
every few seconds, and the last), and writes the result JSON (to `--out`, else to stdout)
and optionally the HTML report and the outputs CI systems read (`--junit`, `--markdown`,
`--jsonl`, `--csv` and the step summary: `cli.outputs`; the JUnit file is timed with the run's
start and wall-clock seconds). Every output is checked before the
judge runs (the directory exists, a file can be created there, no two outputs name one file). Without `connector.params.api_key`,
the key comes from `LLM_API_KEY` — never for a connector whose endpoint the file chooses.
`FAIR_FORGE_EXTRA_CONNECTORS` extends the allowlist, as for the service.

The judge's cost (`fair_forge_core.judges.usage`): the result's `aggregated_metrics.judge_usage`
holds its tokens and, with a price for its model in `FAIR_FORGE_JUDGE_PRICES`, its cost.
`--max-cost-usd X` stops starting judge calls once the cost reaches X (calls in flight finish);
the turns left are unscored with "the cost cap (--max-cost-usd X) was reached". It needs a
price for the model (else exit 2 naming the flag) and overrides `config.max_cost_usd`.
`--judge-cache DIR` answers judge requests already judged with the same connector, model,
sampling, prompt and messages from the directory DIR, and stores new scored verdicts there
(`fair_forge_core.judges.cache`); without it, `FAIR_FORGE_JUDGE_CACHE` (a directory) is used
when the request says `config.judge_cache: true`.

Tasks (`fair_forge_core.flakiness`): when some task has 2 or more scored attempts, the summary
on stderr counts the stable, flaky and failing tasks and lists the flaky and failing ones with
their pass counts and Clopper–Pearson intervals, computed from the result's per-conversation
metrics whatever `config.task_stability` says (the result JSON stays as the request asked).
When some conversation has a goal, one line counts the goals achieved, not achieved and not
judged (`headline.goal_line`). Under `config.efficiency`, one line gives what the agent spent: each measure's median / p95
per conversation and the cost per successful task (`fair_forge_core.efficiency.efficiency_line`).

`--otel-events FILE` also writes the verdicts as OpenTelemetry `gen_ai.evaluation.result`
events, the OTLP JSON of one logs export request (`fair_forge_core.otel_events`: the convention
version, the events, the linking to the evaluated spans), timed at the evaluation's end; it is
checked before the judge runs, like `--out`. `--otel-export` sends the same events through the
OpenTelemetry SDK's OTLP/HTTP exporter (`fair_forge_core.otel_sdk`), after the outputs are
written and the gates checked; before the judge runs it needs the SDK installed and an endpoint
configured (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`), else exit 2
naming what is missing; an export that fails is exit 3 (the outputs are written).
`--otel-proposed` adds to those events the attributes of open proposals (`otel_events`' module
docstring: evaluator provenance, run grouping), with a random UUID (version 4) of the run as
`test.suite.run.id`; without `--otel-events` or `--otel-export` it is exit 2, before judging.

The result's `run` (`fair_forge_core.run_info`) says when the evaluation started, which tasks it
evaluated (their hash) and its labels: each `--label KEY=VALUE`, and in CI what the CI's environment
says of the run (commit, branch, PR, run URL), never a secret.

Its gates, and its exit code 1, are `fair_forge_core.cli.gates`'s.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from fair_forge_core.cli.batch import batch_options
from fair_forge_core.cli.common import (
    EXIT_EVALUATION_FAILED,
    EXIT_OK,
    EXIT_THRESHOLD,
    CliError,
    display_name,
    json_dump,
    read_json,
    request_of,
    run_evaluation,
    say,
    validation_message,
    write_output,
)
from fair_forge_core.cli.gates import check_gates, check_task_gates
from fair_forge_core.cli.progress import progress_bar
from fair_forge_core.run_info import run_info

if TYPE_CHECKING:
    from fair_forge_core.otel_events import EvaluationEvent
    from fair_forge_core.schemas import TaskStability


def format_usage(usage: Any) -> str:
    """One line of `judge_usage`: model, calls, tokens, cost, the cost cap and the judgements it
    stopped (each count with its unit), cache, cascade."""
    parts = [
        f"{usage.model}, {usage.calls} call(s)",
        f"{usage.input_tokens} input tokens ({usage.cached_input_tokens} cached), {usage.output_tokens} output tokens",
    ]
    if usage.calls_without_usage:
        parts.append(f"{usage.calls_without_usage} call(s) without usage reported")
    parts.append("cost unknown (no price)" if usage.cost_usd is None else f"cost ${usage.cost_usd:.6f}")
    if usage.max_cost_usd is not None:
        parts.append(f"cost cap ${usage.max_cost_usd:g}: {usage.turns_stopped_by_cap} judgement(s) not started")
    if usage.cache_enabled:
        parts.append(f"cache {usage.cache_hits} hit(s), {usage.cache_misses} miss(es)")
    if usage.cascade_settled_offline is not None:
        parts.append(
            f"cascade: {usage.cascade_settled_offline} turn(s) settled offline, "
            f"{usage.cascade_sent_to_llm} sent to the connector"
        )
    return "; ".join(parts)


def stability_lines(stability: TaskStability, adaptive: bool = False) -> list[str]:
    """The tasks in a few lines: `flakiness.summary`, then each flaky and each failing task with
    its passes and its interval (none when no task has 2 scored attempts). When attempts were
    `adaptive`, the summary says that adaptive stopping biases the pass rates and intervals."""
    from fair_forge_core.compare.verdict import level_text
    from fair_forge_core.flakiness import summary, task_name
    from fair_forge_core.headline import ADAPTIVE_LABEL

    if not stability.tasks:
        return []
    level = level_text(stability.ci_level)
    head = summary(stability) + (f" (pass rates and intervals: {ADAPTIVE_LABEL})" if adaptive else "")
    return [head] + [
        f"  {task.label}: {task_name(task, stability)}, {task.passed} of {task.attempts} attempts passed "
        f"({level} interval {task.ci_low:.3f} to {task.ci_high:.3f})"
        for task in stability.tasks
        if task.label != "stable"
    ]


def cmd_evaluate(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from fair_forge_core.cli.outputs import EVALUATE_OUTPUTS

    check_evaluation_outputs(args, EVALUATE_OUTPUTS)
    body = read_json(args.request, "request file", stdin)
    return evaluate_body(args, body, args.request, stdout, stderr)


def with_judge_error(request: Any, path: Path) -> Any:
    """`request` with `config.judge_error` read from `path` (`judge_error.judge_error_of_json`: a
    calibration report or a `JudgeErrorInput`, its source the file's name); exit 2 naming the file."""
    from pydantic import ValidationError

    from fair_forge_core.judge_error_input import judge_error_of_json
    from fair_forge_core.schemas import JudgeErrorInput

    data = read_json(path, "--judge-error file", sys.stdin)
    try:
        error = judge_error_of_json(data, source=path.name)
    except ValidationError as exc:
        raise CliError(validation_message(path, "--judge-error file", exc, JudgeErrorInput), multiline=True) from None
    except ValueError as exc:
        raise CliError(f"--judge-error {display_name(path)}: {exc}") from None
    config = request.config.model_copy(update={"judge_error": error})
    return request.model_copy(update={"config": config})


def check_evaluation_outputs(args: argparse.Namespace, flags: dict[str, str]) -> None:
    """Before any judging (or any agent call, for `run --evaluate`): every output of `flags` can be
    written, and `--otel-export` can work; exit 2 otherwise."""
    from fair_forge_core.cli.outputs import check_outputs

    check_outputs(args, flags)
    if args.otel_proposed and not (args.otel_events or args.otel_export):
        raise CliError(
            "--otel-proposed adds attributes to the OpenTelemetry events: give --otel-events or --otel-export"
        )
    if args.otel_export:
        _check_otel_export()


def evaluate_body(args: argparse.Namespace, body: dict[str, Any], path: Path, stdout: TextIO, stderr: TextIO) -> int:
    """Evaluate a request's JSON `body` (read from `path`, named in messages) under `evaluate`'s
    flags in `args`: the result, the outputs, the summary and the gates (module docstring); the
    exit code. `fair-forge run --evaluate` calls it with the recording."""
    from fair_forge_core.cli.outputs import write_evaluation_outputs

    request, import_warnings = request_of(body, path)
    if args.judge_error is not None:
        request = with_judge_error(request, args.judge_error)
    started, clock = datetime.now(UTC), time.monotonic()  # the JUnit file's timestamp and time
    result = run_evaluation(
        request,
        import_warnings,
        path,
        progress_bar(stderr, args.quiet),
        max_cost_usd=args.max_cost_usd,
        judge_cache=args.judge_cache,
        batch=batch_options(args),
        stderr=stderr,
    )
    timing = (started, time.monotonic() - clock)
    result = result.model_copy(update={"run": run_info(request.datasets, args.label or (), os.environ, started)})

    payload = result.model_dump(mode="json")
    write_output(json_dump(payload), args.out, stdout)
    if args.html is not None:
        from fair_forge_core.report import render_html

        write_output(render_html(result), args.html, stdout)
    events: list[EvaluationEvent] = []
    if args.otel_events or args.otel_export:  # otel_events imported only then
        from fair_forge_core.otel_events import evaluation_events, proposed_run

        # A random id: the run is this one invocation, and two runs of one request are two runs.
        proposed = proposed_run(str(uuid.uuid4()), request.config, request.datasets) if args.otel_proposed else None
        events = evaluation_events(result, request.datasets, proposed=proposed)
    ended = time.time_ns()
    if args.otel_events is not None:
        from fair_forge_core.otel_events import otlp_logs_json

        write_output(json_dump(otlp_logs_json(events, ended)), args.otel_events, stdout)

    from fair_forge_core.flakiness import task_stability

    agg = result.aggregated_metrics
    level = request.config.statistical_mode.ci_level
    written = write_evaluation_outputs(args, result, level, stdout, timing)
    stability = task_stability(result.per_conversation_metrics, level)
    if not args.quiet:
        from fair_forge_core.headline import adaptive_task_lines, goal_line, headline_lines

        goals = goal_line(result.per_conversation_metrics)
        adaptive = [] if agg.adaptive is None else adaptive_task_lines(agg.adaptive)
        lines = [*headline_lines(agg), *adaptive, *stability_lines(stability, agg.adaptive is not None)]
        for line in [*lines, *([goals] if goals else [])]:
            say(stderr, line)
        if agg.judge_usage is not None:
            say(stderr, f"judge: {format_usage(agg.judge_usage)}")
        if agg.judge_consensus is not None:
            from fair_forge_core.report.view import consensus_fact

            say(stderr, f"{consensus_fact(agg.judge_consensus.model_dump())}")
        if agg.efficiency is not None:
            from fair_forge_core.efficiency import efficiency_line

            say(stderr, f"{efficiency_line(agg.efficiency)}")
        for warning in result.warnings:
            say(stderr, f"warning: {warning}")
        for path in (args.out, args.html, args.otel_events, *written):
            if path is not None:
                say(stderr, f"wrote {path}")
    failures = check_gates(args, agg, level, stderr) + check_task_gates(args, stability, stderr, agg.adaptive)
    for failure in failures:
        say(stderr, f"FAILED: {failure}")
    if args.otel_export:
        _export(events, ended, stderr, quiet=args.quiet)
    return EXIT_THRESHOLD if failures else EXIT_OK


def _check_otel_export() -> None:
    """Exit 2 before any judging when `--otel-export` cannot work: no endpoint configured, or no SDK."""
    from fair_forge_core.otel_sdk import ENDPOINT_VARIABLES, OtelSdkMissing, check_sdk, configured_endpoint

    if configured_endpoint() is None:
        raise CliError(
            f"--otel-export: set {' or '.join(reversed(ENDPOINT_VARIABLES))} to the collector's OTLP/HTTP URL"
        )
    try:
        check_sdk()
    except OtelSdkMissing as exc:
        raise CliError(f"--otel-export: {exc}") from None


def _export(events: list[EvaluationEvent], ended: int, stderr: TextIO, *, quiet: bool) -> None:
    """Send the events through the SDK (`otel_sdk.export_events`); a failure is exit 3."""
    from fair_forge_core.otel_sdk import OtelExportFailed, export_events

    try:
        export_events(events, ended)
    except OtelExportFailed as exc:
        raise CliError(f"--otel-export: {exc}", EXIT_EVALUATION_FAILED) from None
    if not quiet:
        say(stderr, f"sent {len(events)} evaluation event(s) through the OpenTelemetry SDK")
