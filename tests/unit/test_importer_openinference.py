"""OpenInference spans (Arize Phoenix; github.com/Arize-ai/openinference spec/semantic_conventions.md) → conversations.

The fixtures in trace_fixtures/openinference are OTLP JSON written from that spec: attribute
names (`openinference.span.kind`, `llm.input_messages.<i>.message.role`,
`message.tool_calls.<j>.tool_call.function.arguments`, `tool.id`, `input.value`, `session.id`,
`agent.name`, `metadata`, `llm.token_count.prompt`) as the spec's tables give them; the
`*.expected.json` files are worked out by hand from the importer's documented rules.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import TraceError, datasets_from_traces
from fair_forge_core.importers.openinference import _inside_tool, traces_from_openinference
from fair_forge_core.importers.otel_spans import read_spans

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "unit" / "trace_fixtures" / "openinference"
CASES = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))
SPANS = "requests[0].resourceSpans[0].scopeSpans[0].spans"
TRACE = "cccccccccccccccccccccccccccccccc"


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_imports_to_its_hand_written_expectation(case: str) -> None:
    data = json.loads((FIXTURES / f"{case}.json").read_text())
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text())
    assert [dataclasses.asdict(trace) for trace in traces_from_openinference(data)] == expected


def test_the_fixtures_cover_tools_errors_sessions_and_both_attribute_forms() -> None:
    assert set(CASES) >= {"agent_tool_calls", "session_nested_attributes"}


def value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}


def span(number: int, attrs: dict[str, Any], parent: int | None = None) -> dict[str, Any]:
    raw = {
        "traceId": TRACE,
        "spanId": f"{number:016x}",
        "startTimeUnixNano": str(1000 * number),
        "endTimeUnixNano": str(1000 * number + 500),
        "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()],
    }
    return raw | ({"parentSpanId": f"{parent:016x}"} if parent else {})


def request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": list(spans)}]}]}


def llm(number: int, **attrs: Any) -> dict[str, Any]:
    return span(number, {"openinference.span.kind": "LLM", **attrs}, parent=1)


def messages(prefix: str, *items: tuple[str, str]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for n, (role, content) in enumerate(items):
        flat |= {f"{prefix}.{n}.message.role": role, f"{prefix}.{n}.message.content": content}
    return flat


AGENT = span(1, {"openinference.span.kind": "AGENT", "input.value": "q", "output.value": "a"})
ASKED = messages("llm.input_messages", ("user", "q"))


def test_messages_as_an_array_of_kvlists_read_as_the_flattened_form() -> None:
    nested = {"llm.input_messages": [{"message.role": "user", "message.content": "q"}]}
    answered = {"llm.output_messages": [{"message.role": "assistant", "message.content": "a"}]}
    (trace,) = traces_from_openinference(request(AGENT, llm(2, **nested, **answered)))
    assert [(t.query, t.answer) for t in trace.turns] == [("q", "a")]


def test_the_root_agent_span_is_read_only_when_no_llm_span_carries_messages() -> None:
    (trace,) = traces_from_openinference(request(AGENT, llm(2, **{"llm.model_name": "m"})))
    assert [(t.query, t.answer) for t in trace.turns] == [("q", "a")]
    json_root = span(
        1,
        {
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"question": "q2"}),
            "input.mime_type": "application/json",
            "output.value": json.dumps("a2"),
            "output.mime_type": "application/json",
        },
    )
    (trace,) = traces_from_openinference(request(json_root))
    assert [(t.query, t.answer) for t in trace.turns] == [("q2", "a2")]


def test_a_legacy_function_call_and_non_text_contents_are_read_and_said() -> None:
    output = {
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.function_call_name": "add",
        "llm.output_messages.0.message.function_call_arguments_json": '{"x": 2}',
        "llm.output_messages.0.message.contents.0.message_content.type": "image",
        "llm.output_messages.0.message.contents.1.message_content.type": "text",
        "llm.output_messages.0.message.contents.1.message_content.text": "adding",
    }
    (trace,) = traces_from_openinference(request(AGENT, llm(2, **ASKED, **output)))
    assert trace.turns[0].tools_used == [{"tool_name": "add", "parameters": {"x": 2}, "step": 1}]
    assert trace.turns[0].answer == "adding"  # its text; the root's output ("a") is not read: LLM spans carry messages
    assert trace.turns[0].query == "q"
    assert f"{SPANS}[0]: 1 message parts of type 'image' skipped" in trace.warnings


def test_a_tool_span_without_tool_id_answers_the_call_of_its_name_and_arguments() -> None:
    output = {
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "f",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"x": 1}',
        "llm.output_messages.0.message.tool_calls.1.tool_call.function.name": "f",
        "llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments": '{"x": 2}',
    }
    tool = {"openinference.span.kind": "TOOL", "tool.name": "f", "input.value": '{"x": 2}', "output.value": "two"}
    (trace,) = traces_from_openinference(request(AGENT, llm(2, **ASKED, **output), span(3, tool, parent=1)))
    assert trace.turns[0].tools_used == [
        {"tool_name": "f", "parameters": {"x": 1}, "step": 1},
        {"tool_name": "f", "parameters": {"x": 2}, "step": 1, "result": "two"},
    ]


@pytest.mark.parametrize(
    ("attrs", "field", "problem"),
    [
        (
            {"llm.input_messages.first.message.role": "user"},
            f"{SPANS}[1].attributes.llm.input_messages.first.message.role",
            "index ≥ 0",
        ),
        (
            messages("llm.input_messages", ("user", "q"), ("critic", "no")),
            f"{SPANS}[1].attributes.llm.input_messages.1.message.role",
            "unknown role 'critic'",
        ),
        (
            {
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c",
            },
            f"{SPANS}[1].attributes.llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
            "needs the tool's name",
        ),
        (
            {
                **ASKED,
                "llm.input_messages.1.message.role": "tool",
                "llm.input_messages.1.message.tool_call_id": "nobody",
                "llm.input_messages.1.message.content": "x",
            },
            f"{SPANS}[1].attributes.llm.input_messages.1",
            "no tool call has the id 'nobody'",
        ),
    ],
)
def test_an_unreadable_message_names_its_openinference_attribute(
    attrs: dict[str, Any], field: str, problem: str
) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_openinference(request(AGENT, llm(2, **attrs)))
    assert raised.value.field == field
    assert problem in raised.value.problem


def test_metadata_that_is_no_json_object_names_it() -> None:
    root = span(1, {"openinference.span.kind": "AGENT", "input.value": "q", "metadata": "[1]"})
    with pytest.raises(TraceError) as raised:
        traces_from_openinference(request(root))
    assert raised.value.field == f"{SPANS}[0].attributes.metadata"


def test_hidden_content_says_which_openinference_settings_hide_it() -> None:
    root = span(1, {"openinference.span.kind": "AGENT"})
    with pytest.raises(TraceError) as raised:
        traces_from_openinference(request(root, llm(2, **{"llm.model_name": "m"})))
    assert raised.value.field == f"{SPANS}[0]"
    assert "OPENINFERENCE_HIDE_INPUTS" in raised.value.problem


def test_spans_of_no_openinference_kind_read_is_an_error_on_the_root() -> None:
    retriever = span(1, {"openinference.span.kind": "RETRIEVER", "input.value": "q"})
    with pytest.raises(TraceError) as raised:
        traces_from_openinference(request(retriever))
    assert raised.value.field == "requests"
    assert "LLM, TOOL, AGENT or CHAIN" in raised.value.problem


def test_the_example_joins_its_references_with_no_problem() -> None:
    traces = json.loads((ROOT / "examples" / "traces" / "openinference_spans.json").read_text())
    lines = (ROOT / "examples" / "traces" / "openinference_spans.references.jsonl").read_text().splitlines()
    references = [json.loads(line) for line in lines]
    datasets, warnings, count = datasets_from_traces("openinference", traces, references, task_key="metadata.task")
    assert warnings == []
    assert len(datasets) == count == len({r["task_id"] for r in references})


def test_llm_and_tool_spans_under_a_tool_span_are_the_tools_own_work_and_are_said() -> None:
    output = {
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "research",
    }
    tool = span(
        3, {"openinference.span.kind": "TOOL", "tool.name": "research", "tool.id": "c1", "output.value": "done"}, 1
    )
    chain = span(4, {"openinference.span.kind": "CHAIN"}, parent=3)
    sub_llm = span(5, {"openinference.span.kind": "LLM", **messages("llm.input_messages", ("user", "sub-question"))}, 4)
    sub_tool = span(6, {"openinference.span.kind": "TOOL", "tool.name": "search", "output.value": "x"}, 5)
    (trace,) = traces_from_openinference(request(AGENT, llm(2, **ASKED, **output), tool, chain, sub_llm, sub_tool))
    assert [turn.query for turn in trace.turns] == ["q"]
    assert trace.turns[0].tools_used == [{"tool_name": "research", "parameters": {}, "step": 1, "result": "done"}]
    assert f'{SPANS}[0]: 1 spans of operation "LLM inside a TOOL span: the tool\'s own work" skipped' in trace.warnings
    assert f'{SPANS}[0]: 1 spans of operation "TOOL inside a TOOL span: the tool\'s own work" skipped' in trace.warnings


def test_a_parent_cycle_ends_the_walk_up_and_reads_the_spans() -> None:
    answered = messages("llm.output_messages", ("assistant", "a"))
    looped = request(
        span(2, {"openinference.span.kind": "LLM", **ASKED, **answered}, parent=3),
        span(3, {"openinference.span.kind": "CHAIN"}, parent=2),
    )
    (trace,) = traces_from_openinference(looped)
    assert [(t.query, t.answer) for t in trace.turns] == [("q", "a")]


def test_a_token_count_over_the_bound_of_agent_usage_is_left_out_and_said() -> None:
    """`llm.token_count.prompt` of 10⁴⁰⁰ (a 500 `OverflowError` once evaluated): unknown for the
    turn and said; the completion count is kept."""
    counted = {"llm.token_count.prompt": 10**400, "llm.token_count.completion": 7}
    answered = messages("llm.output_messages", ("assistant", "a"))
    (trace,) = traces_from_openinference(request(AGENT, llm(2, **ASKED, **answered, **counted)))
    assert trace.turns[0].agent_usage == {"output_tokens": 7}
    assert (
        f"{SPANS}[1]: input_tokens takes the turn's total over 1,000,000,000,000, the most agent_usage.input_tokens"
        " may be; the turn's input_tokens is unknown"
    ) in trace.warnings


def test_a_long_chain_under_a_tool_span_is_read_bottom_first_in_one_pass() -> None:
    """20,000 CHAIN spans in one chain under a TOOL span, given bottom first (each walk up then
    went through the whole chain, checked against a list of what it had passed: quadratic),
    an LLM span at the bottom: it is the tool's own work, and every span of the chain is inside."""
    size = 20_000
    tool = span(2, {"openinference.span.kind": "TOOL", "tool.name": "research", "output.value": "done"}, 1)
    chain = [span(3 + i, {"openinference.span.kind": "CHAIN"}, parent=2 + i) for i in range(size)]
    bottom = span(3 + size, {"openinference.span.kind": "LLM", **ASKED}, parent=2 + size)
    spans = read_spans(request(AGENT, *reversed([tool, *chain, bottom])))[0]
    kinds = [span.attrs["openinference.span.kind"] for span in spans]
    inside = _inside_tool(spans, kinds)
    assert inside == set(range(1, size + 2))  # after the agent: the LLM span, then the chain; not the tool (last)
