"""From judge verdicts and tool scores to per-conversation and aggregated metrics (docs/correctness.md,
docs/statistics.md, docs/readiness.md).

Pure: no judge, no I/O. `aggregate` needs only per-conversation metrics, so results
computed in pieces (shards) combine into exactly the numbers of one evaluation.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from fair_forge_core import stats, tiers
from fair_forge_core.checks import DeterministicChecks, TurnTools, check_turn_tools, deterministic_checks
from fair_forge_core.efficiency import aggregate_efficiency, conversation_efficiency
from fair_forge_core.flakiness import task_key, task_stability
from fair_forge_core.schemas import (
    AggregatedMetrics,
    Batch,
    ConversationMetrics,
    Dataset,
    EvaluationConfig,
    GoalCheck,
    InteractionResult,
    JudgeVote,
    PerTaskMetrics,
    RateEstimate,
    Readiness,
    ToolCorrectnessScore,
    ToolPolicy,
    UnscoredCause,
)
from fair_forge_core.schemas.base import with_shared_fields_set
from fair_forge_core.tools import ToolScorer

ABSTAIN_MESSAGE = "the offline judge cannot decide this turn"
"""The error of a turn the offline judge abstained on (`judges.reference`)."""
GOAL_ABSTAIN_MESSAGE = "cannot decide a conversation's goal"
"""How the error of a goal ends when its judge does not read goals (`judges.base.ask`): "the judge
fair-forge-reference cannot decide a conversation's goal"."""
DEADLINE_PHRASE = "time budget exhausted"
"""How every error of a turn the deadline stopped begins (`judges.llm`)."""
COST_CAP_PHRASE = "the cost cap ("
"""How the error of a judgement the cost cap stopped begins (`judges.usage`)."""

JudgementCause = Literal["abstained", "cost_cap", "deadline", "judge_error"]
"""Why a judgement (a turn's, a goal's) gave no score, read from its error (`unscored_cause`);
a conversation unscored before judging carries its own typed cause (`schemas.UnscoredCause`)."""


def unscored_cause(error: str) -> JudgementCause:
    """Why a turn is unscored, read from its error: "deadline" when the time budget stopped it,
    "cost_cap" when the cost cap did, "abstained" when the offline judge abstained, else
    "judge_error" (a provider that failed after its retries, a reply that never parsed). Read in
    that order, so that a panel's error, which quotes each failed judgement's, is classified by
    the first of these it holds."""
    if DEADLINE_PHRASE in error:
        return "deadline"
    if COST_CAP_PHRASE in error:
        return "cost_cap"
    if ABSTAIN_MESSAGE in error or GOAL_ABSTAIN_MESSAGE in error:
        return "abstained"
    return "judge_error"


def unscored_errors(conversation: ConversationMetrics) -> list[tuple[Literal["conversation", "turn", "goal"], str]]:
    """Why a conversation is unscored, each reason with what it stopped: for a conversation
    unscored before judging (`unscored`), its cause in words (`tiers.UNSCORED_CAUSES`: one text
    per cause, so that conversations count together), alone; else its unscored turns' errors (of
    results that keep per-turn detail), and its goal's when the goal is required and unjudged.
    Empty for a scored conversation."""
    if conversation.is_scored:
        return []
    if conversation.unscored is not None:
        return [("conversation", tiers.UNSCORED_CAUSES[conversation.unscored.cause])]
    errors: list[tuple[Literal["conversation", "turn", "goal"], str]] = [
        ("turn", i.error) for i in conversation.interactions or () if i.error is not None
    ]
    goal = conversation.goal_check
    if goal is not None and goal.required and goal.error is not None:
        errors.append(("goal", goal.error))
    return errors


def unscored_causes(conversations: list[ConversationMetrics]) -> Counter[JudgementCause | UnscoredCause]:
    """How many conversations unscored before judging each typed cause accounts for (their
    `unscored.cause`), and how many unscored turns and required goals each `unscored_cause` of
    the others' errors does (`unscored_errors`; a result without per-turn detail counts only goals)."""
    causes: Counter[JudgementCause | UnscoredCause] = Counter(
        m.unscored.cause for m in conversations if m.unscored is not None and not m.is_scored
    )
    causes.update(unscored_cause(error) for m in conversations if m.unscored is None for _, error in unscored_errors(m))
    return causes


