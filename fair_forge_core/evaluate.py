"""`evaluate()`: judge every turn once, score the tools, compute the metrics.

The only module that runs the judge. The judge is a `judges.base.Judge` (or a list of them: an
ensemble), taken as it is; a LangChain chat model (or a list) is adapted to one at this edge,
through the registry (`judges.kinds.judge_for`), with the evaluation's context (deadline,
retries, telemetry, the ledger). A list may mix the two. Identical turns (the same `JudgeRequest`:
query, answer, ground truth, the turn's observation, and the conversation's context
and language the judge also sees) are judged once per evaluation (`config.judge_samples`
times by each connector of the request, when it asks for more: `judges.panel`). All judge
calls run concurrently under each judge's cap. A conversation with a `goal` is also judged as a
whole, once (`judges.goal`), by the same judges. If a provider refuses (bad key), the evaluation stops and raises
`JudgeProviderRefused`; if no conversation could be scored because the judge failed, it raises
`NoConversationScored` (not when it abstained, or the cost cap or the deadline stopped it: that
result stands, with readiness "insufficient_evidence"). Otherwise every turn is in the result, scored or with the
reason it is not.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar

from langchain_core.language_models.chat_models import BaseChatModel

from fair_forge_core.checks import Check, active_checks, ordered
from fair_forge_core.judges.base import Judge, RunContext, judge_turn
from fair_forge_core.judges.cascade import CascadeJudge
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.judges.kinds import judge_for
from fair_forge_core.judges.llm import JudgeProviderRefused, JudgeTelemetry, RetryPolicy
from fair_forge_core.judges.panel import JudgePanel, Member, check_panel, consensus
from fair_forge_core.judges.usage import JudgeLedger
from fair_forge_core.metrics import (
    aggregate,
    metrics_of_results,
    unscored_causes,
    unscored_conversation_metrics,
    unscored_errors,
)
from fair_forge_core.provenance import judge_provenance, provenance_of
from fair_forge_core.schemas import (
    CheckResult,
    CompareConfig,
    Comparison,
    ConversationMetrics,
    Dataset,
    EvaluationConfig,
    EvaluationResult,
    input_warnings,
)

ProgressCallback = Callable[[int, int], None]

JudgeLike = Judge | BaseChatModel
"""One judge as `evaluate` takes it: a `Judge`, or a LangChain chat model to build one from."""
JudgeArgument = JudgeLike | Sequence[JudgeLike]
"""`evaluate`'s judge: one, or an ensemble's (a list) in request order."""

UTILIZATION_UNMEASURED_WARNING = (
    "tool utilization not measured on {turns} turn(s): no tool `result` and no `final_answer_uses_tools` "
    "(left out of their tool score, not counted as 0; docs/tool-rubric.md#utilization)"
)
"""The result's warning when `aggregated_metrics.tool_utilization_unmeasured` counts turns."""


class NoConversationScored(Exception):
    """Every conversation has an unscored turn; the message lists the causes."""


async def judge_all(
    requests: Iterable[JudgeQuestion], judge: Judge, on_progress: ProgressCallback | None = None
) -> dict[JudgeQuestion, TurnJudgement]:
    """One judgement per distinct request (a turn, or a conversation's goal), judged concurrently
    by `judge` (any `Judge`: a single one, a `JudgePanel`, a `CascadeJudge`) through
    `judges.base.judge_turn`.

    A `JudgeProviderRefused` from any call cancels the others and propagates.
    """
    unique = list(dict.fromkeys(requests))
    done = 0

    async def judge_one(request: JudgeQuestion) -> TurnJudgement:
        nonlocal done
        judgement = await judge_turn(judge, request)
        done += 1
        if on_progress is not None:
            on_progress(done, len(unique))
        return judgement

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(judge_one(request)) for request in unique]
    except* JudgeProviderRefused as refused:
        raise refused.exceptions[0] from None
    return {request: task.result() for request, task in zip(unique, tasks, strict=True)}


