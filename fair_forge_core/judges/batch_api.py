"""OpenAI's Batch API as batch judging uses it (`judges.batch`): the input files and batches of
a submission (`submit_lines`), where they stand (`batch_states`), their cancellation
(`cancel_batches`), their answers (`read_answers`) and their files' deletion (`delete_files`).

Azure OpenAI serves the same Files and Batches API (the same statuses, `completion_window`
"24h", output and error lines), under `{azure_endpoint}/openai/files` and `/openai/batches` with
its `api-version` and `api-key`, which the connector's `AsyncAzureOpenAI` client adds itself. Its
input lines differ (https://learn.microsoft.com/en-us/azure/ai-services/openai/how-to/batch,
"Input format"): the `url` (and the batch's `endpoint`) is `/chat/completions`, and the body's
`model` is the name of the Global-Batch deployment, the same on every line (`line_body`).

Groq serves the same Files and Batches API under `{base_url}/openai/v1/` (its SDK's routes), with
OpenAI's lines (`url` "/v1/chat/completions"), statuses and output and error lines
(https://console.groq.com/docs/batch, https://console.groq.com/docs/api-reference#batches). What
differs, and is done here explicitly: an input file is at most `GROQ_MAX_FILE_BYTES` (100 MB), and
its batches are listed in one answer, not in pages (`earlier_batches`); the groq SDK's client
is `AsyncGroq`, on `httpx` (`judges.batch.root_client`), and a file's content is read with `read()`.

Every call goes through the connector's own OpenAI client (its key, `base_url` or Azure endpoint,
organization and retries) with a timeout of `API_TIMEOUT_S`; a refused key or model is
`JudgeProviderRefused`, any other failure a `BatchError`, each with a message safe to show
(`errors.describe_error`). What is read back is bounded: all of a submission's output and error
files together at most `BYTES_PER_LINE` a line sent (a verdict's reply is under 10 KB) plus one
judge reply's bound, within `MAX_DOWNLOAD_BYTES`; a file that passes it, or that is not the JSONL
OpenAI's reference describes, is a `BatchError`.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

from fair_forge_core.judges.batch import ModelBatch, known_status, root_client

BATCH_ENDPOINT = "/v1/chat/completions"
AZURE_BATCH_ENDPOINT = "/chat/completions"
"""An Azure batch line's `url` and its batch's `endpoint` (Azure's reference: not OpenAI's /v1 path)."""
COMPLETION_WINDOW = "24h"
MAX_LINES = 50_000
"""OpenAI's bounds on one batch's input file: 50,000 requests, 200 MB (Azure's: 100,000, 200 MB)."""
MAX_FILE_BYTES = 200 * 1024 * 1024
GROQ_MAX_FILE_BYTES = 100 * 1024 * 1024
"""Groq's bound on an input file (its SDK's `files.create`: "`.jsonl` files up to 100 MB")."""
BYTES_PER_LINE = 16_384
MAX_DOWNLOAD_BYTES = 128 * 1024 * 1024
"""The most read from one submission's files whatever its lines (a worker has 1 GB)."""
API_TIMEOUT_S = 60.0
"""One Batch API call's timeout: a poll must end well inside its state's 300 s."""
CANCELLABLE = frozenset({"validating", "in_progress"})
REUSABLE = frozenset({"validating", "in_progress", "finalizing", "completed"})
"""The statuses of an earlier attempt's batch that a retried submission takes as its own."""
MAX_LISTED = 10_000
"""Batches looked through at most (newest first, 100 a call) for an earlier attempt's
(`earlier_batches`): more created since it began, and the submission fails rather than risk
sending again what a batch it cannot see holds."""
CLOCK_SKEW_S = 300.0
"""How much earlier than a submitter's clock said the provider may stamp a batch it created: an
earlier attempt's `since` is when it began, less this."""


class BatchError(Exception):
    """The provider's batch API refused or failed a batch (its message is safe to show)."""


def _client(model: Any, http_client: Any = None) -> Any:
    """The model's own SDK client (`judges.batch.root_client`), with the batch API's timeout (and
    `http_client` when given)."""
    options: dict[str, Any] = {"timeout": API_TIMEOUT_S}
    if http_client is not None:
        options["http_client"] = http_client
    return root_client(model).with_options(**options)


def _sdk(model: Any) -> str:
    """The name of the SDK package of the model's client: "openai" or "groq"."""
    return type(root_client(model)).__module__.partition(".")[0]


_DECODER = json.JSONDecoder()


def batch_endpoint(deployment: str | None) -> str:
    """The lines' `url` and the batch's `endpoint`: Azure's for a deployment, else OpenAI's."""
    return BATCH_ENDPOINT if deployment is None else AZURE_BATCH_ENDPOINT


def _skip(text: str, at: int) -> int:
    """The index of the first character of `text` from `at` that is not JSON whitespace."""
    while text[at : at + 1] in (" ", "\t", "\n", "\r"):
        at += 1
    return at


def _members(text: str) -> Iterator[tuple[str, int, int]]:
    """Each member of the JSON object `text` at its top level, in order: its key and where its
    value starts and ends. A `ValueError` when `text` is not one JSON object."""
    at = _skip(text, 0)
    if text[at : at + 1] != "{":
        raise ValueError("a request body is not a JSON object")
    at = _skip(text, at + 1)
    while text[at : at + 1] != "}":
        key, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if not isinstance(key, str) or text[at : at + 1] != ":":
            raise ValueError("a request body is not a JSON object")
        start = _skip(text, at + 1)
        _, end = _DECODER.raw_decode(text, start)
        yield key, start, end
        at = _skip(text, end)
        if text[at : at + 1] == ",":
            at = _skip(text, at + 1)


def line_body(body: bytes, deployment: str | None) -> bytes:
    """A batch line's body: the request body the client built, byte for byte, with (for an Azure
    `deployment`) its top-level `model` value replaced by the deployment's name as a JSON string,
    or, when the body has no `model`, `"model":<name>,` put first. Azure needs it (the online call
    names the deployment in its URL, and AzureChatOpenAI's body holds `model: null` or the model's
    own name); a `model` nested deeper (in a tool's schema) is left alone."""
    if deployment is None:
        return body
    text = body.decode("utf-8")
    name = json.dumps(deployment)
    for key, start, end in _members(text):
        if key == "model":
            return (text[:start] + name + text[end:]).encode("utf-8")
    opening = text.index("{") + 1
    rest = text[opening:]
    return (text[:opening] + f'"model":{name}' + ("," if rest.strip() != "}" else "") + rest).encode("utf-8")


def batch_files(
    lines: Mapping[str, bytes], deployment: str | None = None, max_file_bytes: int = MAX_FILE_BYTES
) -> list[bytes]:
    """The JSONL files of `lines` (the batch input format: `url` and body by `batch_endpoint` and
    `line_body`), each within `MAX_LINES` and `max_file_bytes` (Groq's: `GROQ_MAX_FILE_BYTES`); the
    lines in the order of their `custom_id`, so the same lines make the same files whatever order
    the calls came in."""
    files: list[bytes] = []
    current: list[bytes] = []
    size = 0
    url = batch_endpoint(deployment).encode()
    for key, body in sorted(lines.items()):
        line = b'{"custom_id":%s,"method":"POST","url":"%s","body":%s}\n' % (
            json.dumps(key).encode(),
            url,
            line_body(body, deployment),
        )
        if current and (len(current) >= MAX_LINES or size + len(line) > max_file_bytes):
            files.append(b"".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line)
    if current:
        files.append(b"".join(current))
    return files


async def submit_lines(
    model: Any,
    lines: Mapping[str, bytes],
    metadata: Mapping[str, str],
    deployment: str | None = None,
    since: float | None = None,
) -> list[str]:
    """Upload `lines` as batch input files and create one batch each, labelled with `metadata`;
    their ids, in order. With an Azure `deployment` (the one the online calls were addressed to:
    `judges.batch.RecordingTransport.deployment`) the lines are Azure's (`batch_files`). `since`
    (epoch seconds) says an earlier attempt of the same submission (the same `metadata`) may have
    created batches from then on before it died (`earlier_batches`): each one that holds a line of
    `lines` not yet covered is taken (its id first in the answer) and its lines are not sent again;
    one that holds none is cancelled (nothing would read it). A failure part way cancels the batches
    already created or taken (best effort) before it propagates."""
    client = _client(model)
    ids: list[str] = []
    try:
        if since is not None:
            covered: set[str] = set()
            for batch in await earlier_batches(model, metadata, since):
                held = await input_lines(model, batch)
                if held & (lines.keys() - covered):
                    ids.append(batch.id)
                    covered |= held
                else:
                    await cancel_batches(model, [batch.id])
            lines = {key: body for key, body in lines.items() if key not in covered}
        max_bytes = GROQ_MAX_FILE_BYTES if _sdk(model) == "groq" else MAX_FILE_BYTES
        for number, content in enumerate(batch_files(lines, deployment, max_bytes)):
            uploaded = await _provider(client.files.create(file=(f"judge-{number}.jsonl", content), purpose="batch"))
            batch = await _provider(
                client.batches.create(
                    input_file_id=uploaded.id,
                    endpoint=batch_endpoint(deployment),
                    completion_window=COMPLETION_WINDOW,
                    metadata=dict(metadata),
                )
            )
            ids.append(batch.id)
    except Exception:
        await cancel_batches(model, ids)
        raise
    return ids


async def earlier_batches(model: Any, metadata: Mapping[str, str], since: float) -> list[Any]:
    """The batches an earlier attempt of a submission labelled `metadata` created, oldest first:
    those created at `since` or later (OpenAI lists its batches newest first, in pages; at most
    `MAX_LISTED` are looked through) whose metadata holds every pair of `metadata`, and whose
    status is `REUSABLE` (one that failed, expired or was cancelled answers nothing more). Groq
    lists them all in one answer, in an order its reference does not give: every one is looked
    at, and those since `since` (at most `MAX_LISTED`) are taken by `created_at` (seconds: those of one
    second in the listing's order)."""
    client = _client(model)
    if _sdk(model) == "groq":
        # One answer holds every batch of the organization (~1 KB each): more than a judge's reply.
        async with _bounded_client(model, MAX_DOWNLOAD_BYTES) as bounded:
            listing = await _provider(bounded.batches.list())
        recent = sorted((b for b in listing.data if (b.created_at or 0) >= since), key=lambda b: b.created_at or 0)
        if len(recent) > MAX_LISTED:
            raise BatchError(f"more than {MAX_LISTED:,} batches since this submission began: its own cannot be told")
        return [batch for batch in recent if _ours(batch, metadata)]
    found: list[Any] = []
    page = await _provider(client.batches.list(limit=100))
    listed = 0
    while True:
        for batch in page.data:
            listed += 1
            if (batch.created_at or 0) < since:
                return found
            if listed > MAX_LISTED:
                raise BatchError(
                    f"more than {MAX_LISTED:,} batches since this submission began: its own cannot be told"
                )
            if _ours(batch, metadata):
                found.insert(0, batch)
        if not page.has_next_page():
            return found
        page = await _provider(page.get_next_page())


def _ours(batch: Any, metadata: Mapping[str, str]) -> bool:
    """Whether `batch` is labelled with every pair of `metadata` and is `REUSABLE`."""
    labels = batch.metadata if isinstance(batch.metadata, dict) else {}
    return all(labels.get(key) == value for key, value in metadata.items()) and known_status(batch.status) in REUSABLE


async def input_lines(model: Any, batch: Any) -> frozenset[str]:
    """The `custom_id` of every line of `batch`'s input file (read within `MAX_DOWNLOAD_BYTES`)."""
    content = await _download(model, batch.input_file_id, MAX_DOWNLOAD_BYTES)
    held: set[str] = set()
    for line in content.splitlines():
        try:
            key = json.loads(line).get("custom_id") if line.strip() else None
        except (ValueError, AttributeError):
            raise BatchError("an earlier batch's input file is not the JSONL it was sent as") from None
        if isinstance(key, str):
            held.add(key)
    return frozenset(held)


async def batch_states(model: Any, batch_ids: Iterable[str]) -> list[Any]:
    """Where each batch stands (one retrieve each): `judges.batch.BatchState`s."""
    from fair_forge_core.judges.batch import BatchState

    client = _client(model)
    states = []
    for batch_id in batch_ids:
        batch = await _provider(client.batches.retrieve(batch_id))
        counts = batch.request_counts
        states.append(
            BatchState(
                batch_id=batch_id,
                status=known_status(batch.status),
                # Azure's examples show null counts while a batch validates.
                total=(counts.total or 0) if counts else 0,
                completed=(counts.completed or 0) if counts else 0,
                failed=(counts.failed or 0) if counts else 0,
            )
        )
    return states


async def cancel_batches(model: Any, batch_ids: Iterable[str]) -> int:
    """Ask the provider to cancel each batch still validating or in progress (what was answered
    stays; one cancelling or finalizing is left to end); a refusal is not an error, the next
    poll asks again. How many were asked."""
    client = _client(model)
    asked = 0
    for batch_id in batch_ids:
        try:
            batch = await _provider(client.batches.retrieve(batch_id))
            if known_status(batch.status) in CANCELLABLE:
                await _provider(client.batches.cancel(batch_id))
                asked += 1
        except BatchError:
            continue
    return asked


async def read_answers(model: Any, part: ModelBatch) -> tuple[dict[str, tuple[int, Any]], str]:
    """Every answered line of `part`'s batches (`custom_id` → (HTTP status, body)) among the lines
    it sent, from their output and error files, within the module docstring's bound; and how the
    batches ended ("completed", or the first other status)."""
    from fair_forge_core.judges.reply_limit import MAX_JUDGE_REPLY_BYTES

    budget = min(MAX_JUDGE_REPLY_BYTES + BYTES_PER_LINE * len(part.submitted), MAX_DOWNLOAD_BYTES)
    submitted = frozenset(part.submitted)
    answers: dict[str, tuple[int, Any]] = {}
    ended_as = "completed"
    for batch_id in part.batch_ids:
        batch = await _provider(_client(model).batches.retrieve(batch_id))
        status = known_status(batch.status)
        if status != "completed" and ended_as == "completed":
            ended_as = status
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await _download(model, file_id, budget)
            budget -= len(content)
            answers.update(answered_lines(content, submitted))
    return answers, ended_as


@contextlib.asynccontextmanager
async def _bounded_client(model: Any, limit: int) -> AsyncIterator[Any]:
    """The model's SDK client (`_client`) on an HTTP client of its own that reads at most `limit`
    bytes a reply, for the answers larger than a judge's reply (the judges' client stops at 1 MB)."""
    from fair_forge_core.judges.reply_limit import capped_async_client

    sdk = importlib.import_module(_sdk(model))
    http_client = capped_async_client(sdk.DefaultAsyncHttpxClient, limit=limit, follow_redirects=False)
    try:
        yield _client(model, http_client)
    finally:
        await http_client.aclose()


async def _download(model: Any, file_id: str, limit: int) -> bytes:
    """The content of the provider's file `file_id`, read through a client that stops at `limit` bytes."""
    async with _bounded_client(model, limit) as client:
        answer = await _provider(client.files.content(file_id))
        # openai's answer holds the bytes read; groq's is a response to read (`AsyncBinaryAPIResponse`).
        content: bytes = answer.content if _sdk(model) == "openai" else await _provider(answer.read())
    return content


def answered_lines(content: bytes, submitted: frozenset[str]) -> dict[str, tuple[int, Any]]:
    """The lines of a batch output or error file that answer a line of `submitted` with a
    response (`custom_id` → (status, body)); a line without one (a request the batch never ran)
    is left out. A line that is not a JSON object with a string `custom_id` is a `BatchError`."""
    answered: dict[str, tuple[int, Any]] = {}
    for number, raw in enumerate(io.BytesIO(content), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            raise BatchError(f"the provider's batch file is not JSONL of batch lines (line {number})")
        response = line.get("response")
        if (
            line["custom_id"] in submitted
            and isinstance(response, dict)
            and isinstance(response.get("status_code"), int)
        ):
            answered[line["custom_id"]] = (response["status_code"], response.get("body"))
    return answered


async def delete_files(model: Any, batch_ids: Iterable[str]) -> None:
    """Delete the input, output and error files of the batches from the provider (best effort:
    the provider keeps a file it refuses to delete)."""
    client = _client(model)
    for batch_id in batch_ids:
        try:
            batch = await _provider(client.batches.retrieve(batch_id))
            for file_id in (batch.input_file_id, batch.output_file_id, batch.error_file_id):
                if file_id:
                    await _provider(client.files.delete(file_id))
        except BatchError:
            continue


async def _provider(call: Any) -> Any:
    """`await call`, a batch API call (the module docstring's errors)."""
    from fair_forge_core.judges.base import JudgeProviderRefused
    from fair_forge_core.judges.errors import classify_error, describe_error

    try:
        return await call
    except Exception as exc:
        if classify_error(exc) == "fatal":
            raise JudgeProviderRefused(f"the judge provider refused the batch ({describe_error(exc)})") from None
        raise BatchError(f"the judge provider's batch API failed: {describe_error(exc)}") from None