def unscored_by_cause(conversations: list[ConversationMetrics]) -> dict[UnscoredCause, int] | None:
    """`aggregated_metrics.unscored_by_cause`: the conversations unscored before judging, counted
    by their `unscored.cause` (sorted by cause); None when there is none."""
    counted = Counter(m.unscored.cause for m in conversations if m.unscored is not None)
    return dict(sorted(counted.items())) or None


def utilization_unmeasured(conversations: list[ConversationMetrics]) -> int:
    """How many turns have a tool score whose utilization was not measured (`result_utilization`
    null: tools used, no `final_answer_uses_tools` and no result to look for; docs/tool-rubric.md)."""
    return sum(
        1 for m in conversations for score in m.tool_correctness_scores if score and score.result_utilization is None
    )


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
    batch: Batch,
    judgement: TurnJudgement,
    config: EvaluationConfig,
    tool_scorer: ToolScorer | None = None,
    policy: ToolPolicy | None = None,
    tools: TurnTools | None = None,
) -> tuple[InteractionResult, ToolCorrectnessScore | None]:
    """The verdict on one turn.

    Answer correct ⇔ score ≥ threshold. Tools are scored whenever the turn has
    `ground_truth_agentic` with expected tools (no tools used then scores, it is not None).
    Turn correct ⇔ answer correct and, if tools were scored and `require_tool_correctness`,
    tools correct. A turn without a score has `is_correct` None: unscored, not wrong.
    `tool_scorer` (made from `config` if not given) may be shared by many turns; `tools`, when
    given, are the turn's `check_turn_tools` computed already (then `tool_scorer` and `policy`
    are not read).

    With a tool `policy` (`tools.policy`, in the result's `tool_policy`): the rubric scores the
    calls without the policy's `ignore_parameters`; a `trajectory_match` verdict, when there is
    one, is `tool_correct` instead of the rubric's (whose score is kept); a broken rule makes a
    scored turn wrong, whatever `require_tool_correctness` says.
    """
    check, tool_score = tools if tools is not None else check_turn_tools(batch, config, tool_scorer, policy)
    tool_correct = tool_score.is_correct if tool_score is not None else None
    if check is not None and check.trajectory_matches is not None:
        tool_correct = check.trajectory_matches
    answer_correct = None if judgement.score is None else judgement.score >= config.threshold
    is_correct = answer_correct
    if answer_correct and tool_correct is False and config.require_tool_correctness:
        is_correct = False
    if answer_correct and check is not None and not check.passed:
        is_correct = False
    interaction = InteractionResult(  # every field given: one fields set for all (`with_shared_fields_set`)
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
        tool_policy=check,
    )
    return with_shared_fields_set(interaction), tool_score


