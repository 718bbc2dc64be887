"""`fair_forge_core.sharding`: shard planning, and sharded evaluation equal to one evaluation to the last digit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fair_forge_core.evaluate import NoConversationScored, evaluate_conversations, evaluate_sync, run_sync
from fair_forge_core.schemas import Dataset, EvaluationConfig
from fair_forge_core.sharding import (
    dump_conversations,
    load_conversations,
    plan_shards,
    reduce_shards,
)
from fair_forge_testing.jobs_support import UNSCORABLE, GarblingJudge, varied_conversations

# --------------------------------------------------------------------------- plan_shards


def test_plan_cuts_by_conversations() -> None:
    assert plan_shards([1] * 7, 3) == [range(0, 3), range(3, 6), range(6, 7)]
    assert plan_shards([1] * 6, 3) == [range(0, 3), range(3, 6)]
    assert plan_shards([1] * 2, 200) == [range(0, 2)]
    assert plan_shards([], 5) == []


def test_plan_cuts_by_turns_without_splitting_a_conversation() -> None:
    assert plan_shards([2, 2, 2, 2], 10, max_turns_per_shard=4) == [range(0, 2), range(2, 4)]
    assert plan_shards([3, 2, 2], 10, max_turns_per_shard=4) == [range(0, 1), range(1, 3)]
    # A conversation longer than the turn bound gets a shard of its own.
    assert plan_shards([1, 9, 1], 10, max_turns_per_shard=4) == [range(0, 1), range(1, 2), range(2, 3)]


def test_plan_cuts_by_tool_calls() -> None:
    # Few turns, many calls: the tool rubric's work is what bounds these shards.
    calls = [40_000 // 3] * 3 + [5]
    assert plan_shards([2, 2, 2, 2], 10, 100, tool_call_counts=calls, max_tool_calls_per_shard=20_000) == [
        range(0, 1),
        range(1, 2),
        range(2, 4),
    ]
    # A conversation above the bound gets a shard of its own.
    assert plan_shards([1, 1], 10, tool_call_counts=[30_000, 1], max_tool_calls_per_shard=20_000) == [
        range(0, 1),
        range(1, 2),
    ]
    assert plan_shards([1, 1], 10, tool_call_counts=[30_000, 1]) == [range(0, 2)]  # no bound given


@pytest.mark.parametrize(("size", "turns"), [(0, None), (-1, None), (3, 0)])
def test_plan_refuses_empty_shards(size: int, turns: int | None) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        plan_shards([1, 2], size, turns)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    turn_counts=st.lists(st.integers(min_value=1, max_value=30), max_size=200),
    size=st.integers(min_value=1, max_value=50),
    max_turns=st.one_of(st.none(), st.integers(min_value=1, max_value=80)),
)
def test_plan_covers_every_conversation_once_in_order_within_bounds(
    turn_counts: list[int], size: int, max_turns: int | None
) -> None:
    shards = plan_shards(turn_counts, size, max_turns)
    assert [i for shard in shards for i in shard] == list(range(len(turn_counts)))
    for n, shard in enumerate(shards):
        assert 1 <= len(shard) <= size
        turns = sum(turn_counts[i] for i in shard)
        if max_turns is not None and len(shard) > 1:
            assert turns <= max_turns
        if n + 1 < len(shards):  # greedy: the next conversation would not have fitted
            following = turn_counts[shards[n + 1].start]
            assert len(shard) == size or (max_turns is not None and turns + following > max_turns)


# --------------------------------------------------------------------------- exactness

WORKLOAD = [Dataset.model_validate(c) for c in varied_conversations(120)]

CONFIGS = {
    "frequentist": EvaluationConfig(),
    "bayesian": EvaluationConfig.model_validate(
        {"k": 5, "statistical_mode": {"mode": "bayesian", "ci_level": 0.9, "prior": [2, 3]}}
    ),
    "answers only, k 2": EvaluationConfig(k=2, threshold=0.8, require_tool_correctness=False),
    "no per-turn detail": EvaluationConfig.model_validate(
        {"include_interactions": False, "tool_weights": {"selection": 0.7, "parameters": 0.1, "sequence": 0.1}}
    ),
    "k above n": EvaluationConfig(k=500),
}


def sharded(datasets: list[Dataset], config: EvaluationConfig, size: int) -> str:
    """The result JSON through the jobs' path: plan, evaluate each shard, store (JSON), load, reduce."""
    stored = []
    for shard in plan_shards([len(d.conversation) for d in datasets], size):
        metrics = run_sync(evaluate_conversations(datasets[shard.start : shard.stop], GarblingJudge(), config))
        stored.append(dump_conversations(metrics))
    return reduce_shards((load_conversations(data) for data in stored), config).model_dump_json()


