"""Fair-Forge in pytest: the `fair_forge` fixture and assertions that fail with the figures.

Registered by the package's `pytest11` entry point (`pip install fair-forge-agentic` is
enough; `-p fair_forge_core.pytest_plugin` loads it from a checkout)::

    from fair_forge_core.pytest_plugin import assert_no_regression, assert_pass_pow_k, assert_readiness

    def test_agent(fair_forge):
        result = fair_forge.evaluate("evals/request.json")
        assert_readiness(result, at_least="functional")
        assert_pass_pow_k(result, lower_bound_at_least=0.5)
        assert_no_regression("evals/baseline.result.json", result)

pytest's own `--junitxml` reports these tests like any other (a failure carries the message).

- `fair_forge.evaluate(request)` evaluates as `fair-forge evaluate` does (the same allowlist,
  key rules, environment and judge cache settings: `cli.common`) and returns the
  `EvaluationResult`. `request` is a request file's path (datasets or traces), a request
  body (a dict), or the datasets alone (a list of `Dataset`s or their dicts); without a
  connector, the offline judge (`ReferenceJudge`) judges. `connector=` and `config=` set
  or replace those of the request. A request the CLI would refuse (exit 2) or that cannot
  run (exit 3) fails the test with the CLI's message.
- A `result` argument is an `EvaluationResult`, a result file's path or its JSON dict
  (`evaluate`'s output, or a `POST /run` response body).
- `assert_readiness(result, at_least=TIER)`: fails unless `aggregated_metrics.readiness` has
  a tier at least `at_least` in the order of `TIER_ORDER`, worst first: needs_improvement,
  inconsistent, functional, reliable (the tiers' own explanations: "not ready", "unreliable in
  production", "works, but not enough for production yet", "ready for production"). A result
  without readiness, without a tier (nothing scored) or with status `insufficient_evidence`
  fails whatever its tier: what was not measured never passes. `sufficient=True` also fails
  a `preliminary` status (fewer than 30 scored conversations or tasks).
- `assert_pass_pow_k(result, lower_bound_at_least=X, at_least=Y)` and `assert_pass_at_k`:
  the figures `fair-forge evaluate`'s gates read (`cli.gates`: per task when readiness is
  decided per task, else over the scored conversations), the lower bound of the two-sided
  interval at the result's `statistical_mode.ci_level` (0.95 when the result does not say),
  the point for `at_least`. A figure that was not measured fails. The message names the figure
  as the gates do (`pass^3` per task, `pass^3 (pooled plug-in)` over conversations).
  `corrected=True` reads the per-task figure corrected for the judge's error instead
  (`aggregated_metrics.judge_corrected`, what `--fail-if-lower-bound 'corrected.pass_pow_k<X'`
  reads: its posterior bound, at the correction's own `ci_level`, which a `level` must equal); a
  result evaluated without `judge_error` fails it, as not measured.
- `assert_no_regression(baseline, candidate)`: `fair_forge_core.compare.compare_sides` of the
  two (each an `EvaluationResult`, a result or request file's path, or a result's dict), the
  orchestration `fair-forge compare` runs (k the results' unless given, the tasks both scored,
  what the two spent when both carry `efficiency`, the seed
  0, `population="attempts"`: is the candidate worse on these tasks, the exact stratified
  test of per-attempt success; `population="tasks"` for the task-level tests); fails when the
  verdict is `regressed`, when it is `not_tested` (too few attempts or tasks for the test:
  nothing was checked), when no task was scored on both sides, under
  `require_conclusive=True` when it is `inconclusive`, and under `require_same_judge=True`
  when the two were judged differently (`compare.judging_differences`). The message is the
  comparison's report as `fair-forge compare` prints it, and the `warning:` lines it prints on
  stderr (the differences in judging, the tasks only one side scored, the unscored
  conversations left out). Returns the `Comparison`.

Every failure is an `AssertionError` whose message names the figure, its value and the
threshold; the helpers' own frames are hidden from pytest's traceback.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

if TYPE_CHECKING:
    from fair_forge_core.schemas import Comparison, EvaluationResult

TIER_ORDER: tuple[str, ...] = ("needs_improvement", "inconsistent", "functional", "reliable")
"""The readiness tiers from worst to best, the order `assert_readiness(at_least=...)` reads."""

ResultLike = Any  # EvaluationResult | str | Path | Mapping[str, Any]


def _cli_failure(exc: Exception) -> BaseException:
    """A `CliError` (bad input, or an evaluation that could not run) as the failure of the test
    (`pytest.fail`'s exception, raised `from None`: the message alone, no traceback)."""
    return pytest.fail.Exception(str(exc), pytrace=False)


def _as_result(result: ResultLike, what: str = "result") -> EvaluationResult:
    """`result` as an `EvaluationResult`: itself, a result file's JSON (`cli.compare.result_of`:
    the same checks and messages as `fair-forge compare`), or the file at a path."""
    __tracebackhide__ = True
    from fair_forge_core.cli.common import CliError, read_json
    from fair_forge_core.cli.compare import result_of
    from fair_forge_core.schemas import EvaluationResult

    if isinstance(result, EvaluationResult):
        return result
    try:
        if isinstance(result, Mapping):
            return result_of(dict(result), Path(f"<{what}>"))
        if isinstance(result, str | Path):
            return result_of(read_json(Path(result), "result file", io.StringIO()), Path(result))
    except CliError as exc:
        raise _cli_failure(exc) from None
    raise TypeError(f"{what} must be an EvaluationResult, a result file's path or its JSON dict, got {type(result)}")


class FairForge:
    """What the `fair_forge` fixture gives: `evaluate` (module docstring)."""

    def evaluate(
        self,
        request: str | Path | Mapping[str, Any] | Sequence[Any],
        *,
        connector: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> EvaluationResult:
        """Evaluate `request` as `fair-forge evaluate` does and return its result (module docstring)."""
        __tracebackhide__ = True
        from fair_forge_core.cli.calibrate import OFFLINE_JUDGE
        from fair_forge_core.cli.common import CliError, read_json, request_of, run_evaluation

        path = Path("<request>")
        try:
            if isinstance(request, str | Path):
                path = Path(request)
                body = read_json(path, "request file", io.StringIO())
            elif isinstance(request, Mapping):
                body = dict(request)
            else:
                body = {"datasets": [_as_json(dataset) for dataset in request]}
            body.setdefault("connector", OFFLINE_JUDGE)
            if connector is not None:
                body["connector"] = connector
            if config is not None:
                body["config"] = dict(config)
            validated, import_warnings = request_of(body, path)
            return run_evaluation(validated, import_warnings, path, None)
        except CliError as exc:
            raise _cli_failure(exc) from None


def _as_json(dataset: Any) -> Any:
    """A `Dataset` (any pydantic model) as its JSON dict; anything else as it is, for validation to name."""
    dump = getattr(dataset, "model_dump", None)
    return dump(mode="json") if callable(dump) else dataset


@pytest.fixture
def fair_forge() -> FairForge:
    """Evaluate agent conversations in a test: `fair_forge.evaluate(request)` returns the result."""
    return FairForge()


def assert_readiness(result: ResultLike, at_least: str, *, sufficient: bool = False) -> None:
    """Fail unless the result's readiness has a tier of at least `at_least` (module docstring)."""
    __tracebackhide__ = True
    if at_least not in TIER_ORDER:
        raise ValueError(f"at_least must be one of {', '.join(TIER_ORDER)}, got {at_least!r}")
    readiness = _as_result(result).aggregated_metrics.readiness
    if readiness is None:
        raise AssertionError("the result has no readiness (aggregated_metrics.readiness): nothing to assert on")
    shown = f"readiness: {readiness.summary} (tier {readiness.tier}, status {readiness.status})"
    if readiness.tier is None:
        raise AssertionError(f"no tier: nothing was scored, so it is not at least {at_least}; {shown}")
    if readiness.status == "insufficient_evidence":
        raise AssertionError(f"not enough evidence for any tier (too many conversations unscored); {shown}")
    if sufficient and readiness.status != "sufficient":
        raise AssertionError(f"the evidence is {readiness.status}, not sufficient; {shown}")
    if TIER_ORDER.index(readiness.tier) < TIER_ORDER.index(at_least):
        raise AssertionError(
            f"tier {readiness.tier} is below {at_least} (worst to best: {' < '.join(TIER_ORDER)}); {shown}"
        )


def _ci_level(result: EvaluationResult) -> float:
    """The level of the result's intervals: `statistical_mode.ci_level` as the result records it."""
    aggregated = result.aggregated_metrics
    if aggregated.ci_level is not None:
        return aggregated.ci_level
    if result.provenance is not None and isinstance(result.provenance.statistical_mode.get("ci_level"), float):
        return float(result.provenance.statistical_mode["ci_level"])
    return 0.95


def _assert_metric(
    result: ResultLike,
    metric: Literal["pass_at_k", "pass_pow_k"],
    lower_bound_at_least: float | None,
    at_least: float | None,
    level: float | None,
    corrected: bool,
) -> None:
    __tracebackhide__ = True
    from fair_forge_core.cli.gates import GateMetric, gate_figure
    from fair_forge_core.compare.verdict import level_text

    if lower_bound_at_least is None and at_least is None:
        raise ValueError("give lower_bound_at_least, at_least or both")
    evaluated = _as_result(result)
    judged = evaluated.aggregated_metrics.judge_corrected
    if corrected and judged is not None:  # the posterior bound exists at the correction's level only
        if level is not None and level != judged.ci_level:
            raise ValueError(f"the corrected figures' bounds are at {judged.ci_level:g}, not {level:g}")
        level = judged.ci_level
    level = _ci_level(evaluated) if level is None else level
    corrected_metric: GateMetric = "corrected.pass_pow_k" if metric == "pass_pow_k" else "corrected.pass_at_k"
    gated = corrected_metric if corrected else metric
    figure = gate_figure(evaluated.aggregated_metrics, gated, level)
    failures = []
    if at_least is not None:
        if figure.point is None:
            failures.append(f"{figure.label} ({figure.scope}) was not measured: it cannot be at least {at_least:g}")
        elif figure.point < at_least:
            failures.append(
                f"{figure.label} = {figure.point:.4f} ({figure.scope}) is below {at_least:g} by {at_least - figure.point:.4f}"
            )
    if lower_bound_at_least is not None:
        name = figure.bound_label or figure.label  # adaptive attempts: the confidence sequences' bound
        if figure.bound is None:
            failures.append(
                f"the lower bound of {name} ({figure.scope}) was not measured: "
                f"it cannot be at least {lower_bound_at_least:g}"
            )
        elif figure.bound < lower_bound_at_least:
            failures.append(
                f"lower bound of {name} = {figure.bound:.4f} ({figure.bound_method}; {level_text(level)} interval) "
                f"is below {lower_bound_at_least:g} by {lower_bound_at_least - figure.bound:.4f}"
            )
    if failures:
        raise AssertionError("; ".join(failures))


def assert_pass_pow_k(
    result: ResultLike,
    *,
    lower_bound_at_least: float | None = None,
    at_least: float | None = None,
    level: float | None = None,
    corrected: bool = False,
) -> None:
    """Fail when pass^k's lower bound (or its point) is below the threshold (module docstring);
    `corrected=True`: the figure corrected for the judge's error."""
    __tracebackhide__ = True
    _assert_metric(result, "pass_pow_k", lower_bound_at_least, at_least, level, corrected)


def assert_pass_at_k(
    result: ResultLike,
    *,
    lower_bound_at_least: float | None = None,
    at_least: float | None = None,
    level: float | None = None,
    corrected: bool = False,
) -> None:
    """Fail when pass@k's lower bound (or its point) is below the threshold (module docstring);
    `corrected=True`: the figure corrected for the judge's error."""
    __tracebackhide__ = True
    _assert_metric(result, "pass_at_k", lower_bound_at_least, at_least, level, corrected)


def _side(value: ResultLike, what: str, cache: dict[str, EvaluationResult]) -> EvaluationResult:
    """One side of a comparison: a path is read, or evaluated when it is a request file, as
    `fair-forge compare` does (`cli.compare.load_side`)."""
    __tracebackhide__ = True
    from fair_forge_core.cli.common import CliError
    from fair_forge_core.cli.compare import load_side

    if isinstance(value, str | Path):
        try:
            return load_side(Path(value), io.StringIO(), sys.stderr, True, cache)
        except CliError as exc:
            raise _cli_failure(exc) from None
    return _as_result(value, what)


def assert_no_regression(
    baseline: ResultLike,
    candidate: ResultLike,
    *,
    k: int | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    population: Literal["attempts", "tasks"] = "attempts",
    baseline_assistant: str | None = None,
    candidate_assistant: str | None = None,
    require_conclusive: bool = False,
    require_same_judge: bool = False,
) -> Comparison:
    """Fail when the candidate regressed against the baseline, or when nothing could be tested
    (module docstring); return the `Comparison`."""
    __tracebackhide__ = True
    from fair_forge_core.cli.compare import format_comparison, refusal_message
    from fair_forge_core.compare import ComparisonRefused, compare_sides
    from fair_forge_core.compare.sides import side_of_result

    cache: dict[str, EvaluationResult] = {}
    base_result = _side(baseline, "baseline", cache)
    cand_result = _side(candidate, "candidate", cache)
    try:
        compared = compare_sides(
            side_of_result(base_result, baseline_assistant, "baseline"),
            side_of_result(cand_result, candidate_assistant, "candidate"),
            k=k,
            population=population,
            confidence=confidence,
            seed=seed,
            one_evaluation=base_result is cand_result,
            require_same_judge=require_same_judge,
        )
    except ComparisonRefused as exc:
        if exc.kind in ("several_assistants", "no_such_assistant"):  # a bad argument: the CLI's message
            names = {side: (f"<{side}>", f"{side}_assistant") for side in ("baseline", "candidate")}
            raise pytest.fail.Exception(refusal_message(exc, names), pytrace=False) from None
        if exc.kind == "k_differs":
            raise AssertionError(f"{exc}: pass k=") from None
        if exc.kind == "not_judged_alike":
            raise AssertionError(f"{exc}: " + "; ".join(exc.differences)) from None
        raise AssertionError(str(exc)) from None
    comparison = compared.comparison
    report = format_comparison(comparison, _describe(baseline, "baseline"), _describe(candidate, "candidate"))
    report += "".join(f"warning: {warning}\n" for warning in compared.warnings)  # as `compare` prints them
    if comparison.verdict == "regressed":
        raise AssertionError(f"the candidate regressed against the baseline\n{report}")
    if comparison.verdict == "not_tested":
        raise AssertionError(
            f"not tested: {comparison.shared_tasks} shared task(s) are too few for the "
            f"{'attempt-level test' if population == 'attempts' else 'task-level tests'} to show a "
            f"difference, so no regression was ruled out\n{report}"
        )
    if comparison.verdict == "inconclusive" and require_conclusive:
        raise AssertionError(f"inconclusive, and require_conclusive=True\n{report}")
    return comparison


def _describe(value: ResultLike, what: str) -> str:
    return str(value) if isinstance(value, str | Path) else what
