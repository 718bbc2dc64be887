"""The judge's HTTP/1.1 transport: the SDK's own client over asyncio's sockets (issue #38).

Under the openai and groq SDKs, httpx sends each request through httpcore, anyio and h11:
about 1 ms of CPU a judge call on the machine of the benchmarks (RESULTS "Every core"), more
than the judging itself. `judge_transport` gives the SDK's client (`reply_limit.capped_async_client`)
an `AsyncBaseTransport` of its httpx flavour that speaks HTTP/1.1 on an `asyncio.Protocol`
instead. Everything above the transport is the SDK's and httpx's own (headers, JSON, timeouts'
values, redirects refused, the reply limit's hooks), and the bytes it writes are h11's:

- the request line `METHOD TARGET HTTP/1.1`, the `Host` header first, then the others in their
  order and case; a name that is not an RFC 9110 token, a value with a control character or
  surrounding white space, or a target with white space is refused (`LocalProtocolError`), as h11
  refuses them: no header can split a request;
- the body as given with its `Content-Length`, or chunk by chunk under `Transfer-Encoding: chunked`.

A reply is read as h11 reads one: a status line `HTTP/1.x NNN reason`, header lines
`name: value` (normalized as h11 does: `normalized_headers`), informational 1xx replies skipped;
the body framed by `Transfer-Encoding: chunked` (any other coding refused), else by one
`Content-Length` (several must agree), else by the connection's end; no body for `HEAD`, 204 and
304. Two things h11 lets through are refused: an obsolete folded header line (RFC 9112 §5.2
allows either), and a head over `MAX_HEAD_BYTES` (h11 bounds a head only while it is incomplete). Read and write timeouts apply to each wait, as
in httpcore; the connect timeout to connecting (and the TLS handshake); the pool timeout to
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
import select
import ssl
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from fair_forge_core.judges.http_wire import (
    MAX_HEAD_BYTES,
    asks_to_close,
    body_framing,
    chunk_size,
    head_end,
    parse_head,
    request_head,
)

PAUSE_READING_BYTES = 256 * 1024
"""Unread reply bytes at which the socket stops being read until the SDK reads on."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: the bytes received and not yet read, and whether it ended."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.received = bytearray()
        self.ended = False
        self.idle_since = 0.0
        self._reading_paused = False
        self._data_waiter: asyncio.Future[None] | None = None
        self._drain_waiter: asyncio.Future[None] | None = None
        self._writing_paused = False

    # asyncio.Protocol's callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received += data
        if len(self.received) > PAUSE_READING_BYTES and not self._reading_paused and self.transport is not None:
            self.transport.pause_reading()
            self._reading_paused = True
        _wake(self._data_waiter)

    def eof_received(self) -> None:
        self.ended = True
        _wake(self._data_waiter)

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        _wake(self._data_waiter)
        _wake(self._drain_waiter)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        _wake(self._drain_waiter)

    # what the transport calls
    def usable(self) -> bool:
        """Idle and still open: the server has neither closed it nor sent anything since the last reply."""
        transport = self.transport
        if self.ended or self.received or transport is None or transport.is_closing():
            return False
        sock = transport.get_extra_info("socket")
        # The loop may not have polled since the peer closed (a Lambda thawed after minutes).
        return sock is None or not select.select([sock], [], [], 0)[0]

    def close(self) -> None:
        self.ended = True
        if self.transport is not None and not self.loop.is_closed():
            self.transport.abort()

    async def write(self, data: bytes, timeout: float | None) -> None:
        """Write `data`; wait (within `timeout`) while the socket's buffer is full."""
        if self.ended or self.transport is None or self.transport.is_closing():
            raise ConnectionResetError("the connection was closed before the request was sent")
        self.transport.write(data)
        while self._writing_paused and not self.ended:
            self._drain_waiter = self.loop.create_future()
            await _wait(self._drain_waiter, self.loop, timeout)
        if self.ended:
            raise ConnectionResetError("the connection was closed while the request was sent")

    async def more(self, timeout: float | None) -> bool:
        """Wait (within `timeout`) for bytes beyond those received; False when the connection ended first."""
        if self._reading_paused and self.transport is not None:
            self._reading_paused = False
            self.transport.resume_reading()
        size = len(self.received)
        while len(self.received) == size:
            if self.ended:
                return False
            self._data_waiter = self.loop.create_future()
            await _wait(self._data_waiter, self.loop, timeout)
        return True

    def take(self, size: int) -> bytes:
        data = bytes(self.received[:size])
        del self.received[:size]
        return data


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


async def _wait(waiter: asyncio.Future[None], loop: asyncio.AbstractEventLoop, timeout: float | None) -> None:
    """Await `waiter`; TimeoutError after `timeout` seconds (None: no limit). Cheaper than
    `asyncio.wait_for` (a task a call) on a path taken several times a request."""
    if timeout is None:
        await waiter
        return
    timer = loop.call_later(timeout, _expire, waiter)
    try:
        await waiter
    finally:
        timer.cancel()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


