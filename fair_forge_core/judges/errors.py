"""Provider errors: which ones stop the evaluation, are retried, fail one turn, or are a bad
reply (`classify_error`); how long the provider asked us to wait (`retry_after_s`); and a
description that is safe to return and log (`describe_error`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Literal

from fair_forge_core.judges.reply_limit import reply_too_large
from fair_forge_core.judges.verdict import VerdictParseError
from fair_forge_core.redact import redact

ErrorKind = Literal["fatal", "transient", "turn", "parse"]

_FATAL_STATUSES = {401, 403, 404}


class RemoteProviderError(Exception):
    """A provider call that failed in a judge worker process (`judges.processes`), as the worker
    read it: its kind, HTTP status, Retry-After and description, which `classify_error`,
    `status_code_of`, `retry_after_s` and `describe_error` return for it as they would have for
    the exception itself. (The exception stays in the worker: an SDK's may not pickle.)"""

    def __init__(self, kind: ErrorKind, status_code: int | None, retry_after: float | None, description: str) -> None:
        super().__init__(description)
        self.kind: ErrorKind = kind
        self.status_code = status_code
        self.retry_after = retry_after
        self.description = description

    @classmethod
    def of(cls, exc: BaseException) -> RemoteProviderError:
        """How `exc`, raised by a provider call in a worker, reads to the evaluation's process."""
        return cls(classify_error(exc), status_code_of(exc), retry_after_s(exc), describe_error(exc))

    def __reduce__(self) -> tuple[type[RemoteProviderError], tuple[ErrorKind, int | None, float | None, str]]:
        return type(self), (self.kind, self.status_code, self.retry_after, self.description)


_TRANSIENT_STATUSES = {408, 409, 425, 429}


def status_code_of(exc: BaseException) -> int | None:
    """The HTTP status of a provider SDK exception (openai, groq, httpx), if it has one."""
    status = getattr(exc, "status_code", None)
    if status is None:
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


# Providers that validate structured output server-side (Groq) refuse a malformed
# sample with a 400 carrying one of these codes: a bad reply, worth another sample.
_BAD_SAMPLE_CODES = ("tool_use_failed", "json_validate_failed")


def classify_error(exc: BaseException) -> ErrorKind:
    """Whether `exc` stops the evaluation, is worth retrying, fails one turn, or is a bad reply.

    - fatal: 401, 403, 404 (bad key, no access, no such model);
    - transient: 408, 409, 425, 429, 5xx, timeouts and connection errors;
    - parse: LangChain's output-parser and pydantic validation errors, invalid JSON,
      and a provider's 400 for a sample that failed its own schema check;
    - turn: a reply over the size limit (even when the SDK reports it as a connection
      error: the same request would get the same reply), and anything else (another
      4xx or 3xx, an unexpected exception): this turn only.
    """
    from langchain_core.exceptions import OutputParserException
    from pydantic import ValidationError

    if isinstance(exc, RemoteProviderError):
        return exc.kind
    if reply_too_large(exc) is not None:
        return "turn"
    status = status_code_of(exc)
    if status in _FATAL_STATUSES:
        return "fatal"
    if status is not None and (status in _TRANSIENT_STATUSES or status >= 500):
        return "transient"
    if status == 400 and any(code in str(exc) for code in _BAD_SAMPLE_CODES):
        return "parse"
    if status is not None:
        return "turn"
    if _is_transport_error(exc):
        return "transient"
    if isinstance(exc, OutputParserException | ValidationError | json.JSONDecodeError):
        return "parse"
    return "turn"


def _is_transport_error(exc: BaseException) -> bool:
    """A timeout or a failed connection: nothing came back from the provider."""
    name = type(exc).__name__  # SDK classes: APITimeoutError, APIConnectionError, httpx.ConnectError
    return isinstance(exc, OSError) or "Timeout" in name or "Connect" in name


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait (`retry-after-ms` or `retry-after` header), if any."""
    if isinstance(exc, RemoteProviderError):
        return exc.retry_after
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


_ERROR_CODE = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def describe_error(exc: BaseException) -> str:
    """A short, secret-free description of a provider error.

    For an HTTP error: the status, the exception type and the provider's error code
    (``model_not_found``) when it is a plain token — never the reply's text, which a
    caller-chosen endpoint controls (and providers echo partly masked keys in it).
    A reply over the size limit is named as such. Otherwise the type, with a message
    only where the message cannot quote the reply: the client's own for a timeout or a
    refused connection, ours for an unusable verdict, the position of invalid JSON,
    and the fields of a pydantic validation error (without their input). Other
    exceptions (an SDK's "unexpected response: '<the body>'", an output parser's
    "failed to parse <the text>") give their type and say the message is withheld:
    the endpoint may be one the caller chose, in a network only the operator should
    reach.
    """
    if isinstance(exc, RemoteProviderError):
        return exc.description
    too_large = reply_too_large(exc)
    if too_large is not None:
        return f"{type(too_large).__name__}: {too_large}"
    status = status_code_of(exc)
    if status is not None:
        if status in (401, 403):
            return f"HTTP {status} {type(exc).__name__}: the provider rejected the credentials"
        code = getattr(exc, "code", None)
        detail = f" ({code})" if isinstance(code, str) and _ERROR_CODE.fullmatch(code) else ""
        return f"HTTP {status} {type(exc).__name__}{detail}"
    detail = redact(_message_without_reply(exc))[:200]
    if not detail:
        return f"{type(exc).__name__} (message withheld: it may quote the endpoint's reply)"
    return f"{type(exc).__name__}: {detail}"


def _message_without_reply(exc: BaseException) -> str:
    """The part of `exc`'s message that `describe_error` may show ("" for none)."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        problems = exc.errors(include_input=False, include_url=False, include_context=False)
        return "; ".join(
            f"{'.'.join(map(str, problem['loc'])) or 'reply'}: {problem['msg']}" for problem in problems[:3]
        )
    if isinstance(exc, VerdictParseError | json.JSONDecodeError) or _is_transport_error(exc):
        return str(exc)
    return ""
