"""From judge verdicts and tool scores to per-conversation and aggregated metrics (docs/correctness.md,
docs/statistics.md, docs/readiness.md).

Pure: no judge, no I/O. `aggregate` needs only per-conversation metrics, so results
computed in pieces (shards) combine into exactly the numbers of one evaluation.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from fractions import Fraction
from typing import Any, Literal

from fair_forge_core import stats, tiers
from fair_forge_core.checks import Check, active_checks, conversation_verdict, run_checks, turn_verdict
from fair_forge_core.checks.answer import AnswerCheck
from fair_forge_core.checks.base import NOT_JUDGED
from fair_forge_core.checks.base import result as check_result
from fair_forge_core.efficiency import aggregate_efficiency, conversation_efficiency
from fair_forge_core.flakiness import task_key, task_stability
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.schemas import (
    AggregatedMetrics,
    Batch,
    CheckCause,
    CheckResult,
    ConversationMetrics,
    Dataset,
    EvaluationConfig,
    GoalCheck,
    InteractionResult,
    PerTaskMetrics,
    RateEstimate,
    Readiness,
    StateCheck,
    ToolCorrectnessScore,
    UnscoredCause,
)
from fair_forge_core.schemas.base import with_shared_fields_set
from fair_forge_core.trusted import made, trusted

__all__ = ["TurnJudgement"]  # what the judge says of a turn, from `judges.judgement`: what these functions read


def unscored_errors(conversation: ConversationMetrics) -> list[tuple[str, str]]:
    """Why a conversation is unscored, each reason with what it stopped: for a conversation
    unscored before judging (`unscored`), its cause in words (`tiers.UNSCORED_CAUSES`: one text
    per cause, so that conversations count together) with the unit "conversation", alone; else
    each required unscored result of its `checks` (docs/checks.md), its reason with the unit
    "turn" for a turn's result and the check's name for the conversation's (a result without
    per-turn detail holds only the conversation's). Empty for a scored conversation."""
    if conversation.is_scored:
        return []
    if conversation.unscored is not None:
        return [("conversation", tiers.UNSCORED_CAUSES[conversation.unscored.cause])]
    return [
        ("turn" if r.scope == "turn" else r.name, r.reason)
        for r in conversation.checks
        if r.required and r.outcome == "unscored"
    ]


def unscored_causes(conversations: list[ConversationMetrics]) -> Counter[CheckCause]:
    """How many conversations unscored before judging each typed cause accounts for (their
    `unscored.cause`), and how many required unscored results of the others' `checks` each
    result's `cause` does (a result without per-turn detail counts only the conversation's)."""
    causes: Counter[CheckCause] = Counter(
        m.unscored.cause for m in conversations if m.unscored is not None and not m.is_scored
    )
    causes.update(
        r.cause or "judge_error"
        for m in conversations
        if m.unscored is None and not m.is_scored
        for r in m.checks
        if r.required and r.outcome == "unscored"
    )
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


def conversation_metrics(
    dataset: Dataset,
    judgements: list[TurnJudgement],
    config: EvaluationConfig,
    *,
    goal: TurnJudgement | None = None,
    checks: list[Check] | None = None,
) -> ConversationMetrics:
    """Metrics of one conversation from the judge's `judgements` of its turns (`judgements[i]`
    belongs to `dataset.conversation[i]`) and of its `goal` (when it has one), the `checks` of
    the evaluation (`checks.active_checks(config)` when not given: pass the same list to every
    conversation of an evaluation, so that repeated turns' tools are scored once) run on them
    (`checks.run_checks`), then `metrics_of_results`. A check that asks other questions gets
    them unjudged. A conversation unscored before judging (`dataset.unscored`) is
    `unscored_conversation_metrics`'s."""
    if dataset.unscored is not None:
        return unscored_conversation_metrics(dataset, config)
    judged = {"answer_correctness": judgements, "goal": [] if goal is None else [goal]}
    results = run_checks(active_checks(config) if checks is None else checks, dataset, judged)
    return metrics_of_results(dataset, results, config)


