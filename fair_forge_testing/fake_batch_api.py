"""A fake of OpenAI's Batch API (files and batches) on top of `FakeLLMServer`, for tests.

`FakeBatchServer` is a `FakeLLMServer` (one `base_url` still answers `POST /chat/completions`) that
also serves, under /v1: `POST /files` (multipart: `purpose` "batch", `file` a `.jsonl` file),
`GET /files/{id}`, `GET /files/{id}/content` (raw bytes), `DELETE /files/{id}`, `POST /batches`
(`input_file_id`, `endpoint` "/v1/chat/completions", `completion_window` "24h", optional
`metadata`), `GET /batches` (a cursor page: `limit`, `after`), `GET /batches/{id}`, `POST /batches/{id}/cancel`. These need
`Authorization: Bearer <key>` (any key, or `api_key` when set), else a 401 in OpenAI's error shape.
An upload is checked as OpenAI's reference describes the input (JSON objects; `custom_id` strings
unique in the file; `method` "POST"; one `url`, "/v1/chat/completions"; `body` an object with a
string `model`; at most `max_requests` lines and `max_file_bytes` bytes): a 400 names line and field.

No time passes: each `GET /batches/{id}` is a tick. A new batch is "validating"; its first
`polls_until_done` retrieves show "in_progress" (each answering `lines_per_poll` more lines), the
next runs the rest and ends it. A line's `body` gets `FakeLLMServer.answer`: what `POST
/v1/chat/completions` would get (script, seeded faults, responder, `usage`), without rate limit,
latency or hang. Output and error files are JSONL in input order: a 2xx answer in the output file,
others in the error file (`"response": {"status_code", "request_id", "body"}, "error": null`). With
`expire_after=N` lines past the first N do not run: the batch ends "expired", they are error lines
`"response": null, "error": {"code": "batch_expired", ...}`. A cancelled batch is "cancelling", and
"cancelled" at its next retrieve with unanswered lines as "batch_cancelled" errors. With
`fail_batch_with="..."` the next retrieve ends it "failed" with that `errors.data[0].message`.
`request_counts.failed` counts every error-file line. Knobs (`polls_until_done`=1, `lines_per_poll`=0,
`expire_after`, `fail_batch_with`, `api_key`) are constructor arguments and attributes that may change
while the server runs. Inspection: `batches`, `files` (copies), `batch_requests`,
`batch_lines_answered`; `requests`, `call_count`, `status_counts` count only online chat completions.
The input file's checks are `fake_batch_input`; Azure OpenAI's routes are `fake_azure_batch_api`
and Groq's `fake_groq_batch_api` (through the hooks `api_prefix`, `endpoints`, `empty_error_file`,
`_authorize`, `_parse_input`, `_window_seconds`, `_list_batches`).
Only the standard library is used.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field, fields
from typing import Any

from fair_forge_testing.fake_batch_input import (
    BATCH_ENDPOINTS,
    MAX_FILE_BYTES,
    MAX_REQUESTS,
    ApiError,
    check_metadata,
    parse_batch_input,
    parse_form,
)
from fair_forge_testing.fake_llm_server import FakeLLMServer, RecordedRequest

__all__ = ["BATCH_ENDPOINTS", "ApiError", "BatchRecord", "FakeBatchServer", "StoredFile", "parse_batch_input"]

COMPLETION_WINDOWS = ("24h",)
WINDOW_S = 24 * 3600
_EXPIRED = "This request could not be executed before the completion window expired."
_CANCELLED = "This request was not executed because the batch was cancelled."
# The error of a line that did not run, by the batch's final status.
NOT_RUN_ERRORS = {
    "expired": {"code": "batch_expired", "message": _EXPIRED},
    "cancelled": {"code": "batch_cancelled", "message": _CANCELLED},
}
TERMINAL = frozenset({"failed", "completed", "expired", "cancelled"})
_TIMES: tuple[str, ...] = ("in_progress_at", "expires_at", "finalizing_at", "completed_at")
_TIMES += ("failed_at", "expired_at", "cancelling_at", "cancelled_at")
_INTERNAL = ("lines", "retrieves", "results", "times")  # BatchRecord fields that are not in the Batch object
_BATCH_API = re.compile(r"/(files|batches)(/.*)?")  # after the server's `api_prefix`
_NO_KEY = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header "
    "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
)


@dataclass
class StoredFile:
    """An uploaded input file or a batch's output or error file; `lines` are the parsed requests."""

    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int
    lines: list[dict[str, Any]] = field(default_factory=list)

    def as_object(self) -> dict[str, Any]:
        """The File object."""
        named = {name: getattr(self, name) for name in ("id", "filename", "purpose", "created_at")}
        return named | {"object": "file", "bytes": len(self.content), "status": "processed", "expires_at": None}


