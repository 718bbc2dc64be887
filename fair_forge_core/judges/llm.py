"""The answer judge: any LangChain chat model, called with retries, a concurrency cap and a deadline.

One `AnswerJudge.judge(request)` call returns a `Verdict` or raises:

- `JudgeCallError` — this turn could not be scored (provider still failing after
  the retry budget, output unparseable after `max_parse_attempts`, a 4xx the
  provider gives for this request only, or the deadline passed). The turn is then
  reported unscored with the error's message; it is never scored 0.0.
- `JudgeProviderRefused` — the provider refuses every call (401, 403, 404: a bad
  key, no access, no such model). The evaluation stops at once.

Transient failures (408, 409, 5xx, timeouts, connection errors) are retried with
exponential backoff and full jitter, or after the provider's Retry-After when it
sends one. Rate limiting (429) is handled for all calls at once by an
`AdaptiveLimiter`: every call waits until the Retry-After instant, the number of
calls in flight adapts to what the provider accepts, and 429s draw on a budget of
their own (`RetryPolicy.max_rate_limited_attempts`, and the deadline), so a turn
is not left unscored merely because the provider asked us to slow down. Parse
failures are retried at once (a new sample may parse).
Error messages are built from the status and the exception type, and any provider
text is passed through `redact`, so no key reaches a response or a log line.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage

from fair_forge_core.judges.prompt import JudgeRequest, build_judge_messages
from fair_forge_core.judges.reply_limit import reply_too_large
from fair_forge_core.redact import redact
from fair_forge_core.schemas import EvaluationConfig

VERDICT_SCHEMA: dict[str, Any] = {
    "title": "judge_verdict",
    "description": "The grade of one agent answer against its ground truth.",
    "type": "object",
    "properties": {
        "score": {"type": "number", "description": "Correctness from 0.0 to 1.0."},
        "reasoning": {"type": "string", "description": "One or two sentences explaining the score."},
    },
    "required": ["score", "reasoning"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Verdict:
    score: float
    reasoning: str


@dataclass(frozen=True)
class RetryPolicy:
    """How hard the judge tries before a turn is left unscored.

    `max_attempts` bounds provider attempts per turn (transient errors); parse
    failures and rate limiting (429) have bounds of their own, the latter larger
    because a 429 says "later", not "broken" (the deadline bounds it too).
    `call_timeout_s` bounds one provider call; `max_delay_s` bounds one backoff and
    the pause a Retry-After can impose.
    """

    max_attempts: int = 8
    max_parse_attempts: int = 3
    max_rate_limited_attempts: int = 50
    base_delay_s: float = 0.2
    max_delay_s: float = 8.0
    call_timeout_s: float = 30.0


@dataclass
class JudgeTelemetry:
    """Counters one evaluation's judge fills in; the handler turns them into metrics."""

    calls: int = 0
    retries: int = 0
    parse_failures: int = 0
    errors: int = 0
    rate_limited: int = 0
    judging_s: float = 0.0
    """Wall time of the judge phase (every call, retry and wait); the rest of an evaluation is deterministic."""
    judging_ended_at: float | None = None
    """`time.perf_counter()` when the judge phase ended: what follows is the work the deadline does not stop."""


class JudgeCallError(Exception):
    """A turn the judge could not score; the message says why and is safe to return."""


class JudgeProviderRefused(Exception):
    """The provider refuses the judge's calls altogether; the message is safe to return."""


class VerdictParseError(ValueError):
    """The judge's reply holds no usable verdict."""


ErrorKind = Literal["fatal", "transient", "turn", "parse"]

_FATAL_STATUSES = {401, 403, 404}
_TRANSIENT_STATUSES = {408, 409, 425, 429}


def status_code_of(exc: BaseException) -> int | None:
    """The HTTP status of a provider SDK exception (openai, groq, httpx), if it has one."""
    status = getattr(exc, "status_code", None)
    if status is None:
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


# Providers that validate structured output server-side (Groq) refuse a malformed
# sample with a 400 carrying one of these codes: a bad reply, worth another sample.
_BAD_SAMPLE_CODES = ("tool_use_failed", "json_validate_failed")