def metrics_of_results(dataset: Dataset, results: list[CheckResult], config: EvaluationConfig) -> ConversationMetrics:
    """A conversation's metrics from its check results (`ConversationMetrics.checks`), by the
    verdict rule (docs/checks.md "The verdict": `checks.turn_verdict`, `checks.conversation_verdict`).

    pass@k / pass^k count turns: n = scored turns, c = correct ones (None when no turn was
    scored). The wire fields of the built-in checks are filled from their results: each turn's
    `InteractionResult` (the `answer_correctness` judgement; `tool_correct` the
    `tool_correctness` outcome, None when it has none or is unscored; `tool_policy`),
    `tool_correctness_scores`, `state_check` (`end_state`) and `goal_check` (`goal`).
    """
    by_turn: list[list[CheckResult]] = [[] for _ in dataset.conversation]
    own: dict[str, CheckResult] = {}
    for r in results:
        if r.turn is None:
            own.setdefault(r.name, r)
        else:
            by_turn[r.turn].append(r)
    interactions: list[InteractionResult] = []
    tool_scores: list[ToolCorrectnessScore | None] = []
    correct_indices: list[int] = []
    scored, threshold = 0, config.threshold
    for index, (batch, turn_results) in enumerate(zip(dataset.conversation, by_turn, strict=True)):
        interaction, tool_score = _interaction(batch, turn_results, threshold)
        interactions.append(interaction)
        tool_scores.append(tool_score)
        if interaction.is_correct is not None:
            scored += 1
            if interaction.is_correct:
                correct_indices.append(index)
    is_scored, fully_correct = conversation_verdict(results)
    rates = None
    if scored:
        rates = stats.estimate_rates(scored, len(correct_indices), config.k, config.statistical_mode)
    state, goal = own.get("end_state"), own.get("goal")
    fields: dict[str, Any] = {
        "session_id": dataset.session_id,
        "assistant_id": dataset.assistant_id,
        "task_id": dataset.task_id,
        "total_interactions": len(interactions),
        "correct_interactions": len(correct_indices),
        "unscored_interactions": len(interactions) - scored,
        "is_scored": is_scored,
        "is_fully_correct": fully_correct,
        "threshold": float(threshold),  # as validation gives it (a float field takes an int as a float)
        "correctness_scores": [i.answer_score for i in interactions],
        "correct_indices": correct_indices,
        "tool_correctness_scores": tool_scores,
        "k": config.k,
        **_rate_fields(rates),
        "interactions": interactions,
        "state_check": None if state is None else state._view,
        "goal_check": None if goal is None else goal._view,
        "efficiency": conversation_efficiency(dataset) if config.efficiency else None,
        "unscored": None,
        "checks": list(results),  # the caller's list is its own, as validation would copy it
    }
    if not _views_are(fields, _CONVERSATION_VIEWS):
        # A plug-in registered under a built-in name may hand another view: validated, as any value.
        return with_shared_fields_set(ConversationMetrics(**fields))
    return trusted(ConversationMetrics, fields)


_CONVERSATION_VIEWS: dict[str, type[Any]] = {"state_check": StateCheck, "goal_check": GoalCheck}
"""The fields of `ConversationMetrics` filled from a check's view, and the type validation would require."""


def _views_are(fields: dict[str, Any], types: dict[str, type[Any]]) -> bool:
    """Whether each of `fields` named in `types` is None or exactly of its type."""
    return all(fields[name] is None or type(fields[name]) is kind for name, kind in types.items())


_OUTCOME_VALUE = {"passed": True, "failed": False, "unscored": None}


def _interaction(
    batch: Batch, results: list[CheckResult], threshold: float
) -> tuple[InteractionResult, ToolCorrectnessScore | None]:
    """A turn's `InteractionResult` and tool score from its results (`metrics_of_results`).

    Every field but the turn's own (`qa_id`, `observation`) follows from `results` and
    `threshold`, and attempts of one task repeat their turns' results, which are one object per
    distinct value (`checks.base.result`): so the first turn of each distinct (threshold, results)
    is validated (`_turn_template`), and every turn that repeats them is that template's values
    with its own `qa_id` and `observation`, built by `trusted.made` (50,000 times for 10,000
    conversations of 5 turns), among the last `_TEMPLATES_SIZE` templates made."""
    key = (threshold, *map(id, results))
    found = _TEMPLATES.get(key)
    if found is None:
        if len(_TEMPLATES) >= _TEMPLATES_SIZE:
            _TEMPLATES.clear()
        found = _TEMPLATES[key] = (tuple(results), *_turn_template(batch, results, threshold))
    _, template, tool_score = found
    values = template.__dict__.copy()  # the template's: every field of its class
    values["qa_id"], values["observation"] = batch.qa_id, batch.observation
    return made(InteractionResult, values, template.__pydantic_fields_set__), tool_score


