"""A small OpenAI-compatible chat-completions server for tests and benchmarks.

`FakeLLMServer` listens on 127.0.0.1 only, on an ephemeral port, and answers
`POST /v1/chat/completions` (what `ChatOpenAI(base_url=server.base_url)` calls)
and `POST /openai/v1/chat/completions` (what the groq SDK behind
`ChatGroq(base_url=server.groq_base_url)` calls). The real LangChain clients and
their SDKs therefore run end to end, retries and timeouts included.

What the assistant says comes from a pluggable *responder* (by default
`judge_responder`, a deterministic judge verdict). The server renders it in the
shape the request asked for:

* plain text (no `response_format`, no tools): the JSON object fenced as
  "```json\\n{...}\\n```", the marker mode of the judge prompt;
* `response_format={"type": "json_schema", ...}`: the JSON object as content;
* `response_format={"type": "json_object"}` (json mode): the JSON object as content;
* `tools` (unless `tool_choice` is "none"): one `tool_calls` entry calling the
  tool forced by `tool_choice`, or the first tool, with the object as arguments.

Token usage: every 200 completion carries a `usage` object. By default its counts are
rough (4 characters a token, no cached tokens); `usage=` (a function of the request
returning the usage object, or None to send none) or a reply's own `usage` /
`omit_usage` make them exact, and `openai_usage(prompt, completion, cached)` builds one
in OpenAI's shape (`prompt_tokens_details.cached_tokens`, which LangChain reads as
`input_token_details.cache_read`). What was sent is in `RecordedRequest.usage`.

Faults and latency (`latency_s`, `rate_limit_rps`, `script`,
`fail_first_attempt_fraction`, `timeout_fraction`/`hang_s`, `garbage_fraction`)
are set at construction and can be changed while the server runs. Streaming
(`"stream": true`) is not supported: such requests get a 400.

Only the standard library is used.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import itertools
import json
import re
import socket
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fair_forge_core.judges.goal import parse_goal_request
from fair_forge_core.judges.prompt import parse_judge_request

__all__ = [
    "CHAT_COMPLETIONS_PATHS",
    "GARBAGE_CONTENT",
    "FakeLLMServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "judge_responder",
    "last_user_text",
    "openai_usage",
]

HOST = "127.0.0.1"
CHAT_COMPLETIONS_PATHS = frozenset({"/v1/chat/completions", "/openai/v1/chat/completions"})
GARBAGE_CONTENT = "Sure! Here is my verdict: {score: high, reasoning: [unterminated"
DEFAULT_RETRY_AFTER_S = 0.1
_CHUNK_BYTES = 64 * 1024
_STREAM_MESSAGE = "Streaming is not supported by FakeLLMServer."

# (type, code, message) of the OpenAI-style error body sent for each status.
_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Bad request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("permission_error", "permission_denied", "You are not allowed to use this model."),
    404: ("invalid_request_error", "not_found", "Not found."),
    408: ("timeout_error", "timeout", "Request timed out."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", "bad_gateway", "Bad gateway."),
    503: ("server_error", "service_unavailable", "The engine is currently overloaded."),
}


@dataclass
class Reply:
    """How to answer one request. Fields left at their default are filled by the server.

    * `status`: HTTP status. 400 and above send an OpenAI error body
      `{"error": {"message", "type", "code", "param"}}` built from `error_message`,
      `error_type` and `error_code`, or the defaults for that status (401 gives
      type "invalid_request_error", code "invalid_api_key"). A 429 carries
      `retry-after-ms` and `retry-after` headers for `retry_after_s`
      (default 0.1 s); other errors carry them only when `retry_after_s` is set.
    * `content`: the assistant's message text, sent verbatim (no rendering).
    * `data`: a JSON object rendered in the request's shape (fenced text, JSON
      content, or tool-call arguments).
    * `tool_calls`: tool calls sent verbatim, each either in OpenAI shape
      (`{"id", "type": "function", "function": {"name", "arguments"}}`) or short
      (`{"name": ..., "arguments": dict | str}`).
    * `hang_s`: seconds to wait before answering (after the server's latency),
      e.g. longer than a client's timeout.
    * `raw_body`: an HTTP body sent as is (status `status`), e.g. broken JSON.
    * `headers`: extra response headers; `finish_reason` overrides the default
      ("tool_calls" with tool calls, else "stop").
    * `chunked`: send the body in chunks (`Transfer-Encoding: chunked`), with no
      `Content-Length` to say its size in advance.
    * `usage`: the completion's `usage` object, sent verbatim (see `openai_usage`);
      `omit_usage`: send no `usage` at all. Both override the server's `usage` setting.

    A 200 reply with none of `content`, `data`, `tool_calls` or `raw_body` set
    takes its message from the responder, so `Reply(hang_s=5)` in a script is a
    slow but otherwise normal answer.
    """

    status: int = 200
    content: str | None = None
    data: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    error_message: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    retry_after_s: float | None = None
    hang_s: float = 0.0
    raw_body: str | bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str | None = None
    chunked: bool = False
    usage: dict[str, Any] | None = None
    omit_usage: bool = False

    def has_message(self) -> bool:
        """Whether this reply already says what the assistant's message is."""
        return self.content is not None or self.data is not None or self.tool_calls is not None


Responder = Callable[[dict[str, Any]], "Reply | str | dict[str, Any]"]
"""Takes the parsed request JSON, returns the assistant's message.

A `str` is sent verbatim as content, a `dict` is rendered in the request's shape,
a `Reply` gives full control.
"""


@dataclass
class RecordedRequest:
    """One request the server received, as the tests see it.

    `headers` has lower-case names; `body` is the parsed JSON (None when the body
    was not a JSON object); `status` is the HTTP status sent back (None while the
    request is in flight); `usage` is the `usage` object of the completion sent back
    (None for an error, a raw body, or a completion sent without one).
    """

    path: str
    body: dict[str, Any] | None
    headers: dict[str, str]
    received_at: float
    status: int | None = None
    usage: dict[str, Any] | None = None

    @property
    def authorization(self) -> str | None:
        """The `Authorization` header as received, e.g. "Bearer sk-test"."""
        return self.headers.get("authorization")

    @property
    def api_key(self) -> str | None:
        """The API key of a bearer `Authorization` header, else None."""
        value = self.authorization
        if value is None or not value.startswith("Bearer "):
            return None
        return value[len("Bearer ") :]


# --------------------------------------------------------------------------- responder


def last_user_text(request: dict[str, Any]) -> str:
    """The text of the last user message of a chat-completions request ("" when none).

    Content given as a list of parts is joined from its text parts.
    """
    for message in reversed(request.get("messages") or []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(
                part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
            )
        return ""
    return ""


def _normalise(text: str) -> str:
    """Case-folded words of `text` separated by single spaces, punctuation dropped."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.findall(r"\w+", text))


def judge_responder(request: dict[str, Any]) -> dict[str, Any]:
    """A deterministic judge verdict `{"score": float, "reasoning": str}`.

    Reads the evaluation data from the last user message (see
    `parse_judge_request`); a goal question (`judges.goal`) gets `_goal_verdict`'s. The score is 1.0 when the normalised agent answer
    contains the normalised ground truth as whole words, else 0.0 (also 0.0 when
    there is no evaluation data or the ground truth is empty).
    """
    goal = parse_goal_request(last_user_text(request))
    if goal is not None:
        return _goal_verdict(goal)
    judged = parse_judge_request(last_user_text(request))
    if judged is None:
        return {"score": 0.0, "reasoning": "No evaluation data found in the last user message."}
    truth = _normalise(judged.ground_truth)
    answer = _normalise(judged.answer)
    if not truth:
        return {"score": 0.0, "reasoning": "The ground truth is empty, so nothing can be confirmed."}
    if f" {truth} " in f" {answer} ":
        return {"score": 1.0, "reasoning": f"The answer contains the ground truth {judged.ground_truth!r}."}
    return {
        "score": 0.0,
        "reasoning": f"The answer does not contain the ground truth {judged.ground_truth!r}.",
    }


def _goal_verdict(goal: dict[str, Any]) -> dict[str, Any]:
    """A deterministic goal verdict: each criterion is met when the conversation's last agent
    answer contains it (normalised, as whole words); the goal is achieved when every criterion
    is met, or, without criteria, when that answer contains the goal's text."""
    turns = goal.get("conversation", {}).get("turns") or [{}]
    answer = f" {_normalise(str(turns[-1].get('agent', '')))} "
    criteria = [str(c) for c in goal.get("criteria") or []] or [str(goal.get("goal", ""))]
    unmet = [c for c in criteria if f" {_normalise(c)} " not in answer]
    return {
        "goal_achieved": not unmet,
        "reasoning": "Every criterion is met by the last answer." if not unmet else "The last answer misses criteria.",
        "unmet_criteria": unmet,
    }


def _as_reply(value: Reply | str | dict[str, Any]) -> Reply:
    """A responder's or script's value as a `Reply`."""
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(content=value)
    if isinstance(value, dict):
        return Reply(data=value)
    raise TypeError(f"expected Reply, str or dict, got {type(value).__name__}")


def _messages_key(request: dict[str, Any] | None) -> str:
    """A stable hash of the request's messages: what identifies a request across retries."""
    messages = (request or {}).get("messages")
    blob = json.dumps(messages, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _chance(seed: int, kind: str, key: str, attempt: int) -> float:
    """A pseudo-random number in [0, 1) fixed by its arguments (not by request order)."""
    digest = hashlib.sha256(f"{seed}|{kind}|{key}|{attempt}".encode()).hexdigest()
    return int(digest[:16], 16) / 16**16


# --------------------------------------------------------------------------- rendering


def _response_mode(request: dict[str, Any]) -> str:
    """'tools', 'json_schema', 'json_object' or 'text': the shape the request asks for."""
    if request.get("tools") and request.get("tool_choice") != "none":
        return "tools"
    response_format = request.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") in ("json_schema", "json_object"):
        return str(response_format["type"])
    return "text"


def _chosen_tool(request: dict[str, Any]) -> str:
    """The name of the tool forced by `tool_choice`, else of the first tool."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        if name:
            return str(name)
    first = request["tools"][0]
    return str((first.get("function") or {}).get("name") or first.get("name") or "tool")


_tool_call_ids = itertools.count(1)


def _tool_call(name: str, arguments: dict[str, Any] | str) -> dict[str, Any]:
    """One tool call in OpenAI shape with JSON-string arguments."""
    return {
        "id": f"call_fake_{next(_tool_call_ids)}",
        "type": "function",
        "function": {
            "name": name,
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        },
    }


def _normalise_tool_calls(calls: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls in OpenAI shape; short `{"name", "arguments"}` entries are expanded."""
    result = []
    for call in calls:
        if "function" in call:
            result.append({"id": call.get("id") or f"call_fake_{next(_tool_call_ids)}", "type": "function"} | call)
        else:
            result.append(_tool_call(call["name"], call.get("arguments", {})))
    return result


def _message(request: dict[str, Any], reply: Reply) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The assistant message's (content, tool_calls) for `reply` in the request's shape."""
    if reply.tool_calls is not None:
        return reply.content, _normalise_tool_calls(reply.tool_calls)
    if reply.content is not None:
        return reply.content, None
    data = reply.data if reply.data is not None else {}
    mode = _response_mode(request)
    if mode == "tools":
        return None, [_tool_call(_chosen_tool(request), data)]
    if mode in ("json_schema", "json_object"):
        return json.dumps(data), None
    return f"```json\n{json.dumps(data)}\n```", None


def openai_usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> dict[str, Any]:
    """A chat completion's `usage` object in OpenAI's shape, with exact counts."""
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


UsageFunction = Callable[[dict[str, Any]], "dict[str, Any] | None"]
"""The server's `usage` setting: the usage object of a completion for the request, or None to send none."""


def _tokens(text: str) -> int:
    """A rough token count (4 characters a token)."""
    return max(1, len(text) // 4)


_completion_ids = itertools.count(1)
_request_ids = itertools.count(1)


def _completion_body(
    request: dict[str, Any], reply: Reply, usage_function: UsageFunction | None = None
) -> dict[str, Any]:
    """A `chat.completion` object as OpenAI (and Groq) return it; its `usage` is the reply's,
    else `usage_function`'s, else rough counts (see the module docstring)."""
    content, tool_calls = _message(request, reply)
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    usage: dict[str, Any] | None
    if reply.omit_usage:
        usage = None
    elif reply.usage is not None:
        usage = reply.usage
    elif usage_function is not None:
        usage = usage_function(request)
    else:
        prompt_tokens = _tokens(json.dumps(request.get("messages") or []))
        # The calls' functions, not their ids: an id is the server's counter, whose width grows (9 → 10)
        # with how many calls this process answered before, and would make the count depend on it.
        completion_tokens = _tokens((content or "") + json.dumps([call["function"] for call in tool_calls or []]))
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    body = {
        "id": f"chatcmpl-fake-{next(_completion_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(request.get("model") or "fake-model"),
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def _error_body(reply: Reply) -> dict[str, Any]:
    """`{"error": {...}}` in OpenAI's format for an error reply."""
    error_type, code, message = _ERRORS.get(
        reply.status, ("server_error" if reply.status >= 500 else "invalid_request_error", None, "Error.")
    )
    return {
        "error": {
            "message": reply.error_message or message,
            "type": reply.error_type or error_type,
            "param": None,
            "code": reply.error_code if reply.error_code is not None else code,
        }
    }


def _retry_after_headers(seconds: float) -> dict[str, str]:
    """`retry-after-ms` (read first by the openai and groq SDKs) and `retry-after` in seconds."""
    seconds = max(0.0, seconds)
    return {"retry-after-ms": str(max(1, round(seconds * 1000))), "retry-after": f"{seconds:.3f}"}


# --------------------------------------------------------------------------- server


def _check_fraction(name: str, value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {value}")
    return float(value)


def _check_non_negative(name: str, value: float) -> float:
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return float(value)


class _Config:
    """A setting of `FakeLLMServer` read and written under the server's lock."""

    def __init__(self, check: Callable[[str, Any], Any] | None = None) -> None:
        self._check = check

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name
        self._slot = f"_cfg_{name}"

    def __get__(self, obj: FakeLLMServer | None, owner: type) -> Any:
        if obj is None:
            return self
        with obj._lock:
            return getattr(obj, self._slot)

    def __set__(self, obj: FakeLLMServer, value: Any) -> None:
        if self._check is not None:
            value = self._check(self._name, value)
        with obj._lock:
            setattr(obj, self._slot, value)


def _no_sleep(seconds: float) -> None:
    """A `sleep` for `_reply_for` that does not wait."""


def _check_rps(name: str, value: float | None) -> float | None:
    if value is not None and value <= 0:
        raise ValueError(f"{name} must be > 0 or None, got {value}")
    return value


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many concurrent clients in benchmarks
    fake: FakeLLMServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real APIs
    disable_nagle_algorithm = True  # headers and body go out in two writes: avoid a 40 ms delayed ACK
    server: _HTTPServer
    fake_record: RecordedRequest | None = None  # the POST being answered on this connection
    fake_in_flight: bool = False  # counted in the server's in_flight until its response is written

    def setup(self) -> None:
        super().setup()
        self.server.fake._track_connection(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track_connection(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read `FakeLLMServer.requests` instead."""

    def do_POST(self) -> None:
        self.server.fake._handle(self)

    def do_GET(self) -> None:
        self.fake_record = None
        self.server.fake._handle_other(self)

    def do_DELETE(self) -> None:
        self.fake_record = None
        self.server.fake._handle_other(self)


class FakeLLMServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, started on construction.

    Use it as a context manager (`with FakeLLMServer() as server:`) or call
    `stop()`. Every request runs on its own thread, so latency and hangs of one
    request never delay another.

    Per request, in order:

    1. Rate limit: with `rate_limit_rps` set, a request arriving when that many
       requests were admitted in the last second gets a 429 with `retry-after-ms`
       and `retry-after` (seconds until a slot frees). Rejected requests are not
       admitted, get no latency and consume nothing from the script.
    2. `latency_s` of sleep.
    3. The next `script` entry, if any (a `Reply`, `str` or `dict`, as a responder
       returns). Otherwise the seeded faults, decided by a hash of the seed, the
       request's messages and its attempt number (how many earlier requests had
       the same messages), so they do not depend on request order:
       `fail_first_attempt_fraction` of distinct requests get a 500 on their first
       attempt; `timeout_fraction` of attempts wait `hang_s` before answering;
       `garbage_fraction` of attempts get `GARBAGE_CONTENT` (not JSON).
    4. The responder fills in the message when the reply has none; if it raises,
       the answer is a 500 with `x-should-retry: false`.

    Settings are attributes that may be reassigned while the server runs; each
    request reads them once, under a lock. Sleeps end early when the server stops.
    """

    latency_s = _Config(_check_non_negative)
    rate_limit_rps = _Config(_check_rps)
    fail_first_attempt_fraction = _Config(_check_fraction)
    timeout_fraction = _Config(_check_fraction)
    garbage_fraction = _Config(_check_fraction)
    hang_s = _Config(_check_non_negative)
    seed = _Config()
    responder = _Config()
    usage = _Config()

    def __init__(
        self,
        responder: Responder = judge_responder,
        *,
        latency_s: float = 0.0,
        rate_limit_rps: float | None = None,
        script: Iterable[Reply | str | dict[str, Any]] = (),
        fail_first_attempt_fraction: float = 0.0,
        timeout_fraction: float = 0.0,
        hang_s: float = 30.0,
        garbage_fraction: float = 0.0,
        seed: int = 0,
        usage: UsageFunction | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self.responder = responder
        self.usage = usage
        self.latency_s = latency_s
        self.rate_limit_rps = rate_limit_rps
        self.fail_first_attempt_fraction = fail_first_attempt_fraction
        self.timeout_fraction = timeout_fraction
        self.hang_s = hang_s
        self.garbage_fraction = garbage_fraction
        self.seed = seed
        self._script: collections.deque[Reply | str | dict[str, Any]] = collections.deque(script)
        self._admitted: collections.deque[float] = collections.deque()
        self._attempts: collections.Counter[str] = collections.Counter()
        self._requests: list[RecordedRequest] = []
        self._status_counts: collections.Counter[int] = collections.Counter()
        self._call_count = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()

        self._httpd = _HTTPServer((HOST, 0), _Handler)
        self._httpd.fake = self
        self.port: int = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-llm-server",
            daemon=True,
        )
        self._thread.start()

    # ----------------------------------------------------------------- lifecycle

    @property
    def base_url(self) -> str:
        """The `base_url` for `ChatOpenAI`: "http://127.0.0.1:PORT/v1"."""
        return f"http://{HOST}:{self.port}/v1"

    @property
    def groq_base_url(self) -> str:
        """The `base_url` for `ChatGroq`: "http://127.0.0.1:PORT" (its SDK adds /openai/v1/...)."""
        return f"http://{HOST}:{self.port}"

    def stop(self) -> None:
        """Stop serving, cut open connections and end pending sleeps. Idempotent."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ----------------------------------------------------------------- script

    @property
    def script(self) -> list[Reply | str | dict[str, Any]]:
        """The script entries not yet consumed (a copy); assign a list to replace them."""
        with self._lock:
            return list(self._script)

    @script.setter
    def script(self, entries: Iterable[Reply | str | dict[str, Any]]) -> None:
        with self._lock:
            self._script = collections.deque(entries)

    def enqueue(self, *entries: Reply | str | dict[str, Any]) -> None:
        """Append entries to the script; they answer the next admitted requests in order."""
        with self._lock:
            self._script.extend(entries)

    # ----------------------------------------------------------------- observability

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every POST received, oldest first (a copy of the list)."""
        with self._lock:
            return list(self._requests)

    @property
    def call_count(self) -> int:
        """How many POST requests were received, rejected ones included."""
        with self._lock:
            return self._call_count

    @property
    def in_flight(self) -> int:
        """How many requests are being handled right now."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The peak number of requests handled at the same time."""
        with self._lock:
            return self._max_in_flight

    @property
    def status_counts(self) -> collections.Counter[int]:
        """How many responses were sent per HTTP status (a copy)."""
        with self._lock:
            return collections.Counter(self._status_counts)

    def reset_stats(self, *, forget_attempts: bool = False) -> None:
        """Clear `requests`, `call_count`, `max_in_flight` and `status_counts`.

        With `forget_attempts`, also forget which messages were seen, so every
        request counts as a first attempt again for the seeded faults.
        """
        with self._lock:
            self._requests.clear()
            self._status_counts.clear()
            self._call_count = 0
            self._max_in_flight = self._in_flight
            if forget_attempts:
                self._attempts.clear()

    # ----------------------------------------------------------------- handling

    def _track_connection(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _sleep(self, seconds: float) -> None:
        """Sleep on this request's thread; returns early when the server stops."""
        if seconds > 0:
            self._stopping.wait(seconds)

    def _handle(self, handler: _Handler) -> None:
        """Answer one POST: record it, apply the gate and the faults, then reply."""
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        body = parsed if isinstance(parsed, dict) else None
        record = RecordedRequest(
            path=handler.path,
            body=body,
            headers={name.lower(): value for name, value in handler.headers.items()},
            received_at=time.time(),
        )
        with self._lock:
            self._requests.append(record)
            self._call_count += 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        handler.fake_record = record
        handler.fake_in_flight = True
        try:
            self._respond(handler, record)
        finally:
            self._leave_flight(handler)

    def _handle_other(self, handler: _Handler) -> None:
        """Answer a GET or DELETE: a 404 (a subclass may serve routes of its own)."""
        self._send_error_only(handler, 404, f"Unknown path {handler.path}.")

    def _leave_flight(self, handler: _Handler) -> None:
        """Count the request out of `in_flight`, once. Called before its response is written:
        a client that has read its reply must never see the request still in flight."""
        with self._lock:
            if handler.fake_in_flight:
                handler.fake_in_flight = False
                self._in_flight -= 1

    def _respond(self, handler: _Handler, record: RecordedRequest) -> int:
        """Send the response for `record`; returns the status sent."""
        path = record.path.split("?", 1)[0]
        if path not in CHAT_COMPLETIONS_PATHS:
            return self._send_error_only(handler, 404, f"Unknown path {record.path}.")
        request = record.body
        if request is None:
            return self._send_error_only(handler, 400, "The request body is not a JSON object.")
        if request.get("stream"):
            return self._send_error_only(handler, 400, _STREAM_MESSAGE)

        retry_after = self._admit()
        if retry_after is not None:
            reply = Reply(status=429, retry_after_s=retry_after)
            return self._send(handler, request, reply)

        return self._send(handler, request, self._reply_for(request, self._sleep))

    def _reply_for(self, request: dict[str, Any], sleep: Callable[[float], None]) -> Reply:
        """The reply to an admitted request: script entry or seeded fault, latency and hangs
        (through `sleep`), then the responder's message; a failing responder gives a 500."""
        entry, responder = self._choose(request)
        sleep(self.latency_s)
        reply = _as_reply(entry) if entry is not None else Reply()
        sleep(reply.hang_s)
        if reply.status < 400 and reply.raw_body is None and not reply.has_message():
            try:
                produced = _as_reply(responder(request))
            except Exception as exc:
                return Reply(
                    status=500,
                    error_message=f"FakeLLMServer responder failed: {exc!r}",
                    headers={"x-should-retry": "false"},
                )
            sleep(produced.hang_s)
            reply = dataclasses.replace(
                produced,
                status=reply.status if reply.status != 200 else produced.status,
                headers=reply.headers | produced.headers,
                finish_reason=reply.finish_reason or produced.finish_reason,
                usage=reply.usage if reply.usage is not None else produced.usage,
                omit_usage=reply.omit_usage or produced.omit_usage,
            )
        return reply

    def answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any] | str]:
        """What `POST /v1/chat/completions` with body `request` would get once admitted: the
        HTTP status and the JSON body (a raw body as text), from the same script, seeded faults,
        responder and `usage` setting. No rate limit, latency or hang applies, and the call is
        not recorded in `requests` (`fake_batch_api` answers batch lines with it)."""
        if request.get("stream"):
            reply = Reply(status=400, error_message=_STREAM_MESSAGE)
        else:
            reply = self._reply_for(request, _no_sleep)
        if reply.raw_body is not None:
            raw = reply.raw_body
            return reply.status, raw.decode(errors="replace") if isinstance(raw, bytes) else raw
        if reply.status >= 400:
            return reply.status, _error_body(reply)
        return reply.status, _completion_body(request, reply, self.usage)

    def _admit(self) -> float | None:
        """None when the request may proceed, else seconds until the rate window frees a slot."""
        now = time.monotonic()
        with self._lock:
            limit = self._cfg_rate_limit_rps
            while self._admitted and now - self._admitted[0] >= 1.0:
                self._admitted.popleft()
            if limit is not None and len(self._admitted) >= limit:
                return self._admitted[0] + 1.0 - now
            self._admitted.append(now)
            return None

    def _choose(self, request: dict[str, Any]) -> tuple[Reply | str | dict[str, Any] | None, Responder]:
        """The script entry or seeded fault for an admitted request (None: a normal answer)."""
        key = _messages_key(request)
        with self._lock:
            attempt = self._attempts[key]
            self._attempts[key] += 1
            responder = self._cfg_responder
            if self._script:
                return self._script.popleft(), responder
            seed = self._cfg_seed
            if attempt == 0 and _chance(seed, "fail_first", key, 0) < self._cfg_fail_first_attempt_fraction:
                return Reply(status=500), responder
            if _chance(seed, "timeout", key, attempt) < self._cfg_timeout_fraction:
                return Reply(hang_s=self._cfg_hang_s), responder
            if _chance(seed, "garbage", key, attempt) < self._cfg_garbage_fraction:
                return Reply(content=GARBAGE_CONTENT), responder
            return None, responder

    def _send(self, handler: _Handler, request: dict[str, Any], reply: Reply) -> int:
        """Write `reply` as the HTTP response; returns its status."""
        headers = {}
        if reply.retry_after_s is not None or reply.status == 429:
            headers |= _retry_after_headers(
                reply.retry_after_s if reply.retry_after_s is not None else DEFAULT_RETRY_AFTER_S
            )
        headers |= reply.headers
        if reply.raw_body is not None:
            raw = reply.raw_body.encode() if isinstance(reply.raw_body, str) else reply.raw_body
            return self._write(handler, reply.status, raw, headers, content_type="text/plain", chunked=reply.chunked)
        if reply.status >= 400:
            body = _error_body(reply)
        else:
            body = _completion_body(request, reply, self.usage)
            if handler.fake_record is not None:
                handler.fake_record.usage = body.get("usage")
        return self._write(handler, reply.status, json.dumps(body).encode(), headers, chunked=reply.chunked)

    def _send_error_only(self, handler: _Handler, status: int, message: str) -> int:
        """Write an OpenAI error body for a request the server cannot answer."""
        body = _error_body(Reply(status=status, error_message=message))
        return self._write(handler, status, json.dumps(body).encode(), {})

    def _write(
        self,
        handler: _Handler,
        status: int,
        raw: bytes,
        headers: dict[str, str],
        content_type: str = "application/json",
        *,
        chunked: bool = False,
    ) -> int:
        """Send status, headers and body; a client that went away is not an error."""
        record = handler.fake_record
        with self._lock:
            self._status_counts[status] += 1
            if record is not None:
                record.status = status
        self._leave_flight(handler)
        if self._stopping.is_set():
            handler.close_connection = True
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            if chunked:
                handler.send_header("Transfer-Encoding", "chunked")
            else:
                handler.send_header("Content-Length", str(len(raw)))
            handler.send_header("x-request-id", f"req_fake_{next(_request_ids)}")
            for name, value in headers.items():
                handler.send_header(name, value)
            if handler.close_connection:
                handler.send_header("Connection", "close")
            handler.end_headers()
            if chunked:
                for start in range(0, len(raw), _CHUNK_BYTES):
                    piece = raw[start : start + _CHUNK_BYTES]
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                handler.wfile.write(b"0\r\n\r\n")
            else:
                handler.wfile.write(raw)
            handler.wfile.flush()
        except OSError:  # the client timed out and closed the connection
            handler.close_connection = True
        return status
