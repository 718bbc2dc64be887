"""Turn and conversation correctness (docs/correctness.md) and aggregation (docs/statistics.md), on judgements given directly."""

from __future__ import annotations

import math

import pytest

from fair_forge_core import stats
from fair_forge_core.evaluate import NoConversationScored, build_result
from fair_forge_core.metrics import TurnJudgement, aggregate, conversation_metrics, per_task_metrics
from fair_forge_core.schemas import Dataset, EvaluationConfig, StatisticalMode
from fair_forge_testing.builders import conversation, turn

CALCULATOR_TOOLS = {
    "agentic": {
        "tools_used": [{"tool_name": "calculator", "parameters": {"a": 5, "b": 3}, "result": 8}],
        "final_answer_uses_tools": True,
    },
    "ground_truth_agentic": {"expected_tools": [{"tool_name": "calculator", "parameters": {"a": 5, "b": 3}}]},
}
WRONG_TOOLS = {
    "agentic": {
        "tools_used": [{"tool_name": "search", "parameters": {"q": "5+3"}}],
        "final_answer_uses_tools": False,
    },
    "ground_truth_agentic": {"expected_tools": [{"tool_name": "calculator", "parameters": {"a": 5, "b": 3}}]},
}


def one_turn(session_id: str, tools: dict | None = None, **extra) -> Dataset:
    return Dataset.model_validate(
        conversation(session_id, [turn("q", "What is 5 + 3?", "8", "8", **(tools or {}))], **extra)
    )


def scored(score: float) -> TurnJudgement:
    return TurnJudgement(score=score, reasoning="r")


UNSCORED = TurnJudgement(score=None, error="judge provider still failing after 8 attempts: HTTP 500")


def test_answer_threshold_is_inclusive() -> None:
    config = EvaluationConfig(threshold=0.7)
    assert conversation_metrics(one_turn("a"), [scored(0.7)], config).is_fully_correct is True
    assert conversation_metrics(one_turn("a"), [scored(0.69)], config).is_fully_correct is False


def test_wrong_tools_fail_the_turn_when_tool_correctness_is_required() -> None:
    metrics = conversation_metrics(one_turn("a", WRONG_TOOLS), [scored(1.0)], EvaluationConfig())
    interaction = metrics.interactions[0]
    assert (interaction.answer_correct, interaction.tool_correct, interaction.is_correct) == (
        True,
        False,
        False,
    )
    assert metrics.tool_correctness_scores[0].tool_selection_correct == 0.0


def test_without_required_tool_correctness_only_the_answer_counts() -> None:
    metrics = conversation_metrics(
        one_turn("a", WRONG_TOOLS), [scored(1.0)], EvaluationConfig(require_tool_correctness=False)
    )
    assert metrics.interactions[0].tool_correct is False
    assert metrics.is_fully_correct is True


def test_turn_without_ground_truth_agentic_has_no_tool_score() -> None:
    metrics = conversation_metrics(one_turn("a"), [scored(1.0)], EvaluationConfig())
    assert metrics.tool_correctness_scores == [None]
    assert metrics.interactions[0].tool_correct is None


def test_conversation_passes_only_if_every_turn_passes() -> None:
    data = Dataset.model_validate(conversation("paper-3", [turn(f"q{i}", "q", "a", "a") for i in range(3)]))
    # The paper's conversation 3: scores [0.00, 0.95, 0.95] → 2/3 turns, FAIL.
    metrics = conversation_metrics(data, [scored(0.0), scored(0.95), scored(0.95)], EvaluationConfig(k=3))
    assert (metrics.correct_interactions, metrics.is_fully_correct, metrics.correct_indices) == (
        2,
        False,
        [1, 2],
    )
    assert metrics.pass_at_k == pytest.approx(1 - (1 / 3) ** 3)
    assert metrics.pass_pow_k == pytest.approx((2 / 3) ** 3)


