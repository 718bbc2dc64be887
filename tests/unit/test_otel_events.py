"""`fair_forge_core.otel_events`: verdicts as `gen_ai.evaluation.result` events in OTLP JSON.

The names below are copied from the convention, not from the module: semantic-conventions
v1.41.1, `model/gen-ai/events.yaml` (group `event.gen_ai.evaluation.result`: its name and
the `ref`s of its attributes, with their requirement levels) and `model/gen-ai/registry.yaml`
(`gen_ai.evaluation.score.value` is a double, the others strings; `gen_ai.conversation.id`).
The OTLP JSON rules are opentelemetry-proto's `docs/specification.md` ("JSON Protobuf
Encoding": hex trace and span ids, lowerCamelCase keys, 64-bit integers as decimal strings)
and `opentelemetry/proto/logs/v1/logs.proto` (the `LogRecord` fields; trace id 16 bytes,
span id 8 bytes).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from examples.run_local import TRACE_EXAMPLES
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.importers import datasets_from_traces
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.otel_events import evaluation_events, otlp_logs_json
from fair_forge_core.schemas import (
    Batch,
    CheckCause,
    CheckResult,
    ConversationMetrics,
    Dataset,
    EvaluationConfig,
    EvaluationResult,
    InteractionResult,
)

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "examples" / "traces"

# semantic-conventions v1.41.1, model/gen-ai/events.yaml, `event.gen_ai.evaluation.result`
EVENT_NAME = "gen_ai.evaluation.result"
REQUIRED = {"gen_ai.evaluation.name"}
EVENT_ATTRIBUTES = REQUIRED | {
    "gen_ai.evaluation.score.value",  # conditionally_required: if applicable
    "gen_ai.evaluation.score.label",  # conditionally_required: if applicable
    "gen_ai.evaluation.explanation",  # recommended
    "gen_ai.response.id",  # recommended: when available
    "error.type",  # conditionally_required: if the operation ended in an error
}
# model/gen-ai/registry.yaml v1.41.1: the one other registry attribute the module sets
REGISTRY_ATTRIBUTES = {"gen_ai.conversation.id"}
DOUBLE_ATTRIBUTES = {"gen_ai.evaluation.score.value"}  # `type: double`; the rest are `type: string`

# logs.proto v1 `LogRecord`'s fields in lowerCamelCase (JSON Protobuf Encoding)
LOG_RECORD_FIELDS = {
    "timeUnixNano",
    "observedTimeUnixNano",
    "severityNumber",
    "severityText",
    "body",
    "attributes",
    "droppedAttributesCount",
    "flags",
    "traceId",
    "spanId",
    "eventName",
}
DIGITS, TRACE_ID, SPAN_ID = re.compile(r"[0-9]+"), re.compile(r"[0-9a-fA-F]{32}"), re.compile(r"[0-9a-fA-F]{16}")
NOW = 1_764_126_000_123_456_789  # a nanosecond time beyond 2**53: a float would lose its last digits


def example(name: str) -> tuple[list[Dataset], EvaluationConfig]:
    body = json.loads((ROOT / "examples" / name).read_text())
    return [Dataset.model_validate(d) for d in body["datasets"]], EvaluationConfig.model_validate(body["config"])


def evaluated(datasets: list[Dataset], config: EvaluationConfig) -> tuple[EvaluationResult, dict[str, Any]]:
    result = evaluate_sync(datasets, ReferenceJudge(), config)
    return result, otlp_logs_json(evaluation_events(result, datasets), NOW)


def records(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for rl in payload["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]


def attributes(record: dict[str, Any]) -> dict[str, Any]:
    """A record's attributes as plain values, each checked to be of the type its key has."""
    plain = {}
    for item in record["attributes"]:
        ((kind, value),) = item["value"].items()
        assert kind == ("doubleValue" if item["key"] in DOUBLE_ATTRIBUTES else "stringValue"), item
        plain[item["key"]] = value
    assert len(plain) == len(record["attributes"])  # no key twice
    return plain


