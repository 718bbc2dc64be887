"""What an agent spent (`fair_forge_core.efficiency`, `config.efficiency`) and its paired
comparison (`fair_forge_core.compare.efficiency`). Golden values are counted by hand from the
rules in the modules' docstrings; quantiles are checked against numpy.percentile, the compared
differences against a bootstrap and a sign-flip test written out here."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fair_forge_core.compare import compare_efficiency, outcomes_from_conversations
from fair_forge_core.efficiency import aggregate_efficiency, conversation_efficiency, efficiency_line, quantile
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.provenance import datasets_hash
from fair_forge_core.report import render_html
from fair_forge_core.report.values import FORMATS
from fair_forge_core.schemas import ConversationEfficiency, ConversationMetrics, Dataset, EvaluationConfig
from fair_forge_core.schemas.request import MAX_USAGE_COST_USD, MAX_USAGE_LATENCY_S, MAX_USAGE_TOKENS
from fair_forge_testing.builders import conversation, datasets, scored_conversation, turn
from fair_forge_testing.handler_client import call_handler
from tests.report_html import parse, resolve, tied_numbers

ROOT = Path(__file__).resolve().parents[2]


def call(name: str, error: bool = False, **parameters: Any) -> dict[str, Any]:
    return {"tool_name": name, "parameters": parameters, "is_error": error}


def dataset(*turns: dict[str, Any]) -> Dataset:
    return Dataset.model_validate(conversation("s", list(turns)))


def tools_turn(qa_id: str, *calls: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return turn(qa_id, "q", "a", "a", agentic={"tools_used": list(calls)}, **extra)


# --------------------------------------------------------------------------- per conversation


def test_calls_failures_repeats_and_steps_counted_by_hand() -> None:
    spent = conversation_efficiency(
        dataset(
            tools_turn("t1", call("search", q="a", n=1), call("search", n=1, q="a"), call("lookup", True, id=1)),
            tools_turn("t2", call("search", q="a", n=1), call("lookup", id=1.0), call("lookup", True, id=1)),
            turn("t3", "q", "a", "a"),
        )
    )
    # t1: search (first), search again with its keys reordered (repeat 1), lookup id=1 failed (first).
    # t2: search again (repeat 2, across turns), lookup id=1.0 (not a repeat: 1.0 is not 1 in JSON),
    #     lookup id=1 failed again (repeat 3). t3: no tool. 6 calls, 2 failed, 3 repeats, 3 turns.
    assert (spent.turns, spent.tool_calls, spent.failed_tool_calls, spent.repeated_tool_calls) == (3, 6, 2, 3)
    assert spent.steps == 6 + 3  # each call a step, and each turn's answer one more


def test_unparsed_arguments_tell_calls_apart() -> None:
    first = {"tool_name": "run", "unparsed_arguments": "ls -l"}
    spent = conversation_efficiency(
        dataset(tools_turn("t1", first, {"tool_name": "run", "unparsed_arguments": "ls -a"}, dict(first)))
    )
    assert (spent.tool_calls, spent.repeated_tool_calls) == (3, 1)


def test_usage_is_summed_only_when_every_turn_reports_it() -> None:
    spent = conversation_efficiency(
        dataset(
            turn(
                "t1",
                "q",
                "a",
                "a",
                agent_usage={"input_tokens": 100, "output_tokens": 10, "latency_s": 0.5, "cost_usd": 0.001},
            ),
            turn("t2", "q", "a", "a", agent_usage={"input_tokens": 200, "latency_s": 0.25, "cost_usd": 0.002}),
            turn("t3", "q", "a", "a", agent_usage={"input_tokens": 50, "latency_s": 0.1, "cost_usd": 0.0005}),
        )
    )
    assert spent.input_tokens == 350
    assert spent.output_tokens is None  # t2 and t3 do not report it: 10 would read as the total
    assert spent.latency_s == pytest.approx(0.85) and spent.cost_usd == pytest.approx(0.0035)
    silent = conversation_efficiency(
        dataset(turn("t1", "q", "a", "a", agent_usage={"cost_usd": 1.0}), turn("t2", "q", "a", "a"))
    )
    assert (silent.cost_usd, silent.input_tokens, silent.latency_s) == (None, None, None)


# --------------------------------------------------------------------------- across conversations


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, 20, 101])
def test_quantiles_agree_with_numpy(size: int) -> None:
    values = [random.Random(size).uniform(0, 50) for _ in range(size)]
    for q in (0.0, 0.5, 0.95, 1.0):
        assert quantile(values, q) == pytest.approx(float(np.percentile(values, q * 100)), rel=1e-12, abs=1e-12)


def test_quantiles_by_hand() -> None:
    # h = (n − 1)·q: the median of 1..4 is halfway between 2 and 3; p95 is at h = 2.85, between 3 and 4.
    assert (quantile([4, 1, 3, 2], 0.5), quantile([4, 1, 3, 2], 0.95)) == (2.5, pytest.approx(3.85))
    with pytest.raises(ValueError):
        quantile([], 0.5)


def with_cost(session: str, correct: bool | None, cost: float | None, steps: int = 2) -> ConversationMetrics:
    spent = ConversationEfficiency(
        turns=1,
        steps=steps,
        tool_calls=steps - 1,
        failed_tool_calls=0,
        repeated_tool_calls=0,
        input_tokens=None,
        output_tokens=None,
        latency_s=None,
        cost_usd=cost,
    )
    return scored_conversation(session, correct).model_copy(update={"efficiency": spent})


def test_cost_per_successful_task_counts_failed_attempts_and_leaves_out_unscored_ones() -> None:
    conversations = [
        with_cost("a", True, 0.01, steps=2),
        with_cost("b", False, 0.03, steps=5),
        with_cost("c", True, 0.02, steps=3),
        with_cost("d", None, 0.5, steps=9),
    ]
    summary = aggregate_efficiency(conversations)
    # scored: a, b, c; (0.01 + 0.03 + 0.02) / 2 successes
    assert summary.total_cost_usd == pytest.approx(0.06)
    assert summary.cost_per_successful_task == pytest.approx(0.03)
    assert (summary.scored_conversations, summary.successful_conversations, summary.cost_note) == (3, 2, None)
    # spreads: over every conversation, the unscored one too
    assert summary.steps.conversations == 4 and summary.steps.median == 4.0  # 2, 3, 5, 9
    assert summary.cost_usd.p95 == pytest.approx(float(np.percentile([0.01, 0.03, 0.02, 0.5], 95)))
    assert summary.input_tokens.conversations == 0 and summary.input_tokens.median is None


def test_cost_per_successful_task_is_null_with_the_reason() -> None:
    partial = aggregate_efficiency(
        [with_cost("a", True, 0.01), with_cost("b", False, None), with_cost("c", True, 0.02)]
    )
    assert (partial.cost_per_successful_task, partial.total_cost_usd) == (None, None)
    assert partial.cost_note is not None and partial.cost_note.startswith("1 of 3 scored conversation(s)")
    failed = aggregate_efficiency([with_cost("a", False, 0.01), with_cost("b", False, 0.02)])
    assert failed.cost_per_successful_task is None and failed.total_cost_usd == pytest.approx(0.03)
    assert failed.cost_note is not None and "no scored conversation is fully correct" in failed.cost_note
    unscored = aggregate_efficiency([with_cost("a", None, 0.01)])
    assert unscored.cost_per_successful_task is None and unscored.cost_note == "no conversation was scored"
    assert "cost per successful task: none (no conversation was scored)" in efficiency_line(unscored)


def test_the_example_counted_by_hand() -> None:
    body = json.loads((ROOT / "examples" / "efficiency.json").read_text())
    result = evaluate_sync(
        [Dataset.model_validate(d) for d in body["datasets"]], ReferenceJudge(), EvaluationConfig(**body["config"])
    )
    spent = {m.session_id: m.efficiency for m in result.per_conversation_metrics}
    status = spent["order-status"]
    assert status is not None
    # get_order failed, then called again with the same id: 2 calls, 1 failed, 1 repeat; 2 turns
    assert (status.tool_calls, status.failed_tool_calls, status.repeated_tool_calls, status.steps) == (2, 1, 1, 4)
    assert (status.input_tokens, status.output_tokens) == (1200 + 900, 80 + 60)
    assert status.cost_usd == pytest.approx(0.004 + 0.003)
    summary = result.aggregated_metrics.efficiency
    assert summary is not None
    assert [m.is_fully_correct for m in result.per_conversation_metrics] == [True, True, False]
    assert summary.cost_per_successful_task == pytest.approx((0.007 + 0.002 + 0.003) / 2)
    assert summary.steps.median == 2.0 and summary.steps.p95 == pytest.approx(2 + 0.9 * 2)  # 2, 2, 4: h = 1.9
    assert "cost per successful task $0.006 (2 of 3 scored conversations fully correct)" in efficiency_line(summary)
    page = render_html(result)
    assert "4 step(s): 2 turn(s), 2 tool call(s) (1 failed, 1 repeated), 2100 input tokens" in page
    assert_tied_numbers_are_the_json(page, "efficiency", result.model_dump(mode="json"), expected=9 * 3 + 4)
    # 4 significant digits, not 3 decimals: p95 of 0.002, 0.003, 0.007 is 0.003 + 0.9·(0.007 − 0.003)
    assert (
        '<td><span class="num" data-field="[&quot;aggregated_metrics&quot;, &quot;efficiency&quot;, &quot;cost_usd&quot;, &quot;p95&quot;]"'
        in page
    )
    assert 'data-format="significant">0.0066</span>' in page


def assert_tied_numbers_are_the_json(page: str, section_id: str, data: dict[str, Any], expected: int) -> None:
    """Every number of the section is the result's value at its data-field, written in its format."""
    start = page.index(f'id="{section_id}"')
    elements = parse(page[start : page.index("</section>", start)])
    tied = tied_numbers(elements)
    assert len(tied) == expected
    for element, path, shown in tied:
        assert shown == resolve(data, path), path
        assert element.text.strip() == FORMATS[element.attrs.get("data-format", "number")](shown), path