def test_unscored_turn_is_reported_not_zeroed() -> None:
    data = Dataset.model_validate(conversation("s", [turn("q1", "q", "a", "a"), turn("q2", "q2", "b", "b")]))
    metrics = conversation_metrics(data, [scored(0.9), UNSCORED], EvaluationConfig())
    assert metrics.correctness_scores == [0.9, None]
    assert (metrics.is_scored, metrics.is_fully_correct, metrics.unscored_interactions) == (False, None, 1)
    assert metrics.interactions[1].error == UNSCORED.error
    assert metrics.pass_at_k == stats.pass_at_k(1, 1, 3)  # over the one scored turn


def test_aggregate_reproduces_the_readme_numbers() -> None:
    config = EvaluationConfig(k=3)
    conversations = [
        conversation_metrics(one_turn("c1"), [scored(0.9)], config),
        conversation_metrics(one_turn("c2"), [scored(0.95)], config),
        conversation_metrics(one_turn("c3"), [scored(0.1)], config),
    ]
    agg = aggregate(conversations, config)
    assert (agg.total_conversations, agg.fully_correct_conversations) == (3, 2)
    assert round(agg.conversation_success_rate, 4) == 0.6667
    assert round(agg.pass_at_k, 4) == 0.9630 and round(agg.pass_pow_k, 4) == 0.2963
    assert agg.interpretation == "inconsistent"
    assert agg.pass_at_k_unbiased == pytest.approx(1 - math.comb(1, 3) / math.comb(3, 3))
    assert agg.pass_pow_k_unbiased == 0.0
    assert agg.sample_size_warning is not None
    assert agg.pass_at_k_ci_low is None and agg.ci_level is None
    assert [p.k for p in agg.curve] == list(range(1, 11))
    assert agg.per_task is None and agg.by_assistant is None


def test_unscored_conversations_are_left_out_of_n_and_c() -> None:
    config = EvaluationConfig(k=1)
    conversations = [
        conversation_metrics(one_turn("c1"), [scored(0.9)], config),
        conversation_metrics(one_turn("c2"), [UNSCORED], config),
    ]
    result = build_result(conversations, config)
    agg = result.aggregated_metrics
    assert (agg.total_conversations, agg.fully_correct_conversations, agg.unscored_conversations) == (1, 1, 1)
    assert "HTTP 500" in result.warnings[0]


def test_no_scored_conversation_raises() -> None:
    config = EvaluationConfig()
    with pytest.raises(NoConversationScored, match="HTTP 500"):
        build_result([conversation_metrics(one_turn("c"), [UNSCORED], config)], config)


def test_bayesian_aggregate_has_intervals_and_a_conservative_tier() -> None:
    config = EvaluationConfig(k=3, statistical_mode="bayesian")
    conversations = [conversation_metrics(one_turn(f"c{i}"), [scored(1.0 if i < 2 else 0.0)], config) for i in range(3)]
    agg = aggregate(conversations, config)
    # Beta(3, 2) posterior: E[p^3] = 3·4·5 / (5·6·7)
    assert agg.pass_pow_k == pytest.approx(60 / 210)
    assert agg.ci_level == 0.95 and agg.statistical_mode == "bayesian"
    assert agg.pass_at_k_ci_low < agg.pass_at_k_ci_high
    assert agg.conservative_interpretation == "needs_improvement"


def test_per_task_averages_unbiased_estimators_over_tasks_with_k_attempts() -> None:
    config = EvaluationConfig(k=2)
    outcomes = {"t1": [1.0, 1.0, 0.0], "t2": [1.0, 0.0], "t3": [1.0]}
    conversations = [
        conversation_metrics(one_turn(f"{task}-{i}", task_id=task), [scored(score)], config)
        for task, scores in outcomes.items()
        for i, score in enumerate(scores)
    ]
    per_task = per_task_metrics(conversations, k=2)
    assert (per_task.tasks, per_task.tasks_with_k_attempts) == (3, 2)
    t1_at, t2_at = 1 - math.comb(1, 2) / math.comb(3, 2), 1 - math.comb(1, 2) / math.comb(2, 2)
    t1_pow, t2_pow = math.comb(2, 2) / math.comb(3, 2), 0.0
    assert per_task.pass_at_k == pytest.approx((t1_at + t2_at) / 2)
    assert per_task.pass_pow_k == pytest.approx((t1_pow + t2_pow) / 2)
    assert aggregate(conversations, config).per_task == per_task


