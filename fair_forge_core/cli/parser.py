"""The argument parser of `fair-forge` and the types of its flags' values (each refusal is
argparse's exit 2 naming the flag). Nothing heavy is imported here: `--help` stays instant."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from fair_forge_core.cli.gates import GATE_METRICS, LowerBoundGate
from fair_forge_core.run_info import parse_label

EPILOG = (
    "Exit codes: 0 ok; 1 a gate of evaluate failed (readiness insufficient_evidence included), "
    "or compare's verdict is 'regressed'; 2 bad input; 3 evaluation failed; "
    "4 compare's verdict is 'inconclusive' under --require-conclusive; 5 compare's verdict is 'not_tested'; "
    "6 convert left trace attempts unjoined (kept unscored in the request) without --allow-unjoined."
)


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


def _lower_bound_gate(text: str) -> LowerBoundGate:
    """`METRIC<X`, METRIC one of `GATE_METRICS`, X in [0, 1]."""
    metric, sep, value = text.partition("<")
    metric = metric.strip()
    if not sep or metric not in GATE_METRICS:
        raise argparse.ArgumentTypeError(
            f"expected METRIC<X with METRIC one of {', '.join(GATE_METRICS)}, got {text!r}"
        )
    threshold = _threshold(value.strip())
    return LowerBoundGate(next(m for m in GATE_METRICS if m == metric), threshold)


def add_evaluation_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of `evaluate` but `request` and `--out` (what to write, the gates, the judge's cost
    and cache, `--quiet`): `run --evaluate` takes them too, for the recording."""
    parser.add_argument("--html", type=Path, help="also write the HTML report here")
    parser.add_argument(
        "--junit", type=Path, metavar="FILE", help="also write JUnit XML here: a test case per task (or conversation)"
    )
    parser.add_argument(
        "--markdown",
        type=Path,
        metavar="FILE",
        help="also write a Markdown summary here (appended to $GITHUB_STEP_SUMMARY too when it is set)",
    )
    parser.add_argument("--jsonl", type=Path, metavar="FILE", help="also write one JSON line per turn here")
    parser.add_argument("--csv", type=Path, metavar="FILE", help="also write one CSV row per turn here")
    parser.add_argument(
        "--fail-under-pass-pow-k",
        type=_threshold,
        metavar="X",
        help=(
            "exit 1 when pass_pow_k is below X, in [0, 1]: the per-task figure when readiness is per task, "
            "else the aggregate over conversations (the posterior mean in Bayesian mode)"
        ),
    )
    parser.add_argument(
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
    parser.add_argument(
        "--max-unscored",
        type=_non_negative_int,
        metavar="N",
        help="exit 1 when more than N conversations are unscored (the judge could not score them)",
    )
    parser.add_argument(
        "--max-flaky-tasks",
        type=_non_negative_int,
        metavar="N",
        help=(
            "exit 1 when more than N tasks are flaky (of their 2 or more scored attempts, some but not all "
            "passed); fails when some task has fewer than 2 scored attempts"
        ),
    )
    parser.add_argument(
        "--min-task-pass-rate",
        type=_threshold,
        metavar="X",
        help=(
            "exit 1 when a task with 2 or more scored attempts passed in fewer than X of them, X in [0, 1] "
            "(the tasks are named); fails when some task has fewer than 2 scored attempts"
        ),
    )
    parser.add_argument(
        "--judge-error",
        type=Path,
        metavar="FILE",
        help=(
            "the judge's measured error: the JSON `fair-forge calibrate` wrote for this judge (or a config.judge_error "
            "object); adds aggregated_metrics.judge_corrected, the figures corrected for it (overrides config.judge_error)"
        ),
    )
    parser.add_argument(
        "--max-cost-usd",
        type=_positive_number,
        metavar="X",
        help=(
            "stop starting judge calls once the judge's cost reaches X USD (calls in flight finish; the rest "
            "are unscored); needs the model's price in FAIR_FORGE_JUDGE_PRICES"
        ),
    )
    parser.add_argument(
        "--judge-cache",
        type=Path,
        metavar="DIR",
        help="reuse verdicts of identical judge requests stored in DIR, and store new ones there",
    )
    parser.add_argument(
        "--otel-events",
        type=Path,
        metavar="FILE",
        help=(
            "also write each verdict as an OpenTelemetry gen_ai.evaluation.result event (OTLP JSON logs), "
            "linked to the evaluated spans when the traces were OpenTelemetry spans"
        ),
    )
    parser.add_argument(
        "--otel-export",
        action="store_true",
        help=(
            "also send those events through the OpenTelemetry SDK's OTLP/HTTP exporter, configured by "
            "OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_LOGS_ENDPOINT) and the other OTEL_* variables; "
            "needs opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http"
        ),
    )
    parser.add_argument(
        "--otel-proposed",
        action="store_true",
        help=(
            "add to those events the attributes of open OpenTelemetry proposals (evaluator provenance, "
            "semantic-conventions-genai #359; run grouping, #79): names that may still change; "
            "needs --otel-events or --otel-export"
        ),
    )
    parser.add_argument(
        "--allow-unscored",
        action="store_true",
        help=(
            "do not fail when readiness is insufficient_evidence (more than config.max_unscored_share, "
            "default 0.10, of the conversations unscored); --max-unscored still applies"
        ),
    )
    parser.add_argument(
        "--label",
        type=parse_label,
        action="append",
        metavar="KEY=VALUE",
        help=(
            "a label of this run, recorded in the result's run.labels beside those read from the CI's environment "
            "(GitHub Actions, GitLab CI: commit, branch, PR, run URL), which it overrides (repeatable)"
        ),
    )
    parser.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")


def _futility(text: str) -> float:
    """A number in [0, 1)."""
    value = _number(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1, got {text}")
    return value


def _agent_errors(text: str) -> str:
    if text not in ("failed", "unscored"):
        raise argparse.ArgumentTypeError(f"must be failed or unscored, got {text!r}")
    return text


def add_run_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fair-forge run` (`cli.run`, whose docstring states its rules)."""
    run = commands.add_parser(
        "run",
        help="run your agent on a TASKS file k times (or until decided) and record a request",
        description=(
            "Run an agent on every task of a TASKS file and record each attempt as a conversation of an ordinary "
            "request (the body of POST /run), which evaluate, compare, the Action and the pytest plugin read "
            "unchanged; --evaluate also evaluates it, with evaluate's flags."
        ),
        epilog=EPILOG,
    )
    run.add_argument(
        "tasks", type=Path, metavar="TASKS", help="the TASKS file: {tasks, connector?, config?} ('-': stdin)"
    )
    agent = run.add_mutually_exclusive_group(required=True)
    agent.add_argument(
        "--agent", metavar="SPEC", help='the agent spec: a JSON file, or inline JSON ({"kind": "http", ...})'
    )
    agent.add_argument("--agent-url", metavar="URL", help="shorthand for an http agent at URL")
    run.add_argument(
        "--assistant-id", default="agent", metavar="ID", help="with --agent-url: the assistant_id (default: agent)"
    )
    attempts = run.add_mutually_exclusive_group(required=True)
    attempts.add_argument("--attempts", type=_positive_int, metavar="K", help="K attempts of every task")
    attempts.add_argument(
        "--until-decided",
        metavar="Q",
        help="adaptive attempts until each task is decided: 'pass_pow_k>=T' (the config's k) or 'p>=T' (<= too)",
    )
    run.add_argument(
        "--max-attempts",
        type=_positive_int,
        metavar="N",
        help="with --until-decided: attempts of a task at most (default: 20)",
    )
    run.add_argument(
        "--round-size",
        type=_positive_int,
        metavar="R",
        help="with --until-decided: attempts an open task gets a round (default: 1)",
    )
    run.add_argument(
        "--futility",
        type=_futility,
        metavar="F",
        help="with --until-decided: stop a task undecided once its chance of being decided is at most F (default: 0.01)",
    )
    run.add_argument(
        "--agent-concurrency", type=_positive_int, default=8, metavar="N", help="attempts in flight (default: 8)"
    )
    run.add_argument(
        "--agent-timeout", type=_positive_number, metavar="S", help="seconds per agent call (default: the spec's)"
    )
    run.add_argument(
        "--max-agent-cost-usd",
        type=_positive_number,
        metavar="X",
        help="start no attempt once the agent's reported cost reaches X",
    )
    run.add_argument("--max-total-attempts", type=_positive_int, metavar="N", help="start at most N attempts in all")
    run.add_argument(
        "--agent-errors",
        type=_agent_errors,
        default="failed",
        metavar="failed|unscored",
        help="a failed attempt fails (default) or is unscored",
    )
    run.add_argument("-o", "--out", dest="recording", type=Path, help="write the recording here (default: stdout)")
    run.add_argument("--evaluate", action="store_true", help="also evaluate the recording, with evaluate's flags")
    run.add_argument(
        "--result", dest="out", type=Path, metavar="FILE", help="with --evaluate: the result JSON (default: stdout)"
    )
    add_evaluation_flags(run)


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
        dest="command", required=True, metavar="{evaluate,run,compare,report,view,convert,pull,calibrate}"
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
    add_evaluation_flags(evaluate)
    from fair_forge_core.cli.batch import add_batch_flags

    add_batch_flags(evaluate)
    add_run_parser(commands)

    compare = commands.add_parser(
        "compare",
        help="is the candidate better than the baseline? a paired comparison over shared tasks",
        description=(
            "Compare two agents, or two runs of one, over the tasks both attempted. The verdict asks, by default, "
            "whether the candidate is worse on these tasks (an exact test of per-attempt success stratified by "
            "task) and lists the tasks that changed; the task-level tests (pass@1, pass@k, pass^k differences "
            "with paired-bootstrap intervals, Holm-adjusted) say whether it would generalise. BASELINE and "
            "CANDIDATE are result files (evaluate's output or a POST /run response) or request files, "
            "evaluated first as evaluate does. They may be the same file, with two assistants."
        ),
        epilog=(
            "Exit codes: 0 improved, or no significant change; 1 regressed (or, with --require-judge-robust, "
            "within the judge's error band); 2 bad input (and, with "
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
    compare.add_argument(
        "--population",
        choices=("attempts", "tasks"),
        default="attempts",
        help="which test decides the verdict: attempts, is the candidate worse on these tasks (default); "
        "tasks, would the difference generalise to new tasks",
    )
    compare.add_argument("--seed", type=_non_negative_int, default=0, help="the bootstrap's seed (default: 0)")
    compare.add_argument("--k", type=_positive_int, help="k of pass@k and pass^k (default: the results' k)")
    compare.add_argument("--out", type=Path, help="write the comparison JSON here")
    compare.add_argument(
        "--junit", type=Path, metavar="FILE", help="also write JUnit XML here: a test case per metric and the verdict"
    )
    compare.add_argument(
        "--markdown",
        type=Path,
        metavar="FILE",
        help="also write a Markdown summary here (appended to $GITHUB_STEP_SUMMARY too when it is set)",
    )
    compare.add_argument("--require-conclusive", action="store_true", help="exit 4 when the verdict is inconclusive")
    compare.add_argument(
        "--require-same-judge",
        action="store_true",
        help="exit 2 when the two sides were judged differently (judges, prompt, thresholds, floor, k) "
        "or a side has no provenance to check",
    )
    compare.add_argument(
        "--require-judge-robust",
        action="store_true",
        help="exit 1 when the verdict is within the judge's error band (the comparison corrected for the judges' "
        "measured error disagrees with it), or when that correction was not measured (a side not corrected)",
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
    from fair_forge_core.cli.view import add_view_parser

    add_view_parser(commands)

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
    convert.add_argument(
        "--allow-unjoined",
        action="store_true",
        help="exit 0 when some trace attempts could not be joined to the references "
        "(they stay in the request as unscored conversations; default: exit 6)",
    )

    from fair_forge_core.cli.pull_args import add_pull_parser

    add_pull_parser(commands, _positive_int)

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