def judge_members(judge: JudgeArgument) -> list[JudgeLike]:
    """The judges of an evaluation as given: one, or an ensemble's in request order."""
    if isinstance(judge, BaseChatModel) or not isinstance(judge, Sequence):
        return [judge]
    return list(judge)


def chat_models(judge: JudgeArgument) -> list[BaseChatModel]:
    """The chat models among an evaluation's judges (those `evaluate` builds a judge from, and
    its ledger counts), in request order."""
    return [member for member in judge_members(judge) if isinstance(member, BaseChatModel)]


Asked = list[tuple[Check, Sequence[JudgeQuestion]]]
"""A conversation's checks, each with the questions it asks the judge (`Check.questions`)."""


def _asked(datasets: list[Dataset], checks: list[Check]) -> list[Asked | None]:
    """Each conversation's `Asked` (None for one unscored before judging: it asks nothing)."""
    return [None if d.unscored is not None else [(c, c.questions(d)) for c in checks] for d in datasets]


def _run_deterministic(datasets: list[Dataset], asked: list[Asked | None]) -> list[list[CheckResult]]:
    """The results of every check that asks a conversation nothing: run before any judge call,
    so that the deadline bounds only the judge calls that follow."""
    return [
        [] if checks is None else [r for c, questions in checks if not questions for r in c.check(d, ())]
        for d, checks in zip(datasets, asked, strict=True)
    ]


async def evaluate_conversations(
    datasets: list[Dataset],
    judge: JudgeArgument,
    config: EvaluationConfig,
    context: RunContext | None = None,
) -> list[ConversationMetrics]:
    """The per-conversation metrics of `datasets`: each distinct turn judged, tools scored.

    The first half of `evaluate`, also what one shard of an asynchronous job computes
    (`sharding`): a list where nothing could be scored is not an error here, and
    per-turn detail is always kept, since `build_result` needs it for its warnings and
    drops it itself. `JudgeProviderRefused` propagates. `context` (`judges.base.RunContext`)
    holds the deadline, the retry policy, the telemetry, the progress callback and the ledger
    (`judges.usage`), which, when given, counts the judge's tokens and cost, applies the cost
    cap and the judge cache (for an ensemble, `JudgeLedger.for_models`: one member ledger per
    chat model).
    `judge` is one judge, or an ensemble's (a list): each a `Judge`, used as it is (it was built
    with a context of its own, so the ledger counts none of its calls), or a chat model, whose
    judge is built here (`judges.kinds.judge_for`) with `context` and its member ledger. With
    several, or with `config.judge_samples` > 1, each turn is judged by a
    `judges.panel.JudgePanel` over them (`judges.panel.PanelError`, a ValueError, for a panel
    `check_panel` refuses). With `config.judge_cascade` (and a judge other than one offline
    judge) the offline judge settles the turns it is sure of first (`judges.cascade`); the
    ledger then also gets the cascade's counts, and counts only the connector's calls.
    """
    context = context or RunContext()
    ledger, telemetry = context.ledger, context.telemetry
    members = judge_members(judge)
    check_panel(members, config)
    judges = _judges(members, config, context)
    llm: Judge = judges[0]
    if len(judges) > 1 or config.judge_samples > 1:
        llm = JudgePanel.for_config([Member(judge=j, model=j.spec().model) for j in judges], config)
    checks = active_checks(config)
    asked = _asked(datasets, checks)
    # Each question's place among the distinct ones, found in the one pass that finds them: a
    # second lookup by value would hash and compare every turn's question again.
    slots: dict[JudgeQuestion, int] = {}
    places = [
        None if conversation is None else [slots.setdefault(q, len(slots)) for _, qs in conversation for q in qs]
        for conversation in asked
    ]
    distinct = list(slots)
    results = _run_deterministic(datasets, asked)
    cascade = _cascade(judges, llm, config, context)
    started = time.perf_counter()
    judged = await judge_all(distinct, cascade or llm, context.on_progress)
    if cascade is not None and ledger is not None:
        ledger.cascade_settled_offline = cascade.settled_offline
        ledger.cascade_sent_to_llm = cascade.sent_to_llm
    if context.batch is not None:  # the lines billed that no call read (the cache answered): `judges.batch`
        models = [member for member in members if isinstance(member, BaseChatModel)]
        member_ledgers = list(ledger.members or [ledger]) if ledger is not None else [None] * len(models)
        context.batch.count_unread(models, member_ledgers)
    telemetry.judging_ended_at = time.perf_counter()
    telemetry.judging_s += telemetry.judging_ended_at - started
    judgements = [judged[q] for q in distinct]
    conversations = []
    for dataset, conversation, place, deterministic in zip(datasets, asked, places, results, strict=True):
        if conversation is None or place is None:
            conversations.append(unscored_conversation_metrics(dataset, config))
            continue
        at = iter(place)  # the conversation's questions' places, in the order its checks asked them
        judged_results = [
            r for c, qs in conversation if qs for r in c.check(dataset, [judgements[next(at)] for _ in qs])
        ]
        conversations.append(metrics_of_results(dataset, ordered([*deterministic, *judged_results]), config))
    return conversations


