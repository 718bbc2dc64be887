"""Prompt-cache friendliness (issue #38 item 4), through the real `ChatOpenAI` (the project's
connector, `build_chat_model`) against the fake OpenAI-compatible server on 127.0.0.1.

1. The judge prompt's fixed part comes first and is byte-identical across the calls of a run:
   the longest common prefix of two turns' request bodies covers the whole rubric and the human
   message's lead up to the data line. The one fixed text that comes after the turn is the reply
   instruction (and in marker mode the markers), a sentence at the end of the human message.
2. Cached tokens a provider reports (`usage.prompt_tokens_details.cached_tokens`, simulated by
   `fair_forge_testing.prompt_cache.PrefixCache`) reach the result's `judge_usage` and are priced
   at `cached_input`; the expected figures are computed here from the server's own numbers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from fair_forge_core.connectors.build import build_chat_model
from fair_forge_core.connectors.rules import EndpointPolicy
from fair_forge_core.evaluate import evaluate_sync, run_sync
from fair_forge_core.judges.llm import RetryPolicy
from fair_forge_core.judges.prices import PriceTable, read_price_table
from fair_forge_core.judges.prompt import DATA_END, DATA_START, RUBRIC, JudgeRequest, build_judge_messages
from fair_forge_core.judges.usage import JudgeLedger
from fair_forge_core.judges.verdict import VERDICT_SCHEMA
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer
from fair_forge_testing.prompt_cache import BYTES_PER_TOKEN, INCREMENT, MIN_CACHED, PrefixCache, prompt_bytes

LOCAL = EndpointPolicy(allowed_networks=("127.0.0.0/8",))
FAST_RETRY = RetryPolicy(max_attempts=1, base_delay_s=0.01, max_delay_s=0.05, call_timeout_s=10.0)
MODEL = "gpt-4o-mini"
PRICES = {MODEL: {"input": 0.15, "output": 0.6, "cached_input": 0.075}}
"""The example prices of docs/how-to/cost-and-cache.md, USD per million tokens."""

TURNS = (
    JudgeRequest(query="What is 5 + 3?", answer="The result is 8.", ground_truth="8"),
    JudgeRequest(query="Capital of France?", answer="Paris.", ground_truth="Paris", observation='{"doc": 1}'),
)


def chat_openai(server: FakeLLMServer) -> Any:
    params = {"model": MODEL, "base_url": server.base_url, "api_key": "sk-pcache-0123456789abcdef", "timeout": 10}
    return build_chat_model("langchain_openai.chat_models.ChatOpenAI", params, policy=LOCAL).model


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """The length of the longest common prefix of `a` and `b`."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def serialised(body: dict[str, Any] | None) -> str:
    """The request's messages as received (the server keeps the key order), serialised."""
    assert body is not None
    return json.dumps(body["messages"], ensure_ascii=False)


def fixed_head(text: str) -> int:
    """Where the turn's data starts in `serialised` text: right after the data label's line."""
    label = json.dumps(f"{DATA_START}\n", ensure_ascii=False)[1:-1]
    return text.index(label) + len(label)


@pytest.mark.parametrize("structured", [False, True], ids=["marker", "structured"])
def test_the_fixed_part_comes_first_and_is_byte_identical_across_turns(structured: bool) -> None:
    with FakeLLMServer() as server:
        model = chat_openai(server)
        if structured:
            model = model.with_structured_output(VERDICT_SCHEMA, method="json_schema")
        for request in TURNS:
            run_sync(model.ainvoke(build_judge_messages(request, structured=structured)))
        first, second = (r.body for r in server.requests[-2:])
    assert first is not None and second is not None
    # The rubric is the first message, whole and alone, in both.
    assert first["messages"][0] == second["messages"][0] == {"role": "system", "content": RUBRIC}
    assert all(
        str(b["messages"][1]["content"]).startswith(f"Grade this turn.\n{DATA_START}\n") for b in (first, second)
    )
    a, b = serialised(first), serialised(second)
    head = fixed_head(a)
    assert head == fixed_head(b) and a[:head] == b[:head]
    assert common_prefix(a, b) >= head  # the whole fixed part is a shared prefix ...
    assert common_prefix(a, b) <= a.index(json.dumps(TURNS[0].query)[1:-1])  # ... and the query is not
    # Everything else in the body (the model, the schema in structured mode) is the same in both.
    assert {k: v for k, v in first.items() if k != "messages"} == {k: v for k, v in second.items() if k != "messages"}


