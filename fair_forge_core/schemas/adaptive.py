"""The per-task report of adaptive attempts (`fair_forge_core.adaptive`, whose module docstring is
the rule; docs/statistics.md "Adaptive attempts")."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fair_forge_core.schemas.base import RequestModel, ResultModel

AdaptiveDecision = Literal["above", "below", "undecided"]
"""Where a task's per-attempt success rate lies against the question's boundary: `above` when the
confidence sequence's lower bound is above it, `below` when its upper bound is below it, else
`undecided`."""


class AdaptiveTask(ResultModel):
    """One task under adaptive attempts: its decision, its scored attempts and their successes,
    the anytime-valid confidence sequence's bounds on its per-attempt success rate at those counts,
    the boundary (the per-attempt rate p* the question reduces to: pass^k ≥ t ⇔ p ≥ t^(1/k)), the
    level α (the chance the sequence ever excludes the true rate, at any number of attempts) and
    the Beta prior (a, b) of the mixture. 0 attempts: bounds [0, 1], `undecided`."""

    decided: AdaptiveDecision
    attempts: int = Field(ge=0)
    successes: int = Field(ge=0)
    lower: float = Field(ge=0, le=1)
    upper: float = Field(ge=0, le=1)
    boundary: float = Field(ge=0, le=1)
    level: float = Field(gt=0, lt=1)
    prior: tuple[float, float]

    @model_validator(mode="after")
    def _consistent(self) -> AdaptiveTask:
        # A report read back (a shard, a baseline) must be one this version could have written.
        if self.successes > self.attempts:
            raise ValueError(f"successes ({self.successes}) exceed attempts ({self.attempts})")
        if self.lower > self.upper:
            raise ValueError(f"lower bound {self.lower} above upper bound {self.upper}")
        if not all(value > 0 for value in self.prior):
            raise ValueError(f"both prior parameters must be positive, got {self.prior}")
        return self


ADAPTIVE_BIASED_FIELDS: tuple[str, ...] = (
    "aggregated_metrics.per_task.pass_at_k",
    "aggregated_metrics.per_task.pass_pow_k",
    "aggregated_metrics.per_task.pass_at_k_ci_low",
    "aggregated_metrics.per_task.pass_at_k_ci_high",
    "aggregated_metrics.per_task.pass_pow_k_ci_low",
    "aggregated_metrics.per_task.pass_pow_k_ci_high",
    "aggregated_metrics.pass_at_k_unbiased",
    "aggregated_metrics.pass_pow_k_unbiased",
    "aggregated_metrics.curve[].pass_at_k_unbiased",
    "aggregated_metrics.curve[].pass_pow_k_unbiased",
    "aggregated_metrics.task_stability.tasks[].pass_rate",
    "aggregated_metrics.task_stability.tasks[].ci_low",
    "aggregated_metrics.task_stability.tasks[].ci_high",
)
"""The figures whose classical meaning adaptive stopping breaks (docs/statistics.md "Adaptive
attempts": C(c, k)/C(n, k) is unbiased only for an n fixed before the attempts, and which tasks
reach k attempts depends on the outcomes): every face labels them when attempts were adaptive."""


class AdaptiveAttempts(RequestModel):
    """`RunRequest.attempts`: how a recording's attempts were spent, when `fair-forge run
    --until-decided` chose them (docs/agent-contract.md "Adaptive attempts"). `question` is the text
    (`pass_pow_k>=0.8`, `p>=0.5`), `k` the k it was read with, `boundary` the per-attempt rate p* it
    reduces to, `level` α and `prior` (a, b) the confidence sequence's, `max_attempts` the attempts
    of one task at most, `round_size` the attempts a round gives an open task, and `tasks` what the
    run decided of each task when it stopped (task_id → its `AdaptiveTask`)."""

    policy: Literal["adaptive"]
    question: str = Field(min_length=1)
    k: int = Field(ge=1)
    boundary: float = Field(ge=0, le=1)
    level: float = Field(gt=0, lt=1)
    prior: tuple[float, float] = Field(strict=False)  # a JSON list, read back from a recording
    max_attempts: int = Field(ge=1)
    round_size: int = Field(ge=1)
    tasks: dict[str, AdaptiveTask] = Field(min_length=1)


class AdaptiveResult(ResultModel):
    """`aggregated_metrics.adaptive`: a request's `attempts` read against this evaluation's verdicts
    (`fair_forge_core.adaptive_result`). The question, boundary, level, prior and budget as the run
    had them; `tasks`, each task's confidence sequence recomputed from its scored attempts here (a
    function of the counts alone, so equal to the run's when the judge agreed with it); how many are
    `above`, `below` and `undecided`; `pass_pow_k_lower` and `pass_at_k_lower`, the means over the
    tasks of L^k and 1 − (1 − L)^k with L a task's lower bound (what `--fail-if-lower-bound` reads;
    None without tasks); and `biased`, the JSON fields whose classical meaning adaptive stopping
    breaks (`ADAPTIVE_BIASED_FIELDS`)."""

    policy: Literal["adaptive"]
    question: str
    k: int
    boundary: float
    level: float
    prior: tuple[float, float]
    max_attempts: int
    round_size: int
    tasks: dict[str, AdaptiveTask]
    above: int
    below: int
    undecided: int
    pass_at_k_lower: float | None
    pass_pow_k_lower: float | None
    biased: list[str]
