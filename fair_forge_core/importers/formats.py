"""Traces of any supported format, and references, to the datasets of a request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fair_forge_core.importers.langchain_messages import traces_from_langchain
from fair_forge_core.importers.langfuse import traces_from_langfuse
from fair_forge_core.importers.langsmith_runs import traces_from_langsmith
from fair_forge_core.importers.openai_agents import traces_from_openai_agents
from fair_forge_core.importers.openai_chat import traces_from_openai
from fair_forge_core.importers.openinference import traces_from_openinference
from fair_forge_core.importers.otel_genai import traces_from_otel
from fair_forge_core.importers.references import join_references
from fair_forge_core.importers.trace import FormatTraceError, ImportedTrace, TraceError
from fair_forge_core.importers.trace_shapes import sniff_shape

IMPORTERS: dict[str, Callable[[Any], list[ImportedTrace]]] = {
    "openai": traces_from_openai,
    "langchain": traces_from_langchain,
    "otel": traces_from_otel,
    "openai-agents": traces_from_openai_agents,
    "langsmith": traces_from_langsmith,
    "openinference": traces_from_openinference,
    "langfuse": traces_from_langfuse,
}
"""Each trace format and the importer that reads it: the keys are `schemas.TRACE_FORMATS` (tested)."""


def datasets_from_traces(
    trace_format: str, traces: Any, references: list[Any], *, task_key: str | None = None
) -> tuple[list[dict[str, Any]], list[str], int]:
    """`(datasets, warnings, trace count)`: the traces of `trace_format` read, joined with
    `references` by `task_key` (see `join_references`: one dataset per trace, those that could
    not be joined marked unscored, `unjoined_causes`). `warnings` holds, in this order,
    what the importer decided for each trace and what the join could not use; an
    unreadable trace or reference is a `TraceError` naming its field (or, for a shape an
    importer does not foresee, naming `traces` and the exception's type). When the importer
    refuses the input, or reads no trace of it, and `trace_shapes.sniff_shape` finds it is of a
    shape other formats read, the error names ``traces``, the shape and the `--from` that
    reads it (`wrong_format`), its own problem kept in parentheses; but a `FormatTraceError` (the
    importer knows the input for its own) is raised as it is."""
    if trace_format not in IMPORTERS:
        raise TraceError("format", f"unknown trace format {trace_format!r}; one of {', '.join(IMPORTERS)}")
    try:
        imported = IMPORTERS[trace_format](traces)
    except FormatTraceError:
        raise
    except TraceError as exc:
        raise wrong_format(trace_format, traces, str(exc)) or exc from None
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
        # An importer's defect on a shape it did not foresee: still the user's input that
        # cannot be read (a 400 / exit 2), never a crash; the type names the defect to report.
        problem = f"{type(exc).__name__}: a shape the importer does not know"
        raise wrong_format(trace_format, traces, problem) or TraceError(
            "traces", f"cannot be read as {trace_format} traces ({problem})"
        ) from None
    if not imported and (refused := wrong_format(trace_format, traces, "no trace read")) is not None:
        raise refused
    datasets, report = join_references(imported, references, task_key=task_key)
    warnings = [warning for trace in imported for warning in trace.warnings] + report.problems()
    return datasets, warnings, len(imported)


def wrong_format(trace_format: str, traces: Any, problem: str) -> TraceError | None:
    """The error for `traces` that `trace_format` could not read (`problem`) when they are of a
    shape other formats read: ``this is a Jaeger JSON export, not openai traces; read it with
    --from otel (GenAI spans) or --from openinference (OpenInference spans) (problem)``; None
    when their shape is unknown or is one `trace_format` reads (its own error says more)."""
    shape = sniff_shape(traces)
    if shape is None or trace_format in shape.formats:
        return None
    return TraceError(
        "traces", f"this is {shape.name}, not {trace_format} traces; read it with {shape.read_with()} ({problem})"
    )


def request_field(field: str) -> str:
    """A `TraceError`'s field as a path in a request's traces form: each importer names the
    items of its input by what they are (`traces[i]`, `runs[i]`, `requests[i]`, `items[i]`…,
    or that name alone for the whole list), which in a request are `traces.items[i]`
    (`traces.items`); `references[i]…` and other fields are already request paths."""
    root, bracket, rest = field.partition("[")
    if not root.isalpha() or root == "references" or "." in root:
        return field
    return f"traces.items[{rest}" if bracket else "traces.items"
