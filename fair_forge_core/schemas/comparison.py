"""The result of a paired comparison of two agents (`fair_forge_core.compare`), in
`aggregated_metrics.comparison` and `fair-forge compare`'s output (docs/compare.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fair_forge_core.schemas.base import ResultModel
from fair_forge_core.schemas.efficiency import EfficiencyComparison
from fair_forge_core.schemas.json_input import omitted_when_none

ComparedMetric = Literal["pass@1", "pass@k", "pass^k", "pass@k_unbiased", "pass^k_unbiased"]
Verdict = Literal["improved", "regressed", "inconclusive", "not_tested"]
Population = Literal["attempts", "tasks"]
"""Which question decides a comparison's `verdict`: `attempts`, is the candidate worse (or
better) on these tasks (`AttemptTest`, the default); `tasks`, would the difference generalise
to new tasks (the task-level metrics)."""


class MetricComparison(ResultModel):
    """One metric of a paired comparison (`fair_forge_core.compare`): its average over the
    tasks it is defined on for each side, the difference candidate − baseline with a
    paired-bootstrap percentile interval, the p-value the verdict reads and its Holm
    adjustment, and the effect the tasks given can detect. Values are None when no task
    qualifies (`note` says why). A metric is tested when `p_value` is set; otherwise
    `note` says why not (no task, or too few for its test to reach significance, with the
    numbers). `minimum_detectable_effect` is None when `standard_error` is None (fewer than
    two tasks) or exactly 0.0 (the per-task differences do not vary: "n/a (no variation)")."""

    metric: ComparedMetric
    k: int
    tasks: int
    baseline: float | None
    candidate: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    bootstrap_p_value: float | None
    p_value: float | None
    p_value_method: Literal["bootstrap", "mcnemar_exact", "mcnemar_chi2", "sign_flip_exact"] | None
    p_value_holm: float | None
    significant: bool
    standard_error: float | None
    minimum_detectable_effect: float | None
    tasks_needed: int | None = None
    note: str | None = None
    tasks_needed_reason: str | None = omitted_when_none()
    """Why `tasks_needed` is None under an inconclusive or untested task-level verdict: "no
    difference was observed", "one shared task: no spread between tasks to extrapolate from
    (at least N tasks are needed …)", or "cannot be tested at this confidence" (no number of tasks lets the comparison's tests
    reach significance at it)."""


class McNemarTest(ResultModel):
    """McNemar's test on the shared tasks when each side made one scored attempt per task:
    b = baseline right and candidate wrong, c = the reverse. `p_value` is the exact one at any
    size (`method` is always "exact"); the chi-square statistic and p-value are reported beside
    it and never decide."""

    tasks: int
    b: int
    c: int
    exact_p_value: float
    chi2_statistic: float | None
    chi2_p_value: float | None
    method: Literal["exact", "chi2"]
    p_value: float
    difference: float
    standard_error: float


class AttemptTest(ResultModel):
    """The attempt-level test: is the candidate worse (or better) on THESE tasks? The exact test
    of per-attempt success stratified by task, conditional on each task's totals
    (`fair_forge_core.compare.stratified`, docs/compare.md#the-attempt-level-test): `statistic`
    is the candidate's successes over the informative tasks, `expected` its mean under "no
    difference"; `p_value` is two-sided (the doubling rule), None when not tested — when
    `floor`, the smallest p-value these attempt counts could give, is above α (`note` says so).
    It is one test, so its Holm adjustment is itself. `difference` is the candidate's pooled
    per-attempt success rate minus the baseline's over the shared tasks; the direction of a
    significant result is the sign of `statistic − expected`. `verdict` is what this test
    alone decides."""

    method: Literal["stratified_exact"] = "stratified_exact"
    statistic: int
    expected: float
    baseline_success_rate: float | None
    candidate_success_rate: float | None
    difference: float | None
    p_value: float | None
    floor: float
    significant: bool
    informative_tasks: int
    degenerate_tasks: int
    verdict: Verdict
    verdict_explanation: str
    note: str | None = None


class ChangedTask(ResultModel):
    """A shared task whose per-attempt success rate differs between the sides: both sides'
    counts, the difference candidate − baseline of c/n, and the attempt-level test on this task
    alone (the doubled-tail Fisher exact test); `significant_alone` when that p ≤ α, with no
    adjustment for the other tasks."""

    task: str
    baseline_attempts: int
    baseline_successes: int
    candidate_attempts: int
    candidate_successes: int
    difference: float
    p_value: float
    significant_alone: bool


CorrectedVerdict = Literal["improved", "regressed", "no_detectable_change"]
"""The judge-corrected comparison's verdict: its interval of the difference above 0, below 0, or
including 0."""


class CorrectedDifference(ResultModel):
    """One metric of the judge-corrected comparison (`compare.corrected`): the posterior means of
    each side's suite mean over the tasks compared (`pass^k`: of p^k; `pass@k`: of 1 − (1 − p)^k),
    of their difference candidate − baseline, its equal-tailed interval at the comparison's
    confidence, and P(difference < 0), all from the same joint draws."""

    metric: Literal["pass^k", "pass@k"]
    baseline: float = Field(ge=0, le=1)
    candidate: float = Field(ge=0, le=1)
    difference: float
    ci_low: float
    ci_high: float
    probability_lower: float = Field(ge=0, le=1)


class JudgeCorrectedComparison(ResultModel):
    """The comparison corrected for the judges' measured error (issue #36;
    `fair_forge_core.compare.corrected`, docs/statistics.md "Correcting for the judge's error"),
    when at least one side was corrected (`aggregated_metrics.judge_corrected`).

    `measured` False (one side only was corrected, or no task has k attempts on both sides):
    `reason` says why, every figure is None, and nothing may be read from it. Otherwise over the
    `tasks` both sides scored with ≥ k attempts: `pass_pow_k` (the verdict's metric) and, at k > 1,
    `pass_at_k`; `verdict` is by whether `pass_pow_k`'s interval excludes 0. `shared_judge_draws`:
    both sides were corrected with the same judge and calibration, so they share its draws (one
    unknown error); else independent draws per side. `within_judge_error`: the observed `verdict`
    (inconclusive read as no detectable change) and the corrected one disagree — the judges' error
    could reverse it; None when not measured or not tested; False under `method` "identity" (both
    calibrations n of n: the judge is read as exact; the posterior is then the tasks' noise
    alone). `notes`: the sentences every face shows (different judges, different calibrations)."""

    measured: bool
    reason: str | None = None
    method: Literal["monte_carlo", "identity"] | None = None
    k: int = Field(ge=1)
    confidence: float = Field(gt=0, lt=1)
    draws: int | None = None
    seed: int | None = None
    monte_carlo_error: float | None = None
    tasks: int = Field(0, ge=0)
    baseline_judge: str | None = None
    candidate_judge: str | None = None
    same_judge: bool | None = None
    shared_judge_draws: bool | None = None
    pass_pow_k: CorrectedDifference | None = None
    pass_at_k: CorrectedDifference | None = None
    verdict: CorrectedVerdict | None = None
    observed_verdict: Verdict
    within_judge_error: bool | None = None
    explanation: str
    notes: list[str] = Field(default_factory=list)


class Comparison(ResultModel):
    """Is the candidate better than the baseline? A paired comparison over the tasks both
    attempted (`fair_forge_core.compare.compare`). Tasks only one side scored, and unscored
    conversations, are counted and listed, never paired. `verdict` is `not_tested` when no
    metric could be tested (no shared task, or too few for any test to reach significance).
    `judging_differences` lists what differs between how the two sides were judged
    (`fair_forge_core.compare.judging_differences`; empty when alike or not checked)."""

    verdict: Verdict
    verdict_explanation: str
    confidence: float
    k: int
    seed: int
    bootstrap_resamples: int
    shared_tasks: int
    baseline_attempts: int
    baseline_successes: int
    candidate_attempts: int
    candidate_successes: int
    metrics: list[MetricComparison]
    mcnemar: McNemarTest | None
    prior: list[float]
    probability_candidate_better: float | None
    baseline_only_tasks: list[str]
    candidate_only_tasks: list[str]
    baseline_unscored_conversations: int
    candidate_unscored_conversations: int
    baseline_unscored_by_task: dict[str, int]
    candidate_unscored_by_task: dict[str, int]
    notes: list[str] = Field(default_factory=list)
    judging_differences: list[str] = Field(default_factory=list)
    population: Population | None = omitted_when_none()
    """Which test decides `verdict` (None only in comparisons written before it existed: `tasks`)."""
    attempt_test: AttemptTest | None = omitted_when_none()
    task_level_verdict: Verdict | None = omitted_when_none()
    task_level_explanation: str | None = omitted_when_none()
    changed_tasks: list[ChangedTask] | None = omitted_when_none()
    efficiency: list[EfficiencyComparison] | None = omitted_when_none()
    """When every conversation of both sides carries `efficiency`: each measure compared
    (`fair_forge_core.compare.efficiency`). It does not enter the verdict."""
    judge_corrected: JudgeCorrectedComparison | None = omitted_when_none()
    """When either side was corrected for its judge's error: the comparison corrected
    (`JudgeCorrectedComparison`). It does not enter the verdict."""