def test_measures_are_written_without_exponents_or_lost_digits() -> None:
    from fair_forge_core.efficiency import short_number

    written = [short_number(v) for v in (0.0066, 3.8, 0.8999999999999999, 1969.9999999999998, 25000.0, 123456.7)]
    assert written == ["0.0066", "3.8", "0.9", "1970", "25000", "123457"]


def test_without_the_option_results_and_hashes_read_as_before() -> None:
    plain = turn("q", "2+2?", "4", "4")
    costly = turn("q", "2+2?", "4", "4", agent_usage={"cost_usd": 0.5, "input_tokens": 3})
    result = evaluate_sync(datasets(conversation("a", [costly])), ReferenceJudge(), EvaluationConfig(k=1))
    data = result.model_dump(mode="json")
    assert "efficiency" not in data["per_conversation_metrics"][0] and "efficiency" not in data["aggregated_metrics"]
    # what the agent spent decides no verdict: it is not part of the datasets' fingerprint
    assert datasets_hash(datasets(conversation("a", [costly]))) == datasets_hash(datasets(conversation("a", [plain])))
    assert datasets_hash(datasets(conversation("a", [plain]))) != datasets_hash(
        datasets(conversation("a", [turn("q", "2+2?", "5", "4")]))
    )


# --------------------------------------------------------------------------- compare


