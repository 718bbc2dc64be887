"""What the performance work changed, held to behaviour (no timing assertions).

- Dedup: a request whose turns all repeat one (query, answer, ground truth) makes one judge call.
- `run_sync`: one event loop per process, so providers' cached HTTP pools stay usable.
- `ToolScorer`: the memo gives exactly what `score_tool_calls` gives; turns validated from equal
  tool JSON share one object, equal texts one str (`sharing.share_repeated_values`), and only those.
- The handler: GC paused only for the invocation; the JSON body built by pydantic is the
  same JSON as before; `_measure` agrees with a plain recursive definition.
"""

from __future__ import annotations

import copy
import datetime
import gc
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_openai import ChatOpenAI
from pydantic import ValidationError

import handler.app
import handler.responses
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.judges.llm import JudgeTelemetry
from fair_forge_core.schemas import (
    AgenticTrace,
    Batch,
    ConversationMetrics,
    EvaluationConfig,
    EvaluationResult,
    GroundTruthAgentic,
    InteractionResult,
    RunRequest,
    ToolWeights,
)
from fair_forge_core.schemas.base import with_shared_fields_set
from fair_forge_core.tools import ToolScorer, score_tool_calls
from fair_forge_core.tools.scorer import _frozen
from fair_forge_testing.builders import conversation, datasets, distinct_conversations, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer
from fair_forge_testing.handler_client import call_handler
from handler.settings import Settings
from handler.validation import RequestError, _measure, parse_run_request, validation_details

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = json.loads((ROOT / "examples" / "calculator.json").read_text())
API_KEY = "sk-test-perf-0123456789abcdef"


def openai_connector(server: FakeLLMServer) -> dict[str, Any]:
    params = {"model": "judge", "base_url": server.base_url, "api_key": API_KEY}
    return {"class_path": "langchain_openai.ChatOpenAI", "params": params}


# --------------------------------------------------------------------------- dedup


def test_a_request_repeating_one_turn_makes_exactly_one_judge_call() -> None:
    repeated = [
        conversation(f"s{c}", [turn(f"q{c}-{t}", "What is 5 + 3?", "The result is 8.", "8") for t in range(5)])
        for c in range(60)
    ]
    with FakeLLMServer() as server:
        response = call_handler({"connector": openai_connector(server), "datasets": repeated})
        assert server.call_count == 1
    assert response.status == 200
    scores = [s for m in response.body["per_conversation_metrics"] for s in m["correctness_scores"]]
    assert scores == [1.0] * 300


def test_the_same_triple_in_another_context_is_judged_again() -> None:
    """The judge also sees the conversation's context and language: they are part of the dedup key."""
    same = turn("q", "What is 5 + 3?", "8", "8")
    with FakeLLMServer() as server:
        body = {
            "connector": openai_connector(server),
            "datasets": [
                conversation("a", [same], context="maths"),
                conversation("b", [same], context="maths"),
                conversation("c", [same], context="arithmetic"),
                conversation("d", [same], context="maths", language="spanish"),
            ],
        }
        assert call_handler(body).status == 200
        assert server.call_count == 3


# --------------------------------------------------------------------------- one event loop


def test_consecutive_evaluations_reuse_the_providers_connections_cleanly() -> None:
    """With `asyncio.run` per evaluation, the second one lost its first calls to "Event loop is closed"
    (langchain-openai caches its HTTP client, and its pooled connections, per base URL)."""
    with FakeLLMServer() as server:
        for _ in range(3):
            telemetry = JudgeTelemetry()
            model = ChatOpenAI(model="judge", base_url=server.base_url, api_key=API_KEY, max_retries=0)
            evaluate_sync(
                datasets(*distinct_conversations(8)), model, EvaluationConfig(max_concurrency=4), telemetry=telemetry
            )
            assert telemetry.calls == 8 and telemetry.parse_failures == 0 and telemetry.retries == 0
        assert server.call_count == 24


# --------------------------------------------------------------------------- the tool-score memo


