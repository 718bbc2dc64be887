"""Sending `otel_events.EvaluationEvent`s through the OpenTelemetry SDK (`evaluate --otel-export`).

Optional: the SDK (`opentelemetry-sdk`) and its OTLP/HTTP exporter
(`opentelemetry-exporter-otlp-proto-http`) are not dependencies of this package; they are
imported here only, and `OtelSdkMissing` says how to install them. The exporter is configured
as every OpenTelemetry exporter is, by the environment: `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` (the
full URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/logs` is appended), and the `_HEADERS`,
`_TIMEOUT`, `_COMPRESSION` and certificate variables. The resource is the SDK's own
(`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SERVICE_NAME`), with `service.version` and, when the
environment names no service, `service.name` ``fair-forge`` (as in the OTLP JSON file).

Each event is emitted on a logger named `otel_events.SCOPE_NAME` with its `event_name`, its
attributes and, when linked, a context holding its trace and span (a non-recording span:
the evaluated span, not one of ours); the records are then exported in one call, so that a
failure is reported (`OtelExportFailed`) rather than logged and dropped as the SDK's
processors do.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Sequence
from typing import Any

from fair_forge_core import __version__
from fair_forge_core.otel_events import SCOPE_NAME, EvaluationEvent

INSTALL = "pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""Either configures where the events go; without one, `--otel-export` is refused (exit 2)."""


class OtelSdkMissing(RuntimeError):
    """The OpenTelemetry SDK or its OTLP/HTTP exporter is not installed."""


class OtelExportFailed(RuntimeError):
    """The exporter could not deliver the events (the collector refused them or is unreachable)."""


def configured_endpoint() -> str | None:
    """The variable that configures the endpoint (`ENDPOINT_VARIABLES`, the logs one first), or None."""
    return next((name for name in ENDPOINT_VARIABLES if os.environ.get(name, "").strip()), None)


def check_sdk() -> None:
    """`OtelSdkMissing` unless the SDK and the OTLP/HTTP log exporter can be imported."""
    try:
        for module in ("opentelemetry.sdk._logs", "opentelemetry.exporter.otlp.proto.http._log_exporter"):
            importlib.import_module(module)
    except ImportError:
        raise OtelSdkMissing(f"the OpenTelemetry SDK is not installed: {INSTALL}") from None


def export_events(events: Sequence[EvaluationEvent], time_unix_nano: int) -> None:
    """Send `events`, each timed `time_unix_nano`, to the configured OTLP/HTTP endpoint (see the
    module docstring). Nothing is sent for no events."""
    check_sdk()
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor, ReadableLogRecord, ReadWriteLogRecord
    from opentelemetry.sdk._logs.export import LogRecordExportResult
    from opentelemetry.sdk.resources import Resource

    if not events:
        return
    emitted: list[ReadableLogRecord] = []

    class _Collect(LogRecordProcessor):
        def on_emit(self, log_record: ReadWriteLogRecord) -> None:
            emitted.append(
                ReadableLogRecord(
                    log_record=log_record.log_record,
                    resource=resource,  # the provider's, which is set on every record
                    instrumentation_scope=log_record.instrumentation_scope,
                    limits=log_record.limits,
                )
            )

        def shutdown(self) -> None:
            return None

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    resource = Resource.create({"service.version": __version__})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "fair-forge"}))
    provider = LoggerProvider(resource=resource)
    provider.add_log_record_processor(_Collect())
    logger = provider.get_logger(SCOPE_NAME, __version__)
    for event in events:
        logger.emit(
            timestamp=time_unix_nano,
            observed_timestamp=time_unix_nano,
            context=_context(trace, event),
            event_name=event.name,
            attributes=event.attributes,
        )
    exporter, said = OTLPLogExporter(), _Said()
    sdk_logger = logging.getLogger("opentelemetry")
    sdk_logger.addHandler(said)
    propagate, sdk_logger.propagate = sdk_logger.propagate, False  # what it says goes into our error, once
    try:
        outcome = exporter.export(emitted)
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]
        sdk_logger.removeHandler(said)
        sdk_logger.propagate = propagate
    if outcome != LogRecordExportResult.SUCCESS:
        where = configured_endpoint()
        reason = f": {said.last}" if said.last else ""
        raise OtelExportFailed(
            f"the OTLP exporter could not send the {len(emitted)} evaluation events to the endpoint "
            f"{'set by ' + where if where else 'by default, http://localhost:4318'}{reason}"
        )


class _Said(logging.Handler):
    """The last warning or error the SDK logged (its first line, at most 200 characters): why an
    export failed (`Failed to export logs batch code: 400, reason: …`), said in our error."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.last = record.getMessage().strip().splitlines()[0][:200] if record.getMessage().strip() else ""


def _context(trace: Any, event: EvaluationEvent) -> Any:
    """A context whose current span is the event's (trace, span), or None when it is not linked.
    A conversation's event has a trace and no span: the convention's trace id alone has no
    place in a context, so it is sent unlinked (the OTLP JSON file keeps its `traceId`)."""
    if event.trace_id is None or event.span_id is None:
        return None
    span = trace.NonRecordingSpan(trace.SpanContext(int(event.trace_id, 16), int(event.span_id, 16), is_remote=True))
    return trace.set_span_in_context(span)
