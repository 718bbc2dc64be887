"""Structured logs and EMF metrics, with every secret masked before a line is written.

The secrets of the request in flight (its API key, the server's key) are held in a
context variable; the log formatter masks them, and key-shaped tokens, in every
line, and drops stack traces: a log line carries the exception's type and its
redacted message, nothing more.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from fair_forge_core.redact import redact

SERVICE = "fair-forge-agentic"
METRICS_NAMESPACE = "FairForgeAgentic"

_request_secrets: ContextVar[frozenset[str]] = ContextVar("request_secrets", default=frozenset())


class RedactingFormatter(LambdaPowertoolsFormatter):
    """Powertools' JSON formatter that masks secrets and never serialises a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info:
            exc = record.exc_info[1]
            record.exc_info, record.exc_text = None, None
            if exc is not None:
                record.msg = f"{record.getMessage()} ({type(exc).__name__}: {exc})"
                record.args = None
        return redact(super().format(record), _request_secrets.get())


logger = Logger(service=SERVICE, logger_formatter=RedactingFormatter())
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)


@contextmanager
def secrets_masked(secrets: Iterable[str]) -> Iterator[None]:
    """Mask `secrets` in every log line written inside the block (added to those already masked)."""
    token = _request_secrets.set(_request_secrets.get() | {s for s in secrets if s})
    try:
        yield
    finally:
        _request_secrets.reset(token)


def current_secrets() -> frozenset[str]:
    """The secret values masked in the current request."""
    return _request_secrets.get()


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
