"""Self-consistency (`config.judge_samples`) and ensembles (`connector` as a list), through the
real `ChatOpenAI` against fake OpenAI-compatible servers on 127.0.0.1.

Each server's responder gives scripted scores per answer; the expected scores, votes and rates
are computed here from those scripts with the standard library (`statistics.median_low`,
`statistics.fmean`), never read back from the panel.
"""

from __future__ import annotations

import io
import itertools
import json
import statistics
import threading
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from fair_forge_core.cli import main
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges.cache import DirectoryCache
from fair_forge_core.judges.llm import RetryPolicy
from fair_forge_core.judges.panel import combine
from fair_forge_core.judges.prices import PriceTable, read_price_table
from fair_forge_core.judges.prompt import parse_judge_request
from fair_forge_core.judges.usage import JudgeLedger
from fair_forge_core.schemas import EvaluationConfig, EvaluationResult, InteractionResult
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply, last_user_text, openai_usage
from fair_forge_testing.handler_client import call_handler, run_in_subprocess

FAST_RETRY = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.05, call_timeout_s=5.0)
API_KEY = "sk-panel-secret-0123456789abcdef"
OPENAI = "langchain_openai.chat_models.ChatOpenAI"
THRESHOLD = 0.7


class ScriptedScores:
    """A responder: the i-th request about an answer gets that answer's i-th scripted score
    (cycling); an answer in `fail_on` gets a 500 (the responder raises)."""

    def __init__(self, scripts: dict[str, list[float]], fail_on: frozenset[str] = frozenset()) -> None:
        self.scripts = scripts
        self.fail_on = fail_on
        self._lock = threading.Lock()
        self._counters: dict[str, Iterator[float]] = {}

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        judged = parse_judge_request(last_user_text(request))
        assert judged is not None
        if judged.answer in self.fail_on:
            raise RuntimeError("this judge fails on this answer")
        with self._lock:
            counter = self._counters.setdefault(judged.answer, itertools.cycle(self.scripts[judged.answer]))
            score = next(counter)
        return {"score": score, "reasoning": f"{judged.answer} scored {score}"}


def three_answers() -> list[Any]:
    return datasets(
        conversation("s1", [turn("q1", "First?", "alpha", "alpha")]),
        conversation("s2", [turn("q2", "Second?", "beta", "beta")]),
        conversation("s3", [turn("q3", "Third?", "gamma", "gamma")]),
    )


HEDGE = "Maybe sunny and warm."  # the offline judge caps a hedge at 0.6: not decisive, sent on by the cascade
DECIDED_AND_UNDECIDED = [
    conversation("s1", [turn("q1", "Capital of France?", "Paris", "Paris")]),
    conversation("s2", [turn("q2", "How is the weather?", HEDGE, "Sunny and warm")]),
]


def chat(server: FakeLLMServer, model: str = "judge-a") -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=server.base_url, api_key=API_KEY, max_retries=0)


def turns_by_answer(result: EvaluationResult) -> dict[str, InteractionResult]:
    answers = {"q1": "alpha", "q2": "beta", "q3": "gamma", "q4": "alpha"}
    return {
        answers[i.qa_id]: i for m in result.per_conversation_metrics for i in m.interactions or [] if i.qa_id != "q4"
    }


def passes(score: float) -> bool:
    return score >= THRESHOLD


def agreement(scores: list[float], turn_score: float) -> float:
    return sum(passes(s) == passes(turn_score) for s in scores) / len(scores)


# --------------------------------------------------------------------------- the vote rule


@pytest.mark.parametrize("n", range(1, 7))
def test_majority_passes_exactly_when_a_strict_majority_passes(n: int) -> None:
    for scores in itertools.product((0.0, 0.5, 0.7, 1.0), repeat=n):
        strict_majority = sum(passes(s) for s in scores) > n / 2
        assert passes(combine(scores, "majority")) == strict_majority, scores
        assert combine(scores, "majority") == statistics.median_low(scores)
        assert combine(scores, "mean") == pytest.approx(statistics.fmean(scores))


# --------------------------------------------------------------------------- judge_samples