def side(costs: dict[str, list[float]], assistant: str) -> list[ConversationMetrics]:
    """One scored conversation per cost, per task (all correct: the pass metrics do not matter here)."""
    return [
        with_cost(f"{assistant}-{task}-{i}", True, cost).model_copy(update={"task_id": task, "assistant_id": assistant})
        for task, attempts in costs.items()
        for i, cost in enumerate(attempts)
    ]


def by_hand_bootstrap(
    differences: list[float], resamples: int, seed: int, confidence: float
) -> tuple[float, float, float]:
    """The percentile interval and the centred bootstrap p-value of the mean difference, written
    out: B draws of T tasks with replacement from numpy's default_rng(seed)."""
    draws = np.random.default_rng(seed).integers(0, len(differences), size=(resamples, len(differences)))
    replicates = np.asarray(differences)[draws].mean(axis=1)
    observed = sum(differences) / len(differences)
    alpha = 1 - confidence
    low, high = np.quantile(replicates, [alpha / 2, 1 - alpha / 2])
    p = (1 + int(np.sum(np.abs(replicates - observed) >= abs(observed)))) / (resamples + 1)
    return float(low), float(high), p


def test_paired_cost_difference_over_many_tasks_is_the_bootstrap_written_out() -> None:
    rng = random.Random(7)
    tasks = [f"t{i:02d}" for i in range(12)]
    base = {t: [round(rng.uniform(0.01, 0.05), 4), round(rng.uniform(0.01, 0.05), 4)] for t in tasks}
    cand = {t: [round(rng.uniform(0.0, 0.04), 4)] for t in tasks}
    result = compare_efficiency(side(base, "b"), side(cand, "c"), confidence=0.9, resamples=2000, seed=3)
    assert result is not None
    cost = next(e for e in result if e.measure == "cost_usd")
    per_task = [cand[t][0] - sum(base[t]) / 2 for t in tasks]
    low, high, p = by_hand_bootstrap(per_task, 2000, 3, 0.9)
    assert cost.tasks == 12 and cost.p_value_method == "bootstrap"
    assert cost.difference == pytest.approx(sum(per_task) / 12)
    assert cost.baseline == pytest.approx(sum(sum(base[t]) / 2 for t in tasks) / 12)
    assert (cost.ci_low, cost.ci_high, cost.p_value) == (pytest.approx(low), pytest.approx(high), pytest.approx(p))
    assert cost.standard_error == pytest.approx(float(np.std(per_task, ddof=1)) / math.sqrt(12))
    tokens = next(e for e in result if e.measure == "input_tokens")
    assert tokens.tasks == 0 and tokens.difference is None and tokens.note is not None


