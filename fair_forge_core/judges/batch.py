"""Batch judging (docs/judge.md "Batch judging"): the judge calls of an evaluation sent through
the provider's batch API, at its batch price, by running the same evaluation twice.

1. **Submit.** The evaluation runs with each chat model wired to a `RecordingTransport` (the
   model's own SDK client, with its HTTP transport swapped: `wired_model`): every call the
   judge makes is recorded as one line of the batch, under `custom_id` = sha256 of its request
   body and the judgement's sample number, and nothing is sent; the call keeps its cost-cap
   reservation (the batch will bill it) and its judgement is thrown away. The lines go to the
   provider as a file and a batch (`submit_lines`), on the connector's own client: its key, its
   `base_url`.
2. **Wait.** `batch_states` reads each batch until it has ended (completed, expired, cancelled,
   failed); a caller past its deadline cancels them (`cancel_batches`).
3. **Collect.** The evaluation runs again, each model wired to an `AnsweringTransport` that
   answers each call from the batch's output files (`read_answers`): the same request body gets
   the provider's answer to it, so the prompt, the parse, the samples, the judge cache, the ledger
   and the cost are those of an online run. A call the batch did not answer (the window expired,
   the batch was cancelled or failed) is unscored with cause `batch_expired`; a call the submit
   did not send (the cost cap stopped it) with cause `cost_cap`; a line the provider answered
   with an error status is unscored with that error, as it would be online, not retried (the
   batch holds one answer per line).

The bodies of the two passes are the same because everything that builds one is deterministic
(the prompt, the messages, the model's parameters); a line's answer is found by its body. What
reaches the provider is byte for byte what an online call would have sent (the request body of
the LangChain client), inside OpenAI's batch line `{custom_id, method, url, body}`.

Providers: a chat model whose SDK client is OpenAI's (`langchain_openai.ChatOpenAI`,
`BATCH_CONNECTORS`) calling chat completions. Anything else is refused before a job starts
(`batch_refusal`).
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import importlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fair_forge_core.judges.base import JudgeBatchExpired, JudgeCallError, JudgeCostCapReached

if TYPE_CHECKING:
    from fair_forge_core.judges.tokens import UsageCapture

BATCH_CONNECTORS = frozenset({"langchain_openai.chat_models.ChatOpenAI"})
"""The connectors (canonical class paths, `connectors.allowlist`) whose provider has a batch API
this module speaks: OpenAI's."""
BATCH_ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
MAX_LINES = 50_000
"""OpenAI's bounds on one batch's input file: 50,000 requests, 200 MB."""
MAX_FILE_BYTES = 200 * 1024 * 1024
BYTES_PER_LINE = 16_384
"""What a batch's output file may hold per line sent, beyond one judge reply's bound: a verdict's
reply is under 10 KB, so a file that is larger is refused as a reply that is (`reply_limit`)."""
MAX_DOWNLOAD_BYTES = 512 * 1024 * 1024
ENDED = frozenset({"completed", "expired", "cancelled", "failed"})
"""The statuses of a batch that will not change again."""
BATCH_EXPIRED_MESSAGE = "the provider's batch ended ({status}) before this judge call was answered"


class BatchError(Exception):
    """The provider's batch API refused or failed a batch (its message is safe to show)."""


def batch_refusal(class_path: str, params: Mapping[str, Any]) -> str | None:
    """Why a connector cannot be judged in batch (None: it can): its class (any accepted
    spelling) has no batch API here, or it calls an API other than chat completions
    (`use_responses_api`)."""
    from fair_forge_core.connectors.allowlist import allowed_connectors

    if allowed_connectors().get(class_path) not in BATCH_CONNECTORS:
        shown = class_path if len(class_path) <= 120 else class_path[:120] + "…"
        return (
            f"batch judging needs a connector whose provider has a batch API (langchain_openai.ChatOpenAI), not {shown}"
        )
    if params.get("use_responses_api"):
        return "batch judging sends chat completions: use_responses_api must be off"
    return None


# ----------------------------------------------------------------- what is persisted between passes


