"""Reading OTLP JSON into spans (`otel_genai.py`, module docstring: the input's shapes, how
fields are named and how OTLP JSON is read): every span of the input, with the GenAI
events of its span events and of the log records that name it. Other shapes of the same
spans (OTLP protobuf, protobuf JSON, Tempo, Jaeger, Phoenix) are first turned into OTLP JSON
by `otlp_shapes.otlp_json`, each span naming its field in the input as given (`WHERE`)."""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from dataclasses import dataclass, field
from typing import Any

# WHERE: a key a message or part built by another importer may carry (`openinference`), or a span
# decoded from another shape (`otlp_shapes`): its field path in the input as given, named in errors
# and warnings instead of the OTLP JSON one (re-exported: the importers take it from here).
from fair_forge_core.importers.otlp_shapes import WHERE as WHERE
from fair_forge_core.importers.otlp_shapes import otlp_json
from fair_forge_core.importers.trace import TraceError, object_list
from fair_forge_core.schemas.json_input import loads_json

CONTENT = frozenset(
    {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions"}
    | {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
)
EVENT_ROLES = {"gen_ai.system.message": "system", "gen_ai.user.message": "user", "gen_ai.choice": "assistant"}
EVENT_ROLES |= {"gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
LANGFUSE_PREFIX = "langfuse."
"""The attributes the Langfuse SDK writes on its spans (`langfuse_otlp`)."""


def langfuse_hint(spans: list[Span]) -> str:
    """`; these spans carry the Langfuse SDK's attributes (langfuse.*): read them with --from
    langfuse` when one of `spans` has a `LANGFUSE_PREFIX` attribute, else "": what an importer of
    another convention adds to its error when it reads nothing of them."""
    if not any(key.startswith(LANGFUSE_PREFIX) for span in spans for key in span.attrs):
        return ""
    return "; these spans carry the Langfuse SDK's attributes (langfuse.*): read them with --from langfuse"


@dataclass
class Span:
    where: str
    trace_id: str
    span_id: str
    root: bool
    start: int
    end: int
    attrs: dict[str, Any]
    resource: dict[str, Any]
    failed: bool
    status: str
    events: list[tuple[str, Any, str]] = field(default_factory=list)  # (name, body, where)
    parent_id: str = ""  # `parentSpanId` as read (`hex_id`: base64 of 8 bytes as hex; "" for a root)
    name: str = ""  # the span's `name` ("" when it has none)

    @property
    def key(self) -> tuple[str, str]:
        """`(trace, span)` as compared: see `id_key`."""
        return id_key(self.trace_id), id_key(self.span_id)

    @property
    def parent_key(self) -> tuple[str, str]:
        """`(trace, parent span)` as compared: the `key` of its parent, parents being looked up
        within the span's own trace."""
        return id_key(self.trace_id), id_key(self.parent_id)


_HEX = re.compile(r"[0-9a-fA-F]+")
_BASE64_ID = {16: re.compile(r"[A-Za-z0-9+/]{22}=="), 8: re.compile(r"[A-Za-z0-9+/]{11}=")}


def hex_id(raw: Any, size: int) -> str:
    """An id as read: the hex of its bytes when it is the padded base64 of exactly `size` bytes
    (16 for a trace, 8 for a span: what protobuf-JSON mappings such as `MessageToDict` and
    Tempo write; padded base64 of that length always ends in ``=``, which hex never holds, so
    no hex id is taken for one), else the text as written (`id_key` compares it)."""
    value = str(raw or "")
    if value.endswith("=") and size in _BASE64_ID and _BASE64_ID[size].fullmatch(value):  # endswith: cheap first
        try:
            return base64.b64decode(value, validate=True).hex()
        except (binascii.Error, ValueError):  # non-canonical padding bits: kept as written
            return value
    return value


def id_key(value: str) -> str:
    """An id as ids are compared: hex (what OTLP JSON writes) in either case names the same
    id, so it is compared lower-cased; any other id (base64, from a protobuf-JSON mapping)
    is compared exactly as written, its case being part of it (lower-casing could make two
    ids one). Ids are always shown and kept as written."""
    return value.lower() if _HEX.fullmatch(value) else value


Record = tuple[str, str, str, Any, str]  # a log record's GenAI event: (traceId, spanId, event name, body, where)


def _request_spans(request: dict[str, Any], i: int) -> list[Span]:
    """The spans of export request `requests[i]`, each with its resource's attributes."""
    spans: list[Span] = []
    for j, resource in enumerate(object_list(request.get("resourceSpans"), f"requests[{i}].resourceSpans")):
        here = f"requests[{i}].resourceSpans[{j}]"
        described: dict[str, Any] = resource["resource"] if isinstance(resource.get("resource"), dict) else {}
        attributes = _attributes(described.get("attributes"), f"{here}.resource.attributes")
        for k, scope in enumerate(object_list(resource.get("scopeSpans"), f"{here}.scopeSpans")):
            spans += _spans_of(attributes, scope.get("spans"), f"{here}.scopeSpans[{k}].spans")
    return spans


def _request_records(request: dict[str, Any], i: int) -> list[Record]:
    """The GenAI events of the log records of export request `requests[i]` (a record names its
    event with `eventName` or the attribute `event.name`; other records are not read)."""
    records: list[Record] = []
    for j, resource in enumerate(object_list(request.get("resourceLogs"), f"requests[{i}].resourceLogs")):
        for k, scope in enumerate(object_list(resource.get("scopeLogs"), f"requests[{i}].resourceLogs[{j}].scopeLogs")):
            where = f"requests[{i}].resourceLogs[{j}].scopeLogs[{k}].logRecords"
            for n, record in enumerate(object_list(scope.get("logRecords"), where)):
                attributes = _attributes(record.get("attributes"), f"{where}[{n}].attributes")
                name = record.get("eventName") or attributes.get("event.name")
                if isinstance(name, str) and (name in EVENT_ROLES or name == DETAILS_EVENT):
                    body = attributes if name == DETAILS_EVENT else _value(record.get("body"), f"{where}[{n}].body")
                    ids = (hex_id(record.get("traceId"), 16), hex_id(record.get("spanId"), 8))
                    records.append((*ids, name, body, f"{where}[{n}].body"))
    return records


def read_spans(data: Any) -> tuple[list[Span], str, str | None]:
    """Every span of the input, with the GenAI events of its log records and span events, the
    name of the input as a whole (``spans`` for a bare list of spans, else ``requests``), and
    the field of its first id that is not hex (None when all are)."""
    data = otlp_json(data)
    if bare_spans(data):
        bare = _spans_of({}, data, "spans")
        return bare, "spans", _first_not_hex(bare, [])
    requests = [data] if isinstance(data, dict) else data
    if not isinstance(requests, list) or not requests:
        raise TraceError("requests", "an OTLP/JSON export request (resourceSpans), a list of them, or a list of spans")
    spans: list[Span] = []
    records: list[Record] = []
    for i, request in enumerate(requests):
        if not isinstance(request, dict) or not ("resourceSpans" in request or "resourceLogs" in request):
            raise TraceError(f"requests[{i}]", "an OTLP/JSON export request has `resourceSpans` (or `resourceLogs`)")
        spans += _request_spans(request, i)
        records += _request_records(request, i)
    by_id = {s.key: s for s in spans}
    for trace_id, span_id, name, body, where in records:
        span = by_id.get((id_key(trace_id), id_key(span_id)))
        if span is None:
            raise TraceError(where, f"no span of the input has traceId {trace_id!r} and spanId {span_id!r}")
        if name == DETAILS_EVENT:  # the newer event: the span's content attributes, recorded apart
            span.attrs.update({k: v for k, v in body.items() if k in CONTENT and k not in span.attrs})
        else:
            span.events.append((name, body if isinstance(body, dict) else {}, where))
    return spans, "requests", _first_not_hex(spans, records)


def _first_not_hex(spans: list[Span], records: list[Record]) -> str | None:
    """The field of the first trace or span id, of a span or else of a log record, that is not hex."""
    for span in spans:
        for name, value in (("traceId", span.trace_id), ("spanId", span.span_id)):
            if value and not _HEX.fullmatch(value):
                return f"{span.where}.{name}"
    for trace_id, span_id, _, _, where in records:
        if any(value and not _HEX.fullmatch(value) for value in (trace_id, span_id)):
            return where.removesuffix(".body")
    return None


def bare_spans(data: Any) -> bool:
    """Whether the input is a bare list of spans (its first item has a `spanId`)."""
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) and "spanId" in data[0]


def _spans_of(resource: dict[str, Any], raw: Any, where: str) -> list[Span]:
    spans = []
    for n, span in enumerate(object_list(raw, where)):
        here = str(span.get(WHERE) or f"{where}[{n}]")
        trace_id = span.get("traceId")
        if not isinstance(trace_id, str) or not trace_id:
            raise TraceError(f"{here}.traceId", "must be a non-empty hex string")
        parent_id = hex_id(span.get("parentSpanId"), 8)
        attrs = _attributes(span.get("attributes"), f"{here}.attributes")
        if not isinstance(attrs.get("gen_ai.operation.name", ""), str):
            raise TraceError(f"{here}.attributes.gen_ai.operation.name", "must be a string")
        status: dict[str, Any] = span["status"] if isinstance(span.get("status"), dict) else {}
        read = Span(
            here,
            hex_id(trace_id, 16),  # as written unless base64: see `id_key` for how ids are compared
            hex_id(span.get("spanId"), 8),
            not parent_id,
            _nanos(span.get("startTimeUnixNano"), f"{here}.startTimeUnixNano"),
            _nanos(span.get("endTimeUnixNano", span.get("startTimeUnixNano")), f"{here}.endTimeUnixNano"),
            attrs,
            resource,
            status.get("code") in (2, "2", "STATUS_CODE_ERROR", "ERROR"),
            str(status.get("message") or ""),
            parent_id=parent_id,
            name=str(span.get("name") or ""),
        )
        for e, event in enumerate(object_list(span.get("events"), f"{here}.events")):
            if isinstance(event.get("name"), str) and event["name"] in EVENT_ROLES:
                body = _attributes(event.get("attributes"), f"{here}.events[{e}].attributes")
                content = body.get("gen_ai.event.content")  # Azure AI SDKs: the body as JSON text
                if isinstance(content, str):
                    try:
                        body = loads_json(content)
                    except (ValueError, RecursionError):
                        raise TraceError(f"{here}.events[{e}].attributes.gen_ai.event.content", "is not JSON") from None
                read.events.append((event["name"], body if isinstance(body, dict) else {}, f"{here}.events[{e}]"))
        spans.append(read)
    return spans


def _attributes(raw: Any, where: str) -> dict[str, Any]:
    """OTLP `[{key, value: AnyValue}]` as a dict (a plain dict is taken as it is)."""
    if isinstance(raw, dict):
        return dict(raw)
    return {
        str(item.get("key")): _value(item.get("value"), f"{where}.{item.get('key')}")
        for item in object_list(raw, where)
    }


def _value(raw: Any, where: str) -> Any:
    """An OTLP `AnyValue` as plain JSON (`intValue` is a string in OTLP JSON). A field written
    as `null` is absent, as protobuf's JSON mapping reads it: Phoenix's span pages write every
    field of the value, all but the one set as null."""
    if not isinstance(raw, dict):
        return raw
    raw = {key: value for key, value in raw.items() if value is not None}
    try:
        if "stringValue" in raw:
            return raw["stringValue"]
        if "intValue" in raw:
            return int(raw["intValue"])
        if "doubleValue" in raw:
            return float(raw["doubleValue"])
        if "boolValue" in raw:
            return bool(raw["boolValue"])
    except (TypeError, ValueError, OverflowError):
        raise TraceError(where, f"is not the number its type says: {raw!r}") from None
    if "arrayValue" in raw:
        values = _values(raw["arrayValue"], where, "an arrayValue is an object with a list of `values`")
        return [_value(value, f"{where}[{n}]") for n, value in enumerate(values)]
    if "kvlistValue" in raw:
        return _attributes(
            _values(raw["kvlistValue"], where, "a kvlistValue is an object with a list of `values`"), where
        )
    return raw.get("bytesValue")


def _values(raw: Any, where: str, problem: str) -> list[Any]:
    """The `values` of an `arrayValue`/`kvlistValue` (`null`, `{}` or no `values` is empty)."""
    values = (raw if isinstance(raw, dict) else {}).get("values") or []
    if (raw is not None and not isinstance(raw, dict)) or not isinstance(values, list):
        raise TraceError(where, problem)
    return values  # base64 text, or None for an empty AnyValue


def _nanos(raw: Any, where: str) -> int:
    try:
        return int(raw or 0)
    except (TypeError, ValueError, OverflowError):
        raise TraceError(where, "must be an integer of nanoseconds (a string in OTLP JSON)") from None


class Intervals:
    """Intervals `(start, end)`, asked which of them covers `(start, end)` (start ≤ the asked
    start and end ≥ the asked end): sorted by start with the running largest end (and whose it
    is), so a question is one binary search (O(log n))."""

    def __init__(self, intervals: list[tuple[int, int]]) -> None:
        ordered = sorted(range(len(intervals)), key=lambda n: intervals[n])  # stable: ties keep input order
        self._starts = [intervals[n][0] for n in ordered]
        self._longest: list[tuple[int, int]] = []  # (largest end so far, the index of its interval)
        for n in ordered:
            if not self._longest or intervals[n][1] > self._longest[-1][0]:
                self._longest.append((intervals[n][1], n))
            else:
                self._longest.append(self._longest[-1])

    def cover(self, start: int, end: int) -> int | None:
        """The index (in the list given) of an interval that starts at or before `start` and ends
        at or after `end`: of those starting by `start`, the first to end last; None if none does."""
        last = bisect.bisect_right(self._starts, start) - 1
        if last < 0 or self._longest[last][0] < end:
            return None
        return self._longest[last][1]
