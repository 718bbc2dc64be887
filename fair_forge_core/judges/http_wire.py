"""HTTP/1.1 on the wire as h11 writes and reads it: what `judges.http_transport` sends and
accepts, as pure functions of bytes (no I/O). Each raises ValueError for what h11 would refuse
(`LocalProtocolError` for a request, `RemoteProtocolError` for a reply), with a message that
quotes nothing of the offending bytes."""

from __future__ import annotations

import re
from typing import Any

MAX_HEAD_BYTES = 16 * 1024
"""The most read of a reply's status line and headers (h11's `max_incomplete_event_size`)."""

_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+\Z")
_FIELD_VALUE = re.compile(rb"(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?\Z")
_TARGET = re.compile(rb"[\x21-\x7e]+\Z")
_STATUS_LINE = re.compile(rb"HTTP/([0-9]\.[0-9]) ([0-9]{3})(?: ((?:[ \t]|[^\x00\s])*))?\Z")
_CHUNK_HEADER = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*\Z")
_BLANK_LINE = re.compile(rb"\n\r?\n")
_LINE_END = re.compile(rb"\r?\n")
_HEAD_END = re.compile(rb"\r?\n\r?\n\Z")
_HEADER_LINE = re.compile(rb"([^:\s]+):[ \t]*(.*?)[ \t]*\Z", re.DOTALL)


MAX_INFORMATIONAL = 16
"""Informational (1xx) replies skipped before a reply at most (h11 sets no bound)."""


DEFAULT_PORTS = {"http": 80, "https": 443}
"""The schemes the transport speaks, and their ports."""


def origin(url: Any) -> tuple[str, str, int]:
    """(scheme, host, port) of an httpx URL: the host as it goes on the wire (`raw_host`, IDNA
    encoded), never the decoded one, which the socket module would encode again by older rules
    (IDNA 2003: "faß" → "fass") into another host than the one checked. The port is the
    scheme's default when the URL has none."""
    scheme: str = url.scheme
    return scheme, url.raw_host.decode("ascii"), url.port or DEFAULT_PORTS[scheme]


def normalized_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` as h11 keeps them: names tokens, values without NUL, CR, LF or white space other
    than spaces and tabs between their words (else ValueError; like h11, other control bytes pass); `Content-Length` one number (repeats that agree
    folded into the first, up to 20 digits), `Transfer-Encoding` once and only `chunked`
    (lowercased); the rest as given, in order and case."""
    kept: list[tuple[bytes, bytes]] = []
    length: bytes | None = None
    chunked = False
    for name, value in headers:
        if not _TOKEN.match(name) or not _FIELD_VALUE.match(value):
            raise ValueError("a header's name is not a token or its value has a control character")
        lowered = name.lower()
        if lowered == b"content-length":
            lengths = {part.strip() for part in value.split(b",")}
            value = lengths.pop()
            if lengths or not value.isdigit() or not value.isascii() or len(value) > 20 or length not in (None, value):
                raise ValueError("the Content-Length is not one number")
            if length is not None:
                continue
            length = value
        elif lowered == b"transfer-encoding":
            value = value.lower()
            if chunked or value != b"chunked":
                raise ValueError("the Transfer-Encoding is not chunked once")
            chunked = True
        kept.append((name, value))
    return kept


def request_head(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], body_bytes: int) -> bytes:
    """The request line and headers as h11 writes them (module docstring), for a body of
    `body_bytes` (-1: sent chunked); ValueError naming what h11 would refuse, a body of another
    length than the `Content-Length` says (none: 0) included, since the server would read the
    rest as another request."""
    if not _TOKEN.match(method):
        raise ValueError("the request's method is not a token")
    if not _TARGET.match(target):
        raise ValueError("the request's target has white space or a control character")
    headers = normalized_headers(headers)
    declared = next((int(value) for name, value in headers if name.lower() == b"content-length"), 0)
    if body_bytes >= 0 and body_bytes != declared:
        raise ValueError("the request's body is not as long as its Content-Length says")
    host = [b"%s: %s\r\n" % item for item in headers if item[0].lower() == b"host"]
    rest = [b"%s: %s\r\n" % item for item in headers if item[0].lower() != b"host"]
    return b"".join([b"%s %s HTTP/1.1\r\n" % (method, target), *host, *rest, b"\r\n"])


def head_end(received: bytes | bytearray, start: int = 0) -> int:
    """Where the first reply head in `received` ends, its blank line included; -1 when it is not
    all there. As h11, a line may end in LF alone; `start` skips what was searched before."""
    blank = _BLANK_LINE.search(received, start)
    return -1 if blank is None else blank.end()


def parse_head(head: bytes) -> tuple[bytes, int, bytes, list[tuple[bytes, bytes]]]:
    """(HTTP version, status, reason, normalized headers) of a reply's head (up to `head_end`);
    ValueError for anything h11 would refuse, and for an obsolete folded header line."""
    status_line, *lines = _LINE_END.split(_HEAD_END.sub(b"", head, count=1))
    matched = _STATUS_LINE.match(status_line)
    if matched is None:
        raise ValueError("the reply's status line is not HTTP/1.x")
    status = int(matched[2])
    if status < 100:
        raise ValueError("the reply's status is below 100")
    return matched[1], status, matched[3] or b"", _header_lines(lines)


def parse_trailers(block: bytes) -> list[tuple[bytes, bytes]]:
    """The normalized trailer fields of a chunked reply's trailer section (up to `head_end`);
    ValueError for a malformed line, as for a head's."""
    return _header_lines(_LINE_END.split(_HEAD_END.sub(b"", block, count=1)))


def _header_lines(lines: list[bytes]) -> list[tuple[bytes, bytes]]:
    headers: list[tuple[bytes, bytes]] = []
    for line in lines:
        header = _HEADER_LINE.match(line)
        if header is None:
            raise ValueError("the reply has a malformed header line")
        headers.append((header[1], header[2]))
    return normalized_headers(headers)


def body_framing(method: bytes, status: int, headers: list[tuple[bytes, bytes]]) -> int | str:
    """How the body of a reply with normalized `headers` ends: its length in bytes, "chunked",
    or "close" (at the connection's end), as h11 decides."""
    if method == b"HEAD" or status in (204, 304):
        return 0
    names = {name.lower(): value for name, value in headers}
    if b"transfer-encoding" in names:
        return "chunked"
    if b"content-length" in names:
        return int(names[b"content-length"])
    return "close"


def asks_to_close(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(
        name.lower() == b"connection" and b"close" in (token.strip() for token in value.lower().split(b","))
        for name, value in headers
    )


def chunk_size(line: bytes) -> int:
    """The size of the chunk whose header line (without its CRLF) is `line`; ValueError if malformed."""
    matched = _CHUNK_HEADER.match(line)
    if matched is None:
        raise ValueError("the reply's chunk header is malformed")
    return int(matched[1], 16)