def traces_request() -> tuple[list[Dataset], EvaluationConfig]:
    """The OpenTelemetry example through the importer (`convert`'s path), by its task key."""
    references = [json.loads(line) for line in (TRACES / "otel_genai.references.jsonl").read_text().splitlines()]
    raw, _, _ = datasets_from_traces(
        "otel", json.loads((TRACES / "otel_genai.json").read_text()), references, task_key="metadata.app.task"
    )
    return [Dataset.model_validate(d) for d in raw], EvaluationConfig()


ALL_EXAMPLES = ["calculator.json", "tool_policy.json", "end_state.json", "goal.json"]


@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_every_attribute_is_the_conventions_and_typed_as_it_says(name: str) -> None:
    _, payload = evaluated(*example(name))
    for record in records(payload):
        assert record["eventName"] == EVENT_NAME
        names = set(attributes(record))
        assert names >= REQUIRED
        ours = {n for n in names - EVENT_ATTRIBUTES - REGISTRY_ATTRIBUTES}
        assert all(n.startswith("fair_forge.") for n in ours), ours  # outside the conventions' namespaces
        # a verdict is either reached (a label, maybe a score) or an error: never both
        assert ("error.type" in names) != ("gen_ai.evaluation.score.label" in names)
        if "error.type" in names:
            assert "gen_ai.evaluation.score.value" not in names


@pytest.mark.parametrize("name", [*ALL_EXAMPLES, "traces"])
def test_the_payload_is_an_otlp_json_logs_export_request(name: str) -> None:
    _, payload = evaluated(*(traces_request() if name == "traces" else example(name)))
    assert set(payload) == {"resourceLogs"}
    (resource_logs,) = payload["resourceLogs"]
    assert set(resource_logs) == {"resource", "scopeLogs"}
    resource = {a["key"]: a["value"] for a in resource_logs["resource"]["attributes"]}
    assert resource["service.name"] == {"stringValue": "fair-forge"}
    (scope_logs,) = resource_logs["scopeLogs"]
    assert set(scope_logs) == {"scope", "logRecords"}
    assert scope_logs["logRecords"]
    for record in scope_logs["logRecords"]:
        assert set(record) <= LOG_RECORD_FIELDS
        # fixed64 → a decimal string, exactly the nanoseconds given
        assert record["timeUnixNano"] == record["observedTimeUnixNano"] == "1764126000123456789"
        assert DIGITS.fullmatch(record["timeUnixNano"])
        if "traceId" in record:
            assert TRACE_ID.fullmatch(record["traceId"]) and record["traceId"] != "0" * 32
        if "spanId" in record:
            assert (
                "traceId" in record
            )  # "If the sender specifies a valid span_id then it SHOULD also specify a valid trace_id"
            assert SPAN_ID.fullmatch(record["spanId"]) and record["spanId"] != "0" * 16
    json.dumps(payload, allow_nan=False)  # strict JSON