def classify_error(exc: BaseException) -> ErrorKind:
    """Whether `exc` stops the evaluation, is worth retrying, fails one turn, or is a bad reply.

    - fatal: 401, 403, 404 (bad key, no access, no such model);
    - transient: 408, 409, 425, 429, 5xx, timeouts and connection errors;
    - parse: LangChain's output-parser and pydantic validation errors, invalid JSON,
      and a provider's 400 for a sample that failed its own schema check;
    - turn: a reply over the size limit (even when the SDK reports it as a connection
      error: the same request would get the same reply), and anything else (another
      4xx or 3xx, an unexpected exception): this turn only.
    """
    from langchain_core.exceptions import OutputParserException
    from pydantic import ValidationError

    if reply_too_large(exc) is not None:
        return "turn"
    status = status_code_of(exc)
    if status in _FATAL_STATUSES:
        return "fatal"
    if status is not None and (status in _TRANSIENT_STATUSES or status >= 500):
        return "transient"
    if status == 400 and any(code in str(exc) for code in _BAD_SAMPLE_CODES):
        return "parse"
    if status is not None:
        return "turn"
    if _is_transport_error(exc):
        return "transient"
    if isinstance(exc, OutputParserException | ValidationError | json.JSONDecodeError):
        return "parse"
    return "turn"


def _is_transport_error(exc: BaseException) -> bool:
    """A timeout or a failed connection: nothing came back from the provider."""
    name = type(exc).__name__  # SDK classes: APITimeoutError, APIConnectionError, httpx.ConnectError
    return isinstance(exc, OSError) or "Timeout" in name or "Connect" in name


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait (`retry-after-ms` or `retry-after` header), if any."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


_ERROR_CODE = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def describe_error(exc: BaseException) -> str:
    """A short, secret-free description of a provider error.

    For an HTTP error: the status, the exception type and the provider's error code
    (``model_not_found``) when it is a plain token — never the reply's text, which a
    caller-chosen endpoint controls (and providers echo partly masked keys in it).
    A reply over the size limit is named as such. Otherwise the type, with a message
    only where the message cannot quote the reply: the client's own for a timeout or a
    refused connection, ours for an unusable verdict, the position of invalid JSON,
    and the fields of a pydantic validation error (without their input). Other
    exceptions (an SDK's "unexpected response: '<the body>'", an output parser's
    "failed to parse <the text>") give their type and say the message is withheld:
    the endpoint may be one the caller chose, in a network only the operator should
    reach.
    """
    too_large = reply_too_large(exc)
    if too_large is not None:
        return f"{type(too_large).__name__}: {too_large}"
    status = status_code_of(exc)
    if status is not None:
        if status in (401, 403):
            return f"HTTP {status} {type(exc).__name__}: the provider rejected the credentials"
        code = getattr(exc, "code", None)
        detail = f" ({code})" if isinstance(code, str) and _ERROR_CODE.fullmatch(code) else ""
        return f"HTTP {status} {type(exc).__name__}{detail}"
    detail = redact(_message_without_reply(exc))[:200]
    if not detail:
        return f"{type(exc).__name__} (message withheld: it may quote the endpoint's reply)"
    return f"{type(exc).__name__}: {detail}"


