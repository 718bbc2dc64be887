"""`fair-forge compare`: is the candidate better than the baseline?

`fair_forge_core.compare.compare` over the tasks both sides scored. Each side is a result
file (`evaluate`'s output or a `POST /run` response body; told by its `format_version`,
`holds_result`) or a request file, evaluated first exactly as `evaluate` does. `--baseline-assistant` / `--candidate-assistant` pick
one assistant's conversations; a file holding several assistants needs one, and the two
sides may then be the same file. k is the results' unless `--k` says otherwise. The verdict
and the exit code are `--population`'s: `attempts` (default), is the candidate worse on these
tasks (the exact stratified test of per-attempt success), or `tasks`, would it generalise to
new tasks (the task-level tests); both are printed (`cli.compare_text.format_comparison`:
the verdict, the tasks that changed, the task-level table, the minimum detectable effect
and the tasks that would settle it); tasks only one side scored and unscored
conversations are `warning:` lines on stderr. When both sides' conversations carry
`efficiency` (`config.efficiency`), what each spent is compared too, in lines after the
verdict (`compare_efficiency`): it never changes the verdict. Below 10 tasks a metric is tested by the
exact sign-flip test; one whose test cannot reach significance with so few tasks is not
tested, and when none could be, the verdict is `not_tested`. Each difference in how the
two sides were judged (their results' `provenance`: judges, prompt, thresholds, floor, k;
`fair_forge_core.compare.judging_differences`) is a `warning:` line, and a refusal (exit 2)
under `--require-same-judge`, which also refuses a side without provenance. `--out`
writes the `Comparison` JSON; `--junit` and `--markdown` (and the step summary under
`GITHUB_STEP_SUMMARY`) the outputs CI systems read (`cli.outputs`), whatever the verdict.
When both sides' results carry `judge_corrected` (`--judge-error`), the comparison corrected for
the judges' measured error is printed after the verdict (`Comparison.judge_corrected`): whether
the verdict is within the judge's error band, or that it was not measured (one side only); it
never changes the exit code, except under `--require-judge-robust`, which exits 1 when the verdict
is within that band or the correction was not measured (`judge_robustness_problem`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from fair_forge_core.cli.common import (
    EXIT_INCONCLUSIVE,
    EXIT_NOT_TESTED,
    EXIT_OK,
    EXIT_REGRESSED,
    STDIN,
    CliError,
    display_name,
    json_dump,
    read_json,
    request_of,
    run_evaluation,
    say,
    say_lines,
    validation_message,
    write_output,
)
from fair_forge_core.cli.compare_text import format_comparison, metric_label
from fair_forge_core.cli.progress import progress_bar

__all__ = ["cmd_compare", "format_comparison", "metric_label"]

if TYPE_CHECKING:
    from fair_forge_core.compare import ComparisonRefused
    from fair_forge_core.schemas import Comparison, EvaluationResult


def result_of(data: dict[str, Any], path: Path) -> EvaluationResult:
    """A result file's JSON (`evaluate`'s output, or a `POST /run` or job response body:
    `request_id` and `job_id` are ignored) as an `EvaluationResult`; `CliError` naming the
    file and the field otherwise."""
    from pydantic import ValidationError

    from fair_forge_core.schemas import EvaluationResult
    from fair_forge_core.schemas.result import RESULT_FORMAT

    if data.get("success") is False:
        raise CliError(f"{display_name(path)}: an error response, not a result: {str(data.get('error'))[:300]}")
    version = data.get("format_version", RESULT_FORMAT)
    if version != RESULT_FORMAT:
        raise CliError(
            f"{display_name(path)}: a result in format {str(version)[:100]!r}, which this version does not read "
            f"(it reads {RESULT_FORMAT!r}): compare it with the version that wrote it"
        )
    payload = {key: value for key, value in data.items() if key not in ("request_id", "job_id")}
    try:
        return EvaluationResult.model_validate(payload)
    except ValidationError as exc:
        raise CliError(validation_message(path, "result", exc, EvaluationResult), multiline=True) from None


def holds_result(data: dict[str, Any]) -> bool:
    """Whether a side's file holds a result (else it is read as a request).

    A result says so by its `format_version` (docs/response.md#top-level). A response body
    (`success`, true or false) is a result or an error response, which `result_of` refuses. A
    result written before `format_version` existed has none, and is told by the keys every
    result has (`per_conversation_metrics`, `aggregated_metrics`): a request never has either
    (`RunRequest` refuses unknown fields), so keeping those files readable cannot take a
    request for a result."""
    if "format_version" in data or "success" in data:
        return True
    return "per_conversation_metrics" in data or "aggregated_metrics" in data


def _side_key(path: Path) -> str:
    return "-" if path == STDIN else str(path.resolve())


def load_side(
    path: Path, stdin: TextIO, stderr: TextIO, quiet: bool, cache: dict[str, EvaluationResult]
) -> EvaluationResult:
    """The result of one side: read from a result file, or evaluated from a request file
    (as `evaluate` does: judge, traces, progress, exit 3 when it cannot run). A file named
    twice is read, and evaluated, once."""
    key = _side_key(path)
    if key in cache:
        return cache[key]
    data = read_json(path, "file", stdin)
    if holds_result(data):
        result = result_of(data, path)
    elif "connector" in data:
        request, import_warnings = request_of(data, path)
        result = run_evaluation(
            request, import_warnings, path, progress_bar(stderr, quiet, f"judging {display_name(path)}")
        )
        for warning in result.warnings:
            say(stderr, f"warning: {display_name(path)}: {warning}")
    else:
        raise CliError(
            f"{display_name(path)}: neither a result (per_conversation_metrics) "
            "nor a request (connector with datasets or traces)"
        )
    cache[key] = result
    return result


def refusal_message(exc: ComparisonRefused, names: dict[str, tuple[str, str]]) -> str:
    """How `fair-forge compare` (and the pytest plugin, for the choice of assistant) words a
    refusal to choose a side's conversations: naming the side's file and the flag that chooses,
    `names[side]` = (file name, flag); any other refusal as the core says it."""
    if exc.side is None:
        return str(exc)
    name, flag = names[exc.side]
    if exc.kind == "several_assistants":
        return f"{name} {exc}: choose one with {flag}"
    return f"{name}: {flag} {exc.assistant}: {exc}"


def _refusal(exc: ComparisonRefused, names: dict[str, tuple[str, str]]) -> str:
    """A refusal to compare as `fair-forge compare` words it: the choice of a side's assistant
    naming the file and the flag (`refusal_message`), k and judging naming the flag that settles them."""
    if exc.kind == "k_differs":
        return f"{exc}: choose one with --k"
    if exc.kind == "not_judged_alike":
        return f"--require-same-judge: {exc} ({len(exc.differences)} difference(s), listed above)"
    return refusal_message(exc, names)


def judge_robustness_problem(comparison: Comparison) -> str | None:
    """Why `--require-judge-robust` fails, None when it passes: the verdict is within the judge's
    error band (`judge_corrected.within_judge_error`), or the correction was not measured, or
    neither side was corrected (what cannot be checked is not robust). A `not_tested` verdict has
    nothing to reverse (its own exit code, 5, stands)."""
    corrected = comparison.judge_corrected
    if comparison.verdict == "not_tested":
        return None
    if corrected is None:
        return "neither side was corrected for its judge's error (evaluate with --judge-error)"
    if not corrected.measured:
        return f"the judge-corrected comparison was not measured: {corrected.reason}"
    if corrected.within_judge_error:
        return corrected.explanation  # "the observed verdict (…) is within the judge's error band: …"
    return None


def cmd_compare(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from fair_forge_core.cli.outputs import COMPARE_OUTPUTS, check_outputs, write_comparison_outputs

    check_outputs(args, COMPARE_OUTPUTS)
    same_file = _side_key(args.baseline) == _side_key(args.candidate)
    if same_file and args.baseline_assistant == args.candidate_assistant:
        raise CliError(
            "BASELINE and CANDIDATE are the same conversations: with one file, "
            "choose two assistants with --baseline-assistant and --candidate-assistant"
        )
    cache: dict[str, EvaluationResult] = {}
    base_result = load_side(args.baseline, stdin, stderr, args.quiet, cache)
    cand_result = load_side(args.candidate, stdin, stderr, args.quiet, cache)

    from fair_forge_core.compare import ComparisonRefused, compare_sides
    from fair_forge_core.compare.sides import side_of_result

    names = {
        "baseline": (display_name(args.baseline), "--baseline-assistant"),
        "candidate": (display_name(args.candidate), "--candidate-assistant"),
    }
    try:
        compared = compare_sides(
            side_of_result(base_result, args.baseline_assistant, "baseline"),
            side_of_result(cand_result, args.candidate_assistant, "candidate"),
            k=args.k,
            population=args.population,
            confidence=args.confidence,
            seed=args.seed,
            # One result holding both assistants was judged in one evaluation: alike by construction.
            one_evaluation=base_result is cand_result,
            require_same_judge=args.require_same_judge,
        )
    except ComparisonRefused as exc:
        for warning in exc.warnings:
            say(stderr, f"warning: {warning}")
        raise CliError(_refusal(exc, names)) from None
    for warning in compared.warnings:
        say(stderr, f"warning: {warning}")
    comparison = compared.comparison

    def describe(path: Path, assistant: str | None) -> str:
        return display_name(path) + (f" (assistant {assistant})" if assistant is not None else "")

    baseline_name = describe(args.baseline, args.baseline_assistant)
    candidate_name = describe(args.candidate, args.candidate_assistant)
    say_lines(stdout, format_comparison(comparison, baseline_name, candidate_name))
    written = []
    if args.out is not None:
        write_output(json_dump(comparison.model_dump(mode="json")), args.out, stdout)
        written.append(args.out)
    written += write_comparison_outputs(args, comparison, baseline_name, candidate_name, stdout)
    if not args.quiet:
        for path in written:
            say(stderr, f"wrote {path}")
    if args.require_judge_robust and (problem := judge_robustness_problem(comparison)) is not None:
        say(stderr, f"--require-judge-robust: {problem}")
        if comparison.verdict not in ("regressed", "not_tested"):
            return EXIT_REGRESSED
    if comparison.verdict == "regressed":
        return EXIT_REGRESSED
    if comparison.verdict == "not_tested":
        return EXIT_NOT_TESTED
    if comparison.verdict == "inconclusive" and args.require_conclusive:
        return EXIT_INCONCLUSIVE
    return EXIT_OK
