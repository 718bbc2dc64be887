"""OpenAI Agents SDK trace exports → conversations: golden fixtures, the rules one by one, every error's field."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import ImportedTurn, TraceError, join_references
from fair_forge_core.importers.openai_agents import traces_from_openai_agents
from fair_forge_core.schemas import Dataset

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "trace_fixtures" / "openai_agents"
CASES = sorted(path.name.removesuffix(".expected.json") for path in FIXTURES.glob("*.expected.json"))
EXAMPLE = ROOT / "examples" / "traces" / "openai_agents.json"
EXAMPLE_REFERENCES = ROOT / "examples" / "traces" / "openai_agents.references.jsonl"
TRACE = "trace_00000000000000000000000000000001"


@pytest.mark.parametrize("case", CASES)
def test_every_fixture_imports_as_its_expected_file_says(case: str) -> None:
    data = json.loads((FIXTURES / f"{case}.json").read_text())
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text())
    if isinstance(expected, dict):  # a trace that cannot be read: the error and its field
        with pytest.raises(TraceError) as raised:
            traces_from_openai_agents(data)
        assert raised.value.field == expected["error"]["field"]
        assert expected["error"]["problem"] in str(raised.value)
    else:
        assert [dataclasses.asdict(trace) for trace in traces_from_openai_agents(data)] == expected


def test_the_fixtures_cover_what_the_issue_asks() -> None:
    assert set(CASES) >= {
        "parallel_calls",
        "tool_error",
        "invalid_arguments",
        "multi_turn",
        "handoff",
        "responses_api",
        "sensitive_data_off",
    }


# --------------------------------------------------------------------------- builders of small exports

_clock = iter(range(10**9))


def span(kind: str, span_id: str, parent: str | None = None, error: Any = None, **data: Any) -> dict[str, Any]:
    """A span as `Span.export()` gives it, started one millisecond after the previous one built."""
    tick = next(_clock)
    return {
        "object": "trace.span",
        "id": span_id,
        "trace_id": data.pop("trace_id", TRACE),
        "parent_id": parent,
        "started_at": f"2025-06-01T{tick // 3_600_000 % 24:02}:{tick // 60_000 % 60:02}:{tick // 1000 % 60:02}"
        f".{tick % 1000:03}000+00:00",
        "ended_at": None,
        "span_data": {"type": kind, **data},
        "error": error,
    }


def trace(trace_id: str = TRACE, group_id: str | None = None, metadata: Any = None) -> dict[str, Any]:
    return {"object": "trace", "id": trace_id, "workflow_name": "w", "group_id": group_id, "metadata": metadata}


def call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def generation(span_id: str, parent: str | None, users: list[str], content: str | None = None, **more: Any) -> Any:
    """A generation whose input holds these user messages and whose output is one assistant message."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": more.pop("refusal", None)}
    message["tool_calls"] = more.pop("tool_calls", None)
    messages = [{"role": "user", "content": text} for text in users]
    return span("generation", span_id, parent, input=messages, output=[message], **more)


def agent(span_id: str, name: str = "Helper", parent: str | None = None, **more: Any) -> dict[str, Any]:
    return span("agent", span_id, parent, name=name, handoffs=[], tools=[], output_type="str", **more)


def only(data: Any) -> Any:
    (imported,) = traces_from_openai_agents(data)
    return imported


# --------------------------------------------------------------------------- the rules


def test_a_function_span_that_answers_no_call_is_its_own_step_with_unparsed_input_and_said() -> None:
    imported = only(
        [
            trace(),
            agent("a"),
            generation("g1", "a", ["q"], "thinking"),
            span("function", "f", "a", name="lookup", input="city=Paris", output="18"),
            generation("g2", "a", ["q"], "18 °C"),
        ]
    )
    assert imported.turns[0].tools_used == [
        {"tool_name": "lookup", "parameters": {}, "step": 1, "unparsed_arguments": "city=Paris", "result": 18}
    ]
    assert imported.warnings == [
        "items[3]: function span 'lookup' answers no call of its agent's latest generation; kept",
        "items[3].span_data.input: arguments are not a JSON object; kept as text in unparsed_arguments (no parameters)",
    ]


