"""`fair-forge pull langfuse|phoenix|langsmith`: fetch traces from a store over its public REST
API, page after page, and write a traces file `fair-forge convert` reads (what each store is
asked and what is written: `fair_forge_core.pull_stores`). This module does the I/O: the
requests (`urllib.request`, no redirect followed, so that the credentials never go to another
host), the sleeps before a retry, the bounds, the output.

Rules:

- A 429 or 503 is retried after `Retry-After` (seconds or an HTTP date; 1, 2, 4, ... s without
  one), each sleep at most `MAX_RETRY_WAIT` (60 s), at most `MAX_RETRIES` (5) times a request;
  then, as on any other HTTP error, an unreachable store or an answer that is not the store's
  page, the pull fails: exit `EXIT_STORE_FAILED` (8), nothing written.
- At most `--max-pages` pages are fetched (default 100) and at most `--max-bytes` bytes of
  answers read (default 100,000,000; a page that would pass the bound is not kept, not even read
  whole). When a bound stops the pull while the store has more, what was fetched is written, one
  line says which bound stopped it, and the exit code is `EXIT_BOUNDED` (7), never the 0 of a
  complete pull. A pull whose last page is the `--max-pages`-th is complete (0).
- Bad input (a flag, a missing or malformed environment variable) is exit 2 naming it, before
  any request.
- With `--references REFS` (and convert's `--task-key`, `--allow-unjoined`), what was pulled is
  converted by convert's own rules (`convert.write_request`: langfuse's pages `--from langfuse`,
  phoenix's `--from openinference`, langsmith's runs `--from langsmith`) and the request is
  written instead of the traces; the exit code is convert's (6 for unjoined attempts unless
  allowed), but a pull a bound stopped is 7 whatever the conversion gave.
- No message carries a credential: every line printed goes through `pull_stores.redact`, which
  hides the secret values and a URL's user:password, an error body echoing them included.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from fair_forge_core.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_BOUNDED,
    EXIT_OK,
    EXIT_STORE_FAILED,
    CliError,
    check_writable,
    json_dump,
    say,
    write_output,
)

if TYPE_CHECKING:
    import urllib.error

    from fair_forge_core.pull_stores import Connection, HttpRequest, Query

TRACE_FORMAT = {"langfuse": "langfuse", "phoenix": "openinference", "langsmith": "langsmith"}
"""The `convert --from` format of what `pull` writes of each store (`--references`)."""
DEFAULT_MAX_PAGES = 100
DEFAULT_MAX_BYTES = 100_000_000
TIMEOUT_SECONDS = 60.0
"""One request's socket timeout: a store that stops answering fails the pull, never hangs it."""
_ERROR_BODY_CHARS = 300
"""How much of an error answer a message quotes: enough for the store's reason, not a page."""


class _Bounded(Exception):
    """The next page's body would pass `--max-bytes`."""


def _open(request: HttpRequest, conn: Connection, budget: int) -> bytes:
    """The body of `request`'s answer, at most `budget` bytes (`_Bounded` when it is longer);
    `urllib.error.HTTPError` on a status other than 2xx (a redirect included)."""
    # urllib is imported here, not at the top: `cli` imports this module, and `--help` stays instant.
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        """Refuses every redirect: urllib would send the Authorization header on to the new host."""

        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    headers = {**conn.headers, "Accept": "application/json", "User-Agent": "fair-forge-pull"}
    if request.body is not None:
        headers["Content-Type"] = "application/json"
    opener = urllib.request.build_opener(NoRedirect)
    sent = urllib.request.Request(request.url, data=request.body, headers=headers, method=request.method)
    with opener.open(sent, timeout=TIMEOUT_SECONDS) as answer:
        data: bytes = answer.read(budget + 1)
    if len(data) > budget:
        raise _Bounded
    return data


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read(_ERROR_BODY_CHARS + 1).decode("utf-8", errors="replace")
    except OSError:
        body = ""
    body = " ".join(body.split())
    return body[:_ERROR_BODY_CHARS] + ("…" if len(body) > _ERROR_BODY_CHARS else "")


