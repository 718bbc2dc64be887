"""`config`: the options of one evaluation (`EvaluationConfig`, docs/request.md) and their parts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from fair_forge_core.schemas.base import RequestModel
from fair_forge_core.schemas.json_input import did_you_mean, omitted_when_none
from fair_forge_core.schemas.judge_error import JudgeErrorInput

TOOL_WEIGHT_KEYS = ("selection", "parameters", "sequence", "utilization")


class ToolWeights(RequestModel):
    """Weights of the four tool dimensions; each ≥ 0, summing to a finite number above 0.

    Four weights of 1e308 each are finite but sum to infinity, which would normalise
    every weight to 0 and score a perfect call 0.0: refused.
    """

    selection: float = Field(0.25, ge=0)
    parameters: float = Field(0.25, ge=0)
    sequence: float = Field(0.25, ge=0)
    utilization: float = Field(0.25, ge=0)

    @model_validator(mode="after")
    def _positive_sum(self) -> ToolWeights:
        if not 0 < self.total < float("inf"):
            raise ValueError("tool_weights must sum to a finite number greater than 0")
        return self

    @property
    def total(self) -> float:
        return self.selection + self.parameters + self.sequence + self.utilization

    def normalised(self) -> ToolWeights:
        """The same weights scaled to sum to 1 (what the tool rubric's overall score uses)."""
        total = self.total
        return ToolWeights(
            selection=self.selection / total,
            parameters=self.parameters / total,
            sequence=self.sequence / total,
            utilization=self.utilization / total,
        )


PRIOR_RANGE = (0.001, 1e6)
"""Accepted values of each Beta prior parameter. Outside it scipy's Beta quantiles
become NaN or meaningless for some (n, c), and no real prior needs more."""


class StatisticalMode(RequestModel):
    """How p is estimated: a point estimate, or a Beta posterior with credible intervals."""

    mode: Literal["frequentist", "bayesian"] = "frequentist"
    ci_level: float = Field(0.95, gt=0, lt=1)
    prior: list[float] = Field(default_factory=lambda: [1.0, 1.0], min_length=2, max_length=2)

    @field_validator("prior", mode="before")
    @classmethod
    def _prior_from_tuple(cls, value: Any) -> Any:
        # Library callers write `prior=(1, 1)`; JSON has only lists. The items stay strict.
        return list(value) if isinstance(value, tuple) else value

    @field_validator("prior")
    @classmethod
    def _prior_in_range(cls, prior: list[float]) -> list[float]:
        low, high = PRIOR_RANGE
        if not all(low <= value <= high for value in prior):
            raise ValueError(f"both prior parameters must be between {low:g} and {high:g}")
        return prior


class CompareConfig(RequestModel):
    """`config.compare`: compare two assistants of the request on the tasks both attempted
    (`fair_forge_core.compare`), at `confidence` (0.95), bootstrap seeded by `seed` (0); the
    verdict answers `population`'s question: "attempts" (default), is the candidate worse on
    these tasks; "tasks", would the difference generalise to new tasks (docs/compare.md)."""

    baseline: str = Field(min_length=1)
    candidate: str = Field(min_length=1)
    confidence: float = Field(0.95, gt=0, lt=1)
    seed: int = Field(0, ge=0)
    population: Literal["attempts", "tasks"] = "attempts"

    @model_validator(mode="after")
    def _two_assistants(self) -> CompareConfig:
        if self.baseline == self.candidate:
            raise ValueError("baseline and candidate must be two different assistant_id values")
        return self


MAX_JUDGE_SAMPLES = 10
"""The most judgements of one turn by one connector (`config.judge_samples`)."""
MAX_CONNECTORS = 3
"""The most connectors of an ensemble (`connector` as a list)."""
MAX_K = 1000
"""The largest k: the curve has max(k, 10) points per aggregate (and per assistant)."""

StructuredOutputMethod = Literal["json_schema", "function_calling", "json_mode"]


check_settings_validator: Callable[[EvaluationConfig], None] | None = None
"""Set by `fair_forge_core.checks` when it loads (the registry is there, and the schemas import no
check): raises `ValueError` naming `checks.<name>` for a check not loaded or settings it refuses."""


class EvaluationConfig(RequestModel):
    """Options of one evaluation (docs/request.md). Every field is optional."""

    k: int = Field(3, ge=1, le=MAX_K)
    threshold: float = Field(0.7, ge=0, le=1)
    tool_threshold: float = Field(0.75, ge=0, le=1)
    tool_weights: ToolWeights = Field(default_factory=ToolWeights)
    tool_dimension_floor: float = Field(0.5, ge=0, le=1)
    use_structured_output: bool = False
    structured_output_method: StructuredOutputMethod | None = None
    bos_json_clause: str = "```json"
    eos_json_clause: str = "```"
    verbose: bool = False
    statistical_mode: StatisticalMode = Field(default_factory=StatisticalMode)
    require_tool_correctness: bool = True
    max_concurrency: int = Field(8, ge=1, le=512)
    include_interactions: bool = True
    max_unscored_share: float = Field(0.10, ge=0, le=1)
    """The readiness status is "insufficient_evidence" when more than this share of the
    conversations is unscored (`tiers.readiness`)."""
    compare: CompareConfig | None = None
    judge_cache: bool = False
    """Opt in to the operator's judge cache (`FAIR_FORGE_JUDGE_CACHE`): verdicts of identical judge
    requests (same connector, model, sampling, prompt and messages) are reused, never judged again."""
    max_cost_usd: float | None = Field(None, gt=0)
    """Stop starting judge calls once the judge's cost reaches this many USD (needs a price for the
    model in `FAIR_FORGE_JUDGE_PRICES`); the turns left are unscored, with the reason."""
    judge_cascade: bool = False
    """Let the offline judge settle the turns it is sure of (it scored them, ≥ 0.9 or ≤ 0.2) and
    send only the rest to the connector (`fair_forge_core.judges.cascade`); a no-op when the
    connector is the offline judge."""
    judge_samples: int = Field(1, ge=1, le=MAX_JUDGE_SAMPLES)
    """Judge each distinct turn this many times with each connector (self-consistency,
    `fair_forge_core.judges.panel`); the turn's score combines them by `judge_vote`."""
    require_goal: bool = True
    """A conversation with a `goal` passes only when the judge finds the goal achieved (and is
    unscored while the goal is unjudged). False: the goal is judged and reported, and only the
    turns (and the end state) decide whether the conversation passes."""
    judge_vote: Literal["majority", "mean"] = "majority"
    """How several judgements of a turn (`judge_samples`, a list of connectors) become its score:
    "majority" (the lower median: passes when a strict majority passes) or "mean"."""
    task_stability: bool = False
    """Label each task with at least 2 scored attempts stable, flaky or failing, with the
    Clopper–Pearson interval of its pass probability, in `aggregated_metrics.task_stability`
    (`fair_forge_core.flakiness`). Off by default, so that results read as before."""
    efficiency: bool = False
    """Report what each conversation spent (turns, steps, tool calls, failed and repeated calls,
    the agent's tokens, latency and cost from `agent_usage`) and its median / p95 and cost per
    successful task (`fair_forge_core.efficiency`). Decides no verdict."""

    judge_batch: bool | None = omitted_when_none()
    """Send the judge calls through the provider's batch API at its batch price (docs/judge.md
    "Batch judging"): on `POST /jobs` and `fair-forge evaluate --batch` only, for connectors whose
    provider has one; results in hours, not seconds. Absent or false: judged as calls are made."""

    judge_error: JudgeErrorInput | None = omitted_when_none()
    """The judge's measured error (docs/statistics.md "Correcting for the judge's error"): its
    TPR and TNR as calibration counted them, for the run's judge identity. Adds
    `aggregated_metrics.judge_corrected` beside today's figures; an identity or threshold that
    is not the run's is refused, naming both."""

    checks: dict[str, dict[str, Any]] | None = omitted_when_none()
    """The settings of loaded plug-in checks, by check name (docs/checks.md "Write a check"): a
    check turns on when its name is here. A name no loaded check has, or settings its check
    refuses, is an error naming `checks.<name>`."""

    @model_validator(mode="after")
    def _known_checks(self) -> EvaluationConfig:
        if self.checks and check_settings_validator is not None:
            check_settings_validator(self)
        return self

    @field_validator("statistical_mode", mode="before")
    @classmethod
    def _mode_from_string(cls, value: Any) -> Any:
        # The original library takes a bare name; the object form adds options. A bare name
        # that is no mode is refused here, so that the error names `config.statistical_mode`,
        # the field the caller wrote, not the `.mode` of the object it would have become.
        if not isinstance(value, str):
            return value
        modes = get_args(StatisticalMode.model_fields["mode"].annotation)
        if value not in modes:
            expected = " or ".join(repr(mode) for mode in modes)
            raise PydanticCustomError(
                "literal_error",
                "Input should be {expected}, or an object with mode, ci_level and prior" + did_you_mean(value, modes),
                {"expected": expected},
            )
        return {"mode": value}
