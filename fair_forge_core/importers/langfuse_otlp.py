"""Langfuse SDK spans as exported over OTLP → the observations `langfuse_observations` reads.

Langfuse's Python SDK (v3 and later) is built on OpenTelemetry: its `@observe`, its
`start_as_current_observation` and its LangChain `CallbackHandler` record spans whose
`langfuse.*` attributes (`langfuse._client.attributes.LangfuseOtelSpanAttributes`) say what the
Langfuse server is to make of them, and export them over OTLP to the server, which ingests each
span as one observation. A capture of that export (an OTel Collector's file exporter, or any
shape `otlp_shapes` decodes: OTLP protobuf, OTLP/JSON, protobuf JSON, Tempo, Jaeger, Phoenix)
is read here by `otel_spans.read_spans`, and each span turned into the observation the server's
ingestion makes of it; those go to `langfuse_observations.traces_of_observations`, so that
grouping, the root, tool results, the LangChain `ToolMessage` envelope and errors follow the
very rules of a `GET /api/public/v2/observations` page. The input, exactly:

- it is Langfuse's when at least one span has an attribute named ``langfuse.…``; when none has
  (plain GenAI or OpenInference spans), that is a `TraceError` on ``requests`` (the caller,
  `formats.datasets_from_traces`, then names the shape and ``--from otel``);
- every span is an observation (a span without ``langfuse.*`` attributes too, as the server
  ingests it: a SPAN, plumbing that is not read but may be a parent). Its fields, by the SDK's
  attribute names: `id` the span id, `traceId` the trace id, `parentObservationId` the parent
  span id (None for a root), `startTime` / `endTime` the span's times (ISO 8601, UTC, to the
  microsecond); `type` ``langfuse.observation.type`` upper-cased (``generation`` →
  GENERATION, ``tool`` → TOOL, …), else SPAN; `name` the span's name; `level`
  ``langfuse.observation.level``, else ERROR when the span's status is ERROR, else DEFAULT;
  `statusMessage` ``langfuse.observation.status_message``, else the span status's message;
  `input` / `output` ``langfuse.observation.input`` / ``.output``, else
  ``langfuse.trace.input`` / ``.output`` (what `update_trace` writes on a span), each JSON text
  read as its JSON as in a page; `metadata` the ``langfuse.trace.metadata.<key>`` attributes,
  then the ``langfuse.observation.metadata.<key>`` ones over them, by `<key>` (a value that is
  text holding a JSON object, list or string is read as that JSON: SDK 5 writes every value as
  JSON text, SDK 4 objects and lists); `usageDetails` ``langfuse.observation.usage_details``
  (JSON text of an object; anything else: none); `model` ``langfuse.observation.model.name``;
  `sessionId` ``langfuse.session.id``, else ``session.id``; `userId` ``langfuse.user.id``,
  else ``user.id``; `environment`, `release`, `version` ``langfuse.environment``,
  ``langfuse.release``, ``langfuse.version``; `tags` ``langfuse.trace.tags``;
  `isRootObservation` true for a span without parent or with
  ``langfuse.internal.is_app_root`` true; `traceName` the first ``langfuse.trace.name`` of the
  trace's spans (in input order), else None (the trace's name is then its root's span name);
- fields are named by the span's path in the input (``requests[0].resourceSpans[0]
  .scopeSpans[0].spans[3]``, or what `otlp_shapes` names for another shape), then the
  observation's field (``….spans[3].output``: that span's ``langfuse.observation.output``).

Costs are left out: the server computes them from its model prices, which the spans do not
carry (``langfuse.observation.cost_details`` aside, which the SDK writes only when given).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fair_forge_core.importers.langfuse_observations import Trace, traces_of_observations
from fair_forge_core.importers.otel_spans import LANGFUSE_PREFIX, Span, id_key, read_spans
from fair_forge_core.importers.trace import TraceError, parse_json_text
from fair_forge_core.importers.trace_shapes import SPAN_FORMATS, sniff_shape

TRACE_METADATA = "langfuse.trace.metadata."
OBSERVATION_METADATA = "langfuse.observation.metadata."
_FIELDS = {  # observation field: the attributes that give it, the first present winning
    "level": ("langfuse.observation.level",),
    "statusMessage": ("langfuse.observation.status_message",),
    "input": ("langfuse.observation.input", "langfuse.trace.input"),
    "output": ("langfuse.observation.output", "langfuse.trace.output"),
    "model": ("langfuse.observation.model.name",),
    "sessionId": ("langfuse.session.id", "session.id"),
    "userId": ("langfuse.user.id", "user.id"),
    "environment": ("langfuse.environment",),
    "release": ("langfuse.release",),
    "version": ("langfuse.version",),
    "tags": ("langfuse.trace.tags",),
}


def is_spans(data: Any) -> bool:
    """Whether `data` has the shape of OTLP spans (`trace_shapes.sniff_shape`: one that
    ``--from otel`` reads), so that `langfuse` reads it here."""
    shape = sniff_shape(data)
    return shape is not None and shape.formats == SPAN_FORMATS


def traces_of_spans(data: Any) -> list[Trace]:
    """The Langfuse traces of the OTLP spans in `data` (module docstring)."""
    spans, root, _ = read_spans(data)
    if not any(key.startswith(LANGFUSE_PREFIX) for span in spans for key in span.attrs):
        raise TraceError(
            root,
            "no span has a langfuse.* attribute: not spans of the Langfuse SDK (its CallbackHandler, @observe)",
        )
    rows = [(observation(span), span.where) for span in spans]
    names: dict[str, Any] = {}
    for span, (row, _) in zip(spans, rows, strict=True):
        name = span.attrs.get("langfuse.trace.name")
        if name not in (None, ""):
            names.setdefault(row["traceId"], name)
    for row, _ in rows:
        row["traceName"] = names.get(row["traceId"])
    return traces_of_observations(rows)


def observation(span: Span) -> dict[str, Any]:
    """The observation Langfuse's ingestion makes of `span` (module docstring), its `traceName`
    None (`traces_of_spans` sets it from the trace's spans)."""
    attrs = span.attrs
    row: dict[str, Any] = {
        "id": id_key(span.span_id),
        "traceId": id_key(span.trace_id),
        "parentObservationId": id_key(span.parent_id) or None,
        "startTime": _iso(span.start),
        "endTime": _iso(span.end),
        "type": str(attrs.get("langfuse.observation.type") or "span").upper(),
        "name": span.name,
        "isRootObservation": not span.parent_id or attrs.get("langfuse.internal.is_app_root") is True,
    }
    for name, keys in _FIELDS.items():
        row[name] = next((attrs[key] for key in keys if attrs.get(key) is not None), None)
    if row["level"] is None:
        row["level"] = "ERROR" if span.failed else "DEFAULT"
    if row["statusMessage"] is None and span.status:
        row["statusMessage"] = span.status
    row["metadata"] = _metadata(attrs)
    usage = attrs.get("langfuse.observation.usage_details")
    usage = parse_json_text(usage, None) if isinstance(usage, str) else usage
    row["usageDetails"] = usage if isinstance(usage, dict) else {}
    return row


def _metadata(attrs: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for prefix in (TRACE_METADATA, OBSERVATION_METADATA):  # the observation's own over the trace's
        for key, value in attrs.items():
            if key.startswith(prefix):
                metadata[key.removeprefix(prefix)] = _decoded(value)
    return metadata


def _decoded(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "[", '"'):
        return parse_json_text(value, value)
    return value


def _iso(nanoseconds: int) -> str:
    """The time of `nanoseconds` since the epoch, ISO 8601 in UTC to the microsecond (truncated)."""
    seconds, nanos = divmod(nanoseconds, 10**9)
    moment = datetime.fromtimestamp(seconds, UTC) + timedelta(microseconds=nanos // 1000)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")
