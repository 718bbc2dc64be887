"""From judge verdicts and tool scores to per-conversation and aggregated metrics (DESIGN.md §4, §6, §7).

Pure: no judge, no I/O. `aggregate` needs only per-conversation metrics, so results
computed in pieces (shards) combine into exactly the numbers of one evaluation.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

from fair_forge_core import stats, tiers
from fair_forge_core.schemas import (
    AggregatedMetrics,
    Batch,
    ConversationMetrics,
    Dataset,
    EvaluationConfig,
    InteractionResult,
    JudgeVote,
    PerTaskMetrics,
    ToolCorrectnessScore,
)
from fair_forge_core.tools import ToolScorer


@dataclass(frozen=True)
class TurnJudgement:
    """What the judge said of one answer: a score in [0, 1] and its reasoning, or why there is none.

    A score that is not a finite number in [0, 1] (NaN, 1.5, a bool) is a `ValueError`
    here: counted as wrong or right it would corrupt c silently.
    """

    score: float | None
    reasoning: str | None = None
    error: str | None = None
    judged_by: Literal["offline", "llm"] | None = None
    """Under `config.judge_cascade`, the judge that decided the turn (`judges.cascade`); else None."""
    votes: tuple[JudgeVote, ...] | None = None
    """When the turn was judged more than once (`judges.panel`): each connector's judgements."""
    agreement: float | None = None
    """The share of those judgements on the side of the threshold `score` is on (None: unscored)."""

    def __post_init__(self) -> None:
        score = self.score
        if score is None:
            return
        if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= score <= 1.0:
            raise ValueError(f"a judge score must be a number in [0, 1], got {score!r}")


def score_turn(
    batch: Batch, judgement: TurnJudgement, config: EvaluationConfig, tool_scorer: ToolScorer | None = None
) -> tuple[InteractionResult, ToolCorrectnessScore | None]:
    """The verdict on one turn.

    Answer correct ⇔ score ≥ threshold. Tools are scored whenever the turn has
    `ground_truth_agentic` (no tools used then scores, it is not None). Turn correct
    ⇔ answer correct and, if tools were scored and `require_tool_correctness`, tools
    correct. A turn without a score has `is_correct` None: unscored, not wrong.
    `tool_scorer` (made from `config` if not given) may be shared by many turns.
    """
    tool_score = (tool_scorer or ToolScorer.for_config(config)).score_batch(batch)
    tool_correct = tool_score.is_correct if tool_score is not None else None
    answer_correct = None if judgement.score is None else judgement.score >= config.threshold
    is_correct = answer_correct
    if answer_correct and tool_correct is False and config.require_tool_correctness:
        is_correct = False
    interaction = InteractionResult(
        qa_id=batch.qa_id,
        answer_score=judgement.score,
        answer_correct=answer_correct,
        tool_correct=tool_correct,
        is_correct=is_correct,
        judge_reasoning=judgement.reasoning,
        error=judgement.error,
        observation=batch.observation,
        judged_by=judgement.judged_by,
        judge_votes=None if judgement.votes is None else list(judgement.votes),
        judge_agreement=judgement.agreement,
    )
    return interaction, tool_score


def conversation_metrics(
    dataset: Dataset,
    judgements: list[TurnJudgement],
    config: EvaluationConfig,
    *,
    tool_scorer: ToolScorer | None = None,
) -> ConversationMetrics:
    """Metrics of one conversation; `judgements[i]` belongs to `dataset.conversation[i]`.

    The conversation is scored only if every turn is, and fully correct only if every
    turn is correct. pass@k / pass^k count turns: n = scored turns, c = correct ones
    (None when no turn was scored). Pass one `tool_scorer` (built from `config`) to
    all the conversations of an evaluation so that repeated turns are scored once.
    """
    if tool_scorer is None:
        tool_scorer = ToolScorer.for_config(config)
    turns = [score_turn(b, j, config, tool_scorer) for b, j in zip(dataset.conversation, judgements, strict=True)]
    interactions = [interaction for interaction, _ in turns]
    scored = [i for i in interactions if i.is_correct is not None]
    correct_indices = [index for index, i in enumerate(interactions) if i.is_correct]
    is_scored = len(scored) == len(interactions)
    rates = None
    if scored:
        rates = stats.estimate_rates(len(scored), len(correct_indices), config.k, config.statistical_mode)
    return ConversationMetrics(
        session_id=dataset.session_id,
        assistant_id=dataset.assistant_id,
        task_id=dataset.task_id,
        total_interactions=len(interactions),
        correct_interactions=len(correct_indices),
        unscored_interactions=len(interactions) - len(scored),
        is_scored=is_scored,
        is_fully_correct=len(correct_indices) == len(interactions) if is_scored else None,
        threshold=config.threshold,
        correctness_scores=[i.answer_score for i in interactions],
        correct_indices=correct_indices,
        tool_correctness_scores=[tool_score for _, tool_score in turns],
        k=config.k,
        pass_at_k=rates.pass_at_k if rates else None,
        pass_pow_k=rates.pass_pow_k if rates else None,
        pass_at_k_ci_low=rates.pass_at_k_ci_low if rates else None,
        pass_at_k_ci_high=rates.pass_at_k_ci_high if rates else None,
        pass_pow_k_ci_low=rates.pass_pow_k_ci_low if rates else None,
        pass_pow_k_ci_high=rates.pass_pow_k_ci_high if rates else None,
        interactions=interactions,
    )


