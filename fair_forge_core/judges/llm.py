"""The answer judge: any LangChain chat model, called with retries, a concurrency cap and a deadline.

One `AnswerJudge.judge(request)` call returns a `Verdict` or raises:

- `JudgeCallError` — this turn could not be scored (provider still failing after
  the retry budget, output unparseable after `max_parse_attempts`, a 4xx the
  provider gives for this request only, or the deadline passed). The turn is then
  reported unscored with the error's message; it is never scored 0.0.
- `JudgeAbstained` (a `JudgeCallError`) — the model itself declined to score the
  turn (the offline judge's abstention): unscored with the model's message, not retried.
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
text is passed through `redact`, so no key reaches a response or a log line
(`fair_forge_core.judges.errors.describe_error`). The same holds for what the judge says: a
verdict's reasoning (a goal's unmet criteria with it) is redacted before it is cached or
returned — the evaluation's secrets (`RunContext.secrets`), every `SecretStr` the model holds
(its API key, however it was built) and any key-shaped token — so a provider that quotes the
key back puts it in no result, report, event or response.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage
from pydantic import SecretStr

from fair_forge_core.judges.base import (  # the error types and run settings live with the Judge protocol
    DEADLINE_PHRASE,
    JudgeAbstained,
    JudgeCallError,
    JudgeCostCapReached,
    JudgeDeadlineReached,
    JudgeProviderRefused,
    JudgeSpec,
    JudgeTelemetry,
    RetryPolicy,
    RunContext,
    register_judge,
)
from fair_forge_core.judges.batch import BatchSession
from fair_forge_core.judges.errors import ErrorKind, classify_error, describe_error, retry_after_s, status_code_of
from fair_forge_core.judges.limiter import AdaptiveLimiter
from fair_forge_core.judges.processes import JudgeWorkers, Structured, workers_for
from fair_forge_core.judges.question import EVERY_KIND, JudgeQuestion, asked_messages, parsed_reply
from fair_forge_core.judges.usage import JudgeLedger, UsageCapture
from fair_forge_core.judges.verdict import CallerText, Verdict, VerdictParseError
from fair_forge_core.redact import redact
from fair_forge_core.schemas import EvaluationConfig

__all__ = [
    "AnswerJudge",
    "JudgeAbstained",
    "JudgeCallError",
    "JudgeProviderRefused",
    "JudgeTelemetry",
    "RetryPolicy",
    "llm_judge",
]


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
    ledger: JudgeLedger | None = None
    """Tokens, cost, the cost cap and the judge cache of this evaluation (`judges.usage`)."""
    secrets: frozenset[str] = frozenset()
    """Values masked in every verdict's reasoning, with the model's own `SecretStr`s (module docstring)."""

    workers: JudgeWorkers | None = None
    """Worker processes to spread the provider calls over (`judges.processes`); None: this loop only."""
    batch: BatchSession | None = None
    """A pass of batch judging (`judges.batch`): every call goes through it, on this loop."""

    def __post_init__(self) -> None:
        self.secrets = self.secrets | model_secrets(self.model)
        self.limiter = AdaptiveLimiter(self.config.max_concurrency)
        self._local_in_flight = 0
        self._rate_limit_streak = 0  # 429s since the last answer, for the pause when no Retry-After comes
        self._runnables: dict[str, Any] = {}

    def _runnable(self, request: JudgeQuestion) -> Any:
        """The model as asked for `request`'s verdict (`judges.question`): itself in marker mode,
        else bound to that verdict's schema (structured output), built once per kind of question."""
        if not self.config.use_structured_output:
            return self.model
        if request.kind not in self._runnables:
            self._runnables[request.kind] = asked_runnable(
                self.model, request.verdict_schema(), self.config.structured_output_method
            )
        return self._runnables[request.kind]

    def _structured(self, request: JudgeQuestion) -> Structured | None:
        """How a worker binds its model for `request` (None: marker mode, the model itself)."""
        if not self.config.use_structured_output:
            return None
        return Structured(request.kind, request.verdict_schema(), self.config.structured_output_method)

    async def _provider_call(
        self,
        request: JudgeQuestion,
        messages: list[BaseMessage],
        timeout: float,
        capture: UsageCapture | None,
        sample: int,
    ) -> Any:
        """The raw reply of one provider call, on this loop, on a worker process (`judges.processes`)
        or through a pass of batch judging (`judges.batch`, which keys the call by its `sample`)."""
        if self.batch is not None:
            config = {"callbacks": [capture]} if capture is not None else None
            return await self.batch.call(self._runnable(request), messages, timeout, config, sample, capture)
        worker = self.workers.pick(self._local_in_flight) if self.workers is not None else None
        if worker is not None and self.workers is not None:
            reply = await worker.call(self.workers.recipe, self._structured(request), messages, timeout)
            if not reply.unbuildable:
                if capture is not None and reply.replied:
                    capture.replied_with(reply.usage)
                if reply.error is not None:
                    raise reply.error
                return reply.raw
            self.workers = None  # its class does not build in a worker: this judge calls from here
        config = {"callbacks": [capture]} if capture is not None else None
        self._local_in_flight += 1
        try:
            return await asyncio.wait_for(self._runnable(request).ainvoke(messages, config=config), timeout)
        finally:
            self._local_in_flight -= 1

    def spec(self) -> JudgeSpec:
        """An LLM judge: online, named by its model (`judges.usage.judge_model_name`), and it reads
        every kind of question (it asks the model the question's own prompt)."""
        from fair_forge_core.judges.usage import judge_model_name

        return JudgeSpec(kind="llm", model=judge_model_name(self.model), offline=False, reads=frozenset({EVERY_KIND}))

    async def judge(self, request: JudgeQuestion, sample: int = 0) -> Verdict:
        """The verdict on one question (a turn's answer, a goal, a criterion: `judges.question`),
        after retries. See the module docstring for the errors.

        `sample` numbers repeated judgements of one request (`config.judge_samples`,
        `judges.panel`): each has a judge cache entry of its own, so that a cached run
        repeats every sample rather than one sample N times; sample 0 is a single judgement's.
        """
        messages = asked_messages(request, self.config)
        # Everything the caller wrote, as the parse compares it: a verdict found in it is forged.
        caller = request.caller_text()
        cache_key = None
        if self.ledger is not None and self.ledger.cache is not None:
            cache_key = self.ledger.cache_key(messages, sample)
            cached = await self.ledger.lookup(cache_key)
            if cached is not None:
                return cached
        attempts = parse_failures = rate_limited = 0
        while True:
            try:
                verdict = self._masked(await self._attempt(request, messages, caller, sample))
                if cache_key is not None and self.ledger is not None:
                    await self.ledger.store(cache_key, verdict)  # scored verdicts only: errors raise above
                return verdict
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
                        JudgeCallError,
                        f"unparseable judge output after {parse_failures} attempts: {describe_error(error)}",
                    )
                continue
            if kind == "turn":
                raise self._turn_error(JudgeCallError, f"judge call failed: {describe_error(error)}")
            if status_code_of(error) == 429:
                # The limiter already holds every call until the provider's Retry-After.
                self.telemetry.rate_limited += 1
                rate_limited += 1
                if rate_limited >= self.retry.max_rate_limited_attempts:
                    raise self._turn_error(
                        JudgeCallError,
                        f"judge provider still rate limiting after {rate_limited} attempts: {describe_error(error)}",
                    )
                self.telemetry.retries += 1
                continue
            attempts += 1
            if attempts >= self.retry.max_attempts:
                raise self._turn_error(
                    JudgeCallError, f"judge provider still failing after {attempts} attempts: {describe_error(error)}"
                )
            delay = self._backoff_s(attempts, retry_after_s(error))
            if self.deadline is not None and time.monotonic() + delay >= self.deadline:
                # Waiting would end past the deadline, where no call may start anyway.
                raise self._turn_error(
                    JudgeDeadlineReached,
                    f"{DEADLINE_PHRASE} while retrying the judge provider: {describe_error(error)}",
                )
            self.telemetry.retries += 1
            await asyncio.sleep(delay)

    async def _attempt(
        self, request: JudgeQuestion, messages: list[BaseMessage], caller: CallerText, sample: int
    ) -> Verdict:
        """One provider call in a slot of the limiter, which learns how it went; errors propagate."""
        ticket = await self._acquire()
        outcome: Literal["ok", "rate_limited", "error"] = "error"
        pause_s = 0.0
        capture: UsageCapture | None = None
        reserved: float | None = 0.0
        try:
            timeout = self._time_left()
            if self.ledger is not None:
                # The call's worst case comes out of the cap's budget before it starts (judges.usage).
                reserved = await self.ledger.reserve(messages)
                if reserved is None:
                    raise self._turn_error(JudgeCostCapReached, self.ledger.cap_message())
                capture = UsageCapture(self.ledger)
            self.telemetry.calls += 1
            raw = await self._provider_call(request, messages, timeout, capture, sample)
            outcome = "ok"  # the provider answered; whether the reply parses is another matter
            self._rate_limit_streak = 0
            return parsed_reply(request, raw, self.config, caller)
        except Exception as exc:
            if status_code_of(exc) == 429:
                outcome = "rate_limited"
                pause_s = self._rate_limit_pause_s(exc)
            raise
        finally:
            if capture is not None and self.ledger is not None and reserved is not None:
                await self.ledger.settle(reserved, capture)
            self.limiter.release(ticket, outcome, pause_s)

    async def _acquire(self) -> int:
        """A slot of the limiter, or a `JudgeCallError` if the deadline passes first."""
        if self.deadline is None:
            return await self.limiter.acquire()
        try:
            async with asyncio.timeout(max(0.0, self.deadline - time.monotonic())):
                return await self.limiter.acquire()
        except TimeoutError:
            raise self._turn_error(
                JudgeDeadlineReached, f"{DEADLINE_PHRASE} before this turn could be judged"
            ) from None

    def _time_left(self) -> float:
        """Timeout of the next call: the per-call limit, cut to the deadline; raises if none is left."""
        if self.deadline is None:
            return self.retry.call_timeout_s
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._turn_error(JudgeDeadlineReached, f"{DEADLINE_PHRASE} before this turn could be judged")
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

    def _masked(self, verdict: Verdict) -> Verdict:
        """`verdict` with its reasoning redacted (module docstring)."""
        reasoning = redact(verdict.reasoning, self.secrets)
        return verdict if reasoning == verdict.reasoning else verdict.model_copy(update={"reasoning": reasoning})

    def _turn_error(self, kind: type[JudgeCallError], message: str) -> JudgeCallError:
        self.telemetry.errors += 1
        return kind(message)