def fetch_page(
    request: HttpRequest,
    conn: Connection,
    budget: int,
    stderr: TextIO,
    sleep: Callable[[float], None] = time.sleep,
) -> bytes:
    """One page's body, retrying a 429 or 503 as the module docstring says; `CliError` (exit 8)
    with the store's status and reason, redacted, when it cannot be had."""
    import http.client
    import urllib.error

    from fair_forge_core.pull_stores import MAX_RETRIES, RETRY_STATUSES, redact, retry_wait, safe_url

    what = f"{request.method} {safe_url(request.url.partition('?')[0])}"
    for attempt in range(MAX_RETRIES + 1):
        try:
            return _open(request, conn, budget)
        except urllib.error.HTTPError as exc:
            if exc.code in RETRY_STATUSES and attempt < MAX_RETRIES:
                wait = retry_wait(exc.headers.get("Retry-After"), attempt)
                say(
                    stderr,
                    redact(
                        f"{what}: HTTP {exc.code}; retry {attempt + 1} of {MAX_RETRIES} in {wait:g} s", conn.secrets
                    ),
                )
                sleep(wait)
                continue
            hint = " (check the credentials' variables)" if exc.code in {401, 403} else ""
            message = f"{what}: HTTP {exc.code} {exc.reason}{hint}: {_error_text(exc)}".rstrip(": ")
            raise CliError(redact(message, conn.secrets), EXIT_STORE_FAILED) from None
        except urllib.error.URLError as exc:
            raise CliError(
                redact(f"{what}: cannot reach the store: {exc.reason}", conn.secrets), EXIT_STORE_FAILED
            ) from None
        except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
            raise CliError(
                redact(f"{what}: the store did not answer: {exc}", conn.secrets), EXIT_STORE_FAILED
            ) from None
    raise AssertionError("unreachable: the last attempt returns or raises")


def _query(args: argparse.Namespace) -> Query:
    from fair_forge_core.pull_stores import PullInputError, Query, parse_instant

    def instant(flag: str, text: str | None) -> Any:
        try:
            return parse_instant(text) if text else None
        except PullInputError as exc:
            raise CliError(f"{flag}: {exc}") from None

    return Query(
        store=args.store,
        since=instant("--since", args.since),
        until=instant("--until", args.until),
        sessions=tuple(args.session),
        tags=tuple(args.tag),
        filters=tuple(args.filter),
        project=args.project,
        page_size=args.page_size,
    )


def pull(
    query: Query,
    env: Mapping[str, str],
    stderr: TextIO,
    *,
    max_pages: int,
    max_bytes: int,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[Any], int, str | None]:
    """The pages fetched, their item count, and the bound that stopped the pull (None: complete)."""
    from fair_forge_core.pull_stores import PullInputError, connection, first_request, page_request, read_page, redact

    try:
        conn = connection(query.store, env)
        request = first_request(query, conn)
    except PullInputError as exc:
        raise CliError(redact(str(exc), [v for k, v in env.items() if k.endswith("_KEY")]), EXIT_BAD_INPUT) from None
    pages: list[Any] = []
    items, read = 0, 0
    while True:
        if len(pages) == max_pages:
            return pages, items, f"--max-pages {max_pages}: the store has more pages"
        try:
            body = fetch_page(request, conn, max_bytes - read, stderr, sleep)
        except _Bounded:
            return pages, items, f"--max-bytes {max_bytes}: the next page would pass it"
        read += len(body)
        try:
            page = json.loads(body)
            count, cursor = read_page(query.store, page)
        except ValueError as exc:  # not JSON (UnicodeDecodeError is one), or not the store's page
            raise CliError(redact(f"page {len(pages) + 1}: {exc}", conn.secrets), EXIT_STORE_FAILED) from None
        except RecursionError:
            raise CliError(f"page {len(pages) + 1}: nested too deeply to read", EXIT_STORE_FAILED) from None
        pages.append(page)
        items += count
        if cursor is None:
            return pages, items, None
        request = page_request(query, conn, cursor)


def cmd_pull(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from fair_forge_core.pull_stores import output

    check_writable(args.out, "-o")
    query = _query(args)
    pages, items, bound = pull(query, os.environ, stderr, max_pages=args.max_pages, max_bytes=args.max_bytes)
    written = output(query.store, pages)
    if args.references is None:
        write_output(json_dump(written), args.out, stdout)
        where = f" to {args.out}" if isinstance(args.out, Path) else ""
        say(stderr, f"{query.store}: {len(pages)} page(s), {items} item(s) written{where}")
        code = EXIT_OK
    else:
        from fair_forge_core.cli.convert import write_request

        say(stderr, f"{query.store}: {len(pages)} page(s), {items} item(s) pulled")
        pulled = f"the traces pulled from {query.store}"
        code = write_request(TRACE_FORMAT[query.store], written, pulled, args, stdin, stdout, stderr)
    if bound is None:
        return code
    say(stderr, f"stopped at the bound {bound}; what was fetched is written (exit {EXIT_BOUNDED})")
    return EXIT_BOUNDED
