"""The judge as a concept of its own: what a judge is (`Judge`), what it says of itself
(`JudgeSpec`), how one is chosen for a connector's chat model (the registry), and what an
evaluation lends every judge (`RunContext`).

A **judge** gives one turn a `Verdict` (a score in [0, 1] and its reasoning) or raises:
`JudgeCallError` when this turn cannot be scored (it is then unscored with that message;
`JudgeAbstained` when the judge declines), `JudgeProviderRefused` when no turn can be (the
evaluation stops). `judge(request, sample)` is one judgement; `sample` numbers the repeated
judgements of one turn (`config.judge_samples`), which a judge that caches keeps apart.

Judges are built from the chat model a request's connector names (`connectors.build_chat_model`,
under the allowlist): `judge_for(model, …)` (from `judges.kinds`, which registers the built-in
kinds) looks the model's class up in the registry, filled by `register_judge` — the offline rules judge for `ReferenceJudge` (`judges.offline`), the LLM
judge for every other chat model (`judges.llm.AnswerJudge`), and any judge an operator admits
by listing its model class in `FAIR_FORGE_EXTRA_CONNECTORS` (a module that defines the model
class and registers its judge beside it: nothing else changes). Panels (`judges.panel`:
samples and ensembles) and the cascade (`judges.cascade`) combine judges; they ask a judge
what it is through `spec()`, never by its type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import JudgementCause, TurnJudgement
from fair_forge_core.judges.question import EVERY_KIND
from fair_forge_core.judges.verdict import Verdict
from fair_forge_core.schemas import EvaluationConfig

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

    from fair_forge_core.judges.usage import JudgeLedger


DEADLINE_PHRASE = "time budget exhausted"
"""How every message of a `JudgeDeadlineReached` begins (`judges.llm`, `judges.offline`)."""
ABSTAIN_PHRASE = "cannot decide"
"""The error of a question put to a judge that does not read its kind (`ask`): "the judge
fair-forge-reference cannot decide a conversation's goal" (the question's `about`)."""


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
    """A turn the judge could not score; the message says why and is safe to return. `cause`
    types the why (`judges.judgement.JudgementCause`): "judge_error" here, another in the
    subclasses, so that what the turn's judgement records never depends on the message's words."""

    cause: JudgementCause = "judge_error"


class JudgeAbstained(JudgeCallError):
    """The judge model declined to score this turn (the offline judge, when its rules conflict or
    none is decisive). A `JudgeCallError`, so the turn is reported unscored with this message and
    never retried: asking again would get the same answer. `reasoning` says why (not in the
    message, which stays one text for every abstention)."""

    cause: JudgementCause = "abstained"

    def __init__(self, message: str, reasoning: str = "") -> None:
        super().__init__(message)
        self.reasoning = reasoning


class JudgeDeadlineReached(JudgeCallError):
    """The request's deadline passed before this turn could be judged (or while retrying it)."""

    cause: JudgementCause = "deadline"


class JudgeCostCapReached(JudgeCallError):
    """The cost cap (`config.max_cost_usd`, `judges.ledger`) left no budget for this turn's call."""

    cause: JudgementCause = "cost_cap"


class JudgeProviderRefused(Exception):
    """The provider refuses the judge's calls altogether; the message is safe to return."""


@dataclass(frozen=True)
class JudgeSpec:
    """What a judge says of itself: its registered `kind`, the `model` name its votes and usage
    carry, whether it is `offline` (no network, no cost: the cascade's first stage, never
    an ensemble member under the cascade), and the kinds of question it `reads`."""

    kind: str
    model: str
    offline: bool = False
    reads: frozenset[str] = frozenset()
    """The kinds of question it reads besides answers, which every judge reads
    (`judges.question.JudgeQuestion.kind`: "goal", "criterion", a plug-in's; "*" every kind). A
    question of a declared kind it does not read is never sent to it: `ask` makes its judgement
    an abstention."""

    def reads_kind(self, kind: str) -> bool:
        return EVERY_KIND in self.reads or kind in self.reads


class Judge(Protocol):
    """One judge of turns (module docstring)."""

    def spec(self) -> JudgeSpec: ...

    async def judge(self, request: JudgeQuestion, sample: int = 0) -> Verdict: ...


class TurnJudge(Protocol):
    """What `evaluate` asks of the judge of an evaluation: a turn's whole judgement (a `Judge`
    through `SingleJudge`, a `judges.panel.JudgePanel`, a `judges.cascade.CascadeJudge`)."""

    async def judge_turn(self, request: JudgeQuestion) -> TurnJudgement: ...


