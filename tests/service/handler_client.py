"""Calling `lambda_handler` with real API Gateway REST proxy events, as API Gateway does."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from handler.app import lambda_handler
from handler.local import LocalLambdaContext, make_proxy_event


@dataclass
class HandlerResponse:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]
    raw: str


def call_handler(
    body: Any = None,
    *,
    method: str = "POST",
    path: str = "/run",
    raw: str | bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout_s: float = 60.0,
) -> HandlerResponse:
    """Invoke the handler; `body` is sent as JSON, `raw` as it is."""
    payload = raw if raw is not None else (json.dumps(body) if body is not None else None)
    event = make_proxy_event(method, path, payload, headers={"Content-Type": "application/json", **(headers or {})})
    response = lambda_handler(event, LocalLambdaContext(timeout_s=timeout_s))
    text = response.get("body") or ""
    headers = dict(response.get("headers") or {})
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers.setdefault(name, ", ".join(values))
    return HandlerResponse(
        status=response["statusCode"],
        body=json.loads(text) if text else {},
        headers=headers,
        raw=text,
    )