def test_conversations_without_task_id_are_tasks_of_their_own() -> None:
    config = EvaluationConfig(k=1)
    conversations = [
        conversation_metrics(one_turn("a", task_id="t"), [scored(1.0)], config),
        conversation_metrics(one_turn("b"), [scored(0.0)], config),
    ]
    assert per_task_metrics(conversations, k=1).tasks == 2


def test_by_assistant_splits_the_aggregate() -> None:
    config = EvaluationConfig(k=1)
    conversations = [
        conversation_metrics(one_turn("a1", assistant_id="v1"), [scored(1.0)], config),
        conversation_metrics(one_turn("a2", assistant_id="v1"), [scored(0.0)], config),
        conversation_metrics(one_turn("b1", assistant_id="v2"), [scored(1.0)], config),
    ]
    by = aggregate(conversations, config).by_assistant
    assert set(by) == {"v1", "v2"}
    assert by["v1"].pass_at_k == 0.5 and by["v2"].pass_at_k == 1.0
    assert by["v1"].by_assistant is None


def test_per_task_is_each_assistants_and_the_top_level_never_pools_two_assistants_attempts() -> None:
    # One task_id, two assistants, k = 3: v1 passes 3 of 3, v2 0 of 3 (docs/response.md, per_task).
    config = EvaluationConfig(k=3)
    conversations = [
        conversation_metrics(one_turn(f"{name}-{i}", assistant_id=name, task_id="refund"), [scored(score)], config)
        for name, score in (("v1", 1.0), ("v2", 0.0))
        for i in range(3)
    ]
    aggregated = aggregate(conversations, config)
    assert aggregated.by_assistant is not None
    v1, v2 = aggregated.by_assistant["v1"].per_task, aggregated.by_assistant["v2"].per_task
    assert v1 is not None and v2 is not None
    assert (v1.tasks, v1.pass_at_k, v1.pass_pow_k) == (1, 1.0, 1.0)  # C(3, 3)/C(3, 3)
    assert (v2.tasks, v2.pass_at_k, v2.pass_pow_k) == (1, 0.0, 0.0)
    top = aggregated.per_task
    assert top is not None
    # Each (assistant, task) a task: the mean of 1 and 0. Pooled as one task of 6 attempts with 3
    # passes it was pass^3 = C(3, 3)/C(6, 3) = 1/20 and pass@3 = 19/20, a figure of neither agent.
    assert (top.tasks, top.tasks_with_k_attempts) == (2, 2)
    assert (top.pass_at_k, top.pass_pow_k) == (0.5, 0.5)
    assert aggregated.readiness is not None and aggregated.readiness.basis == "per_task"


def test_aggregation_ignores_conversation_order() -> None:
    config = EvaluationConfig(k=3, statistical_mode=StatisticalMode(mode="bayesian", ci_level=0.9))
    conversations = [conversation_metrics(one_turn(f"c{i}"), [scored(i / 10)], config) for i in range(10)]
    assert aggregate(conversations, config).model_dump(exclude={"by_assistant"}) == aggregate(
        conversations[::-1], config
    ).model_dump(exclude={"by_assistant"})


def test_include_interactions_false_drops_detail_and_says_so() -> None:
    config = EvaluationConfig(include_interactions=False)
    result = build_result([conversation_metrics(one_turn("c"), [scored(1.0)], config)], config)
    assert result.per_conversation_metrics[0].interactions is None
    assert any("per-turn detail" in w for w in result.warnings)


def test_conversations_without_task_id_are_their_own_tasks_even_with_a_shared_session_id() -> None:
    config = EvaluationConfig(k=1)
    conversations = [
        conversation_metrics(one_turn("same"), [scored(1.0)], config),
        conversation_metrics(one_turn("same"), [scored(0.0)], config),
        conversation_metrics(one_turn("t-1", task_id="t"), [scored(1.0)], config),
    ]
    per_task = per_task_metrics(conversations, k=1)
    assert per_task.tasks == 3
    assert per_task.pass_at_k == pytest.approx((1.0 + 0.0 + 1.0) / 3)


