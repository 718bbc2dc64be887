"""The agent kinds: how the runner reaches an agent (docs/agent-contract.md "Agent kinds").

`AgentSpec` names the agent: `kind`, what to reach (`url`, `argv` or `callable`), the
`assistant_id` its attempts are recorded under, and the call's `timeout_s`, `retries` and
`max_reply_bytes`. `build_agent(spec)` gives an `Agent`, whose `async call(request)` returns the
turn's `AgentReply` or raises `AgentCallFailed` with its cause:

- `http`: POST of the request's JSON to `url` (httpx, which the OpenAI SDK behind the judge's
  connector already installs); header values are read from the environment (`headers_from_env`:
  header name → variable name) when the agent is built and never written anywhere: no log line,
  exception or detail carries them (`redacted`). A 2xx reply is read by the contract; any other
  status is `agent_error` ("HTTP 500").
- `command`: a local executable run once per call, the request's JSON on its stdin, the reply's
  on its stdout; its stderr is the user's terminal's. A non-zero exit is `agent_error`.
- `python`: `module:callable`, imported once and called with the request as a dict (sync callables
  in a worker thread, so the loop and the timeout go on; a thread cannot be stopped, so a timed-out
  sync callable runs on to its end in the background). Its return value (a dict or an `AgentReply`,
  or an awaitable of one) is read by the contract; an exception it raises is `agent_error`.

**Retries** (`retries`, default 2, with `retry_backoff_s` doubling): only for transport errors,
where the agent did not answer — for `http` a connection refused or reset, a protocol error, and the
gateway statuses 502, 503, 504 (a proxy in front of the agent saying it is unreachable); for the
other kinds none (a process or a callable that ran and failed would run its side effects again).
A timeout is never retried (the agent may still be working). **Timeouts**: each try has
`timeout_s` (default 60 s) end to end; over it, `agent_timeout` (a command is killed).

**The allowlist.** Like the connectors', per place, never per request: `build_agent` refuses a kind
not in `allowed_kinds` (`AgentNotAllowed`). The library and the CLI run on the user's own machine
with the user's rights, where a spec naming a command or a module is the user's own code (as
`python -m` on the same command line would be): they allow every kind (`LOCAL_KINDS`), and no list
of names is kept. A service, where a request comes from someone else, must pass `SERVICE_KINDS`
(`http` only): a request can never name code to run.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import shutil
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal, Protocol

from pydantic import Field, model_validator

from fair_forge_core.agents.contract import (
    MAX_REPLY_BYTES,
    AgentCallFailed,
    AgentReply,
    AgentTurnRequest,
    parse_reply,
    read_reply,
)
from fair_forge_core.schemas.base import RequestModel

AgentKind = Literal["http", "command", "python"]
LOCAL_KINDS: frozenset[str] = frozenset({"http", "command", "python"})
"""The kinds the library and the CLI build (module docstring, "The allowlist")."""
SERVICE_KINDS: frozenset[str] = frozenset({"http"})
"""The kinds a service may build: none that runs code on its machine."""

RETRIED_STATUSES = frozenset({502, 503, 504})
"""HTTP statuses retried as transport errors: a gateway saying the agent is unreachable."""


class AgentNotAllowed(ValueError):
    """A spec whose kind this place does not build, or one that cannot be built (a missing
    environment variable, a module that does not import); the message names the field."""


class AgentSpec(RequestModel):
    """Which agent answers, and how it is called (module docstring). Exactly the field of its
    kind is given: `url` (http or https) for `http`, `argv` (the executable, then its arguments)
    for `command`, `callable` (`module:callable`) for `python`; `headers_from_env` for `http` only."""

    kind: AgentKind
    assistant_id: str = Field(min_length=1)
    url: str | None = Field(None, pattern=r"^https?://")
    argv: list[str] | None = Field(None, min_length=1)
    callable: str | None = Field(None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
    headers_from_env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(60.0, gt=0, le=3600)
    retries: int = Field(2, ge=0, le=10)
    retry_backoff_s: float = Field(0.2, ge=0, le=60)
    max_reply_bytes: int = Field(MAX_REPLY_BYTES, ge=1, le=100 * MAX_REPLY_BYTES)

    @model_validator(mode="after")
    def _the_field_of_its_kind(self) -> AgentSpec:
        wanted = {"http": "url", "command": "argv", "python": "callable"}[self.kind]
        given = [name for name in ("url", "argv", "callable") if getattr(self, name) is not None]
        if given != [wanted]:
            raise ValueError(f"an agent of kind {self.kind!r} gives {wanted} and none of the others")
        if self.headers_from_env and self.kind != "http":
            raise ValueError("headers_from_env is for kind 'http' only")
        return self


class Agent(Protocol):
    """One agent, built from its spec: `call` answers one turn or raises `AgentCallFailed`."""

    spec: AgentSpec

    async def call(self, request: AgentTurnRequest) -> AgentReply: ...

    async def aclose(self) -> None: ...


def redacted(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret (a header value) replaced by `***`: applied to every detail an
    agent's failure carries, whatever wrote it."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


async def with_retries(spec: AgentSpec, once: Callable[[], Awaitable[AgentReply]]) -> AgentReply:
    """`once()` under the spec's timeout, retried after a transport error (`TransportFailure`) up
    to `spec.retries` times with a doubling backoff; the last failure as `agent_error`."""
    delay = spec.retry_backoff_s
    for remaining in range(spec.retries, -1, -1):
        try:
            async with asyncio.timeout(spec.timeout_s):
                return await once()
        except TimeoutError:
            raise AgentCallFailed("agent_timeout", f"no reply within {spec.timeout_s:g} s") from None
        except TransportFailure as failure:
            if remaining == 0:
                tries = spec.retries + 1
                raise AgentCallFailed(
                    "agent_error", f"{failure.detail} ({tries} tr{'y' if tries == 1 else 'ies'})"
                ) from None
        await asyncio.sleep(delay)
        delay *= 2
    raise AssertionError("unreachable")  # the loop returns or raises


class TransportFailure(Exception):
    """A try the agent never answered (retried): its detail, without any header value."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class HttpAgent:
    """The `http` kind (module docstring)."""

    def __init__(self, spec: AgentSpec, environ: Mapping[str, str], concurrency: int) -> None:
        import httpx

        missing = sorted(var for var in spec.headers_from_env.values() if var not in environ)
        if missing:
            raise AgentNotAllowed(f"headers_from_env: the environment variable(s) {', '.join(missing)} are not set")
        self.spec = spec
        self._headers = {header: environ[var] for header, var in spec.headers_from_env.items()}
        self._headers["content-type"] = "application/json"
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        self._client = httpx.AsyncClient(limits=limits, timeout=None, follow_redirects=False)

    async def call(self, request: AgentTurnRequest) -> AgentReply:
        body = request.model_dump_json().encode()
        try:
            return await with_retries(self.spec, lambda: self._post(body))
        except AgentCallFailed as failure:
            raise AgentCallFailed(failure.cause, redacted(failure.detail, self._headers.values())) from None

    async def _post(self, body: bytes) -> AgentReply:
        import httpx

        url = str(self.spec.url)
        try:
            async with self._client.stream("POST", url, content=body, headers=self._headers) as response:
                if response.status_code in RETRIED_STATUSES:
                    raise TransportFailure(f"HTTP {response.status_code} from the agent")
                if not 200 <= response.status_code < 300:
                    raise AgentCallFailed("agent_error", f"HTTP {response.status_code} from the agent")
                reply = await read_capped(response.aiter_bytes(), self.spec.max_reply_bytes)
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.TransportError as error:
            raise TransportFailure(f"the agent is unreachable ({type(error).__name__})") from None
        return parse_reply(reply, max_bytes=self.spec.max_reply_bytes)

    async def aclose(self) -> None:
        await self._client.aclose()


