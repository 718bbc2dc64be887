"""OpenAI chat-completions traces → conversations, and the join with a references file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.importers import (
    IMPORTERS,
    ImportedTurn,
    TraceError,
    datasets_from_traces,
    join_references,
    traces_from_openai,
    unjoined_causes,
)
from fair_forge_core.schemas import Dataset
from fair_forge_core.trace_formats import TRACE_FORMATS

ROOT = Path(__file__).resolve().parents[2]
TRACES = json.loads((ROOT / "examples" / "traces" / "openai_chat.json").read_text())
REFERENCES = [
    json.loads(line)
    for line in (ROOT / "examples" / "traces" / "openai_chat.references.jsonl").read_text().splitlines()
]


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_parallel_calls_share_a_step_and_results_join_by_id() -> None:
    trace = traces_from_openai(TRACES)[1]
    assert (trace.trace_id, trace.assistant_id, trace.metadata) == (
        "run-002",
        "travel-agent-v1",
        {"task": "compare-cities"},
    )
    assert trace.turns == [
        ImportedTurn(
            query="Is it warmer in Lima or in Oslo today?",  # from the text parts
            answer="Lima is warmer: 22 °C against 4 °C in Oslo.",  # the last answer, not "Let me check both."
            tools_used=[
                {"tool_name": "get_weather", "parameters": {"city": "Lima"}, "step": 1, "result": {"temp_c": 22}},
                {"tool_name": "get_weather", "parameters": {"city": "Oslo"}, "step": 1, "result": {"temp_c": 4}},
            ],
        )
    ]


def test_turns_split_at_user_messages_with_their_own_steps_and_a_tool_error_kept_as_text() -> None:
    first, second = traces_from_openai(TRACES)[2].turns
    assert first.tools_used[0]["result"] == "Error: division by zero"
    assert first.answer == "A bill cannot be split between 0 people."
    assert second.query == "And between 3 people?"
    assert second.tools_used == [
        {"tool_name": "calculator", "parameters": {"operation": "divide", "a": 120, "b": 3}, "step": 1, "result": 40}
    ]


def test_a_bare_list_of_messages_is_one_trace() -> None:
    (trace,) = traces_from_openai([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    assert (trace.trace_id, trace.assistant_id, trace.turns) == ("trace-0", "agent", [ImportedTurn("hi", "hello")])


def test_an_unanswered_call_has_no_result_and_later_steps_count_on() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call("1", "a", "")]},
        {"role": "assistant", "content": None, "tool_calls": [call("2", "b", "{}")]},
        {"role": "tool", "tool_call_id": "2", "content": "done"},
        {"role": "assistant", "content": "answer"},
    ]
    (trace,) = traces_from_openai([{"id": "t", "messages": messages}])
    assert trace.turns[0].tools_used == [
        {"tool_name": "a", "parameters": {}, "step": 1},
        {"tool_name": "b", "parameters": {}, "step": 2, "result": "done"},
    ]


def test_arguments_that_are_not_a_json_object_are_kept_as_text_and_reported() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [call("1", "f", "{oops"), call("2", "g", "[1]")]},
        {"role": "tool", "tool_call_id": "1", "content": "Error: bad arguments"},
        {"role": "assistant", "content": "sorry"},
    ]
    (trace,) = traces_from_openai([{"id": "t", "messages": messages}])
    assert trace.turns[0].tools_used == [
        {
            "tool_name": "f",
            "parameters": {},
            "step": 1,
            "unparsed_arguments": "{oops",
            "result": "Error: bad arguments",
        },
        {"tool_name": "g", "parameters": {}, "step": 1, "unparsed_arguments": "[1]"},
    ]
    assert trace.warnings == [
        "traces[0].messages[1].tool_calls[0]: arguments are not a JSON object; kept as text in unparsed_arguments"
        " (no parameters)",
        "traces[0].messages[1].tool_calls[1]: arguments are not a JSON object; kept as text in unparsed_arguments"
        " (no parameters)",
    ]


def test_a_turn_without_an_answer_is_judged_as_an_empty_answer_and_said() -> None:
    (trace,) = traces_from_openai([{"id": "t", "messages": [{"role": "user", "content": "q"}]}])
    assert trace.turns == [ImportedTurn("q", "")]
    assert trace.warnings == ["traces[0]: turn 0 ('q') has no final answer; judged as an empty answer"]


@pytest.mark.parametrize(
    ("messages", "field", "problem"),
    [
        (
            [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "9", "content": "x"}],
            "traces[0].messages[1].tool_call_id",
            "no tool call has the id '9'",
        ),
        (
            [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"id": "1", "function": {}}]}],
            "traces[0].messages[1].tool_calls[0]",
            "needs the tool's name",
        ),
        ([{"role": "system", "content": "s"}], "traces[0]", "holds no user message"),
        ([{"role": "assistant", "content": "a"}], "traces[0].messages[0]", "before any user message"),
        ([{"role": "user", "content": 3}], "traces[0].messages[0].content", "must be a string"),
        ([{"role": "user", "content": "q"}, {"role": "robot"}], "traces[0].messages[1].role", "unknown role"),
    ],
    ids=["unknown-call-id", "no-name", "no-user-message", "no-user", "bad-content", "bad-role"],
)
def test_an_unreadable_trace_names_the_field(messages: list[Any], field: str, problem: str) -> None:
    with pytest.raises(TraceError) as raised:
        traces_from_openai([{"id": "t", "messages": messages}])
    assert raised.value.field == field
    assert problem in str(raised.value)


def test_the_join_gives_valid_datasets_with_tasks_and_truths() -> None:
    datasets, report = join_references(traces_from_openai(TRACES), REFERENCES, task_key="metadata.task")
    assert report.problems() == []
    parsed = [Dataset.model_validate(d) for d in datasets]
    assert [(d.session_id, d.task_id, len(d.conversation)) for d in parsed] == [
        ("run-001", "weather-paris", 1),
        ("run-002", "compare-cities", 1),
        ("run-003", "budget", 2),
    ]
    assert parsed[2].conversation[1].ground_truth_assistant == "40 EUR each"
    assert parsed[2].conversation[0].ground_truth_agentic is None  # no expectation written: tools not evaluated
    assert [b.qa_id for b in parsed[2].conversation] == ["budget-0", "budget-1"]


def test_what_does_not_match_is_kept_unscored_with_its_cause_never_dropped() -> None:
    traces = traces_from_openai(TRACES)
    references = [r for r in REFERENCES if r["task_id"] != "weather-paris" and r.get("turn") != 1]
    references.append({"task_id": "nobody-ran-this", "ground_truth_assistant": "x"})
    datasets, report = join_references(traces, references, task_key="metadata.task")
    assert [(d["session_id"], d.get("unscored", {}).get("cause")) for d in datasets] == [
        ("run-001", "not_joined"),
        ("run-002", None),
        ("run-003", "turns_differ"),
    ]
    assert [(u.trace_id, u.why.cause) for u in report.unjoined] == [
        ("run-001", "not_joined"),
        ("run-003", "turns_differ"),
    ]
    assert report.unused_tasks == ["nobody-ran-this"]
    assert report.problems() == [
        "2 trace attempt(s) could not be joined to the references (1 not_joined, 1 turns_differ): "
        "kept as unscored conversations, which readiness counts",
        "trace 'run-001': its task 'weather-paris' matches no task of the references: "
        "kept as an unscored conversation (not_joined)",
        "trace 'run-003': its 2 turn(s) differ from task 'budget''s references: turn 1 without a reference: "
        "kept as an unscored conversation (turns_differ)",
        "task 'nobody-ran-this' of the references matches no trace",
    ]
    assert unjoined_causes(datasets) == {"not_joined": 1, "turns_differ": 1}
    kept = Dataset.model_validate(datasets[2])  # valid datasets, their own task and turns
    assert (kept.task_id, len(kept.conversation), kept.conversation[1].ground_truth_assistant) == ("budget", 2, "")


def test_several_traces_of_one_task_are_its_attempts() -> None:
    attempts = [{**TRACES[0], "id": f"attempt-{n}"} for n in range(3)]
    datasets, _ = join_references(traces_from_openai(attempts), REFERENCES[:1], task_key="metadata.task")
    assert [(d["session_id"], d["task_id"]) for d in datasets] == [(f"attempt-{n}", "weather-paris") for n in range(3)]


def test_a_task_by_first_user_message() -> None:
    references = [{"task_id": "What is the weather in Paris right now?", "ground_truth_assistant": "18 °C"}]
    datasets, report = join_references(traces_from_openai(TRACES), references, task_key="first_user_message")
    assert [d["session_id"] for d in datasets if "unscored" not in d] == ["run-001"]
    assert [u.trace_id for u in report.unjoined] == ["run-002", "run-003"]


def test_every_format_the_schema_names_has_an_importer_and_no_other() -> None:
    assert tuple(IMPORTERS) == TRACE_FORMATS


def test_datasets_from_traces_gathers_the_importers_choices_then_the_joins_problems() -> None:
    traces = [
        {"id": "t", "messages": [{"role": "user", "content": "q"}]},
        {"id": "u", "messages": TRACES[0]["messages"]},
    ]
    datasets, warnings, count = datasets_from_traces(
        "openai", traces, [{"task_id": "t", "ground_truth_assistant": "a"}]
    )
    assert (len(datasets), count) == (2, 2)
    assert warnings == [
        "traces[0]: turn 0 ('q') has no final answer; judged as an empty answer",
        "1 trace attempt(s) could not be joined to the references (1 not_joined): "
        "kept as unscored conversations, which readiness counts",
        "trace 'u': its task 'u' matches no task of the references: kept as an unscored conversation (not_joined)",
    ]
    with pytest.raises(TraceError, match="unknown trace format 'csv'"):
        datasets_from_traces("csv", traces, [])


def test_json_texts_too_deep_or_not_finite_stay_text() -> None:
    deep = "[" * 50_000
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [call("1", "f", deep), call("2", "g", '{"x": NaN}')]},
        {"role": "tool", "tool_call_id": "1", "content": deep},
        {"role": "tool", "tool_call_id": "2", "content": "NaN"},
        {"role": "assistant", "content": "a"},
    ]
    (trace,) = traces_from_openai([{"id": "t", "messages": messages}])
    first, second = trace.turns[0].tools_used
    assert (first["unparsed_arguments"], first["result"]) == (deep, deep)
    assert (second["unparsed_arguments"], second["result"]) == ('{"x": NaN}', "NaN")
    assert len(trace.warnings) == 2


@pytest.mark.parametrize(
    ("content", "result"),
    [
        (
            [{"flight": "AF1", "price": 120}, {"flight": "BA2", "price": 99}],
            [{"flight": "AF1", "price": 120}, {"flight": "BA2", "price": 99}],
        ),
        ([], []),
        ([{"type": "text", "text": "4"}, {"type": "text", "text": "0"}], 40),
    ],
    ids=["records", "empty", "content-parts"],
)
def test_only_content_parts_are_joined_as_text(content: Any, result: Any) -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "tool_calls": [call("1", "f", "{}")]},
        {"role": "tool", "tool_call_id": "1", "content": content},
        {"role": "assistant", "content": "a"},
    ]
    (trace,) = traces_from_openai([{"id": "t", "messages": messages}])
    assert trace.turns[0].tools_used[0]["result"] == result


def test_calls_sharing_an_id_are_answered_in_order_and_said() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "tool_calls": [call("", "get_weather", '{"city": "Lima"}'), call("", "get_weather", '{"city": "Oslo"}')],
        },
        {"role": "tool", "tool_call_id": "", "content": "22"},
        {"role": "tool", "tool_call_id": "", "content": "4"},
        {"role": "tool", "tool_call_id": "", "content": "9"},
        {"role": "assistant", "content": "a"},
    ]
    (trace,) = traces_from_openai([{"id": "t", "messages": messages}])
    assert [(c["parameters"]["city"], c["result"]) for c in trace.turns[0].tools_used] == [("Lima", 22), ("Oslo", 4)]
    assert trace.warnings == [
        "traces[0].messages[1].tool_calls[1]: the call id '' was used before; results answer its calls in order",
        "traces[0].messages[4].tool_call_id: a second result for the call id ''; the first one is kept",
    ]


def test_a_bare_list_of_messages_is_named_from_the_list_itself() -> None:
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "tool", "tool_call_id": "zz"},
    ]
    with pytest.raises(TraceError) as raised:
        traces_from_openai(messages)
    assert raised.value.field == "traces[2].tool_call_id"


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"role": ["user"]}, "traces[0].messages[0].role"),
        ({"role": "assistant", "tool_calls": 5}, "traces[0].messages[1].tool_calls"),
    ],
    ids=["role-not-a-string", "tool-calls-not-a-list"],
)
def test_odd_shapes_are_trace_errors_not_crashes(message: dict[str, Any], field: str) -> None:
    messages = [message] if field.endswith("[0].role") else [{"role": "user", "content": "q"}, message]
    with pytest.raises(TraceError) as raised:
        traces_from_openai([{"id": "t", "messages": messages}])
    assert raised.value.field == field


def test_an_importer_crash_is_a_trace_error_naming_the_format(monkeypatch: pytest.MonkeyPatch) -> None:
    def crashes(data: Any) -> Any:
        return data["no such key"]

    monkeypatch.setitem(IMPORTERS, "openai", crashes)
    with pytest.raises(TraceError) as raised:
        datasets_from_traces("openai", {}, [])
    assert raised.value.field == "traces"
    assert "cannot be read as openai traces (KeyError" in str(raised.value)


# --- attempts that cannot be joined: kept unscored, each with its cause ------------------------


def one_turn_trace(trace_id: str, task: str, turns: int = 1) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        messages += [{"role": "user", "content": f"q{n}"}, {"role": "assistant", "content": f"a{n}"}]
    return {"id": trace_id, "metadata": {"task": task}, "messages": messages}


TWO_TURNS = [
    {"task_id": "t", "turn": 0, "ground_truth_assistant": "a0"},
    {"task_id": "t", "turn": 1, "ground_truth_assistant": "a1"},
]


@pytest.mark.parametrize(
    ("turns", "detail"),
    [
        (3, "its 3 turn(s) differ from task 't''s references: turn 2 without a reference"),
        (1, "its 1 turn(s) differ from task 't''s references: turn 1 of the references missing"),
    ],
    ids=["an-extra-turn", "a-missing-turn"],
)
def test_a_turn_count_that_differs_from_the_references_is_turns_differ(turns: int, detail: str) -> None:
    traces = traces_from_openai([one_turn_trace("ok", "t", 2), one_turn_trace("odd", "t", turns)])
    datasets, report = join_references(traces, TWO_TURNS, task_key="metadata.task")
    assert [d.get("unscored") for d in datasets] == [None, {"cause": "turns_differ", "detail": detail}]
    assert len(datasets[1]["conversation"]) == turns  # the trace's turns, as it ran them
    assert report.unused_tasks == []


def test_a_near_miss_task_name_gets_did_you_mean_and_keeps_its_own_name() -> None:
    names = ("T ", "refund-ordre", "elsewhere")
    traces = traces_from_openai([one_turn_trace(f"r{n}", name, 1) for n, name in enumerate(names)])
    refs = [{"task_id": "t", "ground_truth_assistant": "a"}, {"task_id": "refund-order", "ground_truth_assistant": "b"}]
    datasets, _ = join_references(traces, refs, task_key="metadata.task")
    assert [(d["task_id"], d["unscored"]["detail"]) for d in datasets] == [
        ("T ", "its task 'T ' matches no task of the references (did you mean 't'?)"),  # spaces and case
        ("refund-ordre", "its task 'refund-ordre' matches no task of the references (did you mean 'refund-order'?)"),
        ("elsewhere", "its task 'elsewhere' matches no task of the references"),  # another project's: no hint
    ]


def test_did_you_mean_is_looked_for_at_most_max_hints_names() -> None:
    from fair_forge_core.importers.references import MAX_HINTS

    names = [f"task-{n:03d}x" for n in range(MAX_HINTS + 5)]  # each close to its reference's task-NNN
    traces = traces_from_openai([one_turn_trace(f"r{n}", name, 1) for n, name in enumerate(names)])
    refs = [{"task_id": f"task-{n:03d}", "ground_truth_assistant": "a"} for n in range(MAX_HINTS + 5)]
    datasets, _ = join_references(traces, refs, task_key="metadata.task")
    hinted = ["did you mean" in d["unscored"]["detail"] for d in datasets]
    assert hinted == [True] * MAX_HINTS + [False] * 5


def test_a_trace_without_the_task_key_is_not_joined_with_no_task() -> None:
    traces = traces_from_openai(
        [one_turn_trace("ok", "t", 2), {"id": "bare", "messages": one_turn_trace("", "", 2)["messages"]}]
    )
    datasets, _ = join_references(traces, TWO_TURNS, task_key="metadata.task")
    assert (datasets[1]["task_id"], datasets[1]["unscored"]) == (
        None,
        {"cause": "not_joined", "detail": "it has no metadata.task as text, so it matches no task"},
    )
