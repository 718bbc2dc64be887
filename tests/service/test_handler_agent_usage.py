"""`agent_usage` through `POST /run` (real API Gateway proxy events): a value over its bound is a
400 naming the field, and a body within the bounds, however extreme, gets a finite 200, never a
500 (issue #32, item 8: each listed body was a 500 `OverflowError`). Expected sums by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fair_forge_testing.builders import conversation, turn
from fair_forge_testing.handler_client import call_handler

FOUR_THOUSAND_THREE_HUNDRED_DIGITS = int("9" * 4300)  # the most digits Python reads as an int by default


def body(usages: list[dict[str, Any]], conversations: int = 1) -> dict[str, Any]:
    """`conversations` conversations, each of one turn per usage in `usages`, judged offline."""
    datasets = [
        conversation(
            f"s{c}",
            [turn(f"q{n}", "What is 2 plus 2?", "4", "4", agent_usage=usage) for n, usage in enumerate(usages)],
        )
        for c in range(conversations)
    ]
    return {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"},
        "datasets": datasets,
        "config": {"k": 1, "efficiency": True},
    }


@pytest.mark.parametrize(
    ("usages", "field"),
    [
        ([{"cost_usd": 1e308}, {"cost_usd": 1e308}], "cost_usd"),
        ([{"latency_s": 1.5e308}, {"latency_s": 1.5e308}], "latency_s"),
        ([{"input_tokens": 10**400}], "input_tokens"),
        ([{"output_tokens": FOUR_THOUSAND_THREE_HUNDRED_DIGITS}] * 2, "output_tokens"),
        ([{"input_tokens": 10**12 + 1}], "input_tokens"),
        ([{"latency_s": 1_000_000.5}], "latency_s"),
        ([{"cost_usd": 1_000_000.01}], "cost_usd"),
    ],
)
def test_a_value_over_its_bound_is_a_400_naming_the_field(usages: list[dict[str, Any]], field: str) -> None:
    response = call_handler(body(usages))
    assert response.status == 400, response.body
    assert f"datasets[0].conversation[0].agent_usage.{field}" in response.body["error"]
    assert "less than or equal to" in response.body["error"]
    assert "Traceback" not in response.raw


def test_every_field_at_its_bound_on_many_turns_gives_finite_sums() -> None:
    at_bound = {"input_tokens": 10**12, "output_tokens": 10**12, "latency_s": 1e6, "cost_usd": 1e6}
    response = call_handler(body([at_bound] * 100, conversations=3))
    assert response.status == 200, response.body
    first = response.body["per_conversation_metrics"][0]["efficiency"]
    # 100 turns × the bound: 10¹⁴ tokens each way, 10⁸ seconds, $10⁸
    assert (first["input_tokens"], first["output_tokens"]) == (10**14, 10**14)
    assert (first["latency_s"], first["cost_usd"]) == (1e8, 1e8)
    aggregate = response.body["aggregated_metrics"]["efficiency"]
    assert aggregate["input_tokens"]["median"] == 1e14 and aggregate["cost_usd"]["p95"] == 1e8
    assert aggregate["total_cost_usd"] == 3e8 and aggregate["cost_per_successful_task"] == 1e8
    json.dumps(response.body, allow_nan=False)  # every figure finite
