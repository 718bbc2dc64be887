"""An evaluation judged through the provider's batch API (`config.judge_batch`; the two passes
and why they agree: `judges.batch`). `submit_evaluation` records and sends the judge calls,
`batch_progress` and `wait_for_batches` follow the batches, `collect_evaluation` gives the
per-conversation metrics from their answers, as `evaluate_conversations` would have online.

The cost cap (`judges.ledger`) is held at submit: each call sent reserves its worst case at
the batch price, kept until collect (`HeldBudget`), so that what the batches can bill never
passes the cap; at collect nothing more is reserved (`PrepaidBudget`) and the caller releases
`BatchSubmission.reserved_usd` beyond what the answers cost (a job's budget is shared by its
shards).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fair_forge_core.evaluate import JudgeArgument, chat_models, evaluate_conversations
from fair_forge_core.judges.base import DEADLINE_PHRASE, RunContext
from fair_forge_core.judges.batch import AnsweringTransport, BatchState, BatchSubmission, JudgeBatch, ModelBatch
from fair_forge_core.judges.batch_api import batch_states, cancel_batches, delete_files, read_answers, submit_lines
from fair_forge_core.judges.budget import Budget
from fair_forge_core.judges.ledger import JudgeLedger
from fair_forge_core.schemas import ConversationMetrics, Dataset, EvaluationConfig


@dataclass
class HeldBudget:
    """A budget that counts what stays reserved in `inner` (`held`, USD) as calls reserve and
    settle. A deferred call settles with `spent == reserved` (`JudgeLedger.settle` of a reply
    without usage: the very same float), which leaves its reservation held: nothing to tell
    `inner`."""

    inner: Budget
    held: float = 0.0

    async def reserve(self, amount: float) -> bool:
        if not await self.inner.reserve(amount):
            return False
        self.held += amount
        return True

    async def settle(self, reserved: float, spent: float) -> None:
        if spent != reserved:
            await self.inner.settle(reserved, spent)
            self.held += spent - reserved


class PrepaidBudget:
    """The collect pass's budget: every call was reserved at submit, so each reservation fits
    and nothing is settled here."""

    async def reserve(self, amount: float) -> bool:
        return True

    async def settle(self, reserved: float, spent: float) -> None:
        return None


def _use_budget(ledger: JudgeLedger | None, budget: Budget) -> None:
    """Make `budget` the cap's budget of `ledger` and of its members (one budget for them all)."""
    if ledger is None or ledger.budget is None:
        return
    for part in [ledger, *(ledger.members or [])]:
        part.budget = budget


def _member_ledgers(ledger: JudgeLedger | None, count: int) -> list[JudgeLedger | None]:
    if ledger is None:
        return [None] * count
    return list(ledger.members or [ledger])


async def submit_evaluation(
    datasets: list[Dataset],
    judge: JudgeArgument,
    config: EvaluationConfig,
    context: RunContext,
    metadata: Mapping[str, str] | None = None,
    since: float | None = None,
) -> BatchSubmission:
    """Run the submit pass of `datasets` (`judges.batch`) and send each chat model's lines as its
    batches, labelled with `metadata` (with `since`, an earlier attempt's batches are taken
    instead of sent again: `judges.batch_api.submit_lines`). `context.ledger`'s cap keeps what the lines reserved; when
    sending fails, the batches already created are cancelled and the reservations released, so a
    retry starts with the whole cap."""
    models = chat_models(judge)
    batch = JudgeBatch.recording(models)
    held = None
    if context.ledger is not None and context.ledger.budget is not None:
        held = HeldBudget(context.ledger.budget)
        _use_budget(context.ledger, held)
    await evaluate_conversations(datasets, judge, config, dataclasses.replace(context, batch=batch))
    late = context.deadline is not None and time.monotonic() >= context.deadline
    parts: list[ModelBatch] = []
    try:
        for member, (model, ledger) in enumerate(
            zip(models, _member_ledgers(context.ledger, len(models)), strict=True)
        ):
            recorded = batch.recorded(model)
            lines = recorded.lines
            # The member's number tells apart two members' batches of the same lines, for `since`.
            labels = {**(metadata or {}), "fair_forge_member": str(member)}
            # With `since`, even no lines: an earlier attempt's batches are then cancelled.
            sending = lines or since is not None
            ids = await submit_lines(model, lines, labels, recorded.deployment, since) if sending else []
            parts.append(
                ModelBatch(
                    batch_ids=ids,
                    submitted=list(lines),
                    cap_message=ledger.cap_message() if ledger is not None and ledger.turns_stopped_by_cap else None,
                    deadline_message=f"{DEADLINE_PHRASE} before this call was sent to the provider's batch"
                    if late
                    else None,
                )
            )
    except BaseException:
        for model, part in zip(models, parts, strict=False):
            await cancel_batches(model, part.batch_ids)
        if held is not None and held.held:
            await held.inner.settle(held.held, 0.0)
        raise
    return BatchSubmission(models=parts, reserved_usd=held.held if held is not None else 0.0)