# --------------------------------------------------------------------------- audit: boundaries and guards


def all_correct(count: int, config: EvaluationConfig) -> list:
    return [conversation_metrics(one_turn(f"c{i}"), [scored(1.0)], config) for i in range(count)]


def test_a_posterior_mean_exactly_on_a_boundary_gets_the_tier_the_rule_says() -> None:
    # 5 of 5, k = 6, uniform prior: E[p^6] = 1/2 exactly (∏_{i<6} (6+i)/(7+i) = 6/12), and
    # E[1 − (1 − p)^6] = 1 − 1/924 > 0.95. pass^k = 0.5 is not < 0.5: functional, not inconsistent.
    config = EvaluationConfig.model_validate({"k": 6, "statistical_mode": "bayesian"})
    agg = aggregate(all_correct(5, config), config)
    assert agg.pass_pow_k == 0.5  # the exact value, correctly rounded (the product in floats gives 0.49999999999999994)
    assert agg.pass_at_k == 1 - 1 / 924
    assert agg.interpretation == "functional"


def test_a_credible_bound_exactly_on_a_boundary_gets_the_conservative_tier_the_rule_says() -> None:
    # 7 of 7 with a uniform prior: p ~ Beta(8, 1), CDF x^8, so at ci_level 0.5 (tail 1/4) the lower
    # quantile is (1/4)^(1/8) and pass^4's lower bound is (1/4)^(4/8) = 1/2 exactly; pass@4's lower bound
    # is 1 − (1 − 4^(-1/8))^4 ≈ 0.99936 > 0.95. So: functional, not inconsistent.
    config = EvaluationConfig.model_validate({"k": 4, "statistical_mode": {"mode": "bayesian", "ci_level": 0.5}})
    agg = aggregate(all_correct(7, config), config)
    assert agg.pass_pow_k_ci_low == pytest.approx(0.5, abs=1e-15)
    assert agg.pass_at_k_ci_low == pytest.approx(1 - (1 - 0.25 ** (1 / 8)) ** 4, rel=1e-12)
    assert agg.conservative_interpretation == "functional"


@pytest.mark.parametrize("score", [math.nan, 1.5, -0.1, math.inf, True])
def test_a_judge_score_outside_zero_to_one_is_refused_by_the_pure_layer(score: float) -> None:
    with pytest.raises(ValueError, match="a judge score must be a number in"):
        TurnJudgement(score=score)


def test_empty_ground_truth_agentic_means_tools_not_evaluated() -> None:
    # The original library's default `{}`: nothing to score against, so no tool verdict at all.
    used = {"tools_used": [{"tool_name": "search", "parameters": {"q": "x"}}], "final_answer_uses_tools": True}
    config = EvaluationConfig()
    not_evaluated = conversation_metrics(
        one_turn("c", {"agentic": used, "ground_truth_agentic": {}}), [scored(0.9)], config
    )
    assert not_evaluated.tool_correctness_scores == [None]
    assert not_evaluated.interactions[0].tool_correct is None
    assert not_evaluated.is_fully_correct is True
    # `"expected_tools": []` is an expectation: no tool wanted, one used → selection 0, the turn fails.
    none_expected = conversation_metrics(
        one_turn("c", {"agentic": used, "ground_truth_agentic": {"expected_tools": []}}), [scored(0.9)], config
    )
    assert none_expected.tool_correctness_scores[0].tool_selection_correct == 0.0
    assert none_expected.is_fully_correct is False


def test_observation_is_echoed_per_turn() -> None:
    metrics = conversation_metrics(
        one_turn("c", {"observation": "calculator returned 8"}), [scored(1.0)], EvaluationConfig()
    )
    assert metrics.interactions[0].observation == "calculator returned 8"


