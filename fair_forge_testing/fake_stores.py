"""Fake Langfuse, Phoenix and LangSmith servers for the tests of `fair-forge pull`, built from
the stores' API excerpts in `fair_forge_testing/specs/` (their sources: `specs/README.md`).

`FakeStore(store, items)` listens on 127.0.0.1 only, on an ephemeral port, in a thread, and
serves the excerpt's one operation, paging `items` by the request's `limit` with an opaque cursor.
Everything it checks comes from the spec:

- the path against the spec's path templates (else 404), the method (else 405);
- each query parameter: declared (else 400), of its schema's type (integer, boolean, date-time,
  a repeated parameter only when the schema is an array), the required ones present;
- the JSON body against the request body's schema (unknown keys refused where the schema says
  `additionalProperties: false`), and no body where the operation takes none;
- the security scheme: basic auth (Langfuse), `x-api-key` (LangSmith), and for Phoenix, whose
  document declares none, a bearer token as a Phoenix with auth enabled asks;
- its own answers: each page is checked against the response schema before it is sent.

A request the spec does not allow is answered 400/404/405 and recorded in `violations`, which a
test asserts is empty; a wrong credential is a 401 (the spec allows it), not a violation.
`requests` records every request (method, path, query, headers, body, monotonic time, status).
`throttle` maps a request's index (0: the first) to the `Retry-After` seconds of a 429 (or
`throttle_status`) answered instead; `fail_status` answers every request with that status and a body echoing the
credential headers it was sent (a store that does so must not make `pull` print them);
`redirect_to` answers 302 to that base URL (where `pull` must not follow with the credentials).

Only the standard library is used."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

SPECS = Path(__file__).resolve().parent / "specs"
STORES = ("langfuse", "phoenix", "langsmith")


def load_spec(store: str) -> dict[str, Any]:
    """The vendored excerpt of `store`'s API (`specs/<store>.json`)."""
    spec: dict[str, Any] = json.loads((SPECS / f"{store}.json").read_text(encoding="utf-8"))
    return spec


