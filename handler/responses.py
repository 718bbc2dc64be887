"""The bodies every route and Lambda of the service answers with: the error contract and the result's JSON.

Errors follow DESIGN.md §3: `{"success": false, "error", "request_id"[, "details"]}`,
400 for the request, 413 for size, 502 when the judge provider refuses or nothing
could be scored, 500 only for a defect — never a stack trace or a secret.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

from fair_forge_core.redact import redact
from handler.observability import current_secrets


def request_id(router: BaseRouter) -> str | None:
    """API Gateway's id of the request `router` is resolving (None outside a request)."""
    # getattr: a handler of an exception raised before the event was parsed has no event.
    event = getattr(router, "current_event", None)
    context = getattr(event, "request_context", None)
    return context.request_id if context is not None else None


def error_response(
    status: int, message: str, request_id: str | None, details: list[dict[str, str]] | None = None
) -> Response:
    """The error contract: success false, a message, the request id, and details when any."""
    body: dict[str, Any] = {"success": False, "error": redact(message, current_secrets()), "request_id": request_id}
    if details:
        body["details"] = details
    return Response(status_code=status, content_type="application/json", body=json.dumps(body))


def json_body(result: Any, request_id: str | None, **trailing: str | None) -> str:
    """The result's JSON with `request_id` (then any `trailing` fields) last: pydantic
    serialises it in one pass (no intermediate dicts), which for 10^5 turns is several
    times faster than `json.dumps(result.model_dump())`."""
    fields = {"request_id": request_id, **trailing}
    return result.model_dump_json()[:-1] + "".join(f",{json.dumps(k)}:{json.dumps(v)}" for k, v in fields.items()) + "}"


def payload_size(body: str) -> int:
    """Bytes `body` takes inside the proxy response the function returns: Lambda's 6 MB
    limit counts the body JSON-escaped (quotes and backslashes doubled, non-ASCII as
    \\uXXXX), which is up to several times its UTF-8 size."""
    return len(json.dumps(body))
