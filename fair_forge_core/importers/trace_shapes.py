"""What a traces file looks like, for the error of an importer that cannot read it: the shape
it has and the `--from` formats that read it (`datasets_from_traces` says both)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SPAN_FORMATS = ("otel", "openinference")
_LANGCHAIN_TYPES = frozenset({"human", "ai", "system", "tool", "chat", "function", "AIMessageChunk", "constructor"})


@dataclass(frozen=True)
class Shape:
    name: str  # "a Jaeger JSON export"
    formats: tuple[str, ...]  # the `--from` formats that read it

    def read_with(self) -> str:
        """``--from otel (GenAI spans) or --from openinference (OpenInference spans)``, or ``--from X``."""
        if self.formats == SPAN_FORMATS:
            return "--from otel (GenAI spans) or --from openinference (OpenInference spans)"
        return " or ".join(f"--from {name}" for name in self.formats)


def _spans(name: str) -> Shape:
    return Shape(name, SPAN_FORMATS)


def sniff_shape(data: Any) -> Shape | None:
    """The shape of `data` by its first keys, None when none of these rules fits (pure; only the
    first item of a list is looked at, so it is constant time):

    - bytes: OTLP protobuf; an object with `resourceSpans` or `resourceLogs`: an OTLP/JSON export
      request; with `resource_spans`: OTLP protobuf JSON; with `batches`, or a `trace` object: a
      Grafana Tempo trace; with `traceId` and `spanId`: an OTLP span (all: `--from otel` or
      `--from openinference`);
    - an object with a `data` list, by its first item: `traceID` and `spans`: a Jaeger JSON
      export; `context` and `span_kind`: a Phoenix spans page; `span_id` or `trace_id`: a
      Phoenix OTLP spans page (`/spans/otlpv1`) (those: otel or openinference); `traceId` and
      `type`: a Langfuse observations page; `observations`: a Langfuse traces page (langfuse);
      `object` or `span_data`: an OpenAI Agents export (openai-agents);
    - an object with `observations`: a Langfuse trace; with `object` or `span_data`: an OpenAI
      Agents trace or span; with `run_type`: a LangSmith run; with a `messages` list: a
      message-list trace (langchain when its first message has a LangChain `type` or `lc`,
      else openai);
    - a list, by its first item: "a list whose first item is" what an object is above (an
      export request, a span, a trace…, as in JSON Lines); `context` and `span_kind`: Phoenix spans
      (`arize-phoenix-client`'s `get_spans()`); `run_type`: a LangSmith run list; a message
      (`role`: openai; a LangChain `type` or `lc`: langchain) or a list of them: a message list;
      `span_id`: OTLP spans with proto field names.

    Only what these keys say is claimed: a shape is named, never checked in full."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return _spans("OTLP protobuf (an ExportTraceServiceRequest)")
    if isinstance(data, dict):
        return _object(data)
    if not isinstance(data, list) or not data:
        return None
    first = data[0]
    if isinstance(first, list):
        return _messages(first, "a list of message lists")
    if not isinstance(first, dict):
        return None
    if "context" in first and "span_kind" in first:
        return _spans("a list of Phoenix spans (arize-phoenix-client get_spans())")
    if "run_type" in first:
        return Shape("a LangSmith run list", ("langsmith",))
    if "role" in first or "lc" in first or first.get("type") in _LANGCHAIN_TYPES:
        return _messages(data, "a message list")
    if "span_id" in first:
        return _spans("a list of OTLP spans (proto field names)")
    inner = _object(first)
    return None if inner is None else Shape(f"a list whose first item is {inner.name}", inner.formats)


def _object(data: dict[str, Any]) -> Shape | None:
    if "resourceSpans" in data or "resourceLogs" in data:
        return _spans("an OTLP/JSON export request")
    if "resource_spans" in data:
        return _spans("an OTLP protobuf JSON export request (proto field names)")
    if "batches" in data or isinstance(data.get("trace"), dict):
        return _spans("a Grafana Tempo trace export")
    if isinstance(data.get("data"), list):
        return _page(data["data"])
    if "observations" in data:
        return Shape("a Langfuse trace", ("langfuse",))
    if "object" in data or "span_data" in data:
        return Shape("an OpenAI Agents trace or span", ("openai-agents",))
    if "run_type" in data:
        return Shape("a LangSmith run", ("langsmith",))
    if "traceId" in data and "spanId" in data:
        return _spans("an OTLP span")
    if isinstance(data.get("messages"), list):
        return _messages(data["messages"], "a message-list trace")
    return None


def _page(items: list[Any]) -> Shape | None:
    first = items[0] if items and isinstance(items[0], dict) else {}
    if "traceID" in first and "spans" in first:
        return _spans("a Jaeger JSON export")
    if "context" in first and "span_kind" in first:
        return _spans("a Phoenix spans page (GET /v1/projects/{project}/spans)")
    if "span_id" in first or "trace_id" in first:
        return _spans("a Phoenix OTLP spans page (GET /v1/projects/{project}/spans/otlpv1)")
    if "traceId" in first and "type" in first:
        return Shape("a Langfuse observations page (GET /api/public/observations)", ("langfuse",))
    if "observations" in first:
        return Shape("a Langfuse traces page", ("langfuse",))
    if "object" in first or "span_data" in first:
        return Shape("an OpenAI Agents export", ("openai-agents",))
    return None


def _messages(messages: list[Any], name: str) -> Shape:
    first = messages[0] if messages and isinstance(messages[0], dict) else {}
    langchain = "lc" in first or first.get("type") in _LANGCHAIN_TYPES
    return Shape(
        f"{name} ({'LangChain' if langchain else 'chat-completions'} messages)",
        (("langchain",) if langchain else ("openai",)),
    )
