"""Structured logs and EMF metrics, with every secret masked before a line is written.

The secrets of the request in flight (its API key, the server's key) are held in a
context variable; the log formatter masks them, and key-shaped tokens, in every
line, the traceback of a logged exception included (`logger.exception`: only for a
defect, a 500). Within `invocation_secrets()` (each invocation of `lambda_handler`) a
secret stays masked until the invocation ends, not only until its `secrets_masked`
block exits: an exception raised inside the block is logged after it has.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

from fair_forge_core.redact import redact

SERVICE = "fair-forge-agentic"
METRICS_NAMESPACE = "FairForgeAgentic"

_request_secrets: ContextVar[frozenset[str]] = ContextVar("request_secrets", default=frozenset())
_invocation_secrets: ContextVar[set[str] | None] = ContextVar("invocation_secrets", default=None)

ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]


class RedactingFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON formatter that masks secrets in the message and in the traceback."""

    def __init__(self) -> None:
        # Powertools' structured `stack_trace` repeats the exception's message outside
        # `formatException`, where nothing masks it: the text traceback is enough.
        super().__init__(serialize_stacktrace=False)

    def formatException(self, ei: ExcInfo) -> str:
        # Masked before JSON escaping: a secret with a quote or a non-ASCII character would
        # no longer match itself once escaped.
        return redact(super().formatException(ei), current_secrets())

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record), current_secrets())


logger = Logger(service=SERVICE, logger_formatter=RedactingFormatter())


class TurnTakingEMF(AmazonCloudWatchEMFProvider):
    """CloudWatch EMF whose metric additions and flushes take turns. A Lambda runs one invocation
    at a time, but the local API (`handler.local`, a threading server) and the tests' in-process
    Lambda runtime run several in threads of one process, sharing this metric set: one's flush
    could empty it between another's check that it was not empty and its serialization, which then
    raised `SchemaValidationError` out of the handler."""

    _turns = threading.RLock()

    def add_metric(self, *args: Any, **kwargs: Any) -> None:
        with self._turns:
            super().add_metric(*args, **kwargs)

    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None:
        with self._turns:
            super().flush_metrics(raise_on_empty_metrics=raise_on_empty_metrics)


metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)
metrics.provider = TurnTakingEMF(
    namespace=METRICS_NAMESPACE,
    service=SERVICE,
    metric_set=metrics.metric_set,
    dimension_set=metrics.dimension_set,
    metadata_set=metrics.metadata_set,
    default_dimensions=metrics.default_dimensions,
)


@contextmanager
def invocation_secrets() -> Iterator[None]:
    """Keep every secret masked inside the block masked until the block (the invocation) ends."""
    token = _invocation_secrets.set(set())
    try:
        yield
    finally:
        _invocation_secrets.reset(token)


@contextmanager
def secrets_masked(secrets: Iterable[str]) -> Iterator[None]:
    """Mask `secrets` in every log line written inside the block (added to those already masked),
    and, within `invocation_secrets()`, until the invocation ends."""
    values = {s for s in secrets if s}
    seen = _invocation_secrets.get()
    if seen is not None:
        seen.update(values)
    token = _request_secrets.set(_request_secrets.get() | values)
    try:
        yield
    finally:
        _request_secrets.reset(token)


def current_secrets() -> frozenset[str]:
    """The secret values masked now."""
    return _request_secrets.get() | (_invocation_secrets.get() or set())


@contextmanager
def log_level(level: str | None) -> Iterator[None]:
    """Run the block with the service logger at `level` (None: unchanged)."""
    if level is None:
        yield
        return
    previous = logger.log_level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(previous)


def readiness_fields(readiness: Any) -> dict[str, Any]:
    """The log fields of an evaluation's headline (`AggregatedMetrics.readiness`), what a log
    query or an alarm reads: tier, basis, status, scored and total conversations, and the summary."""
    if readiness is None:
        return {}
    return {
        "readiness_tier": readiness.tier,
        "readiness_basis": readiness.basis,
        "readiness_status": readiness.status,
        "readiness_scored": readiness.scored,
        "readiness_total": readiness.total,
        "readiness_summary": readiness.summary,
    }