def test_paired_steps_over_few_tasks_take_the_exact_sign_flip_test() -> None:
    base = side({"x": [0.0], "y": [0.0], "z": [0.0]}, "b")
    cand = side({"x": [0.0], "y": [0.0], "z": [0.0]}, "c")
    steps = {"x": (2, 5), "y": (3, 4), "z": (6, 4)}  # baseline, candidate: differences +3, +1, −2
    base = [
        m.model_copy(update={"efficiency": m.efficiency.model_copy(update={"steps": steps[str(m.task_id)][0]})})
        for m in base
    ]  # type: ignore[union-attr]
    cand = [
        m.model_copy(update={"efficiency": m.efficiency.model_copy(update={"steps": steps[str(m.task_id)][1]})})
        for m in cand
    ]  # type: ignore[union-attr]
    result = compare_efficiency(base, cand, confidence=0.95, resamples=2000, seed=0)
    assert result is not None
    row = next(e for e in result if e.measure == "steps")
    differences = [3, 1, -2]
    flips = [
        abs(sum(s * d for s, d in zip(signs, differences, strict=True)))
        for signs in itertools.product((1, -1), repeat=3)
    ]
    assert row.difference == pytest.approx(2 / 3) and row.p_value_method == "sign_flip_exact"
    assert (
        row.p_value == sum(1 for f in flips if f >= 2) / 8 == 6 / 8
    )  # |Σ| = 2 observed: 2, 6, 0, 4 and their negatives


def test_efficiency_is_compared_only_when_both_sides_carry_it_and_never_moves_the_verdict() -> None:
    plain = [scored_conversation("s", True, task_id="t")]
    assert compare_efficiency(plain, side({"t": [0.1]}, "c"), confidence=0.95, resamples=100, seed=0) is None
    conversations = [
        conversation(
            f"{who}-{t}",
            [
                turn(
                    "q",
                    f"What is {t} plus 1?",
                    f"It is {t + 1}." if who == "new" or t % 2 else "No.",
                    str(t + 1),
                    agent_usage={"cost_usd": 0.01 * (t + 1)},
                )
            ],
            assistant_id=who,
            task_id=f"t{t}",
        )
        for who in ("old", "new")
        for t in range(8)
    ]
    config = {"k": 1, "compare": {"baseline": "old", "candidate": "new"}}
    with_it = evaluate_sync(
        datasets(*conversations), ReferenceJudge(), EvaluationConfig.model_validate({**config, "efficiency": True})
    )
    without = evaluate_sync(datasets(*conversations), ReferenceJudge(), EvaluationConfig.model_validate(config))
    comparison, plain_comparison = with_it.aggregated_metrics.comparison, without.aggregated_metrics.comparison
    assert comparison is not None and plain_comparison is not None and comparison.efficiency is not None
    assert comparison.model_copy(update={"efficiency": None}) == plain_comparison
    assert "efficiency" not in plain_comparison.model_dump(mode="json")
    cost = next(e for e in comparison.efficiency if e.measure == "cost_usd")
    assert (cost.tasks, cost.difference) == (8, pytest.approx(0.0))  # the same cost per task on both sides
    by_assistant = with_it.aggregated_metrics.by_assistant
    assert by_assistant is not None and all(a.efficiency is not None for a in by_assistant.values())
    page = render_html(with_it)
    assert 'id="comparison-efficiency"' in page
    start = page.index('id="comparison-efficiency"')
    rows = parse(page[start : page.index("</table>", start)])
    assert len(tied_numbers(rows)) > 9
    for element, path, shown in tied_numbers(rows):
        assert shown == resolve(with_it.model_dump(mode="json"), path), path
        assert element.text.strip() == FORMATS[element.attrs.get("data-format", "number")](shown), path
    assert outcomes_from_conversations(with_it.per_conversation_metrics, "old") == outcomes_from_conversations(
        without.per_conversation_metrics, "old"
    )