SAMPLES = {"alpha": [1.0, 0.0, 1.0], "beta": [0.0, 0.0, 0.0], "gamma": [0.8, 0.6, 0.9]}


@pytest.mark.parametrize("vote", ["majority", "mean"])
def test_each_distinct_turn_is_judged_n_times_and_combined(vote: str) -> None:
    with FakeLLMServer(ScriptedScores(SAMPLES)) as server:
        data = [
            *three_answers(),
            *datasets(conversation("s4", [turn("q4", "First?", "alpha", "alpha")])),  # a repeat of q1
        ]
        config = EvaluationConfig(judge_samples=3, judge_vote=vote, threshold=THRESHOLD)
        result = evaluate_sync(data, chat(server), config, retry=FAST_RETRY)
        assert server.call_count == 9  # 3 distinct turns × 3 samples; the repeat is not judged again
    combined = statistics.median_low if vote == "majority" else statistics.fmean
    for answer, script in SAMPLES.items():
        interaction = turns_by_answer(result)[answer]
        (vote_of_judge,) = interaction.judge_votes or []
        assert sorted(s for s in vote_of_judge.scores if s is not None) == sorted(script)
        assert interaction.answer_score == pytest.approx(combined(script))
        assert vote_of_judge.score == pytest.approx(combined(script))
        assert interaction.judge_agreement == pytest.approx(agreement(script, combined(script)))
        assert interaction.answer_correct == passes(combined(script))
    consensus = result.aggregated_metrics.judge_consensus
    assert consensus is not None
    assert (consensus.samples, consensus.vote, consensus.members) == (3, vote, ["judge-a"])
    assert (consensus.turns, consensus.scored_turns, consensus.unscored_turns) == (4, 4, 0)  # turns as reported
    # Unanimous: only beta (alpha splits 2-1, gamma 2-1); alpha counts twice (q1, q4).
    assert consensus.consistency_rate == pytest.approx(1 / 4)
    assert consensus.member_consistency == [pytest.approx(1 / 4)]
    assert consensus.agreement_rate is None  # one connector: no agreement between connectors
    expected_mean = statistics.fmean(
        agreement(SAMPLES[a], combined(SAMPLES[a])) for a in ("alpha", "beta", "gamma", "alpha")
    )
    assert consensus.mean_agreement == pytest.approx(expected_mean)


def test_one_sample_is_the_plain_judge() -> None:
    with FakeLLMServer(ScriptedScores(SAMPLES)) as server:
        result = evaluate_sync(three_answers(), chat(server), EvaluationConfig(), retry=FAST_RETRY)
        assert server.call_count == 3
    assert result.aggregated_metrics.judge_consensus is None
    assert all(i.judge_votes is None and i.judge_agreement is None for i in turns_by_answer(result).values())


def test_a_failed_sample_leaves_the_turn_unscored() -> None:
    with FakeLLMServer(ScriptedScores(SAMPLES, fail_on=frozenset({"gamma"}))) as server:
        result = evaluate_sync(three_answers(), chat(server), EvaluationConfig(judge_samples=3), retry=FAST_RETRY)
    gamma = turns_by_answer(result)["gamma"]
    assert gamma.answer_score is None and gamma.judge_agreement is None
    assert gamma.error is not None and "connector[0] (judge-a)" in gamma.error
    (member,) = gamma.judge_votes or []
    assert member.score is None and member.scores == [None, None, None] and member.error
    consensus = result.aggregated_metrics.judge_consensus
    assert consensus is not None
    assert (consensus.scored_turns, consensus.unscored_turns, consensus.unscored_by_member) == (2, 1, [1])
    assert result.aggregated_metrics.unscored_conversations == 1


