"""The judge's HTTP/1.1 transport (`fair_forge_core.judges.http_transport`) against httpx's own.

A scripted server on 127.0.0.1 (raw sockets: it records each request's bytes and answers with
the bytes a test gives) is asked the same things through both transports: the requests on the
wire must be the same bytes, and the replies must read the same (or both be refused)."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest

from fair_forge_core.connectors import build
from fair_forge_core.connectors.build import ModelRecipe, instantiate
from fair_forge_core.judges.http_transport import judge_transport, transport_class
from fair_forge_core.judges.http_wire import MAX_HEAD_BYTES, MAX_INFORMATIONAL, origin
from fair_forge_core.judges.reply_limit import TRANSPORT_VARIABLE, JudgeReplyTooLarge, capped_async_client

Reply = Callable[[bytes], bytes | None]
"""The bytes to answer a request's bytes with; None: close the connection without answering."""


def reply(status: str, headers: list[str], body: bytes) -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(f"{h}\r\n" for h in headers) + "\r\n").encode() + body


def json_reply(body: bytes) -> bytes:
    return reply("200 OK", ["Content-Type: application/json", f"Content-Length: {len(body)}"], body)


COMPLETION = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Score: 1"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
    }
).encode()


class ScriptedServer:
    """Answers each request on each connection with `answer(request bytes)`; records the requests,
    the connections accepted and the most open at once. `release` frees answers that wait on it."""

    def __init__(self, answer: Reply, tls: ssl.SSLContext | None = None, *, close_after_reply: bool = False) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self.connections = 0
        self.closed = 0
        self.most_open = 0
        self.release = threading.Event()
        self._open = 0
        self._lock = threading.Lock()
        self._tls = tls
        self._close_after_reply = close_after_reply
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str = "/v1/x", scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._open += 1
            self.most_open = max(self.most_open, self._open)
        try:
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_side=True)
            pending = b""
            while True:
                request, pending = read_request(sock, pending)
                if request is None:
                    return
                self.requests.append(request)
                answer = self.answer(request)
                if answer is None:
                    return
                sock.sendall(answer)
                if self._close_after_reply:
                    return
        except (OSError, ssl.SSLError):
            return
        finally:
            sock.close()
            with self._lock:
                self._open -= 1
                self.closed += 1

    def close(self) -> None:
        self.release.set()
        self._listener.close()


def read_request(sock: socket.socket, pending: bytes) -> tuple[bytes | None, bytes]:
    """One request's bytes (head and a Content-Length or chunked body) and what followed it."""
    data = pending
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lowered = head.lower()
    if b"content-length:" in lowered:
        length = int(lowered.split(b"content-length:")[1].split(b"\r\n")[0])
        while len(rest) < length:
            rest += sock.recv(65536)
        return head + b"\r\n\r\n" + rest[:length], rest[length:]
    if b"transfer-encoding: chunked" in lowered:
        while not rest.endswith(b"0\r\n\r\n"):
            rest += sock.recv(65536)
        return head + b"\r\n\r\n" + rest, b""
    return head + b"\r\n\r\n", rest