@functools.cache
def transport_class(flavour: str) -> type:
    """The transport class for the httpx flavour named `flavour` (`httpx` or `httpx2`): its
    exceptions, `Response` and stream types are that module's (a client takes only its own)."""
    httpx = importlib.import_module(flavour)

    class ReplyBody(httpx.AsyncByteStream):  # type: ignore[misc, name-defined]
        """The body of one reply, read from its connection; the connection goes back to the pool
        when the body was read whole and may be kept, else it is closed."""

        def __init__(
            self, pool: Any, key: tuple[str, str, int], connection: _Connection, reply: tuple[Any, ...]
        ) -> None:
            self._pool, self._key, self._connection = pool, key, connection
            self._framing, self._keep, self._timeout, self._request = reply
            self._done = False

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._chunks():
                    yield chunk
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

        async def _chunks(self) -> AsyncIterator[bytes]:
            connection, timeout, framing = self._connection, self._timeout, self._framing
            if framing == "close":
                while True:
                    if connection.received:
                        yield connection.take(len(connection.received))
                    elif not await connection.more(timeout):
                        return
            elif framing == "chunked":
                while True:
                    size = chunk_size(await _read_line(connection, timeout))
                    if size == 0:
                        while await _read_line(connection, timeout):  # trailers, to their blank line
                            pass
                        return
                    async for part in _read_exactly(connection, size, timeout):
                        yield part
                    if await _read_line(connection, timeout):
                        raise ValueError("the reply's chunk does not end where its size says")
            else:
                async for part in _read_exactly(connection, framing, timeout):
                    yield part

        def _finish(self, *, keep: bool) -> None:
            if not self._done:
                self._done = True
                self._pool.give_back(self._key, self._connection, keep=keep)

        async def aclose(self) -> None:
            self._finish(keep=False)

    class JudgeTransport(httpx.AsyncBaseTransport):  # type: ignore[misc, name-defined]
        """HTTP/1.1 over asyncio for one client (module docstring): a pool of connections by origin."""

        def __init__(self, ssl_context: ssl.SSLContext, limits: Any) -> None:
            self._ssl_context = ssl_context
            self._max_connections: int | None = limits.max_connections
            self._max_idle: int | None = limits.max_keepalive_connections
            self._keepalive_expiry: float | None = limits.keepalive_expiry
            self._idle: dict[tuple[str, str, int], deque[_Connection]] = {}
            self._idle_count = 0
            self._open = 0
            self._waiting: deque[asyncio.Future[None]] = deque()

        async def handle_async_request(self, request: Any) -> Any:
            url = request.url
            scheme = url.scheme
            if scheme not in _DEFAULT_PORTS:
                raise httpx.UnsupportedProtocol(f"the judge's URL has scheme {scheme!r}", request=request)
            key = (scheme, url.host, url.port or _DEFAULT_PORTS[scheme])
            method = request.method.encode("ascii")
            try:
                head = request_head(method, url.raw_path, request.headers.raw)
            except ValueError as exc:
                raise httpx.LocalProtocolError(str(exc), request=request) from None
            chunked = any(
                name.lower() == b"transfer-encoding" and value.lower() == b"chunked"
                for name, value in request.headers.raw
            )
            timeouts = request.extensions.get("timeout", {})
            connection = await self._connection(key, timeouts, request)
            try:
                return await self._exchange(request, key, connection, head, method, chunked, timeouts)
            except BaseException:
                self.give_back(key, connection, keep=False)
                raise

        async def _exchange(
            self,
            request: Any,
            key: tuple[str, str, int],
            connection: _Connection,
            head: bytes,
            method: bytes,
            chunked: bool,
            timeouts: dict[str, float | None],
        ) -> Any:
            write_timeout, read_timeout = timeouts.get("write"), timeouts.get("read")
            try:
                parts = [part async for part in request.stream]
                if chunked:
                    body = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts if part) + b"0\r\n\r\n"
                else:
                    body = b"".join(parts)
                await connection.write(head + body, write_timeout)
            except TimeoutError:
                raise httpx.WriteTimeout("the judge's request could not be sent in time", request=request) from None
            except OSError as exc:
                raise httpx.WriteError(f"the judge's request was not sent: {exc}", request=request) from None
            try:
                while True:
                    version, status, reason, headers = parse_head(await _read_head(connection, read_timeout))
                    if not 100 <= status < 200:
                        break
                    if status == 101:
                        raise ValueError("the judge's server switched protocols")
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

        async def _connection(self, key: tuple[str, str, int], timeouts: dict[str, Any], request: Any) -> _Connection:
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
                waiter = loop.create_future()
                self._waiting.append(waiter)
                try:
                    await _wait(waiter, loop, timeouts.get("pool"))
                except TimeoutError:
                    raise httpx.PoolTimeout("no judge connection came free in time", request=request) from None
                finally:
                    if waiter in self._waiting:
                        self._waiting.remove(waiter)
            self._open += 1
            try:
                return await self._connect(key, timeouts.get("connect"), loop)
            except BaseException:
                self._open -= 1
                self._wake_one()
                raise

        def _reuse(self, key: tuple[str, str, int], loop: asyncio.AbstractEventLoop) -> _Connection | None:
            """The most recently used idle connection to `key`'s origin that may still be used."""
            idle = self._idle.get(key)
            while idle:
                connection = idle.pop()
                self._idle_count -= 1
                expiry = self._keepalive_expiry
                fresh = expiry is None or loop.time() - connection.idle_since <= expiry
                if connection.loop is loop and fresh and connection.usable():
                    return connection
                self._forget(connection)
            return None

        async def _connect(
            self, key: tuple[str, str, int], timeout: float | None, loop: asyncio.AbstractEventLoop
        ) -> _Connection:
            scheme, host, port = key
            secure = scheme == "https"
            try:
                async with asyncio.timeout(timeout):
                    _, connection = await loop.create_connection(
                        lambda: _Connection(loop),
                        host,
                        port,
                        ssl=self._ssl_context if secure else None,
                        server_hostname=host if secure else None,
                    )
            except TimeoutError:
                raise httpx.ConnectTimeout(f"connecting to the judge at {host}:{port} timed out") from None
            except (OSError, ssl.SSLError) as exc:
                raise httpx.ConnectError(f"could not connect to the judge at {host}:{port}: {exc}") from None
            return connection

        def give_back(self, key: tuple[str, str, int], connection: _Connection, *, keep: bool) -> None:
            """End `connection`'s request: pooled again when `keep` and room is left, else closed."""
            full = self._max_idle is not None and self._idle_count >= self._max_idle
            if keep and not full and not connection.ended and not connection.received:
                connection.idle_since = connection.loop.time()
                self._idle.setdefault(key, deque()).append(connection)
                self._idle_count += 1
                self._wake_one()
            else:
                self._forget(connection)

        def _forget(self, connection: _Connection) -> None:
            connection.close()
            self._open -= 1
            self._wake_one()

        def _oldest_idle(self) -> _Connection:
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