def test_samples_have_cache_entries_of_their_own(tmp_path: Path) -> None:
    cache = DirectoryCache(tmp_path / "cache")

    def run(samples: int, server: FakeLLMServer) -> EvaluationResult:
        model = chat(server)
        config = EvaluationConfig(judge_samples=samples, judge_cache=True)
        ledger = JudgeLedger.for_models([model], config, cache=cache)
        return evaluate_sync(three_answers(), model, config, retry=FAST_RETRY, ledger=ledger)

    with FakeLLMServer(ScriptedScores(SAMPLES)) as server:
        first = run(3, server)
        assert server.call_count == 9
        again = run(3, server)
        assert server.call_count == 9  # every sample answered from the cache
        more = run(4, server)
        assert server.call_count == 12  # only the fourth sample of each turn is new
    assert again.model_dump()["per_conversation_metrics"] == first.model_dump()["per_conversation_metrics"]
    usage = again.aggregated_metrics.judge_usage
    assert usage is not None and (usage.cache_hits, usage.cache_misses, usage.calls) == (9, 0, 0)
    assert more.aggregated_metrics.judge_usage is not None
    assert more.aggregated_metrics.judge_usage.cache_hits == 9


# --------------------------------------------------------------------------- ensembles

MEMBER_SCORES = [  # per connector: answer -> its score
    {"alpha": [1.0], "beta": [0.0], "gamma": [0.9]},
    {"alpha": [0.0], "beta": [0.0], "gamma": [0.8]},
    {"alpha": [1.0], "beta": [0.6], "gamma": [0.1]},
]


@pytest.fixture
def three_servers() -> Iterator[list[FakeLLMServer]]:
    servers = [FakeLLMServer(ScriptedScores(scripts)) for scripts in MEMBER_SCORES]
    try:
        yield servers
    finally:
        for server in servers:
            server.stop()


@pytest.mark.parametrize("vote", ["majority", "mean"])
def test_an_ensemble_combines_its_members(three_servers: list[FakeLLMServer], vote: str) -> None:
    models = [chat(server, f"judge-{name}") for server, name in zip(three_servers, "abc", strict=True)]
    config = EvaluationConfig(judge_vote=vote, threshold=THRESHOLD)
    result = evaluate_sync(three_answers(), models, config, retry=FAST_RETRY)
    assert [server.call_count for server in three_servers] == [3, 3, 3]
    combined = statistics.median_low if vote == "majority" else statistics.fmean
    unanimous = 0
    for answer in ("alpha", "beta", "gamma"):
        member_scores = [scripts[answer][0] for scripts in MEMBER_SCORES]
        interaction = turns_by_answer(result)[answer]
        assert [v.model for v in interaction.judge_votes or []] == ["judge-a", "judge-b", "judge-c"]
        assert [v.score for v in interaction.judge_votes or []] == member_scores
        assert interaction.answer_score == pytest.approx(combined(member_scores))
        assert interaction.judge_agreement == pytest.approx(agreement(member_scores, combined(member_scores)))
        unanimous += len({passes(s) for s in member_scores}) == 1
    consensus = result.aggregated_metrics.judge_consensus
    assert consensus is not None and consensus.members == ["judge-a", "judge-b", "judge-c"]
    assert consensus.agreement_rate == pytest.approx(unanimous / 3)  # beta only
    assert consensus.consistency_rate is None  # one sample each: no self-consistency to measure


def test_two_members_that_disagree_fail_the_turn_under_majority(three_servers: list[FakeLLMServer]) -> None:
    models = [chat(three_servers[0], "judge-a"), chat(three_servers[1], "judge-b")]
    result = evaluate_sync(three_answers(), models, EvaluationConfig(threshold=THRESHOLD), retry=FAST_RETRY)
    alpha = turns_by_answer(result)["alpha"]  # 1.0 against 0.0: a tie
    assert alpha.answer_score == 0.0 and alpha.answer_correct is False
    assert alpha.judge_agreement == 0.5


