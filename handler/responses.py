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
from fair_forge_core.schemas import ConversationMetrics, EvaluationResult
from fair_forge_core.schemas.result import RESULT_FORMAT
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

    def body(self) -> str:
        """`model_dump_json()`, character for character, written a conversation at a time.

        One `model_dump_json` of a result holds its JSON about four times over while it converts
        (pydantic's byte buffer, grown by doubling, and the `str` made of it): 180 MB beyond the
        result for a body of 43 MB (10,000 conversations of 5 turns). Here the response without
        its conversations is dumped (`"per_conversation_metrics":[]` is its third key, the two
        before it constants: `_HEAD`), each conversation alone (a model's JSON is the same alone
        as in a list), and the pieces joined once into that list's place: the pieces and the
        body, about twice the body. A response whose JSON does not begin with `_HEAD` (a subclass
        with other first fields) is dumped whole."""
        conversations = self.per_conversation_metrics
        head = self.model_copy(update={"per_conversation_metrics": []}).model_dump_json()
        if not conversations:
            return head
        if not head.startswith(_HEAD):
            return self.model_dump_json()
        cut = len(_HEAD) - 1  # the list's closing bracket
        dump = ConversationMetrics.__pydantic_serializer__.to_json  # as the list's items are dumped
        pieces = [dump(m).decode() for m in conversations]
        pieces[0] = head[:cut] + pieces[0]
        pieces[-1] += head[cut:]
        return ",".join(pieces)


_HEAD = '{"format_version":"' + RESULT_FORMAT + '","success":true,"per_conversation_metrics":[]'
"""How a result's JSON begins when it has no conversation: its two constant fields, then the list."""


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
    return 2 + sum(_escaped_size(body[start : start + chunk]) for start in range(0, len(body), chunk))


_ESCAPED_AS_SIX = bytes([*range(0x20), 0x7F])
"""The ASCII characters `json.dumps` writes as six (`\\u00XX`, or two for `\\n` and its kind: so
a slice holding one is escaped by `json.dumps` itself)."""


def _escaped_size(text: str) -> int:
    """`len(json.dumps(text)) - 2`. A slice of printable ASCII (a JSON body's usual case: pydantic
    writes no raw control character) is counted without escaping it: each quote and backslash
    is two characters, every other character one; any other slice is escaped."""
    if text.isascii():
        raw = text.encode("ascii")
        if len(raw.translate(None, _ESCAPED_AS_SIX)) == len(raw):
            return len(raw) + raw.count(b'"') + raw.count(b"\\")
    return len(json.dumps(text)) - 2
