"""The judge as a concept of its own: what a judge is (`Judge`), what it says of itself
(`JudgeSpec`), the one way an evaluation asks one (`judge_turn`), how one is built for a
connector's chat model (the registry, keyed by judge name), and what an evaluation lends every
judge (`RunContext`).

A **judge** gives one turn a `Verdict` (a score in [0, 1] and its reasoning) or raises:
`JudgeCallError` when this turn cannot be scored (it is then unscored with that message, and
the error's `cause` as its cause; `JudgeAbstained` when the judge declines, in any words),
`JudgeProviderRefused` when no turn can be (the evaluation stops). `judge(request, sample)` is
one judgement; `sample` numbers the repeated judgements of one turn (`config.judge_samples`),
which a judge that caches keeps apart. `evaluate` takes a `Judge` (or a list of them: an
ensemble) as it is; a LangChain chat model is adapted to one at the edge (`judge_for`).

A judge that combines judges (`judges.panel.JudgePanel`, `judges.cascade.CascadeJudge`) is a
`Judge` too, so that they nest (a cascade as a panel's member, a panel as a cascade's stage).
What it says of a judgement besides the verdict (the panel's votes and agreement, the judge of
the cascade that decided) is its `JudgementDetail`: on the verdict (`CombinedVerdict`) when
scored, on the `JudgeCallError` (`detail`) when not; `judge_turn` copies it into the turn's
`TurnJudgement`.

The registry maps a judge's name (`kind`) to its factory, `factory(model, config, context) ->
Judge`, the chat model being that judge's argument: `register_judge(kind, model_class=…)`
also says that chat models of that class are judged by this kind (the map from model class to
kind is derived from the registrations), and `judge_named(kind)` looks a kind up by name. The
built-in kinds (`judges.kinds` registers them): the offline rules judge for `ReferenceJudge`
(`judges.offline`, kind "reference"), the LLM judge for every other chat model
(`judges.llm.AnswerJudge`, kind "llm", the default), and any judge an operator admits by
listing its model class in `FAIR_FORGE_EXTRA_CONNECTORS` (a module that defines the model class
and registers its judge beside it: nothing else changes). Panels, the cascade and `evaluate`
ask a judge what it is through `spec()`, never by its type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import JudgementCause, TurnJudgement
from fair_forge_core.judges.question import EVERY_KIND
from fair_forge_core.judges.verdict import Verdict
from fair_forge_core.schemas import EvaluationConfig, JudgeVote

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

    from fair_forge_core.judges.batch import JudgeBatch
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
    subclasses, so that what the turn's judgement records never depends on the message's words.
    `detail` is what a combining judge says of the failed judgement (a panel's votes, the
    cascade's stage that failed: `JudgementDetail`); None from a single judge."""

    cause: JudgementCause = "judge_error"
    detail: JudgementDetail | None = None


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


class JudgeBatchExpired(JudgeCallError):
    """The provider's batch (`config.judge_batch`, `judges.batch`) ended before it answered this
    turn's call: its completion window expired, or it was cancelled or failed."""

    cause: JudgementCause = "batch_expired"


class JudgeProviderRefused(Exception):
    """The provider refuses the judge's calls altogether; the message is safe to return."""


@dataclass(frozen=True)
class JudgementDetail:
    """What a judge that combines judges says of one judgement besides its score and reasoning:
    the `votes` of a panel's members and their `agreement` (`judges.panel`), and `judged_by`,
    the stage of a cascade that decided it (`judges.cascade`). Each is None when no combinator
    set it; `judge_turn` copies them into the turn's `TurnJudgement` (same names)."""

    votes: tuple[JudgeVote, ...] | None = None
    agreement: float | None = None
    judged_by: Literal["offline", "llm"] | None = None


NO_DETAIL = JudgementDetail()


class CombinedVerdict(Verdict):
    """The verdict of a judge that combines judges: a `Verdict` (so it is what any judge
    returns, and nests) with its `JudgementDetail`."""

    detail: JudgementDetail = NO_DETAIL


