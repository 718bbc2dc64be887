"""What the commands of `fair-forge` share: the exit codes and `CliError`; reading a file
(standard input for `-`) and naming it in messages; a pydantic error as one message naming
the file and every field; writing an output, and checking before any judging that it can
be written; writing log lines and JSON that run no workflow command (`say`, `json_dump`:
`fair_forge_core.safe_text`); and running a request as `evaluate` does (the judges under the service's
allowlist and key rules, the ledger of cost and cache, exit 3 when it cannot run).

Heavy modules (pydantic, LangChain, the judges) are imported inside the functions that need them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from fair_forge_core.cli.startup import end_startup

if TYPE_CHECKING:
    from fair_forge_core.cli.batch import BatchOptions
    from fair_forge_core.cli.progress import ProgressBar
    from fair_forge_core.schemas import EvaluationResult, RunRequest

EXIT_OK, EXIT_THRESHOLD, EXIT_BAD_INPUT, EXIT_EVALUATION_FAILED, EXIT_INCONCLUSIVE = 0, 1, 2, 3, 4
EXIT_REGRESSED = EXIT_THRESHOLD
"""`compare`'s exit code for a `regressed` verdict: a failed gate, like `evaluate`'s."""
EXIT_NOT_TESTED = 5
"""`compare`'s exit code for a `not_tested` verdict, with or without `--require-conclusive`:
no metric could be tested, so nothing was checked — never the 0 of a comparison that was."""
EXIT_UNJOINED = 6
"""`convert`'s exit code when some trace attempts could not be joined to the references (kept
unscored in the request it still writes), unless `--allow-unjoined`: not a gate's 1."""
EXIT_BOUNDED = 7
"""`pull`'s exit code when `--max-pages` or `--max-bytes` stopped it with more to fetch (written)."""
EXIT_STORE_FAILED = 8
"""`pull`'s exit code when the store refused, failed or could not be reached (nothing written)."""


def say(stream: TextIO, line: str) -> None:
    """Write `line`, which may hold values from the data, and a newline to `stream` as one log
    line that runs no workflow command (`safe_text.log_line`: a line break in a value is shown
    as `\\n`, a `::` at the start and any `##[` are broken). Every line the commands write to
    stdout or stderr goes through here (a report printed whole: one call per line)."""
    from fair_forge_core.safe_text import log_line

    stream.write(log_line(line) + "\n")


def say_lines(stream: TextIO, text: str) -> None:
    """`say` for each line of `text` (a report printed whole, its lines split at `\\n`), flushed."""
    for line in text.removesuffix("\n").split("\n"):
        say(stream, line)
    stream.flush()


def json_dump(data: Any) -> str:
    """`data` as the commands write JSON (indented by 2, not ASCII-escaped, a final newline),
    safe to print in a CI log with its value unchanged (`safe_text.json_text`)."""
    import json

    from fair_forge_core.safe_text import json_text

    return json_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


