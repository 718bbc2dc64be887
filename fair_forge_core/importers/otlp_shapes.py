"""OTLP spans in the shapes other tools write them → the OTLP JSON `otel_spans.read_spans` reads
(for both `--from otel` and `--from openinference`: one reader, these decoders in front of it).

`otlp_json(data)` is `data` itself when it is OTLP JSON already (an export request with
`resourceSpans` or `resourceLogs`, a list of them, or a bare list of spans with `spanId`), else
the OTLP JSON of the first of these shapes it has:

- OTLP protobuf: the bytes of an `ExportTraceServiceRequest` (`opentelemetry-proto`), read as
  `MessageToDict` writes it (base64 ids, read as hex by `otel_spans.hex_id`);
- protobuf JSON with the proto field names (`MessageToDict(preserving_proto_field_name=True)`):
  ``resource_spans``, ``scope_spans``, ``trace_id``, ``string_value``…: every snake_case key is
  read as its camelCase (enums as names or integers are read as the reader reads them);
- Grafana Tempo v1, ``{"batches": [{"resource", "instrumentationLibrarySpans" | "scopeSpans":
  [{"instrumentationLibrary" | "scope", "spans"}]}]}``, and v2, ``{"trace": {"resourceSpans" |
  "batches": …}}``: the batches are the request's resources, a library's spans a scope's;
- Jaeger JSON (the query API's ``{"data": [trace]}``, a trace ``{"traceID", "spans",
  "processes"}``), by the OpenTelemetry↔Jaeger mapping (opentelemetry.io, "Jaeger" exporter;
  the Collector's jaeger translator): `operationName` → name; the first `references` item of
  `refType` CHILD_OF → `parentSpanId`; `startTime` and `duration` (µs) → start and end (ns);
  `tags` → attributes (`type` string, bool, int64, float64 or binary), but `span.kind` → kind,
  `otel.status_code` (OK, ERROR) and `otel.status_description` → status, else an `error` tag
  that is true → status ERROR, `otel.scope.name`/`.version` (or `otel.library.*`) → the scope,
  and Jaeger's own `internal.span.format` and `w3c.tracestate` dropped; `logs` → events, the
  `event` field their name, the other fields their attributes; a span's `processID` (or
  inline `process`) → its resource (`serviceName` → `service.name`, `tags` → attributes). Hex
  ids shorter than OTLP's (Jaeger drops leading zeros) are padded with zeros;
- Phoenix's ``GET /v1/projects/{project}/spans/otlpv1`` page (``{"data": [OtlpSpan],
  "next_cursor"}``: snake_case OTLP spans, no resource);
- Phoenix spans (``GET /v1/projects/{project}/spans``, ``{"data": [Span], "next_cursor"}``, and
  `arize-phoenix-client`'s `spans.get_spans()`, a list of them): ``{"name", "context":
  {"trace_id", "span_id"}, "parent_id", "span_kind", "start_time", "end_time" (ISO 8601, UTC
  when no offset), "status_code" (OK, ERROR, UNSET), "status_message", "attributes" (a flat
  object), "events": [{"name", "timestamp", "attributes"}]}``; Phoenix takes
  `openinference.span.kind` out of the attributes into `span_kind`: it is put back (but
  UNKNOWN, Phoenix's word for none).

An export request's shapes may also be the items of a list (JSON Lines). Each decoded span
carries `WHERE`, its field in the input as given: the request's root (``requests[i]``, a
single request being ``requests[0]``) then its path inside (``requests[0].data[2].spans[5]``,
``requests[0].batches[0].instrumentationLibrarySpans[0].spans[3]``), or ``spans[n]`` for a
list of Phoenix spans; a field the decoder reads itself (a Jaeger tag, a Phoenix time) that it
cannot read is a `TraceError` naming it. Linear in the input.
"""

from __future__ import annotations

import importlib
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from fair_forge_core.importers.trace import TraceError, object_list

WHERE = "\0where"
"""The key of a decoded span's field path in the input (read by `otel_spans`)."""

