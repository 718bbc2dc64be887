"""`fair-forge` (or `python -m fair_forge_core`): evaluate a request, compare two agents and
render reports, with no AWS and no server.

    fair-forge evaluate request.json [--out result.json] [--html report.html]
        [--fail-under-pass-pow-k X] [--fail-if-lower-bound 'METRIC<X' ...] [--max-unscored N]
        [--allow-unscored] [--max-cost-usd X] [--judge-cache DIR]
    fair-forge compare BASELINE CANDIDATE [--baseline-assistant ID] [--candidate-assistant ID]
        [--confidence 0.95] [--seed 0] [--k K] [--out comparison.json] [--require-conclusive]
        [--require-same-judge]
    fair-forge report result.json [-o report.html]
    fair-forge convert traces.json --from FORMAT --references refs.jsonl [-o request.json]
    fair-forge calibrate LABELLED.jsonl [--connector CONNECTOR.json] [--threshold 0.7] [--out report.json]
    fair-forge --version

A file name of `-` reads the JSON from standard input (`fair-forge evaluate - < request.json`).

`evaluate` reads the same JSON as `POST /run` — connector, config and either `datasets` or
`traces` (`{"format", "items"}`) with `references` and an optional `task_key`, imported by
`fair_forge_core.importers.datasets_from_traces`, whose warnings are printed and come first
in the result's `warnings` — builds the judge from `connector` under the same allowlist
and key rules as the service (`fair_forge_core.connectors`), shows its progress on stderr
(a bar redrawn in place on a terminal; otherwise one plain line such as `judging 120/400`
every few seconds, and the last), and writes the result JSON (to `--out`, else to stdout)
and optionally the HTML report. `--out` and `--html` are checked before the judge runs
(the directory exists, a file can be created there). Without `connector.params.api_key`,
the key comes from `LLM_API_KEY` — never for a connector whose endpoint the file chooses.
`FAIR_FORGE_EXTRA_CONNECTORS` extends the allowlist, as for the service. `report` renders
the HTML report of a saved result (the CLI's output or a `POST /run` response body).

The judge's cost (`fair_forge_core.judges.usage`): the result's `aggregated_metrics.judge_usage`
holds its tokens and, with a price for its model in `FAIR_FORGE_JUDGE_PRICES`, its cost.
`--max-cost-usd X` stops starting judge calls once the cost reaches X (calls in flight finish);
the turns left are unscored with "the cost cap (--max-cost-usd X) was reached". It needs a
price for the model (else exit 2 naming the flag) and overrides `config.max_cost_usd`.
`--judge-cache DIR` answers judge requests already judged with the same connector, model,
sampling, prompt and messages from the directory DIR, and stores new scored verdicts there
(`fair_forge_core.judges.cache`); without it, `FAIR_FORGE_JUDGE_CACHE` (a directory) is used
when the request says `config.judge_cache: true`.

Gates of `evaluate` (each failure printed with the gate, the figure it read and by how much;
all are checked). The figures are the readiness basis's (`aggregated_metrics.readiness.basis`):
per task (τ-bench: attempts of one task are not independent draws) when the conversations have
task ids and some task has k scored attempts, else over scored conversations. A gate whose
figure was not measured fails.

- readiness "insufficient_evidence" (more than `config.max_unscored_share`, default 0.10, of
  the conversations unscored) fails unless `--allow-unscored`;
- `--fail-under-pass-pow-k X`: pass^k is below X (per task: `per_task.pass_pow_k`; over
  conversations: the point estimate, the posterior mean in Bayesian mode);
- `--fail-if-lower-bound METRIC<X` (METRIC `pass_at_k` or `pass_pow_k`, repeatable): the
  lower bound of the two-sided interval at the request's `config.statistical_mode.ci_level`
  (default 0.95) is below X. Per task: the Wilson bound over tasks `per_task` carries. Over
  conversations, Bayesian mode: the credible bound the result carries (`pass_at_k_ci_low`,
  `pass_pow_k_ci_low`); frequentist mode: the Wilson score bound L of the conversation
  success rate c/n (`stats.wilson_interval`) pushed through the metric, which is increasing
  in p: pass^k ≥ L^k and pass@k ≥ 1 − (1 − L)^k;
- `--max-unscored N`: more than N conversations are unscored.

`compare` answers "is the candidate better than the baseline?" with
`fair_forge_core.compare.compare` over the tasks both sides scored. Each side is a result
file (`evaluate`'s output or a `POST /run` response body) or a request file, evaluated
first exactly as `evaluate` does. `--baseline-assistant` / `--candidate-assistant` pick
one assistant's conversations; a file holding several assistants needs one, and the two
sides may then be the same file. k is the results' unless `--k` says otherwise. It prints
a table (per metric: both sides, the difference, its interval, the Holm-adjusted p-value,
whether it is significant), the verdict, the minimum detectable effect ("n/a (no
variation)" when the per-task differences do not vary) and, when inconclusive or not
tested, how many tasks would settle it; tasks only one side scored and unscored
conversations are `warning:` lines on stderr. Below 10 tasks a metric is tested by the
exact sign-flip test; one whose test cannot reach significance with so few tasks is not
tested, and when none could be, the verdict is `not_tested`. Each difference in how the
two sides were judged (their results' `provenance`: judges, prompt, thresholds, floor, k;
`fair_forge_core.compare.judging_differences`) is a `warning:` line, and a refusal (exit 2)
under `--require-same-judge`, which also refuses a side without provenance. `--out`
writes the `Comparison` JSON.

Exit codes: 0 done (every gate met; compare: improved, or no significant change); 1 a
gate of `evaluate` failed, readiness "insufficient_evidence" included (the outputs are written
first), or compare's verdict is
`regressed`; 2 bad input: a message naming the file and the field, or the flag, no stack
trace; 3 the evaluation could not run (the judge provider refused, or no conversation
could be scored); 4 compare's verdict is `inconclusive` under `--require-conclusive`;
5 compare's verdict is `not_tested` (too few shared tasks for any test to reach
significance), always. Messages never contain an API key.

Heavy modules (pydantic, LangChain, numpy, scipy, the judges) are imported by the command
that needs them, so `--help` stays instant.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

if TYPE_CHECKING:
    from fair_forge_core.schemas import AggregatedMetrics, Comparison, EvaluationResult, RunRequest

EXIT_OK, EXIT_THRESHOLD, EXIT_BAD_INPUT, EXIT_EVALUATION_FAILED, EXIT_INCONCLUSIVE = 0, 1, 2, 3, 4
EXIT_REGRESSED = EXIT_THRESHOLD
"""`compare`'s exit code for a `regressed` verdict: a failed gate, like `evaluate`'s."""
EXIT_NOT_TESTED = 5
"""`compare`'s exit code for a `not_tested` verdict, with or without `--require-conclusive`:
no metric could be tested, so nothing was checked — never the 0 of a comparison that was."""

EPILOG = (
    "Exit codes: 0 ok; 1 a gate of evaluate failed (readiness insufficient_evidence included), "
    "or compare's verdict is 'regressed'; 2 bad input; 3 evaluation failed; "
    "4 compare's verdict is 'inconclusive' under --require-conclusive; 5 compare's verdict is 'not_tested'."
)


class CliError(Exception):
    """A failure to report as one line on stderr, with its exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