def conversation_metrics(
    dataset: Dataset,
    judgements: list[TurnJudgement],
    config: EvaluationConfig,
    *,
    tool_scorer: ToolScorer | None = None,
    goal: TurnJudgement | None = None,
    checks: DeterministicChecks | None = None,
) -> ConversationMetrics:
    """Metrics of one conversation; `judgements[i]` belongs to `dataset.conversation[i]`, `goal`
    to its `goal` (when it has one: `goal_check`).

    The conversation is scored only if every turn is (and, under `config.require_goal`, its goal
    was judged), and fully correct only if every turn is correct, when it has an
    `expected_state` its end state matches (`state.compare_state`, in `state_check`), and under
    `config.require_goal` its goal is achieved. pass@k / pass^k count turns: n = scored turns, c = correct ones
    (None when no turn was scored). Pass one `tool_scorer` (built from `config`) to
    all the conversations of an evaluation so that repeated turns are scored once.
    `checks`, when given, are the conversation's `deterministic_checks` computed already.
    A conversation unscored before judging (`dataset.unscored`) is `unscored_conversation_metrics`'s:
    `judgements` and `goal` are then not read (`evaluate` asks the judge nothing for it).
    """
    if dataset.unscored is not None:
        return unscored_conversation_metrics(dataset, config)
    if checks is None:
        checks = deterministic_checks(dataset, config, tool_scorer)
    turns = [
        score_turn(b, j, config, tools=tools)
        for b, j, tools in zip(dataset.conversation, judgements, checks.tools, strict=True)
    ]
    interactions = [interaction for interaction, _ in turns]
    scored = [i for i in interactions if i.is_correct is not None]
    correct_indices = [index for index, i in enumerate(interactions) if i.is_correct]
    goal_check = _goal_check(dataset.goal, goal, config) if dataset.goal is not None else None
    # Under `require_goal` the goal decides with the turns: unjudged, it leaves the conversation unscored.
    goal_verdict = goal_check.goal_achieved if goal_check is not None and goal_check.required else True
    is_scored = len(scored) == len(interactions) and goal_verdict is not None
    goal_holds = bool(goal_verdict)
    state_check = checks.state
    state_holds = state_check is None or state_check.matches
    rates = None
    if scored:
        rates = stats.estimate_rates(len(scored), len(correct_indices), config.k, config.statistical_mode)
    metrics = ConversationMetrics(  # every field given, as for `score_turn`'s results
        session_id=dataset.session_id,
        assistant_id=dataset.assistant_id,
        task_id=dataset.task_id,
        total_interactions=len(interactions),
        correct_interactions=len(correct_indices),
        unscored_interactions=len(interactions) - len(scored),
        is_scored=is_scored,
        is_fully_correct=(len(correct_indices) == len(interactions) and state_holds and goal_holds)
        if is_scored
        else None,
        threshold=config.threshold,
        correctness_scores=[i.answer_score for i in interactions],
        correct_indices=correct_indices,
        tool_correctness_scores=[tool_score for _, tool_score in turns],
        k=config.k,
        **_rate_fields(rates),
        interactions=interactions,
        state_check=state_check,
        goal_check=goal_check,
        efficiency=conversation_efficiency(dataset) if config.efficiency else None,
        unscored=None,
    )
    return with_shared_fields_set(metrics)


def unscored_conversation_metrics(dataset: Dataset, config: EvaluationConfig) -> ConversationMetrics:
    """The metrics of a conversation unscored before judging (`dataset.unscored`): every turn
    unscored (no score, no tool score, its error naming the cause), no rate, no check (end state,
    goal, policy), `is_scored` false, and `unscored` carrying the cause and detail; readiness counts
    it in `total`, never in n or c."""
    marked = dataset.unscored
    if marked is None:
        raise ValueError("unscored_conversation_metrics needs a dataset with `unscored`")
    error = f"not judged: the conversation is unscored ({marked.cause}: {marked.detail})"
    # Each turn as `score_turn` makes an unscored one: no score, no tool verdict, the cause as its error.
    unjudged = TurnJudgement(score=None, error=error)
    interactions = [score_turn(batch, unjudged, config, tools=(None, None))[0] for batch in dataset.conversation]
    turns = len(interactions)
    return ConversationMetrics(
        session_id=dataset.session_id,
        assistant_id=dataset.assistant_id,
        task_id=dataset.task_id,
        total_interactions=turns,
        correct_interactions=0,
        unscored_interactions=turns,
        is_scored=False,
        is_fully_correct=None,
        threshold=config.threshold,
        correctness_scores=[None] * turns,
        correct_indices=[],
        tool_correctness_scores=[None] * turns,
        k=config.k,
        **_rate_fields(None),
        interactions=interactions,
        efficiency=conversation_efficiency(dataset) if config.efficiency else None,  # spent all the same
        unscored=marked,
    )


_RATE_FIELDS = tuple(RateEstimate.model_fields)


def _rate_fields(rates: RateEstimate | None) -> dict[str, Any]:
    """A conversation's pass@k / pass^k fields from its `RateEstimate` (all None without one)."""
    return {name: None if rates is None else getattr(rates, name) for name in _RATE_FIELDS}