# --------------------------------------------------------------------------- the service


def test_the_service_reports_efficiency_when_asked_and_refuses_a_negative_usage() -> None:
    body = {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"},
        "datasets": [
            conversation(
                "a",
                [
                    tools_turn(
                        "q1", call("get", id=1), call("get", id=1), agent_usage={"cost_usd": 0.25, "latency_s": 2}
                    )
                ],
            )
        ],
        "config": {"k": 1, "efficiency": True},
    }
    response = call_handler(body)
    assert response.status == 200, response.body
    spent = response.body["per_conversation_metrics"][0]["efficiency"]
    assert (spent["tool_calls"], spent["repeated_tool_calls"], spent["steps"], spent["cost_usd"]) == (2, 1, 3, 0.25)
    assert response.body["aggregated_metrics"]["efficiency"]["cost_usd"] == {
        "conversations": 1,
        "median": 0.25,
        "p95": 0.25,
    }
    negative = json.loads(json.dumps(body))
    negative["datasets"][0]["conversation"][0]["agent_usage"]["cost_usd"] = -0.01
    refused = call_handler(negative)
    assert refused.status == 400
    assert refused.body["details"][0]["field"] == "datasets[0].conversation[0].agent_usage.cost_usd"
    assert "greater than or equal to 0" in refused.body["details"][0]["message"]


# --------------------------------------------------------------------------- trace imports

AGENTS_FIXTURES = ROOT / "tests" / "unit" / "trace_fixtures" / "openai_agents"