@pytest.fixture
def serve() -> Iterator[Callable[..., ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(answer: Reply, **options: Any) -> ScriptedServer:
        servers.append(ScriptedServer(answer, **options))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def ours(**limits: Any) -> Any:
    return transport_class("httpx2")(ssl.create_default_context(), httpx2.Limits(**limits))


async def fetch(transport: Any, url: str, **options: Any) -> tuple[Any, ...]:
    async with httpx2.AsyncClient(transport=transport, timeout=options.pop("timeout", 30.0)) as client:
        response = await client.request(options.pop("method", "POST"), url, **options)
        return (
            response.status_code,
            response.http_version,
            response.reason_phrase,
            response.headers.raw,
            response.content,
        )


def outcome(transport: Any, url: str, **options: Any) -> tuple[Any, ...]:
    """What a request reads through `transport`: the reply, or the class of the httpx error."""
    try:
        return asyncio.run(fetch(transport, url, **options))
    except httpx2.HTTPError as exc:
        return ("refused", type(exc).__name__)


# ------------------------------------------------------------------------ the request on the wire


@pytest.fixture
def fresh_clients() -> Iterator[None]:
    build._reply_limited_client.cache_clear()  # the process shares its judge client: built anew per setting
    yield
    build._reply_limited_client.cache_clear()


def test_chat_openai_sends_the_bytes_httpcore_sends_and_reads_the_same_message(
    serve: Callable[..., ScriptedServer], fresh_clients: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(lambda request: json_reply(COMPLETION))
    recipe = ModelRecipe(
        "langchain_openai.chat_models.ChatOpenAI",
        {"model": "gpt-4o-mini", "api_key": "sk-test", "base_url": server.url("/v1"), "max_retries": 0},
    )
    prompt = [("system", "Grade this turn. {braces} é ✓"), ("human", "Q: 2+2?\nA: 4")]

    def ask() -> Any:
        model = instantiate(recipe)
        return asyncio.run(model.ainvoke(prompt)), model.root_async_client._client._transport

    message, transport = ask()
    monkeypatch.setenv(TRANSPORT_VARIABLE, "httpx")
    build._reply_limited_client.cache_clear()
    stock_message, stock_transport = ask()

    assert type(transport).__name__ == "JudgeTransport"
    assert isinstance(stock_transport, httpx2.AsyncHTTPTransport)
    assert len(server.requests) == 2
    assert server.requests[0] == server.requests[1]
    assert server.requests[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:")
    assert message.content == stock_message.content == "Score: 1"
    assert message.response_metadata == stock_message.response_metadata
    assert message.usage_metadata == stock_message.usage_metadata


def test_a_streamed_body_goes_chunked_as_h11_writes_it(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: json_reply(b"{}"))

    async def parts() -> Any:
        for part in (b"one", b"", b"two-two"):
            yield part

    for transport in (ours(), None):
        asyncio.run(fetch(transport, server.url(), content=parts()))
    assert server.requests[0] == server.requests[1]
    assert server.requests[0].endswith(b"\r\n\r\n3\r\none\r\n7\r\ntwo-two\r\n0\r\n\r\n")


def test_a_body_longer_or_shorter_than_its_content_length_is_refused_before_anything_is_sent(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(lambda request: json_reply(b"{}"))
    smuggled = b'{"a":1}GET /admin HTTP/1.1\r\nHost: x\r\n\r\n'
    for length in ("7", "100"):
        assert outcome(ours(), server.url(), content=smuggled, headers={"Content-Length": length})[0] == "refused"
    assert server.requests == []
    with pytest.raises(Exception, match="Content-Length"):  # h11 refuses it too, once the head is sent
        asyncio.run(fetch(None, server.url(), content=smuggled, headers={"Content-Length": "7"}))


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://faß.example/v1", "xn--fa-hia.example"),  # IDNA 2003 would connect to fass.example
        ("http://xn--fa-hia.example:8080/", "xn--fa-hia.example"),
        ("https://[::1]/", "::1"),
        ("http://127.0.0.1/", "127.0.0.1"),
    ],
)
def test_the_host_connected_to_is_the_url_s_on_the_wire(url: str, host: str) -> None:
    scheme = url.partition(":")[0]
    assert origin(httpx2.URL(url)) == (scheme, host, 8080 if ":8080" in url else {"http": 80, "https": 443}[scheme])


@pytest.mark.parametrize(
    "headers",
    [{"X-Split": "a\r\nX-Injected: 1"}, {"X-Split": "a\nb"}, {"X-Null": "a\x00b"}, {"Bad Name": "v"}],
)
def test_a_header_that_could_split_the_request_is_refused_before_anything_is_sent(
    serve: Callable[..., ScriptedServer], headers: dict[str, str]
) -> None:
    server = serve(lambda request: json_reply(b"{}"))
    assert outcome(ours(), server.url(), headers=headers)[0] == "refused"
    assert outcome(None, server.url(), headers=headers)[0] == "refused"  # as httpcore (h11) refuses it
    assert server.requests == []


# ------------------------------------------------------------------------ the reply, read as h11 reads it

READ_ALIKE = {
    "content-length": json_reply(b'{"a": 1}'),
    "chunked, an extension and a trailer": reply(
        "200 OK", ["Transfer-Encoding: chunked"], b"4;ext=1\r\nWiki\r\n6\r\npedia \r\n0\r\nTrailer: x\r\n\r\n"
    ),
    "chunked in upper case": reply("200 OK", ["Transfer-Encoding: Chunked"], b"3\r\nabc\r\n0\r\n\r\n"),
    "no reason phrase": b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
    "an informational reply first": b"HTTP/1.1 100 Continue\r\n\r\n" + json_reply(b"{}"),
    "agreeing lengths": reply("200 OK", ["Content-Length: 3, 3", "Content-Length: 3"], b"abc"),
    "204 without a body": reply("204 No Content", ["X-A: 1"], b""),
    "an error status": reply("429 Too Many Requests", ["Retry-After: 1", "Content-Length: 2"], b"{}"),
    "trailers ending in LF alone": reply("200 OK", ["Transfer-Encoding: chunked"], b"1\r\na\r\n0\r\nT: 1\n\n"),
    "line ends in LF alone": b"HTTP/1.1 200 OK\nX-A: 1\nContent-Length: 2\n\nok",
    "white space around a value": reply("200 OK", ["X-A:   spaced value \t", "Content-Length: 0"], b""),
}
REFUSED_ALIKE = {
    "disagreeing lengths": reply("200 OK", ["Content-Length: 3", "Content-Length: 4"], b"abcd"),
    "a length that is no number": reply("200 OK", ["Content-Length: 3x"], b"abc"),
    "another transfer coding": reply("200 OK", ["Transfer-Encoding: gzip"], b"abc"),
    "HTTP/2 in the status line": b"HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n",
    "not HTTP": b"SSH-2.0-OpenSSH\r\n\r\n",
    "a header without a colon": b"HTTP/1.1 200 OK\r\nNo colon here\r\nContent-Length: 0\r\n\r\n",
    "a chunk size that is not hex": reply("200 OK", ["Transfer-Encoding: chunked"], b"zz\r\nabc\r\n0\r\n\r\n"),
    "a status below 100": b"HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n",
    "a malformed trailer": reply("200 OK", ["Transfer-Encoding: chunked"], b"1\r\na\r\n0\r\nno colon\r\n\r\n"),
    "a bare CR in a value": b"HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n",
    "a chunk longer than its size": reply("200 OK", ["Transfer-Encoding: chunked"], b"2\r\nabc\r\n0\r\n\r\n"),
}


@pytest.mark.parametrize("name", sorted(READ_ALIKE))
def test_a_reply_reads_as_httpcore_reads_it(serve: Callable[..., ScriptedServer], name: str) -> None:
    server = serve(lambda request: READ_ALIKE[name])
    mine, stock = outcome(ours(), server.url()), outcome(None, server.url())
    assert mine[0] != "refused"
    assert mine == stock


@pytest.mark.parametrize("name", sorted(REFUSED_ALIKE))
def test_a_malformed_reply_is_refused_as_httpcore_refuses_it(serve: Callable[..., ScriptedServer], name: str) -> None:
    server = serve(lambda request: REFUSED_ALIKE[name])
    assert outcome(ours(), server.url()) == ("refused", "RemoteProtocolError")
    assert outcome(None, server.url()) == ("refused", "RemoteProtocolError")


def test_a_reply_ended_by_the_connection_reads_whole(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: b"HTTP/1.0 200 OK\r\nX-A: 1\r\n\r\nall of it, then the end", close_after_reply=True)
    mine = outcome(ours(), server.url())
    assert mine == outcome(None, server.url())
    assert mine[1] == "HTTP/1.0" and mine[-1] == b"all of it, then the end"


@pytest.mark.parametrize("cut", ["in the head", "in the body", "in a chunk", "before anything"])
def test_a_reply_cut_short_is_refused(serve: Callable[..., ScriptedServer], cut: str) -> None:
    sent = {
        "in the head": b"HTTP/1.1 200 OK\r\nContent-Le",
        "in the body": reply("200 OK", ["Content-Length: 10"], b"abc"),
        "in a chunk": reply("200 OK", ["Transfer-Encoding: chunked"], b"a\r\nabc"),
        "before anything": b"",
    }[cut]
    server = serve(lambda request: sent, close_after_reply=True)
    assert outcome(ours(), server.url())[0] == "refused"
    assert outcome(None, server.url())[0] == "refused"


STRICTER = {
    # h11 joins folded lines; RFC 9112 §5.2 lets a client refuse them.
    "an obsolete folded header": b"HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 0\r\n\r\n",
    # h11 bounds a head only while it is incomplete: one that arrives in a single read passes.
    "a head over the bound": reply("200 OK", [f"X-Big: {'a' * MAX_HEAD_BYTES}", "Content-Length: 0"], b""),
    # h11 sets no bound on informational replies.
    "informational replies without end": b"HTTP/1.1 100 Continue\r\n\r\n" * (MAX_INFORMATIONAL + 1) + json_reply(b"{}"),
}


@pytest.mark.parametrize("name", sorted(STRICTER))
def test_what_h11_lets_through_and_the_transport_refuses(serve: Callable[..., ScriptedServer], name: str) -> None:
    server = serve(lambda request: STRICTER[name])
    assert outcome(ours(), server.url()) == ("refused", "RemoteProtocolError")


# ------------------------------------------------------------------------ connections


async def fetch_all(transport: Any, urls: list[str], **options: Any) -> list[tuple[Any, ...]]:
    """The replies to `urls`, asked one after the other through one client."""
    async with httpx2.AsyncClient(transport=transport, timeout=options.pop("timeout", 30.0)) as client:
        replies = [await client.post(url, **options) for url in urls]
        return [(r.status_code, r.content) for r in replies]


@pytest.mark.parametrize(
    ("answer", "close_after_reply", "connections"),
    [
        (json_reply(b"{}"), False, 1),
        (reply("200 OK", ["Connection: close", "Content-Length: 2"], b"{}"), False, 3),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", False, 3),
    ],
    ids=["kept", "the server asks to close", "HTTP/1.0"],
)
def test_a_connection_is_kept_only_when_both_sides_may_keep_it(
    serve: Callable[..., ScriptedServer], answer: bytes, close_after_reply: bool, connections: int
) -> None:
    server = serve(lambda request: answer, close_after_reply=close_after_reply)
    replies = asyncio.run(fetch_all(ours(), [server.url()] * 3))
    assert replies == [(200, b"{}")] * 3
    assert server.connections == connections


def test_a_connection_the_server_closed_while_idle_is_not_reused(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: json_reply(b"{}"), close_after_reply=True)

    async def ask_after_each_close() -> list[int]:
        async with httpx2.AsyncClient(transport=ours()) as client:
            statuses = []
            for _ in range(3):
                statuses.append((await client.post(server.url())).status_code)
                for _ in range(3000):  # until the server has closed (a bounded wait: 30 s)
                    if server.closed == server.connections:
                        break
                    await asyncio.sleep(0.01)
            return statuses

    # A server that closes at the very moment a request is sent on the connection is the race every
    # keep-alive client has (httpcore's too): the request fails as a connection error, which the
    # judge retries. Here the close has happened before the next request.
    assert asyncio.run(ask_after_each_close()) == [200] * 3
    assert server.connections == 3


def test_the_client_asking_to_close_opens_a_connection_a_request(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: json_reply(b"{}"))
    asyncio.run(fetch_all(ours(), [server.url()] * 2, headers={"Connection": "close"}))
    assert server.connections == 2


def test_an_idle_connection_past_its_expiry_is_not_reused(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: json_reply(b"{}"))
    asyncio.run(fetch_all(ours(keepalive_expiry=0), [server.url()] * 2))
    assert server.connections == 2


def test_a_connection_of_another_event_loop_is_not_reused(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: json_reply(b"{}"))
    transport = ours()
    for _ in range(2):
        assert asyncio.run(fetch_all(transport, [server.url()])) == [(200, b"{}")]
    assert server.connections == 2


def test_no_more_connections_than_the_limit_are_open(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: json_reply(b"{}"))
    transport = ours(max_connections=2)

    async def many() -> list[int]:
        async with httpx2.AsyncClient(transport=transport) as client:
            replies = await asyncio.gather(*(client.post(server.url()) for _ in range(12)))
            return [r.status_code for r in replies]

    assert asyncio.run(many()) == [200] * 12
    assert server.most_open <= 2
    assert server.connections <= 2


def test_waiting_for_a_connection_past_the_pool_timeout_raises_pool_timeout(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(lambda request: json_reply(b"{}") if server.release.wait(60) else None)
    transport = ours(max_connections=1)

    async def two() -> list[Any]:
        async with httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(60, pool=0.2)) as client:
            first = asyncio.ensure_future(client.post(server.url()))
            await asyncio.sleep(0)
            second = await asyncio.gather(client.post(server.url()), return_exceptions=True)
            server.release.set()
            return [type(second[0]).__name__, (await first).status_code]

    assert asyncio.run(two()) == ["PoolTimeout", 200]


def test_a_reply_that_does_not_come_raises_read_timeout(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: json_reply(b"{}") if server.release.wait(60) else None)
    assert outcome(ours(), server.url(), timeout=httpx2.Timeout(60, read=0.3)) == ("refused", "ReadTimeout")


def test_a_cancelled_request_gives_its_connection_back_closed(serve: Callable[..., ScriptedServer]) -> None:
    calls = iter([None, json_reply(b"{}")])
    server = serve(lambda request: server.release.wait(60) and None if next(calls) is None else json_reply(b"{}"))
    transport = ours(max_connections=1)

    async def cancel_then_ask() -> int:
        async with httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(60, pool=30)) as client:
            waiting = asyncio.ensure_future(client.post(server.url()))
            while not server.requests:
                await asyncio.sleep(0.01)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            return (await client.post(server.url())).status_code

    assert asyncio.run(cancel_then_ask()) == 200
    assert server.connections == 2


def test_a_connection_refused_raises_connect_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
    assert outcome(ours(), f"http://127.0.0.1:{port}/") == ("refused", "ConnectError")


# ------------------------------------------------------------------------ TLS, proxies, the reply limit, httpx


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM files)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fair-forge test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return folder / "cert.pem", folder / "key.pem"


def test_https_verifies_the_server_certificate(
    serve: Callable[..., ScriptedServer], certificate: tuple[Path, Path]
) -> None:
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(*certificate)
    server = serve(lambda request: json_reply(b'{"tls": true}'), tls=server_context)
    trusting = ssl.create_default_context(cafile=str(certificate[0]))
    transport = transport_class("httpx2")(trusting, httpx2.Limits())

    assert outcome(transport, server.url(scheme="https"))[-1] == b'{"tls": true}'
    assert outcome(ours(), server.url(scheme="https")) == ("refused", "ConnectError")  # the system's CAs only
    # The certificate names 127.0.0.1, not localhost: refused although its CA is trusted.
    wrong_name = f"https://localhost:{server.port}/v1/x"
    assert outcome(transport_class("httpx2")(trusting, httpx2.Limits()), wrong_name) == ("refused", "ConnectError")
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("environment", "options"),
    [
        ({"HTTPS_PROXY": "http://127.0.0.1:9"}, {}),
        ({"all_proxy": "http://127.0.0.1:9"}, {}),
        ({}, {"proxy": "http://127.0.0.1:9"}),
    ],
)
def test_a_client_with_a_proxy_keeps_httpx_own_transport(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], options: dict[str, str]
) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert type(capped_async_client(openai.DefaultAsyncHttpxClient)._transport).__name__ == "JudgeTransport"
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    client = capped_async_client(openai.DefaultAsyncHttpxClient, **options)
    assert isinstance(client._transport, httpx2.AsyncHTTPTransport)
    assert judge_transport("httpx2", ssl.create_default_context(), httpx2.Limits(), options) is None
    assert client._mounts  # and the proxy is httpx's to use


