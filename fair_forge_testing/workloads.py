"""The benchmarks' seeded request workloads: distinct turns, and a pool of answer and tool turns
drawn into conversations with tasks and two assistants. Deterministic: the same request every run."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

ANSWER_PAIRS = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "answer_pairs.jsonl"
"""105 (query, answer, ground truth) pairs: a frozen copy of the labelled pairs of
tests/data/judge_agreement.jsonl as of the benchmarks' first results, so the
benchmark request stays the same when that set grows."""
OPENAI = "langchain_openai.chat_models.ChatOpenAI"
REFERENCE = "fair_forge_core.judges.ReferenceJudge"


def request(class_path: str, datasets: list[dict[str, Any]], **config: Any) -> dict[str, Any]:
    """A `/run` body; `params` come from `config.pop("params", {})`."""
    params = config.pop("params", {})
    return {"connector": {"class_path": class_path, "params": params}, "datasets": datasets, "config": config}


def distinct_conversations(count: int, turns_each: int, *, tag: str = "") -> list[dict[str, Any]]:
    """`count` conversations of `turns_each` turns, every turn distinct (nothing to dedup).

    `tag` makes the questions of one run differ from another's, so no provider-side
    cache could help either.
    """
    return [
        {
            "session_id": f"s{c}",
            "assistant_id": "agent_v1",
            "conversation": [
                {
                    "qa_id": f"q{c}-{t}",
                    "query": f"{tag}What is {c} times 100 plus {t}?",
                    "assistant": f"It is {c * 100 + t}.",
                    "ground_truth_assistant": str(c * 100 + t),
                }
                for t in range(turns_each)
            ],
        }
        for c in range(count)
    ]


def _tool_turn(rng: random.Random, index: int) -> dict[str, Any]:
    """A calculator or lookup turn with tools, right or (sometimes) wrong, from `rng`."""
    a, b = rng.randint(2, 999), rng.randint(2, 999)
    kind = rng.choice(["add", "multiply", "convert", "weather"])
    if kind in ("add", "multiply"):
        value = a + b if kind == "add" else a * b
        symbol = "+" if kind == "add" else "*"
        expected = [{"tool_name": "calculator", "parameters": {"operation": kind, "a": a, "b": b}, "step": 1}]
        wrong = rng.random() < 0.2
        used_b = b + 1 if wrong else b
        used_value = (a + used_b) if kind == "add" else a * used_b
        return {
            "query": f"What is {a} {symbol} {b}?",
            "assistant": f"The result is {used_value}.",
            "ground_truth_assistant": f"{a} {symbol} {b} equals {value}",
            "agentic": {
                "tools_used": [
                    {
                        "tool_name": "calculator",
                        "parameters": {"operation": kind, "a": a, "b": used_b},
                        "result": used_value,
                        "step": 1,
                    }
                ],
                "final_answer_uses_tools": True,
            },
            "ground_truth_agentic": {"expected_tools": expected, "tool_sequence_matters": False},
        }
    if kind == "convert":
        km = a
        return {
            "query": f"How many metres are {km} kilometres? Look up the factor first.",
            "assistant": f"{km} km is {km * 1000} metres.",
            "ground_truth_assistant": f"{km * 1000} metres",
            "agentic": {
                "tools_used": [
                    {"tool_name": "lookup_factor", "parameters": {"from": "km", "to": "m"}, "result": 1000, "step": 1},
                    {
                        "tool_name": "calculator",
                        "parameters": {"operation": "multiply", "a": km, "b": 1000},
                        "result": km * 1000,
                        "step": 2,
                    },
                ],
                "final_answer_uses_tools": True,
            },
            "ground_truth_agentic": {
                "expected_tools": [
                    {"tool_name": "lookup_factor", "parameters": {"from": "km", "to": {"$text": "M"}}, "step": 1},
                    {
                        "tool_name": "calculator",
                        "parameters": {"operation": "multiply", "a": km, "b": {"$approx": 1000, "tol": 0.5}},
                        "step": 2,
                    },
                ],
                "tool_sequence_matters": True,
            },
        }
    city = rng.choice(["Paris", "Lima", "Oslo", "Cairo", "Perth", "Quito"])
    degrees = rng.randint(-5, 35)
    return {
        "query": f"What is the weather in {city} today? (request {index})",
        "assistant": f"It is {degrees} °C and sunny in {city}.",
        "ground_truth_assistant": f"{degrees} °C, sunny",
        "agentic": {
            "tools_used": [
                {"tool_name": "weather", "parameters": {"city": city, "unit": "C"}, "result": {"temp": degrees}},
                *([{"tool_name": "search", "parameters": {"q": city}, "result": "..."}] if index % 3 == 0 else []),
            ],
            "final_answer_uses_tools": True,
        },
        "ground_truth_agentic": {
            "expected_tools": [{"tool_name": "weather", "parameters": {"city": city, "unit": {"$any_of": ["C", "F"]}}}]
        },
    }


def turn_pool(size: int = 300, *, tool_share: float = 0.4, seed: int = 7) -> list[dict[str, Any]]:
    """`size` distinct turns: the 105 pairs of `ANSWER_PAIRS` (answers only), then
    generated tool turns (calculator, unit conversion with argument rules and order,
    weather with an extra search) until `tool_share` of the pool has tools, then more
    answer-only turns made from those pairs with another wording of the query."""
    rng = random.Random(seed)
    labelled = [json.loads(line) for line in ANSWER_PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    pool = [
        {"query": row["query"], "assistant": row["answer"], "ground_truth_assistant": row["ground_truth"]}
        for row in labelled
    ]
    tools_wanted = round(size * tool_share)
    pool += [_tool_turn(rng, i) for i in range(tools_wanted)]
    variant = 0
    while len(pool) < size:
        row = labelled[variant % len(labelled)]
        variant += 1
        pool.append(
            {
                "query": f"{row['query']} (asked again, #{variant})",
                "assistant": row["answer"],
                "ground_truth_assistant": row["ground_truth"],
            }
        )
    return pool[:size]


def pooled_conversations(
    count: int, turns_each: int, pool: list[dict[str, Any]], *, attempts_per_task: int = 3, seed: int = 11
) -> list[dict[str, Any]]:
    """`count` conversations of `turns_each` turns drawn from `pool`: two assistants, tasks of
    `attempts_per_task` attempts (conversations sharing a task_id), unique session and qa ids."""
    rng = random.Random(seed)
    conversations = []
    for c in range(count):
        conversations.append(
            {
                "session_id": f"session-{c:05d}",
                "assistant_id": "agent_a" if c % 2 == 0 else "agent_b",
                "task_id": f"task-{c // attempts_per_task:05d}",
                "conversation": [{"qa_id": f"c{c}-t{t}", **rng.choice(pool)} for t in range(turns_each)],
            }
        )
    return conversations
