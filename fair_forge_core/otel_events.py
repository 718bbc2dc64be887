"""An evaluation's verdicts as OpenTelemetry `gen_ai.evaluation.result` events (OTLP JSON).

The convention followed: the OpenTelemetry GenAI semantic conventions as released in
semantic-conventions **v1.41.1** — the event in `model/gen-ai/events.yaml` and
`docs/gen-ai/gen-ai-events.md` ("Event: gen_ai.evaluation.result"), its attributes in
`model/gen-ai/registry.yaml` (https://github.com/open-telemetry/semantic-conventions/blob/v1.41.1/docs/gen-ai/gen-ai-events.md),
the last release that holds them before they moved to
https://github.com/open-telemetry/semantic-conventions-genai, whose `model/gen-ai/events.yaml`
keeps the event's name and attributes. The event's status there is "development".

One event per verdict (`EVALUATIONS`, the values of `gen_ai.evaluation.name`):

- per turn: ``answer_correctness`` (score: the judge's `answer_score`; label ``pass`` when the
  answer is correct, i.e. score ≥ `config.threshold`, else ``fail``; explanation: the judge's
  reasoning); ``tool_correctness`` on turns with expected tools (score: the rubric's
  `overall_correctness`; label by its `is_correct`; explanation: its reasoning); ``tool_policy``
  on turns with a tool policy (no score: a policy is kept or broken; label ``pass`` / ``fail``;
  explanation: the broken rules);
- per conversation: ``end_state`` when it has an expected state (no score; label by `matches`;
  explanation: how many keys disagree) and ``goal`` when it has a goal (score: the goal's
  score; label by `goal_achieved`; explanation: the judge's reasoning).

A verdict that could not be reached (an unscored turn, an unjudged goal) is an event with
`error.type` and no score or label, the reason in `gen_ai.evaluation.explanation`. The
`error.type` values (the convention asks for them to be documented) are `metrics.unscored_cause`'s:
``deadline`` (the time budget stopped it), ``cost_cap`` (the cost cap did), ``abstained`` (the
offline judge abstained), ``judge_error`` (a provider that failed after its retries, a reply
that never parsed); and ``_OTHER`` (the convention's fallback) for a verdict not reached
without a reason given.

Linking: a turn of a trace imported from OpenTelemetry spans carries the trace and span ids of
the span whose output gave its answer (`schemas.TraceSpan`, set by the `otel` importer); its
events get that `traceId` and `spanId` — the convention's "parented to the GenAI operation
span being evaluated". A conversation's events get its `traceId` when all its linked turns
share one trace (no `spanId`: no one span is the conversation), none otherwise. Other inputs
(requests, other trace formats) have no OpenTelemetry ids: their events are not linked. Every
event also names what it judged: `gen_ai.conversation.id` (the conversation's `session_id`; a
registry attribute of the same conventions, not one the event lists) and, outside the
conventions' namespace, ``fair_forge.qa_id`` (turn events) and ``fair_forge.task_id`` (when
the conversation has one).

Encoding: the OTLP/JSON encoding of an `ExportLogsServiceRequest` (opentelemetry-proto
`docs/specification.md`, "JSON Protobuf Encoding"; `opentelemetry/proto/logs/v1/logs.proto`):
``resourceLogs`` → ``scopeLogs`` → ``logRecords``, each with ``eventName``, ``timeUnixNano``
and ``observedTimeUnixNano`` (nanoseconds as decimal strings: 64-bit integers), ``traceId`` /
``spanId`` as hex, attributes as ``{key, value: {stringValue | doubleValue}}``. The resource
is ``service.name`` ``fair-forge`` and ``service.version``; the scope is this module.
Pure: no file, clock or network (the caller gives the time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fair_forge_core import __version__
from fair_forge_core.metrics import unscored_cause
from fair_forge_core.schemas import (
    ConversationMetrics,
    Dataset,
    EvaluationResult,
    InteractionResult,
    ToolCorrectnessScore,
)

SEMCONV_VERSION = "1.41.1"
"""The semantic-conventions release whose `gen_ai.evaluation.result` this module follows."""

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE_NAME = "fair_forge_core.otel_events"
EVALUATIONS = ("answer_correctness", "tool_correctness", "tool_policy", "end_state", "goal")
"""The values of `gen_ai.evaluation.name`, in the order a conversation's events come."""
ERROR_TYPES = ("deadline", "cost_cap", "abstained", "judge_error", "_OTHER")
"""The values of `error.type` (see the module docstring)."""

Attribute = str | float


@dataclass
class EvaluationEvent:
    """One `gen_ai.evaluation.result` event: its attributes (convention names, and the
    ``fair_forge.*`` ones) and the trace / span it is linked to (hex, or None)."""

    attributes: dict[str, Attribute]
    trace_id: str | None = None
    span_id: str | None = None
    name: str = field(default=EVENT_NAME)


