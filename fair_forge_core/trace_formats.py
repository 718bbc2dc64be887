"""The trace formats `fair_forge_core.importers` reads, named once (pydantic-free, so that
`fair-forge --help` can list them without importing the request models)."""

from typing import Literal, get_args

TraceFormat = Literal["openai", "langchain", "otel", "openai-agents", "langsmith", "openinference", "langfuse"]
"""`TraceSource.format` in a request, `fair-forge convert --from` on the command line."""

TRACE_FORMATS: tuple[str, ...] = get_args(TraceFormat)


TRACE_EXPORT_KEYS = frozenset(
    {
        "resourceSpans",
        "resourceLogs",
        "resource_spans",
        "resource_logs",
        "batches",
        "trace",
        "traceId",
        "spanId",
        "messages",
        "data",
        "object",
        "span_data",
        "run_type",
        "observations",
    }
)
"""Top-level keys of what the importers read (an OTLP export request or span, in protobuf JSON or
Tempo's shapes too, a Jaeger or Phoenix page (`data`), a message list trace, an OpenAI Agents
payload or object, a LangSmith run, a Langfuse trace), never of a request."""


def looks_like_traces(data: object) -> bool:
    """Whether a file given as a request is rather a trace export: a JSON list (a request is an
    object), or an object with none of a request's `datasets` / `traces` and a key of
    `TRACE_EXPORT_KEYS`."""
    if isinstance(data, list):
        return True
    return (
        isinstance(data, dict)
        and "datasets" not in data
        and "traces" not in data
        and not TRACE_EXPORT_KEYS.isdisjoint(data)
    )


TRACES_NOT_A_REQUEST = (
    "this looks like a traces file, not a request: convert it with `fair-forge convert FILE --from FORMAT "
    f"--references REFS` (FORMAT: {', '.join(TRACE_FORMATS)}), or write the traces form of the request: "
    '{"connector", "traces": {"format", "items"}, "references"}'
)
"""What `fair-forge evaluate` says of a file `looks_like_traces` finds to be one."""
