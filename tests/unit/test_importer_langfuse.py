"""Langfuse traces (`GET /api/public/traces/{traceId}`: TraceWithFullDetails with its observations) → conversations.

The fixtures in trace_fixtures/langfuse are written from Langfuse's public API reference (the
OpenAPI models `TraceWithFullDetails` and `ObservationsView`: `id`, `timestamp`, `name`,
`input`, `output`, `sessionId`, `userId`, `metadata`, `tags`, `latency`, `totalCost`,
`observations[].type/startTime/parentObservationId/input/output/level/statusMessage/usageDetails/usage`)
and the shapes its OpenAI integration (generation input: the messages; output: the
assistant message) and LangChain callback (LangChain messages) record; the
`*.expected.json` files are worked out by hand from the importer's documented rules.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import TraceError, datasets_from_traces
from fair_forge_core.importers.langfuse import traces_from_langfuse
from fair_forge_core.schemas import AgentUsage
from fair_forge_core.trace_formats import looks_like_traces

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "unit" / "trace_fixtures" / "langfuse"
CASES = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_imports_to_its_hand_written_expectation(case: str) -> None:
    data = json.loads((FIXTURES / f"{case}.json").read_text())
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text())
    assert [dataclasses.asdict(trace) for trace in traces_from_langfuse(data)] == expected


def test_the_fixtures_cover_sessions_tools_errors_and_nesting() -> None:
    assert set(CASES) >= {"openai_session", "agent_tool_error"}


def observation(number: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"id": f"o{number}", "type": kind, "startTime": f"2025-01-01T00:00:{number:02d}Z", **fields}


def trace(*observations: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"id": "t", "timestamp": "2025-01-01T00:00:00Z", "input": "q", "output": "a", **fields} | {
        "observations": list(observations)
    }


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    tool_calls = [
        {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a in items
    ]
    return {"role": "assistant", "content": None, "tool_calls": tool_calls}


def test_a_page_of_the_trace_list_reads_its_data_and_names_it() -> None:
    page = {"data": [trace(), trace(id="u", sessionId="")], "meta": {"page": 1}}
    assert [t.trace_id for t in traces_from_langfuse(page)] == ["t", "u"]
    with pytest.raises(TraceError) as raised:
        traces_from_langfuse({"data": [trace(), {"id": "u", "observations": ["o1"]}]})
    assert raised.value.field == "data[1].observations[0]"
    assert "GET /api/public/traces/{traceId}" in raised.value.problem


def test_tool_messages_in_a_generation_input_answer_the_calls_no_tool_observation_answered() -> None:
    ask = observation(1, "GENERATION", output=calls(("c1", "f", {"x": 1}), ("c2", "g", {})))
    tool = observation(2, "TOOL", name="f", input={"x": 1}, output="from the tool")
    seen = [
        {"role": "tool", "tool_call_id": "c1", "content": "ignored"},
        {"role": "tool", "tool_call_id": "c2", "content": "7"},
    ]
    answer = observation(3, "GENERATION", input=seen, output={"role": "assistant", "content": "a"})
    (imported,) = traces_from_langfuse(trace(ask, tool, answer))
    assert imported.turns[0].tools_used == [
        {"tool_name": "f", "parameters": {"x": 1}, "step": 1, "result": "from the tool"},
        {"tool_name": "g", "parameters": {}, "step": 1, "result": 7},
    ]
    assert imported.warnings == []


def test_a_tool_observation_with_its_call_id_in_metadata_wins_over_the_order() -> None:
    ask = observation(1, "GENERATION", output=calls(("c1", "f", {"x": 1}), ("c2", "f", {"x": 1})))
    tool = observation(2, "TOOL", name="f", input={"x": 1}, output="second", metadata={"tool_call_id": "c2"})
    (imported,) = traces_from_langfuse(trace(ask, tool))
    assert [c.get("result") for c in imported.turns[0].tools_used] == [None, "second"]


def test_a_tool_observation_no_call_asked_for_is_a_step_of_its_own_and_said() -> None:
    (imported,) = traces_from_langfuse(trace(observation(1, "TOOL", name="search", input={"q": "x"}, output=[1])))
    assert imported.turns[0].tools_used == [{"tool_name": "search", "parameters": {"q": "x"}, "step": 1, "result": [1]}]
    assert imported.warnings == [
        "traces[0].observations[0]: a TOOL observation that answers no model tool call; read as a call of its own"
    ]


def test_the_query_falls_back_to_the_first_generation_input_and_a_failed_generation_is_said() -> None:
    failed = observation(
        1, "GENERATION", input=[{"role": "user", "content": "asked"}], level="ERROR", statusMessage="429\nrate limited"
    )
    (imported,) = traces_from_langfuse(trace(failed, input=None, output=None))
    assert (imported.turns[0].query, imported.turns[0].answer) == ("asked", "")
    assert imported.warnings[:2] == [
        "traces[0].input: no query; the last user message of traces[0].observations[0] taken",
        "traces[0].observations[0].output: a generation without output (it failed: 429)",
    ]


def test_unreadable_times_keep_the_input_order_and_are_said() -> None:
    first = trace(id="t1", sessionId="s", input="one", timestamp="yesterday")
    second = trace(id="t2", sessionId="s", input="two", timestamp="2020-01-01T00:00:00Z")
    (imported,) = traces_from_langfuse([first, second])
    assert [turn.query for turn in imported.turns] == ["one", "two"]
    assert imported.warnings == [
        "traces[0].timestamp: not an ISO 8601 time; the traces of the session 's' are read in input order"
    ]


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        ([{"observations": []}], "traces[0].id", "non-empty string"),
        (["t"], "traces[0]", "a Langfuse trace is an object"),
        ([], "traces", "holds no trace"),
        (trace(input={"a": 1, "b": 2}), "traces[0].input", "holds no query"),
        (trace(observations=None) | {"observations": {"o": 1}}, "traces[0].observations", "a list of observations"),
        (trace(observation(1, "GENERATION") | {"type": 3}), "traces[0].observations[0].type", "must be a string"),
        (trace(observation(1, "GENERATION", output=[1])), "traces[0].observations[0].output", "the model's message"),
        (
            trace(observation(1, "GENERATION", output={"role": "user", "content": "x"})),
            "traces[0].observations[0].output",
            "not an assistant message",
        ),
    ],
)
def test_an_unreadable_trace_names_the_item_and_field(data: Any, field: str, problem: str) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_langfuse(data)
    assert raised.value.field == field
    assert problem in raised.value.problem


def test_the_example_joins_its_references_with_no_problem() -> None:
    traces = json.loads((ROOT / "examples" / "traces" / "langfuse_traces.json").read_text())
    lines = (ROOT / "examples" / "traces" / "langfuse_traces.references.jsonl").read_text().splitlines()
    datasets, warnings, count = datasets_from_traces(
        "langfuse", traces, [json.loads(line) for line in lines], task_key="metadata.task"
    )
    assert warnings == []
    assert (count, sorted(d["task_id"] for d in datasets)) == (2, ["book-slot", "weather-oslo"])


def test_a_langfuse_trace_given_as_a_request_is_seen_as_a_traces_file() -> None:
    assert looks_like_traces(trace())
    assert not looks_like_traces({"datasets": [], "observations": []})


def test_the_arguments_observe_records_give_the_query_when_one_of_them_is_text() -> None:
    (imported,) = traces_from_langfuse(trace(input={"args": ["Weather in Rome?"], "kwargs": {"retries": 2}}))
    assert imported.turns[0].query == "Weather in Rome?"
    with pytest.raises(TraceError) as raised:
        traces_from_langfuse(trace(input={"args": ["a"], "kwargs": {"b": "c"}}))
    assert raised.value.field == "traces[0].input"


def test_usage_over_the_bound_of_agent_usage_is_left_out_and_said() -> None:
    """`totalCost` 1e308 and two generations of 6·10¹¹ tokens each (a total of 1.2·10¹², over the
    bound of 10¹²): each measure unknown for the turn, said, the rest kept; the request it makes
    is one the schema takes (it was a 500 `OverflowError` once evaluated)."""
    generations = [
        observation(n, "GENERATION", output="a", usageDetails={"input": 6 * 10**11, "output": 5}) for n in (1, 2)
    ]
    (imported,) = traces_from_langfuse(trace(*generations, totalCost=1e308, latency=2.5))
    assert imported.turns[0].agent_usage == {"output_tokens": 10, "latency_s": 2.5}
    assert imported.warnings == [
        "traces[0]: cost_usd takes the turn's total over 1,000,000, the most agent_usage.cost_usd may be;"
        " the turn's cost_usd is unknown",
        "traces[0].observations[1]: input_tokens takes the turn's total over 1,000,000,000,000, the most"
        " agent_usage.input_tokens may be; the turn's input_tokens is unknown",
    ]
    assert AgentUsage.model_validate(imported.turns[0].agent_usage).output_tokens == 10


class CountedObservation(dict[str, Any]):
    """An observation that counts how often its `parentObservationId` is read (a parent look-up)."""

    reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        if key == "parentObservationId":
            CountedObservation.reads += 1
        return super().get(key, default)


def test_a_long_parent_chain_is_walked_once_not_once_per_observation() -> None:
    """Issue #32, item 3: 2,000 observations in one `parentObservationId` chain under a TOOL,
    a generation at its bottom. Each observation's parent is read a bounded number of times
    (a walk to the root per observation read it about 2 million times: quadratic)."""
    size = 2_000
    chain = [CountedObservation(id=f"o{i}", type="SPAN", parentObservationId=f"o{i - 1}") for i in range(size)]
    chain[0] = CountedObservation(id="o0", type="TOOL", name="search", output="x")
    chain.append(CountedObservation(id="g", type="GENERATION", parentObservationId=f"o{size - 1}", output="a"))
    CountedObservation.reads = 0
    (imported,) = traces_from_langfuse(trace(*chain))
    assert CountedObservation.reads <= 3 * (size + 1)
    assert (
        f"traces[0].observations[{size}]: a GENERATION inside the TOOL observation 'o0'; the tool's own work, not read"
        in imported.warnings
    )


def test_a_chain_as_long_as_the_body_allows_is_read_and_a_cycle_still_ends_the_walk() -> None:
    size = 46_000  # about what a 3 MB body holds (benchmarks/bench_hostile.py, "langfuse chain")
    chain = [observation(0, "TOOL", name="search")] + [
        {"id": f"o{i}", "type": "SPAN", "parentObservationId": f"o{i - 1}"} for i in range(1, size)
    ]
    chain.append({"id": "g", "type": "GENERATION", "parentObservationId": f"o{size - 1}", "output": "a"})
    chain += [  # a cycle of two spans, a generation under it: not inside a tool
        {"id": "c1", "type": "SPAN", "parentObservationId": "c2"},
        {"id": "c2", "type": "SPAN", "parentObservationId": "c1"},
        {"id": "h", "type": "GENERATION", "parentObservationId": "c1", "output": "b"},
    ]
    (imported,) = traces_from_langfuse(trace(*chain, output=None))
    inside = [w for w in imported.warnings if "inside the TOOL observation 'o0'" in w]
    assert inside == [
        f"traces[0].observations[{size}]: a GENERATION inside the TOOL observation 'o0'; the tool's own work, not read"
    ]
    assert imported.turns[0].answer == "b"  # the generation under the cycle is read