async def _read_head(connection: _Connection, timeout: float | None) -> bytes:
    """The next reply head's bytes up to its blank line (`http_wire.head_end`), within `MAX_HEAD_BYTES`."""
    start = 0
    while True:
        end = head_end(connection.received, start)
        if end >= 0:
            head = connection.take(end)
            if len(head) > MAX_HEAD_BYTES:
                raise ValueError(f"the reply's head is longer than {MAX_HEAD_BYTES:,} bytes")
            return head
        if len(connection.received) > MAX_HEAD_BYTES:
            raise ValueError(f"the reply's head is longer than {MAX_HEAD_BYTES:,} bytes")
        start = max(0, len(connection.received) - 2)
        if not await connection.more(timeout):
            raise ValueError("the judge's server closed the connection without a reply")


async def _read_line(connection: _Connection, timeout: float | None) -> bytes:
    """The next CRLF-ended line of a chunked body (without its CRLF), within `MAX_HEAD_BYTES`."""
    while True:
        end = connection.received.find(b"\r\n")
        if end >= 0:
            return connection.take(end + 2)[:-2]
        if len(connection.received) > MAX_HEAD_BYTES:
            raise ValueError("the reply's chunk header is too long")
        if not await connection.more(timeout):
            raise ValueError("the judge's server closed the connection inside a chunked reply")


async def _read_exactly(connection: _Connection, size: int, timeout: float | None) -> AsyncIterator[bytes]:
    """`size` bytes of the body, as they arrive."""
    while size:
        if not connection.received and not await connection.more(timeout):
            raise ValueError("the judge's server closed the connection before the reply's end")
        part = connection.take(min(size, len(connection.received)))
        size -= len(part)
        yield part


def judge_transport(flavour: str, ssl_context: ssl.SSLContext, limits: Any, options: dict[str, Any]) -> Any:
    """The transport for a client of `flavour` built with `options`, or None when httpx's own must
    serve it: a proxy given or in the environment, HTTP/2, or mounts (module docstring)."""
    if options.get("proxy") or options.get("mounts") or options.get("http2") or options.get("transport"):
        return None
    import urllib.request  # 40 ms to import, when nothing did before

    if options.get("trust_env", True) and any(scheme != "no" for scheme in urllib.request.getproxies()):
        return None
    return transport_class(flavour)(ssl_context, limits)
