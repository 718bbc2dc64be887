"""What judging a conversation's goal costs (issue #25 §1): the goal judge's tokens and cost per
conversation, beside what judging the same conversation's turns costs.

Conversations of 1, 3, 5 and 10 turns drawn from the benchmark turn pool (answers and tool
calls, `fair_forge_testing.workloads`), each with a goal and two criteria, judged through the
real `ChatOpenAI` against the fake OpenAI-compatible server on 127.0.0.1, once with goals and
once without; the ledger's counts of the two runs give the goal's share. Tokens are what the
fake server reports: **an estimate of 4 characters a token** (no tokenizer is available
offline), so read the figures as the size of the prompts, and the cost at the example price
below; the cost cap reserves the byte count, an upper bound. One judgement per goal
(`judge_samples` 1): N samples cost N times as much. Identical conversations are judged once
(two of the 1-turn draws are the same: 38 goal calls for 40 conversations).

    python -m benchmarks.bench_goal_cost
"""

from __future__ import annotations

import json
from typing import Any

from langchain_openai import ChatOpenAI

from benchmarks.common import header
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges.llm import RetryPolicy
from fair_forge_core.judges.prices import read_price_table
from fair_forge_core.judges.usage import JudgeLedger
from fair_forge_core.schemas import Dataset, EvaluationConfig
from fair_forge_testing.fake_llm_server import FakeLLMServer
from fair_forge_testing.workloads import pooled_conversations, turn_pool

CONVERSATIONS = 40
TURNS = (1, 3, 5, 10)
PRICE = {"input": 0.15, "output": 0.60}
"""An example price, USD per million tokens (a small hosted model's order of magnitude)."""
GOAL = "The user gets a correct, complete answer to every question, using the right tools"
CRITERIA = ["every answer is correct", "no tool call fails"]


def conversations(turns: int, *, with_goal: bool) -> list[Dataset]:
    drawn = pooled_conversations(CONVERSATIONS, turns, turn_pool(), seed=turns)
    goal: dict[str, Any] = {"goal": GOAL, "goal_rubric": CRITERIA} if with_goal else {}
    return [Dataset.model_validate({**conversation, **goal}) for conversation in drawn]


def judged_usage(server: FakeLLMServer, turns: int, *, with_goal: bool) -> tuple[int, int, int, float]:
    """(calls, input tokens, output tokens, cost in USD) of judging the conversations."""
    model = ChatOpenAI(model="judge", base_url=server.base_url, api_key="sk-bench-local", max_retries=0)
    prices = read_price_table(json.dumps({"judge": PRICE}))
    config = EvaluationConfig()
    ledger = JudgeLedger.for_model(model, config, prices=prices)
    evaluate_sync(conversations(turns, with_goal=with_goal), model, config, retry=RetryPolicy(), ledger=ledger)
    usage = ledger.summary()
    assert usage.cost_usd is not None
    return usage.calls, usage.input_tokens, usage.output_tokens, usage.cost_usd


def main() -> None:
    header("Goal judge cost per conversation (tokens estimated at 4 characters each)")
    print(f"{CONVERSATIONS} conversations per row; price ${PRICE['input']} in / ${PRICE['output']} out per 1M tokens")
    print(
        f"{'turns':>5} | {'goal calls':>10} | {'goal in tok':>11} | {'goal out tok':>12} | "
        f"{'goal $ / conv':>13} | {'turns $ / conv':>14} | {'goal / turns':>12}"
    )
    with FakeLLMServer() as server:
        for turns in TURNS:
            base = judged_usage(server, turns, with_goal=False)
            full = judged_usage(server, turns, with_goal=True)
            calls, tokens_in, tokens_out, cost = (full[i] - base[i] for i in range(4))
            print(
                f"{turns:>5} | {calls:>10} | {tokens_in / CONVERSATIONS:>11.0f} | {tokens_out / CONVERSATIONS:>12.0f} | "
                f"{cost / CONVERSATIONS:>13.7f} | {base[3] / CONVERSATIONS:>14.7f} | {cost / base[3]:>12.2f}"
            )


if __name__ == "__main__":
    main()