def _goal_check(goal: str, judgement: TurnJudgement | None, config: EvaluationConfig) -> GoalCheck:
    """The `GoalCheck` of a conversation's goal from its judgement (None: it was not judged):
    achieved when its combined score is above 0.5 (`judges.goal.goal_achieved`)."""
    from fair_forge_core.judges.goal import goal_achieved

    if judgement is None:
        judgement = TurnJudgement(score=None, error="the goal was not judged")
    return GoalCheck(
        goal=goal,
        goal_achieved=None if judgement.score is None else goal_achieved(judgement.score),
        score=judgement.score,
        reasoning=judgement.reasoning,
        error=judgement.error,
        required=config.require_goal,
        judged_by=judgement.judged_by,
        judge_votes=None if judgement.votes is None else list(judgement.votes),
        judge_agreement=judgement.agreement,
    )


def task_outcomes(conversations: list[ConversationMetrics], k: int) -> Counter[tuple[int, int]]:
    """How many tasks have each (n, c), n scored attempts of which c fully correct, over the
    tasks with at least k scored attempts (the tasks `per_task` averages over).

    A task is one assistant's (`assistant_key`), as in `task_stability`: two assistants'
    attempts at one `task_id` are two tasks, never pooled. A conversation without a `task_id`
    is a task of its own, even if another shares its session_id. Unscored conversations are
    not attempts.
    """
    attempts: dict[tuple[str, str | int], list[bool]] = defaultdict(list)
    for index, conversation in enumerate(conversations):
        if not conversation.is_scored:
            continue
        attempts[assistant_key(index, conversation)].append(bool(conversation.is_fully_correct))
    return Counter((len(o), sum(o)) for o in attempts.values() if len(o) >= k)


def assistant_key(index: int, conversation: ConversationMetrics) -> tuple[str, str | int]:
    """The task of the conversation at `index` as `per_task` counts it: (assistant, `task_key`)."""
    return conversation.assistant_id, task_key(index, conversation)


def per_task_exact(outcomes: Counter[tuple[int, int]], k: int) -> tuple[Fraction, Fraction] | None:
    """The per-task (pass@k, pass^k) of `task_outcomes` as exact fractions, for the readiness
    tier: the mean over tasks of 1 − C(n−c, k)/C(n, k) and of C(c, k)/C(n, k). None without tasks."""
    tasks = sum(outcomes.values())
    if not tasks:
        return None
    at_k = sum(count * (1 - Fraction(math.comb(n - c, k), math.comb(n, k))) for (n, c), count in outcomes.items())
    pow_k = sum(count * Fraction(math.comb(c, k), math.comb(n, k)) for (n, c), count in outcomes.items())
    return Fraction(at_k) / tasks, Fraction(pow_k) / tasks


def per_task_metrics(conversations: list[ConversationMetrics], k: int, ci_level: float = 0.95) -> PerTaskMetrics:
    """τ-bench pass@k / pass^k: per task, the unbiased estimators over its scored attempts,
    averaged over the tasks with at least k scored attempts (None if there are none), reported
    as the exact mean (`per_task_exact`) correctly rounded.

    Interval (`interval_method` "task_wilson"): the tasks are the sample and the per-task
    values, each in [0, 1], their observations; the bounds are
    `stats.wilson_interval_of_mean(mean, tasks, ci_level)`, conservative because a value in
    [0, 1] varies at most as a 0/1 value of the same mean does. Unlike a bootstrap it never
    collapses to a point when every task scored alike (5 tasks all 3 of 3: pass^3's bounds
    are [0.566, 1] at 95 %). Coverage is measured in `benchmarks/bench_per_task.py`.
    """
    tasks = {assistant_key(index, m) for index, m in enumerate(conversations)}
    outcomes = task_outcomes(conversations, k)
    eligible = sum(outcomes.values())
    fields: dict[str, object] = {"tasks": len(tasks), "tasks_with_k_attempts": eligible}
    if not eligible:
        return PerTaskMetrics.model_validate({**fields, "pass_at_k": None, "pass_pow_k": None})
    exact = per_task_exact(outcomes, k)
    assert exact is not None  # there are eligible tasks
    at_k, pow_k = float(exact[0]), float(exact[1])  # the exact means, correctly rounded
    at_low, at_high = stats.wilson_interval_of_mean(at_k, eligible, ci_level)
    pow_low, pow_high = stats.wilson_interval_of_mean(pow_k, eligible, ci_level)
    return PerTaskMetrics.model_validate(
        {
            **fields,
            "pass_at_k": at_k,
            "pass_pow_k": pow_k,
            "pass_at_k_ci_low": at_low,
            "pass_at_k_ci_high": at_high,
            "pass_pow_k_ci_low": pow_low,
            "pass_pow_k_ci_high": pow_high,
            "ci_level": ci_level,
            "interval_method": "task_wilson",
        }
    )


