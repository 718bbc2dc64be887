"""What `fair-forge pull` asks each trace store, and how it reads the answers: no I/O here
(`cli.pull` sends the requests, sleeps and writes), so that every rule below is a function of
its inputs.

The stores and the one route each is read through (their published API; the excerpts the
tests' fake stores serve are `fair_forge_testing/specs/`):

- `langfuse`: `GET {LANGFUSE_HOST}/api/public/v2/observations` (Langfuse v4), basic auth
  `LANGFUSE_PUBLIC_KEY:LANGFUSE_SECRET_KEY`. The next page is asked with the answer's
  `meta.cursor`; none (absent or null) is the last page. Written as the list of the raw pages
  `[{"data": [...], "meta": {...}}, ...]`.
- `phoenix`: `GET {PHOENIX_BASE_URL}/v1/projects/{--project}/spans/otlpv1`, with
  `Authorization: Bearer {PHOENIX_API_KEY}` when that is set (a Phoenix without auth needs none).
  The base URL is `PHOENIX_BASE_URL`, else `PHOENIX_COLLECTOR_ENDPOINT` less a trailing
  `/v1/traces`. Next page: the answer's `next_cursor` as `cursor`; null is the last. Written as
  the list of the raw pages `[{"data": [...], "next_cursor": ...}, ...]`.
- `langsmith`: `POST {LANGSMITH_ENDPOINT}/api/v1/runs/query` (default endpoint
  `https://api.smith.langchain.com`; a trailing `/api/v1` or `/api` in it is dropped), header
  `x-api-key: {LANGSMITH_API_KEY}`. Next page: the body again with `cursor` set to the answer's
  `cursors.next`; none, or no runs, is the last. Written as one JSON list of the runs, what
  `fair-forge convert --from langsmith` reads.

Filters, as each API allows them (`Query`; anything else is refused as bad input, never dropped):
`--since`/`--until` are an instant with its UTC offset (`Z` or `+02:00`), the window
`since <= start < until`: Langfuse `fromStartTime`/`toStartTime`, Phoenix `start_time`/`end_time`,
LangSmith `start_time` and the filter `lt(start_time, "...")`. `--session`: Langfuse `sessionId`,
Phoenix the attribute filter `session.id:ID`; one session (LangSmith's runs query has no session of
a conversation: its `session` is the tracing project, `--project`). `--tag` (repeatable, all must be
present): Langfuse a `tags` `all of` condition, LangSmith `has(tags, "T")`; Phoenix cannot match a
list-valued attribute. `--filter` (repeatable, all must hold): Langfuse one JSON condition or a JSON
list of them (its `filter` parameter), Phoenix `KEY:VALUE` (its `attribute` parameter), LangSmith
an expression of its filter language. Langfuse's `filter` takes precedence over its query
parameters, so with `--tag` or `--filter` the window and the session are sent as conditions too.

Credentials come from the environment only, and no message carries one: `redact` replaces each
secret value (and a base URL's user:password) with `***` in any text a caller prints."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, ValidationError

Store = Literal["langfuse", "phoenix", "langsmith"]
STORES: tuple[Store, ...] = ("langfuse", "phoenix", "langsmith")

MAX_PAGE_SIZE: Mapping[Store, int] = {"langfuse": 1000, "phoenix": 1000, "langsmith": 100}
"""The largest page each API serves (Langfuse and Phoenix say 1000 in their spec; LangSmith's
runs query takes at most 100)."""

LANGFUSE_FIELDS = "core,basic,time,io,metadata,model,usage,prompt,metrics,trace_context"
"""Every field group of a v2 observation: without `fields` Langfuse returns only `core` and
`basic`, and the conversation (`io`) and the task key (`metadata`) would be missing."""

LANGSMITH_SELECT = (
    "app_path",
    "completion_cost",
    "completion_tokens",
    "dotted_order",
    "end_time",
    "error",
    "events",
    "extra",
    "feedback_stats",
    "first_token_time",
    "id",
    "inputs",
    "name",
    "outputs",
    "parent_run_id",
    "parent_run_ids",
    "prompt_cost",
    "prompt_tokens",
    "reference_example_id",
    "run_type",
    "session_id",
    "start_time",
    "status",
    "tags",
    "total_cost",
    "total_tokens",
    "trace_id",
)
"""The columns `langsmith.Client.list_runs` selects by default (the SDK's `default_select`):
what its runs carry, and what the langsmith importer reads."""

RETRY_STATUSES = frozenset({429, 503})
MAX_RETRIES = 5
"""Retries of one request answered 429 or 503, after which the pull fails."""
MAX_RETRY_WAIT = 60.0
"""The longest sleep before a retry, in seconds, whatever `Retry-After` asks: a pull never hangs."""


class PullInputError(ValueError):
    """A flag or an environment variable that cannot make a request (the CLI's exit 2)."""


@dataclass(frozen=True)
class Query:
    """What to pull: the store, the window and the filters (module docstring), the page size."""

    store: Store
    since: datetime | None = None
    until: datetime | None = None
    sessions: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()
    project: str | None = None
    page_size: int = 100


@dataclass(frozen=True)
class Connection:
    """Where the store is and how to authenticate; `secrets` are the values never to print."""

    base_url: str
    headers: Mapping[str, str]
    secrets: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class HttpRequest:
    method: Literal["GET", "POST"]
    url: str
    body: bytes | None = None


def parse_instant(text: str) -> datetime:
    """An ISO 8601 date-time with its UTC offset, as an aware datetime; `PullInputError` when it is
    not one or has no offset (a time without one means a different instant on each machine)."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise PullInputError(f"not an ISO 8601 date-time: {text!r}") from None
    if value.tzinfo is None:
        raise PullInputError(f"{text!r} has no UTC offset: add Z or +HH:MM")
    return value


def iso_utc(value: datetime) -> str:
    """`value` in UTC as `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _required(env: Mapping[str, str], *names: str) -> list[str]:
    missing = [name for name in names if not env.get(name, "").strip()]
    if missing:
        raise PullInputError(f"set {' and '.join(missing)} in the environment (credentials are read from there only)")
    return [env[name].strip() for name in names]


def _base_url(url: str, variable: str) -> str:
    """`url` less its trailing `/`, when it is http(s) with a host and no user:password: anything
    else (`file:`, `https://user:pw@host`) is refused."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise PullInputError(f"{variable} must be an http:// or https:// URL, got {safe_url(url)!r}")
    if "@" in parts.netloc:
        # The keys have variables of their own; a password in a URL would end up in messages and logs.
        raise PullInputError(f"{variable} must not carry a user:password, got {safe_url(url)!r}")
    return url.rstrip("/")


def connection(store: Store, env: Mapping[str, str]) -> Connection:
    """The store's base URL, auth headers and secrets from `env` (module docstring); `PullInputError`
    naming the variable that is missing."""
    if store == "langfuse":
        public, secret = _required(env, "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY")
        host = env.get("LANGFUSE_HOST", "").strip() or "https://cloud.langfuse.com"
        token = base64.b64encode(f"{public}:{secret}".encode()).decode("ascii")
        return Connection(_base_url(host, "LANGFUSE_HOST"), {"Authorization": f"Basic {token}"}, (secret, token))
    if store == "phoenix":
        base = env.get("PHOENIX_BASE_URL", "").strip()
        collector = env.get("PHOENIX_COLLECTOR_ENDPOINT", "").strip()
        if not base and not collector:
            raise PullInputError("set PHOENIX_BASE_URL (or PHOENIX_COLLECTOR_ENDPOINT) in the environment")
        variable = "PHOENIX_BASE_URL" if base else "PHOENIX_COLLECTOR_ENDPOINT"
        url = _base_url(base or collector, variable).removesuffix("/v1/traces")
        key = env.get("PHOENIX_API_KEY", "").strip()
        return Connection(url, {"Authorization": f"Bearer {key}"} if key else {}, (key,) if key else ())
    (key,) = _required(env, "LANGSMITH_API_KEY")
    endpoint = _base_url(
        env.get("LANGSMITH_ENDPOINT", "").strip() or "https://api.smith.langchain.com", "LANGSMITH_ENDPOINT"
    )
    for suffix in ("/api/v1", "/api"):
        endpoint = endpoint.removesuffix(suffix)
    return Connection(endpoint, {"x-api-key": key}, (key,))


def _langfuse_conditions(query: Query) -> list[dict[str, Any]]:
    """The user's `--filter` conditions, each a JSON object (or a JSON list of them) with a
    `type`, a `column` and an `operator`, as Langfuse's `filter` parameter describes them."""
    conditions: list[dict[str, Any]] = []
    for text in query.filters:
        try:
            value = json.loads(text)
        except ValueError:
            raise PullInputError(
                f"--filter for langfuse must be JSON (a condition or a list of them): {text!r}"
            ) from None
        for condition in value if isinstance(value, list) else [value]:
            if not isinstance(condition, dict) or not {"type", "column", "operator"} <= condition.keys():
                raise PullInputError(f"--filter: a Langfuse condition needs type, column and operator: {text!r}")
            conditions.append(condition)
    return conditions


def _langfuse_params(query: Query) -> dict[str, str]:
    params = {"fields": LANGFUSE_FIELDS, "limit": str(query.page_size)}
    session = query.sessions[0] if query.sessions else None
    if not query.tags and not query.filters:
        if query.since:
            params["fromStartTime"] = iso_utc(query.since)
        if query.until:
            params["toStartTime"] = iso_utc(query.until)
        if session:
            params["sessionId"] = session
        return params
    # `filter` takes precedence over the query parameters (the spec): everything goes in it.
    conditions = _langfuse_conditions(query)
    if query.since:
        conditions.append({"type": "datetime", "column": "startTime", "operator": ">=", "value": iso_utc(query.since)})
    if query.until:
        conditions.append({"type": "datetime", "column": "startTime", "operator": "<", "value": iso_utc(query.until)})
    if session:
        conditions.append({"type": "string", "column": "sessionId", "operator": "=", "value": session})
    if query.tags:
        conditions.append({"type": "arrayOptions", "column": "tags", "operator": "all of", "value": list(query.tags)})
    params["filter"] = json.dumps(conditions, separators=(",", ":"))
    return params


def _phoenix_params(query: Query) -> list[tuple[str, str]]:
    params = [("limit", str(query.page_size))]
    if query.since:
        params.append(("start_time", iso_utc(query.since)))
    if query.until:
        params.append(("end_time", iso_utc(query.until)))
    for text in query.filters:
        key, sep, value = text.partition(":")
        if not sep or not key.strip() or not value.strip():
            raise PullInputError(f"--filter for phoenix is KEY:VALUE (an attribute's dot-path and value): {text!r}")
        params.append(("attribute", text))
    if query.sessions:
        params.append(("attribute", f"session.id:{json.dumps(query.sessions[0])}"))
    return params


def _langsmith_body(query: Query) -> dict[str, Any]:
    body: dict[str, Any] = {"select": list(LANGSMITH_SELECT), "limit": query.page_size}
    if query.project:
        body["session"] = [query.project]
    if query.since:
        body["start_time"] = iso_utc(query.since)
    expressions = [text.strip() for text in query.filters]
    if any(not text for text in expressions):
        raise PullInputError('--filter for langsmith must be a filter expression, such as eq(run_type, "chain")')
    if query.until:
        expressions.append(f"lt(start_time, {json.dumps(iso_utc(query.until))})")
    expressions += [f"has(tags, {json.dumps(tag)})" for tag in query.tags]
    if expressions:
        body["filter"] = expressions[0] if len(expressions) == 1 else f"and({', '.join(expressions)})"
    return body


def check_query(query: Query) -> None:
    """`PullInputError` for a query the store's API cannot express (module docstring)."""
    if query.since and query.until and query.since >= query.until:
        raise PullInputError("--since must be before --until")
    if not 1 <= query.page_size <= MAX_PAGE_SIZE[query.store]:
        raise PullInputError(f"--page-size for {query.store} is 1 to {MAX_PAGE_SIZE[query.store]}")
    if len(query.sessions) > 1:
        raise PullInputError(f"{query.store} filters on one --session at a time")
    if query.store == "phoenix":
        if not query.project:
            raise PullInputError("phoenix needs --project (the project's name or id)")
        if query.tags:
            raise PullInputError(
                "phoenix's span search cannot match tags (a list-valued attribute): use --filter KEY:VALUE"
            )
    elif query.store == "langsmith":
        if query.sessions:
            raise PullInputError(
                "langsmith's runs query has no conversation session: its `session` is the tracing project (--project ID)"
            )
    elif query.project:
        raise PullInputError("langfuse reads the project of its keys: --project is for phoenix and langsmith")


def first_request(query: Query, conn: Connection) -> HttpRequest:
    """The request of the first page (`check_query` first)."""
    check_query(query)
    return page_request(query, conn, None)


def page_request(query: Query, conn: Connection, cursor: str | None) -> HttpRequest:
    """The request of the page at `cursor` (None: the first page)."""
    if query.store == "langfuse":
        params = _langfuse_params(query) | ({"cursor": cursor} if cursor else {})
        return HttpRequest("GET", f"{conn.base_url}/api/public/v2/observations?{urlencode(params)}")
    if query.store == "phoenix":
        pairs = _phoenix_params(query) + ([("cursor", cursor)] if cursor else [])
        project = quote(query.project or "", safe="")
        return HttpRequest("GET", f"{conn.base_url}/v1/projects/{project}/spans/otlpv1?{urlencode(pairs)}")
    body = _langsmith_body(query) | ({"cursor": cursor} if cursor else {})
    return HttpRequest("POST", f"{conn.base_url}/api/v1/runs/query", json.dumps(body).encode())


class _Page(BaseModel):
    # A store adds keys over time: they are not ours to refuse, and the raw page is what is written.
    model_config = ConfigDict(extra="allow")


class LangfuseMeta(_Page):
    cursor: str | None = None


class LangfusePage(_Page):
    """`ObservationsV2Response`: `data` and `meta` required, `meta.cursor` the next page's."""

    data: list[dict[str, Any]]
    meta: LangfuseMeta


class PhoenixPage(_Page):
    """`OtlpSpansResponseBody`: `data` and `next_cursor` (null on the last page) required."""

    data: list[dict[str, Any]]
    next_cursor: str | None


class LangSmithCursors(_Page):
    next: str | None = None


class LangSmithPage(_Page):
    """The runs query's answer: `runs`, and `cursors.next` when there are more."""

    runs: list[dict[str, Any]]
    cursors: LangSmithCursors | None = None


def read_page(store: Store, data: Any) -> tuple[int, str | None]:
    """The number of items of a page and the cursor of the next (None: it was the last page);
    `ValueError` saying what is wrong when `data` is not the store's page (the models above: only
    the keys the pagination reads are checked; the page is written as it came)."""
    try:
        if store == "langfuse":
            langfuse = LangfusePage.model_validate(data)
            return len(langfuse.data), langfuse.meta.cursor or None
        if store == "phoenix":
            phoenix = PhoenixPage.model_validate(data)
            return len(phoenix.data), phoenix.next_cursor or None
        langsmith = LangSmithPage.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ValueError(f"not a {store} page: {where}: {first['msg']}") from None
    following = langsmith.cursors.next if langsmith.cursors else None
    return len(langsmith.runs), (following or None) if langsmith.runs else None


def output(store: Store, pages: Sequence[Any]) -> list[Any]:
    """What `pull` writes: the raw pages for langfuse and phoenix, the runs in order for langsmith."""
    if store == "langsmith":
        return [run for page in pages for run in page["runs"]]
    return list(pages)


def retry_wait(retry_after: str | None, attempt: int, now: datetime | None = None) -> float:
    """Seconds to sleep before retry number `attempt` (0-based) of a 429 or 503: `Retry-After` as
    seconds, or as an HTTP date less `now`; without a readable one, 1, 2, 4, ... seconds. Never
    below 0 nor above `MAX_RETRY_WAIT`."""
    wait = float(2**attempt)
    text = (retry_after or "").strip()
    if text:
        try:
            wait = float(text)
        except ValueError:
            try:
                when = parsedate_to_datetime(text)
            except (TypeError, ValueError):
                pass
            else:
                if when.tzinfo is not None:
                    wait = (when - (now or datetime.now(UTC))).total_seconds()
    if wait != wait:  # NaN: `float("nan")` parses
        wait = 1.0
    return min(max(wait, 0.0), MAX_RETRY_WAIT)


def safe_url(url: str) -> str:
    """`url` without a user:password before its host (a base URL may carry one)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with each of `secrets` (longest first, so that none is left half-hidden) and any
    URL's user:password replaced by `***`."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return " ".join(safe_url(word) if "://" in word else word for word in text.split(" "))
