"""An evaluation's verdicts as OpenTelemetry `gen_ai.evaluation.result` events (OTLP JSON).

The convention followed: the OpenTelemetry GenAI semantic conventions as released in
semantic-conventions **v1.41.1** — the event in `model/gen-ai/events.yaml` and
`docs/gen-ai/gen-ai-events.md` ("Event: gen_ai.evaluation.result"), its attributes in
`model/gen-ai/registry.yaml` (https://github.com/open-telemetry/semantic-conventions/blob/v1.41.1/docs/gen-ai/gen-ai-events.md),
the last release that holds them before they moved to
https://github.com/open-telemetry/semantic-conventions-genai, whose `model/gen-ai/events.yaml`
keeps the event's name and attributes. The event's status there is "development".

One event per check result (`ConversationMetrics.checks`, docs/checks.md), in the order of
`checks` (a conversation's turn results, turn by turn, then its own); no check is named here, so a
plug-in check's results are events like the built-in ones':

- ``gen_ai.evaluation.name``: the result's `name`;
- a decided result (`outcome` passed or failed): ``gen_ai.evaluation.score.label`` ``pass`` or
  ``fail``, and ``gen_ai.evaluation.score.value`` (a double) when it has a `score` (a check
  that only passes or fails has none);
- an unscored result: ``error.type``, its typed `cause`, and no score or label;
- ``gen_ai.evaluation.explanation``: its `reason` (when not empty), whatever the outcome.

The `error.type` values (the convention asks for them to be documented) are `CheckCause`'s
(`ERROR_TYPES`): ``deadline`` (the time budget stopped it), ``cost_cap`` (the cost cap did),
``abstained`` (the judge declined, in any words), ``judge_error`` (a provider that failed
after its retries, a reply that never parsed), ``not_measured`` (no evidence to decide on), the
causes of a conversation unscored before judging (``not_joined``, ``turns_differ``,
``state_not_reported``, and an agent run's ``agent_error``, ``agent_timeout``, ``agent_malformed``); and ``_OTHER`` (the convention's fallback) for a result unscored
without a cause. An advisory result (`required` false) is an event too: the event reports, it
does not decide. A result without per-turn detail (`interactions` left out) has no turn
results, hence no turn events.

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
from typing import Any, get_args

from fair_forge_core import __version__
from fair_forge_core.schemas import CheckCause, CheckResult, ConversationMetrics, Dataset, EvaluationResult

SEMCONV_VERSION = "1.41.1"
"""The semantic-conventions release whose `gen_ai.evaluation.result` this module follows."""

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE_NAME = "fair_forge_core.otel_events"
ERROR_TYPES = (*get_args(CheckCause), "_OTHER")
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
        traces = {trace for trace, _ in spans if trace is not None}
        conversation_trace = traces.pop() if len(traces) == 1 and all(t is not None for t, _ in spans) else None
        for check in metrics.checks:
            if check.turn is None:
                events.append(EvaluationEvent({**_verdict(check), **common}, conversation_trace))
                continue
            trace_id, span_id = spans[check.turn] if spans else (None, None)
            qa_id = metrics.interactions[check.turn].qa_id if metrics.interactions else str(check.turn)
            here = {**common, "fair_forge.qa_id": qa_id}
            events.append(EvaluationEvent({**_verdict(check), **here}, trace_id, span_id))
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


def _verdict(check: CheckResult) -> dict[str, Attribute]:
    """The attributes of one check result: an unscored one has `error.type` (its cause) and no
    score or label; a decided one has its label and, when it has one, its score (as a double:
    the attribute's type); both explain with the result's reason."""
    attributes: dict[str, Attribute] = {"gen_ai.evaluation.name": check.name}
    if check.outcome == "unscored":
        attributes["error.type"] = check.cause or "_OTHER"
    else:
        if check.score is not None:
            attributes["gen_ai.evaluation.score.value"] = float(check.score)
        attributes["gen_ai.evaluation.score.label"] = "pass" if check.outcome == "passed" else "fail"
    if check.reason:
        attributes["gen_ai.evaluation.explanation"] = check.reason
    return attributes


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