def _judges(members: list[JudgeLike], config: EvaluationConfig, context: RunContext) -> list[Judge]:
    """Each member as a `Judge`: itself, or, for a chat model, its registry judge built with
    `context` and that model's ledger (the ledger's members, one per chat model in order; the
    ledger itself for one). A ledger of another number of members than chat models is a ValueError."""
    models = [member for member in members if isinstance(member, BaseChatModel)]
    ledgers: list[JudgeLedger | None] = [None] * len(models)
    if context.ledger is not None and models:
        ledgers = list(context.ledger.members or [context.ledger])
        if len(ledgers) != len(models):
            raise ValueError(f"a ledger of {len(ledgers)} judge(s) for {len(models)} judge model(s)")
    model_ledgers = iter(ledgers)
    return [
        judge_for(member, config, dataclasses.replace(context, ledger=next(model_ledgers)))
        if isinstance(member, BaseChatModel)
        else member
        for member in members
    ]


def _cascade(judges: list[Judge], llm: Judge, config: EvaluationConfig, context: RunContext) -> CascadeJudge | None:
    """The `CascadeJudge` of `config.judge_cascade`: None when it is off, or when the only
    judge is itself offline (its `JudgeSpec.offline`: the cascade would ask an offline judge
    twice, a no-op). The offline stage has telemetry and no ledger of its own: the ledger counts
    the connector's calls."""
    if not config.judge_cascade:
        return None
    from fair_forge_core.judges.reference import ReferenceJudge

    if len(judges) == 1 and judges[0].spec().offline:
        return None
    offline_context = RunContext(retry=context.retry, deadline=context.deadline)
    return CascadeJudge(offline=judge_for(ReferenceJudge(), config, offline_context), llm=llm)