def random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.15:
        return {rng.choice("abc"): random_value(rng, depth + 1) for _ in range(rng.randint(0, 2))}
    if depth < 2 and roll < 0.25:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 2))]
    if roll < 0.35:
        return rng.choice([{"$any": True}, {"$text": " X "}, {"$approx": 5, "tol": 0.5}, {"$any_of": [1, "1"]}])
    return rng.choice([0, 1, 5, 5.0, True, False, None, "x", "X", "5", ""])


def random_turn(rng: random.Random) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
    def call(with_result: bool) -> dict[str, Any]:
        params = {k: random_value(rng) for k in rng.sample("abcd", rng.randint(0, 3))}
        made = {"tool_name": rng.choice(["calc", "search"]), "parameters": params}
        if rng.random() < 0.5:
            made["step"] = rng.randint(0, 2)
        if with_result and rng.random() < 0.6:
            made["result"] = random_value(rng)
        return made

    expected = {"expected_tools": [call(False) for _ in range(rng.randint(0, 3))]}
    expected["tool_sequence_matters"] = rng.random() < 0.5
    used = None
    if rng.random() < 0.9:
        used = {"tools_used": [call(True) for _ in range(rng.randint(0, 3))]}
        if rng.random() < 0.7:
            used["final_answer_uses_tools"] = rng.random() < 0.7
    return used, expected, rng.choice(["The result is 8.", "5", "x", "", "true"])


def test_the_memo_gives_what_score_tool_calls_gives() -> None:
    rng = random.Random(2026)
    weights, threshold = ToolWeights(selection=0.7, parameters=0.1, sequence=0.1, utilization=0.1), 0.75
    scorer = ToolScorer(weights, threshold, 0.5)
    # A small space of turns, each drawn many times, so the memo is hit as well as filled.
    cases = [random_turn(rng) for _ in range(150)]
    for _ in range(1500):
        used, expected, answer = rng.choice(cases)
        trace = AgenticTrace.model_validate(used) if used is not None else None
        truth = GroundTruthAgentic.model_validate(expected)
        direct = score_tool_calls(
            trace, truth, answer=answer, weights=weights, tool_threshold=threshold, dimension_floor=0.5
        )
        assert scorer.score(trace, truth, answer) == direct


def test_the_memo_tells_apart_what_scores_differently() -> None:
    scorer = ToolScorer(ToolWeights(), 0.75, 0.5)
    truth = GroundTruthAgentic.model_validate({"expected_tools": [{"tool_name": "f", "parameters": {"x": 1}}]})

    def scored(used: dict[str, Any], answer: str = "ok") -> Any:
        trace = AgenticTrace.model_validate(used)
        memo = scorer.score(trace, truth, answer)
        assert memo == score_tool_calls(
            trace, truth, answer=answer, weights=ToolWeights(), tool_threshold=0.75, dimension_floor=0.5
        )
        return memo

    call = {"tool_name": "f", "parameters": {"x": 1}, "result": 8}
    one, true, float_one = (
        scored({"tools_used": [{**call, "parameters": {"x": value}}], "final_answer_uses_tools": True})
        for value in (1, True, 1.0)
    )
    assert one.parameter_accuracy == 1.0 and true.parameter_accuracy == 0.0 and float_one.parameter_accuracy == 1.0
    unset = scored({"tools_used": [call]})
    explicit = scored({"tools_used": [call], "final_answer_uses_tools": False})
    assert "not reported" in unset.reasoning and "not reported" not in explicit.reasoning
    assert scored({"tools_used": [call]}, answer="It is 8.").result_in_answer is True
    assert scored({"tools_used": [call]}, answer="It is 9.").result_in_answer is False