async def batch_progress(judge: JudgeArgument, submission: BatchSubmission) -> list[BatchState]:
    """Where every batch of `submission` stands, each on its own connector's client."""
    states: list[BatchState] = []
    for model, part in zip(chat_models(judge), submission.models, strict=True):
        states.extend(await batch_states(model, part.batch_ids))
    return states


async def cancel_submission(judge: JudgeArgument, submission: BatchSubmission) -> None:
    """Cancel every batch of `submission` that has not ended."""
    for model, part in zip(chat_models(judge), submission.models, strict=True):
        await cancel_batches(model, part.batch_ids)


async def wait_for_batches(
    judge: JudgeArgument,
    submission: BatchSubmission,
    *,
    poll_s: float,
    max_poll_s: float,
    deadline: float | None,
    on_states: Callable[[list[BatchState]], None] | None = None,
) -> list[BatchState]:
    """Poll until every batch has ended: at once, then after `poll_s`, then each wait 1.5 times the
    last and at least a second, at most `max_poll_s`. Past `deadline` (a `time.monotonic()`
    instant) the batches left are cancelled, and their end awaited (what they answered stays)."""
    wait = poll_s
    cancelled = False
    while True:
        states = await batch_progress(judge, submission)
        if on_states is not None:
            on_states(states)
        if all(state.ended for state in states):
            return states
        if deadline is not None and time.monotonic() >= deadline and not cancelled:
            await cancel_submission(judge, submission)
            cancelled = True
        await asyncio.sleep(wait)
        wait = min(max(wait * 1.5, 1.0), max_poll_s)


async def prepare_collect(judge: JudgeArgument, ledger: JudgeLedger | None, submission: BatchSubmission) -> JudgeBatch:
    """The collect pass's `JudgeBatch` of `judge`'s chat models: each answering from its batches'
    output files. `ledger` (the collect pass's) reserves nothing more from now on (`PrepaidBudget`)."""
    models = chat_models(judge)
    if len(models) != len(submission.models):
        raise ValueError(f"a submission of {len(submission.models)} connector(s) for {len(models)} judge model(s)")
    transports = []
    for model, part in zip(models, submission.models, strict=True):
        answers, ended_as = await read_answers(model, part)
        transports.append(AnsweringTransport(answers, part, ended_as))
    _use_budget(ledger, PrepaidBudget())
    return JudgeBatch.answering(models, transports)


async def collect_evaluation(
    datasets: list[Dataset],
    judge: JudgeArgument,
    config: EvaluationConfig,
    context: RunContext,
    submission: BatchSubmission,
) -> list[ConversationMetrics]:
    """The per-conversation metrics of `datasets` from the answers of `submission`'s batches
    (the collect pass, `judges.batch`): `context.ledger` counts their tokens at its price and
    reserves nothing (`prepare_collect`)."""
    batch = await prepare_collect(judge, context.ledger, submission)
    return await evaluate_conversations(datasets, judge, config, dataclasses.replace(context, batch=batch))


async def delete_submission_files(judge: JudgeArgument, submission: BatchSubmission) -> None:
    """Delete the files of `submission`'s batches from the provider, once their answers are used:
    the conversations judged are not left in the provider's account (best effort)."""
    for model, part in zip(chat_models(judge), submission.models, strict=True):
        await delete_files(model, part.batch_ids)


def answered_counts(states: Sequence[BatchState]) -> dict[str, Any]:
    """The batches' `request_counts` added up, and their statuses: for progress and logs."""
    return {
        "batches": len(states),
        "statuses": sorted({state.status for state in states}),
        "total": sum(state.total for state in states),
        "completed": sum(state.completed for state in states),
        "failed": sum(state.failed for state in states),
    }