class ModelBatch(BaseModel):
    """One connector's part of a submission: its batches (ids, in order), the `custom_id`s of the
    lines sent, and the cap's message when the cap stopped calls before they could be sent."""

    model_config = ConfigDict(extra="forbid")

    batch_ids: list[str] = Field(default_factory=list)
    submitted: list[str] = Field(default_factory=list)
    cap_message: str | None = None


class BatchSubmission(BaseModel):
    """What the submit pass sent, one `ModelBatch` per connector in request order: what the wait
    and the collect pass read (a job keeps it in S3, `fair-forge evaluate --batch` in a file)."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["fair-forge-batch/1"] = "fair-forge-batch/1"
    models: list[ModelBatch]
    reserved_usd: float = 0.0
    """What the cap reserved for the lines sent (USD), to release at collect beyond what they cost."""


@dataclass(frozen=True)
class BatchState:
    """Where one batch stands: its status and OpenAI's `request_counts`."""

    batch_id: str
    status: str
    total: int = 0
    completed: int = 0
    failed: int = 0

    @property
    def ended(self) -> bool:
        return self.status in ENDED


# ----------------------------------------------------------------- the two transports


@dataclass
class _Slot:
    """The judgement a call belongs to (its sample) and what the transport made of it."""

    sample: int
    outcome: JudgeCallError | None = None
    status: int | None = None


_SLOT: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar("fair_forge_batch_slot", default=None)


def _httpx2() -> Any:
    """The HTTP client package of the openai SDK, imported only by a batch pass (it comes with the
    `openai` extra, not with the core)."""
    return importlib.import_module("httpx2")


def custom_id(body: bytes, sample: int) -> str:
    """A line's id: sha256 of the request body (hex, 48 digits) and the sample's number."""
    return f"{hashlib.sha256(body).hexdigest()[:48]}-{sample}"


def _chat_path(request: Any) -> None:
    if not str(request.url.path).endswith("/chat/completions"):
        raise BatchError(f"batch judging sends chat completions, not {request.url.path}")


@dataclass
class RecordingTransport:
    """The submit pass's transport: records each request's body as a batch line and answers
    nothing (the call is deferred: `BatchSession.call`)."""

    lines: dict[str, bytes] = field(default_factory=dict)
    """`custom_id` → request body, in the order first sent."""

    async def handle_async_request(self, request: Any) -> Any:
        httpx2 = _httpx2()
        _chat_path(request)
        slot = _SLOT.get()
        body = await request.aread()
        key = custom_id(body, slot.sample if slot else 0)
        self.lines.setdefault(key, body)
        if slot is not None:
            slot.outcome = JudgeCallError("sent to the provider's batch")
        return httpx2.Response(400, json={"error": {"message": "deferred to the batch", "type": "batch"}})

    async def aclose(self) -> None:
        return None


@dataclass
class AnsweringTransport:
    """The collect pass's transport: answers each request with the batch line of its `custom_id`
    (its status and body as the provider gave them); a request without one is unscored
    (`batch_expired` when it was sent, else the cap's message when the cap held it back)."""

    answers: Mapping[str, tuple[int, Any]]
    submitted: frozenset[str]
    ended_as: str
    cap_message: str | None = None

    async def handle_async_request(self, request: Any) -> Any:
        httpx2 = _httpx2()
        _chat_path(request)
        slot = _SLOT.get()
        key = custom_id(await request.aread(), slot.sample if slot else 0)
        answer = self.answers.get(key)
        if answer is not None:
            if slot is not None:
                slot.status = answer[0]
            return httpx2.Response(answer[0], json=answer[1])
        if slot is not None:
            if key in self.submitted:
                slot.outcome = JudgeBatchExpired(BATCH_EXPIRED_MESSAGE.format(status=self.ended_as))
            elif self.cap_message is not None:
                slot.outcome = JudgeCostCapReached(self.cap_message)
            else:
                slot.outcome = JudgeCallError("this judge call was not part of the batch submitted")
        return httpx2.Response(400, json={"error": {"message": "not in the batch", "type": "batch"}})

    async def aclose(self) -> None:
        return None