def per_task_metrics(conversations: list[ConversationMetrics], k: int) -> PerTaskMetrics:
    """τ-bench pass@k / pass^k: per task, the unbiased estimators over its scored attempts,
    averaged over the tasks with at least k attempts (None if there are none).

    A conversation without a `task_id` is a task of its own, even if another shares its session_id.
    """
    attempts: dict[str | int, list[bool]] = defaultdict(list)
    for index, conversation in enumerate(conversations):
        # Keyed by position when there is no task_id: session ids need not be unique.
        key = conversation.task_id if conversation.task_id is not None else index
        attempts[key].append(bool(conversation.is_fully_correct))
    eligible = [outcomes for outcomes in attempts.values() if len(outcomes) >= k]
    at_k = [stats.pass_at_k_unbiased(len(o), sum(o), k) for o in eligible]
    pow_k = [stats.pass_pow_k_unbiased(len(o), sum(o), k) for o in eligible]
    return PerTaskMetrics(
        tasks=len(attempts),
        tasks_with_k_attempts=len(eligible),
        pass_at_k=sum(at_k) / len(at_k) if eligible else None,  # type: ignore[arg-type]
        pass_pow_k=sum(pow_k) / len(pow_k) if eligible else None,  # type: ignore[arg-type]
    )


def aggregate(conversations: list[ConversationMetrics], config: EvaluationConfig) -> AggregatedMetrics:
    """Aggregated metrics over conversations: n = scored conversations, c = fully correct ones.

    Unscored conversations are counted in `unscored_conversations` and left out of
    n and c. With n = 0 every rate is None. `per_task` appears when any conversation
    has a task_id, `by_assistant` when there are several assistant_ids.
    """
    scored = [m for m in conversations if m.is_scored]
    n = len(scored)
    c = sum(1 for m in scored if m.is_fully_correct)
    k, mode = config.k, config.statistical_mode
    bayesian = mode.mode == "bayesian"
    fields: dict[str, object] = {
        "total_conversations": n,
        "fully_correct_conversations": c,
        "unscored_conversations": len(conversations) - n,
        "k": k,
        "statistical_mode": mode.mode,
        "ci_level": mode.ci_level if bayesian else None,
        "sample_size_warning": tiers.sample_size_warning(n, bayesian=bayesian),
    }
    if n == 0:
        fields.update(
            conversation_success_rate=None,
            pass_at_k=None,
            pass_pow_k=None,
            pass_at_k_unbiased=None,
            pass_pow_k_unbiased=None,
            interpretation=None,
            interpretation_explanation=None,
            curve=[],
        )
    else:
        # The tier is decided on the exact point estimates, which are also what is reported
        # (correctly rounded), so that the numbers shown agree with the tier.
        exact_at_k, exact_pow_k = stats.exact_point_estimates(n, c, k, mode)
        rates = stats.estimate_rates(n, c, k, mode).model_copy(
            update={"pass_at_k": float(exact_at_k), "pass_pow_k": float(exact_pow_k)}
        )
        tier = tiers.interpret(exact_at_k, exact_pow_k)
        fields.update(
            rates.model_dump(),
            conversation_success_rate=c / n,
            pass_at_k_unbiased=stats.pass_at_k_unbiased(n, c, k),
            pass_pow_k_unbiased=stats.pass_pow_k_unbiased(n, c, k),
            interpretation=tier,
            interpretation_explanation=tiers.explain(tier, rates.pass_at_k, rates.pass_pow_k, k),
            curve=stats.pass_curve(n, c, k, mode),
        )
        if bayesian:
            fields["conservative_interpretation"] = tiers.interpret(
                tiers.on_boundary(rates.pass_at_k_ci_low),  # type: ignore[arg-type]
                tiers.on_boundary(rates.pass_pow_k_ci_low),  # type: ignore[arg-type]
            )
    if any(m.task_id is not None for m in conversations):
        fields["per_task"] = per_task_metrics(scored, k)
    assistants = sorted({m.assistant_id for m in conversations})
    if len(assistants) > 1:
        fields["by_assistant"] = {
            name: aggregate([m for m in conversations if m.assistant_id == name], config) for name in assistants
        }
    return AggregatedMetrics.model_validate(fields)