def test_function_spans_answer_calls_by_name_in_order_under_their_own_agent() -> None:
    calls = [call("c1", "search", '{"q": "a"}'), call("c2", "fetch", '{"u": 1}'), call("c3", "search", '{"q": "b"}')]
    imported = only(
        [
            trace(),
            agent("a"),
            generation("g1", "a", ["q"], tool_calls=calls),
            span("function", "f1", "a", name="fetch", input='{"u": 1}', output="page"),
            span("function", "f2", "a", name="search", input='{"q": "a"}', output="A"),
            span("function", "f3", "a", name="search", input='{"q": "b"}', output="B"),
            generation("g2", "a", ["q"], "done"),
        ]
    )
    assert [(c["tool_name"], c["step"], c["result"]) for c in imported.turns[0].tools_used] == [
        ("search", 1, "A"),
        ("fetch", 1, "page"),
        ("search", 1, "B"),
    ]


def test_a_function_span_with_an_error_and_no_output_gets_the_error_as_its_result() -> None:
    error = {"message": "Error running tool", "data": {"tool_name": "f", "error": "boom"}}
    imported = only(
        [
            trace(),
            agent("a"),
            generation("g", "a", ["q"], tool_calls=[call("c", "f")]),
            span("function", "s", "a", error=error, name="f", input="{}", output=None),
        ]
    )
    assert imported.turns[0].tools_used == [
        {"tool_name": "f", "parameters": {}, "step": 1, "result": "Error running tool: boom", "is_error": True}
    ]


def test_new_turns_at_a_new_user_message_or_more_user_messages_and_steps_restart() -> None:
    imported = only(
        [
            trace(),
            agent("a"),
            generation("g1", "a", ["Tell me a joke"], "A joke.", tool_calls=[call("c", "pick")]),
            generation("g2", "a", ["Rate this joke: A joke."], "7/10", tool_calls=[call("d", "rate")]),
            generation("g3", "a", ["Rate this joke: A joke.", "again"], "8/10"),
            generation("g4", "a", ["Rate this joke: A joke.", "again", "again"], "9/10"),
        ]
    )
    assert [(t.query, t.answer, [c["step"] for c in t.tools_used]) for t in imported.turns] == [
        ("Tell me a joke", "A joke.", [1]),
        ("Rate this joke: A joke.", "7/10", [1]),
        ("again", "8/10", []),
        ("again", "9/10", []),  # the same words, but one more user message: a new run
    ]


SECOND = "trace_00000000000000000000000000000002"


def test_each_trace_of_a_group_starts_a_turn_even_with_the_same_words_and_no_history() -> None:
    imported = only(
        [
            trace(TRACE, "thread-1"),
            trace(SECOND, "thread-1"),
            agent("a"),
            generation("g1", "a", ["yes"], "Booked.", tool_calls=[call("c", "book")]),
            span("function", "f", "a", name="book", input="{}", output="ok"),
            generation("g2", "a", ["yes"], "Booked the flight."),
            agent("b", trace_id=SECOND),
            generation("g3", "b", ["yes"], "Paid.", trace_id=SECOND),
        ]
    )
    assert imported.turns == [
        ImportedTurn("yes", "Booked the flight.", [{"tool_name": "book", "parameters": {}, "step": 1, "result": "ok"}]),
        ImportedTurn("yes", "Paid."),
    ]
    assert imported.warnings == []


def test_a_trace_that_resends_an_answered_user_message_continues_its_turn() -> None:
    resumed = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Book it"},
        {"role": "assistant", "content": None, "tool_calls": [call("c", "book")]},
        {"role": "tool", "tool_call_id": "c", "content": "approved"},
    ]
    imported = only(
        [
            trace(TRACE, "thread-1"),
            trace(SECOND, "thread-1"),
            agent("a"),
            generation("g1", "a", ["Book it"], tool_calls=[call("c", "book")]),
            agent("b", trace_id=SECOND),
            span(
                "generation",
                "g2",
                "b",
                input=resumed,
                output=[{"role": "assistant", "content": "Booked."}],
                trace_id=SECOND,
            ),
        ]
    )
    assert imported.turns == [ImportedTurn("Book it", "Booked.", [{"tool_name": "book", "parameters": {}, "step": 1}])]


