"""One HTTP/1.1 connection of the judge's transport (`judges.http_transport`) and the reading of a
reply from it: its head, and its body by the framing `http_wire.body_framing` chose.

`Connection` is an `asyncio.Protocol`: it holds the bytes received and not yet read (at most
`PAUSE_READING_BYTES` before it stops reading the socket until they are read), whether the
connection ended, and waits for more within a timeout. `ReplyReader` reads one reply's body as
h11 does, its state kept on the reader (not in a generator), so a body read part way and asked
for again goes on where it stopped, as httpcore's does (the openai SDK reads a streamed reply's
rest that way). Every bound is `http_wire.MAX_HEAD_BYTES`: a head, a chunk's header line, a
chunked reply's trailers. A malformed reply raises ValueError; a timeout, TimeoutError.
"""

from __future__ import annotations

import asyncio
import select

from fair_forge_core.judges.http_wire import MAX_HEAD_BYTES, chunk_size, head_end, parse_trailers

PAUSE_READING_BYTES = 256 * 1024
"""Unread reply bytes at which the socket stops being read until the SDK reads on."""


class Connection(asyncio.Protocol):
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
        if sock is None:
            return True
        # The loop may not have polled since the peer closed (a Lambda thawed after minutes);
        # poll, not select, which cannot watch a descriptor numbered 1024 or more.
        readable = select.poll()
        readable.register(sock.fileno(), select.POLLIN)
        return not readable.poll(0)

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
            await wait(self._drain_waiter, self.loop, timeout)
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
            await wait(self._data_waiter, self.loop, timeout)
        return True

    def take(self, size: int) -> bytes:
        data = bytes(self.received[:size])
        del self.received[:size]
        return data


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


async def wait(waiter: asyncio.Future[None], loop: asyncio.AbstractEventLoop, timeout: float | None) -> None:
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


async def read_head(connection: Connection, timeout: float | None) -> bytes:
    """The next reply head's bytes up to its blank line (`http_wire.head_end`), within `MAX_HEAD_BYTES`."""
    start = 0
    while True:
        end = head_end(connection.received, start)
        if end >= 0:
            if end > MAX_HEAD_BYTES:
                raise ValueError(f"the reply's head is longer than {MAX_HEAD_BYTES:,} bytes")
            return connection.take(end)
        if len(connection.received) > MAX_HEAD_BYTES:
            raise ValueError(f"the reply's head is longer than {MAX_HEAD_BYTES:,} bytes")
        start = max(0, len(connection.received) - 2)
        if not await connection.more(timeout):
            raise ValueError("the judge's server closed the connection without a reply")


async def _read_line(connection: Connection, timeout: float | None) -> bytes:
    """The next CRLF-ended line of a chunked body (without its CRLF), within `MAX_HEAD_BYTES`."""
    while True:
        end = connection.received.find(b"\r\n")
        if end >= 0:
            return connection.take(end + 2)[:-2]
        if len(connection.received) > MAX_HEAD_BYTES:
            raise ValueError("the reply's chunk header is too long")
        if not await connection.more(timeout):
            raise ValueError("the judge's server closed the connection inside a chunked reply")


async def _read_trailers(connection: Connection, timeout: float | None) -> None:
    """Read (and check, as h11) a chunked reply's trailer section, to its blank line, within `MAX_HEAD_BYTES`."""
    while True:
        received = connection.received
        for blank in (b"\r\n", b"\n"):
            if received.startswith(blank):
                connection.take(len(blank))
                return
        end = head_end(received)
        if end >= 0:
            if end > MAX_HEAD_BYTES:
                raise ValueError("the reply's trailers are too long")
            parse_trailers(connection.take(end))
            return
        if len(received) > MAX_HEAD_BYTES:
            raise ValueError("the reply's trailers are too long")
        if not await connection.more(timeout):
            raise ValueError("the judge's server closed the connection inside a chunked reply")


class ReplyReader:
    """The body of one reply on `connection`, framed by `framing` (a length, "chunked" or
    "close"), read part by part (`next_part`) within `timeout` a wait."""

    def __init__(self, connection: Connection, framing: int | str, timeout: float | None) -> None:
        self._connection, self._timeout = connection, timeout
        self._chunked = framing == "chunked"
        self._stage = "close" if framing == "close" else "size" if self._chunked else "data"
        self._left = framing if isinstance(framing, int) else 0

    @property
    def done(self) -> bool:
        return self._stage == "done"

    async def next_part(self) -> bytes | None:
        """The body's next bytes as they arrive; None at its end (and after)."""
        connection, timeout = self._connection, self._timeout
        while True:
            if self._stage == "done":
                return None
            if self._stage == "close":
                if connection.received:
                    return connection.take(len(connection.received))
                if not await connection.more(timeout):
                    self._stage = "done"
            elif self._stage == "size":
                self._left = chunk_size(await _read_line(connection, timeout))
                self._stage = "data" if self._left else "trailers"
            elif self._stage == "trailers":
                await _read_trailers(connection, timeout)
                self._stage = "done"
            elif self._left:
                if not connection.received and not await connection.more(timeout):
                    raise ValueError("the judge's server closed the connection before the reply's end")
                part = connection.take(min(self._left, len(connection.received)))
                self._left -= len(part)
                return part
            elif self._chunked:
                if await _read_line(connection, timeout):
                    raise ValueError("the reply's chunk does not end where its size says")
                self._stage = "size"
            else:
                self._stage = "done"