def test_a_failing_member_is_never_hidden() -> None:
    good = FakeLLMServer(ScriptedScores({"alpha": [1.0], "beta": [0.0], "gamma": [1.0]}))
    flaky = FakeLLMServer(ScriptedScores({"alpha": [1.0], "beta": [0.0], "gamma": [1.0]}, frozenset({"gamma"})))
    with good, flaky:
        models = [chat(good, "judge-good"), chat(flaky, "judge-flaky")]
        result = evaluate_sync(three_answers(), models, EvaluationConfig(), retry=FAST_RETRY)
        assert flaky.status_counts[500] == FAST_RETRY.max_attempts  # retried, then given up
    gamma = turns_by_answer(result)["gamma"]
    assert gamma.answer_score is None and gamma.answer_correct is None  # not the good member's 1.0
    assert gamma.error is not None and gamma.error.startswith("a judgement of the panel failed: connector[1]")
    good_vote, flaky_vote = gamma.judge_votes or []
    assert (good_vote.score, good_vote.error) == (1.0, None)
    assert flaky_vote.score is None and flaky_vote.error is not None and "500" in flaky_vote.error
    consensus = result.aggregated_metrics.judge_consensus
    assert consensus is not None and consensus.unscored_by_member == [0, 1]
    assert any("connector[1] (judge-flaky)" in w for w in result.warnings)
    assert API_KEY not in result.model_dump_json()


PRICES = {"judge-a": {"input": 2.0, "output": 8.0}, "judge-b": {"input": 1.0, "output": 4.0, "cached_input": 0.5}}


def test_an_ensembles_usage_is_its_members_added_up() -> None:
    a = FakeLLMServer(usage=lambda request: openai_usage(len(last_user_text(request)), 7))
    b = FakeLLMServer(usage=lambda request: openai_usage(len(last_user_text(request)) + 5, 13, cached_tokens=2))
    with a, b:
        models = [chat(a, "judge-a"), chat(b, "judge-b")]
        config = EvaluationConfig(judge_samples=2)
        table = PriceTable(source="test", models=read_price_table(json.dumps(PRICES)).models)
        ledger = JudgeLedger.for_models(models, config, prices=table)
        result = evaluate_sync(three_answers(), models, config, retry=FAST_RETRY, ledger=ledger)
        sent = {name: [r.usage for r in server.requests if r.usage] for name, server in (("a", a), ("b", b))}
    usage = result.aggregated_metrics.judge_usage
    assert usage is not None and usage.members is not None
    expected_cost = 0.0
    for member, (name, reported) in zip(usage.members, sent.items(), strict=True):
        assert len(reported) == member.calls == 6  # 3 turns × 2 samples
        inputs = sum(u["prompt_tokens"] for u in reported)
        outputs = sum(u["completion_tokens"] for u in reported)
        cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in reported)
        assert (member.input_tokens, member.output_tokens, member.cached_input_tokens) == (inputs, outputs, cached)
        price = PRICES[f"judge-{name}"]
        cost = ((inputs - cached) * price["input"] + cached * price.get("cached_input", price["input"])) / 1e6
        cost += outputs * price["output"] / 1e6
        assert member.cost_usd == pytest.approx(cost)
        expected_cost += cost
    assert usage.model == "judge-a + judge-b" and usage.calls == 12
    assert usage.input_tokens == sum(m.input_tokens for m in usage.members)
    assert usage.cost_usd == pytest.approx(expected_cost)


def test_the_cost_cap_counts_every_member() -> None:
    a, b = FakeLLMServer(), FakeLLMServer()
    with a, b:
        models = [
            chat(server, name).model_copy(update={"max_tokens": 100})
            for server, name in ((a, "judge-a"), (b, "judge-b"))
        ]
        config = EvaluationConfig(max_concurrency=1, max_cost_usd=1e-9)
        table = PriceTable(source="test", models=read_price_table(json.dumps(PRICES)).models)
        ledger = JudgeLedger.for_models(models, config, prices=table)
        result = evaluate_sync(three_answers(), models, config, retry=FAST_RETRY, ledger=ledger)
        # No member's worst case fits under the shared cap: no call starts (test_cost_cap.py has the rest).
        assert a.call_count + b.call_count == 0
    errors = [i.error for m in result.per_conversation_metrics for i in m.interactions or []]
    assert all("the cost cap (config.max_cost_usd 1e-09) was reached" in (e or "") for e in errors)
    usage = result.aggregated_metrics.judge_usage
    assert usage is not None and usage.max_cost_usd == 1e-9
    assert usage.turns_stopped_by_cap == sum(m.turns_stopped_by_cap for m in usage.members or []) >= 4