_SNAKE = re.compile(r"_([a-z0-9])")
_RESOURCES = ("resource_spans", "batches", "resourceSpans")
_SCOPES = ("scopeSpans", "instrumentationLibrarySpans")
_KINDS = {"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
_STATUS = {"OK": 1, "ERROR": 2}
_JAEGER_DROPPED = ("internal.span.format", "w3c.tracestate")
_ISO = re.compile(r"(?P<head>[^.]*T\d\d:\d\d:\d\d)(?:\.(?P<fraction>\d+))?(?P<zone>.*)")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
PROTOBUF_NEEDS = (
    "is OTLP protobuf, read with the opentelemetry-proto package: pip install opentelemetry-proto"
    " (or fair-forge-agentic[otel])"
)


def otlp_json(data: Any) -> Any:
    """`data` as OTLP JSON (module docstring): itself when it is already, or when no shape here
    is its (the reader then says what it lacks)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return from_protobuf(bytes(data))
    if isinstance(data, dict):
        decoded = _request(data, "requests[0]")
        return data if decoded is None else [decoded]
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return data
    if _is_phoenix_span(data[0]):
        return [_phoenix_span(span, f"spans[{n}]") for n, span in enumerate(object_list(data, "spans"))]
    if "span_id" in data[0]:  # a bare list of snake_case spans
        return [_span(span, f"spans[{n}]") for n, span in enumerate(object_list(data, "spans"))]
    items = [_request(item, f"requests[{i}]") if isinstance(item, dict) else None for i, item in enumerate(data)]
    if all(item is None for item in items):
        return data  # OTLP JSON already (or nothing decodable): no copy
    return [item if decoded is None else decoded for item, decoded in zip(data, items, strict=True)]


def from_protobuf(data: bytes) -> dict[str, Any]:
    """The OTLP JSON of an OTLP protobuf `ExportTraceServiceRequest` (ids in base64, as
    `MessageToDict` writes them); a `TraceError` on ``requests`` when it is none, or when
    `opentelemetry-proto` is not installed."""
    try:  # imported by name: optional, and protobuf has no type stubs here
        json_format = importlib.import_module("google.protobuf.json_format")
        message = importlib.import_module("google.protobuf.message")
        service = importlib.import_module("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    except ImportError:
        raise TraceError("requests", PROTOBUF_NEEDS) from None
    request = service.ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except (message.DecodeError, ValueError, RecursionError):
        raise TraceError("requests", "is neither JSON nor an OTLP protobuf ExportTraceServiceRequest") from None
    decoded: dict[str, Any] = json_format.MessageToDict(request)
    return decoded


def looks_like_protobuf(data: bytes) -> bool:
    """Whether bytes that are no JSON are OTLP protobuf, by content: an encoder writes field 1
    (`resource_spans`, length-delimited) first, so the first byte is 0x0A; and the bytes are no
    UTF-8 text (span ids are random bytes) or parse as an `ExportTraceServiceRequest` with a span."""
    if data[:1] != b"\n":
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    try:
        decoded = from_protobuf(data)
    except TraceError:
        return False
    return any(scope.get("spans") for r in decoded.get("resourceSpans", []) for scope in r.get("scopeSpans", []))


def _request(raw: dict[str, Any], where: str) -> dict[str, Any] | None:
    """The OTLP JSON request of one object of a shape above; None when it is OTLP JSON already
    or of no shape here."""
    if "resourceSpans" in raw or "resourceLogs" in raw:
        return None
    if isinstance(raw.get("trace"), dict):  # Tempo v2
        inner = raw["trace"]
        return _resources(inner, f"{where}.trace") if "resourceSpans" in inner else _request(inner, f"{where}.trace")
    if "resource_spans" in raw or "resource_logs" in raw or "batches" in raw:
        return _resources(raw, where)
    data = raw.get("data")
    first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    if "spans" in first and ("traceID" in first or "processes" in first):
        traces = object_list(data, f"{where}.data")
        return {"resourceSpans": [r for i, t in enumerate(traces) for r in _jaeger(t, f"{where}.data[{i}]")]}
    if _is_phoenix_span(first):
        spans = [_phoenix_span(span, f"{where}.data[{n}]") for n, span in enumerate(object_list(data, f"{where}.data"))]
        return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}
    if "span_id" in first or "trace_id" in first:  # Phoenix's otlpv1 page
        spans = [_span(span, f"{where}.data[{n}]") for n, span in enumerate(object_list(data, f"{where}.data"))]
        return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}
    return None


def _resources(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """Protobuf JSON or Tempo: resources, scopes and spans with their keys in camelCase."""
    key = next((k for k in _RESOURCES if k in raw), "resource_spans")
    resources = []
    for j, resource in enumerate(object_list(raw.get(key), f"{where}.{key}")):
        here, scopes = f"{where}.{key}[{j}]", []
        camel = {_camel_key(k): v for k, v in resource.items()}
        scope_key = next((k for k in _SCOPES if k in camel), "scopeSpans")
        original = next((k for k in resource if _camel_key(k) == scope_key), scope_key)
        for k, scope in enumerate(object_list(camel.get(scope_key), f"{here}.{original}")):
            spans = scope.get("spans")
            at = f"{here}.{original}[{k}].spans"
            scopes.append({"spans": [_span(span, f"{at}[{n}]") for n, span in enumerate(object_list(spans, at))]})
        resources.append({"resource": _camel(camel.get("resource")), "scopeSpans": scopes})
    logs = raw.get("resource_logs", raw.get("resourceLogs"))
    return {"resourceSpans": resources} | ({"resourceLogs": _camel(logs)} if logs is not None else {})


def _span(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """A span of protobuf JSON (snake_case or camelCase keys) in camelCase, naming `where`."""
    span: dict[str, Any] = _camel(raw)
    span[WHERE] = where
    return span


def _camel_key(key: str) -> str:
    return _SNAKE.sub(lambda match: match.group(1).upper(), key) if "_" in key else key


def _camel(value: Any) -> Any:
    """Every key of protobuf JSON in camelCase (attribute keys are values there, never keys)."""
    if isinstance(value, dict):
        return {_camel_key(str(key)): _camel(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_camel(item) for item in value]
    return value


# --- Jaeger ---


def _jaeger(trace: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The resources of one Jaeger trace: a resource per process, a scope per scope name."""
    processes = trace.get("processes")
    processes = {} if processes is None else processes
    if not isinstance(processes, dict):
        raise TraceError(f"{where}.processes", "must be an object of processes by their id")
    groups: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}  # process → (scope, version) → spans
    inline: dict[str, Any] = {}
    for n, raw in enumerate(object_list(trace.get("spans"), f"{where}.spans")):
        span, scope = _jaeger_span(raw, f"{where}.spans[{n}]", trace.get("traceID"))
        process = raw.get("processID")
        if not isinstance(process, str):  # a span with its process inline (no processes table)
            process = f"\0{n}"
            inline[process] = (raw.get("process"), f"{where}.spans[{n}].process")
        groups.setdefault(process, {}).setdefault(scope, []).append(span)
    resources = []
    for process, scopes in groups.items():
        described, at = inline.get(process) or (processes.get(process), f"{where}.processes.{process}")
        resources.append(
            {
                "resource": {"attributes": _process(described, at)},
                "scopeSpans": [
                    {"scope": {"name": s, "version": v}, "spans": spans} for (s, v), spans in scopes.items()
                ],
            }
        )
    return resources