def test_spans_inside_a_function_span_are_the_tools_work_and_said() -> None:
    imported = only(
        [
            trace(),
            agent("a", "Orchestrator"),
            generation("g1", "a", ["Translate 'hi' to Spanish"], tool_calls=[call("c", "translator")]),
            span("function", "f", "a", name="translator", input='{"text": "hi"}', output="hola"),
            agent("inner", "Translator", parent="f"),
            generation("g-inner", "inner", ["hi"], "hola"),
            generation("g2", "a", ["Translate 'hi' to Spanish"], "It is 'hola'."),
        ]
    )
    assert imported.assistant_id == "Orchestrator"
    assert [(t.query, t.answer) for t in imported.turns] == [("Translate 'hi' to Spanish", "It is 'hola'.")]
    assert imported.warnings == ["items[0]: 2 span(s) inside function spans (tools' own work) skipped"]


def test_what_the_importer_cannot_place_is_said() -> None:
    guardrail = span("guardrail", "gr", "a", name="no_pii", triggered=True)
    failed = {"message": "Error getting response", "data": {"error": "rate limited"}}
    imported = only(
        {
            "data": [
                agent("a", parent="missing-parent"),
                guardrail,
                generation("g1", "a", ["q"], "first", tool_calls=[call("c", "transfer_to_other")]),
                span("handoff", "h", "a", from_agent="Helper", to_agent="Billing team"),
                span("generation", "g2", "a", error=failed, input=[{"role": "user", "content": "q"}], output=None),
                span("mcp_tools", "m", "a", server="files", result=["read"]),
            ]
        }
    )
    assert imported.turns[0].tools_used == [{"tool_name": "transfer_to_other", "parameters": {}, "step": 1}]
    assert imported.warnings == [
        "data[0]: no trace object has this span's trace_id 'trace_00000000000000000000000000000001'; read without"
        " metadata",
        "data[1]: guardrail 'no_pii' was triggered",
        "data[3]: the handoff to 'Billing team' answers no call named 'transfer_to_billing_team'; no result given",
        "data[4].error: the generation span failed: Error getting response: rate limited",
        "data[0]: 1 span(s) name a parent_id not in the input; read as top-level",
        "data[0]: spans with no conversation content skipped: mcp_tools (1)",
    ]


@pytest.mark.parametrize("data", [5, ["task"], "turn", None, {"sdk_span_type": []}, {"sdk_span_type": {"a": 1}}])
def test_a_custom_span_whose_data_is_not_the_sdks_is_skipped_and_said(data: Any) -> None:
    imported = only(
        [trace(), agent("a"), span("custom", "x", "a", name="note", data=data), generation("g", "a", ["q"], "a")]
    )
    assert (imported.turns, imported.warnings) == (
        [ImportedTurn("q", "a")],
        ["items[0]: spans with no conversation content skipped: custom 'note' (1)"],
    )


def test_the_sdks_own_task_and_turn_spans_are_skipped_silently() -> None:
    task = span("custom", "t", None, name="w", data={"sdk_span_type": "task"})
    turn = span("custom", "u", "t", name="turn 1", data={"sdk_span_type": "turn"})
    imported = only([trace(), task, turn, agent("a", parent="u"), generation("g", "a", ["q"], "a")])
    assert (imported.turns, imported.warnings) == ([ImportedTurn("q", "a")], [])


def test_a_group_merges_metadata_keeping_the_earliest_value_and_said() -> None:
    second = SECOND
    imported = only(
        [
            trace(second, "thread-1", {"task": "b", "user": "u1"}),
            trace(TRACE, "thread-1", {"task": "a"}),
            agent("a"),
            generation("g1", "a", ["first"], "one"),
            agent("b", trace_id=second),
            generation("g2", "b", ["second"], "two", trace_id=second),
        ]
    )
    assert (imported.trace_id, imported.metadata) == ("thread-1", {"task": "a", "user": "u1"})
    assert [t.query for t in imported.turns] == ["first", "second"]
    assert imported.warnings == ["items[0].metadata.task: differs from an earlier trace's; 'a' kept"]


def test_metadata_assistant_id_names_the_assistant_and_a_refusal_is_an_answer() -> None:
    imported = only(
        [trace(metadata={"assistant_id": "helper-v2"}), agent("a"), generation("g", "a", ["q"], None, refusal="No.")]
    )
    assert (imported.assistant_id, imported.turns[0].answer, imported.warnings) == ("helper-v2", "No.", [])