@dataclass
class BatchRecord:
    """One batch: what was asked, how far it got. `results[i]` is line i's output line once
    answered (None before); `retrieves` counts `GET /batches/{id}`; `times` holds the `*_at` stamps."""

    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None
    lines: list[dict[str, Any]]
    created_at: int
    status: str = "validating"
    retrieves: int = 0
    results: list[dict[str, Any] | None] = field(default_factory=list)
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: dict[str, Any] | None = None
    times: dict[str, int] = field(default_factory=dict)

    def request_counts(self) -> dict[str, int]:
        answered = [result for result in self.results if result is not None]
        completed = sum(1 for result in answered if _succeeded(result))
        not_run = len(self.lines) - len(answered) if self.status in NOT_RUN_ERRORS else 0
        failed = len(answered) - completed + not_run
        return {"total": len(self.lines), "completed": completed, "failed": failed}

    def as_object(self) -> dict[str, Any]:
        """The Batch object."""
        named = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _INTERNAL}
        times = {name: self.times.get(name) for name in _TIMES}
        model = str(self.lines[0]["body"]["model"])
        return named | times | {"object": "batch", "model": model, "request_counts": self.request_counts()}


def _succeeded(result: dict[str, Any]) -> bool:
    return result["response"] is not None and 200 <= result["response"]["status_code"] < 300


# --------------------------------------------------------------------------- server

_Answer = tuple[int, "dict[str, Any] | bytes"]
_ROUTES = (  # (method, path pattern after `api_prefix`, route method)
    ("POST", r"/files", "_upload_file"),
    ("GET", r"/files/(?P<id>[^/]+)", "_get_file"),
    ("GET", r"/files/(?P<id>[^/]+)/content", "_get_file_content"),
    ("DELETE", r"/files/(?P<id>[^/]+)", "_delete_file"),
    ("POST", r"/batches", "_create_batch"),
    ("GET", r"/batches", "_list_batches"),
    ("GET", r"/batches/(?P<id>[^/]+)", "_retrieve_batch"),
    ("POST", r"/batches/(?P<id>[^/]+)/cancel", "_cancel_batch"),
)