def test_the_cascade_sends_only_undecided_turns_to_the_panel() -> None:
    scripts = {HEDGE: [1.0, 0.0, 1.0], "Paris": [0.0]}
    with FakeLLMServer(ScriptedScores(scripts)) as server:
        data = datasets(*DECIDED_AND_UNDECIDED)
        config = EvaluationConfig(judge_cascade=True, judge_samples=3)
        result = evaluate_sync(data, chat(server), config, retry=FAST_RETRY)
        judged = {parse_judge_request(last_user_text(r.body)).answer for r in server.requests}  # type: ignore[union-attr]
    paris, heart = (m.interactions[0] for m in result.per_conversation_metrics if m.interactions)
    assert paris.judged_by == "offline" and paris.judge_votes is None
    assert heart.judged_by == "llm" and heart.judge_votes is not None
    assert judged == {HEDGE} and server.call_count == 3
    assert heart.answer_score == statistics.median_low(scripts[HEDGE])


# --------------------------------------------------------------------------- the request


def body(connector: Any, **config: Any) -> dict[str, Any]:
    return {
        "connector": connector,
        "datasets": [d.model_dump(mode="json", exclude_none=True) for d in three_answers()],
        "config": config,
    }


def openai_connector(server: FakeLLMServer, model: str, **params: Any) -> dict[str, Any]:
    return {"class_path": OPENAI, "params": {"model": model, "base_url": server.base_url, "api_key": API_KEY, **params}}


def test_the_service_judges_with_an_ensemble(three_servers: list[FakeLLMServer]) -> None:
    connectors = [openai_connector(s, f"judge-{n}") for s, n in zip(three_servers, "abc", strict=True)]
    response = call_handler(body(connectors, judge_samples=2, threshold=THRESHOLD))
    assert response.status == 200, response.body
    assert [s.call_count for s in three_servers] == [6, 6, 6]
    consensus = response.body["aggregated_metrics"]["judge_consensus"]
    assert consensus["members"] == ["judge-a", "judge-b", "judge-c"] and consensus["samples"] == 2
    turn_votes = response.body["per_conversation_metrics"][0]["interactions"][0]["judge_votes"]
    assert [v["scores"] for v in turn_votes] == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    assert response.body["aggregated_metrics"]["judge_usage"]["model"] == "judge-a + judge-b + judge-c"
    assert API_KEY not in response.raw


@pytest.mark.parametrize(
    ("connector", "config", "field", "says"),
    [
        ([{"class_path": OPENAI}] * 4, {}, "connector", "at most 3 connectors"),
        ([{"class_path": OPENAI}, 7], {}, "connector[1]", "must be an object"),
        ([{"class_path": OPENAI}, {"params": {}}], {}, None, "connector[1].class_path is required"),
        ({"class_path": OPENAI}, {"judge_samples": 11}, "config.judge_samples", "less than or equal to 10"),
        ({"class_path": OPENAI}, {"judge_vote": "median"}, "config.judge_vote", "majority"),
    ],
)
def test_a_bad_panel_is_a_400_naming_the_field(connector: Any, config: Any, field: str | None, says: str) -> None:
    response = call_handler(body(connector, **config))
    assert response.status == 400, response.body
    text = json.dumps(response.body)
    assert says in text
    if field is not None:
        assert field in {d["field"] for d in response.body.get("details", [])}, response.body


@pytest.mark.parametrize(
    "second",
    [
        {"class_path": OPENAI},  # the same spec
        {"class_path": "langchain_openai.ChatOpenAI"},  # another spelling of the class
        {"class_path": OPENAI, "params": {"api_key": "sk-another-key-0123456789abcdef"}},  # another key
    ],
)
def test_two_connectors_that_are_one_judge_are_a_400(three_servers: list[FakeLLMServer], second: Any) -> None:
    first = openai_connector(three_servers[0], "judge-a")
    twin = {"class_path": second["class_path"], "params": {**first["params"], **second.get("params", {})}}
    response = call_handler(body([first, twin]))
    assert response.status == 400, response.body
    assert response.body["details"][0]["field"] == "connector"
    assert "connector[1] is the same judge as connector[0]" in response.body["error"]
    assert "config.judge_samples" in response.body["error"]
    assert three_servers[0].call_count == 0