def test_without_agent_spans_the_assistant_is_agent_and_said() -> None:
    imported = only([trace(), generation("g", None, ["q"], "a")])
    assert (imported.assistant_id, imported.warnings) == ("agent", ["items[0]: no agent span; assistant_id is 'agent'"])


def test_ten_thousand_spans_in_the_exporters_order_import_in_order() -> None:
    items: list[dict[str, Any]] = [trace()]
    for run in range(1000):
        items.append(agent(f"a{run}"))
        calls = [call(f"c{run}-{n}", "search", json.dumps({"n": n})) for n in range(4)]
        items.append(generation(f"g{run}", f"a{run}", [f"question {run}"], tool_calls=calls))
        items += [span("function", f"f{run}-{n}", f"a{run}", name="search", input="{}", output="x") for n in range(4)]
        items += [span("custom", f"x{run}-{n}", f"a{run}", name="note", data={}) for n in range(3)]
        items.append(generation(f"h{run}", f"a{run}", [f"question {run}"], f"answer {run}"))
    imported = only(list(reversed(items)))  # the exporter's order is children first: sorting must fix it
    assert len(imported.turns) == 1000 and imported.turns[-1].answer == "answer 999"


def test_ten_thousand_calls_of_one_name_and_ten_thousand_spans_of_another_are_matched_by_name() -> None:
    calls = [call(f"c{n}", "a", json.dumps({"n": n})) for n in range(10_000)]
    items: list[dict[str, Any]] = [trace(), agent("ag"), generation("g", "ag", ["q"], tool_calls=calls)]
    items += [span("function", f"b{n}", "ag", name="b", input="{}", output="no call") for n in range(10_000)]
    items += [span("function", f"a{n}", "ag", name="a", input="{}", output=str(n)) for n in range(10_000)]
    items.append(generation("h", "ag", ["q"], "done"))
    (turn,) = only(items).turns
    assert [(c["tool_name"], c["parameters"], c["step"], c["result"]) for c in turn.tools_used[:10_000]] == [
        ("a", {"n": n}, 1, n) for n in range(10_000)
    ]
    assert [(c["tool_name"], c["step"], c["result"]) for c in turn.tools_used[10_000:]] == [
        ("b", 2 + n, "no call") for n in range(10_000)
    ]
    assert turn.answer == "done"


# --------------------------------------------------------------------------- errors name their field


