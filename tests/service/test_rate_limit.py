"""Rate limiting: the shared `AdaptiveLimiter` and the judge's 429 handling.

Behaviour only, no timing assertions: who gets a slot and when relative to the
shared "not before" instant, how the limit moves, how many calls reach the
provider, and that no turn is left unscored while the provider only says "later".
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_openai import ChatOpenAI

from fair_forge_core.evaluate import NoConversationScored, evaluate_sync, judge_all, run_sync
from fair_forge_core.judges.limiter import AdaptiveLimiter
from fair_forge_core.judges.llm import AnswerJudge, JudgeTelemetry, RetryPolicy
from fair_forge_core.judges.prompt import JudgeRequest
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.builders import datasets, distinct_conversations
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply

API_KEY = "sk-test-rate-limit-0123456789"


def openai_model(server: FakeLLMServer) -> ChatOpenAI:
    return ChatOpenAI(model="judge", base_url=server.base_url, api_key=API_KEY, max_retries=0, timeout=5)


def unscored(result: Any) -> int:
    return sum(score is None for m in result.per_conversation_metrics for score in m.correctness_scores)


# --------------------------------------------------------------------------- the limiter


def test_limiter_caps_slots_and_serves_waiters_in_order() -> None:
    async def scenario() -> list[int]:
        limiter = AdaptiveLimiter(2)
        tickets = [await limiter.acquire(), await limiter.acquire()]
        order: list[int] = []

        async def wait(name: int) -> None:
            await limiter.acquire()
            order.append(name)

        waiters = [asyncio.create_task(wait(n)) for n in range(3)]
        await asyncio.sleep(0)
        assert order == [] and limiter.in_flight == 2
        limiter.release(tickets[0], "ok")
        await asyncio.sleep(0)
        assert order == [0] and limiter.in_flight == 2
        limiter.release(tickets[1], "ok")
        limiter.release(0, "ok")
        await asyncio.gather(*waiters)
        return order

    assert run_sync(scenario()) == [0, 1, 2]


def test_a_burst_of_429s_halves_the_limit_once_and_successes_add_one() -> None:
    async def scenario() -> None:
        limiter = AdaptiveLimiter(16)
        tickets = [await limiter.acquire() for _ in range(16)]
        for ticket in tickets[:12]:  # the provider pushes back on 12 calls of one burst
            limiter.release(ticket, "rate_limited")
        assert limiter.limit == 8  # halved once, not 12 times
        for ticket in tickets[12:]:  # answers to calls started before the halving: no increase
            limiter.release(ticket, "ok")
        assert limiter.limit == 8
        fresh = await limiter.acquire()
        limiter.release(fresh, "ok")
        assert limiter.limit == 9
        for _ in range(10):  # one 429 per new burst halves again, down to 1 and no further
            limiter.release(await limiter.acquire(), "rate_limited")
        assert limiter.limit == 1
        for _ in range(40):
            limiter.release(await limiter.acquire(), "ok")
        assert limiter.limit == 16  # never above the ceiling (max_concurrency)
        assert limiter.in_flight == 0

    run_sync(scenario())


def test_no_slot_is_handed_out_before_the_pause_ends() -> None:
    async def scenario() -> tuple[float, float]:
        limiter = AdaptiveLimiter(4)
        limiter.release(await limiter.acquire(), "rate_limited", pause_s=0.05)
        not_before = limiter.not_before
        await limiter.acquire()
        return time.monotonic(), not_before

    granted_at, not_before = run_sync(scenario())
    assert granted_at >= not_before


def test_a_cancelled_wait_leaks_no_slot() -> None:
    async def scenario() -> None:
        limiter = AdaptiveLimiter(1)
        held = await limiter.acquire()
        waiter = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        limiter.release(held, "ok")
        assert limiter.in_flight == 0
        await asyncio.wait_for(limiter.acquire(), 5)  # the slot is free at once
        assert limiter.in_flight == 1

    run_sync(scenario())


def test_the_limiter_refuses_a_ceiling_below_one() -> None:
    with pytest.raises(ValueError):
        AdaptiveLimiter(0)


# --------------------------------------------------------------------------- the judge under 429s


def test_a_rate_limited_provider_leaves_no_turn_unscored() -> None:
    """25 turns, 8 at a time, against a provider that takes 10 requests a second."""
    telemetry = JudgeTelemetry()
    with FakeLLMServer(latency_s=0.01, rate_limit_rps=10) as server:
        result = evaluate_sync(
            datasets(*distinct_conversations(25)),
            openai_model(server),
            EvaluationConfig(max_concurrency=8),
            retry=RetryPolicy(max_attempts=3),
            telemetry=telemetry,
        )
        statuses = server.status_counts
        assert server.max_in_flight <= 8
    assert unscored(result) == 0
    assert statuses[429] >= 1  # the limit was really hit
    assert statuses[200] == 25  # each turn answered once
    assert telemetry.rate_limited == statuses[429]
    assert telemetry.errors == 0


def test_429s_draw_on_their_own_budget_not_max_attempts() -> None:
    with FakeLLMServer(script=[Reply(status=429, retry_after_s=0.01)] * 5) as server:
        telemetry = JudgeTelemetry()
        result = evaluate_sync(
            datasets(*distinct_conversations(1)),
            openai_model(server),
            retry=RetryPolicy(max_attempts=2),
            telemetry=telemetry,
        )
        assert server.status_counts == {429: 5, 200: 1}
    assert unscored(result) == 0
    assert telemetry.rate_limited == 5 and telemetry.retries == 5


def test_the_rate_limit_budget_is_bounded() -> None:
    with FakeLLMServer(script=[Reply(status=429, retry_after_s=0.01)] * 10) as server:
        with pytest.raises(NoConversationScored, match="still rate limiting after 3 attempts: HTTP 429"):
            evaluate_sync(
                datasets(*distinct_conversations(1)),
                openai_model(server),
                retry=RetryPolicy(max_rate_limited_attempts=3),
            )
        assert server.call_count == 3


def test_the_deadline_bounds_a_long_retry_after() -> None:
    """A Retry-After beyond the deadline: the turns end unscored at the deadline, no call is wasted."""
    with FakeLLMServer(script=[Reply(status=429, retry_after_s=5.0)] * 10) as server:
        result = evaluate_sync(
            datasets(*distinct_conversations(3)),
            openai_model(server),
            EvaluationConfig(max_concurrency=1),
            deadline=time.monotonic() + 0.3,
        )
        assert server.call_count == 1  # the others waited for the Retry-After instant instead of calling
    # The deadline, not the provider: a result with every conversation unscored (not a 502), and why.
    assert result.aggregated_metrics.unscored_conversations == 3
    assert any("3 turn(s): time budget exhausted" in warning for warning in result.warnings)
    readiness = result.aggregated_metrics.readiness
    assert readiness is not None and readiness.status == "insufficient_evidence"
    assert "3 unscored (the time budget ran out)" in readiness.summary


class RateLimitedError(Exception):
    """A provider error with a 429 status and no Retry-After header."""

    status_code = 429


class FlakyJudge(BaseChatModel):
    """Raises a bare 429 for its first `failures` calls, then grades everything 0.9."""

    failures: int = 3
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "flaky-judge"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **_: Any) -> ChatResult:
        raise NotImplementedError("async only")

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **_: Any
    ) -> ChatResult:
        self.calls += 1
        if self.calls <= self.failures:
            raise RateLimitedError("slow down")
        reply = AIMessage(content='```json\n{"score": 0.9, "reasoning": "fine"}\n```')
        return ChatResult(generations=[ChatGeneration(message=reply)])


def test_a_429_without_retry_after_backs_off_and_recovers() -> None:
    model = FlakyJudge()
    judge = AnswerJudge(
        model=model, config=EvaluationConfig(max_concurrency=2), retry=RetryPolicy(base_delay_s=0.01, max_delay_s=0.05)
    )
    requests = [JudgeRequest(query=f"q{i}", answer="a", ground_truth="a") for i in range(4)]
    judged = run_sync(judge_all(requests, judge))
    assert all(j.score == 0.9 for j in judged.values())
    assert judge.telemetry.rate_limited == 3 and model.calls == 7
    assert judge.limiter.in_flight == 0