def test_the_values_are_the_results(tmp_path: Path) -> None:
    """Each turn: answer_correctness = its answer_score, labelled by score ≥ the threshold
    (recomputed here, not read from `answer_correct`); tool_correctness = the rubric's overall
    score, labelled by its is_correct; tool_policy labelled by passed; conversations' end
    state and goal likewise — every verdict of the result once, in order."""
    datasets, config = example("tool_policy.json")
    more, more_config = example("end_state.json")
    result, payload = evaluated(datasets, config)
    state_result, state_payload = evaluated(more, more_config)
    seen = [attributes(r) for r in records(payload) + records(state_payload)]
    expected: list[dict[str, Any]] = []
    for metrics in result.per_conversation_metrics + state_result.per_conversation_metrics:
        assert metrics.interactions is not None
        # Each event explains with its check's reason, which carries the legacy field's own words.
        reasons = {(c.name, c.turn): c.reason for c in metrics.checks}
        for turn, interaction in enumerate(metrics.interactions):
            assert interaction.answer_score is not None
            reason = reasons[("answer_correctness", turn)]
            assert str(interaction.judge_reasoning) in reason
            expected.append(
                {
                    "gen_ai.evaluation.name": "answer_correctness",
                    "gen_ai.evaluation.score.value": interaction.answer_score,
                    "gen_ai.evaluation.score.label": "pass"
                    if interaction.answer_score >= metrics.threshold
                    else "fail",
                    "gen_ai.evaluation.explanation": reason,
                }
            )
            tools = metrics.tool_correctness_scores[turn]
            if tools is not None:
                reason = reasons[("tool_correctness", turn)]
                trajectory = interaction.tool_policy and interaction.tool_policy.trajectory_matches is not None
                assert ("expected trajectory" if trajectory else tools.reasoning) in reason
                expected.append(
                    {
                        "gen_ai.evaluation.name": "tool_correctness",
                        "gen_ai.evaluation.score.value": tools.overall_correctness,
                        "gen_ai.evaluation.score.label": "pass" if interaction.tool_correct else "fail",
                        "gen_ai.evaluation.explanation": reason,
                    }
                )
            if interaction.tool_policy is not None:
                reason = reasons[("tool_policy", turn)]
                # every broken rule, in the order the check lists them
                assert "; ".join(v.message for v in interaction.tool_policy.violations) in reason
                policy = {"gen_ai.evaluation.name": "tool_policy"}
                policy["gen_ai.evaluation.score.label"] = "pass" if interaction.tool_policy.passed else "fail"
                policy["gen_ai.evaluation.explanation"] = reason
                expected.append(policy)
        if metrics.state_check is not None:
            reason = reasons[("end_state", None)]
            check = metrics.state_check
            assert (f"{check.mismatched} of {check.checked} key(s) disagree" in reason) != check.matches
            expected.append(
                {
                    "gen_ai.evaluation.name": "end_state",
                    "gen_ai.evaluation.score.label": "pass" if metrics.state_check.matches else "fail",
                    "gen_ai.evaluation.explanation": reason,
                }
            )
    verdicts = [{k: v for k, v in a.items() if not k.startswith(("fair_forge.", "gen_ai.conversation"))} for a in seen]
    assert verdicts == expected
    # the examples hold each kind of verdict and both labels (so this test can fail on each)
    names = {(a["gen_ai.evaluation.name"], a.get("gen_ai.evaluation.score.label")) for a in verdicts}
    assert names >= {("tool_policy", "pass"), ("tool_policy", "fail"), ("end_state", "pass"), ("end_state", "fail")}
    assert ("tool_correctness", "pass") in names and ("answer_correctness", "pass") in names


def test_each_event_names_the_conversation_task_and_turn_it_judged() -> None:
    datasets, config = example("calculator.json")
    _, payload = evaluated(datasets, config)
    named = [
        (a["gen_ai.conversation.id"], a.get("fair_forge.task_id"), a.get("fair_forge.qa_id"))
        for a in map(attributes, records(payload))
        if a["gen_ai.evaluation.name"] == "answer_correctness"
    ]
    assert named == [(d.session_id, d.task_id, b.qa_id) for d in datasets for b in d.conversation]
    assert len(named) == sum(len(d.conversation) for d in datasets) == 3  # examples/calculator.json: 2 + 1 turns


def test_a_goal_the_offline_judge_cannot_decide_is_an_error_event_without_a_score() -> None:
    datasets, config = example("goal.json")
    result, payload = evaluated(datasets, config)
    (goal,) = [a for a in map(attributes, records(payload)) if a["gen_ai.evaluation.name"] == "goal"]
    assert goal["error.type"] == "abstained"
    assert "gen_ai.evaluation.score.value" not in goal and "gen_ai.evaluation.score.label" not in goal
    (metrics,) = result.per_conversation_metrics
    assert metrics.goal_check is not None and metrics.goal_check.error is not None
    assert "cannot decide a conversation's goal" in metrics.goal_check.error  # the offline judge's abstention
    assert goal["gen_ai.evaluation.explanation"] == metrics.goal_check.error


