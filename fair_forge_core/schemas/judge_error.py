"""The judge's measured error and the figures corrected for it (issue #36; the rule is
`fair_forge_core.judge_error`, docs/statistics.md "Correcting for the judge's error").

`JudgeErrorInput` is what calibration measured of one judge identity: its TPR and TNR as counts
(`Counts`) at the level the labels were given. `JudgeCorrected` is the per-task pass@k / pass^k
corrected for that error, reported beside today's figures, never instead of them.
`NoiseDecomposition` splits a judged success's variance into the judge's part and the agent's.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fair_forge_core.schemas.base import RequestModel, ResultModel

JudgeErrorLevel = Literal["turn", "conversation"]
"""What one calibration label graded: one judged turn (an answer), or a whole conversation."""


class Counts(RequestModel):
    """`successes` of `n` (a TPR: the labelled-correct answers the judge passed, of those labelled
    correct; a TNR: the labelled-incorrect answers it failed, of those labelled incorrect)."""

    successes: int = Field(ge=0)
    n: int = Field(ge=1)

    @model_validator(mode="after")
    def _within(self) -> Counts:
        if self.successes > self.n:
            raise ValueError(f"successes ({self.successes}) exceed n ({self.n})")
        return self

    @property
    def rate(self) -> float:
        """successes / n."""
        return self.successes / self.n


class JudgeErrorInput(RequestModel):
    """The judge's error as calibration measured it, for one judge identity (`judge`, the run's
    judge identity hash it must match, `provenance.judges[0].identity`): TPR and TNR as counts, at
    `level`, the answer threshold the labels were judged at (`threshold`; when given it must be the
    run's `config.threshold`), and where the counts come from (`source`, e.g. the calibration
    report's file name), if known."""

    judge: str = Field(min_length=1)
    level: JudgeErrorLevel = "turn"
    tpr: Counts
    tnr: Counts
    threshold: float | None = Field(None, ge=0, le=1)
    source: str | None = None


class CorrectedTask(ResultModel):
    """One task corrected for the judge's error (`judge_error.correct_suite`).

    `rate` is the Rogan–Gladen estimate of the task's true per-attempt success rate at the
    measured TPR and TNR, clipped to [0, 1] (`rate_raw` unclipped, `rate_clipped` whether clipping
    changed it). The bounds are the equal-tailed posterior interval of the rate (its attempts'
    reading patterns ~ Dirichlet, its rate drawn by moment matching, TPR and TNR ~ Beta), pushed
    through p^k and 1 − (1 − p)^k; `clipped_draws` is the share of the posterior draws clipped to
    [0, 1]. `pass_at_k` and `pass_pow_k` are the posterior means, None when the task has fewer
    than k attempts.
    When the judge is exact (method "identity"): `correct` attempts of `attempts`, c/n, its
    Clopper–Pearson interval and today's unbiased estimators; `correct` is None otherwise."""

    task: str
    attempts: int = Field(ge=1)
    correct: int | None
    rate: float = Field(ge=0, le=1)
    rate_raw: float
    rate_clipped: bool
    clipped_draws: float = Field(ge=0, le=1)
    rate_ci_low: float = Field(ge=0, le=1)
    rate_ci_high: float = Field(ge=0, le=1)
    pass_at_k: float | None
    pass_pow_k: float | None
    pass_at_k_ci_low: float = Field(ge=0, le=1)
    pass_at_k_ci_high: float = Field(ge=0, le=1)
    pass_pow_k_ci_low: float = Field(ge=0, le=1)
    pass_pow_k_ci_high: float = Field(ge=0, le=1)


class CorrectedCurvePoint(ResultModel):
    """The suite's corrected pass@K and pass^K at one K, over the tasks with ≥ k attempts (the
    headline's tasks, whatever K): posterior means and equal-tailed bounds."""

    k: int = Field(ge=1)
    pass_at_k: float = Field(ge=0, le=1)
    pass_pow_k: float = Field(ge=0, le=1)
    pass_at_k_ci_low: float = Field(ge=0, le=1)
    pass_at_k_ci_high: float = Field(ge=0, le=1)
    pass_pow_k_ci_low: float = Field(ge=0, le=1)
    pass_pow_k_ci_high: float = Field(ge=0, le=1)


class JudgeCorrected(ResultModel):
    """The per-task pass@k / pass^k corrected for the judge's measured error, over the tasks with
    ≥ k attempts: the posterior mean of the tasks' mean p^k (1 − (1 − p)^k for pass@k) and its
    equal-tailed interval at `ci_level` (`interval_method` "posterior").

    `method` "monte_carlo": seeded (`seed`, `draws`); each bound's tail level is off by at most
    `monte_carlo_error` (two standard errors). "identity": the calibration counts are perfect,
    n of n, so the judge is read as exact and every figure is today's (`interval_method`
    "task_wilson", the Monte Carlo fields None, no curve). `clipped_tasks` names the tasks whose
    Rogan–Gladen rate was clipped to [0, 1]. `curve`: K = 1 … max(k, 10) over the same tasks,
    the report's corrected band (its point at k is the figures above; empty under "identity" or
    with no task of k attempts)."""

    judge: str
    level: JudgeErrorLevel
    k: int = Field(ge=1)
    ci_level: float = Field(gt=0, lt=1)
    tpr: Counts
    tnr: Counts
    calibration_labels: int = Field(ge=2)
    source: str | None
    method: Literal["monte_carlo", "identity"]
    interval_method: Literal["posterior", "task_wilson"]
    draws: int | None
    seed: int | None
    monte_carlo_error: float | None
    tasks: int = Field(ge=0)
    tasks_with_k_attempts: int = Field(ge=0)
    pass_at_k: float | None
    pass_pow_k: float | None
    pass_at_k_ci_low: float | None
    pass_at_k_ci_high: float | None
    pass_pow_k_ci_low: float | None
    pass_pow_k_ci_high: float | None
    clipped_tasks: list[str]
    per_task: list[CorrectedTask]
    curve: list[CorrectedCurvePoint]


NoiseEstimator = Literal["latent_class", "one_way_anova"]
"""`judge_noise.noise_decomposition`'s rules: the measurement model fitted to the judge's samples
(≥ 3 samples), or the one-way random-effects ANOVA of the attempts' readings (2 samples)."""


class TaskNoise(ResultModel):
    """One task's judged-success variance split (`judge_noise.noise_decomposition`): between the
    judge samples of one transcript (`judge_variance`) and between attempts (`agent_variance`,
    truncated at 0; `agent_truncated` when the ANOVA's estimate was negative), and the judge's
    share of their sum (None when both are 0). `samples`: the task's readings, attempts × samples."""

    task: str
    attempts: int = Field(ge=2)
    samples: int = Field(ge=4)
    judge_variance: float = Field(ge=0)
    agent_variance: float = Field(ge=0)
    agent_truncated: bool
    judge_share: float | None


class NoiseDecomposition(ResultModel):
    """Judge noise against agent noise over the tasks with ≥ 2 attempts, each judged ≥ 2 times:
    the per-task components summed (the agent's untruncated, so the sums are unbiased), the
    judge's share of the total (clipped to [0, 1], None when the total is not positive) and the
    agent's (1 − the judge's), with `estimator` naming the rule; under `latent_class`,
    `sample_tpr` and `sample_tnr` are the judge's TPR and TNR as its own samples estimate them
    (None under the ANOVA)."""

    estimator: NoiseEstimator
    tasks: int = Field(ge=0)
    judge_variance: float | None
    agent_variance: float | None
    judge_share: float | None
    agent_share: float | None
    sample_tpr: float | None = None
    sample_tnr: float | None = None
    per_task: list[TaskNoise]