@register_judge("llm")
def llm_judge(model: BaseChatModel, config: EvaluationConfig, context: RunContext) -> AnswerJudge:
    """The judge of every chat model no other registration names: the model asked with the rubric's
    prompt, with retries, the rate limiter and the deadline; in a pass of batch judging
    (`context.batch`), its wired copy of the model, on this loop."""
    session = context.batch.session_for(model) if context.batch is not None else None
    return AnswerJudge(
        model=session.model if session is not None else model,
        config=config,
        retry=context.retry,
        deadline=context.deadline,
        telemetry=context.telemetry,
        ledger=context.ledger,
        secrets=context.secrets,
        workers=workers_for(model) if session is None else None,
        batch=session,
    )


def asked_runnable(model: BaseChatModel, schema: dict[str, Any], method: str | None) -> Any:
    """`model` bound to a verdict's JSON `schema` for structured output, with `method`
    (`config.structured_output_method`) when one is set, else LangChain's default."""
    kwargs: dict[str, Any] = {"method": method} if method else {}
    return model.with_structured_output(schema, **kwargs)


def model_secrets(model: BaseChatModel) -> frozenset[str]:
    """The `SecretStr` values among `model`'s fields (LangChain keeps API keys in them)."""
    return frozenset(value.get_secret_value() for value in vars(model).values() if isinstance(value, SecretStr))