async def evaluate(
    datasets: list[Dataset],
    judge: JudgeArgument,
    config: EvaluationConfig | None = None,
    *,
    deadline: float | None = None,
    retry: RetryPolicy | None = None,
    telemetry: JudgeTelemetry | None = None,
    on_progress: ProgressCallback | None = None,
    ledger: JudgeLedger | None = None,
    context: RunContext | None = None,
) -> EvaluationResult:
    """Evaluate `datasets` with `judge` (a list: an ensemble, `judges.panel`): a `Judge`
    (`judges.base`: a plug-in judge, a `JudgePanel`, a `CascadeJudge`), used as it is, or a
    LangChain chat model, whose judge the registry builds (`judges.kinds.judge_for`).

    The run's settings come as one `context` (`judges.base.RunContext`: what the service and the
    CLI pass, through `plan.execute`), or, for a library caller, as the keywords below, which
    make one (ignored when `context` is given).

    `deadline` (a `time.monotonic()` instant) stops new judge calls; turns not judged
    by then are reported unscored. `telemetry`, if given, receives the judge's counters.
    `on_progress(done, total)` is called after each distinct judge request.
    `ledger` (`judges.usage.JudgeLedger`) counts the judge's tokens and cost into
    `aggregated_metrics.judge_usage`, and applies the cost cap and the judge cache; the
    service and the CLI always pass one. Without one, `judge_usage` is null, unless
    `config.max_cost_usd` is set: then `JudgeLedger.for_models(chat_models(judge), config)`
    applies it (no price table: `MissingPrice` unless the models are the offline judge).
    A `Judge` passed as it is lends nothing of the ledger's: it was built with its own context
    (deadline, telemetry, ledger), and the ledger counts only the judges built here from chat
    models (with none, `judge_usage` is null without a `ledger`). So `config.max_cost_usd`
    without a `ledger` is a ValueError when such a `Judge` is not offline (`JudgeSpec.offline`:
    no network, no cost): no cap could hold its calls.
    The result's `provenance` records the judges (a `Judge` by its `spec()`, a chat model by its
    class and identity), the settings and the datasets (`provenance`).
    """
    config = config or EvaluationConfig()
    if context is None:
        context = RunContext(
            retry=retry or RetryPolicy(),
            telemetry=telemetry or JudgeTelemetry(),
            deadline=deadline,
            ledger=ledger,
            on_progress=on_progress,
        )
    if context.ledger is None and config.max_cost_usd is not None:
        _check_cap_holds(judge_members(judge))
        if models := chat_models(judge):
            context = dataclasses.replace(context, ledger=JudgeLedger.for_models(models, config))
    ledger = context.ledger
    members = judge_members(judge)
    if config.judge_error is not None:  # before any judging: a calibration of another judge is refused
        from fair_forge_core.judge_error_input import check_judge_error

        check_judge_error(config, [judge_provenance(member, config).identity for member in members])
    conversations = await evaluate_conversations(datasets, judge, config, context)
    result = build_result(conversations, config, input_warnings(datasets), ledger=ledger)
    result.provenance = provenance_of(members, config, datasets)
    return result


def _check_cap_holds(members: list[JudgeLike]) -> None:
    """A ValueError for a cost cap `evaluate` cannot hold: a `Judge` passed as it is that is not
    offline, whose calls no ledger of the evaluation's sees."""
    for member in members:
        if not isinstance(member, BaseChatModel) and not (spec := member.spec()).offline:
            raise ValueError(
                f"config.max_cost_usd cannot cap the {spec.kind} judge {spec.model!r}: it was passed as a Judge, "
                "built with a ledger of its own; pass its chat model instead, or a ledger (evaluate(ledger=...))"
            )


