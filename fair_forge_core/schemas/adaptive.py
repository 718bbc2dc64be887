"""The per-task report of adaptive attempts (`fair_forge_core.adaptive`, whose module docstring is
the rule; docs/statistics.md "Adaptive attempts")."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fair_forge_core.schemas.base import ResultModel

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