@pytest.mark.parametrize(
    ("error", "cause", "error_type"),
    [
        ("time budget exhausted after 30 s", "deadline", "deadline"),
        ("the cost cap (--max-cost-usd 0.5) was reached", "cost_cap", "cost_cap"),
        ("I will not grade this", "abstained", "abstained"),
        ("openai: 500 Internal Server Error", "judge_error", "judge_error"),
        (None, None, "_OTHER"),
    ],
)
def test_an_unscored_turn_is_an_error_event_whose_type_is_its_cause(
    error: str | None, cause: CheckCause | None, error_type: str
) -> None:
    """`error.type` is the result's typed cause, whatever the error's words; none given is `_OTHER`."""
    turn = InteractionResult(
        qa_id="q1",
        answer_score=None,
        answer_correct=None,
        tool_correct=None,
        is_correct=None,
        judge_reasoning=None,
        error=error,
    )
    metrics = ConversationMetrics(
        session_id="s1",
        assistant_id="a",
        task_id=None,
        total_interactions=1,
        correct_interactions=0,
        unscored_interactions=1,
        is_scored=False,
        is_fully_correct=None,
        threshold=0.7,
        correctness_scores=[None],
        correct_indices=[],
        tool_correctness_scores=[None],
        k=1,
        pass_at_k=None,
        pass_pow_k=None,
        interactions=[turn],
        checks=[
            CheckResult(
                name="answer_correctness",
                scope="turn",
                turn=0,
                outcome="unscored",
                required=True,
                score=None,
                reason=error or "",
                cause=cause,
                detail=None,
            )
        ],
    )
    result, _ = evaluated(*example("calculator.json"))
    unscored = result.model_copy(update={"per_conversation_metrics": [metrics]})
    (record,) = records(otlp_logs_json(evaluation_events(unscored), NOW))
    expected = {"gen_ai.evaluation.name": "answer_correctness", "error.type": error_type}
    if error is not None:
        expected["gen_ai.evaluation.explanation"] = error
    assert attributes(record) == {**expected, "gen_ai.conversation.id": "s1", "fair_forge.qa_id": "q1"}
    assert "traceId" not in record and "spanId" not in record


# examples/traces/otel_genai.json, read by hand: each conversation's turns and the span whose
# output is the turn's final answer (the last `chat` span of the turn, whose output is text).
EXPECTED_SPANS = {
    "4bf92f3577b34da6a3ce929d0e0e4736": [("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902ba")],
    "4bf92f3577b34da6a3ce929d0e0e4737": [("4bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902ba")],
    # "Let me check both." (span …bb8) is replaced by the final answer of span …bbb
    "4bf92f3577b34da6a3ce929d0e0e4738": [("4bf92f3577b34da6a3ce929d0e0e4738", "20f067aa0ba902bb")],
    # gen_ai.conversation.id conv-budget-7: two turns, one trace each
    "conv-budget-7": [
        ("4bf92f3577b34da6a3ce929d0e0e4739", "30f067aa0ba902ba"),
        ("4bf92f3577b34da6a3ce929d0e0e473a", "40f067aa0ba902ba"),
    ],
}


def test_turn_events_of_otel_traces_are_linked_to_the_span_of_the_answer() -> None:
    datasets, config = traces_request()
    assert {d.session_id for d in datasets} == set(EXPECTED_SPANS)
    _, payload = evaluated(datasets, config)
    linked: dict[str, list[tuple[str, str]]] = {}
    for record in records(payload):
        plain = attributes(record)
        if plain["gen_ai.evaluation.name"] == "answer_correctness":
            linked.setdefault(plain["gen_ai.conversation.id"], []).append((record["traceId"], record["spanId"]))
        else:  # tool events of a turn are linked to the same span as its answer's
            assert (record["traceId"], record["spanId"]) in EXPECTED_SPANS[plain["gen_ai.conversation.id"]]
    assert linked == EXPECTED_SPANS