def build_result(
    conversations: list[ConversationMetrics],
    config: EvaluationConfig,
    warnings_of_input: Sequence[str] = (),
    *,
    ledger: JudgeLedger | None = None,
) -> EvaluationResult:
    """The full result from per-conversation metrics, with warnings for what a reader must know
    (`warnings_of_input`, from `schemas.input_warnings` of the datasets, first), the
    judge's usage (`aggregated_metrics.judge_usage`) when `ledger` is given, and how far the
    judgements of turns judged several times agreed (`judge_consensus`, `judges.panel.consensus`).
    A turn whose tool utilization was not measured is counted in one warning
    (`UTILIZATION_UNMEASURED_WARNING`), so that the reason reaches the terminal.

    Raises `NoConversationScored` when none of the conversations was scored and some turn
    failed for the judge (`metrics.unscored_cause` "judge_error": a provider failing after its
    retries, a reply that never parsed). When every unscored turn was an abstention, the cost
    cap or the deadline, the result stands: every rate null, readiness "insufficient_evidence".
    """
    aggregated = aggregate(conversations, config)
    if ledger is not None:
        aggregated.judge_usage = ledger.summary()
    aggregated.judge_consensus = consensus(conversations, config)
    if config.judge_error is not None or config.judge_samples >= 2:  # numpy and scipy only when asked for
        from fair_forge_core.judge_error_input import judge_corrected, judge_flakiness, judge_noise

        aggregated.judge_corrected = judge_corrected(conversations, config)
        aggregated.judge_noise = judge_noise(conversations, config)
        if aggregated.judge_noise is not None and aggregated.task_stability is not None:
            aggregated.task_stability = judge_flakiness(aggregated.task_stability, aggregated.judge_noise)
    warnings = list(warnings_of_input)
    if aggregated.unscored_conversations:
        causes = Counter(reason for m in conversations for reason in unscored_errors(m))
        # Conversations, turns and goals are counted apart, each count named: a conversation may
        # hold several unscored turns.
        summary = "; ".join(f"{count} {unit}(s): {cause}" for (unit, cause), count in causes.most_common(3))
        message = f"{aggregated.unscored_conversations} conversation(s) unscored and left out of n and c"
        if aggregated.total_conversations == 0 and unscored_causes(conversations)["judge_error"]:
            raise NoConversationScored(f"no conversation could be scored: {summary or 'judge errors'}")
        warnings.append(f"{message}: {summary}" if summary else message)
    if unmeasured := aggregated.tool_utilization_unmeasured:
        warnings.append(UTILIZATION_UNMEASURED_WARNING.format(turns=unmeasured))
    if config.k > aggregated.total_conversations:
        warnings.append(
            f"k = {config.k} exceeds the {aggregated.total_conversations} scored conversation(s): "
            "the unbiased estimators are null"
        )
    if config.compare is not None:
        aggregated.comparison = compare_assistants(conversations, config.compare, config)
    result = EvaluationResult(per_conversation_metrics=conversations, aggregated_metrics=aggregated, warnings=warnings)
    if not config.include_interactions:
        return result.without_interactions("config.include_interactions is false")
    return result


def compare_assistants(
    conversations: list[ConversationMetrics], assistants: CompareConfig, config: EvaluationConfig
) -> Comparison:
    """`config.compare`: the baseline's and the candidate's conversations compared on their
    shared tasks (`fair_forge_core.compare.compare_sides`, the orchestration `fair-forge compare`
    runs too) at the request's k, under its prior (`statistical_mode.prior`, Beta(1, 1) unless
    set), with what the two spent paired under `config.efficiency` and, under
    `config.judge_error`, the comparison corrected for it (one judge, one calibration: shared
    judge draws), neither part of the verdict.
    Both sides are of this one evaluation: judged alike, so no difference in judging is looked
    for; without a shared task the comparison stands, with its note. An assistant without any
    conversation is a ValueError (`ComparisonRefused`) naming the assistants there are."""
    from fair_forge_core.compare import compare_sides, side_of

    return compare_sides(
        side_of(conversations, assistants.baseline, "baseline", judge_error=config.judge_error),
        side_of(conversations, assistants.candidate, "candidate", judge_error=config.judge_error),
        k=config.k,
        population=assistants.population,
        confidence=assistants.confidence,
        seed=assistants.seed,
        prior=config.statistical_mode.prior,
        one_evaluation=True,
        require_shared_tasks=False,
    ).comparison


T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to completion on the process's long-lived event loop.

    Not `asyncio.run`, which closes its loop each time: LangChain providers cache
    HTTP clients across model instances (langchain-openai keeps one httpx client per
    base URL and timeout), so after a closed loop the next evaluation would find
    pooled connections bound to it and lose its first calls to "Event loop is
    closed". One loop per process keeps those connections usable, and alive between
    warm Lambda invocations. (`asyncio.run` also installs a SIGINT handler whose
    removal formats the finished task, result included: seconds for a large result.)
    Callers in several threads take turns, as invocations do in one Lambda
    execution environment; a deadline computed before the call also runs while the
    call waits for its turn, so give each thread's evaluation its deadline from
    inside, or use separate processes.
    """
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
        return _loop.run_until_complete(coroutine)


def evaluate_sync(
    datasets: list[Dataset],
    judge: JudgeArgument,
    config: EvaluationConfig | None = None,
    **kwargs: Any,
) -> EvaluationResult:
    """`evaluate` for callers without an event loop (see `run_sync`)."""
    return run_sync(evaluate(datasets, judge, config, **kwargs))