def _resolve(spec: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _is_instant(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def schema_errors(spec: Mapping[str, Any], schema: Mapping[str, Any], value: Any, where: str) -> list[str]:
    """Where `value` breaks `schema` (the JSON Schema subset the excerpts use: `$ref`, `type`, a list
    of types, `nullable`, `anyOf`, `enum`, `required`, `properties`, `additionalProperties`,
    `items`, `format: date-time`); empty when it conforms."""
    schema = _resolve(spec, schema)
    if value is None and schema.get("nullable"):
        return []
    if "anyOf" in schema:
        options = [schema_errors(spec, option, value, where) for option in schema["anyOf"]]
        return [] if any(not found for found in options) else [f"{where}: matches no anyOf option: {options[0]}"]
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if kinds and not any(
        isinstance(value, _TYPES[kind]) and not (kind in {"integer", "number"} and isinstance(value, bool))
        for kind in kinds
    ):
        return [f"{where}: {type(value).__name__} is not {'/'.join(kinds)}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of {schema['enum']}"]
    if isinstance(value, str) and schema.get("format") == "date-time" and not _is_instant(value):
        return [f"{where}: {value!r} is not a date-time"]
    if isinstance(value, list) and "items" in schema:
        return [e for n, item in enumerate(value) for e in schema_errors(spec, schema["items"], item, f"{where}[{n}]")]
    if not isinstance(value, dict):
        return []
    properties = schema.get("properties", {})
    errors = [f"{where}.{name}: required" for name in schema.get("required", []) if name not in value]
    for name, item in value.items():
        if name in properties:
            errors += schema_errors(spec, properties[name], item, f"{where}.{name}")
        elif schema.get("additionalProperties") is False:
            errors.append(f"{where}.{name}: not a property the schema allows")
    return errors


def _query_errors(spec: Mapping[str, Any], schema: Mapping[str, Any], name: str, values: list[str]) -> list[str]:
    """Where the raw values of query parameter `name` break its `schema`."""
    schema = _resolve(spec, schema)
    options = [_resolve(spec, option) for option in schema.get("anyOf", [schema])]
    options = [option for option in options if option.get("type") != "null"] or [schema]
    for option in options:
        if option.get("type") == "array":
            return []
        if len(values) > 1:
            continue
        text = values[0]
        kind = option.get("type")
        if kind == "integer" and not re.fullmatch(r"-?[0-9]+", text):
            continue
        if kind == "boolean" and text not in {"true", "false"}:
            continue
        if option.get("format") == "date-time" and not _is_instant(text):
            continue
        if "enum" in option and text not in option["enum"]:
            continue
        return []
    return [f"query parameter {name}={values!r} does not match its schema"]


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    at: float
    status: int = 0


@dataclass
class _Route:
    method: str
    pattern: re.Pattern[str]
    operation: Mapping[str, Any]


def _routes(spec: Mapping[str, Any]) -> list[_Route]:
    routes = []
    for template, item in spec["paths"].items():
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
        for method, operation in item.items():
            routes.append(_Route(method.upper(), re.compile(f"^{pattern}$"), operation))
    return routes


@dataclass
class FakeStore:
    """A fake `store` serving `items` (module docstring); a context manager that starts and stops it."""

    store: str
    items: Sequence[Mapping[str, Any]]
    credentials: Mapping[str, str] = field(default_factory=dict)
    throttle: dict[int, float] = field(default_factory=dict)
    throttle_status: int = 429
    fail_status: int | None = None
    redirect_to: str | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.spec = load_spec(self.store)
        self.routes = _routes(self.spec)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeStore:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # ------------------------------------------------------------------ checks

    def _auth_problem(self, headers: Mapping[str, str]) -> tuple[str | None, bool]:
        """(why the request is not authenticated, whether that is a violation: a missing header)."""
        if self.store == "langfuse":
            sent = headers.get("authorization", "")
            expected = base64.b64encode(
                f"{self.credentials['LANGFUSE_PUBLIC_KEY']}:{self.credentials['LANGFUSE_SECRET_KEY']}".encode()
            ).decode()
            if not sent.startswith("Basic "):
                return "BasicAuth required", True
            return (None, False) if sent == f"Basic {expected}" else ("wrong credentials", False)
        if self.store == "phoenix":
            key = self.credentials.get("PHOENIX_API_KEY")
            sent = headers.get("authorization", "")
            if not key:
                return None, False
            if not sent.startswith("Bearer "):
                return "bearer token required", True
            return (None, False) if sent == f"Bearer {key}" else ("wrong token", False)
        sent = headers.get("x-api-key", "")
        if not sent:
            return "x-api-key required", True
        return (None, False) if sent == self.credentials["LANGSMITH_API_KEY"] else ("wrong key", False)

    def _request_problems(self, route: _Route, query: dict[str, list[str]], body: bytes) -> list[str]:
        operation = route.operation
        declared = {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "query"}
        problems = [f"query parameter {name} is not in the spec" for name in query if name not in declared]
        problems += [
            f"required query parameter {name} is missing"
            for name, p in declared.items()
            if p.get("required") and name not in query
        ]
        for name, values in query.items():
            if name in declared:
                problems += _query_errors(self.spec, declared[name]["schema"], name, values)
        content = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if content is None:
            return problems + (["a body where the operation takes none"] if body else [])
        try:
            document = json.loads(body)
        except ValueError:
            return [*problems, "the body is not JSON"]
        return problems + schema_errors(self.spec, content["schema"], document, "body")

    # ------------------------------------------------------------------ pages

    def _page(self, offset: int, limit: int) -> tuple[list[Mapping[str, Any]], str | None]:
        chunk = list(self.items[offset : offset + limit])
        more = offset + limit < len(self.items)
        token = base64.b64encode(json.dumps({"offset": offset + limit}).encode()).decode() if more else None
        return chunk, token

    @staticmethod
    def _offset(cursor: str | None) -> int:
        if not cursor:
            return 0
        offset: int = json.loads(base64.b64decode(cursor))["offset"]
        return offset

    def _answer(self, query: dict[str, list[str]], body: bytes) -> dict[str, Any]:
        if self.store == "langsmith":
            document = json.loads(body)
            chunk, token = self._page(self._offset(document.get("cursor")), int(document.get("limit", 100)))
            return {"runs": chunk, "cursors": {"next": token, "prev": None}}
        limit = int(query.get("limit", ["50" if self.store == "langfuse" else "100"])[0])
        chunk, token = self._page(self._offset(query.get("cursor", [None])[0]), limit)
        if self.store == "langfuse":
            return {"data": chunk, "meta": {"cursor": token} if token else {}}
        return {"data": chunk, "next_cursor": token}

    def _respond(self, method: str, url: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], Any]:
        parts = urlsplit(url)
        path = unquote(parts.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        with self._lock:
            index = len(self.requests)
            recorded = RecordedRequest(method, path, query, headers, body.decode("utf-8", "replace"), time.monotonic())
            self.requests.append(recorded)
        status, extra, document = self._decide(index, method, path, query, headers, body)
        recorded.status = status
        return status, extra, document

    def _decide(
        self, index: int, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], Any]:
        matching = [route for route in self.routes if route.pattern.match(path)]
        if not matching:
            return self._refuse(404, f"{method} {path}: no such path in the spec")
        route = next((r for r in matching if r.method == method), None)
        if route is None:
            return self._refuse(405, f"{method} {path}: the spec has no {method} here")
        problem, violation = self._auth_problem(headers)
        if problem and violation:
            return self._refuse(401, f"{method} {path}: {problem}")
        problems = self._request_problems(route, query, body)
        if problems:
            return self._refuse(400, f"{method} {path}: " + "; ".join(problems))
        if self.redirect_to is not None:
            return 302, {"Location": self.redirect_to + path}, {}
        if self.fail_status is not None:
            echoed = {k: v for k, v in headers.items() if k in {"authorization", "x-api-key"}}
            return self.fail_status, {}, {"error": "refused", "received": echoed}
        if problem:
            return 401, {}, {"error": problem}
        if index in self.throttle:
            return self.throttle_status, {"Retry-After": f"{self.throttle[index]:g}"}, {"error": "try again later"}
        document = self._answer(query, body)
        schema = route.operation["responses"]["200"]["content"]["application/json"]["schema"]
        errors = schema_errors(self.spec, schema, document, "answer")
        if errors:  # the fake's own data breaks the spec: the test is wrong, not the client
            return self._refuse(500, "the fake's answer breaks the spec: " + "; ".join(errors[:5]))
        return 200, {}, document

    def _refuse(self, status: int, violation: str) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.violations.append(violation)
        return status, {}, {"error": violation}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra, document = fake._respond(self.command, self.path, headers, body)
                data = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the test's output is the CLI's, not the server's access log

        return Handler


def instance(spec: Mapping[str, Any], schema: Mapping[str, Any], name: str = "x") -> Any:
    """A value of `schema` with its required properties only, each the simplest of its type (a
    nullable one null): the skeleton of an item, which a test then fills with what it needs."""
    schema = _resolve(spec, schema)
    if schema.get("nullable"):
        return None
    if "anyOf" in schema:
        return instance(spec, schema["anyOf"][0], name)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object" or "properties" in schema:
        return {key: instance(spec, schema["properties"][key], key) for key in schema.get("required", [])}
    if schema.get("format") == "date-time":
        return "2026-12-02T22:00:00Z"
    return {"string": name, "integer": 0, "number": 0.0, "boolean": False, "array": []}.get(kind or "")


def langfuse_observations(count: int) -> list[dict[str, Any]]:
    """`count` v2 observations built from the spec's `ObservationV2` (its required keys), each a
    root GENERATION of its own trace and session, with input and output, and `metadata.task` the
    task it answers (`task-N`)."""
    spec = load_spec("langfuse")
    skeleton = instance(spec, spec["components"]["schemas"]["ObservationV2"])
    return [
        skeleton
        | {
            "id": f"obs-{n}",
            "traceId": f"trace-{n}",
            "sessionId": f"session-{n}",
            "type": "GENERATION",
            "startTime": f"2026-12-02T22:{n % 60:02d}:00Z",
            "projectId": "project-1",
            "input": json.dumps([{"role": "user", "content": f"question {n}"}]),
            "output": json.dumps({"role": "assistant", "content": f"answer {n}"}),
            "metadata": {"task": f"task-{n}"},
        }
        for n in range(count)
    ]


def phoenix_spans(count: int) -> list[dict[str, Any]]:
    """`count` OTLP spans in `OtlpSpan`'s shape, each the LLM root span of its own trace."""

    def attribute(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"string_value": value}}

    return [
        {
            "trace_id": f"{n:032x}",
            "span_id": f"{n:016x}",
            "name": "llm",
            "kind": "SPAN_KIND_INTERNAL",
            "start_time_unix_nano": 1_795_000_000_000_000_000 + n,
            "end_time_unix_nano": 1_795_000_000_000_000_100 + n,
            "attributes": [
                attribute("openinference.span.kind", "LLM"),
                attribute("input.value", f"question {n}"),
                attribute("output.value", f"answer {n}"),
                attribute("metadata", json.dumps({"task": f"task-{n}"})),
            ],
            "status": {"code": 1},
        }
        for n in range(count)
    ]