class ProgressBar:
    """Progress of the judge on a stream, called as `on_progress(done, total)`.

    Interactive (a terminal): a one-line text bar redrawn in place with a carriage return,
    redraws throttled to `min_interval_s` except the last, and `finish()` ends the line.
    Not interactive (a log, a pipe): no carriage return; one plain line `<label> done/total`
    at the first call, then at most one every `plain_interval_s` seconds, and always the
    line of `done == total`.
    """

    def __init__(
        self,
        stream: TextIO,
        label: str = "judging",
        width: int = 28,
        min_interval_s: float = 0.1,
        *,
        interactive: bool = True,
        plain_interval_s: float = 5.0,
    ) -> None:
        self.stream, self.label, self.width, self.min_interval_s = stream, label, width, min_interval_s
        self.interactive, self.plain_interval_s = interactive, plain_interval_s
        self._last_draw: float | None = None
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        interval = self.min_interval_s if self.interactive else self.plain_interval_s
        if done < total and self._last_draw is not None and now - self._last_draw < interval:
            return
        self._last_draw = now
        if not self.interactive:
            self.stream.write(f"{self.label} {done}/{total}\n")
            self.stream.flush()
            return
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


def is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal (False for a closed stream or one without `isatty`)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


# --------------------------------------------------------------------------- arguments


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def _positive_number(text: str) -> float:
    """A finite number above 0."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def _threshold(text: str) -> float:
    """A number in [0, 1] (a rate's threshold); argparse names the flag in its error."""
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _confidence(text: str) -> float:
    """A number strictly between 0 and 1."""
    value = _number(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {text}")
    return value


def _integer(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    return _integer(text, 0)


def _positive_int(text: str) -> int:
    return _integer(text, 1)


GateMetric = Literal["pass_at_k", "pass_pow_k"]
GATE_METRICS: tuple[GateMetric, ...] = ("pass_at_k", "pass_pow_k")


@dataclass(frozen=True)
class LowerBoundGate:
    """`--fail-if-lower-bound METRIC<X`: fail when the lower bound of METRIC is below X."""

    metric: GateMetric
    threshold: float

    def __str__(self) -> str:
        return f"{self.metric}<{self.threshold:g}"


def _lower_bound_gate(text: str) -> LowerBoundGate:
    """`METRIC<X`, METRIC one of `GATE_METRICS`, X in [0, 1]."""
    metric, sep, value = text.partition("<")
    metric = metric.strip()
    if not sep or metric not in GATE_METRICS:
        raise argparse.ArgumentTypeError(
            f"expected METRIC<X with METRIC one of {', '.join(GATE_METRICS)}, got {text!r}"
        )
    threshold = _threshold(value.strip())
    return LowerBoundGate("pass_at_k" if metric == "pass_at_k" else "pass_pow_k", threshold)


def build_parser() -> argparse.ArgumentParser:
    from fair_forge_core.trace_formats import TRACE_FORMATS

    parser = argparse.ArgumentParser(
        prog="fair-forge",
        description=(
            "Evaluate AI-agent conversations (pass@K, pass^K, tool correctness), "
            "compare two agents and render HTML reports."
        ),
        epilog=EPILOG,
    )
    from fair_forge_core import __version__

    # argparse prints it and exits 0 before any command is required.
    parser.add_argument("--version", action="version", version=f"fair-forge {__version__}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="{evaluate,compare,report,convert,calibrate}"
    )

    evaluate = commands.add_parser(
        "evaluate",
        help="run an evaluation from a request file (the body of POST /run)",
        description=(
            "Run an evaluation locally from a request file: the same JSON as the body of POST /run "
            "(datasets, or traces with references)."
        ),
        epilog=EPILOG,
    )
    evaluate.add_argument("request", type=Path, help="request JSON: connector, datasets or traces, config ('-': stdin)")
    evaluate.add_argument("--out", type=Path, help="write the result JSON here (default: stdout)")
    evaluate.add_argument("--html", type=Path, help="also write the HTML report here")
    evaluate.add_argument(
        "--fail-under-pass-pow-k",
        type=_threshold,
        metavar="X",
        help=(
            "exit 1 when pass_pow_k is below X, in [0, 1]: the per-task figure when readiness is per task, "
            "else the aggregate over conversations (the posterior mean in Bayesian mode)"
        ),
    )
    evaluate.add_argument(
        "--fail-if-lower-bound",
        type=_lower_bound_gate,
        action="append",
        default=[],
        metavar="METRIC<X",
        help=(
            "exit 1 when the lower bound of METRIC (pass_at_k or pass_pow_k) is below X "
            "(quote it: 'pass_pow_k<0.5'; repeatable). The bound is two-sided at the request's "
            "statistical_mode.ci_level (default 0.95): when readiness is per task, the Wilson bound over "
            "tasks; else, in Bayesian mode the credible bound the result carries, in frequentist mode the "
            "Wilson bound L of the conversation success rate c/n, as L^k for pass_pow_k and 1-(1-L)^k for pass_at_k"
        ),
    )
    evaluate.add_argument(
        "--max-unscored",
        type=_non_negative_int,
        metavar="N",
        help="exit 1 when more than N conversations are unscored (the judge could not score them)",
    )
    evaluate.add_argument(
        "--max-cost-usd",
        type=_positive_number,
        metavar="X",
        help=(
            "stop starting judge calls once the judge's cost reaches X USD (calls in flight finish; the rest "
            "are unscored); needs the model's price in FAIR_FORGE_JUDGE_PRICES"
        ),
    )
    evaluate.add_argument(
        "--judge-cache",
        type=Path,
        metavar="DIR",
        help="reuse verdicts of identical judge requests stored in DIR, and store new ones there",
    )
    evaluate.add_argument(
        "--allow-unscored",
        action="store_true",
        help=(
            "do not fail when readiness is insufficient_evidence (more than config.max_unscored_share, "
            "default 0.10, of the conversations unscored); --max-unscored still applies"
        ),
    )
    evaluate.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")

    compare = commands.add_parser(
        "compare",
        help="is the candidate better than the baseline? a paired comparison over shared tasks",
        description=(
            "Compare two agents, or two runs of one, over the tasks both attempted: pass@1, pass@k, pass^k "
            "differences with paired-bootstrap intervals, Holm-adjusted p-values and a verdict. BASELINE and "
            "CANDIDATE are result files (evaluate's output or a POST /run response) or request files, "
            "evaluated first as evaluate does. They may be the same file, with two assistants."
        ),
        epilog=(
            "Exit codes: 0 improved, or no significant change; 1 regressed; 2 bad input (and, with "
            "--require-same-judge, sides judged differently); 3 an evaluation failed; 4 inconclusive, with "
            "--require-conclusive; 5 not tested: too few shared tasks for any test to reach significance."
        ),
    )
    compare.add_argument("baseline", type=Path, help="the baseline: a result or request JSON ('-': stdin)")
    compare.add_argument("candidate", type=Path, help="the candidate: a result or request JSON ('-': stdin)")
    compare.add_argument("--baseline-assistant", metavar="ID", help="compare only this assistant's conversations")
    compare.add_argument("--candidate-assistant", metavar="ID", help="compare only this assistant's conversations")
    compare.add_argument(
        "--confidence", type=_confidence, default=0.95, help="confidence level, in (0, 1) (default: 0.95)"
    )
    compare.add_argument("--seed", type=_non_negative_int, default=0, help="the bootstrap's seed (default: 0)")
    compare.add_argument("--k", type=_positive_int, help="k of pass@k and pass^k (default: the results' k)")
    compare.add_argument("--out", type=Path, help="write the comparison JSON here")
    compare.add_argument("--require-conclusive", action="store_true", help="exit 4 when the verdict is inconclusive")
    compare.add_argument(
        "--require-same-judge",
        action="store_true",
        help="exit 2 when the two sides were judged differently (judges, prompt, thresholds, floor, k) "
        "or a side has no provenance to check",
    )
    compare.add_argument("--quiet", action="store_true", help="no progress on stderr while evaluating requests")

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

    calibrate = commands.add_parser(
        "calibrate",
        help="how well does the judge agree with human labels? agreement, kappa, TPR/TNR, best threshold",
        description=(
            "Judge human-labelled pairs (query, answer, ground_truth, label pass|fail, optional category) with "
            "the connector, exactly as POST /run judges a turn, and report agreement, Cohen's kappa, TPR and TNR "
            "with Wilson 95% intervals, the false-pass rate, the confusion table, agreement per category and the "
            "threshold that maximises agreement. LABELLED is JSON Lines (one pair a line), a JSON list of pairs, "
            "or the body of POST /calibrate (its connector and config apply unless the flags say otherwise)."
        ),
        epilog="Exit codes: 0 done; 2 bad input; 3 the judge could not run (provider refused, or no pair scored).",
    )
    calibrate.add_argument("labelled", type=Path, metavar="LABELLED", help="the labelled pairs ('-': stdin)")
    calibrate.add_argument(
        "--connector",
        type=Path,
        metavar="CONNECTOR.json",
        help="JSON of the judge: {class_path, params}, or any file with a 'connector' (a /run request) "
        "(default: the offline judge fair_forge_core.judges.ReferenceJudge)",
    )
    calibrate.add_argument(
        "--threshold",
        type=_threshold,
        metavar="X",
        help="the judge passes a pair when its score >= this, in [0, 1] (default: 0.7)",
    )
    calibrate.add_argument(
        "--max-concurrency", type=_positive_int, metavar="N", help="judge calls in flight (default: 8)"
    )
    calibrate.add_argument("--out", type=Path, metavar="report.json", help="also write the report JSON here")
    calibrate.add_argument("--quiet", action="store_true", help="no progress or warnings on stderr")
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
        from fair_forge_core.trace_formats import TRACES_NOT_A_REQUEST, looks_like_traces

        # A list given to `evaluate` is most likely the traces `convert` reads.
        hint = f"; {TRACES_NOT_A_REQUEST}" if what == "request file" and looks_like_traces(data) else ""
        raise CliError(f"{_name(path)} must hold a JSON object, got {type(data).__name__}{hint}")
    return data


def _validation_message(path: Path, what: str, error: Any, model: Any) -> str:
    """A pydantic `ValidationError` of validating `model` as 'file: invalid what: field: message',
    every field listed; an unknown key names the nearest accepted one (`schemas.error_message`)."""
    from fair_forge_core.schemas import error_message, field_path

    details = [
        (field_path(e["loc"]) or "(top level)", error_message(model, e)) for e in error.errors(include_input=False)
    ]
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


def _check_writable(destination: Path | None, flag: str) -> None:
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


def _redacted(message: str, secrets: Sequence[str]) -> str:
    from fair_forge_core.redact import redact

    return redact(message, secrets)


# --------------------------------------------------------------------------- commands


def _build_judge(spec: Any, path: Path, where: str = "connector") -> Any:
    """The judge model of a validated connector (`where` in the request file: `connector`, or
    `connector[i]` in an ensemble), under the service's allowlist and key rules and the
    operator's environment as the service reads it (`JudgeEnvironment`)."""
    from fair_forge_core import connectors
    from fair_forge_core.connectors.environment import JudgeEnvironment, SettingsError

    try:
        environment = JudgeEnvironment.read()
    except SettingsError as exc:
        raise CliError(str(exc)) from None
    params = spec.params
    secrets = [*connectors.secret_values(params), environment.server_api_key_env or ""]
    try:
        return connectors.build_chat_model(
            spec.class_path,
            params,
            extra_connectors=environment.extra_connectors,
            server_key=lambda: environment.server_api_key_env,
            # A model server on this machine is a normal judge for a local run.
            policy=environment.endpoint_policy(also_allowed=connectors.LOOPBACK_NETWORKS),
        )
    except connectors.ConnectorNotAllowed as exc:
        allowed = ", ".join(sorted(set(connectors.allowed_connectors(environment.extra_connectors).values())))
        raise CliError(
            f"{_name(path)}: {where}.class_path: {_redacted(str(exc), secrets)}; allowed: {allowed}"
        ) from None
    except connectors.ConnectorError as exc:
        raise CliError(f"{_name(path)}: {where}: {connectors.REFUSAL_PREFIX}{_redacted(str(exc), secrets)}") from None


def _build_judges(request: RunRequest, path: Path) -> list[Any]:
    """`_build_judge` for each connector of a request, in order (a list's: `connector[i]`);
    exit 2 for an ensemble `judges.panel.check_panel` refuses, naming its field."""
    from fair_forge_core.judges.panel import PanelError, check_panel

    if not isinstance(request.connector, list):
        return [_build_judge(request.connector, path)]
    judges = [_build_judge(spec, path, f"connector[{i}]") for i, spec in enumerate(request.connector)]
    try:
        check_panel([judge.model for judge in judges], request.config)
    except PanelError as exc:
        raise CliError(f"{_name(path)}: {exc.field}: {exc}") from None
    return judges


def _request_of(body: dict[str, Any], path: Path) -> tuple[RunRequest, list[str]]:
    """The validated request of a request file's JSON, and the warnings of importing its traces.

    A body with `traces` is `POST /run`'s traces form (`TracesRunRequest`): the traces are
    read by `importers.datasets_from_traces` and joined with `references`; its warnings are
    returned (all of them) to come first in the result's. A `TraceError` names the file and
    the field as the request file spells it (`traces.items[2].messages[5]…`).
    """
    from pydantic import ValidationError

    from fair_forge_core.schemas import RunRequest, TracesRunRequest
    from fair_forge_core.trace_formats import TRACES_NOT_A_REQUEST, looks_like_traces

    if looks_like_traces(body):
        raise CliError(f"{_name(path)}: {TRACES_NOT_A_REQUEST}")
    if "traces" not in body:
        try:
            return RunRequest.model_validate(body), []
        except ValidationError as exc:
            raise CliError(_validation_message(path, "request", exc, RunRequest)) from None
    if "datasets" in body:
        raise CliError(f"{_name(path)}: send datasets or traces, not both")
    try:
        traced = TracesRunRequest.model_validate(body)
    except ValidationError as exc:
        raise CliError(_validation_message(path, "traces request", exc, TracesRunRequest)) from None

    from fair_forge_core.importers import TraceError, datasets_from_traces, request_field

    try:
        datasets, warnings, _ = datasets_from_traces(
            traced.traces.format, traced.traces.items, traced.references, task_key=traced.task_key
        )
    except TraceError as exc:
        raise CliError(f"{_name(path)}: {request_field(exc.field)}: {exc.problem}") from None
    if not datasets:
        details = "".join(f"\n  {warning}" for warning in warnings)
        raise CliError(f"{_name(path)}: no trace matched a task of the references: nothing to evaluate{details}")
    expanded = {"connector": body["connector"], "datasets": datasets, "config": body.get("config", {})}
    try:
        return RunRequest.model_validate(expanded), warnings
    except ValidationError as exc:
        raise CliError(_validation_message(path, "request (from its traces)", exc, RunRequest)) from None


def _ledger(
    request: RunRequest, models: list[Any], max_cost_usd: float | None, judge_cache: Path | None
) -> tuple[Any, list[str]]:
    """The judge's `JudgeLedger` and the warnings to add: prices from `FAIR_FORGE_JUDGE_PRICES`,
    the cap of `--max-cost-usd` (else `config.max_cost_usd`), the cache of `--judge-cache` (else,
    when the request opts in, of `FAIR_FORGE_JUDGE_CACHE`), scoped to the caller's provider key
    (`judges.cache.cache_use`, as the service does without an API key) and left out, with a
    warning, for a connector whose parameters could change what the judge receives unseen by
    the key. `CliError` (exit 2) for a cap without a price or an output bound, naming the flag or
    the field, and for an unusable cache location."""
    from fair_forge_core.connectors.environment import JudgeEnvironment, SettingsError
    from fair_forge_core.judges.cache import DirectoryCache, JudgeCache, cache_use, open_local_cache
    from fair_forge_core.judges.usage import CapNotEnforceable, JudgeLedger

    try:
        environment = JudgeEnvironment.read()
    except SettingsError as exc:
        raise CliError(str(exc)) from None
    cache: JudgeCache | None = None
    warnings: list[str] = []
    if judge_cache is not None:
        if judge_cache.exists() and not judge_cache.is_dir():
            raise CliError(f"--judge-cache {judge_cache}: is not a directory")
        cache = DirectoryCache(judge_cache)
    elif request.config.judge_cache and environment.judge_cache:
        try:
            cache = open_local_cache(environment.judge_cache)
        except ValueError as exc:
            raise CliError(f"FAIR_FORGE_JUDGE_CACHE: {exc}") from None
    scope, refused = cache_use(request.connectors)
    if cache is not None and refused is not None:
        cache = None
        warnings.append(refused.replace("config.judge_cache", "the judge cache", 1))
    try:
        ledger = JudgeLedger.for_models(
            models,
            request.config,
            prices=environment.price_table(),
            cache=cache,
            max_cost_usd=max_cost_usd,
            cap_label="--max-cost-usd",
            cache_scope=scope,
        )
    except CapNotEnforceable as exc:
        raise CliError(str(exc)) from None
    return ledger, warnings


def _run_evaluation(
    request: RunRequest,
    import_warnings: list[str],
    path: Path,
    progress: ProgressBar | None,
    *,
    max_cost_usd: float | None = None,
    judge_cache: Path | None = None,
) -> EvaluationResult:
    """Evaluate a validated request as `evaluate` does; exit 3 when it cannot run."""
    judges = _build_judges(request, path)
    models = [judge.model for judge in judges]
    secrets = sorted(set().union(*(judge.secrets for judge in judges)))
    ledger, ledger_warnings = _ledger(request, models, max_cost_usd, judge_cache)

    from fair_forge_core.evaluate import NoConversationScored, evaluate_sync
    from fair_forge_core.judges.llm import JudgeProviderRefused

    try:
        result = evaluate_sync(request.datasets, models, request.config, on_progress=progress, ledger=ledger)
    except (JudgeProviderRefused, NoConversationScored) as exc:
        raise CliError(
            f"evaluation failed: {_name(path)}: {_redacted(str(exc), secrets)}", EXIT_EVALUATION_FAILED
        ) from None
    finally:
        if progress is not None:
            progress.finish()
    result.warnings[:0] = import_warnings  # what importing the traces decided comes first, as POST /run does
    result.warnings.extend(ledger_warnings)
    if request.config.judge_cache and ledger.cache is None:
        result.warnings.append(
            "config.judge_cache is true but no judge cache is configured "
            "(--judge-cache or FAIR_FORGE_JUDGE_CACHE): every turn was judged"
        )
    return result


def _progress(stderr: TextIO, quiet: bool, label: str = "judging") -> ProgressBar | None:
    return None if quiet else ProgressBar(stderr, label, interactive=is_terminal(stderr))


def lower_bound(aggregated: AggregatedMetrics, metric: GateMetric, level: float) -> float | None:
    """The lower bound `--fail-if-lower-bound` reads: of the two-sided interval at `level`.

    Bayesian mode: the credible bound the result carries (`pass_at_k_ci_low` or
    `pass_pow_k_ci_low`, at the request's `ci_level`, which is `level`). Frequentist mode:
    with L the low end of `stats.wilson_interval(n, c, level)` for the n scored and c fully
    correct conversations, L^k for pass_pow_k and 1 − (1 − L)^k for pass_at_k (both
    increasing in p, so the bound of p gives the metric's). None when nothing was scored.
    """
    from fair_forge_core import stats

    if aggregated.total_conversations == 0:
        return None
    if aggregated.statistical_mode == "bayesian":
        return aggregated.pass_at_k_ci_low if metric == "pass_at_k" else aggregated.pass_pow_k_ci_low
    low, _ = stats.wilson_interval(aggregated.total_conversations, aggregated.fully_correct_conversations, level)
    k = aggregated.k
    return stats.at_least_one_of(low, k) if metric == "pass_at_k" else low**k


def _metric_symbol(metric: GateMetric, k: int) -> str:
    return f"pass@{k}" if metric == "pass_at_k" else f"pass^{k}"


def _level(level: float) -> str:
    return f"{level:.0%}" if round(level * 100, 6).is_integer() else f"{level:g}"


@dataclass(frozen=True)
class GateFigure:
    """What a gate reads of `metric`: the point and its lower bound (None where not measured),
    the figure's name (`pass^3`, `per-task pass^3`), what it is computed over, and how the bound is."""

    point: float | None
    bound: float | None
    label: str
    scope: str
    bound_method: str


def _gate_figure(aggregated: AggregatedMetrics, metric: GateMetric, level: float) -> GateFigure:
    """`metric` as the gates read it: the per-task figures when readiness is decided per task
    (their Wilson bound over tasks), else the figures over scored conversations (`lower_bound`)."""
    k = aggregated.k
    symbol = _metric_symbol(metric, k)
    readiness, per_task = aggregated.readiness, aggregated.per_task
    if readiness is not None and readiness.basis == "per_task" and per_task is not None:
        tasks = f"{per_task.tasks_with_k_attempts} task(s) with {k} or more attempts"
        return GateFigure(
            point=per_task.pass_at_k if metric == "pass_at_k" else per_task.pass_pow_k,
            bound=per_task.pass_at_k_ci_low if metric == "pass_at_k" else per_task.pass_pow_k_ci_low,
            label=f"per-task {symbol}",
            scope=f"τ-bench, {tasks}",
            bound_method=f"{_level(per_task.ci_level or level)} Wilson bound over {tasks}",
        )
    n, c = aggregated.total_conversations, aggregated.fully_correct_conversations
    return GateFigure(
        point=aggregated.pass_at_k if metric == "pass_at_k" else aggregated.pass_pow_k,
        bound=lower_bound(aggregated, metric, level),
        label=symbol,
        scope=f"over {n} scored conversation(s)",
        bound_method=f"{_level(level)} credible bound"
        if aggregated.statistical_mode == "bayesian"
        else f"from the {_level(level)} Wilson bound of {c}/{n} conversations",
    )


def _check_gates(args: argparse.Namespace, aggregated: AggregatedMetrics, level: float, stderr: TextIO) -> list[str]:
    """Every gate's failure as a line (`FAILED: …`, with the gate, the figure it read and by how
    much); the passed gates are printed as `gate met:` lines unless `--quiet`. A gate whose
    figure was not measured (nothing scored, no task with k attempts) fails: what was not
    measured never reads as a pass. Readiness "insufficient_evidence" fails unless
    `--allow-unscored`."""
    failures: list[str] = []
    passed: list[str] = []
    threshold = args.fail_under_pass_pow_k
    if threshold is not None:
        figure = _gate_figure(aggregated, "pass_pow_k", level)
        gate = f"--fail-under-pass-pow-k {threshold:g}"
        line = f"{figure.label} = {figure.point:.4f} ({figure.scope})" if figure.point is not None else ""
        if figure.point is None:
            failures.append(f"{figure.label} ({figure.scope}) was not measured: {gate} cannot be met")
        elif figure.point < threshold:
            failures.append(f"{line} is below {gate} by {threshold - figure.point:.4f}")
        else:
            passed.append(f"{line} ≥ {gate}")
    for lower_gate in args.fail_if_lower_bound:
        figure = _gate_figure(aggregated, lower_gate.metric, level)
        flag = f"--fail-if-lower-bound {lower_gate}"
        line = (
            f"lower bound of {figure.label} = {figure.bound:.4f} ({figure.bound_method})"
            if figure.bound is not None
            else ""
        )
        if figure.bound is None:
            failures.append(
                f"the lower bound of {figure.label} ({figure.scope}) was not measured: {flag} cannot be met"
            )
        elif figure.bound < lower_gate.threshold:
            failures.append(
                f"{line} is below {lower_gate.threshold:g} by {lower_gate.threshold - figure.bound:.4f} ({flag})"
            )
        else:
            passed.append(f"{line} ≥ {lower_gate.threshold:g} ({flag})")
    unscored = aggregated.unscored_conversations
    if args.max_unscored is not None:
        if unscored > args.max_unscored:
            failures.append(
                f"{unscored} conversation(s) unscored, more than --max-unscored {args.max_unscored} "
                f"by {unscored - args.max_unscored}"
            )
        else:
            passed.append(f"{unscored} conversation(s) unscored, at most --max-unscored {args.max_unscored}")
    readiness = aggregated.readiness
    if readiness is not None and readiness.status == "insufficient_evidence":
        if args.allow_unscored:
            passed.append(
                f"readiness is insufficient_evidence ({unscored} conversation(s) unscored), allowed by --allow-unscored"
            )
        else:
            failures.append(
                f"not enough evidence: {unscored} of {readiness.total} conversation(s) unscored, more than "
                "config.max_unscored_share allows (pass --allow-unscored to accept a result with unscored data)"
            )
    if not args.quiet:
        for line in passed:
            stderr.write(f"gate met: {line}\n")
    return failures


def format_usage(usage: Any) -> str:
    """One line of `judge_usage`: model, calls, tokens, cost, cache, cascade."""
    parts = [
        f"{usage.model}, {usage.calls} call(s)",
        f"{usage.input_tokens} input tokens ({usage.cached_input_tokens} cached), {usage.output_tokens} output tokens",
    ]
    if usage.calls_without_usage:
        parts.append(f"{usage.calls_without_usage} call(s) without usage reported")
    parts.append("cost unknown (no price)" if usage.cost_usd is None else f"cost ${usage.cost_usd:.6f}")
    if usage.cache_enabled:
        parts.append(f"cache {usage.cache_hits} hit(s), {usage.cache_misses} miss(es)")
    if usage.cascade_settled_offline is not None:
        parts.append(
            f"cascade: {usage.cascade_settled_offline} turn(s) settled offline, "
            f"{usage.cascade_sent_to_llm} sent to the connector"
        )
    return "; ".join(parts)


def cmd_evaluate(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    _check_writable(args.out, "--out")
    _check_writable(args.html, "--html")
    if args.out is not None and args.html is not None and args.out.resolve() == args.html.resolve():
        raise CliError(f"--out and --html name the same file: {args.out}")
    body = _read_json(args.request, "request file", stdin)
    request, import_warnings = _request_of(body, args.request)
    result = _run_evaluation(
        request,
        import_warnings,
        args.request,
        _progress(stderr, args.quiet),
        max_cost_usd=args.max_cost_usd,
        judge_cache=args.judge_cache,
    )

    payload = result.model_dump(mode="json")
    _write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", args.out, stdout)
    if args.html is not None:
        from fair_forge_core.report import render_html

        _write(render_html(result), args.html, stdout)

    agg = result.aggregated_metrics
    if not args.quiet:
        from fair_forge_core.headline import headline_lines

        for line in headline_lines(agg):
            stderr.write(f"{line}\n")
        if agg.judge_usage is not None:
            stderr.write(f"judge: {format_usage(agg.judge_usage)}\n")
        if agg.judge_consensus is not None:
            from fair_forge_core.report.view import consensus_fact

            stderr.write(f"{consensus_fact(agg.judge_consensus.model_dump())}\n")
        for warning in result.warnings:
            stderr.write(f"warning: {warning}\n")
        for path in (args.out, args.html):
            if path is not None:
                stderr.write(f"wrote {path}\n")
    failures = _check_gates(args, agg, request.config.statistical_mode.ci_level, stderr)
    for failure in failures:
        stderr.write(f"FAILED: {failure}\n")
    return EXIT_THRESHOLD if failures else EXIT_OK


# --------------------------------------------------------------------------- compare


def _result_of(data: dict[str, Any], path: Path) -> EvaluationResult:
    """A result file's JSON (`evaluate`'s output, or a `POST /run` or job response body:
    `request_id` and `job_id` are ignored) as an `EvaluationResult`; `CliError` naming the
    file and the field otherwise."""
    from pydantic import ValidationError

    from fair_forge_core.schemas import EvaluationResult

    if data.get("success") is False:
        raise CliError(f"{_name(path)}: an error response, not a result: {str(data.get('error'))[:300]}")
    payload = {key: value for key, value in data.items() if key not in ("request_id", "job_id")}
    try:
        return EvaluationResult.model_validate(payload)
    except ValidationError as exc:
        raise CliError(_validation_message(path, "result", exc, EvaluationResult)) from None


def _side_key(path: Path) -> str:
    return "-" if path == STDIN else str(path.resolve())


def _load_side(
    path: Path, stdin: TextIO, stderr: TextIO, quiet: bool, cache: dict[str, EvaluationResult]
) -> EvaluationResult:
    """The result of one side: read from a result file, or evaluated from a request file
    (as `evaluate` does: judge, traces, progress, exit 3 when it cannot run). A file named
    twice is read, and evaluated, once."""
    key = _side_key(path)
    if key in cache:
        return cache[key]
    data = _read_json(path, "file", stdin)
    if "per_conversation_metrics" in data or "success" in data:
        result = _result_of(data, path)
    elif "connector" in data:
        request, import_warnings = _request_of(data, path)
        result = _run_evaluation(request, import_warnings, path, _progress(stderr, quiet, f"judging {_name(path)}"))
        for warning in result.warnings:
            stderr.write(f"warning: {_name(path)}: {warning}\n")
    else:
        raise CliError(
            f"{_name(path)}: neither a result (per_conversation_metrics) "
            "nor a request (connector with datasets or traces)"
        )
    cache[key] = result
    return result


def _outcomes(result: EvaluationResult, path: Path, assistant: str | None, flag: str) -> list[tuple[str, bool | None]]:
    """One side's outcomes, of `assistant` when given; `CliError` naming the file and the
    flag when it has none of that assistant's conversations, or several assistants and no
    choice."""
    from fair_forge_core.compare import outcomes_from_result

    present = sorted({m.assistant_id for m in result.per_conversation_metrics})
    if assistant is None and len(present) > 1:
        raise CliError(
            f"{_name(path)} holds the conversations of {len(present)} assistants ({', '.join(present)}): "
            f"choose one with {flag}"
        )
    try:
        return outcomes_from_result(result, assistant)
    except ValueError as exc:
        raise CliError(f"{_name(path)}: {flag} {assistant}: {exc}") from None


def _listed(items: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", … and {len(items) - limit} more" if len(items) > limit else "")


def _comparison_warnings(comparison: Comparison) -> list[str]:
    """Tasks only one side scored, and unscored conversations by task: never compared."""
    lines = []
    for side, tasks in (("baseline", comparison.baseline_only_tasks), ("candidate", comparison.candidate_only_tasks)):
        if tasks:
            lines.append(f"{len(tasks)} task(s) scored only for the {side}, not compared: {_listed(tasks)}")
    for side, count, by_task in (
        ("baseline", comparison.baseline_unscored_conversations, comparison.baseline_unscored_by_task),
        ("candidate", comparison.candidate_unscored_conversations, comparison.candidate_unscored_by_task),
    ):
        if count:
            per_task = [f"{task} ×{n}" for task, n in by_task.items()]
            lines.append(f"{count} unscored {side} conversation(s) left out: {_listed(per_task)}")
    return lines


def metric_label(metric: str, k: int) -> str:
    """How the table names a metric: pass@k → pass@3, pass^k_unbiased → pass^3 unbiased."""
    return metric.replace("_unbiased", " unbiased").replace("@k", f"@{k}").replace("^k", f"^{k}")


def _value(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _p_value(p: float | None) -> str:
    if p is None:
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _probability(p: float) -> str:
    """`= p` to 3 decimals, or `> 0.999` / `< 0.001` rather than a rounded 1 or 0."""
    return "> 0.999" if p > 0.999 else "< 0.001" if p < 0.001 else f"= {p:.3f}"


def _detectable(metric: Any) -> str | None:
    """A metric's minimum detectable effect as printed: `±0.244`, `n/a (no variation)` when
    its per-task differences do not vary (standard error exactly 0), None when it has none
    (fewer than two tasks)."""
    if metric.minimum_detectable_effect is not None:
        return f"±{metric.minimum_detectable_effect:.3f}"
    return "n/a (no variation)" if metric.standard_error == 0.0 else None


def format_comparison(comparison: Comparison, baseline: str, candidate: str) -> str:
    """The readable report `compare` prints: a header, one table row per metric (values to
    3 decimals, p-values to 3 or `<0.001`, `—` for none), the metrics' notes, the verdict
    and why, the minimum detectable effect (`n/a (no variation)` without variation), the
    tasks that would settle an inconclusive or untested verdict, the metrics the exact
    sign-flip test decided, McNemar's test when it ran, and P(candidate better)
    (`> 0.999` / `< 0.001` at the ends)."""
    from fair_forge_core.compare import MIN_BOOTSTRAP_TASKS

    level = _level(comparison.confidence)
    lines = [
        f"baseline:  {baseline} — {comparison.baseline_successes}/{comparison.baseline_attempts} "
        "attempts fully correct on the shared tasks",
        f"candidate: {candidate} — {comparison.candidate_successes}/{comparison.candidate_attempts} "
        "attempts fully correct on the shared tasks",
        f"{comparison.shared_tasks} shared tasks, k = {comparison.k}, confidence {level}, "
        f"{comparison.bootstrap_resamples} bootstrap resamples (seed {comparison.seed})",
        "",
    ]
    header = ("metric", "tasks", "baseline", "candidate", "difference", f"{level} interval", "p (Holm)", "significant")
    rows = [header]
    for m in comparison.metrics:
        interval = "—" if m.ci_low is None or m.ci_high is None else f"[{m.ci_low:+.3f}, {m.ci_high:+.3f}]"
        rows.append(
            (
                metric_label(m.metric, m.k),
                str(m.tasks),
                _value(m.baseline),
                _value(m.candidate),
                _value(m.difference, signed=True),
                interval,
                _p_value(m.p_value_holm),
                "yes" if m.significant else "no",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    lines.append("")
    for m in comparison.metrics:
        if m.note:
            lines.append(f"note: {metric_label(m.metric, m.k)}: {m.note}")

    headline = {
        "improved": "IMPROVED — the candidate is significantly better than the baseline",
        "regressed": "REGRESSED — the candidate is significantly worse than the baseline",
        "inconclusive": "INCONCLUSIVE — no significant difference either way",
        "not_tested": "NOT TESTED — too few shared tasks for any test to show a difference",
    }[comparison.verdict]
    lines.append(f"verdict: {headline}")
    lines.append(f"  {comparison.verdict_explanation}")
    detectable = [
        f"{metric_label(m.metric, m.k)} {shown}" for m in comparison.metrics if (shown := _detectable(m)) is not None
    ]
    if detectable:
        lines.append(f"minimum detectable effect (80% power, {level}): {', '.join(detectable)}")
    if comparison.verdict in ("inconclusive", "not_tested"):
        needed = [
            f"{metric_label(m.metric, m.k)} {m.tasks_needed} (difference {m.difference:+.3f})"
            for m in comparison.metrics
            if m.tasks_needed is not None and m.difference is not None
        ]
        if needed:
            lines.append(
                f"shared tasks needed to settle it (80% power at the observed difference): {', '.join(needed)}"
            )
        else:
            lines.append("shared tasks needed to settle it: none would — no difference was observed")
    exact = [metric_label(m.metric, m.k) for m in comparison.metrics if m.p_value_method == "sign_flip_exact"]
    if exact:
        lines.append(
            f"exact sign-flip test over the per-task differences (fewer than {MIN_BOOTSTRAP_TASKS} tasks): "
            + ", ".join(exact)
        )
    if comparison.mcnemar is not None:
        test = comparison.mcnemar
        lines.append(
            f"McNemar ({test.method}): baseline-only successes b = {test.b}, candidate-only c = {test.c}, "
            f"p = {_p_value(test.p_value)}"
        )
    if comparison.probability_candidate_better is not None:
        a, b = comparison.prior
        lines.append(
            f"P(candidate's per-attempt success rate is higher) {_probability(comparison.probability_candidate_better)} "
            f"(Beta({a:g}, {b:g}) prior)"
        )
    return "\n".join(lines) + "\n"


def cmd_compare(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    _check_writable(args.out, "--out")
    same_file = _side_key(args.baseline) == _side_key(args.candidate)
    if same_file and args.baseline_assistant == args.candidate_assistant:
        raise CliError(
            "BASELINE and CANDIDATE are the same conversations: with one file, "
            "choose two assistants with --baseline-assistant and --candidate-assistant"
        )
    cache: dict[str, EvaluationResult] = {}
    base_result = _load_side(args.baseline, stdin, stderr, args.quiet, cache)
    cand_result = _load_side(args.candidate, stdin, stderr, args.quiet, cache)
    baseline = _outcomes(base_result, args.baseline, args.baseline_assistant, "--baseline-assistant")
    candidate = _outcomes(cand_result, args.candidate, args.candidate_assistant, "--candidate-assistant")
    k = args.k
    if k is None:
        k_base, k_cand = base_result.aggregated_metrics.k, cand_result.aggregated_metrics.k
        if k_base != k_cand:
            raise CliError(f"the baseline's k ({k_base}) and the candidate's k ({k_cand}) differ: choose one with --k")
        k = k_base

    from fair_forge_core.compare import compare, judging_differences

    # One result holding both assistants was judged in one evaluation: alike by construction.
    judging = [] if base_result is cand_result else judging_differences(base_result.provenance, cand_result.provenance)
    for difference in judging:
        stderr.write(f"warning: {difference}\n")
    if judging and args.require_same_judge:
        raise CliError(
            f"--require-same-judge: the baseline and the candidate were not judged alike "
            f"({len(judging)} difference(s), listed above)"
        )
    comparison = compare(baseline, candidate, k=k, confidence=args.confidence, seed=args.seed, judging=judging)
    for warning in _comparison_warnings(comparison):
        stderr.write(f"warning: {warning}\n")
    if comparison.shared_tasks == 0:
        raise CliError("no task was scored on both sides: nothing to compare")

    def describe(path: Path, assistant: str | None) -> str:
        return _name(path) + (f" (assistant {assistant})" if assistant is not None else "")

    stdout.write(
        format_comparison(
            comparison,
            describe(args.baseline, args.baseline_assistant),
            describe(args.candidate, args.candidate_assistant),
        )
    )
    stdout.flush()
    if args.out is not None:
        _write(json.dumps(comparison.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n", args.out, stdout)
        if not args.quiet:
            stderr.write(f"wrote {args.out}\n")
    if comparison.verdict == "regressed":
        return EXIT_REGRESSED
    if comparison.verdict == "not_tested":
        return EXIT_NOT_TESTED
    if comparison.verdict == "inconclusive" and args.require_conclusive:
        return EXIT_INCONCLUSIVE
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
        from fair_forge_core.schemas import EvaluationResult

        raise CliError(_validation_message(args.result, "result", exc, EvaluationResult)) from None
    _write(page, args.out, stdout)
    if args.out is not None:
        stderr.write(f"wrote {args.out}\n")
    return EXIT_OK


def _read_records(path: Path, what: str, stdin: TextIO) -> tuple[Any, list[int] | None]:
    """A JSON document, or JSON Lines (one value a line) as a list with the line number of each
    value (None for a JSON document), for messages to name a record by its line."""
    from fair_forge_core.schemas import describe_json_error, loads_json

    text = _read_text(path, what, stdin)
    try:
        return loads_json(text), None
    except RecursionError:
        raise CliError(f"{_name(path)}: nested too deeply to read") from None
    except ValueError as whole:
        try:
            numbered = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
            return [loads_json(line) for _, line in numbered], [number for number, _ in numbered]
        except (ValueError, RecursionError):
            raise CliError(f"{_name(path)} is neither JSON nor JSON Lines: {describe_json_error(whole)}") from None


def _reference_line(field: str, lines: list[int] | None) -> str:
    """`"line N: "` for a `references[i]…` field of a JSON Lines references file, else `""`."""
    index = field.removeprefix("references[").partition("]")[0]
    if lines is None or not field.startswith("references[") or not index.isdigit() or int(index) >= len(lines):
        return ""
    return f"line {lines[int(index)]}: "


def cmd_convert(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from fair_forge_core.importers import TraceError, datasets_from_traces

    if str(args.traces) == "-" and str(args.references) == "-":
        raise CliError("the traces and the references cannot both be read from stdin ('-')")
    traces_data, _ = _read_records(args.traces, "traces file", stdin)
    references, lines = _read_records(args.references, "references file", stdin)
    if not isinstance(references, list):
        references, lines = [references], None
    try:
        datasets, warnings, trace_count = datasets_from_traces(
            args.source, traces_data, references, task_key=args.task_key
        )
    except TraceError as exc:
        if exc.field == "task_key":
            raise CliError(f"--task-key: {exc.problem}") from None
        if exc.field.startswith("references"):
            raise CliError(f"{_name(args.references)}: {_reference_line(exc.field, lines)}{exc}") from None
        raise CliError(f"{_name(args.traces)}: {exc}") from None
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


# --------------------------------------------------------------------------- calibrate

OFFLINE_JUDGE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}


def _labelled_pairs(path: Path, stdin: TextIO) -> tuple[dict[str, Any], list[int] | None]:
    """The calibration body a LABELLED file gives, and for JSON Lines the line of each pair.

    A JSON list: the pairs. A JSON object with `pairs`: the body of `POST /calibrate`.
    Otherwise JSON Lines, one pair a line (blank lines skipped). `CliError` naming the file,
    and the line, when it is none of these.
    """
    from fair_forge_core.schemas import describe_json_error, loads_json

    text = _read_text(path, "labelled pairs file", stdin)
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
            raise CliError(f"{_name(path)}: line {number} is not valid JSON: {describe_json_error(exc)}") from None
        lines.append(number)
    if not pairs:
        raise CliError(f"{_name(path)}: no labelled pairs")
    return {"pairs": pairs}, lines


def _calibration_request(args: argparse.Namespace, stdin: TextIO) -> tuple[Any, Path]:
    """The validated `CalibrationRequest` of the arguments, and the file that names the judge."""
    from pydantic import ValidationError

    from fair_forge_core.schemas import CalibrationRequest, error_message, field_path

    body, lines = _labelled_pairs(args.labelled, stdin)
    connector_path = args.labelled
    if args.connector is not None:
        connector = _read_json(args.connector, "connector file", stdin)
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
                where = f"{_name(args.connector)}: {field_path(loc)}"
            else:
                where = field_path(loc) or "(top level)"
            problems.append(f"{where}: {error_message(CalibrationRequest, error)}")
        more = "".join(f"\n  {p}" for p in problems[1:20])
        raise CliError(f"{_name(args.labelled)}: invalid labelled pairs: {problems[0]}{more}") from None


def cmd_calibrate(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    """`fair-forge calibrate`: judge the labelled pairs, print `calibration.format_report`,
    write the `CalibrationReport` JSON to `--out`; exit 3 when the judge could not run."""
    _check_writable(args.out, "--out")
    request, connector_path = _calibration_request(args, stdin)
    judge = _build_judge(request.connector, connector_path)

    from fair_forge_core.calibration import NoPairScored, calibrate_sync, format_report
    from fair_forge_core.judges.llm import JudgeProviderRefused

    progress = _progress(stderr, args.quiet)
    try:
        report = calibrate_sync(request.pairs, judge.model, config=request.config, on_progress=progress)
    except (JudgeProviderRefused, NoPairScored) as exc:
        message = _redacted(str(exc), sorted(judge.secrets))
        raise CliError(f"calibration failed: {_name(args.labelled)}: {message}", EXIT_EVALUATION_FAILED) from None
    finally:
        if progress is not None:
            progress.finish()
    stdout.write(format_report(report))
    stdout.flush()
    if args.out is not None:
        _write(json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n", args.out, stdout)
    if not args.quiet:
        for warning in report.warnings:
            stderr.write(f"warning: {warning}\n")
        if args.out is not None:
            stderr.write(f"wrote {args.out}\n")
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
    command = {
        "evaluate": cmd_evaluate,
        "compare": cmd_compare,
        "report": cmd_report,
        "convert": cmd_convert,
        "calibrate": cmd_calibrate,
    }[args.command]
    try:
        return command(args, stdin, stdout, stderr)
    except CliError as exc:
        stderr.write(f"error: {exc}\n")
        return exc.code