def test_the_reply_limit_holds_through_the_transport(serve: Callable[..., ScriptedServer]) -> None:
    chunk = b"x" * 65536
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(40)) + b"0\r\n\r\n"  # 2.6 MB, no length
    server = serve(lambda request: reply("200 OK", ["Transfer-Encoding: chunked"], body))
    client = capped_async_client(openai.DefaultAsyncHttpxClient, limit=1_000_000)
    assert type(client._transport).__name__ == "JudgeTransport"

    async def ask() -> None:
        async with client:
            await client.post(server.url())

    with pytest.raises(JudgeReplyTooLarge):
        asyncio.run(ask())


def test_the_httpx_flavour_serves_an_httpx_client(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: json_reply(b'{"a": 1}'))
    transport = transport_class("httpx")(ssl.create_default_context(), httpx.Limits())

    async def ask() -> Any:
        async with httpx.AsyncClient(transport=transport) as client:
            return (await client.post(server.url(), json={"q": 1})).json()

    assert asyncio.run(ask()) == {"a": 1}


def test_trailers_without_end_are_refused_not_read_forever(serve: Callable[..., ScriptedServer]) -> None:
    endless = reply("200 OK", ["Transfer-Encoding: chunked"], b"1\r\na\r\n0\r\n" + b"T: 1\r\n" * 4000)
    server = serve(lambda request: endless)  # then the connection stays open
    assert outcome(ours(), server.url(), timeout=httpx2.Timeout(60)) == ("refused", "RemoteProtocolError")