def test_equal_turns_share_one_score_and_exotic_values_skip_the_memo() -> None:
    scorer = ToolScorer(ToolWeights(), 0.75, 0.5)
    truth = GroundTruthAgentic.model_validate({"expected_tools": [{"tool_name": "f"}]})
    first = AgenticTrace.model_validate({"tools_used": [{"tool_name": "f", "result": 8}]})
    again = AgenticTrace.model_validate({"tools_used": [{"tool_name": "f", "result": 8}]})
    assert scorer.score(first, truth, "8") is scorer.score(again, truth, "8")
    # A value that is not plain JSON data is scored each time, never confused with its text.
    when = datetime.date(2026, 1, 1)
    dated = AgenticTrace(tools_used=[{"tool_name": "f", "result": when}])  # type: ignore[list-item]
    texted = AgenticTrace(tools_used=[{"tool_name": "f", "result": "2026-01-01"}])  # type: ignore[list-item]
    assert scorer.score(dated, truth, "on 2026-01-01").result_in_answer is None  # not JSON data: no evidence
    assert scorer.score(texted, truth, "on 2026-01-01").result_in_answer is True


TOOL_VALUES = st.recursive(
    # Few values, so that pairs collide often; those equal under == but not as JSON included.
    st.sampled_from([None, True, False, 0, 1, 1.0, 0.0, -0.0, 1e16, 10**16, "1", "", "é", "x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "1"]), inner, max_size=3),
    max_leaves=8,
)


def tool_turn(qa_id: str, used: Any, expected: Any, *, sequence: bool = False) -> dict[str, Any]:
    return turn(
        qa_id,
        "Add them.",
        "8",
        "8",
        agentic={"tools_used": [{"tool_name": "add", "parameters": {"x": used}, "result": 8}]},
        ground_truth_agentic={
            "expected_tools": [{"tool_name": "add", "parameters": {"x": expected}}],
            "tool_sequence_matters": sequence,
        },
    )


def validated(*turns: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The turns of a request holding `turns` in one conversation, as `/run` validates them (from
    the body's JSON text, decoded), and as validation alone makes them (nothing shared)."""
    body = json.loads(json.dumps({"connector": CALCULATOR["connector"], "datasets": [conversation("s", [*turns])]}))
    fresh = RunRequest.model_validate(copy.deepcopy(body))
    shared = parse_run_request(body, Settings(), share_repeated=True)
    assert _frozen(shared) == _frozen(fresh)  # the same request exactly, fields set included
    return shared.datasets[0].conversation, fresh.datasets[0].conversation


@settings(max_examples=400, derandomize=True, deadline=None)
@given(TOOL_VALUES, TOOL_VALUES, TOOL_VALUES, TOOL_VALUES, st.booleans())
def test_only_turns_of_the_same_tool_data_share_their_models(
    used: Any, other: Any, expected: Any, also: Any, sequence: bool
) -> None:
    (first, second), (fresh_first, fresh_second) = validated(
        tool_turn("a", used, expected), tool_turn("b", other, also, sequence=sequence)
    )
    for name, a, b in (("agentic", used, other), ("ground_truth_agentic", [expected, False], [also, sequence])):
        shared = getattr(first, name) is getattr(second, name)
        # Shared only when validation made the same data exactly (the memo's own exact key) ...
        if shared:
            assert _frozen(getattr(fresh_first, name)) == _frozen(getattr(fresh_second, name))
        # ... always when it was written as the same JSON ...
        assert shared == (json.dumps(a) == json.dumps(b))
        # ... and each turn holds what validation alone gives it.
        assert _frozen(getattr(first, name)) == _frozen(getattr(fresh_first, name))
        assert _frozen(getattr(second, name)) == _frozen(getattr(fresh_second, name))
    scorer = ToolScorer(ToolWeights(), 0.75, 0.5)
    for turn_, fresh in ((first, fresh_first), (second, fresh_second)):
        assert scorer.score_batch(turn_) == ToolScorer(ToolWeights(), 0.75, 0.5).score_batch(fresh)


def test_texts_and_tool_fields_are_shared_across_conversations_and_never_across_fields() -> None:
    same = {"tools_used": [{"tool_name": "add", "parameters": {"x": 1}}]}
    query, answer = "What is 5 plus 3?", "It is 8."  # longer than one character: not a cached singleton
    body = json.loads(
        json.dumps(
            {
                "connector": CALCULATOR["connector"],
                "datasets": [
                    conversation(
                        "s1",
                        [
                            turn(
                                "a",
                                query,
                                answer,
                                "8",
                                agentic=same,
                                ground_truth_agentic={"expected_tools": same["tools_used"]},
                            )
                        ],
                    ),
                    conversation(
                        "s2",
                        [
                            turn("b", query, answer, "8", agentic=same),
                            turn("c", query, answer, "8", ground_truth_agentic={}),
                        ],
                    ),
                ],
            }
        )
    )
    kept = copy.deepcopy(body)
    parse_run_request(kept, Settings())  # not asked to share: the body stays JSON data (`POST /jobs` stores it)
    assert kept == body and json.dumps(kept)
    request = parse_run_request(body, Settings(), share_repeated=True)
    (a,), (b, c) = (d.conversation for d in request.datasets)
    assert a.agentic is b.agentic  # another conversation, the same JSON
    assert a.query is b.query is c.query and a.assistant is c.assistant  # equal texts: one str
    assert a.ground_truth_agentic is not None and c.ground_truth_agentic is None  # `{}`: no expectation, left None
    # Equal under ==, yet not the same data: never shared.
    for one, two in (({"a": 1, "b": 2}, {"b": 2, "a": 1}), (1, 1.0), (1, True), (0.0, -0.0), ([1], [1.0])):
        (x, y), _ = validated(tool_turn("x", one, one), tool_turn("y", two, two))
        assert x.agentic is not y.agentic and x.ground_truth_agentic is not y.ground_truth_agentic
    assert "agentic" not in c.model_fields_set and a.model_fields_set == {
        "qa_id",
        "query",
        "assistant",
        "ground_truth_assistant",
        "agentic",
        "ground_truth_agentic",
    }


def test_sharing_leaves_every_validation_error_as_it_was() -> None:
    bad_call = {"tools_used": [{"tool_name": "", "parameters": {"x": 1}}]}  # an empty tool name
    good = {"expected_tools": [{"tool_name": "add"}]}
    turns = [
        turn("a", "What is 5 plus 3?", "8", "8", agentic=bad_call, ground_truth_agentic=good),
        turn("b", "What is 5 plus 3?", "8", "8", agentic=bad_call, ground_truth_agentic=good),
        turn("c", "What is 5 plus 3?", "8", "8", agentic=good, ground_truth_agentic=bad_call),  # fields swapped
        turn("d", "What is 5 plus 3?", "8", 8, agentic={"tools_used": []}),  # a number for a text
    ]
    body = json.loads(json.dumps({"connector": CALCULATOR["connector"], "datasets": [conversation("s", turns)]}))
    with pytest.raises(ValidationError) as direct:
        RunRequest.model_validate(copy.deepcopy(body))
    with pytest.raises(RequestError) as refused:
        parse_run_request(body, Settings(), share_repeated=True)
    assert refused.value.details == validation_details(direct.value, RunRequest)
    fields = {detail["field"] for detail in refused.value.details}
    assert {
        "datasets[0].conversation[0].agentic.tools_used[0].tool_name",
        "datasets[0].conversation[1].agentic.tools_used[0].tool_name",
    } <= fields
    assert "datasets[0].conversation[3].ground_truth_assistant" in fields


def test_sharing_reproduces_every_validator_of_the_fields_it_validates_alone() -> None:
    # `sharing._validated` applies Batch's before-validator of `ground_truth_agentic` itself; a
    # validator Batch gains on a shared field (or on the whole turn) would be skipped: this fails first.
    decorators = Batch.__pydantic_decorators__
    assert {name: d.info.fields for name, d in decorators.field_validators.items()} == {
        "_tools_not_evaluated_without_expected_tools": ("ground_truth_agentic",)
    }
    assert not decorators.model_validators and not decorators.validators and not decorators.root_validators


def test_results_given_every_field_share_one_fields_set_and_copy_apart() -> None:
    result = evaluate_sync(datasets(*distinct_conversations(3, 2)), ReferenceJudge())
    turns = [i for m in result.per_conversation_metrics for i in m.interactions or ()]
    first, second = turns[0], turns[1]
    assert first.model_fields_set is second.model_fields_set == set(InteractionResult.model_fields)
    metrics = result.per_conversation_metrics
    assert metrics[0].model_fields_set is metrics[1].model_fields_set == set(ConversationMetrics.model_fields)
    # Equal to the same values validated on their own (their own set), copies apart.
    assert first == InteractionResult.model_validate(first.model_dump())
    copied = first.model_copy(update={"error": "changed"})
    assert copied.model_fields_set is not first.model_fields_set and second.error is None
    first.error = "assigned"  # assignment adds a name the shared set already holds
    assert second.model_fields_set == set(InteractionResult.model_fields) and second.error is None
    trimmed = result.without_interactions("a reason")
    assert all(m.interactions is None for m in trimmed.per_conversation_metrics)
    # Not given every field: its own set, as pydantic made it.
    partial = with_shared_fields_set(InteractionResult.model_construct(qa_id="x"))
    assert partial.model_fields_set == {"qa_id"} and partial.model_fields_set is not first.model_fields_set


# --------------------------------------------------------------------------- the handler


def test_gc_is_paused_only_during_an_invocation(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real_resolve = handler.app.app.resolve

    def resolve(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(gc.isenabled())
        return real_resolve(event, context)

    monkeypatch.setattr(handler.app.app, "resolve", resolve)
    assert gc.isenabled()
    assert call_handler(CALCULATOR).status == 200
    assert call_handler(raw="{not json").status == 400
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        call_handler(CALCULATOR)
        assert not gc.isenabled()  # a caller's choice is left alone
    finally:
        gc.enable()


def test_the_response_is_the_same_json_as_json_dumps_of_model_dump() -> None:
    body = copy.deepcopy(CALCULATOR)
    body["datasets"][0]["conversation"][0]["assistant"] = "Le résultat est 8 — 🎉"
    request = parse_run_request(body, Settings())
    result = evaluate_sync(request.datasets, ReferenceJudge(), request.config)
    produced = handler.responses.RunResponse.of(result, "req-1").model_dump_json()
    expected = {**json.loads(json.dumps(result.model_dump(mode="json"))), "request_id": "req-1"}
    assert json.loads(produced) == expected
    assert list(json.loads(produced)) == list(expected)  # same field order, request_id last
    # The size that counts against Lambda's limit is the body escaped inside the proxy response.
    proxy_response = json.dumps({"statusCode": 200, "body": produced})
    assert handler.responses.payload_size(produced) <= len(proxy_response)
    assert handler.responses.payload_size('a"b') == len('"a\\"b"') and handler.responses.payload_size("é") == len(
        '"\\u00e9"'
    )


def results_to_write() -> list[EvaluationResult]:
    """Results of every shape the body is written for: several conversations with per-turn detail
    (non-ASCII, quotes and a newline in the answers, tools, an end state, a goal, criteria), the
    same without per-turn detail, one conversation, and none."""
    body = copy.deepcopy(CALCULATOR)
    first = body["datasets"][0]
    first["conversation"][0]["assistant"] = 'Le résultat est "8" —\n 🎉 \\ done'
    first["expected_state"], first["final_state"] = {"total": 8}, {"total": 8}
    first["goal"] = "Compute the total"
    first["criteria"] = [{"name": "polite", "rule": "The agent thanks the user."}]
    body["datasets"] += [{**copy.deepcopy(first), "session_id": f"copy-{n}"} for n in range(3)]
    request = parse_run_request(body, Settings())
    full = evaluate_sync(request.datasets, ReferenceJudge(), request.config)
    one = full.model_copy(update={"per_conversation_metrics": full.per_conversation_metrics[:1]})
    none = full.model_copy(update={"per_conversation_metrics": []})
    return [full, full.without_interactions("a reason"), one, none]


@pytest.mark.parametrize("index", range(4))
def test_the_body_written_a_conversation_at_a_time_is_model_dump_json(index: int) -> None:
    result = results_to_write()[index]
    response = handler.responses.RunResponse.of(result, "req-1")
    assert response.body() == response.model_dump_json()
    job = handler.responses.JobResult.of(result, "req-1", job_id="job-1")  # a subclass with a field after
    assert job.body() == job.model_dump_json()


def test_a_response_not_beginning_as_a_result_does_is_dumped_whole() -> None:
    result = results_to_write()[0]
    response = handler.responses.RunResponse.of(result, "req-1")
    other = response.model_copy(update={"format_version": "another/1"})  # not a value it validates, but dumped as is
    assert other.body() == other.model_dump_json() and other.body().startswith('{"format_version":"another/1"')


@settings(max_examples=300, deadline=None)
@given(
    body=st.text(alphabet=st.characters(codec=None, exclude_categories=())),
    chunk=st.integers(min_value=1, max_value=8),
)
def test_the_payload_size_is_the_length_of_the_escaped_body(body: str, chunk: int) -> None:
    # Any text: quotes, backslashes, controls, non-ASCII, characters beyond U+FFFF (a
    # surrogate pair in the escaped text) and lone surrogates, cut into slices anywhere.
    assert handler.responses.payload_size(body, chunk) == len(json.dumps(body))
    assert handler.responses.payload_size(body) == len(json.dumps(body))


@settings(max_examples=300, deadline=None)
@given(
    body=st.text(alphabet=st.characters(max_codepoint=0x7F, exclude_categories=())),
    chunk=st.integers(min_value=1, max_value=8),
)
def test_the_payload_size_of_ascii_is_the_length_of_the_escaped_body(body: str, chunk: int) -> None:
    # ASCII alone (quotes, backslashes, controls, DEL among the printable): the slices counted
    # without escaping them and the slices escaped add up alike.
    assert handler.responses.payload_size(body, chunk) == len(json.dumps(body))
    assert handler.responses.payload_size(body) == len(json.dumps(body))


def test_the_payload_size_counts_each_kind_of_character() -> None:
    # By hand: 2 quotes + '"' → 2, '\\' → 2, newline → 2, U+0001 → 6, 'é' → 6, '🎉' → 12, 'a' → 1.
    text = 'a"\\\n\x01é🎉'
    for chunk in (1, 2, 3, 100):
        assert handler.responses.payload_size(text, chunk) == 2 + 1 + 2 + 2 + 2 + 6 + 6 + 12
    assert handler.responses.payload_size("") == 2


def reference_measure(value: Any, depth: int = 1) -> tuple[int, int]:
    """The definition: longest string (keys included) and deepest nesting, recursively."""
    if isinstance(value, str):
        return len(value), depth
    children = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
    longest = max((len(k) for k in value), default=0) if isinstance(value, dict) else 0
    deepest = depth
    for child in children:
        child_longest, child_depth = reference_measure(child, depth + 1)
        longest, deepest = max(longest, child_longest), max(deepest, child_depth)
    return longest, deepest


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=40,
)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(JSON_VALUES)
def test_measure_agrees_with_its_definition(value: Any) -> None:
    assert _measure(value) == reference_measure(value)


class _Text(str):
    pass


class _Mapping(dict):  # type: ignore[type-arg]
    pass


class _Items(list):  # type: ignore[type-arg]
    pass


SUBCLASSED_VALUES = st.recursive(
    st.none() | st.integers() | st.text(max_size=30) | st.text(max_size=30).map(_Text),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(_Items)
        | st.dictionaries(st.text(max_size=12), inner, max_size=4)
        | st.dictionaries(st.text(max_size=12).map(_Text), inner, max_size=4).map(_Mapping)
    ),
    max_leaves=40,
)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(SUBCLASSED_VALUES)
def test_measure_counts_subclasses_of_str_dict_and_list_as_they_are(value: Any) -> None:
    # json.loads makes only the exact types; a body built in Python may hold subclasses.
    assert _measure(value) == reference_measure(value)