def detail_of(outcome: Verdict | JudgeCallError) -> JudgementDetail:
    """The `JudgementDetail` a verdict or a judge's error carries (`NO_DETAIL`: none)."""
    if isinstance(outcome, CombinedVerdict):
        return outcome.detail
    if isinstance(outcome, JudgeCallError) and outcome.detail is not None:
        return outcome.detail
    return NO_DETAIL


def unscored(cause: JudgementCause, message: str, detail: JudgementDetail) -> JudgeCallError:
    """The `JudgeCallError` of `cause` (its subclass: `JudgeAbstained` for "abstained", …) with
    `message` and `detail`: how a combining judge reports a judgement its members left unscored,
    so that its cause stays the type it was raised with, never read back from the message."""
    error = _ERROR_OF_CAUSE[cause](message)
    error.detail = detail
    return error


_ERROR_OF_CAUSE: dict[JudgementCause, type[JudgeCallError]] = {
    "abstained": JudgeAbstained,
    "batch_expired": JudgeBatchExpired,
    "cost_cap": JudgeCostCapReached,
    "deadline": JudgeDeadlineReached,
    "judge_error": JudgeCallError,
}


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

    settings: dict[str, Any] = field(default_factory=dict)
    """What else decides its verdicts, as JSON values (a panel's samples, vote and members'
    specs; a plug-in judge's own options): hashed into the result's provenance
    (`provenance.judge_provenance`) when the judge is passed to `evaluate` as a `Judge`."""

    def as_json(self) -> dict[str, Any]:
        """This spec as JSON values (what `settings` of a combining judge holds of its members)."""
        return {
            "kind": self.kind,
            "model": self.model,
            "offline": self.offline,
            "reads": sorted(self.reads),
            "settings": self.settings,
        }


class Judge(Protocol):
    """One judge of turns (module docstring): what `evaluate` takes, and what panels and the
    cascade combine (and are). A plug-in judge is any class with these two methods."""

    def spec(self) -> JudgeSpec: ...

    async def judge(self, request: JudgeQuestion, sample: int = 0) -> Verdict: ...


async def ask(judge: Judge, request: JudgeQuestion, sample: int = 0) -> Verdict:
    """`judge.judge(request, sample)`, the one way panels, the cascade and `judge_turn` ask: a
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


async def judge_turn(judge: Judge, request: JudgeQuestion) -> TurnJudgement:
    """What an evaluation records of `judge`'s judgement of `request` (sample 0, through `ask`):
    its verdict, or the turn unscored with the `JudgeCallError`'s message and `cause`; with the
    verdict's or the error's `JudgementDetail` either way. `JudgeProviderRefused` propagates.
    The one adapter from a `Judge` to a `TurnJudgement`, for every judge (single or combined)."""
    try:
        verdict = await ask(judge, request)
    except JudgeCallError as exc:
        detail = detail_of(exc)
        return TurnJudgement(
            score=None, error=str(exc), cause=exc.cause, votes=detail.votes, judged_by=detail.judged_by
        )
    detail = detail_of(verdict)
    return TurnJudgement(
        score=verdict.score,
        reasoning=verdict.reasoning,
        judged_by=detail.judged_by,
        votes=detail.votes,
        agreement=detail.agreement,
    )


@dataclass
class RunContext:
    """What one evaluation runs with, apart from its datasets, judges and config: the deadline
    (a `time.monotonic()` instant after which no judge call starts), the retry policy, the
    telemetry counters, the progress callback (`on_progress(done, total)` after each distinct
    judge request), the ledger (tokens, cost cap, cache: `judges.usage`) and the secrets to mask
    in every text a judge returns (the request's keys and the server's: `plan.RunPlan.secrets`).
    Each judge `evaluate` builds from a chat model gets the evaluation's context with its own
    ledger (an ensemble's member's); a `Judge` passed to `evaluate` as it is keeps the context
    it was built with."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    telemetry: JudgeTelemetry = field(default_factory=JudgeTelemetry)
    deadline: float | None = None
    ledger: JudgeLedger | None = None
    on_progress: Callable[[int, int], None] | None = None
    secrets: frozenset[str] = frozenset()
    batch: JudgeBatch | None = None
    """A pass of batch judging (`judges.batch`): the chat models it wired, whose LLM judges call
    through it; None: every call goes to the provider as it is made."""


