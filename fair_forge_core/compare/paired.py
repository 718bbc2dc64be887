"""`compare`: the paired comparison of two sides, as small named steps — check the arguments,
tally the sides, each metric's per-task values and test, which tests could be significant,
Holm, the verdict (`verdict.decide_verdict`), and the result. The rules are on `compare`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fair_forge_core.compare.attempts import attempt_test, changed_tasks
from fair_forge_core.compare.outcomes import Outcome, Side, outcomes_from_result, per_task_values, tally_side
from fair_forge_core.compare.tests import (
    EQUAL_DIFFERENCES,
    MIN_BOOTSTRAP_TASKS,
    bootstrap_p_value,
    bootstrap_replicates,
    bootstrap_resamples,
    check_prior,
    mcnemar,
    minimum_detectable_effect,
    minimum_tasks,
    paired_standard_error,
    percentile_interval,
    probability_better,
    sign_flip_p_value,
    significance_level,
    smallest_exact_p,
    tasks_needed,
)
from fair_forge_core.compare.verdict import (
    Decision,
    MetricNumbers,
    decide_verdict,
    explain,
    holm_of,
    testable_family,
)
from fair_forge_core.schemas import (
    ComparedMetric,
    Comparison,
    EvaluationResult,
    McNemarTest,
    MetricComparison,
    Population,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

ALL_METRICS: tuple[ComparedMetric, ...] = ("pass@1", "pass@k", "pass^k", "pass@k_unbiased", "pass^k_unbiased")


SideInput = EvaluationResult | Mapping[str, Any] | Iterable[Outcome]
"""One side of `compare`: its outcomes, or a result (an `EvaluationResult` or a result file's JSON)."""


def compare(
    baseline: SideInput,
    candidate: SideInput,
    *,
    k: int = 3,
    population: Population = "attempts",
    confidence: float = 0.95,
    resamples: int | None = None,
    seed: int = 0,
    prior: Sequence[float] = (1.0, 1.0),
    judging: Sequence[str] = (),
) -> Comparison:
    """Is the candidate better than the baseline on the tasks both attempted?

    Each side is its outcomes (`Outcome`s), or a result — an `EvaluationResult` or a result
    file's JSON dict — read by `outcomes_from_result`; a result holding several assistants is a
    ValueError asking for `outcomes_from_result(result, assistant_id)`.

    Two questions, each with its verdict; `population` says which one is `verdict`:

    - `attempts` (the default, a CI gate on a fixed suite): is the candidate worse on THESE
      tasks? The exact stratified test of per-attempt success (`attempts.attempt_test`, one
      test: Holm leaves it alone), in `attempt_test`.
    - `tasks`: would the difference generalise to new tasks? The task-level metrics below,
      Holm-adjusted together, in `task_level_verdict`.

    `changed_tasks` (`attempts.changed_tasks`) lists the tasks whose per-attempt success
    differs, worst first, each with its own exact p.

    Rules of the task-level metrics (α = 1 − confidence):

    - Metrics: pass@1, and at k > 1 also plug-in pass@k, pass^k and unbiased pass@k, pass^k
      (see the package docstring), each averaged per side over its tasks: the shared tasks,
      or for the unbiased ones those with ≥ k scored attempts on both sides (a note, and
      None values, when none has). `difference` is the mean of the per-task differences
      candidate − baseline.
    - Interval: the task-level paired bootstrap (`resamples` replicates, by default
      `bootstrap_resamples` of the shared tasks; seeded by `seed`:
      the same input and seed give the same numbers); the percentile interval, the α/2 and
      1 − α/2 quantiles of the replicates (numpy's linear interpolation).
    - Bootstrap p-value, two-sided, from the replicates D*_b centred on the observed D:
      p = (1 + #{b : |D*_b − D| ≥ |D|}) / (B + 1), B counting the replicates that hold one of
      the metric's tasks. It is 1 when D = 0.
    - The test of a metric: McNemar's (`mcnemar`, exact or chi-square) for pass@1 when every
      shared task has exactly one scored attempt per side, at any number of tasks;
      otherwise the bootstrap p-value when the metric is averaged over ≥
      `MIN_BOOTSTRAP_TASKS` tasks, and the exact sign-flip test over its per-task
      differences (`sign_flip_p_value`, method "sign_flip_exact") when over fewer. Metrics
      whose per-task values coincide on both sides with an earlier metric's (at one attempt
      a task, pass@k and pass^k are pass@1) are the same test: they take its p-value and
      count once in the Holm family.
    - Tested or not: a test's floor is the smallest p-value it can give at its most extreme
      outcome (`smallest_exact_p` of the metric's tasks for the exact tests, 1/(B + 1) for
      the bootstrap). The distinct tests, ranked by floor, are tested as the largest group
      whose size times its largest floor is ≤ α — Holm's first step at best, so each of
      them could be significant. A metric outside it (5 tasks at 95 %: 2/2⁵ = 0.0625 > 0.05;
      6 tasks and five distinct tests: 5·2/2⁶ > 0.05) is not tested: no p-value, and a note
      saying why in numbers. So is a metric no test could run on (no task, or no bootstrap
      resample holding one of its tasks). A test that ran never carries a "not tested" note
      (`verdict.testable_family`).
    - Holm: the tested p-values are adjusted together (`holm_adjust`, `verdict.holm_of`).
    - Verdict: `verdict.decide_verdict`, whose docstring is the rule (what is significant,
      and regressed / improved / inconclusive / not_tested).
    - Standard error of a metric: the sample standard deviation (n − 1) of its per-task
      differences over sqrt(tasks), None under two tasks and exactly 0.0 when the
      differences are all equal (no variation, `paired_standard_error`);
      `minimum_detectable_effect` at 80 % power and level α from it, None when it is None or 0.0.
    - `tasks_needed` (inconclusive and not_tested task-level verdicts only): the shared tasks
      that would detect a true difference of the observed size with 80 % power
      (`tasks_needed`), and never fewer than the fewest tasks at which one of the
      comparison's distinct tests can be significant (`minimum_tasks`), nor than the shared
      tasks + 1. None, with `tasks_needed_reason`, when the difference is 0 ("no difference
      was observed"), under two tasks (no spread between tasks to extrapolate from), or when
      no number of tasks can reach significance at this confidence ("cannot be tested at
      this confidence").
    - `probability_candidate_better`: `probability_better` on the scored attempts of the
      shared tasks pooled per side, with `prior` (a, b); None without shared tasks.
    - `judging`: the lines of `judging_differences`, copied into `judging_differences`.

    ValueError for k < 1, a confidence outside (0, 1), resamples < 1, a negative seed, a
    population other than "attempts" or "tasks" or a prior outside `PRIOR_RANGE`; TypeError
    for a malformed outcome.
    """
    _check_arguments(k, confidence, resamples, seed)
    if population not in ("attempts", "tasks"):
        raise ValueError('population must be "attempts" or "tasks"')
    prior_a, prior_b = check_prior(prior)
    alpha = significance_level(confidence)

    pairing = _pair(_outcomes_of(baseline, "baseline"), _outcomes_of(candidate, "candidate"))
    shared = pairing.shared
    if resamples is None:
        resamples = bootstrap_resamples(len(shared))
    names: tuple[ComparedMetric, ...] = ("pass@1",) if k == 1 else ALL_METRICS
    mcnemar_test: McNemarTest | None = None
    if not shared:
        pairing.notes.append("no task was scored on both sides: nothing to compare")
        metrics = [MetricNumbers(name, 0, notes=["no shared task"]) for name in names]
    else:
        mcnemar_test = _mcnemar_of(pairing)
        metrics = _tested_metrics(pairing, names, k, alpha, resamples, seed, mcnemar_test)

    family, distinct = testable_family(metrics, confidence)
    holm = holm_of(metrics, family)
    decision = decide_verdict(metrics, holm, alpha, tested=bool(family))
    fewest = minimum_tasks(confidence, max(1, distinct), None if mcnemar_test is not None else resamples)
    task_explanation = explain(
        decision.verdict, metrics, holm, decision.lower, decision.higher, confidence, len(shared), k
    )
    attempts = attempt_test(pairing.base.scored, pairing.cand.scored, shared, confidence)
    n_b, c_b = _pooled(pairing.base, shared)
    n_c, c_c = _pooled(pairing.cand, shared)
    by_attempts = population == "attempts"
    return Comparison(
        verdict=attempts.verdict if by_attempts else decision.verdict,
        verdict_explanation=attempts.verdict_explanation if by_attempts else task_explanation,
        population=population,
        attempt_test=attempts,
        task_level_verdict=decision.verdict,
        task_level_explanation=task_explanation,
        changed_tasks=changed_tasks(pairing.base.scored, pairing.cand.scored, shared, confidence),
        confidence=confidence,
        k=k,
        seed=seed,
        bootstrap_resamples=resamples,
        shared_tasks=len(shared),
        baseline_attempts=n_b,
        baseline_successes=c_b,
        candidate_attempts=n_c,
        candidate_successes=c_c,
        metrics=_metric_results(
            metrics, holm, decision, k, confidence, None if fewest is None else max(fewest, len(shared) + 1)
        ),
        mcnemar=mcnemar_test,
        prior=[prior_a, prior_b],
        probability_candidate_better=probability_better(c_b, n_b - c_b, c_c, n_c - c_c, (prior_a, prior_b))
        if shared
        else None,
        baseline_only_tasks=pairing.baseline_only,
        candidate_only_tasks=pairing.candidate_only,
        baseline_unscored_conversations=sum(pairing.base.unscored.values()),
        candidate_unscored_conversations=sum(pairing.cand.unscored.values()),
        baseline_unscored_by_task=dict(sorted(pairing.base.unscored.items())),
        candidate_unscored_by_task=dict(sorted(pairing.cand.unscored.items())),
        notes=pairing.notes,
        judging_differences=list(judging),
    )


def _outcomes_of(side: SideInput, name: str) -> Iterable[Outcome]:
    """One side's outcomes: a result's (`outcomes_from_result`; ValueError naming the side and
    the assistants when it holds several), or the outcomes given."""
    if isinstance(side, EvaluationResult) or (isinstance(side, Mapping) and "per_conversation_metrics" in side):
        outcomes = outcomes_from_result(side)
        owners = (
            {m.assistant_id for m in side.per_conversation_metrics}
            if isinstance(side, EvaluationResult)
            else {m.get("assistant_id") for m in side["per_conversation_metrics"] if isinstance(m, Mapping)}
        )
        if len(owners) > 1:
            raise ValueError(
                f"the {name} result holds the conversations of {len(owners)} assistants "
                f"({', '.join(sorted(map(str, owners)))}): pass outcomes_from_result(result, assistant_id)"
            )
        return outcomes
    if isinstance(side, Mapping):
        raise TypeError(
            f"{name}: a dict must be a result (with 'per_conversation_metrics'); otherwise pass the "
            "(task, is_fully_correct) outcomes, e.g. outcomes_from_result(result)"
        )
    return side


def _check_arguments(k: int, confidence: float, resamples: int | None, seed: int) -> None:
    """`compare`'s ValueErrors for k, confidence, resamples and seed, in that order."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError("k must be an int of at least 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    if resamples is not None and (isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1):
        raise ValueError("resamples must be an int of at least 1")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError("seed must be a non-negative int")


@dataclass
class _Pairing:
    """The two sides tallied and paired: the shared tasks (sorted), the tasks scored on one
    side only (sorted), and the notes on what was left out."""

    base: Side
    cand: Side
    shared: list[str]
    baseline_only: list[str]
    candidate_only: list[str]
    notes: list[str]


def _pair(baseline: Iterable[Outcome], candidate: Iterable[Outcome]) -> _Pairing:
    """Tally each side (the baseline's outcomes first, so its TypeError comes first) and pair
    them: a task is shared when both sides scored it; one note per kind of thing left out."""
    base, cand = tally_side(baseline, "baseline"), tally_side(candidate, "candidate")
    baseline_only = sorted(base.scored.keys() - cand.scored.keys())
    candidate_only = sorted(cand.scored.keys() - base.scored.keys())
    notes: list[str] = []
    if baseline_only:
        notes.append(f"{len(baseline_only)} task(s) scored only for the baseline were not compared")
    if candidate_only:
        notes.append(f"{len(candidate_only)} task(s) scored only for the candidate were not compared")
    for side, tally in (("baseline", base), ("candidate", cand)):
        if tally.unscored:
            notes.append(f"{sum(tally.unscored.values())} unscored {side} conversation(s) left out")
    shared = sorted(base.scored.keys() & cand.scored.keys())
    return _Pairing(base, cand, shared, baseline_only, candidate_only, notes)


def _pooled(side: Side, shared: Sequence[str]) -> tuple[int, int]:
    """(scored attempts, successes) of one side over the shared tasks."""
    attempts = [side.scored[t] for t in shared]
    return sum(n for n, _ in attempts), sum(c for _, c in attempts)


def _mcnemar_of(pairing: _Pairing) -> McNemarTest | None:
    """McNemar's test of pass@1 when every shared task has exactly one scored attempt per
    side (b: baseline right and candidate wrong, c: the reverse), else None."""
    base, cand, shared = pairing.base.scored, pairing.cand.scored, pairing.shared
    if not all(base[t][0] == 1 and cand[t][0] == 1 for t in shared):
        return None
    b = sum(1 for t in shared if base[t][1] == 1 and cand[t][1] == 0)
    c = sum(1 for t in shared if base[t][1] == 0 and cand[t][1] == 1)
    return mcnemar(b, c, len(shared))


def _per_task_arrays(
    pairing: _Pairing, names: Sequence[ComparedMetric], k: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(baseline values, candidate values, eligible): metrics × shared tasks. A task is
    eligible for a metric (1.0, else 0.0) when the metric is defined on both sides (the
    unbiased ones need k scored attempts); an undefined value is 0.0."""
    import numpy as np

    shared = pairing.shared
    values = {
        side: [per_task_values(*tally.scored[task], k) for task in shared]
        for side, tally in (("b", pairing.base), ("c", pairing.cand))
    }
    eligible = np.array(
        [[values["b"][i][m] is not None and values["c"][i][m] is not None for i in range(len(shared))] for m in names],
        dtype=np.float64,
    )
    base_values = np.array([[values["b"][i][m] or 0.0 for i in range(len(shared))] for m in names])
    cand_values = np.array([[values["c"][i][m] or 0.0 for i in range(len(shared))] for m in names])
    return base_values, cand_values, eligible


def _tested_metrics(
    pairing: _Pairing,
    names: Sequence[ComparedMetric],
    k: int,
    alpha: float,
    resamples: int,
    seed: int,
    mcnemar_test: McNemarTest | None,
) -> list[MetricNumbers]:
    """Each metric's numbers and test on the shared tasks (`_metric`, all sharing one set of
    bootstrap draws). A metric whose per-task data (eligibility and both sides' values) are
    byte for byte an earlier metric's is the same test (`same_as`): it takes that test's
    p-value, method and floor. Otherwise pass@1 is tested by `mcnemar_test` when there is one."""
    base_values, cand_values, eligible = _per_task_arrays(pairing, names, k)
    replicates = bootstrap_replicates(cand_values - base_values, eligible, resamples, seed)
    metrics: list[MetricNumbers] = []
    signatures: list[bytes] = []
    for m, name in enumerate(names):
        mask = eligible[m] > 0
        metric = _metric(name, base_values[m][mask], cand_values[m][mask], replicates[:, m], alpha, k)
        # + 0.0 turns −0.0 into 0.0, so equal values have equal bytes.
        signature = mask.tobytes() + (base_values[m] + 0.0).tobytes() + (cand_values[m] + 0.0).tobytes()
        metric.same_as = signatures.index(signature) if signature in signatures else m
        signatures.append(signature)
        if metric.same_as != m:  # the same test as an earlier metric, whatever decided it
            earlier = metrics[metric.same_as]
            metric.p_value, metric.method, metric.floor = earlier.p_value, earlier.method, earlier.floor
        elif name == "pass@1" and mcnemar_test is not None:
            metric.p_value, metric.floor = mcnemar_test.p_value, smallest_exact_p(metric.tasks)
            metric.method = "mcnemar_exact"
        metrics.append(metric)
    return metrics


def _metric_results(
    metrics: Sequence[MetricNumbers],
    holm: Sequence[float | None],
    decision: Decision,
    k: int,
    confidence: float,
    fewest: int | None,
) -> list[MetricComparison]:
    """The `MetricComparison` of each metric; `tasks_needed` (at least `fewest`) or why there is
    none (`_tasks_needed`) only under an inconclusive or not_tested task-level verdict."""
    results = []
    for metric, p_holm, is_significant in zip(metrics, holm, decision.significant, strict=True):
        se = metric.standard_error
        needed, reason = None, None
        if decision.verdict in ("inconclusive", "not_tested") and metric.difference is not None:
            needed, reason = _tasks_needed(metric, confidence, fewest)
        results.append(
            MetricComparison(
                metric=metric.name,
                k=1 if metric.name == "pass@1" else k,
                tasks=metric.tasks,
                baseline=metric.baseline,
                candidate=metric.candidate,
                difference=metric.difference,
                ci_low=metric.ci_low,
                ci_high=metric.ci_high,
                bootstrap_p_value=metric.bootstrap_p,
                p_value=metric.p_value,
                p_value_method=metric.method,
                p_value_holm=p_holm,
                significant=is_significant,
                standard_error=se,
                minimum_detectable_effect=minimum_detectable_effect(se, confidence) if se else None,
                tasks_needed=needed,
                tasks_needed_reason=reason,
                note="; ".join(metric.notes) or None,
            )
        )
    return results


def _tasks_needed(metric: MetricNumbers, confidence: float, fewest: int | None) -> tuple[int | None, str | None]:
    """(tasks needed, None) for a metric with a difference, or (None, why not): no difference
    observed, one task (no standard error), or no number of tasks testable (`fewest` None)."""
    if metric.difference == 0:
        return None, "no difference was observed"
    if fewest is None:
        return None, "cannot be tested at this confidence"
    if metric.standard_error is None:
        return None, (
            f"one shared task: no spread between tasks to extrapolate from "
            f"(at least {fewest} tasks are needed for a test to reach significance)"
        )
    return tasks_needed(metric.tasks, metric.standard_error, metric.difference or 0.0, confidence, minimum=fewest), None


def _metric(
    name: ComparedMetric,
    base_values: NDArray[np.float64],
    cand_values: NDArray[np.float64],
    replicates: NDArray[np.float64],
    alpha: float,
    k: int,
) -> MetricNumbers:
    """One metric from its per-task values on its tasks and its bootstrap replicates."""
    import numpy as np

    tasks = len(base_values)
    if tasks == 0:
        return MetricNumbers(name, 0, notes=[f"no shared task has k = {k} scored attempts on both sides"])
    differences = (cand_values - base_values).tolist()
    difference = math.fsum(differences) / tasks
    if abs(difference) <= EQUAL_DIFFERENCES:  # differences that cancel exactly, up to float residue
        difference = 0.0
    metric = MetricNumbers(
        name,
        tasks,
        baseline=math.fsum(base_values.tolist()) / tasks,
        candidate=math.fsum(cand_values.tolist()) / tasks,
        difference=difference,
    )
    metric.standard_error = paired_standard_error(differences)
    if tasks < MIN_BOOTSTRAP_TASKS:
        metric.p_value, metric.method = sign_flip_p_value(differences), "sign_flip_exact"
        metric.floor = smallest_exact_p(tasks)
    valid = replicates[~np.isnan(replicates)]
    if len(valid) < len(replicates):
        metric.notes.append(
            f"{len(replicates) - len(valid)} bootstrap resample(s) held none of its tasks and were left out"
        )
    if len(valid) == 0:
        if metric.floor is None:
            metric.notes.append("no bootstrap resample held one of its tasks: not tested")
        return metric
    metric.ci_low, metric.ci_high = percentile_interval(valid, alpha)
    metric.bootstrap_p = bootstrap_p_value(valid, difference)
    if tasks >= MIN_BOOTSTRAP_TASKS:
        metric.p_value, metric.method, metric.floor = metric.bootstrap_p, "bootstrap", 1 / (len(valid) + 1)
    return metric
