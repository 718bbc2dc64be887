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
   the batch was cancelled) is unscored with cause `batch_expired` (a failed batch: a judge
   error); a call the submit did not send with the cause that held it back (`cost_cap`,
   `deadline`); a line the provider answered with an error status, or whose reply does not
   parse, is unscored with that error, never asked again (the batch holds one answer a call).
   The lines billed that no call read (the judge cache answered) are counted in the ledger all
   the same (`JudgeBatch.count_unread`).

The bodies of the two passes are the same because everything that builds one is deterministic
(the prompt, the messages, the model's parameters); a line's answer is found by its body. What
reaches the provider is byte for byte what an online call would have sent (the request body of
the LangChain client), inside the batch line `{custom_id, method, url, body}`; for Azure OpenAI
the body's `model` is the deployment the online call was addressed to (`RecordingTransport.
deployment`; `judges.batch_api.line_body`).

Providers: a chat model whose SDK client is OpenAI's (`langchain_openai.ChatOpenAI`), Azure
OpenAI's (`langchain_openai.AzureChatOpenAI`, reached by `azure_endpoint`) or Groq's
(`langchain_groq.ChatGroq`: the groq SDK, on `httpx` where openai's is on `httpx2`; its batch
lines are OpenAI's), `BATCH_CONNECTORS`, calling chat completions, not streamed. Another class is refused before a job starts
(`batch_refusal`); a call to another API stops the submit pass before anything is sent. The
provider's API itself is `judges.batch_api`.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import importlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field

from fair_forge_core.judges.base import JudgeBatchExpired, JudgeCallError, JudgeCostCapReached, JudgeDeadlineReached

if TYPE_CHECKING:
    from fair_forge_core.judges.ledger import JudgeLedger
    from fair_forge_core.judges.tokens import UsageCapture

BATCH_PRICE_FACTORS = {
    "langchain_openai.chat_models.ChatOpenAI": 0.5,
    "langchain_openai.chat_models.AzureChatOpenAI": 0.5,
    "langchain_groq.chat_models.ChatGroq": 0.75,
}
"""A batch call's price relative to the online one, by connector (canonical class path): OpenAI's
and Azure OpenAI's batch APIs bill half of every token price; Groq's "a 25% cost discount
compared to synchronous API pricing" (https://console.groq.com/docs/batch)."""
BATCH_CONNECTORS = frozenset(BATCH_PRICE_FACTORS)
"""The connectors (canonical class paths, `connectors.allowlist`) whose provider has a batch API
this module speaks: OpenAI's, Azure OpenAI's (the same Files and Batches API, under
`{azure_endpoint}/openai/`) and Groq's (the same, under `{base_url}/openai/v1/`)."""
AZURE_CONNECTOR = "langchain_openai.chat_models.AzureChatOpenAI"
STATUSES = frozenset(
    {"validating", "in_progress", "finalizing", "completed", "expired", "cancelling", "cancelled", "failed"}
)
"""A batch's statuses in OpenAI's reference (Azure's lists the same); any other reads as "unknown"."""
ENDED = frozenset({"completed", "expired", "cancelled", "failed"})
"""The statuses of a batch that will not change again."""
BATCH_EXPIRED_MESSAGE = "the provider's batch ended ({status}) before this judge call was answered"
BATCH_FAILED_MESSAGE = "the provider's batch failed (it refused its input file) before this judge call was answered"
REPLY_READ_ONCE = "unparseable judge output in the provider's batch (it holds one answer a call: not asked again)"
UNSUPPORTED = "batch judging sends chat completions, not streamed: this connector sends {what}"
TWO_DEPLOYMENTS = "calls to two Azure deployments ({first}, {other}): a batch targets one"
_DEPLOYMENT_PATH = re.compile(r"/openai/deployments/([^/]+)/chat/completions\Z")
"""The path of an Azure OpenAI chat completion (after any path of `azure_endpoint`): its deployment."""


def batch_price_factors(class_paths: Sequence[str], models: Sequence[Any]) -> dict[str, float]:
    """The batch price factor of each judge model's name (`judges.identity.judge_model_name`), from
    its connector's class path (`class_paths[i]` built `models[i]`; `BATCH_PRICE_FACTORS`). A name
    judged through two providers with different factors takes the larger (the cap then holds
    for both)."""
    from fair_forge_core.connectors.allowlist import allowed_connectors
    from fair_forge_core.judges.identity import judge_model_name
    from fair_forge_core.judges.prices import BATCH_PRICE_FACTOR

    factors: dict[str, float] = {}
    for class_path, model in zip(class_paths, models, strict=True):
        factor = BATCH_PRICE_FACTORS.get(allowed_connectors().get(class_path) or "", BATCH_PRICE_FACTOR)
        name = judge_model_name(model)
        factors[name] = max(factor, factors.get(name, 0.0))
    return factors


def batch_refusal(class_path: str, params: Mapping[str, Any]) -> str | None:
    """Why a connector cannot be judged in batch (None: it can): its class (any accepted
    spelling) has no batch API here; an Azure connector given a `base_url` (or `openai_api_base`)
    instead of `azure_endpoint` (its SDK client would look for the files and batches under that
    URL, a deployment's, where Azure has none); or its parameters ask for another API than chat
    completions (`use_responses_api`) or a streamed reply (`streaming`). A connector that reaches
    another API by its model or other parameters (LangChain picks the Responses API for some) is
    stopped at its first call of the submit pass (`RecordingTransport`), before anything is sent."""
    from fair_forge_core.connectors.allowlist import allowed_connectors

    canonical = allowed_connectors().get(class_path)
    if canonical not in BATCH_CONNECTORS:
        shown = class_path if len(class_path) <= 120 else class_path[:120] + "…"
        return (
            "batch judging needs a connector whose provider has a batch API "
            f"(langchain_openai.ChatOpenAI, langchain_openai.AzureChatOpenAI, langchain_groq.ChatGroq), not {shown}"
        )
    if canonical == AZURE_CONNECTOR and (params.get("base_url") or params.get("openai_api_base")):
        return "batch judging on Azure needs azure_endpoint (and azure_deployment): the batches are not under base_url"
    if params.get("use_responses_api"):
        return "batch judging sends chat completions: use_responses_api must be off"
    if params.get("streaming"):
        return "batch judging reads whole replies: streaming must be off"
    return None


# ----------------------------------------------------------------- what is persisted between passes


class ModelBatch(BaseModel):
    """One connector's part of a submission: its batches (ids, in order), the `custom_id`s of the
    lines sent, and the cap's message when the cap stopped calls before they could be sent."""

    model_config = ConfigDict(extra="forbid")

    batch_ids: list[str] = Field(default_factory=list)
    submitted: list[str] = Field(default_factory=list)
    cap_message: str | None = None
    deadline_message: str | None = None
    """The deadline's message when it stopped calls before they could be sent."""


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


def known_status(status: object) -> str:
    """`status` in lower case when it is one of `STATUSES` in any case (Azure's REST examples
    show "Validating", "Completed"; its SDK examples and OpenAI's, lower case), else "unknown":
    what is logged, said and compared."""
    lowered = status.lower() if isinstance(status, str) else None
    return lowered if lowered in STATUSES else "unknown"


# ----------------------------------------------------------------- the two transports


@dataclass
class _Slot:
    """The judgement a call belongs to (its sample) and what the transport made of it."""

    sample: int
    outcome: Exception | None = None
    status: int | None = None


_SLOT: contextvars.ContextVar[_Slot | None] = contextvars.ContextVar("fair_forge_batch_slot", default=None)


def _reply(request: Any, status: int, body: Any) -> Any:
    """A JSON response to `request` of its own httpx flavour (`httpx2` under the openai SDK,
    `httpx` under groq's), imported only by a batch pass (each comes with its SDK's extra)."""
    flavour = type(request).__module__.partition(".")[0]
    return importlib.import_module(flavour).Response(status, json=body)


def custom_id(body: bytes, sample: int) -> str:
    """A line's id: sha256 of the request body (hex, 48 digits) and the sample's number."""
    return f"{hashlib.sha256(body).hexdigest()[:48]}-{sample}"


def _unsupported(request: Any, body: bytes) -> Exception | None:
    """Why `request` cannot be a batch line (a call other than chat completions, or streamed):
    an error that stops the evaluation (every call of the connector is like it); None if it can."""
    from fair_forge_core.judges.errors import RemoteProviderError

    path = str(request.url.path)
    what = None
    if not path.endswith("/chat/completions"):
        what = path[-64:]
    elif b'"stream":true' in body.replace(b" ", b""):
        what = "streamed chat completions"
    return None if what is None else RemoteProviderError("fatal", None, None, UNSUPPORTED.format(what=what))


def deployment_of(path: str) -> str | None:
    """The Azure deployment a chat completion's URL path (as sent: not yet percent-decoded) is
    addressed to (`{d}` of `…/openai/deployments/{d}/chat/completions`, percent-decoded once),
    None for any other path (OpenAI's `/v1/chat/completions`)."""
    match = _DEPLOYMENT_PATH.search(path)
    return unquote(match.group(1)) if match is not None else None


@dataclass
class RecordingTransport:
    """The submit pass's transport: records each request's body as a batch line and answers
    nothing (the call is deferred: `BatchSession.call`)."""

    lines: dict[str, bytes] = field(default_factory=dict)
    """`custom_id` → request body, in the order first sent."""
    deployment: str | None = None
    """The Azure deployment the calls were addressed to (`deployment_of` their path: AzureChatOpenAI's
    client puts `azure_deployment`, else the body's `model`, in the URL, and its body's `model` may
    be null or a model name), None for OpenAI's route. Azure's batch line must name it as `model`;
    a call to another deployment than the first stops the submit pass (a batch targets one)."""

    async def handle_async_request(self, request: Any) -> Any:
        slot = _SLOT.get() or _Slot(0)
        body = await request.aread()
        slot.outcome = _unsupported(request, body) or self._other_deployment(
            request.url.raw_path.partition(b"?")[0].decode("ascii")
        )
        if slot.outcome is None:
            self.lines.setdefault(custom_id(body, slot.sample), body)
            slot.outcome = JudgeCallError("sent to the provider's batch")
        return _reply(request, 400, {"error": {"message": "deferred to the batch", "type": "batch"}})

    def _other_deployment(self, path: str) -> Exception | None:
        """Note the deployment of the first call; an error that stops the evaluation for a later
        call addressed elsewhere (another deployment, or none after one)."""
        from fair_forge_core.judges.errors import RemoteProviderError

        deployment = deployment_of(path)
        if not self.lines:
            self.deployment = deployment
        elif deployment != self.deployment:
            message = TWO_DEPLOYMENTS.format(first=self.deployment, other=deployment)
            return RemoteProviderError("fatal", None, None, message)
        return None

    async def aclose(self) -> None:
        return None


@dataclass
class AnsweringTransport:
    """The collect pass's transport: answers each request with the batch line of its `custom_id`
    (its status and body as the provider gave them), once: the same request again (a retry of a
    reply that did not parse) is unscored, since the batch holds one answer a call. A request
    without a line is unscored: `batch_expired` when it was sent (the batch failed: a judge error),
    else the cap's or the deadline's message when they held it back at submit."""

    answers: Mapping[str, tuple[int, Any]]
    part: ModelBatch
    ended_as: str
    served: set[str] = field(default_factory=set)

    async def handle_async_request(self, request: Any) -> Any:
        slot = _SLOT.get() or _Slot(0)
        key = custom_id(await request.aread(), slot.sample)
        answer = self.answers.get(key)
        if answer is not None and key not in self.served:
            self.served.add(key)
            slot.status = answer[0]
            return _reply(request, answer[0], answer[1])
        slot.outcome = self._unanswered(key)
        return _reply(request, 400, {"error": {"message": "not in the batch", "type": "batch"}})

    def _unanswered(self, key: str) -> JudgeCallError:
        """Why the call of `key` has no answer to read (the class docstring)."""
        if key in self.served:
            return JudgeCallError(REPLY_READ_ONCE)
        if key in self.part.submitted:
            if self.ended_as == "failed":
                return JudgeCallError(BATCH_FAILED_MESSAGE)
            return JudgeBatchExpired(BATCH_EXPIRED_MESSAGE.format(status=self.ended_as))
        if self.part.cap_message is not None:
            return JudgeCostCapReached(self.part.cap_message)
        if self.part.deadline_message is not None:
            return JudgeDeadlineReached(self.part.deadline_message)
        return JudgeCallError("this judge call was not part of the batch submitted")

    def unread(self) -> Iterable[Any]:
        """The bodies of the answered lines no call read (their verdicts came from the judge
        cache): billed all the same."""
        return (body for key, (status, body) in self.answers.items() if key not in self.served and status == 200)

    async def aclose(self) -> None:
        return None


def root_client(model: Any) -> Any:
    """The SDK client (`AsyncOpenAI`, `AsyncAzureOpenAI`, `AsyncGroq`) of a `BATCH_CONNECTORS`
    chat model: ChatOpenAI's `root_async_client`; ChatGroq keeps only the client's
    `chat.completions` resource (`async_client`), whose `_client` is it."""
    root = getattr(model, "root_async_client", None)
    return root if root is not None else model.async_client._client


def with_root_client(model: Any, client: Any) -> Any:
    """A copy of `model` calling through the SDK client `client` (`root_client`'s kind)."""
    update = {"async_client": client.chat.completions}
    if "root_async_client" in type(model).model_fields:
        update["root_async_client"] = client
    return model.model_copy(update=update)


def wired_model(model: Any, transport: RecordingTransport | AnsweringTransport) -> Any:
    """A copy of `model` (a `BATCH_CONNECTORS` chat model) whose SDK client sends through
    `transport`, on an HTTP client of the SDK's own httpx flavour, without the SDK's own retries
    (a batch answer does not change on retry)."""
    from fair_forge_core.judges.reply_limit import httpx_flavour

    root = root_client(model)
    flavour = importlib.import_module(httpx_flavour(type(root._client)))
    client = root.with_options(http_client=flavour.AsyncClient(transport=transport), max_retries=0)
    return with_root_client(model, client)


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
                deferred = isinstance(self.transport, RecordingTransport) and isinstance(slot.outcome, JudgeCallError)
                if capture is not None and deferred:
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
        """The collect pass's: each model answered by its own `AnsweringTransport`, in order."""
        return cls({id(m): BatchSession(wired_model(m, t), t) for m, t in zip(models, transports, strict=True)})

    def session_for(self, model: Any) -> BatchSession | None:
        return self.sessions.get(id(model))

    def count_unread(self, models: Sequence[Any], ledgers: Sequence[JudgeLedger | None]) -> None:
        """Record in each model's ledger the answered lines no call read (`AnsweringTransport.unread`:
        billed though their verdicts came from the cache), each as one call with its usage, so that
        `judge_usage` counts what the batch billed. Called by `evaluate_conversations` once judging
        has ended."""
        from fair_forge_core.judges.tokens import TokenUsage

        for model, ledger in zip(models, ledgers, strict=True):
            session = self.session_for(model)
            if ledger is None or session is None or not isinstance(session.transport, AnsweringTransport):
                continue
            for body in session.transport.unread():
                usage = body.get("usage") if isinstance(body, dict) else None
                if not isinstance(usage, dict):
                    ledger.record(None)
                    continue
                details = usage.get("prompt_tokens_details") or {}
                ledger.record(
                    TokenUsage(
                        input_tokens=int(usage.get("prompt_tokens") or 0),
                        output_tokens=int(usage.get("completion_tokens") or 0),
                        cached_input_tokens=int(details.get("cached_tokens") or 0),
                    )
                )

    def recorded(self, model: Any) -> RecordingTransport:
        """What the submit pass recorded for `model`: its lines and the deployment they go to."""
        session = self.sessions[id(model)]
        assert isinstance(session.transport, RecordingTransport)
        return session.transport
