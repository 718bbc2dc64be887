"""An evaluation's verdicts as OpenTelemetry `gen_ai.evaluation.result` events (OTLP JSON).

The convention followed: the OpenTelemetry GenAI semantic conventions, now in
https://github.com/open-telemetry/semantic-conventions-genai (no tagged release; its
`model/manifest.yaml` declares the schema URL `https://opentelemetry.io/schemas/gen-ai-dev/1.42.0-dev`,
stability "development"), read at commit `GENAI_SEMCONV_COMMIT` (6fd0d763…): the event in
`model/gen-ai/events.yaml` (`gen_ai.evaluation.result`: `gen_ai.evaluation.name` required,
`.score.value` and `.score.label` conditionally required "if applicable", `.explanation`
recommended, `gen_ai.response.id` recommended "when available", and the `attributes.gen_ai.error`
group's `error.type`), the same name and attributes as in core semantic-conventions **v1.41.1**
(`SEMCONV_VERSION`, `docs/gen-ai/gen-ai-events.md`), the last core release that holds them.
`gen_ai.response.id` is never set: the events are linked to the evaluated span instead (below), and
a request's turn keeps no response id (`schemas.TraceSpan` holds the span's ids only).

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

Proposed attributes (`evaluation_events(..., proposed=ProposedRun)`, `evaluate --otel-proposed`;
without them the events are exactly as above): names from open proposals, which may still change —
evaluator provenance from semantic-conventions-genai PR #359 and run grouping from issue #79 (its
`test.*` part tracked in #422), on every event:

- ``gen_ai.evaluation.evaluator.type`` (#359): ``llm_judge`` for a result of a check that asks the
  run's judge (`ProposedRun.judge_checks`) when a judge of the run is not offline (the judge
  registry's say for its `JudgeProvenance.class_path`); ``deterministic`` for a check that asks
  no judge, and for one asking only offline judges (`ReferenceJudge`'s rules). A cascade counts
  as ``llm_judge`` (its LLM stage decides what its offline stage leaves; a turn's `judged_by` says
  which did).
- ``gen_ai.evaluation.evaluator.id`` (#359): for a check that asks the judge, the judge's
  `identity` (`provenance.judges[0].identity`, the sha256 of what decides its verdicts), or for an
  ensemble the sha256 of the JSON list of its judges' identities in request order (compact, no
  spaces); for a check that asks none, the check's `name`.
- ``gen_ai.evaluation.evaluator.version`` (#359): the fair-forge version that ran the check
  (`provenance.version`), for every check: it fixes the judge's prompts and the rules alike.
- ``gen_ai.evaluation.reference_set.id`` (#359): `provenance.datasets_hash`, the sha256 of the
  conversations and references judged.
- ``test.suite.run.id`` (#79, #422): `ProposedRun.run_id`, the caller's id of this evaluation
  (`evaluate`: a random UUID per run), the same on every event.
- ``test.suite.name`` (core registry `model/test/registry.yaml`): the conversation's
  `assistant_id`, as the JUnit report names its suites.
- ``test.case.id`` (#79, #422): the conversation's `task_id`, else its `session_id` — the case of
  the JUnit report (`exports.cases`): a task's conversations are attempts of one case.
- ``test.case.result.status`` (core registry, values ``pass`` | ``fail``): this conversation's
  verdict, ``pass`` when fully correct, ``fail`` when scored and not; absent when it is unscored
  (the registry has no value for it; #422 asks for one). Per attempt: a task's JUnit case fails when
  any attempt fails, its events say each attempt's own status.

A result without `provenance` has no ``evaluator.id`` and no ``evaluator.type`` on a result of a
check that asks the judge (the judge is not known), and no ``reference_set.id``; its versions are
this package's.

Encoding: the OTLP/JSON encoding of an `ExportLogsServiceRequest` (opentelemetry-proto
`docs/specification.md`, "JSON Protobuf Encoding"; `opentelemetry/proto/logs/v1/logs.proto`):
``resourceLogs`` → ``scopeLogs`` → ``logRecords``, each with ``eventName``, ``timeUnixNano``
and ``observedTimeUnixNano`` (nanoseconds as decimal strings: 64-bit integers), ``traceId`` /
``spanId`` as hex, attributes as ``{key, value: {stringValue | doubleValue}}``. The resource
is ``service.name`` ``fair-forge`` and ``service.version``; the scope is this module.
Pure: no file, clock or network (the caller gives the time).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

from fair_forge_core import __version__
from fair_forge_core.schemas import (
    CheckCause,
    CheckResult,
    ConversationMetrics,
    Dataset,
    EvaluationConfig,
    EvaluationResult,
)

SEMCONV_VERSION = "1.41.1"
"""The last core semantic-conventions release holding `gen_ai.evaluation.result` (the error and
test registries' version)."""
GENAI_SEMCONV_REPOSITORY = "https://github.com/open-telemetry/semantic-conventions-genai"
GENAI_SEMCONV_COMMIT = "6fd0d763a092db245a54104fc1124031eb3c51d2"
"""The commit of `GENAI_SEMCONV_REPOSITORY` whose `model/gen-ai/events.yaml` this module was checked against."""
GENAI_SCHEMA_URL = "https://opentelemetry.io/schemas/gen-ai-dev/1.42.0-dev"
"""The schema URL that repository's `model/manifest.yaml` declares (not written into the events)."""

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE_NAME = "fair_forge_core.otel_events"
ERROR_TYPES = (*get_args(CheckCause), "_OTHER")
"""The values of `error.type` (see the module docstring)."""

Attribute = str | float


@dataclass(frozen=True)
class ProposedRun:
    """What the proposed attributes (module docstring) need that a result does not hold: the
    evaluation's `run_id` and the names of the checks that ask its judge (`proposed_run`)."""

    run_id: str
    judge_checks: frozenset[str]


def proposed_run(run_id: str, config: EvaluationConfig, datasets: Sequence[Dataset]) -> ProposedRun:
    """The `ProposedRun` of an evaluation of `datasets` under `config` named `run_id`: the checks
    that ask the judge are the active ones (`checks.active_checks`) with a question
    (`Check.questions`) for some dataset — as `provenance_of` tells a check that judges."""
    from fair_forge_core.checks import active_checks

    checks = active_checks(config)
    return ProposedRun(run_id, frozenset(c.name for c in checks if any(c.questions(d) for d in datasets)))


@dataclass
class EvaluationEvent:
    """One `gen_ai.evaluation.result` event: its attributes (convention names, and the
    ``fair_forge.*`` ones) and the trace / span it is linked to (hex, or None)."""

    attributes: dict[str, Attribute]
    trace_id: str | None = None
    span_id: str | None = None
    name: str = field(default=EVENT_NAME)


def evaluation_events(
    result: EvaluationResult, datasets: Sequence[Dataset] | None = None, *, proposed: ProposedRun | None = None
) -> list[EvaluationEvent]:
    """The events of `result`, conversation by conversation (turn events first, in turn order,
    then the conversation's), linked through `datasets` — the request's, in the result's order
    (the evaluation keeps it) — when given. A result without per-turn detail (`interactions`
    left out) has no turn events. A `datasets` that is not the result's (another count of
    conversations or turns, another `session_id`) is a `ValueError`. With `proposed`, every event
    also has the proposed attributes (module docstring), after all the others; without it (the
    default) the events are as they were before the proposed attributes existed."""
    conversations = result.per_conversation_metrics
    if datasets is not None and len(datasets) != len(conversations):
        raise ValueError(f"{len(datasets)} datasets for {len(conversations)} conversations of the result")
    evaluators = None if proposed is None else _Evaluators.of(result, proposed)
    events: list[EvaluationEvent] = []
    for index, metrics in enumerate(conversations):
        spans = _spans(metrics, datasets[index] if datasets is not None else None)
        common: dict[str, Attribute] = {"gen_ai.conversation.id": metrics.session_id}
        if metrics.task_id is not None:
            common["fair_forge.task_id"] = metrics.task_id
        traces = {trace for trace, _ in spans if trace is not None}
        conversation_trace = traces.pop() if len(traces) == 1 and all(t is not None for t, _ in spans) else None
        grouping = {} if proposed is None else _grouping(metrics, proposed.run_id)
        for check in metrics.checks:
            extra = {} if evaluators is None else {**evaluators.of_check(check.name), **grouping}
            if check.turn is None:
                events.append(EvaluationEvent({**_verdict(check), **common, **extra}, conversation_trace))
                continue
            trace_id, span_id = spans[check.turn] if spans else (None, None)
            qa_id = metrics.interactions[check.turn].qa_id if metrics.interactions else str(check.turn)
            here = {**common, "fair_forge.qa_id": qa_id}
            events.append(EvaluationEvent({**_verdict(check), **here, **extra}, trace_id, span_id))
    return events


@dataclass(frozen=True)
class _Evaluators:
    """The evaluator attributes of a run's results (module docstring, #359), check by check."""

    judge_checks: frozenset[str]
    judge_id: str | None
    """The judge's identity (an ensemble's: the hash of its identities); None without provenance."""
    judge_type: str | None
    version: str
    reference_set: str | None

    @classmethod
    def of(cls, result: EvaluationResult, proposed: ProposedRun) -> _Evaluators:
        provenance = result.provenance
        if provenance is None:
            return cls(proposed.judge_checks, None, None, __version__, None)
        from fair_forge_core.judges.kinds import registration_for_class_path

        identities = [judge.identity for judge in provenance.judges]
        if len(identities) == 1:
            judge_id = identities[0]
        else:  # an ensemble is one evaluator: its judges in request order, hashed as one
            judge_id = hashlib.sha256(json.dumps(identities, separators=(",", ":")).encode()).hexdigest()
        llm = any(not registration_for_class_path(judge.class_path).offline for judge in provenance.judges)
        judge_type = "llm_judge" if llm else "deterministic"
        return cls(proposed.judge_checks, judge_id, judge_type, provenance.version, provenance.datasets_hash)

    def of_check(self, name: str) -> dict[str, Attribute]:
        attributes: dict[str, Attribute] = {}
        if name not in self.judge_checks:
            attributes = {"gen_ai.evaluation.evaluator.id": name, "gen_ai.evaluation.evaluator.type": "deterministic"}
        elif self.judge_id is not None and self.judge_type is not None:
            attributes = {
                "gen_ai.evaluation.evaluator.id": self.judge_id,
                "gen_ai.evaluation.evaluator.type": self.judge_type,
            }
        attributes["gen_ai.evaluation.evaluator.version"] = self.version
        if self.reference_set is not None:
            attributes["gen_ai.evaluation.reference_set.id"] = self.reference_set
        return attributes


def _grouping(metrics: ConversationMetrics, run_id: str) -> dict[str, Attribute]:
    """The run-grouping attributes of a conversation's events (module docstring, #79, core `test.*`)."""
    attributes: dict[str, Attribute] = {
        "test.suite.run.id": run_id,
        "test.suite.name": metrics.assistant_id,
        "test.case.id": metrics.task_id if metrics.task_id is not None else metrics.session_id,
    }
    if metrics.is_scored and metrics.is_fully_correct is not None:
        attributes["test.case.result.status"] = "pass" if metrics.is_fully_correct else "fail"
    return attributes


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