def test_the_workload_exercises_what_sharding_could_get_wrong() -> None:
    result = evaluate_sync(WORKLOAD, GarblingJudge(), CONFIGS["frequentist"])
    aggregated = result.aggregated_metrics
    assert aggregated.unscored_conversations > 0 and aggregated.total_conversations > 0
    assert aggregated.by_assistant is not None and len(aggregated.by_assistant) == 3
    assert aggregated.per_task is not None and aggregated.per_task.tasks_with_k_attempts > 0
    assert 0 < aggregated.fully_correct_conversations < aggregated.total_conversations
    assert any(UNSCORABLE in b.query for d in WORKLOAD for b in d.conversation)
    # Attempts of one task lie 20 conversations apart, so shards split tasks: per_task must combine them.
    shards_of_task: dict[str, set[int]] = {}
    for n, shard in enumerate(plan_shards([len(d.conversation) for d in WORKLOAD], 7)):
        for i in shard:
            if WORKLOAD[i].task_id is not None:
                shards_of_task.setdefault(WORKLOAD[i].task_id, set()).add(n)
    assert sum(len(shards) > 1 for shards in shards_of_task.values()) == len(shards_of_task) == 20


def unsharded(datasets: list[Dataset], config: EvaluationConfig) -> str:
    """The result of one evaluation, without its provenance: a job's reduce does not build the
    judges, and puts in the provenance `POST /jobs` stored (handler.job_lambdas; tests/service)."""
    return evaluate_sync(datasets, GarblingJudge(), config).model_copy(update={"provenance": None}).model_dump_json()


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("size", [1, 7, 50, 120])
def test_sharded_equals_unsharded_to_the_last_digit(name: str, size: int) -> None:
    config = CONFIGS[name]
    whole = unsharded(WORKLOAD, config)
    assert sharded(WORKLOAD, config, size) == whole


def test_a_shard_without_any_scored_conversation_is_not_an_error_until_the_reduce() -> None:
    garbled = [
        Dataset.model_validate(
            {
                "session_id": f"s{i}",
                "assistant_id": "a",
                "conversation": [
                    {"qa_id": "q", "query": f"Q{i} {UNSCORABLE}", "assistant": "1", "ground_truth_assistant": "1"}
                ],
            }
        )
        for i in range(3)
    ]
    config = EvaluationConfig()
    shard = run_sync(evaluate_conversations(garbled[:2], GarblingJudge(), config))
    assert [m.is_scored for m in shard] == [False, False]
    assert shard[0].interactions and shard[0].interactions[0].error  # why it is unscored travels with it
    # Mixed with scored shards the result is the whole evaluation's...
    assert sharded([*garbled, *WORKLOAD[:10]], config, 2) == (unsharded([*garbled, *WORKLOAD[:10]], config))
    # ...and with none scored anywhere the reduce fails as evaluate does, with the same message.
    with pytest.raises(NoConversationScored) as whole:
        evaluate_sync(garbled, GarblingJudge(), config)
    with pytest.raises(NoConversationScored) as pieces:
        sharded(garbled, config, 1)
    assert str(pieces.value) == str(whole.value)


def test_stored_metrics_load_back_identical() -> None:
    metrics = run_sync(evaluate_conversations(WORKLOAD[:30], GarblingJudge(), CONFIGS["bayesian"]))
    assert load_conversations(dump_conversations(metrics)) == metrics