class CliError(Exception):
    """A failure to report as one line on stderr, with its exit code; `multiline` when the
    message's line breaks are its writer's own (`validation_message`: one line per field, each
    escaped), else a line break in it came from a value and is shown as `\\n` (`say`)."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT, *, multiline: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.multiline = multiline


STDIN = Path("-")


def display_name(path: Path) -> str:
    """How messages name a file (standard input is `<stdin>`)."""
    return "<stdin>" if path == STDIN else str(path)


def read_text(path: Path, what: str, stdin: TextIO) -> str:
    """The text of `path` (standard input for `-`); `CliError` naming the file otherwise."""
    try:
        return stdin.read() if path == STDIN else path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {what} {display_name(path)}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CliError(f"{display_name(path)} is not UTF-8 text") from None


def read_json(path: Path, what: str, stdin: TextIO) -> dict[str, Any]:
    """The JSON object in `path` (standard input for `-`); `CliError` naming the file otherwise."""
    from fair_forge_core.schemas import describe_json_error, loads_json

    text = read_text(path, what, stdin)
    try:
        data = loads_json(text)
    except ValueError as exc:
        raise CliError(f"{display_name(path)} is not valid JSON: {describe_json_error(exc)}") from None
    except RecursionError:
        raise CliError(f"{display_name(path)} is nested too deeply") from None
    if not isinstance(data, dict):
        from fair_forge_core.trace_formats import TRACES_NOT_A_REQUEST, looks_like_traces

        # A list given to `evaluate` is most likely the traces `convert` reads.
        hint = f"; {TRACES_NOT_A_REQUEST}" if what == "request file" and looks_like_traces(data) else ""
        raise CliError(f"{display_name(path)} must hold a JSON object, got {type(data).__name__}{hint}")
    return data


def validation_message(path: Path, what: str, error: Any, model: Any) -> str:
    """A pydantic `ValidationError` of validating `model` as 'file: invalid what: field: message',
    every field listed; an unknown key names the nearest accepted one (`schemas.error_message`)."""
    from fair_forge_core.safe_text import log_line
    from fair_forge_core.schemas import error_message, field_path

    details = [
        (field_path(e["loc"]) or "(top level)", error_message(model, e)) for e in error.errors(include_input=False)
    ]
    # One message, one line per field: a line break inside a key or a message (from the data)
    # is shown as `\n`, never a line of its own.
    details = [(log_line(name), log_line(message)) for name, message in details]
    first_field, first_message = details[0]
    lines = [f"{display_name(path)}: invalid {what}: {first_field}: {first_message}"]
    if len(details) > 1:
        lines += [f"  {name}: {message}" for name, message in details[1:20]]
        if len(details) > 20:
            lines.append(f"  … and {len(details) - 20} more")
    return "\n".join(lines)


def write_output(text: str, destination: Path | None, stdout: TextIO) -> None:
    """Write `text` to `destination`, or to `stdout` (flushed) when it is None; `CliError`
    naming the file when it cannot be written. The file is replaced whole, as UTF-8."""
    if destination is None:
        stdout.write(text)
        stdout.flush()
        return
    try:
        destination.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {destination}: {exc.strerror or exc}") from None


def check_writable(destination: Path | None, flag: str) -> None:
    """`CliError` naming `flag` unless `destination` can be written: its directory exists
    and a file can be created there (or, when it exists, opened for writing). Called before
    any judging, so that a typo never costs an evaluation. Leaves nothing behind."""
    if destination is None:
        return
    where = f"{flag} {destination}"
    if destination.is_dir():
        raise CliError(f"{where}: is a directory")
    parent = destination.parent
    if not parent.is_dir():
        problem = "is not a directory" if parent.exists() else "does not exist"
        raise CliError(f"{where}: the directory {parent} {problem}")
    try:
        if destination.exists():
            with destination.open("ab"):  # appending nothing changes nothing
                pass
        else:
            with destination.open("xb"):
                pass
            destination.unlink()
    except OSError as exc:
        raise CliError(f"{where}: cannot write there: {exc.strerror or exc}") from None


def _judge_source() -> Any:
    """The CLI's `plan.JudgeSource`: the operator's environment as the service reads it
    (`JudgeEnvironment`), the server's key from `LLM_API_KEY`, and loopback endpoints allowed
    (a model server on this machine is a normal judge for a local run)."""
    from fair_forge_core import connectors
    from fair_forge_core.connectors.environment import JudgeEnvironment, SettingsError
    from fair_forge_core.plan import JudgeSource

    try:
        environment = JudgeEnvironment.read()
    except SettingsError as exc:
        raise CliError(str(exc)) from None
    return JudgeSource(
        extra_connectors=environment.extra_connectors,
        policy=environment.endpoint_policy(also_allowed=connectors.LOOPBACK_NETWORKS),
        server_key=lambda: environment.server_api_key_env,
    )


def judges_of(connector: Any, config: Any, path: Path) -> list[Any]:
    """The judges of a request's `connector` (`plan.build_judges`: the service's allowlist and key
    rules, then the ensemble's check under `config`); exit 2 as `_refusal` words it."""
    from fair_forge_core.plan import PlanError, build_judges

    source = _judge_source()
    try:
        return build_judges(connector, config, source)
    except PlanError as exc:
        raise _refusal(exc, connector, source, path) from None