def generations(data: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The generation spans of Agents SDK export payloads, by their input_tokens (distinct in the fixtures)."""
    return {
        item["span_data"]["usage"]["input_tokens"]: item["span_data"]
        for payload in data
        for item in payload["data"]
        if item.get("object") == "trace.span" and item["span_data"]["type"] == "generation"
    }


def test_openai_agents_usage_is_summed_per_turn_and_unknown_when_a_generation_lacks_it() -> None:
    from fair_forge_core.importers.openai_agents import traces_from_openai_agents

    data = json.loads((AGENTS_FIXTURES / "multi_turn.json").read_text())
    spans = generations(data)  # turn 1: 86 + 123 in, 24 + 8 out; turn 2: 140 + 181 in, 25 + 14 out
    spans[86]["usage"]["input_tokens"] = -5
    del spans[181]["usage"]["output_tokens"]
    (trace,) = traces_from_openai_agents(data)
    assert [turn.agent_usage for turn in trace.turns] == [{"output_tokens": 24 + 8}, {"input_tokens": 140 + 181}]
    assert any("usage.input_tokens: not an integer ≥ 0" in warning for warning in trace.warnings)


def test_imported_tokens_reach_the_efficiency_of_a_traces_request() -> None:
    data = json.loads((AGENTS_FIXTURES / "parallel_calls.json").read_text())
    body = {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"},
        "traces": {"format": "openai-agents", "items": [data]},
        "references": [{"task_id": "compare-cities", "ground_truth_assistant": "Lima is warmer than Oslo."}],
        "task_key": "metadata.task",
        "config": {"k": 1, "efficiency": True},
    }
    response = call_handler(body)
    assert response.status == 200, response.body
    spent = response.body["per_conversation_metrics"][0]["efficiency"]
    # its two generations, 96 + 171 in and 48 + 22 out: the SDK's own task span says 267 and 70
    assert (spent["input_tokens"], spent["output_tokens"], spent["cost_usd"]) == (267, 70, None)


def test_otel_inference_spans_give_their_turn_its_tokens_and_agent_totals_are_not_counted_again() -> None:
    from fair_forge_core.importers.otel_genai import traces_from_otel
    from tests.unit.test_importer_otel import A, U, chat, request, span, text

    usage = {"gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 5}
    q2, a2, thinking = text("user", "q2"), text("assistant", "a2"), text("assistant", "thinking")
    spans = [
        span(0, {"gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": 999}),  # a total: not read
        chat(1, [U], [A], **usage),
        chat(
            2,
            [U, A, q2],
            [thinking],
            **{"gen_ai.usage.input_tokens": 60, "gen_ai.usage.output_tokens": 7},
        ),
        chat(3, [U, A, q2, thinking], [a2], **{"gen_ai.usage.input_tokens": 70}),  # output tokens missing
    ]
    (trace,) = traces_from_otel(request(*spans))
    # turn 1: its one chat span; turn 2: 60 + 70 in, out unknown (span 3 lacks it)
    assert [t.agent_usage for t in trace.turns] == [{"input_tokens": 40, "output_tokens": 5}, {"input_tokens": 130}]
    # messages read from an agent span (no inference span has content): its usage is a total, not read
    (only,) = traces_from_otel(request(chat(1, [U], [A], **{**usage, "gen_ai.operation.name": "invoke_agent"})))
    assert (only.turns[0].answer, only.turns[0].agent_usage) == ("a", None)


def test_langsmith_turns_spend_what_their_root_run_totals() -> None:
    from fair_forge_core.importers.langsmith_runs import traces_from_langsmith

    runs = json.loads(
        (ROOT / "tests" / "unit" / "trace_fixtures" / "langsmith" / "traceable_tree_tool_error.json").read_text()
    )
    root = runs  # one run tree: the root holds its child_runs
    root.update(prompt_tokens=300, completion_tokens=45, total_cost="0.00125")  # the API writes a decimal as text
    (trace,) = traces_from_langsmith(runs)
    # the root ran from 09:15:00.000 to 09:15:02.300
    assert trace.turns[0].agent_usage == {
        "input_tokens": 300,
        "output_tokens": 45,
        "cost_usd": 0.00125,
        "latency_s": 2.3,
    }
    root.update(prompt_tokens=-1, total_cost=None)
    (trace,) = traces_from_langsmith(runs)
    assert trace.turns[0].agent_usage == {"output_tokens": 45, "latency_s": 2.3}
    assert any("prompt_tokens: not an integer ≥ 0" in warning for warning in trace.warnings)


# --------------------------------------------------------------------------- bounds (issue #32, item 8)

_BOUNDED_USAGE = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": st.integers(0, MAX_USAGE_TOKENS),
        "output_tokens": st.integers(0, MAX_USAGE_TOKENS),
        "latency_s": st.floats(0, MAX_USAGE_LATENCY_S),
        "cost_usd": st.floats(0, MAX_USAGE_COST_USD),
    },
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(_BOUNDED_USAGE, min_size=1, max_size=6), min_size=1, max_size=6),
    st.lists(st.sampled_from([True, False, None]), min_size=6, max_size=6),
)
def test_usage_within_the_bounds_always_aggregates_to_finite_numbers(
    usages: list[list[dict[str, Any]]], outcomes: list[bool | None]
) -> None:
    """Whatever a request may carry (the schema's bounds), every sum, quantile and cost per
    success is a finite number that JSON can write: no OverflowError, no 4,301-digit int."""
    metrics = []
    for n, turns in enumerate(usages):
        spent = conversation_efficiency(
            dataset(*(turn(f"q{t}", "q", "a", "a", agent_usage=usage) for t, usage in enumerate(turns)))
        )
        for name in ("input_tokens", "output_tokens"):
            value = getattr(spent, name)
            assert value is None or value == sum(usage[name] for usage in turns)  # ints: exact
        metrics.append(scored_conversation(f"s{n}", outcomes[n]).model_copy(update={"efficiency": spent}))
    summary = aggregate_efficiency(metrics).model_dump(mode="json")
    json.dumps(summary, allow_nan=False)
    numbers = [v for part in summary.values() if isinstance(part, dict) for v in part.values()]
    assert all(math.isfinite(v) for v in numbers if isinstance(v, float))


def test_every_measure_at_its_bound_on_the_largest_request_is_exact() -> None:
    """10,000 turns (the request's turn limit) at every bound: 10¹⁶ tokens, 10¹⁰ s, $10¹⁰."""
    at_bound = {"input_tokens": 10**12, "output_tokens": 10**12, "latency_s": 1e6, "cost_usd": 1e6}
    many = Dataset.model_validate(
        conversation("s", [turn(f"q{n}", "q", "a", "a", agent_usage=at_bound) for n in range(10_000)])
    )
    spent = conversation_efficiency(many)
    assert (spent.input_tokens, spent.output_tokens, spent.latency_s, spent.cost_usd) == (10**16, 10**16, 1e10, 1e10)
    summary = aggregate_efficiency([scored_conversation("s", True).model_copy(update={"efficiency": spent})])
    assert summary.input_tokens.median == 1e16 and summary.cost_per_successful_task == 1e10
