"""Large evaluations in pieces: plan the shards, evaluate one shard, reduce the shards' results.

What the asynchronous jobs of the service (`handler.routes.jobs` and `handler.job_lambdas`, on AWS Step Functions) do
with an evaluation too large for one request, kept here free of HTTP and AWS so that
the same three steps run anywhere (the tests, `benchmarks/bench_jobs.py`):

1. `plan_shards` cuts the conversations into contiguous runs, bounded in
   conversations, turns and tool calls (a conversation is never split).
2. `evaluate.evaluate_conversations` (the first half of `evaluate`) judges one run
   and returns its per-conversation metrics; `dump_conversations` / `load_conversations`
   carry them through storage losslessly (JSON floats round-trip exactly).
3. `reduce_shards` concatenates the shards' metrics in the original order and builds
   the result with `evaluate.build_result`.

Exactness holds by construction: every per-conversation figure depends only on its
conversation and the config, and the aggregate (`metrics.aggregate`: pass@k, the
unbiased estimators, Bayesian intervals, `per_task`, `by_assistant`) only on the list
of per-conversation metrics. So the sharded result equals the one-request result to
the last digit (tests/unit/test_sharding.py checks it, Bayesian mode and tasks
spanning shards included) — for a deterministic judge. Identical turns are judged
once per shard instead of once per request, so a sampling judge (temperature > 0)
may give two copies of a turn in different shards different scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import TypeAdapter

from fair_forge_core.schemas import ConversationMetrics, EvaluationConfig, EvaluationResult

_CONVERSATIONS = TypeAdapter(list[ConversationMetrics])


def plan_shards(
    turn_counts: Sequence[int],
    conversations_per_shard: int,
    max_turns_per_shard: int | None = None,
    *,
    tool_call_counts: Sequence[int] | None = None,
    max_tool_calls_per_shard: int | None = None,
) -> list[range]:
    """Contiguous runs of conversation indices, in order, covering every conversation once.

    `turn_counts[i]` is the number of turns of conversation i, `tool_call_counts[i]`
    (when given) its tool calls, both lists of every turn. A shard holds at most
    `conversations_per_shard` conversations and, when given, at most
    `max_turns_per_shard` turns and `max_tool_calls_per_shard` tool calls (the
    deterministic work of scoring them) — except that a single conversation above a
    bound gets a shard of its own (conversations are never split: a conversation's
    verdict needs all its turns). Without `tool_call_counts`, tool calls do not bound.
    """
    if conversations_per_shard < 1:
        raise ValueError(f"conversations_per_shard must be at least 1, not {conversations_per_shard}")
    for name, bound in (
        ("max_turns_per_shard", max_turns_per_shard),
        ("max_tool_calls_per_shard", max_tool_calls_per_shard),
    ):
        if bound is not None and bound < 1:
            raise ValueError(f"{name} must be at least 1, not {bound}")
    calls_of = tool_call_counts if tool_call_counts is not None else [0] * len(turn_counts)
    if len(calls_of) != len(turn_counts):
        raise ValueError("tool_call_counts must have one count per conversation")
    shards: list[range] = []
    start, turns, calls = 0, 0, 0
    for index, (count, tool_calls) in enumerate(zip(turn_counts, calls_of, strict=True)):
        if count < 0 or tool_calls < 0:
            raise ValueError(f"conversation {index} has a negative count")
        full = index - start >= conversations_per_shard
        too_long = max_turns_per_shard is not None and turns + count > max_turns_per_shard
        too_busy = max_tool_calls_per_shard is not None and calls + tool_calls > max_tool_calls_per_shard
        if index > start and (full or too_long or too_busy):
            shards.append(range(start, index))
            start, turns, calls = index, 0, 0
        turns += count
        calls += tool_calls
    if len(turn_counts) > start:
        shards.append(range(start, len(turn_counts)))
    return shards


def dump_conversations(conversations: list[ConversationMetrics]) -> bytes:
    """A shard's per-conversation metrics as JSON (what a worker stores)."""
    return _CONVERSATIONS.dump_json(conversations)


def load_conversations(data: bytes | str) -> list[ConversationMetrics]:
    """The inverse of `dump_conversations`: the same metrics, to the last digit."""
    return _CONVERSATIONS.validate_json(data)


def reduce_shards(
    shards: Iterable[list[ConversationMetrics]], config: EvaluationConfig, warnings_of_input: Sequence[str] = ()
) -> EvaluationResult:
    """The evaluation's result from its shards' metrics, given in the order of `plan_shards`.

    Exactly the result of evaluating all the conversations at once (pass the
    `schemas.input_warnings` of the whole request as `warnings_of_input`). Raises
    `evaluate.NoConversationScored` when no conversation of any shard was scored.
    """
    from fair_forge_core.evaluate import build_result

    return build_result([conversation for shard in shards for conversation in shard], config, warnings_of_input)