async def ask(judge: Judge, request: JudgeQuestion, sample: int = 0) -> Verdict:
    """`judge.judge(request, sample)`, the one way panels, the cascade and `SingleJudge` ask: a
    question of a `declared` kind the judge's spec does not say it `reads` (a goal or a criterion
    put to the offline judge, or to a plug-in judge of turns) is a `JudgeAbstained`, never a
    call. An answer is put to every judge without asking its spec."""
    if request.declared:
        spec = judge.spec()
        if not spec.reads_kind(request.kind):
            raise JudgeAbstained(
                f"the judge {spec.model} {ABSTAIN_PHRASE} {request.about}",
                f"it reads {', '.join(['answer', *sorted(spec.reads)])} questions, not {request.kind} questions",
            )
    return await judge.judge(request, sample)


@dataclass
class SingleJudge:
    """A `Judge` as the `TurnJudge` of an evaluation: its verdict, or the turn unscored with
    the `JudgeCallError`'s message. `JudgeProviderRefused` propagates."""

    judge: Judge

    async def judge_turn(self, request: JudgeQuestion) -> TurnJudgement:
        try:
            verdict = await ask(self.judge, request)
        except JudgeCallError as exc:
            return TurnJudgement(score=None, error=str(exc), cause=exc.cause)
        return TurnJudgement(score=verdict.score, reasoning=verdict.reasoning)


@dataclass
class RunContext:
    """What one evaluation runs with, apart from its datasets, judges and config: the deadline
    (a `time.monotonic()` instant after which no judge call starts), the retry policy, the
    telemetry counters, the progress callback (`on_progress(done, total)` after each distinct
    judge request), the ledger (tokens, cost cap, cache: `judges.usage`) and the secrets to mask
    in every text a judge returns (the request's keys and the server's: `plan.RunPlan.secrets`).
    Each judge gets the evaluation's context with its own ledger (an ensemble's member's)."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    telemetry: JudgeTelemetry = field(default_factory=JudgeTelemetry)
    deadline: float | None = None
    ledger: JudgeLedger | None = None
    on_progress: Callable[[int, int], None] | None = None
    secrets: frozenset[str] = frozenset()


JudgeFactory = Callable[["BaseChatModel", EvaluationConfig, RunContext], Judge]


@dataclass(frozen=True)
class Registration:
    """A registered kind of judge: its factory, and whether it is offline (`JudgeSpec.offline`)."""

    kind: str
    factory: JudgeFactory
    offline: bool = False


@dataclass
class _Registry:
    by_model_class: dict[str, Registration] = field(default_factory=dict)
    default: Registration | None = None


_REGISTRY = _Registry()


def model_class_path(model_class: type[Any]) -> str:
    return f"{model_class.__module__}.{model_class.__qualname__}"


def register_judge(
    kind: str, *, model_class: type[Any] | str | None = None, offline: bool = False
) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register `factory(model, config, context) -> Judge` as the judge of chat models of
    `model_class` (a class, or its dotted path), or, without one, as the default judge of
    every chat model no registration names. A later registration of the same model class
    replaces the earlier one."""

    def decorate(factory: JudgeFactory) -> JudgeFactory:
        registration = Registration(kind=kind, factory=factory, offline=offline)
        if model_class is None:
            _REGISTRY.default = registration
        else:
            path = model_class if isinstance(model_class, str) else model_class_path(model_class)
            _REGISTRY.by_model_class[path] = registration
        return factory

    return decorate


def registration_for(model: BaseChatModel) -> Registration:
    """The registration that judges with `model`: its own class's (exactly: a subclass is another
    chat model, judged as one), else the default (the LLM judge). The built-in kinds register
    when `fair_forge_core.judges.kinds` is imported, which is where callers take this from."""
    found = _REGISTRY.by_model_class.get(model_class_path(type(model)))
    if found is not None:
        return found
    if _REGISTRY.default is None:
        raise RuntimeError("no judge is registered: import fair_forge_core.judges.kinds")
    return _REGISTRY.default


def judge_for(model: BaseChatModel, config: EvaluationConfig, context: RunContext) -> Judge:
    """The judge of an evaluation of `config` that judges with `model` (the registry)."""
    return registration_for(model).factory(model, config, context)


def is_offline(model: BaseChatModel) -> bool:
    """Whether the judge of `model` is offline (the registry's say, not the model's type)."""
    return registration_for(model).offline