def _refusal(exc: Any, connector: Any, source: Any, path: Path) -> CliError:
    """A `plan.PlanError` as the CLI words it (exit 2): the file, the field (`connector`, or
    `connector[i]` in an ensemble), the allowed class paths for one that is not allowed; a cap's
    error as it is (it names the flag or the field). No secret of the request or the server."""
    from fair_forge_core import connectors
    from fair_forge_core.connectors.environment import JudgeEnvironment
    from fair_forge_core.redact import redact

    if exc.kind == "cap":
        return CliError(str(exc))
    specs = connector if isinstance(connector, list) else [connector]
    secrets = [value for spec in specs for value in connectors.secret_values(spec.params)]
    secrets.append(JudgeEnvironment.read().server_api_key_env or "")
    message = redact(str(exc.cause), secrets)
    if exc.kind == "connector_not_allowed":
        allowed = ", ".join(sorted(set(connectors.allowed_connectors(source.extra_connectors).values())))
        return CliError(f"{display_name(path)}: {exc.where}.class_path: {message}; allowed: {allowed}")
    if exc.kind == "connector":
        return CliError(f"{display_name(path)}: {exc.where}: {connectors.REFUSAL_PREFIX}{message}")
    return CliError(f"{display_name(path)}: {exc.field}: {message}")


def request_of(body: dict[str, Any], path: Path) -> tuple[RunRequest, list[str]]:
    """The validated request of a request file's JSON, and the warnings of importing its traces.

    A body with `traces` is `POST /run`'s traces form (`TracesRunRequest`): the traces are
    read by `importers.datasets_from_traces` and joined with `references` (an attempt that
    cannot be joined is an unscored conversation with its cause; none joined is exit 2); its
    warnings are returned (all of them) to come first in the result's. A `TraceError` names the file and
    the field as the request file spells it (`traces.items[2].messages[5]…`).
    """
    from pydantic import ValidationError

    import fair_forge_core.checks  # noqa: F401  (loads the checks, plug-ins included, that validate config.checks)
    from fair_forge_core.schemas import RunRequest, TracesRunRequest
    from fair_forge_core.trace_formats import TRACES_NOT_A_REQUEST, looks_like_traces

    if looks_like_traces(body):
        raise CliError(f"{display_name(path)}: {TRACES_NOT_A_REQUEST}")
    if "traces" not in body:
        try:
            return RunRequest.model_validate(body), []
        except ValidationError as exc:
            raise CliError(validation_message(path, "request", exc, RunRequest), multiline=True) from None
    if "datasets" in body:
        raise CliError(f"{display_name(path)}: send datasets or traces, not both")
    try:
        traced = TracesRunRequest.model_validate(body)
    except ValidationError as exc:
        raise CliError(validation_message(path, "traces request", exc, TracesRunRequest), multiline=True) from None

    from fair_forge_core.importers import TraceError, datasets_from_traces, request_field, unjoined_causes

    try:
        datasets, warnings, _ = datasets_from_traces(
            traced.traces.format, traced.traces.items, traced.references, task_key=traced.task_key
        )
    except TraceError as exc:
        raise CliError(f"{display_name(path)}: {request_field(exc.field)}: {exc.problem}") from None
    if len(datasets) == sum(unjoined_causes(datasets).values()):  # none joined: nothing to judge
        from fair_forge_core.safe_text import log_line

        details = "".join(f"\n  {log_line(warning)}" for warning in warnings)
        raise CliError(
            f"{display_name(path)}: no trace matched a task of the references: nothing to evaluate{details}",
            multiline=True,
        )
    expanded = {"connector": body["connector"], "datasets": datasets, "config": body.get("config", {})}
    try:
        return RunRequest.model_validate(expanded), warnings
    except ValidationError as exc:
        raise CliError(validation_message(path, "request (from its traces)", exc, RunRequest), multiline=True) from None


