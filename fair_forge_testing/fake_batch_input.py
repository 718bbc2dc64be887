"""The input of a fake Batch API (`fake_batch_api`, `fake_azure_batch_api`): an upload's
multipart form, the input file's lines and a batch's metadata, checked as OpenAI's Batch API
reference describes them (Azure's describes the same lines, with its own `url`), and the error
they answer (`ApiError`, in OpenAI's shape). Only the standard library is used.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "BATCH_ENDPOINTS",
    "MAX_FILE_BYTES",
    "MAX_REQUESTS",
    "ApiError",
    "check_metadata",
    "parse_batch_input",
    "parse_form",
]

BATCH_ENDPOINTS = ("/v1/chat/completions",)
"""The lines' accepted `url`s on OpenAI's routes."""
MAX_REQUESTS = 50_000
MAX_FILE_BYTES = 200 * 1024 * 1024


class ApiError(Exception):
    """An error answered in OpenAI's shape `{"error": {"message", "type", "param", "code"}}`."""

    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def body(self) -> dict[str, Any]:
        kind = "server_error" if self.status >= 500 else "invalid_request_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


def parse_batch_input(
    filename: str, data: bytes, max_requests: int, max_file_bytes: int, endpoints: tuple[str, ...] = BATCH_ENDPOINTS
) -> list[dict[str, Any]]:
    """The requests of a batch input file, checked as OpenAI's reference describes them (each
    `url` one of `endpoints`); an `ApiError` (400) names the first problem, with its line number
    (1-based, blank lines skipped)."""
    if not filename.endswith(".jsonl"):
        raise ApiError(400, f"Invalid file format for Batch API: {filename!r} must be a .jsonl file.", param="file")
    if len(data) > max_file_bytes:
        raise ApiError(400, f"The file is {len(data)} bytes; at most {max_file_bytes} are allowed.", param="file")
    lines: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(data.splitlines(), start=1):
        if raw.strip():
            lines.append(_check_line(number, raw, first_line, lines[0]["url"] if lines else None, endpoints))
    if not lines:
        raise ApiError(400, "The file has no requests.", param="file")
    if len(lines) > max_requests:
        raise ApiError(400, f"The file has {len(lines)} requests; at most {max_requests} are allowed.", param="file")
    return lines


def _check_line(
    number: int, raw: bytes, first_line: dict[str, int], url: str | None, endpoints: tuple[str, ...]
) -> dict[str, Any]:
    """One input line parsed and checked; `first_line` maps each custom_id seen to its line."""
    try:
        line = json.loads(raw)
    except ValueError:
        raise ApiError(400, f"Line {number} is not valid JSON.", param="file") from None
    if not isinstance(line, dict):
        raise ApiError(400, f"Line {number} is not a JSON object.", param="file")
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str):
        raise ApiError(400, f"Line {number}: `custom_id` must be a string.", param="custom_id")
    if custom_id in first_line:
        message = f"Line {number}: `custom_id` {custom_id!r} is not unique (also on line {first_line[custom_id]})."
        raise ApiError(400, message, param="custom_id")
    first_line[custom_id] = number
    if line.get("method") != "POST":
        raise ApiError(400, f"Line {number}: `method` must be 'POST', got {line.get('method')!r}.", param="method")
    if line.get("url") not in endpoints:
        message = f"Line {number}: `url` must be one of {list(endpoints)}, got {line.get('url')!r}."
        raise ApiError(400, message, param="url")
    if url is not None and line["url"] != url:
        raise ApiError(400, f"Line {number}: `url` {line['url']!r} differs from line 1's {url!r}.", param="url")
    body = line.get("body")
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        raise ApiError(400, f"Line {number}: `body` must be an object with a string `model`.", param="body")
    return line


def check_metadata(metadata: object) -> dict[str, str] | None:
    """`metadata` as OpenAI allows it: at most 16 pairs, string keys ≤ 64 and values ≤ 512 chars."""
    if metadata is None:
        return None
    pairs = metadata.items() if isinstance(metadata, dict) and len(metadata) <= 16 else None
    if pairs is None or not all(isinstance(v, str) and len(k) <= 64 and len(v) <= 512 for k, v in pairs):
        message = "`metadata`: at most 16 pairs of strings, keys ≤ 64 and values ≤ 512 chars."
        raise ApiError(400, message, param="metadata")
    return dict(pairs)


def parse_form(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (filename or None, exact bytes)."""
    boundary = re.search(r'boundary="?([^";]+)"?', content_type)
    if not content_type.startswith("multipart/form-data") or boundary is None:
        raise ApiError(400, "The body must be multipart/form-data.")
    form: dict[str, tuple[str | None, bytes]] = {}
    for part in raw.split(b"--" + boundary.group(1).encode())[1:]:
        head, sep, value = part.partition(b"\r\n\r\n")
        disposition = head.decode("utf-8", "replace")
        name = re.search(r'\bname="([^"]*)"', disposition)
        if sep and name:
            filename = re.search(r'\bfilename="([^"]*)"', disposition)
            form[name.group(1)] = (filename.group(1) if filename else None, value.removesuffix(b"\r\n"))
    return form