def _jaeger_span(raw: dict[str, Any], where: str, trace_id: Any) -> tuple[dict[str, Any], tuple[str, str]]:
    """A Jaeger span as an OTLP JSON span, and its scope (name, version)."""
    tags = _tags(raw.get("tags"), f"{where}.tags")
    parent = ""
    for r, reference in enumerate(object_list(raw.get("references"), f"{where}.references")):
        if reference.get("refType") == "CHILD_OF":
            parent = _jaeger_id(reference.get("spanID"), 16, f"{where}.references[{r}].spanID")
            break
    start = _micros(raw.get("startTime"), f"{where}.startTime")
    code, message, error = (
        tags.pop("otel.status_code", None),
        tags.pop("otel.status_description", ""),
        tags.pop("error", None),
    )
    scope = (
        str(tags.pop("otel.scope.name", tags.pop("otel.library.name", ""))),
        str(tags.pop("otel.scope.version", tags.pop("otel.library.version", ""))),
    )
    kind = _KINDS.get(str(tags.pop("span.kind", "")).lower(), 0)
    for dropped in _JAEGER_DROPPED:
        tags.pop(dropped, None)
    failed = code == "ERROR" or (code is None and error in (True, "true"))
    events = []
    for e, log in enumerate(object_list(raw.get("logs"), f"{where}.logs")):
        fields = _tags(log.get("fields"), f"{where}.logs[{e}].fields")
        name = fields.pop("event", "")
        at = _micros(log.get("timestamp"), f"{where}.logs[{e}].timestamp")
        events.append({"name": name, "timeUnixNano": str(at), "attributes": fields})
    span = {
        WHERE: where,
        "traceId": _jaeger_id(raw.get("traceID", trace_id), 32, f"{where}.traceID"),
        "spanId": _jaeger_id(raw.get("spanID"), 16, f"{where}.spanID"),
        "parentSpanId": parent,
        "name": raw.get("operationName", ""),
        "kind": kind,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + _micros(raw.get("duration", 0), f"{where}.duration")),
        "attributes": tags,
        "events": events,
        "status": {"code": 2 if failed else _STATUS.get(str(code), 0), "message": str(message or "")},
    }
    return span, scope