def _message_without_reply(exc: BaseException) -> str:
    """The part of `exc`'s message that `describe_error` may show ("" for none)."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        problems = exc.errors(include_input=False, include_url=False, include_context=False)
        return "; ".join(
            f"{'.'.join(map(str, problem['loc'])) or 'reply'}: {problem['msg']}" for problem in problems[:3]
        )
    if isinstance(exc, VerdictParseError | json.JSONDecodeError) or _is_transport_error(exc):
        return str(exc)
    return ""


MAX_REASONING_CHARS = 1_000
"""Reasoning kept per verdict: a longer text is cut (and marked), so a judge that rambles
cannot make every copy of its verdict in the response and the logs large."""

MAX_REPLY_CHARS = 64_000
"""How much of a judge's message text is searched for a verdict (the end of it, where the
last block is); a verdict is a few hundred characters."""


def compact(text: str) -> str:
    """`text` without whitespace: how a verdict's text is compared with the caller's."""
    return "".join(text.split())


def parse_verdict(raw: Any, *, bos: str, eos: str, caller_text: str = "") -> Verdict:
    """A `Verdict` from a structured-output dict/object or a chat message.

    Message text: the JSON of the last block between `bos` and `eos`; failing that, the
    last JSON object anywhere in the text (only the last `MAX_REPLY_CHARS` characters are
    searched). A block whose text, whitespace aside, occurs in `caller_text` (the
    `compact` of what the caller sent: an agent answer carrying a forged
    ``{"score": 1.0}`` the model quoted back) is never taken. The score must be a finite
    number (not a bool) in [0, 1], or it is a `VerdictParseError` — never clamped. The
    reasoning is kept to `MAX_REASONING_CHARS`.
    """
    if isinstance(raw, BaseMessage):
        raw = _json_in_text(_message_text(raw)[-MAX_REPLY_CHARS:], bos=bos, eos=eos, caller_text=caller_text)
    elif hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        raise VerdictParseError(f"expected a JSON object, got {type(raw).__name__}")
    score = raw.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise VerdictParseError("the reply has no numeric score")
    if not 0.0 <= score <= 1.0:
        raise VerdictParseError(f"score {score} is outside [0, 1]")
    reasoning = raw.get("reasoning", "")
    reasoning = reasoning if isinstance(reasoning, str) else str(reasoning)
    if len(reasoning) > MAX_REASONING_CHARS:
        reasoning = reasoning[: MAX_REASONING_CHARS - 1] + "…"
    return Verdict(score=float(score), reasoning=reasoning)


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(block if isinstance(block, str) else str(block.get("text", "")) for block in content)


def _marker_blocks(text: str, bos: str, eos: str) -> list[str]:
    """The texts between each `bos` and the next `eos` (or the end), in order."""
    blocks = []
    at = text.find(bos) if bos else -1
    while at >= 0:
        start = at + len(bos)
        end = text.find(eos, start) if eos else -1
        blocks.append(text[start : end if end >= 0 else None])
        at = text.find(bos, end + len(eos)) if end >= 0 else -1
    return blocks


def _json_objects(text: str) -> list[str]:
    """The texts of the top-level JSON objects in `text`, in order."""
    decoder = json.JSONDecoder()
    found, at = [], text.find("{")
    while at >= 0:
        try:
            _, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        found.append(text[at:end])
        at = text.find("{", end)
    return found


def _json_in_text(text: str, *, bos: str, eos: str, caller_text: str) -> Any:
    """The verdict object of a reply: the last marker block that parses, else the last JSON
    object, skipping any whose text occurs in `caller_text` (see `parse_verdict`)."""
    for candidates in (_marker_blocks(text, bos, eos), _json_objects(text)):
        for candidate in reversed(candidates):
            try:
                value = json.loads(candidate)
            except ValueError:
                continue
            if isinstance(value, dict) and not (caller_text and compact(candidate) in caller_text):
                return value
    raise VerdictParseError("no JSON object in the reply (a verdict quoted from the caller's text is not one)")


class AdaptiveLimiter:
    """How many judge calls may be in flight: one limiter shared by all calls of an evaluation.

    - Slots: at most `limit` calls hold one; the others wait, first come first served.
    - AIMD: a 429 halves `limit` (down to 1), a success adds one (up to `ceiling`).
      Only outcomes of calls started since the last halving count: calls already in
      flight when the provider pushed back say nothing about the new limit, so one
      burst of 429s halves once, not once per call.
    - Pause: a 429 also holds every slot back until `now + pause_s` (the provider's
      Retry-After), the shared "not before" instant. Calls in flight finish; no new
      one starts before it.

    `acquire()` returns a ticket to hand back to `release()`. Not thread-safe: one
    event loop, like the evaluation that owns it.
    """

    def __init__(self, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError(f"ceiling must be at least 1, got {ceiling}")
        self.ceiling = ceiling
        self.limit = ceiling
        self.in_flight = 0
        self.not_before = 0.0  # a time.monotonic() instant, the event loop's clock
        self._epoch = 0  # bumped by each halving
        self._waiters: deque[asyncio.Future[int]] = deque()
        self._wakeup: asyncio.TimerHandle | None = None

    async def acquire(self) -> int:
        """Wait for a slot; returns the ticket for `release`. Cancelling a wait gives nothing up."""
        if not self._waiters and self._can_start():
            self.in_flight += 1
            return self._epoch
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._dispatch()
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled: hand the slot on
                self.in_flight -= 1
                self._dispatch()
            raise

    def release(self, ticket: int, outcome: Literal["ok", "rate_limited", "error"], pause_s: float = 0.0) -> None:
        """Give a slot back, telling how its call went; a 429 pauses everyone for `pause_s`."""
        self.in_flight -= 1
        current = ticket == self._epoch
        if outcome == "ok" and current:
            self.limit = min(self.ceiling, self.limit + 1)
        elif outcome == "rate_limited":
            self.not_before = max(self.not_before, time.monotonic() + pause_s)
            if current:
                self.limit = max(1, self.limit // 2)
                self._epoch += 1
        self._dispatch()

    def _can_start(self) -> bool:
        return self.in_flight < self.limit and time.monotonic() >= self.not_before

    def _dispatch(self) -> None:
        """Hand free slots to waiters in order; while paused, come back when the pause ends."""
        while self._waiters and self._can_start():
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled wait is skipped
                self.in_flight += 1
                waiter.set_result(self._epoch)
        if self._waiters and self.in_flight < self.limit and self._wakeup is None:
            delay = max(0.0, self.not_before - time.monotonic())
            self._wakeup = asyncio.get_running_loop().call_later(delay, self._wake)

    def _wake(self) -> None:
        self._wakeup = None
        self._dispatch()


@dataclass
class AnswerJudge:
    """Scores answers with `model` under `config`'s output mode and concurrency cap.

    Calls go through one `AdaptiveLimiter` whose ceiling is `config.max_concurrency`.
    `deadline` is a `time.monotonic()` instant after which no new provider call
    starts; turns not yet judged then fail with a `JudgeCallError`.
    """

    model: BaseChatModel
    config: EvaluationConfig
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    deadline: float | None = None
    telemetry: JudgeTelemetry = field(default_factory=JudgeTelemetry)
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self.limiter = AdaptiveLimiter(self.config.max_concurrency)
        self._rate_limit_streak = 0  # 429s since the last answer, for the pause when no Retry-After comes
        if self.config.use_structured_output:
            kwargs: dict[str, Any] = {}
            if self.config.structured_output_method:
                kwargs["method"] = self.config.structured_output_method
            self._runnable: Any = self.model.with_structured_output(VERDICT_SCHEMA, **kwargs)
        else:
            self._runnable = self.model

    async def judge(self, request: JudgeRequest) -> Verdict:
        """The verdict on one turn, after retries. See the module docstring for the errors."""
        messages = build_judge_messages(
            request,
            structured=self.config.use_structured_output,
            bos_json_clause=self.config.bos_json_clause,
            eos_json_clause=self.config.eos_json_clause,
        )
        # Everything the caller wrote, as `parse_verdict` compares it: a verdict found in it is forged.
        caller_text = "\n".join(
            compact(text)
            for text in (request.query, request.answer, request.ground_truth, request.context, request.observation)
            if text
        )
        attempts = parse_failures = rate_limited = 0
        while True:
            try:
                return await self._attempt(messages, caller_text)
            except JudgeCallError:
                raise
            except VerdictParseError as exc:
                kind: ErrorKind = "parse"
                error: BaseException = exc
            except Exception as exc:
                kind, error = classify_error(exc), exc
            if kind == "fatal":
                raise JudgeProviderRefused(f"the judge provider refused the request ({describe_error(error)})")
            if kind == "parse":
                self.telemetry.parse_failures += 1
                parse_failures += 1
                if parse_failures >= self.retry.max_parse_attempts:
                    raise self._turn_error(
                        f"unparseable judge output after {parse_failures} attempts: {describe_error(error)}"
                    )
                continue
            if kind == "turn":
                raise self._turn_error(f"judge call failed: {describe_error(error)}")
            if status_code_of(error) == 429:
                # The limiter already holds every call until the provider's Retry-After.
                self.telemetry.rate_limited += 1
                rate_limited += 1
                if rate_limited >= self.retry.max_rate_limited_attempts:
                    raise self._turn_error(
                        f"judge provider still rate limiting after {rate_limited} attempts: {describe_error(error)}"
                    )
                self.telemetry.retries += 1
                continue
            attempts += 1
            if attempts >= self.retry.max_attempts:
                raise self._turn_error(
                    f"judge provider still failing after {attempts} attempts: {describe_error(error)}"
                )
            delay = self._backoff_s(attempts, retry_after_s(error))
            if self.deadline is not None and time.monotonic() + delay >= self.deadline:
                # Waiting would end past the deadline, where no call may start anyway.
                raise self._turn_error(
                    f"time budget exhausted while retrying the judge provider: {describe_error(error)}"
                )
            self.telemetry.retries += 1
            await asyncio.sleep(delay)

    async def _attempt(self, messages: list[BaseMessage], caller_text: str) -> Verdict:
        """One provider call in a slot of the limiter, which learns how it went; errors propagate."""
        ticket = await self._acquire()
        outcome: Literal["ok", "rate_limited", "error"] = "error"
        pause_s = 0.0
        try:
            timeout = self._time_left()
            self.telemetry.calls += 1
            raw = await asyncio.wait_for(self._runnable.ainvoke(messages), timeout)
            outcome = "ok"  # the provider answered; whether the reply parses is another matter
            self._rate_limit_streak = 0
            return parse_verdict(
                raw, bos=self.config.bos_json_clause, eos=self.config.eos_json_clause, caller_text=caller_text
            )
        except Exception as exc:
            if status_code_of(exc) == 429:
                outcome = "rate_limited"
                pause_s = self._rate_limit_pause_s(exc)
            raise
        finally:
            self.limiter.release(ticket, outcome, pause_s)

    async def _acquire(self) -> int:
        """A slot of the limiter, or a `JudgeCallError` if the deadline passes first."""
        if self.deadline is None:
            return await self.limiter.acquire()
        try:
            async with asyncio.timeout(max(0.0, self.deadline - time.monotonic())):
                return await self.limiter.acquire()
        except TimeoutError:
            raise self._turn_error("time budget exhausted before this turn could be judged") from None

    def _time_left(self) -> float:
        """Timeout of the next call: the per-call limit, cut to the deadline; raises if none is left."""
        if self.deadline is None:
            return self.retry.call_timeout_s
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._turn_error("time budget exhausted before this turn could be judged")
        return min(self.retry.call_timeout_s, left)

    def _rate_limit_pause_s(self, exc: BaseException) -> float:
        """How long a 429 holds every call back: the Retry-After (capped), else a backoff that
        grows with the 429s since the provider last answered."""
        self._rate_limit_streak += 1
        retry_after = retry_after_s(exc)
        if retry_after is not None:
            return min(retry_after, self.retry.max_delay_s)
        return self._backoff_s(self._rate_limit_streak, None)

    def _backoff_s(self, attempt: int, retry_after: float | None) -> float:
        """Full-jitter exponential backoff, or the provider's Retry-After plus a little jitter."""
        if retry_after is not None:
            return min(retry_after, self.retry.max_delay_s) * (1.0 + 0.25 * self.rng.random())
        ceiling = min(self.retry.max_delay_s, self.retry.base_delay_s * 2 ** (attempt - 1))
        return self.rng.uniform(0.0, ceiling)

    def _turn_error(self, message: str) -> JudgeCallError:
        self.telemetry.errors += 1
        return JudgeCallError(message)