JudgeFactory = Callable[["BaseChatModel", EvaluationConfig, RunContext], Judge]


@dataclass(frozen=True)
class Registration:
    """A registered kind of judge: its name, its factory, and whether it is offline (`JudgeSpec.offline`)."""

    kind: str
    factory: JudgeFactory
    offline: bool = False


@dataclass
class _Registry:
    """The registrations by judge name, and what is derived from them: the kind of each model
    class a registration named, and the default kind (the one registered without a model class)."""

    by_kind: dict[str, Registration] = field(default_factory=dict)
    kind_of_model_class: dict[str, str] = field(default_factory=dict)
    default: str | None = None


_REGISTRY = _Registry()


def model_class_path(model_class: type[Any]) -> str:
    return f"{model_class.__module__}.{model_class.__qualname__}"


def register_judge(
    kind: str, *, model_class: type[Any] | str | None = None, offline: bool = False
) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register `factory(model, config, context) -> Judge` as the judge named `kind`, and, with
    `model_class` (a class, or its dotted path), as the judge of chat models of that class; without
    one, as the default judge of every chat model no registration names. A later registration of
    the same kind replaces its factory (the model classes it was named for keep it: they name the
    kind); a later registration of the same model class gives that class to the new kind."""

    def decorate(factory: JudgeFactory) -> JudgeFactory:
        _REGISTRY.by_kind[kind] = Registration(kind=kind, factory=factory, offline=offline)
        if model_class is None:
            _REGISTRY.default = kind
        else:
            path = model_class if isinstance(model_class, str) else model_class_path(model_class)
            _REGISTRY.kind_of_model_class[path] = kind
        return factory

    return decorate


def judge_named(kind: str) -> Registration:
    """The registration of the judge named `kind`; a `LookupError` listing the names there are.
    The built-in kinds register when `fair_forge_core.judges.kinds` is imported."""
    found = _REGISTRY.by_kind.get(kind)
    if found is None:
        names = ", ".join(sorted(_REGISTRY.by_kind)) or "none: import fair_forge_core.judges.kinds"
        raise LookupError(f"no judge is registered as {kind!r}; registered: {names}")
    return found


def judge_names() -> list[str]:
    """The names of the registered judges, in registration order."""
    return list(_REGISTRY.by_kind)


def registration_for(model: BaseChatModel) -> Registration:
    """The registration that judges with `model`: the kind its own class is registered for
    (exactly: a subclass is another chat model, judged as one), else the default (the LLM
    judge). The built-in kinds register when `fair_forge_core.judges.kinds` is imported, which
    is where callers take this from."""
    return registration_for_class_path(model_class_path(type(model)))


def registration_for_class_path(class_path: str) -> Registration:
    """`registration_for` a chat model whose class is at `class_path` (`model_class_path`), as a
    result's `JudgeProvenance.class_path` names it: the kind registered for that path, else the
    default (the LLM judge) — also for a `Judge` passed to `evaluate` as it is, whose path names
    its own class."""
    kind = _REGISTRY.kind_of_model_class.get(class_path, _REGISTRY.default)
    if kind is None:
        raise RuntimeError("no judge is registered: import fair_forge_core.judges.kinds")
    return judge_named(kind)


def judge_for(model: BaseChatModel, config: EvaluationConfig, context: RunContext) -> Judge:
    """The judge of an evaluation of `config` that judges with `model` (the registry): the edge
    where a LangChain chat model becomes a `Judge`."""
    return registration_for(model).factory(model, config, context)


def is_offline(model: BaseChatModel) -> bool:
    """Whether the judge of `model` is offline (the registry's say, not the model's type)."""
    return registration_for(model).offline