async def read_capped(chunks: Any, max_bytes: int) -> bytes:
    """The bytes of `chunks` (an async iterator), at most `max_bytes`; one byte more is
    `agent_malformed` "over the size cap", read no further (the rest is never held)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            raise AgentCallFailed("agent_malformed", f"the reply is over the size cap ({max_bytes:,} bytes)")
        parts.append(chunk)
    return b"".join(parts)


async def _stream_chunks(stream: asyncio.StreamReader) -> Any:
    while chunk := await stream.read(65_536):
        yield chunk


class CommandAgent:
    """The `command` kind (module docstring)."""

    def __init__(self, spec: AgentSpec) -> None:
        argv = spec.argv or []
        if shutil.which(argv[0]) is None:
            raise AgentNotAllowed(f"argv[0]: {argv[0]!r} is no executable found here")
        self.spec = spec

    async def call(self, request: AgentTurnRequest) -> AgentReply:
        body = request.model_dump_json().encode()
        return await with_retries(self.spec, lambda: self._run(body))

    async def _run(self, body: bytes) -> AgentReply:
        try:
            process = await asyncio.create_subprocess_exec(
                *(self.spec.argv or []), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
            )
        except OSError as error:
            raise AgentCallFailed("agent_error", f"the command cannot start ({type(error).__name__})") from None
        try:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(body)
            await process.stdin.drain()
            process.stdin.close()
            reply = await read_capped(_stream_chunks(process.stdout), self.spec.max_reply_bytes)
            status = await process.wait()
        except (BrokenPipeError, ConnectionResetError):
            status = await process.wait()
            raise AgentCallFailed("agent_error", f"the command exited with status {status} before reading") from None
        finally:
            if process.returncode is None:  # timed out or over the cap: stop it
                process.kill()
                await process.wait()
        if status != 0:
            raise AgentCallFailed("agent_error", f"the command exited with status {status}")
        return parse_reply(reply, max_bytes=self.spec.max_reply_bytes)

    async def aclose(self) -> None:
        return None


class PythonAgent:
    """The `python` kind (module docstring)."""

    def __init__(self, spec: AgentSpec) -> None:
        module_name, _, attribute = str(spec.callable).partition(":")
        try:
            target: Any = importlib.import_module(module_name)
            for part in attribute.split("."):
                target = getattr(target, part)
        except Exception as error:
            raise AgentNotAllowed(f"callable: {spec.callable!r} does not import ({type(error).__name__})") from None
        if not callable(target):
            raise AgentNotAllowed(f"callable: {spec.callable!r} is not callable")
        self.spec = spec
        self._target = target

    async def call(self, request: AgentTurnRequest) -> AgentReply:
        return await with_retries(self.spec, lambda: self._call(request.model_dump(mode="json")))

    async def _call(self, data: dict[str, Any]) -> AgentReply:
        try:
            if inspect.iscoroutinefunction(self._target):
                returned = await self._target(data)
            else:
                returned = await asyncio.to_thread(self._target, data)
                if inspect.isawaitable(returned):
                    returned = await returned
        except (TimeoutError, asyncio.CancelledError):
            raise
        except Exception as error:
            raise AgentCallFailed("agent_error", f"the callable raised {type(error).__name__}: {error}") from None
        return _capped_reply(returned, self.spec.max_reply_bytes)

    async def aclose(self) -> None:
        return None


def _capped_reply(returned: Any, max_bytes: int) -> AgentReply:
    """A python agent's reply, held to the same size cap as a reply read from bytes (its JSON)."""
    if isinstance(returned, AgentReply):
        returned = returned.model_dump(mode="json", exclude_unset=True)
    try:
        size = len(json.dumps(returned, ensure_ascii=False, allow_nan=False).encode())
    except (TypeError, ValueError):
        raise AgentCallFailed("agent_malformed", "the reply is not JSON (a value JSON cannot hold)") from None
    if size > max_bytes:
        raise AgentCallFailed("agent_malformed", f"the reply is over the size cap ({size:,} bytes > {max_bytes:,})")
    return read_reply(returned)


def build_agent(
    spec: AgentSpec,
    *,
    allowed_kinds: Iterable[str] = LOCAL_KINDS,
    environ: Mapping[str, str] | None = None,
    concurrency: int = 8,
) -> Agent:
    """The `Agent` of `spec`, if this place allows its kind (`AgentNotAllowed` otherwise; module
    docstring). `environ` (default `os.environ`) is where `headers_from_env` is read;
    `concurrency` sizes the `http` kind's connection pool."""
    if spec.kind not in frozenset(allowed_kinds):
        raise AgentNotAllowed(f"kind: agents of kind {spec.kind!r} are not allowed here")
    if spec.kind == "http":
        return HttpAgent(spec, os.environ if environ is None else environ, concurrency)
    if spec.kind == "command":
        return CommandAgent(spec)
    return PythonAgent(spec)