def evaluation_events(result: EvaluationResult, datasets: Sequence[Dataset] | None = None) -> list[EvaluationEvent]:
    """The events of `result`, conversation by conversation (turn events first, in turn order,
    then the conversation's), linked through `datasets` — the request's, in the result's order
    (the evaluation keeps it) — when given. A result without per-turn detail (`interactions`
    left out) has no turn events. A `datasets` that is not the result's (another count of
    conversations or turns, another `session_id`) is a `ValueError`."""
    conversations = result.per_conversation_metrics
    if datasets is not None and len(datasets) != len(conversations):
        raise ValueError(f"{len(datasets)} datasets for {len(conversations)} conversations of the result")
    events: list[EvaluationEvent] = []
    for index, metrics in enumerate(conversations):
        spans = _spans(metrics, datasets[index] if datasets is not None else None)
        common: dict[str, Attribute] = {"gen_ai.conversation.id": metrics.session_id}
        if metrics.task_id is not None:
            common["fair_forge.task_id"] = metrics.task_id
        for turn, interaction in enumerate(metrics.interactions or []):
            trace_id, span_id = spans[turn] if spans else (None, None)
            here = {**common, "fair_forge.qa_id": interaction.qa_id}
            tools = metrics.tool_correctness_scores[turn] if turn < len(metrics.tool_correctness_scores) else None
            for attributes in _turn_verdicts(interaction, tools):
                events.append(EvaluationEvent({**attributes, **here}, trace_id, span_id))
        traces = {trace for trace, _ in spans if trace is not None}
        trace_id = traces.pop() if len(traces) == 1 and all(t is not None for t, _ in spans) else None
        events += [EvaluationEvent({**a, **common}, trace_id) for a in _conversation_verdicts(metrics)]
    return events


def _spans(metrics: ConversationMetrics, dataset: Dataset | None) -> list[tuple[str | None, str | None]]:
    """`(trace id, span id)` of each turn (lower-case hex; None where the turn has no span)."""
    if dataset is None:
        return []
    if dataset.session_id != metrics.session_id or len(dataset.conversation) != metrics.total_interactions:
        raise ValueError(f"dataset {dataset.session_id!r} is not the result's conversation {metrics.session_id!r}")
    return [
        (None, None) if b.trace_span is None else (b.trace_span.trace_id.lower(), b.trace_span.span_id.lower())
        for b in dataset.conversation
    ]


def _turn_verdicts(interaction: InteractionResult, tools: ToolCorrectnessScore | None) -> list[dict[str, Attribute]]:
    verdicts = [
        _verdict(
            "answer_correctness",
            interaction.answer_score,
            interaction.answer_correct,
            interaction.judge_reasoning,
            interaction.error,
        )
    ]
    if tools is not None:
        verdicts.append(_verdict("tool_correctness", tools.overall_correctness, tools.is_correct, tools.reasoning))
    if interaction.tool_policy is not None:
        broken = "; ".join(v.message for v in interaction.tool_policy.violations)
        verdicts.append(_verdict("tool_policy", None, interaction.tool_policy.passed, broken or None))
    return verdicts


def _conversation_verdicts(metrics: ConversationMetrics) -> list[dict[str, Attribute]]:
    verdicts = []
    if metrics.state_check is not None:
        check = metrics.state_check
        said = f"{check.mismatched} of {check.checked} keys of the expected end state disagree"
        verdicts.append(_verdict("end_state", None, check.matches, said))
    if metrics.goal_check is not None:
        goal = metrics.goal_check
        verdicts.append(_verdict("goal", goal.score, goal.goal_achieved, goal.reasoning, goal.error))
    return verdicts


def _verdict(
    name: str, score: float | None, passed: bool | None, explanation: str | None, error: str | None = None
) -> dict[str, Attribute]:
    """The attributes of one verdict: a verdict not reached (`passed` None) has `error.type`
    and its `error` as the explanation; a reached one has its label and, when it has one, its
    score (as a double: the attribute's type)."""
    attributes: dict[str, Attribute] = {"gen_ai.evaluation.name": name}
    if passed is None:
        attributes["error.type"] = _error_type(error)
        explanation = error or explanation
    else:
        if score is not None:
            attributes["gen_ai.evaluation.score.value"] = float(score)
        attributes["gen_ai.evaluation.score.label"] = "pass" if passed else "fail"
    if explanation:
        attributes["gen_ai.evaluation.explanation"] = explanation
    return attributes


def _error_type(error: str | None) -> str:
    """A reason as one of `ERROR_TYPES` (low cardinality, as the convention asks)."""
    return "_OTHER" if error is None else unscored_cause(error)


def otlp_logs_json(events: Sequence[EvaluationEvent], time_unix_nano: int) -> dict[str, Any]:
    """`events` as the OTLP/JSON of one `ExportLogsServiceRequest` (see the module docstring),
    each record at `time_unix_nano` (the evaluation's end, from the caller). An event without a
    trace has neither `traceId` nor `spanId` (the proto reads an absent id as no link)."""
    if time_unix_nano < 0:
        raise ValueError("time_unix_nano is a count of nanoseconds since 1970, ≥ 0")
    return {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [
                        _key_value("service.name", "fair-forge"),
                        _key_value("service.version", __version__),
                    ]
                },
                "scopeLogs": [
                    {
                        "scope": {"name": SCOPE_NAME, "version": __version__},
                        "logRecords": [_record(event, time_unix_nano) for event in events],
                    }
                ],
            }
        ]
    }


def _record(event: EvaluationEvent, time_unix_nano: int) -> dict[str, Any]:
    record: dict[str, Any] = {
        "timeUnixNano": str(time_unix_nano),
        "observedTimeUnixNano": str(time_unix_nano),
        "eventName": event.name,
    }
    if event.trace_id is not None:
        record["traceId"] = event.trace_id
        if event.span_id is not None:
            record["spanId"] = event.span_id
    record["attributes"] = [_key_value(key, value) for key, value in event.attributes.items()]
    return record


def _key_value(key: str, value: Attribute) -> dict[str, Any]:
    """An OTLP `KeyValue`: text as `stringValue`, a number as `doubleValue`."""
    return {"key": key, "value": {"stringValue": value} if isinstance(value, str) else {"doubleValue": value}}
