"""Batch judging in the core (`fair_forge_core.judges.batch`, `fair_forge_core.batch_run`; issue #38
item 3): the submit pass sends what an online run would send, and the collect pass gives what an
online run gives, through the same prompt, parse, samples, ensemble, ledger and cap.

The judge is the real `ChatOpenAI` (and the openai SDK's files and batches clients) against
`FakeBatchServer` on 127.0.0.1, which answers a batch line exactly as its chat-completions
endpoint answers the same body online; each test compares the two over one server.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from fair_forge_core.batch_run import collect_evaluation, submit_evaluation, wait_for_batches
from fair_forge_core.evaluate import evaluate_conversations, run_sync
from fair_forge_core.judges.base import JudgeProviderRefused, RunContext
from fair_forge_core.judges.batch import REPLY_READ_ONCE, UNSUPPORTED
from fair_forge_core.judges.batch_api import BatchError
from fair_forge_core.judges.budget import CostBudget
from fair_forge_core.judges.cache import DirectoryCache
from fair_forge_core.judges.ledger import JudgeLedger
from fair_forge_core.judges.prices import ModelPrice, PriceTable, at_batch_price
from fair_forge_core.schemas import ConversationMetrics, EvaluationConfig
from fair_forge_testing.builders import conversation, datasets, distinct_conversations, turn
from fair_forge_testing.fake_batch_api import FakeBatchServer
from fair_forge_testing.fake_llm_server import GARBAGE_CONTENT, Reply, judge_responder, openai_usage

KEY = "sk-batch-core-test-0123456789abcdef"
PRICES = PriceTable(source="test", models={"judge": ModelPrice(input=2.0, output=8.0)})


def model(server: FakeBatchServer, name: str = "judge", **params: Any) -> ChatOpenAI:
    return ChatOpenAI(model=name, api_key=KEY, base_url=server.base_url, max_retries=0, max_tokens=64, **params)


def dumped(conversations: list[ConversationMetrics]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json") for c in conversations]


def online(datasets_: Any, judge: Any, config: EvaluationConfig) -> tuple[list[ConversationMetrics], JudgeLedger]:
    ledger = JudgeLedger.for_models(judge if isinstance(judge, list) else [judge], config, prices=PRICES)
    return run_sync(evaluate_conversations(datasets_, judge, config, RunContext(ledger=ledger))), ledger


def in_batch(
    datasets_: Any, judge: Any, config: EvaluationConfig, prices: PriceTable | None = None
) -> tuple[list[ConversationMetrics], JudgeLedger]:
    """Submit, wait (no pause: the fake's clock is its retrieves), collect; the collect's ledger."""
    models = judge if isinstance(judge, list) else [judge]
    prices = prices or at_batch_price(PRICES)

    async def run() -> tuple[list[ConversationMetrics], JudgeLedger]:
        submit_ledger = JudgeLedger.for_models(models, config, prices=prices)
        submission = await submit_evaluation(datasets_, judge, config, RunContext(ledger=submit_ledger))
        await wait_for_batches(judge, submission, poll_s=0, max_poll_s=0, deadline=None)
        ledger = JudgeLedger.for_models(models, config, prices=prices)
        return await collect_evaluation(datasets_, judge, config, RunContext(ledger=ledger), submission), ledger

    return run_sync(run())


def cancelled_at_the_deadline(
    datasets_: Any, judge: Any, config: EvaluationConfig, prices: PriceTable | None
) -> list[ConversationMetrics]:
    """Submit, wait past the deadline already (the batches still running are cancelled), collect."""

    async def run() -> list[ConversationMetrics]:
        ledger = JudgeLedger.for_model(judge, config, prices=prices)
        submission = await submit_evaluation(datasets_, judge, config, RunContext(ledger=ledger))
        await wait_for_batches(judge, submission, poll_s=0, max_poll_s=0, deadline=time.monotonic())
        collect = JudgeLedger.for_model(judge, config, prices=prices)
        return await collect_evaluation(datasets_, judge, config, RunContext(ledger=collect), submission)

    return run_sync(run())


def line_bodies(server: FakeBatchServer) -> Counter[str]:
    return Counter(json.dumps(line["body"], sort_keys=True) for r in server.batches.values() for line in r.lines)


def online_bodies(server: FakeBatchServer) -> Counter[str]:
    return Counter(json.dumps(r.body, sort_keys=True) for r in server.requests)


EVERY_JUDGE_MODE = pytest.mark.parametrize(
    "config",
    [
        EvaluationConfig(),
        EvaluationConfig(use_structured_output=True, structured_output_method="json_schema"),
        EvaluationConfig(use_structured_output=True, structured_output_method="function_calling"),
        EvaluationConfig(judge_samples=3),
    ],
    ids=["marker", "json_schema", "function_calling", "three_samples"],
)
"""The judge's output modes and samples, each a test (the Azure tests take them too)."""


@EVERY_JUDGE_MODE
def test_a_batch_sends_the_online_bodies_and_gives_the_online_metrics(config: EvaluationConfig) -> None:
    conversations = datasets(*distinct_conversations(6, 2), *distinct_conversations(2, 1, correct=False))
    with FakeBatchServer(usage=lambda request: openai_usage(500, 40)) as server:
        judge = model(server)
        expected, online_ledger = online(conversations, judge, config)
        sent_online = online_bodies(server)
        got, ledger = in_batch(conversations, judge, config)
        assert server.call_count == sum(sent_online.values())  # nothing more went online
        assert line_bodies(server) == sent_online  # the same bodies, each as often (a sample each)
    assert dumped(got) == dumped(expected)
    batch_usage, online_usage = ledger.summary(), online_ledger.summary()
    assert (batch_usage.calls, batch_usage.input_tokens) == (online_usage.calls, online_usage.input_tokens)
    assert batch_usage.cost_usd == pytest.approx(online_usage.cost_usd / 2, rel=1e-12)


def test_an_ensemble_sends_each_connector_its_own_batch() -> None:
    conversations = datasets(*distinct_conversations(4, 1))
    config = EvaluationConfig(judge_samples=2)
    with FakeBatchServer() as first, FakeBatchServer() as second:
        judges = [model(first), model(second, name="judge")]
        expected, _ = online(conversations, judges, config)
        got, ledger = in_batch(conversations, judges, config)
        assert len(first.batches) == len(second.batches) == 1
        assert line_bodies(first) == online_bodies(first) and line_bodies(second) == online_bodies(second)
    assert dumped(got) == dumped(expected)
    assert ledger.members is not None and [m.calls for m in ledger.members] == [8, 8]


def test_a_line_that_does_not_parse_or_failed_is_unscored_without_a_call_or_a_wait() -> None:
    def responder(request: dict[str, Any]) -> Reply | str | dict[str, Any]:
        text = json.dumps(request["messages"])
        if "What is 1 plus 0" in text:
            return GARBAGE_CONTENT
        if "What is 2 plus 0" in text:
            return Reply(status=500, error_message="the model is overloaded")
        return judge_responder(request)

    conversations = datasets(*distinct_conversations(4, 1))
    with FakeBatchServer(responder) as server:
        got, ledger = in_batch(conversations, model(server), EvaluationConfig())
        assert server.call_count == 0
        answered = [line for r in server.batches.values() for line in r.results if line and line["response"]]
    errors = [c.interactions[0].error if c.interactions else None for c in got]
    assert errors[0] is None and errors[3] is None
    # The unparseable line is read once (asking again would read the same line) and billed once.
    assert errors[1] == REPLY_READ_ONCE
    assert ledger.summary().calls == len([a for a in answered if a["response"]["status_code"] == 200]) == 3
    assert errors[2] is not None and "in the provider's batch" in errors[2] and "500" in errors[2]
    assert [c.is_scored for c in got] == [True, False, False, True]


def test_a_refused_key_at_submission_stops_the_evaluation() -> None:
    conversations = datasets(*distinct_conversations(2, 1))
    with FakeBatchServer(api_key="sk-the-only-key-the-provider-knows-0123") as server:
        with pytest.raises(JudgeProviderRefused) as refused:
            in_batch(conversations, model(server), EvaluationConfig())
        assert not server.batches
    assert KEY not in str(refused.value) and "401" in str(refused.value)


def test_the_cap_holds_at_submission_and_the_rest_is_unscored_with_its_cause() -> None:
    conversations = datasets(*distinct_conversations(10, 1))
    config = EvaluationConfig(max_cost_usd=0.003)
    with FakeBatchServer(usage=lambda request: openai_usage(500, 40)) as server:
        got, ledger = in_batch(conversations, model(server), config)
        answered = [line for r in server.batches.values() for line in r.results if line and line["response"]]
    usage = ledger.summary()
    assert 0 < len(answered) < 10 and usage.calls == len(answered)
    assert usage.cost_usd is not None and usage.cost_usd <= 0.003
    assert usage.turns_stopped_by_cap == 10 - len(answered)
    causes = Counter(c.checks[0].cause for c in got)
    assert causes == {None: len(answered), "cost_cap": 10 - len(answered)}


def test_a_turn_repeated_in_the_evaluation_is_one_line() -> None:
    same = turn("q", "What is 2 plus 2?", "4", "4")
    conversations = datasets(conversation("a", [same]), conversation("b", [same]), conversation("c", [same]))
    with FakeBatchServer() as server:
        got, _ = in_batch(conversations, model(server), EvaluationConfig())
        assert sum(len(r.lines) for r in server.batches.values()) == 1
    assert [c.is_scored for c in got] == [True, True, True]


def test_a_connector_on_another_api_is_refused_before_anything_is_sent() -> None:
    from fair_forge_core.judges.batch import batch_refusal

    assert batch_refusal("langchain_openai.ChatOpenAI", {}) is None
    assert batch_refusal("langchain_openai.chat_models.ChatOpenAI", {}) is None
    assert "use_responses_api" in str(batch_refusal("langchain_openai.ChatOpenAI", {"use_responses_api": True}))
    for other in ("langchain_anthropic.ChatAnthropic", "fair_forge_core.judges.ReferenceJudge"):
        refusal = batch_refusal(other, {})
        assert refusal is not None and other in refusal


def test_a_line_the_cache_answers_at_collect_is_counted_as_billed(tmp_path: Any) -> None:
    # Another run stores the verdicts between this run's submit and its collect: the collect reads
    # them from the cache, and the lines the batch answered (and billed) are counted all the same.
    conversations = datasets(*distinct_conversations(4, 1))
    config = EvaluationConfig()
    prices = at_batch_price(PRICES)
    cache = DirectoryCache(tmp_path / "cache")
    with FakeBatchServer(usage=lambda request: openai_usage(500, 40)) as server:
        judge = model(server)

        async def run() -> JudgeLedger:
            submit_ledger = JudgeLedger.for_model(judge, config, prices=prices, cache=cache)
            submission = await submit_evaluation(conversations, judge, config, RunContext(ledger=submit_ledger))
            filler = JudgeLedger.for_model(judge, config, prices=PRICES, cache=cache)
            await evaluate_conversations(conversations, judge, config, RunContext(ledger=filler))
            await wait_for_batches(judge, submission, poll_s=0, max_poll_s=0, deadline=None)
            ledger = JudgeLedger.for_model(judge, config, prices=prices, cache=cache)
            await collect_evaluation(conversations, judge, config, RunContext(ledger=ledger), submission)
            return ledger

        ledger = run_sync(run())
        lines = [line for r in server.batches.values() for line in r.results if line and line["response"]]
    usage = ledger.summary()
    assert usage.cache_hits == 4 and len(lines) == 4
    assert usage.calls == 4 and usage.input_tokens == 4 * 500
    assert usage.cost_usd == pytest.approx(4 * (500 * 1.0 + 40 * 4.0) / 1e6, rel=1e-12)  # at half of 2.0 / 8.0


def test_a_submission_that_fails_to_send_gives_its_reservations_back() -> None:
    conversations = datasets(*distinct_conversations(4, 1))
    config = EvaluationConfig(max_cost_usd=1.0)
    budget = CostBudget(1.0)
    with FakeBatchServer() as server:
        server.max_requests = 1  # the provider refuses a file of more lines
        judge = model(server)
        ledger = JudgeLedger.for_model(judge, config, prices=at_batch_price(PRICES), budget=budget)
        with pytest.raises(BatchError):
            run_sync(submit_evaluation(conversations, judge, config, RunContext(ledger=ledger)))
        assert not server.batches
    assert budget.reserved_usd == 0.0 and budget.spent_usd == 0.0  # a retry starts with the whole cap


def test_a_connector_that_calls_another_api_stops_before_anything_is_sent() -> None:
    conversations = datasets(*distinct_conversations(2, 1))
    with FakeBatchServer() as server:
        judge = model(server, use_responses_api=True)
        with pytest.raises(JudgeProviderRefused) as refused:
            in_batch(conversations, judge, EvaluationConfig())
        assert not server.batches and not server.files and server.call_count == 0
    assert UNSUPPORTED.split(":")[0] in str(refused.value) and "/responses" in str(refused.value)


def test_a_retried_submission_takes_the_earlier_attempts_batches_and_sends_only_what_they_lack() -> None:
    from fair_forge_core.judges.batch_api import cancel_batches, submit_lines

    def calls(*numbers: int) -> dict[str, bytes]:
        return {f"call-{n}": json.dumps({"model": "judge", "n": n}).encode() for n in numbers}

    labels = {"fair_forge_job": "job-1", "fair_forge_shard": "0"}
    with FakeBatchServer() as server:
        judge = model(server)
        [first] = run_sync(submit_lines(judge, calls(0, 1, 2), labels))
        since = server.batches[first].created_at
        # 150 batches since (other jobs, other shards of this one) push it past the list's first page.
        for n in range(150):
            run_sync(submit_lines(judge, calls(99), {**labels, "fair_forge_shard": str(1 + n % 2)}))

        def sent(ids: list[str]) -> list[set[str]]:
            return [{line["custom_id"] for line in server.batches[i].lines} for i in ids]

        assert run_sync(submit_lines(judge, calls(0, 1, 2), labels, since=since)) == [first]
        # A retry that recorded another set of lines (the cap, the deadline, the cache): the
        # earlier batch is taken for what it holds, only the rest is sent.
        more = run_sync(submit_lines(judge, calls(1, 2, 3), labels, since=since))
        assert more[0] == first and sent(more[1:]) == [{"call-3"}]
        fewer = run_sync(submit_lines(judge, calls(1), labels, since=since))
        assert fewer == [first]
        # Not before `since`: sent anew.
        assert run_sync(submit_lines(judge, calls(0), labels, since=since + 3600)) != [first]
        # An earlier batch none of whose lines is wanted is cancelled; a cancelled one is not taken.
        shard_9 = {**labels, "fair_forge_shard": "9"}
        [unwanted] = run_sync(submit_lines(judge, calls(7), shard_9))
        [wanted] = run_sync(submit_lines(judge, calls(8), shard_9, since=since))
        assert wanted != unwanted and server.batches[unwanted].status in ("cancelling", "cancelled")
        run_sync(cancel_batches(judge, [wanted]))
        [again] = run_sync(submit_lines(judge, calls(8), shard_9, since=since))
        assert again not in (wanted, unwanted)