def _json_or_none(raw: bytes) -> dict[str, Any] | None:
    """`raw` as a JSON object, else None (an upload, an empty or a broken body)."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _json_object(raw: bytes) -> dict[str, Any]:
    body = _json_or_none(raw)
    if body is None:
        raise ApiError(400, "The request body is not a JSON object.")
    return body


def _find(table: dict[str, Any], key: object, kind: str, param: str) -> Any:
    """`table[key]`, else a 404 "No such <kind> object"."""
    if str(key) not in table:
        raise ApiError(404, f"No such {kind} object: {key}", param=param)
    return table[str(key)]


class FakeBatchServer(FakeLLMServer):
    """`FakeLLMServer` plus OpenAI's Files and Batches endpoints (see the module docstring); other
    keyword arguments go to `FakeLLMServer` (responder, script, usage, faults), which answers the lines."""

    max_requests: int = MAX_REQUESTS  # the input file's limits; an instance may lower them
    max_file_bytes: int = MAX_FILE_BYTES
    api_prefix = "/v1"  # where the Files and Batches routes are
    endpoints = BATCH_ENDPOINTS  # the lines' accepted `url`s
    empty_error_file = False  # a batch with no error line has `error_file_id` null (True: an empty file)

    def __init__(
        self,
        *args: Any,
        polls_until_done: int = 1,
        lines_per_poll: int = 0,
        expire_after: int | None = None,
        fail_batch_with: str | None = None,
        api_key: str | None = None,
        **kwargs: Any,
    ) -> None:
        if min(polls_until_done, lines_per_poll, expire_after or 0) < 0:
            raise ValueError("polls_until_done, lines_per_poll and expire_after must be >= 0")
        self._batch_lock = threading.RLock()
        self.polls_until_done, self.lines_per_poll = polls_until_done, lines_per_poll
        self.expire_after, self.fail_batch_with, self.api_key = expire_after, fail_batch_with, api_key
        self._files: dict[str, StoredFile] = {}
        self._batches: dict[str, BatchRecord] = {}
        self._batch_requests: list[RecordedRequest] = []
        self._lines_answered = 0
        self._ids = itertools.count(1)
        super().__init__(*args, **kwargs)

    def __enter__(self) -> FakeBatchServer:
        return self

    @property
    def batches(self) -> dict[str, BatchRecord]:
        """Every batch by id, oldest first (deep copies)."""
        with self._batch_lock:
            return copy.deepcopy(self._batches)

    @property
    def files(self) -> dict[str, StoredFile]:
        """Every stored file by id (uploads, outputs and error files), oldest first (copies)."""
        with self._batch_lock:
            return copy.deepcopy(self._files)

    @property
    def batch_requests(self) -> list[RecordedRequest]:
        """Every Batch API call (files and batches), oldest first; `body` is None for uploads."""
        with self._batch_lock:
            return list(self._batch_requests)

    @property
    def batch_lines_answered(self) -> int:
        """How many batch lines were answered (each by `FakeLLMServer.answer`)."""
        with self._batch_lock:
            return self._lines_answered

    def _handle(self, handler: Any) -> None:
        if not self._serve_batch_api(handler):
            super()._handle(handler)

    def _handle_other(self, handler: Any) -> None:
        if not self._serve_batch_api(handler):
            super()._handle_other(handler)

    def _serve_batch_api(self, handler: Any) -> bool:
        """Answer a Files or Batches call (True), or leave any other request alone (False)."""
        path = handler.path.partition("?")[0].removeprefix(self.api_prefix)
        if not handler.path.startswith(self.api_prefix + "/") or not _BATCH_API.fullmatch(path):
            return False
        length = int(handler.headers.get("Content-Length") or 0)
        headers = {name.lower(): value for name, value in handler.headers.items()}
        headers[":query"] = handler.path.partition("?")[2]  # as HTTP/2's pseudo-headers: for the list's cursor
        raw = handler.rfile.read(length) if length else b""
        record = RecordedRequest(handler.path, _json_or_none(raw), headers, time.time())
        with self._batch_lock:
            self._batch_requests.append(record)
        try:
            self._authorize(handler.path, headers)
            status, payload = self._route(handler.command, path, raw, headers)
        except ApiError as error:
            status, payload = error.status, error.body()
        record.status = status
        _write(handler, status, payload)
        return True

    def _authorize(self, target: str, headers: dict[str, str]) -> None:
        """An `ApiError` (401) unless `headers` (lower-case names) carry a bearer key (`api_key`'s when set)."""
        authorization = headers.get("authorization") or ""
        key = authorization[len("Bearer ") :].strip() if authorization.startswith("Bearer ") else ""
        if not key:
            raise ApiError(401, _NO_KEY)
        if self.api_key is not None and key != self.api_key:
            raise ApiError(401, "Incorrect API key provided.", code="invalid_api_key")

    def _route(self, verb: str, path: str, raw: bytes, headers: dict[str, str]) -> _Answer:
        for method, pattern, name in _ROUTES:
            match = re.fullmatch(pattern, path)
            if match and method == verb:
                with self._batch_lock:
                    answer: _Answer = getattr(self, name)(match.groupdict().get("id", ""), raw, headers)
                    return answer
        raise ApiError(404, f"Unknown path {verb} {path}.")

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def _store(self, filename: str, purpose: str, content: bytes, lines: list[dict[str, Any]]) -> StoredFile:
        stored = StoredFile(self._new_id("file-fake"), filename, purpose, content, int(time.time()), lines)
        self._files[stored.id] = stored
        return stored

    def _upload_file(self, path_id: str, raw: bytes, headers: dict[str, str]) -> _Answer:
        form = parse_form(headers.get("content-type", ""), raw)
        purpose = form.get("purpose", (None, b""))[1].decode("utf-8", "replace")
        if purpose != "batch":
            raise ApiError(400, f"Invalid purpose {purpose!r}: this fake accepts only 'batch'.", param="purpose")
        filename, content = form.get("file", (None, b""))
        if filename is None:
            raise ApiError(400, "The `file` field (a file) is missing.", param="file")
        return 200, self._store(filename, purpose, content, self._parse_input(filename, content)).as_object()

    def _parse_input(self, filename: str, content: bytes) -> list[dict[str, Any]]:
        """The requests of an uploaded input file (`parse_batch_input` with this server's limits)."""
        return parse_batch_input(filename, content, self.max_requests, self.max_file_bytes, self.endpoints)

    def _get_file(self, path_id: str, raw: bytes, headers: dict[str, str]) -> _Answer:
        return 200, _find(self._files, path_id, "File", "file_id").as_object()

    def _get_file_content(self, path_id: str, raw: bytes, headers: dict[str, str]) -> _Answer:
        return 200, _find(self._files, path_id, "File", "file_id").content

    def _delete_file(self, path_id: str, raw: bytes, headers: dict[str, str]) -> _Answer:
        del self._files[_find(self._files, path_id, "File", "file_id").id]
        return 200, {"id": path_id, "object": "file", "deleted": True}

    def _create_batch(self, path_id: str, raw: bytes, headers: dict[str, str]) -> _Answer:
        body = _json_object(raw)
        source = _find(self._files, body.get("input_file_id"), "File", "input_file_id")
        if source.purpose != "batch":
            raise ApiError(400, f"File {source.id} has purpose {source.purpose!r}, not 'batch'.", param="input_file_id")
        endpoint, url = body.get("endpoint"), source.lines[0]["url"]
        if endpoint != url:
            message = f"The endpoint {endpoint!r} does not match the url {url!r} of the input file's requests."
            raise ApiError(400, message, param="endpoint")
        window = body.get("completion_window")
        window_s = self._window_seconds(window)
        now = int(time.time())
        record = BatchRecord(
            id=self._new_id("batch_fake"),
            input_file_id=source.id,
            endpoint=url,
            completion_window=window,
            metadata=check_metadata(body.get("metadata")),
            lines=copy.deepcopy(source.lines),
            created_at=now,
            results=[None] * len(source.lines),
            times={"expires_at": now + window_s},
        )
        self._batches[record.id] = record
        return 200, record.as_object()

    def _window_seconds(self, window: object) -> int:
        """The seconds of a `completion_window` this API accepts ("24h"), else a 400."""
        if window not in COMPLETION_WINDOWS:
            raise ApiError(400, f"`completion_window` must be '24h', got {window!r}.", param="completion_window")
        return WINDOW_S

    def _list_batches(self, path_id: str, raw: bytes, headers: dict[str, str]) -> _Answer:
        """A cursor page, newest first: `limit` (1..100, default 20) batches after the id `after`."""
        query = urllib.parse.parse_qs(headers.get(":query", ""))
        limit = int((query.get("limit") or ["20"])[0])
        if not 1 <= limit <= 100:
            raise ApiError(400, f"limit must be between 1 and 100, got {limit}.", param="limit")
        newest_first = list(reversed(self._batches.values()))
        after = query.get("after", [""])[0]
        start = next((n + 1 for n, record in enumerate(newest_first) if record.id == after), 0)
        page = [record.as_object() for record in newest_first[start : start + limit]]
        return 200, {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": start + limit < len(newest_first),
        }

    def _retrieve_batch(self, path_id: str, raw: bytes, headers: dict[str, str]) -> _Answer:
        record = _find(self._batches, path_id, "Batch", "batch_id")
        if record.status not in TERMINAL:
            record.retrieves += 1
            self._advance(record)
        return 200, record.as_object()

    def _cancel_batch(self, path_id: str, raw: bytes, headers: dict[str, str]) -> _Answer:
        record = _find(self._batches, path_id, "Batch", "batch_id")
        if record.status in TERMINAL:
            raise ApiError(400, f"Cannot cancel a batch with status {record.status!r}.", param="batch_id")
        if record.status != "cancelling":
            record.status = "cancelling"
            record.times["cancelling_at"] = int(time.time())
        return 200, record.as_object()

    def _advance(self, record: BatchRecord) -> None:
        """One tick of `record`'s clock (a retrieve of a batch not yet finished)."""
        now = int(time.time())
        if record.status == "cancelling":
            return self._finish(record, "cancelled")
        if self.fail_batch_with is not None:
            error = {"code": "batch_failed", "message": self.fail_batch_with, "param": None, "line": None}
            record.errors = {"object": "list", "data": [error]}
            record.status = "failed"
            record.times["failed_at"] = now
            return None
        record.times.setdefault("in_progress_at", now)
        if record.retrieves <= self.polls_until_done:
            record.status = "in_progress"
            self._run_lines(record, self.lines_per_poll)
            return None
        self._run_lines(record, len(record.lines))
        return self._finish(record, "completed" if None not in record.results else "expired")

    def _run_lines(self, record: BatchRecord, how_many: int) -> None:
        """Answer up to `how_many` more lines, in input order, never more than `expire_after` in all."""
        limit = self.expire_after
        for index, result in enumerate(record.results):
            if how_many <= 0 or (limit is not None and index >= limit):
                return
            if result is None:
                record.results[index] = self._answer_line(record.lines[index])
                how_many -= 1

    def _answer_line(self, line: dict[str, Any]) -> dict[str, Any]:
        status, body = self.answer(copy.deepcopy(line["body"]))
        self._lines_answered += 1
        response = {"status_code": status, "request_id": self._new_id("req_fake_batch"), "body": body}
        result = {"id": self._new_id("batch_req_fake"), "custom_id": line["custom_id"], "response": response}
        return result | {"error": None}

    def _finish(self, record: BatchRecord, status: str) -> None:
        """End `record` with `status`; write its output and error files (one line a request)."""
        now = int(time.time())
        outputs: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line, result in zip(record.lines, record.results, strict=True):
            if result is None:
                result = {"id": self._new_id("batch_req_fake"), "custom_id": line["custom_id"], "response": None}
                result["error"] = dict(NOT_RUN_ERRORS[status])
            (outputs if _succeeded(result) else errors).append(result)
        record.output_file_id = self._store_results(record, "output", outputs)
        record.error_file_id = self._store_results(record, "error", errors)
        record.status = status
        record.times |= {"finalizing_at": now, f"{status}_at": now}

    def _store_results(self, record: BatchRecord, kind: str, results: list[dict[str, Any]]) -> str | None:
        if not results and not (kind == "error" and self.empty_error_file):
            return None
        content = "".join(json.dumps(result) + "\n" for result in results).encode()
        return self._store(f"{record.id}_{kind}.jsonl", "batch_output", content, []).id


def _write(handler: Any, status: int, payload: dict[str, Any] | bytes) -> None:
    """Send a JSON body (or raw bytes as application/octet-stream); a client gone is not an error."""
    if isinstance(payload, bytes):
        raw, kind = payload, "application/octet-stream"
    else:
        raw, kind = json.dumps(payload).encode(), "application/json"
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)
        handler.wfile.flush()
    except OSError:
        handler.close_connection = True
