"""What a provider's prompt cache saves on a judge run (issue #38 item 4).

A 1,000-turn run (200 conversations of 5 turns, the 1,000 distinct turns of the benchmark turn
pool, answers and tool calls, shuffled with a seed: `fair_forge_testing.workloads`) judged through the real `ChatOpenAI` against the fake
OpenAI-compatible server on 127.0.0.1, whose usage is `fair_forge_testing.prompt_cache.PrefixCache`:
cached tokens the way OpenAI reports them (a prefix of at least 1,024 tokens identical to an
earlier request's, counted in 128-token increments), simulated from the actual request bodies.
**Tokens are approximated as 4 bytes each** (no tokenizer: tiktoken's encodings are downloaded on
first use, and this runs offline). Each prompt is judged with the cache and without it (the same
run, the fake reporting no cached tokens), at the example prices of docs/how-to/cost-and-cache.md;
the ledger's own figures are printed. Identical judge requests are judged once per evaluation:
997 calls (3 of the pool's turns ask what another asks).

The judge prompt as it is has a fixed part (rubric and the human message's lead) below 1,024
tokens, so OpenAI would cache nothing: the rows with a longer rubric (the rubric padded with
fixed text, in this process only) show what a rubric that reaches the threshold would save.

    python -m benchmarks.bench_prompt_cache
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from langchain_openai import ChatOpenAI

from benchmarks.common import header
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import prompt
from fair_forge_core.judges.llm import RetryPolicy
from fair_forge_core.judges.prices import read_price_table
from fair_forge_core.judges.usage import JudgeLedger
from fair_forge_core.schemas import Dataset, EvaluationConfig
from fair_forge_testing.fake_llm_server import FakeLLMServer
from fair_forge_testing.prompt_cache import BYTES_PER_TOKEN, INCREMENT, MIN_CACHED, PrefixCache, prompt_bytes
from fair_forge_testing.workloads import turn_pool

CONVERSATIONS, TURNS = 200, 5
MODEL = "gpt-4o-mini"
PRICE = {"input": 0.15, "output": 0.6, "cached_input": 0.075}
"""The example price of docs/how-to/cost-and-cache.md, USD per million tokens."""
PAD_LINE = "Calibration note: grade the facts the ground truth requires, never the style of the answer.\n"
RUBRIC_TOKENS = (MIN_CACHED, 2 * MIN_CACHED)
"""Fixed parts the padded rows reach: the threshold, and twice it."""


@dataclass(frozen=True)
class Run:
    calls: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    cost_usd: float
    fixed_tokens: int  # the prompt's fixed part: up to the data line, in the first request
    shared_tokens: int  # the longest prefix every request shares


def datasets() -> list[Dataset]:
    """1,000 distinct turns of the pool (answers and tool calls), shuffled (seeded), 5 a conversation."""
    pool = turn_pool(CONVERSATIONS * TURNS)
    random.Random(38).shuffle(pool)
    return [
        Dataset.model_validate(
            {
                "session_id": f"session-{c:04d}",
                "assistant_id": "agent_a",
                "conversation": [{"qa_id": f"c{c}-t{t}", **pool[c * TURNS + t]} for t in range(TURNS)],
            }
        )
        for c in range(CONVERSATIONS)
    ]


def judged(data: list[Dataset], *, cached: bool) -> Run:
    cache = PrefixCache(enabled=cached)
    with FakeLLMServer(usage=cache.usage) as server:
        model = ChatOpenAI(model=MODEL, base_url=server.base_url, api_key="sk-bench-local", max_retries=0)
        config = EvaluationConfig()
        ledger = JudgeLedger.for_model(model, config, prices=read_price_table(json.dumps({MODEL: PRICE})))
        evaluate_sync(data, model, config, retry=RetryPolicy(), ledger=ledger)
        prompts = [prompt_bytes(r.body or {}) for r in server.requests if r.status == 200]
    usage = ledger.summary()
    assert usage.cost_usd is not None and prompts
    label = json.dumps(f"{prompt.DATA_START}\n")[1:-1].encode()
    fixed = prompts[0].index(label) + len(label)
    return Run(
        usage.calls,
        usage.input_tokens,
        usage.cached_input_tokens,
        usage.output_tokens,
        usage.cost_usd,
        fixed // BYTES_PER_TOKEN,
        shared_prefix(prompts) // BYTES_PER_TOKEN,
    )


def shared_prefix(prompts: list[bytes]) -> int:
    """The length of the prefix every prompt shares (that of the least and the greatest)."""
    low, high = min(prompts), max(prompts)
    return next((i for i in range(len(low)) if low[i] != high[i]), len(low))


@contextmanager
def rubric_padded_to(tokens: int, fixed_tokens: int) -> Iterator[None]:
    """The rubric lengthened with fixed text so that the fixed part is at least `tokens` tokens."""
    original = prompt.RUBRIC
    missing = max(0, tokens - fixed_tokens) * BYTES_PER_TOKEN
    prompt.RUBRIC = original + PAD_LINE * -(-missing // len(PAD_LINE))
    try:
        yield
    finally:
        prompt.RUBRIC = original


def row(name: str, on: Run, off: Run) -> None:
    saving = 1 - on.cost_usd / off.cost_usd
    print(
        f"{name:<26} | {on.fixed_tokens:>5} | {on.shared_tokens:>6} | {on.calls:>5} | {on.input_tokens:>9} | "
        f"{on.cached_tokens / on.input_tokens:>6.1%} | {off.cost_usd:>9.5f} | {on.cost_usd:>9.5f} | {saving:>6.1%}"
    )


def main() -> None:
    header("Prompt caching: a 1,000-turn run, OpenAI's rule simulated (tokens estimated at 4 bytes each)")
    print(
        f"{CONVERSATIONS} conversations x {TURNS} turns; {MODEL} example price ${PRICE['input']} in, "
        f"${PRICE['cached_input']} cached in, ${PRICE['output']} out per 1M tokens; "
        f"cached: prefixes >= {MIN_CACHED} tokens, in {INCREMENT}s"
    )
    print(
        f"{'prompt':<26} | {'fixed':>5} | {'shared':>6} | {'calls':>5} | {'in tokens':>9} | {'cached':>6} | "
        f"{'$ no cache':>9} | {'$ cache':>9} | {'saving':>6}"
    )
    data = datasets()
    on, off = judged(data, cached=True), judged(data, cached=False)
    row("as it is", on, off)
    for tokens in RUBRIC_TOKENS:
        with rubric_padded_to(tokens, on.fixed_tokens):
            row(f"rubric padded to {tokens} tok", judged(data, cached=True), judged(data, cached=False))
    print(
        f"fixed: the rubric and the human message's lead, tokens; shared: the prefix all calls share; "
        f"the fixed part as it is needs {max(0, MIN_CACHED - on.fixed_tokens)} more tokens "
        f"(~{max(0, MIN_CACHED - on.fixed_tokens) * BYTES_PER_TOKEN} bytes of rubric) to reach {MIN_CACHED}"
    )


if __name__ == "__main__":
    main()