def wired_model(model: Any, transport: RecordingTransport | AnsweringTransport) -> Any:
    """A copy of `model` (an OpenAI-client chat model) whose SDK client sends through
    `transport`, without the SDK's own retries (a batch answer does not change on retry)."""
    httpx2 = _httpx2()
    client = model.root_async_client.with_options(
        http_client=httpx2.AsyncClient(transport=transport),
        max_retries=0,
    )
    return model.model_copy(update={"root_async_client": client, "async_client": client.chat.completions})


@dataclass
class BatchSession:
    """One chat model's side of a batch pass: the wired copy the judge calls (`model`) and its
    transport. `call` runs one provider call through it and turns what the transport did into
    the judgement's outcome."""

    model: Any
    transport: RecordingTransport | AnsweringTransport

    async def call(
        self, runnable: Any, messages: Any, timeout: float, config: Any, sample: int, capture: UsageCapture | None
    ) -> Any:
        """The reply of one call; a `JudgeCallError` for a call the batch defers or did not
        answer, or whose line holds an error status (not retried: the line will not change).
        A deferred call counts as replied without usage (`capture`), so that the cap keeps its
        whole reservation: the batch will bill it."""
        from fair_forge_core.judges.errors import describe_error

        slot = _Slot(sample)
        token = _SLOT.set(slot)
        try:
            async with asyncio.timeout(timeout):
                return await runnable.ainvoke(messages, config=config)
        except Exception as exc:
            if slot.outcome is not None:
                if capture is not None and isinstance(self.transport, RecordingTransport):
                    capture.replied_with(None)
                if capture is not None and capture.ledger is not None and isinstance(slot.outcome, JudgeCostCapReached):
                    capture.ledger.turns_stopped_by_cap += 1
                raise slot.outcome from None
            if slot.status is not None and slot.status != 200:
                raise JudgeCallError(f"judge call failed in the provider's batch: {describe_error(exc)}") from None
            raise
        finally:
            _SLOT.reset(token)


@dataclass
class JudgeBatch:
    """The sessions of one pass, by chat model (`RunContext.batch`): the LLM judge of a model
    with a session calls through it, on this process's loop only."""

    sessions: dict[int, BatchSession]

    @classmethod
    def recording(cls, models: Sequence[Any]) -> JudgeBatch:
        """The submit pass's: one `RecordingTransport` a model."""
        transports = [RecordingTransport() for _ in models]
        return cls({id(m): BatchSession(wired_model(m, t), t) for m, t in zip(models, transports, strict=True)})

    @classmethod
    def answering(cls, models: Sequence[Any], transports: Sequence[AnsweringTransport]) -> JudgeBatch:
        return cls({id(m): BatchSession(wired_model(m, t), t) for m, t in zip(models, transports, strict=True)})

    def session_for(self, model: Any) -> BatchSession | None:
        return self.sessions.get(id(model))

    def recorded(self, model: Any) -> dict[str, bytes]:
        """The lines the submit pass recorded for `model`."""
        session = self.sessions[id(model)]
        assert isinstance(session.transport, RecordingTransport)
        return session.transport.lines


# ----------------------------------------------------------------- the provider's batch API


def _batch_client(model: Any) -> Any:
    """The model's own OpenAI client (its key, base URL, organization and retries)."""
    return model.root_async_client


def batch_files(lines: Mapping[str, bytes]) -> list[bytes]:
    """The JSONL files of `lines` (OpenAI's input format), each within `MAX_LINES` and
    `MAX_FILE_BYTES`; the bodies are embedded as the bytes the client built."""
    files: list[bytes] = []
    current: list[bytes] = []
    size = 0
    for key, body in lines.items():
        line = b'{"custom_id":%s,"method":"POST","url":"%s","body":%s}\n' % (
            json.dumps(key).encode(),
            BATCH_ENDPOINT.encode(),
            body,
        )
        if current and (len(current) >= MAX_LINES or size + len(line) > MAX_FILE_BYTES):
            files.append(b"".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line)
    if current:
        files.append(b"".join(current))
    return files


