"""A bound on the bytes read from a judge provider's HTTP reply.

A judge's endpoint may be the caller's choice, and a verdict is a few hundred bytes;
yet the provider SDKs read a reply whole before parsing it, so one reply of 100 MB
costs gigabytes. `capped_async_client` builds the SDK's own async HTTP client (its
timeouts, redirects and environment proxies kept; its connection pool as large as
`MAX_JUDGE_CONNECTIONS`) with one response hook that enforces `MAX_JUDGE_REPLY_BYTES`:

- a declared `Content-Length` above the limit is refused before the body is read;
- the body is counted as it arrives and refused as soon as it passes the limit
  (a chunked reply or a false `Content-Length` included);
- the request asks for an uncompressed reply (`Accept-Encoding: identity`), and a
  compressed one is refused: its decoded size is unknown until it is decoded, and a
  small compressed body can decode to gigabytes.

A refused reply raises `JudgeReplyTooLarge` from the SDK's call (possibly wrapped in
the SDK's connection error, as its cause): the judge fails that turn and does not
retry it, since the same request would get the same reply.
"""

from __future__ import annotations

import functools
import importlib
import os
import ssl
from collections.abc import AsyncIterator
from typing import Any

MAX_JUDGE_REPLY_BYTES = 1_000_000
"""Bytes read from one judge reply at most (a verdict with its reasoning is under 10 KB)."""


MAX_JUDGE_CONNECTIONS = 512
"""Connections one judge HTTP client opens and keeps at most: `config.max_concurrency`'s bound."""


TRANSPORT_VARIABLE = "FAIR_FORGE_JUDGE_TRANSPORT"
"""`httpx` sends the judge's calls through httpx's own transport (httpcore) instead of
`judges.http_transport`'s: the way back if a server needs what only httpcore does."""


class JudgeReplyTooLarge(Exception):
    """The judge's HTTP reply is larger than the limit, or compressed."""


def reply_too_large(exc: BaseException) -> JudgeReplyTooLarge | None:
    """The `JudgeReplyTooLarge` that `exc` is or was raised from (SDKs wrap it), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, JudgeReplyTooLarge):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # One context for every client: building one loads the CA bundle (~35 ms).
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


@functools.cache
def _capped_stream_class(httpx_module_name: str) -> type:
    """An `AsyncByteStream` of the given httpx flavour (`httpx` or `httpx2`) that stops at a limit."""
    httpx = importlib.import_module(httpx_module_name)

    class CappedStream(httpx.AsyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, stream: Any, limit: int) -> None:
            self._stream = stream
            self._limit = limit

        async def __aiter__(self) -> AsyncIterator[bytes]:
            received = 0
            async for chunk in self._stream:
                received += len(chunk)
                if received > self._limit:
                    raise JudgeReplyTooLarge(f"the judge's reply is larger than {self._limit:,} bytes")
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    return CappedStream


def sync_client(client_class: type, **kwargs: Any) -> Any:
    """An instance of `client_class` (an SDK's `DefaultHttpxClient`) on the one shared SSL context.

    The judges only ever call a chat model asynchronously (through `capped_async_client`), but
    LangChain's OpenAI and Groq classes build a sync client too; their own would load the CA bundle
    again (~15 ms of a process's first model). `kwargs` go to the client.
    """
    return client_class(verify=_ssl_context(), **kwargs)


def httpx_flavour(client_class: type) -> str:
    """The httpx flavour (`httpx` or `httpx2`) an SDK's HTTP client class (or httpx's own
    `AsyncClient`) is built on: the package of the `AsyncClient` among its bases."""
    return next(base for base in client_class.__mro__ if base.__name__ == "AsyncClient").__module__.partition(".")[0]


def capped_async_client(client_class: type, *, limit: int = MAX_JUDGE_REPLY_BYTES, **kwargs: Any) -> Any:
    """An instance of `client_class` (an SDK's `DefaultAsyncHttpxClient`) that reads at most `limit` bytes a reply.

    `kwargs` go to the client (`proxy=` for a caller's proxy). The client's httpx
    flavour is read from its class, since the openai SDK 3.x is built on `httpx2` and
    the groq SDK on `httpx`, and a stream must be of the client's own flavour.
    """
    flavour = httpx_flavour(client_class)
    stream_class = _capped_stream_class(flavour)

    async def ask_identity(request: Any) -> None:
        request.headers["Accept-Encoding"] = "identity"

    async def cap_reply(response: Any) -> None:
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise JudgeReplyTooLarge(f"the judge's reply is compressed ({encoding[:32]!r}) though none was asked for")
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise JudgeReplyTooLarge(f"the judge's reply is larger than {limit:,} bytes")
        response.stream = stream_class(response.stream, limit)

    kwargs.setdefault("verify", _ssl_context())
    # As many pooled connections as calls may be in flight (`max_concurrency`'s bound): the SDKs
    # keep 100 (openai) or 20 (groq), and a connection past those is opened and closed every call.
    pooled = MAX_JUDGE_CONNECTIONS
    kwargs.setdefault(
        "limits", importlib.import_module(flavour).Limits(max_connections=pooled, max_keepalive_connections=pooled)
    )
    if isinstance(kwargs["verify"], ssl.SSLContext) and os.environ.get(TRANSPORT_VARIABLE, "") != "httpx":
        from fair_forge_core.judges.http_transport import judge_transport

        transport = judge_transport(flavour, kwargs["verify"], kwargs["limits"], kwargs)
        if transport is not None:
            kwargs["transport"] = transport
    return client_class(event_hooks={"request": [ask_identity], "response": [cap_reply]}, **kwargs)
