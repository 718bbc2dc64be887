"""The judge's HTTP/1.1 transport: the SDK's own client over asyncio's sockets (issue #38).

Under the openai and groq SDKs, httpx sends each request through httpcore, anyio and h11:
about 1 ms of CPU a judge call on the machine of the benchmarks (RESULTS "Every core"), more
than the judging itself. `judge_transport` gives the SDK's client (`reply_limit.capped_async_client`)
an `AsyncBaseTransport` of its httpx flavour that speaks HTTP/1.1 on an `asyncio.Protocol`
instead. Everything above the transport is the SDK's and httpx's own (headers, JSON, timeouts'
values, redirects refused, the reply limit's hooks), and the bytes it writes are h11's:

- the request line `METHOD TARGET HTTP/1.1`, the `Host` header first, then the others in their
  order and case; a name that is not an RFC 9110 token, a value with NUL, CR, LF or surrounding
  white space, or a target with white space is refused (`LocalProtocolError`), as h11 refuses
  them: no header can split a request;
- the body as given, refused unless as long as its `Content-Length` says (no body smuggled after
  it), or chunk by chunk under `Transfer-Encoding: chunked`.

A reply is read as h11 reads one: a status line `HTTP/1.x NNN reason`, header lines
`name: value` (normalized as h11 does: `normalized_headers`), informational 1xx replies skipped;
the body framed by `Transfer-Encoding: chunked` (any other coding refused), else by one
`Content-Length` (several must agree), else by the connection's end; no body for `HEAD`, 204 and
304 (the reading itself: `judges.http_connection`). Three things h11 lets through are refused: an
obsolete folded header line (RFC 9112 §5.2 allows either), a head over `MAX_HEAD_BYTES` (h11 bounds
a head only while it is incomplete), more than `MAX_INFORMATIONAL` 1xx replies before one. The
host connected to is the URL's as it goes on the wire (`http_wire.origin`), the one the endpoint
checks resolved. Read and write timeouts apply to each wait, as in httpcore; the connect timeout to connecting (and the TLS handshake); the pool timeout to
waiting for a connection when `max_connections` are open.

A connection is kept for the next request of its origin only when the reply was HTTP/1.1, read
whole, and neither side asked to close; an idle one is dropped after the limits'
`keepalive_expiry`, when the server has closed it or sent anything, and when it belongs to
another event loop. A request that fails or is cancelled part way closes its connection.

Only direct connections go through it: a client with a proxy (given or from the environment)
keeps httpx's own transport (`judge_transport` returns None), as does HTTP/2.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import ssl
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from fair_forge_core.judges.http_connection import Connection, ReplyReader, read_head, wait
from fair_forge_core.judges.http_wire import (
    DEFAULT_PORTS,
    MAX_INFORMATIONAL,
    asks_to_close,
    body_framing,
    origin,
    parse_head,
    request_head,
)

Origin = tuple[str, str, int]


@functools.cache
def transport_class(flavour: str) -> type:
    """The transport class for the httpx flavour named `flavour` (`httpx` or `httpx2`): its
    exceptions, `Response` and stream types are that module's (a client takes only its own)."""
    httpx = importlib.import_module(flavour)

    class ReplyBody(httpx.AsyncByteStream):  # type: ignore[misc, name-defined]
        """The body of one reply (`http_connection.ReplyReader`); its connection goes back to the
        pool when the body was read whole and may be kept, and is closed when reading it failed
        or was cancelled, or when the body is closed before its end. Iterated again, it goes on
        where it stopped."""

        def __init__(self, pool: Any, key: Origin, connection: Connection, reply: tuple[Any, ...]) -> None:
            self._pool, self._key, self._connection = pool, key, connection
            framing, self._keep, timeout, self._request = reply
            self._reader = ReplyReader(connection, framing, timeout)
            self._given_back = False

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                while (part := await self._reader.next_part()) is not None:
                    yield part
            except GeneratorExit:
                raise  # an iteration left part way: `aclose` (or another iteration) decides
            except TimeoutError:
                self._finish(keep=False)
                raise httpx.ReadTimeout("the judge's reply stopped arriving", request=self._request) from None
            except ValueError as exc:
                self._finish(keep=False)
                raise httpx.RemoteProtocolError(str(exc), request=self._request) from None
            except BaseException:
                self._finish(keep=False)
                raise
            self._finish(keep=self._keep)

        def _finish(self, *, keep: bool) -> None:
            if not self._given_back:
                self._given_back = True
                self._pool.give_back(self._key, self._connection, keep=keep and self._reader.done)

        async def aclose(self) -> None:
            self._finish(keep=False)

    class JudgeTransport(httpx.AsyncBaseTransport):  # type: ignore[misc, name-defined]
        """HTTP/1.1 over asyncio for one client (module docstring): a pool of connections by origin."""

        def __init__(self, ssl_context: ssl.SSLContext, limits: Any) -> None:
            self._ssl_context = ssl_context
            self._max_connections: int | None = limits.max_connections
            self._max_idle: int | None = limits.max_keepalive_connections
            self._keepalive_expiry: float | None = limits.keepalive_expiry
            self._idle: dict[Origin, deque[Connection]] = {}
            self._idle_count = 0
            self._open = 0
            self._waiting: deque[asyncio.Future[None]] = deque()

        async def handle_async_request(self, request: Any) -> Any:
            url = request.url
            if url.scheme not in DEFAULT_PORTS:
                raise httpx.UnsupportedProtocol(f"the judge's URL has scheme {url.scheme!r}", request=request)
            key = origin(url)
            method = request.method.encode("ascii")
            chunked = any(
                name.lower() == b"transfer-encoding" and value.strip().lower() == b"chunked"
                for name, value in request.headers.raw
            )
            parts = [part async for part in request.stream]
            if chunked:
                body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts if part) + b"0\r\n\r\n"
            else:
                body = b"".join(parts)
            try:
                head = request_head(method, url.raw_path, request.headers.raw, -1 if chunked else len(body))
            except ValueError as exc:
                raise httpx.LocalProtocolError(str(exc), request=request) from None
            timeouts = request.extensions.get("timeout", {})
            connection = await self._connection(key, timeouts, request)
            try:
                return await self._exchange(request, key, connection, head + body, method, timeouts)
            except BaseException:
                self.give_back(key, connection, keep=False)
                raise

        async def _exchange(
            self,
            request: Any,
            key: Origin,
            connection: Connection,
            data: bytes,
            method: bytes,
            timeouts: dict[str, float | None],
        ) -> Any:
            read_timeout = timeouts.get("read")
            try:
                await connection.write(data, timeouts.get("write"))
            except TimeoutError:
                raise httpx.WriteTimeout("the judge's request could not be sent in time", request=request) from None
            except OSError as exc:
                raise httpx.WriteError(f"the judge's request was not sent: {exc}", request=request) from None
            try:
                for _ in range(MAX_INFORMATIONAL + 1):
                    version, status, reason, headers = parse_head(await read_head(connection, read_timeout))
                    if status == 101:
                        raise ValueError("the judge's server switched protocols")
                    if status >= 200:
                        break
                else:
                    raise ValueError(f"more than {MAX_INFORMATIONAL} informational replies")
                framing = body_framing(method, status, headers)
            except TimeoutError:
                raise httpx.ReadTimeout("the judge's reply did not arrive in time", request=request) from None
            except ValueError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=request) from None
            keep = version == b"1.1" and framing != "close" and not asks_to_close(headers)
            keep = keep and not asks_to_close(request.headers.raw)
            stream = ReplyBody(self, key, connection, (framing, keep, read_timeout, request))
            extensions = {"http_version": b"HTTP/" + version, "reason_phrase": reason}
            return httpx.Response(status, headers=headers, stream=stream, extensions=extensions)

        async def _connection(self, key: Origin, timeouts: dict[str, Any], request: Any) -> Connection:
            """An idle usable connection to `key`'s origin, else a new one when the limit allows
            (closing an idle one to another origin if need be), else the first given back."""
            loop = asyncio.get_running_loop()
            while True:
                reused = self._reuse(key, loop)
                if reused is not None:
                    return reused
                if self._max_connections is None or self._open < self._max_connections:
                    break
                if self._idle_count:
                    self._forget(self._oldest_idle())
                    continue
                await self._wait_for_room(loop, timeouts.get("pool"), request)
            self._open += 1
            try:
                return await self._connect(key, timeouts.get("connect"), loop)
            except BaseException:
                self._open -= 1
                self._wake_one()
                raise

        async def _wait_for_room(self, loop: asyncio.AbstractEventLoop, timeout: float | None, request: Any) -> None:
            """Wait (within the pool timeout) to be woken by a connection given back or closed."""
            waiter = loop.create_future()
            self._waiting.append(waiter)
            try:
                await wait(waiter, loop, timeout)
            except TimeoutError:
                raise httpx.PoolTimeout("no judge connection came free in time", request=request) from None
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                    self._wake_one()  # woken, then cancelled before it ran: the room goes to the next
                raise
            finally:
                if waiter in self._waiting:
                    self._waiting.remove(waiter)

        def _reuse(self, key: Origin, loop: asyncio.AbstractEventLoop) -> Connection | None:
            """The most recently used idle connection to `key`'s origin that may still be used."""
            idle = self._idle.get(key)
            while idle:
                connection = idle.pop()
                self._idle_count -= 1
                expiry = self._keepalive_expiry
                fresh = expiry is None or loop.time() - connection.idle_since <= expiry
                try:
                    usable = connection.loop is loop and fresh and connection.usable()
                except Exception:  # its socket cannot be polled: not a connection to trust
                    usable = False
                if usable:
                    return connection
                self._forget(connection)
            return None

        async def _connect(self, key: Origin, timeout: float | None, loop: asyncio.AbstractEventLoop) -> Connection:
            scheme, host, port = key
            secure = scheme == "https"
            try:
                async with asyncio.timeout(timeout):
                    _, connection = await loop.create_connection(
                        lambda: Connection(loop),
                        host,
                        port,
                        ssl=self._ssl_context if secure else None,
                        server_hostname=host if secure else None,
                    )
            except TimeoutError:
                raise httpx.ConnectTimeout(f"connecting to the judge at {host}:{port} timed out") from None
            except (OSError, ssl.SSLError, UnicodeError) as exc:
                raise httpx.ConnectError(f"could not connect to the judge at {host}:{port}: {exc}") from None
            return connection

        def give_back(self, key: Origin, connection: Connection, *, keep: bool) -> None:
            """End `connection`'s request: pooled again when `keep` and room is left, else closed."""
            full = self._max_idle is not None and self._idle_count >= self._max_idle
            if keep and not full and not connection.ended and not connection.received:
                connection.idle_since = connection.loop.time()
                self._idle.setdefault(key, deque()).append(connection)
                self._idle_count += 1
                self._wake_one()
            else:
                self._forget(connection)

        def _forget(self, connection: Connection) -> None:
            connection.close()
            self._open -= 1
            self._wake_one()

        def _oldest_idle(self) -> Connection:
            key = min((key for key, queue in self._idle.items() if queue), key=lambda k: self._idle[k][0].idle_since)
            self._idle_count -= 1
            return self._idle[key].popleft()

        def _wake_one(self) -> None:
            while self._waiting:
                waiter = self._waiting.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return

        async def aclose(self) -> None:
            for queue in self._idle.values():
                while queue:
                    self._forget(queue.pop())
            self._idle_count = 0

    return JudgeTransport


def judge_transport(flavour: str, ssl_context: ssl.SSLContext, limits: Any, options: dict[str, Any]) -> Any:
    """The transport for a client of `flavour` built with `options`, or None when httpx's own must
    serve it: a proxy given or in the environment, HTTP/2, or mounts (module docstring)."""
    if options.get("proxy") or options.get("mounts") or options.get("http2") or options.get("transport"):
        return None
    import urllib.request  # 40 ms to import, when nothing did before

    if options.get("trust_env", True) and any(scheme != "no" for scheme in urllib.request.getproxies()):
        return None
    return transport_class(flavour)(ssl_context, limits)