def test_one_server_per_member_keeps_the_members_apart_in_the_cache(tmp_path: Path) -> None:
    # Two servers serving a model of one name are two judges: neither may answer from the other's entries.
    yes = FakeLLMServer(ScriptedScores({"alpha": [1.0], "beta": [1.0], "gamma": [1.0]}))
    no = FakeLLMServer(ScriptedScores({"alpha": [0.0], "beta": [0.0], "gamma": [0.0]}))
    cache = DirectoryCache(tmp_path)
    with yes, no:
        models = [chat(yes, "llama"), chat(no, "llama")]
        config = EvaluationConfig(judge_cache=True)
        runs = [
            evaluate_sync(
                three_answers(),
                models,
                config,
                retry=FAST_RETRY,
                ledger=JudgeLedger.for_models(models, config, cache=cache),
            )
            for _ in range(2)
        ]
        assert (yes.call_count, no.call_count) == (3, 3)  # the second run: all from the cache
    for result in runs:
        assert [v.score for v in turns_by_answer(result)["alpha"].judge_votes or []] == [1.0, 0.0]


def test_the_offline_judge_in_an_ensemble_under_the_cascade_is_a_400(three_servers: list[FakeLLMServer]) -> None:
    connectors = [
        {"class_path": "fair_forge_core.judges.ReferenceJudge"},
        openai_connector(three_servers[0], "judge-a"),
    ]
    response = call_handler(body(connectors, judge_cascade=True))
    assert response.status == 400
    assert response.body["details"][0]["field"] == "config.judge_cascade"
    assert call_handler(body(connectors)).status == 200  # without the cascade it is a fine ensemble


def test_a_list_of_one_names_its_item(three_servers: list[FakeLLMServer]) -> None:
    response = call_handler(body([openai_connector(three_servers[0], "judge-a", temprature=0)]))
    assert response.status == 400
    assert response.body["details"][0]["field"] == "connector[0].params.temprature"


def test_mean_of_equal_scores_is_that_score() -> None:
    with FakeLLMServer(ScriptedScores({"alpha": [0.7], "beta": [0.7], "gamma": [0.7]})) as server:
        config = EvaluationConfig(judge_samples=3, judge_vote="mean", threshold=0.7)
        result = evaluate_sync(three_answers(), chat(server), config, retry=FAST_RETRY)
    alpha = turns_by_answer(result)["alpha"]
    assert alpha.answer_score == 0.7 and alpha.answer_correct is True and alpha.judge_agreement == 1.0


def test_a_member_refused_by_its_provider_stops_the_evaluation_with_a_502(tmp_path: Path) -> None:
    good, refusing = FakeLLMServer(), FakeLLMServer(script=[Reply(status=401)] * 20)
    with good, refusing:
        connectors = [openai_connector(good, "judge-good"), openai_connector(refusing, "judge-refused")]
        response = call_handler(body(connectors, judge_samples=2))
        assert response.status == 502, response.body
        assert response.body["error"].startswith("Agentic evaluation failed: the judge provider refused")
        path = tmp_path / "request.json"
        path.write_text(json.dumps(body(connectors, judge_samples=2)))
        stdout, stderr = io.StringIO(), io.StringIO()
        assert main(["evaluate", str(path)], stdout, stderr) == 3
        assert "evaluation failed" in stderr.getvalue() and "Traceback" not in stderr.getvalue()
    assert API_KEY not in response.raw + stderr.getvalue()


def test_a_refused_member_is_named(three_servers: list[FakeLLMServer]) -> None:
    connectors = [
        openai_connector(three_servers[0], "judge-a"),
        openai_connector(three_servers[1], "judge-b", temprature=0),
    ]
    response = call_handler(body(connectors))
    assert response.status == 400
    assert response.body["error"].startswith("Failed to create LLM connector: connector[1].params.temprature")
    assert response.body["details"][0]["field"] == "connector[1].params.temprature"
    assert sum(s.call_count for s in three_servers) == 0