def _process(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise TraceError(where, "must be an object {serviceName, tags}")
    attributes = _tags(raw.get("tags"), f"{where}.tags")
    if isinstance(raw.get("serviceName"), str):
        attributes = {"service.name": raw["serviceName"], **attributes}
    return attributes


def _tags(raw: Any, where: str) -> dict[str, Any]:
    """Jaeger `[{key, type, value}]` as attributes; a value its `type` does not fit is an error."""
    tags: dict[str, Any] = {}
    for t, tag in enumerate(object_list(raw, where)):
        kind, value = str(tag.get("type", "string")).lower(), tag.get("value")
        value = "" if value is None else value
        try:
            if kind == "bool":
                value = value if isinstance(value, bool) else {"true": True, "false": False}[str(value).lower()]
            elif kind == "int64":
                value = int(value)
            elif kind == "float64":
                value = float(value)
        except (KeyError, TypeError, ValueError, OverflowError):
            raise TraceError(f"{where}[{t}].value", f"is not the {kind} its type says: {value!r}") from None
        tags[str(tag.get("key"))] = value
    return tags


def _jaeger_id(raw: Any, size: int, where: str) -> str:
    """A Jaeger id: hex, padded with zeros to OTLP's length (`size` digits)."""
    if not isinstance(raw, str) or not re.fullmatch(rf"[0-9a-fA-F]{{1,{size}}}", raw):
        raise TraceError(where, f"must be a hex id of at most {size} digits")
    return raw.rjust(size, "0")


def _micros(raw: Any, where: str) -> int:
    """Microseconds (Jaeger's times) as nanoseconds."""
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise TraceError(where, "must be an integer of microseconds")
    try:
        return int(raw) * 1000
    except ValueError:
        raise TraceError(where, "must be an integer of microseconds") from None


# --- Phoenix ---


def _is_phoenix_span(first: dict[str, Any]) -> bool:
    return "context" in first and "span_kind" in first


def _phoenix_span(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """A Phoenix span (module docstring) as an OTLP JSON span."""
    context = raw.get("context")
    if not isinstance(context, dict):
        raise TraceError(f"{where}.context", "must be an object {trace_id, span_id}")
    if not isinstance(context.get("trace_id"), str) or not context["trace_id"]:
        raise TraceError(f"{where}.context.trace_id", "must be a non-empty hex string")
    attributes = raw.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise TraceError(f"{where}.attributes", "must be an object of attributes")
    kind = raw.get("span_kind")
    if isinstance(kind, str) and kind.upper() != "UNKNOWN" and "openinference.span.kind" not in attributes:
        attributes = {**attributes, "openinference.span.kind": kind}
    events = []
    for e, event in enumerate(object_list(raw.get("events"), f"{where}.events")):
        at = _iso_nanos(event.get("timestamp"), f"{where}.events[{e}].timestamp")
        events.append({"name": event.get("name"), "timeUnixNano": str(at), "attributes": event.get("attributes") or {}})
    start = _iso_nanos(raw.get("start_time"), f"{where}.start_time")
    end = _iso_nanos(raw["end_time"], f"{where}.end_time") if raw.get("end_time") else start
    return {
        WHERE: where,
        "traceId": context.get("trace_id"),
        "spanId": context.get("span_id"),
        "parentSpanId": raw.get("parent_id") or "",
        "name": raw.get("name", ""),
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attributes,
        "events": events,
        "status": {"code": _STATUS.get(str(raw.get("status_code")), 0), "message": raw.get("status_message") or ""},
    }


def _iso_nanos(raw: Any, where: str) -> int:
    """An ISO 8601 time (UTC when it has no offset) as nanoseconds since the epoch, its fraction
    read to the nanosecond (`datetime` alone keeps microseconds)."""
    found = _ISO.fullmatch(raw) if isinstance(raw, str) else None
    try:
        if found is None:
            raise ValueError(raw)
        moment = datetime.fromisoformat(found["head"] + found["zone"])
    except ValueError:
        raise TraceError(where, f"must be an ISO 8601 time: {raw!r}") from None
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    fraction = int((found["fraction"] or "0")[:9].ljust(9, "0"))
    return (moment - _EPOCH) // timedelta(seconds=1) * 1_000_000_000 + fraction