def test_a_waiter_cancelled_once_woken_passes_the_connection_on(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: json_reply(b"{}") if len(server.requests) > 1 or server.release.wait(60) else None)
    transport = ours(max_connections=1)

    async def three() -> tuple[int, int, bool]:
        async with httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(60, pool=30)) as client:
            first = asyncio.ensure_future(client.post(server.url()))
            while not server.requests:
                await asyncio.sleep(0.01)
            second = asyncio.ensure_future(client.post(server.url()))
            third = asyncio.ensure_future(client.post(server.url()))
            await asyncio.sleep(0.05)  # both wait for the one connection
            give_back = transport.give_back

            def give_back_then_cancel_the_woken(*args: Any, **kwargs: Any) -> None:
                give_back(*args, **kwargs)
                second.cancel()  # lands after `second` was woken, before it ran

            transport.give_back = give_back_then_cancel_the_woken
            server.release.set()
            status = (await first).status_code
            transport.give_back = give_back
            return status, (await third).status_code, second.cancelled()

    assert asyncio.run(three()) == (200, 200, True)


def test_a_process_with_a_thousand_files_open_still_reuses_its_connections(
    serve: Callable[..., ScriptedServer],
) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1500:
        pytest.skip(f"the hard limit of open files is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), hard))
    filler = [open("/dev/null", "rb") for _ in range(1100)]  # noqa: SIM115  (closed below)
    try:
        server = serve(lambda request: json_reply(b"{}"))
        replies = asyncio.run(fetch_all(ours(max_connections=2), [server.url()] * 4))
    finally:
        for file in filler:
            file.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert replies == [(200, b"{}")] * 4
    assert server.connections == 1


def test_a_streamed_reply_read_to_its_end_keeps_its_connection(serve: Callable[..., ScriptedServer]) -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    events = [
        {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Score: 1"}}]},
        {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    sse = b"".join(b"data: %s\n\n" % json.dumps(event).encode() for event in events) + b"data: [DONE]\n\n"
    server = serve(
        lambda request: reply("200 OK", ["Content-Type: text/event-stream", f"Content-Length: {len(sse)}"], sse)
    )

    async def ask(times: int) -> list[str]:
        http_client = httpx2.AsyncClient(transport=ours())
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.url("/v1"), http_client=http_client)
        texts = []
        for _ in range(times):
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "q"}], stream=True
            )
            texts.append("".join([part.choices[0].delta.content or "" async for part in stream if part.choices]))
        await client.close()
        return texts

    assert asyncio.run(ask(5)) == ["Score: 1"] * 5
    assert server.connections == 1