def test_the_log_line_counts_the_cascade_and_the_panel() -> None:
    with FakeLLMServer(ScriptedScores({HEDGE: [1.0, 0.0]})) as server:
        request = body(openai_connector(server, "judge-a"), judge_cascade=True, judge_samples=2)
        request["datasets"] = DECIDED_AND_UNDECIDED
        (response,), out = run_in_subprocess([request])
    assert response["status"] == 200, response["body"]
    judged_by = [m["interactions"][0]["judged_by"] for m in response["body"]["per_conversation_metrics"]]
    (finished,) = [json.loads(line) for line in out.splitlines() if '"evaluation finished"' in line]
    assert finished["cascade_settled_offline"] == judged_by.count("offline") == 1
    assert finished["cascade_sent_to_llm"] == judged_by.count("llm") == 1
    assert finished["judge_samples"] == 2 and finished["judge_consistency_rate"] == 0.0  # 1.0 vs 0.0
    metrics = [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]
    counts = {
        name: doc[name] for doc in metrics for name in ("CascadeSettledOffline", "CascadeSentToLLM") if name in doc
    }
    assert counts == {"CascadeSettledOffline": [1], "CascadeSentToLLM": [1]}
    assert API_KEY not in out


def test_the_cli_prints_the_panel_and_the_cascade(tmp_path: Path) -> None:
    a, b = FakeLLMServer(), FakeLLMServer()
    with a, b:
        path = tmp_path / "request.json"
        request = body(
            [openai_connector(a, "judge-a", max_retries=0), openai_connector(b, "judge-b", max_retries=0)],
            judge_cascade=True,
            judge_samples=2,
        )
        request["datasets"] = DECIDED_AND_UNDECIDED
        path.write_text(json.dumps(request))
        stdout, stderr = io.StringIO(), io.StringIO()
        code = main(["evaluate", str(path)], stdout, stderr)
        calls = a.call_count + b.call_count
    assert code == 0, stderr.getvalue()
    payload = json.loads(stdout.getvalue())
    usage = payload["aggregated_metrics"]["judge_usage"]
    settled, sent = usage["cascade_settled_offline"], usage["cascade_sent_to_llm"]
    assert (settled, sent) == (1, 1) and calls == 2 * 2  # the undecided turn: 2 connectors × 2 samples
    text = stderr.getvalue()
    assert f"cascade: {settled} turn(s) settled offline, {sent} sent to the connector" in text
    assert "judge panel: 2 connectors × 2 samples, majority" in text


def test_reasoning_comes_from_the_judgement_nearest_the_turns_score() -> None:
    by_answer: dict[str, list[float]] = defaultdict(list, {"alpha": [0.2, 0.9, 0.8], "beta": [0.0], "gamma": [1.0]})
    with FakeLLMServer(ScriptedScores(by_answer)) as server:
        result = evaluate_sync(three_answers(), chat(server), EvaluationConfig(judge_samples=3), retry=FAST_RETRY)
    alpha = turns_by_answer(result)["alpha"]
    assert alpha.answer_score == 0.8 and alpha.judge_reasoning == "alpha scored 0.8"


def test_the_html_report_shows_the_votes_and_the_panel(three_servers: list[FakeLLMServer]) -> None:
    from fair_forge_core.report import render_html

    models = [chat(server, f"judge-{name}") for server, name in zip(three_servers, "abc", strict=True)]
    config = EvaluationConfig(judge_samples=2, threshold=THRESHOLD)
    page = render_html(evaluate_sync(three_answers(), models, config, retry=FAST_RETRY))
    # alpha: 1.0 twice, 0.0 twice, 1.0 twice; the turn 1.0 (2 of 3 connectors), 4 of 6 judgements agree.
    assert (
        "<b>Votes:</b> judge-a 1.000, 1.000 → 1.000; judge-b 0.000, 0.000 → 0.000; judge-c 1.000, 1.000 → 1.000 (agreement 66.7%)"
        in page
    )
    assert "judge panel: 3 connectors × 2 samples, majority; 3/3 turns scored" in page