def test_conversation_events_link_to_the_trace_only_when_the_conversation_has_one() -> None:
    datasets, config = traces_request()
    with_goals = [d.model_copy(update={"goal": "the user gets the answer"}) for d in datasets]
    _, payload = evaluated(with_goals, config)
    goals = {
        attributes(r)["gen_ai.conversation.id"]: r
        for r in records(payload)
        if attributes(r)["gen_ai.evaluation.name"] == "goal"
    }
    single = goals["4bf92f3577b34da6a3ce929d0e0e4736"]
    assert single["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736" and "spanId" not in single
    assert "traceId" not in goals["conv-budget-7"] and "spanId" not in goals["conv-budget-7"]  # two traces


OTLP_FORMATS = {"otel", "openinference"}
"""The formats whose traces are OpenTelemetry spans (OpenInference's are OTLP spans read by the otel rules)."""


@pytest.mark.parametrize("name", sorted(name for name, (kind, _) in TRACE_EXAMPLES.items() if kind not in OTLP_FORMATS))
def test_other_trace_formats_link_nothing(name: str) -> None:
    trace_format, task_key = TRACE_EXAMPLES[name]
    lines = (TRACES / name).with_suffix(".references.jsonl").read_text().splitlines()
    references = [json.loads(line) for line in lines if line.strip()]
    raw, _, _ = datasets_from_traces(
        trace_format, json.loads((TRACES / name).read_text()), references, task_key=task_key
    )
    config = EvaluationConfig(require_goal=False)  # the offline judge abstains on goals
    _, payload = evaluated([Dataset.model_validate(d) for d in raw], config)
    assert records(payload) and not any("traceId" in r or "spanId" in r for r in records(payload))


def test_datasets_that_are_not_the_results_are_refused() -> None:
    datasets, config = example("calculator.json")
    result = evaluate_sync(datasets, ReferenceJudge(), config)
    with pytest.raises(ValueError, match="1 datasets for 2 conversations"):
        evaluation_events(result, datasets[:1])
    with pytest.raises(ValueError, match="is not the result's conversation"):
        evaluation_events(result, datasets[::-1])


def test_a_turn_without_a_span_serialises_as_before_and_a_bad_span_is_named() -> None:
    datasets, _ = example("calculator.json")
    turn = datasets[0].conversation[0].model_dump(mode="json")
    assert "trace_span" not in turn
    assert Batch.model_validate(turn).model_dump(mode="json") == turn
    with pytest.raises(ValidationError) as refused:
        Batch.model_validate({**turn, "trace_span": {"trace_id": "abc", "span_id": "00f067aa0ba902ba"}})
    assert refused.value.errors()[0]["loc"] == ("trace_span", "trace_id")


def test_openinference_spans_link_each_turn_to_its_answer_span() -> None:
    (name,) = [name for name, (kind, _) in TRACE_EXAMPLES.items() if kind == "openinference"]
    trace_format, task_key = TRACE_EXAMPLES[name]
    spans = json.loads((TRACES / name).read_text())
    lines = (TRACES / name).with_suffix(".references.jsonl").read_text().splitlines()
    references = [json.loads(line) for line in lines if line.strip()]
    raw, _, _ = datasets_from_traces(trace_format, spans, references, task_key=task_key)
    _, payload = evaluated([Dataset.model_validate(d) for d in raw], EvaluationConfig(require_goal=False))
    linked = [r for r in records(payload) if "spanId" in r]
    # Every answer event names a span of the example file (read from the file, not from our output).
    known = {
        (span["traceId"].lower(), span["spanId"].lower())
        for request in (spans if isinstance(spans, list) else [spans])
        for resource in request.get("resourceSpans", [])
        for scope in resource.get("scopeSpans", [])
        for span in scope.get("spans", [])
    }
    answers = [r for r in records(payload) if attributes(r)["gen_ai.evaluation.name"] == "answer_correctness"]
    assert answers and all("spanId" in r for r in answers)
    assert {(r["traceId"], r["spanId"]) for r in linked} <= known