def aggregate(conversations: list[ConversationMetrics], config: EvaluationConfig) -> AggregatedMetrics:
    """Aggregated metrics over conversations: n = scored conversations, c = fully correct ones.

    Unscored conversations are counted in `unscored_conversations` and left out of
    n and c. With n = 0 every rate is None. `per_task` appears when any conversation
    has a task_id, `by_assistant` when there are several assistant_ids, `task_stability` when
    `config.task_stability` asks (`flakiness.task_stability`, over all the conversations given),
    `efficiency` under `config.efficiency` (`efficiency.aggregate_efficiency`), `unscored_by_cause`
    when some conversation was unscored before judging (`unscored_by_cause`), and
    `tool_utilization_unmeasured` when some turn's tool utilization was not measured.
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
            interpretation_explanation=tiers.explain(
                tier, rates.pass_at_k, rates.pass_pow_k, k, "pooled posterior mean" if bayesian else "pooled plug-in"
            ),
            curve=stats.pass_curve(n, c, k, mode),
        )
        if bayesian:
            fields["conservative_interpretation"] = tiers.interpret(
                tiers.on_boundary(rates.pass_at_k_ci_low),  # type: ignore[arg-type]
                tiers.on_boundary(rates.pass_pow_k_ci_low),  # type: ignore[arg-type]
            )
    per_task = None
    if any(m.task_id is not None for m in conversations):
        per_task = fields["per_task"] = per_task_metrics(scored, k, mode.ci_level)
    fields["readiness"] = _readiness(conversations, fields, per_task, config)
    if config.task_stability:
        fields["task_stability"] = task_stability(conversations, mode.ci_level)
    if config.efficiency:
        fields["efficiency"] = aggregate_efficiency(conversations)
    fields["unscored_by_cause"] = unscored_by_cause(conversations)
    fields["tool_utilization_unmeasured"] = utilization_unmeasured(conversations) or None
    assistants = sorted({m.assistant_id for m in conversations})
    if len(assistants) > 1:
        fields["by_assistant"] = {
            name: aggregate([m for m in conversations if m.assistant_id == name], config) for name in assistants
        }
    return AggregatedMetrics.model_validate(fields)


def _readiness(
    conversations: list[ConversationMetrics],
    fields: dict[str, object],
    per_task: PerTaskMetrics | None,
    config: EvaluationConfig,
) -> Readiness:
    """`tiers.readiness` of an aggregate: per task when some task has k scored attempts (the
    tier of the exact per-task figures), else over conversations (`interpretation`)."""
    scored = [m for m in conversations if m.is_scored]
    causes = unscored_causes(conversations)
    tier: tiers.Tier | None = fields["interpretation"]  # type: ignore[assignment]
    basis: Literal["per_task", "conversations"] = "conversations"
    sample = len(scored)
    if per_task is not None and per_task.tasks_with_k_attempts:
        exact = per_task_exact(task_outcomes(scored, config.k), config.k)
        assert exact is not None  # some task has k attempts
        tier, basis, sample = tiers.interpret(*exact), "per_task", per_task.tasks_with_k_attempts
    return tiers.readiness(
        tier=tier,
        basis=basis,
        scored=len(scored),
        total=len(conversations),
        sample=sample,
        max_unscored_share=config.max_unscored_share,
        k=config.k,
        unscored_because=causes.most_common(1)[0][0] if causes else None,
    )
