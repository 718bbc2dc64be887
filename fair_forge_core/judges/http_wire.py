"""HTTP/1.1 on the wire as h11 writes and reads it: what `judges.http_transport` sends and
accepts, as pure functions of bytes (no I/O). Each raises ValueError for what h11 would refuse
(`LocalProtocolError` for a request, `RemoteProtocolError` for a reply), with a message that
quotes nothing of the offending bytes."""

from __future__ import annotations

import re

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


def normalized_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` as h11 keeps them: names tokens and values without control characters or
    surrounding white space (else ValueError); `Content-Length` one number (repeats that agree
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


def request_head(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    """The request line and headers as h11 writes them (module docstring); ValueError naming what
    h11 would refuse."""
    if not _TOKEN.match(method):
        raise ValueError("the request's method is not a token")
    if not _TARGET.match(target):
        raise ValueError("the request's target has white space or a control character")
    headers = normalized_headers(headers)
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
    headers: list[tuple[bytes, bytes]] = []
    for line in lines:
        header = _HEADER_LINE.match(line)
        if header is None:
            raise ValueError("the reply has a malformed header line")
        headers.append((header[1], header[2]))
    return matched[1], int(matched[2]), matched[3] or b"", normalized_headers(headers)


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