def test_a_conversation_unscored_before_judging_asks_the_judge_nothing_and_is_counted_by_cause() -> None:
    import asyncio

    from fair_forge_core.evaluate import evaluate
    from fair_forge_core.judges.reference import ReferenceJudge
    from fair_forge_core.schemas import Dataset
    from fair_forge_core.tiers import UNSCORED_CAUSES

    def dataset(session: str, answer: str, **extra: object) -> Dataset:
        turn = {"qa_id": "q", "query": "1+1?", "assistant": answer, "ground_truth_assistant": "2"}
        return Dataset.model_validate(
            {"session_id": session, "assistant_id": "a", "task_id": "t", "conversation": [turn], **extra}
        )

    kept = {"cause": "state_not_reported", "detail": "no final_state"}
    datasets = [dataset("s0", "It is 2."), dataset("s1", "an answer no judge may read", unscored=kept)]
    totals: list[int] = []  # the distinct judge requests, as the progress callback counts them
    result = asyncio.run(evaluate(datasets, ReferenceJudge(), on_progress=lambda done, total: totals.append(total)))
    assert set(totals) == {1}  # s0's turn alone: s1's differing answer was never asked
    second = result.per_conversation_metrics[1]
    assert (second.is_scored, second.unscored and second.unscored.cause, second.correctness_scores) == (
        False,
        "state_not_reported",
        [None],
    )
    aggregated = result.aggregated_metrics
    assert (aggregated.total_conversations, aggregated.unscored_conversations, aggregated.unscored_by_cause) == (
        1,
        1,
        {"state_not_reported": 1},
    )
    assert "unscored_by_cause" not in evaluate_json_of([datasets[0]])  # absent when none: results read as before
    assert set(UNSCORED_CAUSES) >= {"not_joined", "state_not_reported", "turns_differ"}


def evaluate_json_of(datasets: list) -> dict:  # type: ignore[type-arg]
    import asyncio

    from fair_forge_core.evaluate import evaluate
    from fair_forge_core.judges.reference import ReferenceJudge

    return asyncio.run(evaluate(datasets, ReferenceJudge())).model_dump(mode="json")["aggregated_metrics"]


def test_a_repeated_turn_is_its_firsts_values_with_its_own_qa_id_and_observation() -> None:
    # Three attempts repeating one turn (one judgement object, the same checks: their results are
    # one object each), with their own qa_id and observation; the judge's score an int, which
    # validation makes a float. Each conversation's metrics are what validation makes of them.
    from fair_forge_core.checks import active_checks
    from fair_forge_core.schemas import ConversationMetrics

    config = EvaluationConfig(threshold=1)  # validated to 1.0
    checks = active_checks(config)
    judgement = TurnJudgement(score=1, reasoning="right")
    attempts = [
        Dataset.model_validate(
            conversation(name, [turn(name, "What is 5 + 3?", "8", "8", observation=f"seen {name}", **CALCULATOR_TOOLS)])
        )
        for name in ("a", "b", "c")
    ]
    made = [conversation_metrics(d, [judgement], config, checks=checks) for d in attempts]
    assert made[0].checks[0] is made[1].checks[0]  # the turns' results are shared: the repeat is taken
    for name, metrics in zip(("a", "b", "c"), made, strict=True):
        (interaction,) = metrics.interactions
        assert (interaction.qa_id, interaction.observation) == (name, f"seen {name}")
        assert type(interaction.answer_score) is float and interaction.is_correct is True
        assert metrics.model_fields_set == set(ConversationMetrics.model_fields)
        assert metrics.model_dump_json() == ConversationMetrics.model_validate(metrics.model_dump()).model_dump_json()
    assert '"answer_score":1.0' in made[2].model_dump_json() and '"threshold":1.0' in made[2].model_dump_json()


def test_a_view_other_than_the_built_in_checks_under_their_name_is_validated() -> None:
    # A plug-in registered as `end_state` handing another view: refused as validation refuses it.
    from pydantic import ValidationError

    from fair_forge_core.checks.base import result
    from fair_forge_core.checks.end_state import EndStateCheck
    from fair_forge_core.metrics import metrics_of_results

    dataset = one_turn("a")
    answer = conversation_metrics(dataset, [scored(1.0)], EvaluationConfig()).checks
    odd = result(EndStateCheck, outcome="passed", reason="r", required=True, view={"matches": "maybe"})
    with pytest.raises(ValidationError, match="state_check"):
        metrics_of_results(dataset, [*answer, odd], EvaluationConfig())