def _broken(change: str) -> Any:
    items: list[Any] = [trace(), agent("a"), generation("g", "a", ["q"], "a", tool_calls=[call("c", "f")])]
    items.append(span("function", "f", "a", name="f", input="{}", output="1"))
    g, f = items[2]["span_data"], items[3]["span_data"]
    edits: dict[str, Any] = {
        "not-a-list": lambda: 3,
        "data-not-a-list": lambda: {"data": {}},
        "item": lambda: [*items, 7],
        "object": lambda: [*items, {"object": "trace.event"}],
        "trace-id": lambda: [{**items[0], "id": ""}, *items[1:]],
        "second-trace": lambda: [*items, trace()],
        "group-id": lambda: [{**items[0], "group_id": 5}, *items[1:]],
        "metadata": lambda: [{**items[0], "metadata": []}, *items[1:]],
        "second-span": lambda: [*items, items[3]],
        "span-trace-id": lambda: [*items[:3], {**items[3], "trace_id": None}],
        "parent-id": lambda: [*items[:3], {**items[3], "parent_id": 4}],
        "started-at": lambda: [*items[:3], {**items[3], "started_at": "yesterday"}],
        "span-data": lambda: [*items[:3], {**items[3], "span_data": {"name": "f"}}],
        "error": lambda: [*items[:3], {**items[3], "error": "boom"}],
        "agent-name": lambda: [items[0], {**items[1], "span_data": {"type": "agent"}}, *items[2:]],
        "input": lambda: g.update(input="q") or items,
        "input-message": lambda: g.update(input=["q"]) or items,
        "input-role": lambda: g.update(input=[{"role": {"name": "user"}, "content": "q"}]) or items,
        "user-content": lambda: g.update(input=[{"role": "user", "content": 3}]) or items,
        "output-missing": lambda: g.update(output=None) or items,
        "output": lambda: g.update(output={"role": "assistant"}) or items,
        "output-role": lambda: g.update(output=[{"role": "user", "content": "x"}]) or items,
        "call-name": lambda: g["output"][0].update(tool_calls=[{"id": "c", "function": {}}]) or items,
        "tool-calls-number": lambda: g["output"][0].update(tool_calls=5) or items,
        "tool-calls-object": lambda: g["output"][0].update(tool_calls={"id": "c"}) or items,
        "function-name": lambda: f.update(name="") or items,
        "no-spans": lambda: [items[0]],
        "assistant-id": lambda: [{**items[0], "metadata": {"assistant_id": 7}}, *items[1:]],
        "no-user": lambda: g.update(input=[{"role": "system", "content": "s"}]) or items,
    }
    return edits[change]()


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        ("not-a-list", "items", 'an export is {"data": [...]}'),
        ("data-not-a-list", "data", "must be a list of trace and span objects"),
        ("item", "items[4]", "must be a trace or span object"),
        ("object", "items[4].object", "must be 'trace' or 'trace.span'"),
        ("trace-id", "items[0].id", "must be a non-empty string"),
        ("second-trace", "items[4].id", "a second trace object"),
        ("group-id", "items[0].group_id", "must be a string or null"),
        ("metadata", "items[0].metadata", "must be an object or null"),
        ("second-span", "items[4].id", "a second span with the id 'f'"),
        ("span-trace-id", "items[3].trace_id", "must be a non-empty string"),
        ("parent-id", "items[3].parent_id", "must be a string or null"),
        ("started-at", "items[3].started_at", "must be an ISO 8601 time"),
        ("span-data", "items[3].span_data", "must be an object with a `type`"),
        ("error", "items[3].error", "must be an object or null"),
        ("agent-name", "items[1].span_data.name", "needs the agent's name"),
        ("input", "items[2].span_data.input", "must be a list of chat-completions messages"),
        ("input-message", "items[2].span_data.input[0]", "a message is an object with a `role`"),
        ("input-role", "items[2].span_data.input[0]", "a message is an object with a `role` (text)"),
        ("user-content", "items[2].span_data.input[0].content", "must be a string or a list of content parts"),
        ("output-missing", "items[2].span_data.output", "trace_include_sensitive_data is False"),
        ("output", "items[2].span_data.output", "must be a list of assistant messages"),
        ("output-role", "items[2].span_data.output[0]", "a generation's output is assistant messages"),
        ("call-name", "items[2].span_data.output[0].tool_calls[0]", "needs the tool's name"),
        ("tool-calls-number", "items[2].span_data.output[0].tool_calls", "must be a list of tool calls or null"),
        ("tool-calls-object", "items[2].span_data.output[0].tool_calls", "must be a list of tool calls or null"),
        ("function-name", "items[3].span_data.name", "needs the tool's name"),
        ("no-spans", "items[0]", "has no spans in the input"),
        ("assistant-id", "items[0].metadata.assistant_id", "must be a non-empty string"),
        ("no-user", "items[2].span_data.output[0]", "before any user message"),
    ],
)
def test_an_unreadable_export_names_the_field(change: str, field: str, problem: str) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_openai_agents(_broken(change))
    assert raised.value.field == field
    assert problem in str(raised.value)


# --------------------------------------------------------------------------- the example


def test_the_example_imports_and_joins_its_references_into_valid_datasets() -> None:
    traces = traces_from_openai_agents(json.loads(EXAMPLE.read_text()))
    references = [json.loads(line) for line in EXAMPLE_REFERENCES.read_text().splitlines() if line.strip()]
    datasets, report = join_references(traces, references, task_key="metadata.task")
    assert report.problems() == []
    parsed = [Dataset.model_validate(dataset) for dataset in datasets]
    assert len(parsed) == len(traces)
    tasks = [d.task_id for d in parsed]
    assert any(tasks.count(task) > 1 for task in tasks)  # two attempts at one task
    assert any(len(d.conversation) > 1 for d in parsed)  # a multi-turn conversation
    calls = [c for d in parsed for b in d.conversation if b.agentic for c in b.agentic.tools_used]
    assert any(c.is_error for c in calls)
    steps = [
        (d.session_id, n, c.step)
        for d in parsed
        for n, b in enumerate(d.conversation)
        if b.agentic
        for c in b.agentic.tools_used
    ]
    assert len(steps) > len(set(steps))  # parallel calls share a step