def _turn_template(
    batch: Batch, results: list[CheckResult], threshold: float
) -> tuple[InteractionResult, ToolCorrectnessScore | None]:
    """The validated `InteractionResult` of a turn (`batch`) and its tool score: the
    `answer_correctness` judgement (`NOT_JUDGED` without one); `tool_correct` the `tool_correctness`
    outcome (None when it has none or is unscored); `is_correct` the turn's verdict
    (`checks.turn_verdict`); `tool_policy` the `tool_policy` view."""
    named = {r.name: r for r in results}
    answer, tools, policy = named.get("answer_correctness"), named.get("tool_correctness"), named.get("tool_policy")
    judgement: TurnJudgement = answer._view if answer is not None else NOT_JUDGED
    interaction = InteractionResult(  # every field given, as for `ConversationMetrics`
        qa_id=batch.qa_id,
        answer_score=judgement.score,
        answer_correct=None if judgement.score is None else judgement.score >= threshold,
        tool_correct=None if tools is None else _OUTCOME_VALUE[tools.outcome],
        is_correct=turn_verdict(results),
        judge_reasoning=judgement.reasoning,
        error=judgement.error,
        observation=batch.observation,
        judged_by=judgement.judged_by,
        judge_votes=None if judgement.votes is None else list(judgement.votes),
        judge_agreement=judgement.agreement,
        tool_policy=None if policy is None else policy._view,
    )
    return with_shared_fields_set(interaction), None if tools is None else tools._view


_TEMPLATES_SIZE = 65_536
_TEMPLATES: dict[tuple[Any, ...], tuple[tuple[CheckResult, ...], InteractionResult, ToolCorrectnessScore | None]] = {}
"""The turn templates `_interaction` made last, by the threshold and their results' identities
(an entry holds its results, so no other object can take one of those identities while it lives;
cleared when full: a bound on what it keeps alive, not a cache to tune)."""


def unscored_conversation_metrics(dataset: Dataset, config: EvaluationConfig) -> ConversationMetrics:
    """The metrics of a conversation unscored before judging (`dataset.unscored`): every turn
    unscored (no score, no tool score, its error naming the cause; its `answer_correctness`
    result unscored with that cause), no rate, no other check (end state, goal, policy),
    `is_scored` false, and `unscored` carrying the cause and detail; readiness counts it in
    `total`, never in n or c."""
    marked = dataset.unscored
    if marked is None:
        raise ValueError("unscored_conversation_metrics needs a dataset with `unscored`")
    error = f"not judged: the conversation is unscored ({marked.cause}: {marked.detail})"
    unjudged = TurnJudgement(score=None, error=error)
    results = [
        check_result(
            AnswerCheck, turn=index, outcome="unscored", reason=error, required=True, cause=marked.cause, view=unjudged
        )
        for index in range(len(dataset.conversation))
    ]
    turn_results = zip(dataset.conversation, results, strict=True)
    interactions = [_interaction(batch, [r], config.threshold)[0] for batch, r in turn_results]
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
        checks=results,
    )


_RATE_FIELDS = tuple(RateEstimate.model_fields)


def _rate_fields(rates: RateEstimate | None) -> dict[str, Any]:
    """A conversation's pass@k / pass^k fields from its `RateEstimate` (all None without one).
    Read once per estimate: `stats.estimate_rates` gives one frozen object per question."""
    found = _RATES_READ.get(id(rates))
    if found is None or found[0] is not rates:
        if len(_RATES_READ) >= _TEMPLATES_SIZE:
            _RATES_READ.clear()
        fields = {name: None if rates is None else getattr(rates, name) for name in _RATE_FIELDS}
        found = _RATES_READ[id(rates)] = (rates, fields)
    return found[1]


_RATES_READ: dict[int, tuple[RateEstimate | None, dict[str, Any]]] = {}
"""Each estimate's fields (`_rate_fields`) by its identity; the entry holds the estimate."""


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


def per_task_figures(outcomes: Counter[tuple[int, int]], k: int, ci_level: float) -> dict[str, float] | None:
    """pass@k and pass^k over the tasks of `outcomes` (`task_outcomes`: (n, c) → tasks), their exact
    means (`per_task_exact`) correctly rounded, each with its Wilson bounds over the tasks at
    `ci_level` (`per_task_metrics` says why); None when no task has k attempts."""
    exact = per_task_exact(outcomes, k)
    if exact is None:
        return None
    tasks = sum(outcomes.values())
    at_k, pow_k = float(exact[0]), float(exact[1])
    at_low, at_high = stats.wilson_interval_of_mean(at_k, tasks, ci_level)
    pow_low, pow_high = stats.wilson_interval_of_mean(pow_k, tasks, ci_level)
    return {
        "pass_at_k": at_k,
        "pass_pow_k": pow_k,
        "pass_at_k_ci_low": at_low,
        "pass_at_k_ci_high": at_high,
        "pass_pow_k_ci_low": pow_low,
        "pass_pow_k_ci_high": pow_high,
    }


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
    figures = per_task_figures(outcomes, k, ci_level)
    assert figures is not None  # there are eligible tasks
    return PerTaskMetrics.model_validate(
        {
            **fields,
            **figures,
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
