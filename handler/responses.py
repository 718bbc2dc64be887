"""The bodies every route and Lambda of the service answers with: the error contract and the result's JSON.

Errors follow docs/response.md: `{"success": false, "error", "request_id"[, "details"]}`,
400 for the request, 413 for size, 502 when the judge provider refuses or nothing
could be scored, 500 only for a defect — never a stack trace or a secret.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

from fair_forge_core.redact import redact
from fair_forge_core.schemas import EvaluationResult
from handler.observability import current_secrets


def request_id(router: BaseRouter) -> str | None:
    """API Gateway's id of the request `router` is resolving (None outside a request)."""
    # getattr: a handler of an exception raised before the event was parsed has no event.
    event = getattr(router, "current_event", None)
    context = getattr(event, "request_context", None)
    return context.request_id if context is not None else None


def error_response(
    status: int,
    message: str,
    request_id: str | None,
    details: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """The error contract: success false, a message, the request id, and details when any;
    `headers` are added to the response (a 405's `Allow`)."""
    body: dict[str, Any] = {"success": False, "error": redact(message, current_secrets()), "request_id": request_id}
    if details:
        body["details"] = details
    return Response(status_code=status, content_type="application/json", body=json.dumps(body), headers=headers)


class RunResponse(EvaluationResult):
    """The 200 body of `POST /run`: the evaluation's result, then the request's id."""

    request_id: str | None = None

    @classmethod
    def of(cls, result: EvaluationResult, request_id: str | None, **more: Any) -> RunResponse:
        # No second validation of a result that is already one (10^5 turns would pay for it).
        return cls.model_construct(**dict(result), request_id=request_id, **more)


class JobResult(RunResponse):
    """What a finished job stores and `GET /jobs/{id}` returns: the `/run` body, then the job's id."""

    job_id: str


PAYLOAD_CHUNK_CHARS = 1 << 20


def payload_size(body: str, chunk: int = PAYLOAD_CHUNK_CHARS) -> int:
    """Bytes `body` takes inside the proxy response the function returns: Lambda's 6 MB
    limit counts the body JSON-escaped (quotes and backslashes doubled, non-ASCII as
    \\uXXXX), which is up to several times its UTF-8 size.

    Exactly `len(json.dumps(body))`, counted a slice of `chunk` characters at a time: the
    escaping is character by character (a character beyond U+FFFF is one character of a
    str, written as its surrogate pair whole), so the slices' escaped lengths add up, and the escaped copy of a 25 MB body (several times its size) is never
    held whole. Each slice's two quotes are taken off, the body's two added back.
    """
    return 2 + sum(len(json.dumps(body[start : start + chunk])) - 2 for start in range(0, len(body), chunk))