async def submit_lines(model: Any, lines: Mapping[str, bytes], metadata: Mapping[str, str]) -> list[str]:
    """Upload `lines` as batch input files and create one batch each; their ids, in order."""
    client = _batch_client(model)
    ids = []
    for number, content in enumerate(batch_files(lines)):
        uploaded = await _provider(client.files.create(file=(f"judge-{number}.jsonl", content), purpose="batch"))
        batch = await _provider(
            client.batches.create(
                input_file_id=uploaded.id,
                endpoint=BATCH_ENDPOINT,
                completion_window=COMPLETION_WINDOW,
                metadata=dict(metadata),
            )
        )
        ids.append(batch.id)
    return ids


async def batch_states(model: Any, batch_ids: Iterable[str]) -> list[BatchState]:
    """Where each batch stands (one retrieve each)."""
    client = _batch_client(model)
    states = []
    for batch_id in batch_ids:
        batch = await _provider(client.batches.retrieve(batch_id))
        counts = batch.request_counts
        states.append(
            BatchState(
                batch_id=batch.id,
                status=batch.status,
                total=counts.total if counts else 0,
                completed=counts.completed if counts else 0,
                failed=counts.failed if counts else 0,
            )
        )
    return states


async def cancel_batches(model: Any, batch_ids: Iterable[str]) -> None:
    """Ask the provider to cancel every batch that has not ended (what was answered stays)."""
    client = _batch_client(model)
    for state in await batch_states(model, batch_ids):
        if not state.ended:
            await _provider(client.batches.cancel(state.batch_id))


def _download_client(lines: int) -> Any:
    """An HTTP client for the model's OpenAI client reading at most `BYTES_PER_LINE` × `lines` more than one judge
    reply may be (`judges.reply_limit`), within `MAX_DOWNLOAD_BYTES`: a batch's files hold every
    reply of the batch. (Through the environment's proxy, as the SDK's own client: a connector's
    `openai_proxy` applies to its online calls.)"""
    from fair_forge_core.judges.reply_limit import MAX_JUDGE_REPLY_BYTES, capped_async_client

    limit = min(MAX_JUDGE_REPLY_BYTES + BYTES_PER_LINE * lines, MAX_DOWNLOAD_BYTES)
    sdk = importlib.import_module("openai")
    return capped_async_client(sdk.DefaultAsyncHttpxClient, limit=limit, follow_redirects=False)


async def read_answers(model: Any, batch_ids: Iterable[str], lines: int) -> tuple[dict[str, tuple[int, Any]], str]:
    """Every answered line of the batches (`custom_id` → (HTTP status, body)), from their output
    and error files (of `lines` lines sent in all), and how the batches ended ("completed", or the
    first other status)."""
    http_client = _download_client(lines)
    client = _batch_client(model).with_options(http_client=http_client)
    answers: dict[str, tuple[int, Any]] = {}
    ended_as = "completed"
    try:
        for batch_id in batch_ids:
            batch = await _provider(client.batches.retrieve(batch_id))
            if batch.status != "completed" and ended_as == "completed":
                ended_as = batch.status
            for file_id in (batch.output_file_id, batch.error_file_id):
                if file_id:
                    content = await _provider(client.files.content(file_id))
                    answers.update(answered_lines(content.content))
    finally:
        await http_client.aclose()
    return answers, ended_as


def answered_lines(content: bytes) -> dict[str, tuple[int, Any]]:
    """The lines of a batch output or error file that carry a response (`custom_id` → (status,
    body)); a line without one (a request the batch never ran) is left out."""
    answered: dict[str, tuple[int, Any]] = {}
    for raw in content.splitlines():
        if not raw.strip():
            continue
        line = json.loads(raw)
        response = line.get("response")
        if isinstance(response, dict) and isinstance(response.get("status_code"), int):
            answered[str(line["custom_id"])] = (response["status_code"], response.get("body"))
    return answered


async def _provider(call: Any) -> Any:
    """`await call`, a batch API call: a refused key or model is `JudgeProviderRefused`, any
    other failure a `BatchError`, each with a message safe to show (`describe_error`)."""
    from fair_forge_core.judges.base import JudgeProviderRefused
    from fair_forge_core.judges.errors import classify_error, describe_error

    try:
        return await call
    except Exception as exc:
        if classify_error(exc) == "fatal":
            raise JudgeProviderRefused(f"the judge provider refused the batch ({describe_error(exc)})") from None
        raise BatchError(f"the judge provider's batch API failed: {describe_error(exc)}") from None