@pytest.mark.parametrize("structured", [False, True], ids=["marker", "structured"])
def test_the_reply_instruction_is_the_fixed_text_after_the_turn(structured: bool) -> None:
    # The finding that is not prefix-friendly: a sentence (the output fields, the markers) after
    # the data line. Left there: moving it would change the wire bytes and every judge cache key.
    messages = [build_judge_messages(request, structured=structured) for request in TURNS]
    tails = [str(m[1].content).rsplit(f"\n{DATA_END}\n", 1)[1] for m in messages]
    assert tails[0] == tails[1] and '"score"' in tails[0] and '"reasoning"' in tails[0]
    assert all(str(m[1].content).endswith(tails[0]) for m in messages)


def test_the_fixed_part_is_below_openais_caching_threshold() -> None:
    # The rubric and the lead are about 500 tokens (4 bytes a token): OpenAI caches no prefix
    # shorter than 1,024 tokens, so a run of short turns gets no cached tokens (bench_prompt_cache).
    messages = build_judge_messages(TURNS[0], structured=False)
    body = {"messages": [{"role": "system", "content": RUBRIC}, {"role": "user", "content": messages[1].content}]}
    text = prompt_bytes(body).decode()
    assert 300 < fixed_head(text) // BYTES_PER_TOKEN < MIN_CACHED


def expected_cached(prompts: list[bytes]) -> list[int]:
    """OpenAI's rule computed from the prompts in the order they were answered, without a cache:
    the longest common prefix with an earlier prompt, in whole tokens, floored to 128, 0 below 1,024."""
    cached = []
    for i, data in enumerate(prompts):
        longest = max((common_prefix(data, earlier) for earlier in prompts[:i]), default=0)
        tokens = longest // BYTES_PER_TOKEN // INCREMENT * INCREMENT
        cached.append(tokens if tokens >= MIN_CACHED else 0)
    return cached


def test_cached_tokens_reach_the_ledger_and_are_priced_at_the_cached_price() -> None:
    # One conversation with a long context (it is in every turn's data, before the query): the
    # shared prefix passes 1,024 tokens, so every turn after the first reads it from the cache.
    context = " ".join(f"Clause {i}: the refund window is {i % 30 + 1} days for order class {i}." for i in range(120))
    turns = [turn(f"q{i}", f"What is {i} + {i}?", f"It is {2 * i}.", str(2 * i)) for i in range(1, 5)]
    data = datasets(conversation("a", turns, context=context))
    cache = PrefixCache()
    with FakeLLMServer(usage=cache.usage) as server:
        model = chat_openai(server)
        table = PriceTable(source="test", models=read_price_table(json.dumps(PRICES)).models)
        config = EvaluationConfig(max_concurrency=1)  # one call at a time: the order of the cache is the order sent
        ledger = JudgeLedger.for_model(model, config, prices=table)
        result = evaluate_sync(data, model, config, retry=FAST_RETRY, ledger=ledger)
        answered = [r for r in server.requests if r.status == 200]
    sent = [r.usage for r in answered]
    assert len(sent) == 4 and all(u is not None for u in sent)
    prompts = [prompt_bytes(r.body or {}) for r in answered]
    cached = [u["prompt_tokens_details"]["cached_tokens"] for u in sent if u is not None]
    assert cached == expected_cached(prompts)
    assert cached[0] == 0 and all(c >= MIN_CACHED for c in cached[1:])
    input_tokens = sum(u["prompt_tokens"] for u in sent if u is not None)
    output_tokens = sum(u["completion_tokens"] for u in sent if u is not None)
    usage = result.aggregated_metrics.judge_usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens) == (
        input_tokens,
        output_tokens,
        sum(cached),
    )
    expected = ((input_tokens - sum(cached)) * 0.15 + sum(cached) * 0.075 + output_tokens * 0.6) / 1_000_000
    assert usage.cost_usd == pytest.approx(expected, rel=1e-12)
    full_price = (input_tokens * 0.15 + output_tokens * 0.6) / 1_000_000
    assert usage.cost_usd < full_price


def test_the_simulated_cache_counts_only_long_identical_prefixes_in_increments() -> None:
    cache = PrefixCache()
    short = b"x" * (BYTES_PER_TOKEN * (MIN_CACHED - 1))
    assert cache.cached_tokens(short) == cache.cached_tokens(short) == 0  # below 1,024 tokens: never
    long = b"y" * (BYTES_PER_TOKEN * (MIN_CACHED + 300))
    assert cache.cached_tokens(long) == 0  # first seen
    assert cache.cached_tokens(long) == MIN_CACHED + 256  # 1,324 tokens shared: 1,280 in 128s
    changed = long[: BYTES_PER_TOKEN * (MIN_CACHED + 5)] + b"z" * 4000
    assert cache.cached_tokens(changed) == MIN_CACHED
    assert PrefixCache(enabled=False).cached_tokens(long + long) == 0