def _plan(
    request: RunRequest,
    import_warnings: list[str],
    path: Path,
    max_cost_usd: float | None,
    judge_cache: Path | None,
) -> Any:
    """The `plan.RunPlan` of a validated request (`plan.plan_run`): its judges, then its ledger —
    prices from `FAIR_FORGE_JUDGE_PRICES`, the cap of `--max-cost-usd` (else
    `config.max_cost_usd`), the cache of `--judge-cache` (else, when the request opts in, of
    `FAIR_FORGE_JUDGE_CACHE`), scoped to the caller's provider key, as the service does without
    an API key. Exit 2 (`_refusal`) for a refused connector or ensemble, a cap without a price or
    an output bound, and an unusable cache location."""
    from fair_forge_core.connectors.environment import JudgeEnvironment, SettingsError
    from fair_forge_core.judges.cache import DirectoryCache, JudgeCache, open_local_cache
    from fair_forge_core.plan import PlanError, plan_run

    try:
        environment = JudgeEnvironment.read()
    except SettingsError as exc:
        raise CliError(str(exc)) from None
    cache: JudgeCache | None = None
    if judge_cache is not None:
        if judge_cache.exists() and not judge_cache.is_dir():
            raise CliError(f"--judge-cache {judge_cache}: is not a directory")
        cache = DirectoryCache(judge_cache)
    elif request.config.judge_cache and environment.judge_cache:
        try:
            cache = open_local_cache(environment.judge_cache)
        except ValueError as exc:
            raise CliError(f"FAIR_FORGE_JUDGE_CACHE: {exc}") from None
    source = _judge_source()
    try:
        plan = plan_run(
            request,
            source,
            import_warnings=import_warnings,
            prices=environment.price_table(),
            cache=cache,
            max_cost_usd=max_cost_usd,
            cap_label="--max-cost-usd",
            cache_refused=lambda warning: warning.replace("config.judge_cache", "the judge cache", 1),
        )
    except PlanError as exc:
        raise _refusal(exc, request.connector, source, path) from None
    if request.config.judge_cache and cache is None:
        plan.ledger_warnings.append(
            "config.judge_cache is true but no judge cache is configured "
            "(--judge-cache or FAIR_FORGE_JUDGE_CACHE): every turn was judged"
        )
    return plan


def evaluation_plan(request: RunRequest, path: Path, *, judge_cache: Path | None = None) -> Any:
    """The `plan.RunPlan` `evaluate` would run `request` with (no cost cap): `fair-forge run
    --until-decided` judges its rounds with it, as they run: exit 2 for `config.judge_batch`
    (and as `evaluate` refuses a judge)."""
    if request.config.judge_batch:
        raise CliError("config.judge_batch: the rounds of --until-decided are judged as they run, not in a batch")
    return _plan(request, [], path, None, judge_cache)


def _batch_request(request: RunRequest) -> RunRequest:
    """`request` with `config.judge_batch` on (so its prices are the batch's); exit 2 naming the
    connector whose provider has no batch API here (`judges.batch.batch_refusal`)."""
    from fair_forge_core.judges.batch import batch_refusal

    for connector in request.connectors:
        refusal = batch_refusal(connector.class_path, connector.params)
        if refusal is not None:
            raise CliError(f"--batch: connector.class_path: {refusal}")
    return request.model_copy(update={"config": request.config.model_copy(update={"judge_batch": True})})


def run_evaluation(
    request: RunRequest,
    import_warnings: list[str],
    path: Path,
    progress: ProgressBar | None,
    *,
    max_cost_usd: float | None = None,
    judge_cache: Path | None = None,
    batch: BatchOptions | None = None,
    stderr: TextIO | None = None,
) -> EvaluationResult:
    """Evaluate a validated request as `evaluate` does (`plan.execute`); exit 3 when it cannot run.
    With `batch`, through the provider's batch API (`cli.batch`, which says on `stderr` what it
    sent and how to resume); exit 2 for a connector without one."""
    from fair_forge_core.evaluate import NoConversationScored, run_sync
    from fair_forge_core.judges.base import RunContext
    from fair_forge_core.judges.batch_api import BatchError
    from fair_forge_core.judges.llm import JudgeProviderRefused
    from fair_forge_core.plan import execute
    from fair_forge_core.redact import redact

    if batch is None and request.config.judge_batch:
        from fair_forge_core.cli.batch import DEFAULT_OPTIONS

        batch = DEFAULT_OPTIONS
    if batch is not None:
        request = _batch_request(request)
    plan = _plan(request, import_warnings, path, max_cost_usd, judge_cache)
    end_startup()  # imported, read and built: what is allocated from here on is the judging's
    try:
        if batch is not None:
            from fair_forge_core.cli.batch import BatchStateError, judged_in_batch

            collect_plan = _plan(request, import_warnings, path, max_cost_usd, judge_cache)
            stream = stderr or sys.stderr
            try:
                result = judged_in_batch(plan, collect_plan, batch, lambda line: say(stream, line))
            except BatchStateError as exc:
                raise CliError(str(exc)) from None
        else:
            result = run_sync(execute(plan, RunContext(on_progress=progress)))
    except (JudgeProviderRefused, NoConversationScored, BatchError) as exc:
        raise CliError(
            f"evaluation failed: {display_name(path)}: {redact(str(exc), sorted(plan.secrets))}",
            EXIT_EVALUATION_FAILED,
        ) from None
    finally:
        if progress is not None:
            progress.finish()
    return result
