"""The result side, mirroring DESIGN.md §3 and §6 (see the package docstring)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCorrectnessScore(_Result):
    """Deterministic tool rubric of one turn (DESIGN.md §5)."""

    tool_selection_correct: float
    parameter_accuracy: float
    sequence_correct: float
    result_utilization: float
    overall_correctness: float
    is_correct: bool
    reasoning: str
    precision: float
    recall: float
    f1: float
    result_in_answer: bool | None


class InteractionResult(_Result):
    """Per-turn detail. `answer_score` is None when the judge could not score the turn.
    `observation` is the turn's own (what the agent saw), echoed for the report."""

    qa_id: str
    answer_score: float | None
    answer_correct: bool | None
    tool_correct: bool | None
    is_correct: bool | None
    judge_reasoning: str | None
    error: str | None
    observation: str | None = None


class RateEstimate(_Result):
    """pass@k and pass^k of one (n, c, k), with credible bounds in Bayesian mode.
    Frozen: `stats.estimate_rates` hands out one instance for every equal question."""

    model_config = ConfigDict(frozen=True)

    pass_at_k: float
    pass_pow_k: float
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None


class ConversationMetrics(_Result):
    """One conversation. n and c count scored turns; unscored ones are reported, not zeroed."""

    session_id: str
    assistant_id: str
    task_id: str | None
    total_interactions: int
    correct_interactions: int
    unscored_interactions: int
    is_scored: bool
    is_fully_correct: bool | None
    threshold: float
    correctness_scores: list[float | None]
    correct_indices: list[int]
    tool_correctness_scores: list[ToolCorrectnessScore | None]
    k: int
    pass_at_k: float | None
    pass_pow_k: float | None
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None
    interactions: list[InteractionResult] | None


class CurvePoint(_Result):
    """pass@k and pass^k at one k; the credible bounds are None in frequentist mode."""

    k: int
    pass_at_k: float
    pass_pow_k: float
    pass_at_k_unbiased: float | None
    pass_pow_k_unbiased: float | None
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None


class PerTaskMetrics(_Result):
    """τ-bench style: unbiased estimators per task, averaged over tasks with ≥ k attempts."""

    tasks: int
    tasks_with_k_attempts: int
    pass_at_k: float | None
    pass_pow_k: float | None


class AggregatedMetrics(_Result):
    """Across conversations: n = scored conversations, c = fully correct ones."""

    total_conversations: int
    fully_correct_conversations: int
    unscored_conversations: int
    conversation_success_rate: float | None
    k: int
    statistical_mode: Literal["frequentist", "bayesian"]
    ci_level: float | None
    pass_at_k: float | None
    pass_pow_k: float | None
    pass_at_k_ci_low: float | None = None
    pass_at_k_ci_high: float | None = None
    pass_pow_k_ci_low: float | None = None
    pass_pow_k_ci_high: float | None = None
    pass_at_k_unbiased: float | None
    pass_pow_k_unbiased: float | None
    interpretation: str | None
    interpretation_explanation: str | None
    conservative_interpretation: str | None = None
    sample_size_warning: str | None
    curve: list[CurvePoint]
    per_task: PerTaskMetrics | None = None
    by_assistant: dict[str, AggregatedMetrics] | None = None


class EvaluationResult(_Result):
    """The whole answer of one evaluation."""

    success: Literal[True] = True
    per_conversation_metrics: list[ConversationMetrics]
    aggregated_metrics: AggregatedMetrics
    warnings: list[str] = Field(default_factory=list)

    def without_interactions(self, reason: str) -> Self:
        """The same result without per-turn detail, and the warning `per-turn detail left out:
        <reason>` — the one way detail is dropped (by request, or to fit a response)."""
        conversations = [m.model_copy(update={"interactions": None}) for m in self.per_conversation_metrics]
        warnings = [*self.warnings, f"per-turn detail left out: {reason}"]
        return self.model_copy(update={"per_conversation_metrics": conversations, "warnings": warnings})
