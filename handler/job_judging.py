"""How a job judges a part of itself (a shard, an adaptive round's attempts, a pass of batch
judging): the job's stored connectors and judges (`job_judges`), a shard's ledger under the job's
cap and cache (`shard_ledger`), the judging itself with `/run`'s judge, retries, key rules and
deadline (`judge_datasets`), and how a job that cannot succeed is failed (`fail`). Used by the
worker and the reduce (`handler.job_lambdas`), the attempts Lambda (`handler.job_attempts`) and
batch judging (`handler.job_batches`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fair_forge_core.connectors import REFUSAL_PREFIX
from fair_forge_core.redact import redact
from handler import job_store as store
from handler.connectors import ConnectorError, ServerKeyUnavailable, judges_for_job
from handler.job_store import JobFailed, JobKeys
from handler.judged_run import JudgedRunFailed, judged_run
from handler.observability import current_secrets, logger, secrets_masked
from handler.settings import Settings


def job_bucket(settings: Settings) -> str:
    if not settings.jobs_bucket:
        raise RuntimeError("JOBS_BUCKET is not set")
    return settings.jobs_bucket


def fail(bucket: str, job_id: str, message: str) -> JobFailed:
    """Record why the job cannot succeed (for GET /jobs/{id}) and return the error to raise."""
    message = redact(message, current_secrets())
    logger.error("job failed", extra={"reason": message})
    try:
        store.put(bucket, JobKeys(job_id).error, json.dumps({"error": message}))
    except Exception as exc:  # the failure itself still reaches Step Functions
        logger.warning("error.json not written", extra={"error_code": store.error_code(exc)})
    return JobFailed(message)


def remaining_s(context: Any) -> float | None:
    if context is not None and hasattr(context, "get_remaining_time_in_millis"):
        return float(context.get_remaining_time_in_millis()) / 1000.0
    return None


Evaluation = Callable[[list[Any], list[Any], Any, Any], Coroutine[Any, Any, Any]]
"""What judges a part of a job: `(datasets, models, config, run_context)` to its outcome."""


@dataclass(frozen=True)
class Judged:
    """What `judge_datasets` gives: the per-conversation metrics in order, the judge's usage and
    telemetry, the turns judged, the judges' secrets (to keep masked) and when judging started."""

    conversations: Any
    """The per-conversation metrics in order; for a pass of batch judging, what it returned."""
    usage: Any
    telemetry: Any
    turns: int
    secrets: frozenset[str]
    started: float


def judge_datasets(
    settings: Settings,
    bucket: str,
    job_id: str,
    stored: dict[str, Any],
    datasets_of: Callable[[], list[Any]],
    context: Any,
    evaluation: Evaluation | None = None,
) -> Judged:
    """Judge a part of a job (a shard, or an adaptive round's attempts) with the job's stored
    connectors, by the core's `evaluate_conversations` with the same judge, retry policy and key
    rules as `/run`. `datasets_of()` gives the datasets, called with the judges' secrets masked.
    No new judge call starts after the Lambda's remaining time less
    `FAIR_FORGE_JOBS_WORKER_MARGIN_S`; turns left then are reported unscored, as `/run` reports
    them. A provider that refuses the key or model fails the job (`JobFailed`); a passing
    Secrets Manager failure (`ServerKeyUnavailable`) propagates, for the state machine's Retry.
    `evaluation(datasets, models, config, run_context)` is what judges them (default the core's
    `evaluate_conversations`; a pass of batch judging, `handler.job_batches`), and what it returns
    is `Judged.conversations`."""
    from fair_forge_core.evaluate import evaluate_conversations
    from fair_forge_core.judges.base import RunContext
    from fair_forge_core.schemas import EvaluationConfig

    config = EvaluationConfig.model_validate(stored["config"])
    specs, judges = job_judges(settings, bucket, job_id, stored, config)
    models = [judge.model for judge in judges]
    secrets = frozenset().union(*(judge.secrets for judge in judges))
    with secrets_masked(secrets):
        datasets = datasets_of()
        remaining = remaining_s(context)
        deadline = None
        if remaining is not None:
            deadline = time.monotonic() + max(remaining - settings.jobs_worker_margin_s, 0.0)
        ledger = shard_ledger(specs, models, config, settings, stored, job_id)
        turns = sum(len(d.conversation) for d in datasets)
        try:
            # The metrics, and a refused provider as the job's failure: `handler.judged_run`.
            with judged_run("evaluation", {"Conversations": len(datasets), "Turns": turns}, ledger) as judged:
                telemetry = judged.telemetry
                run_context = RunContext(
                    retry=settings.retry_policy(),
                    telemetry=telemetry,
                    deadline=deadline,
                    ledger=ledger,
                    secrets=secrets,
                )
                conversations = judged.run(
                    (evaluation or evaluate_conversations)(datasets, models, config, run_context)
                )
        except JudgedRunFailed as exc:
            raise fail(bucket, job_id, str(exc)) from None
    return Judged(conversations, ledger.summary(), telemetry, turns, secrets, judged.started)


def job_judges(
    settings: Settings, bucket: str, job_id: str, stored: dict[str, Any], config: Any
) -> tuple[list[Any], list[Any]]:
    """The job's stored connectors, decrypted (`ConnectorSpec`s), and their judges, built as `/run`
    builds them (`handler.connectors.judges_for_job`). A refused connector fails the job
    (`JobFailed`, its message safe to show: the core redacts it); `ServerKeyUnavailable` (a
    passing Secrets Manager failure) propagates, for the state machine's Retry."""
    from fair_forge_core.schemas import ConnectorSpec

    specs = [  # "connector": a job of an older version
        ConnectorSpec(
            class_path=connector["class_path"],
            params=store.decrypt_params(connector.get("params_ciphertext"), job_id, settings.jobs_kms_key_id),
        )
        for connector in stored.get("connectors") or [stored["connector"]]
    ]
    try:
        return specs, judges_for_job(specs, config, settings)  # `fair_forge_core.plan.build_judges`, as /run
    except ServerKeyUnavailable:
        raise
    except ConnectorError as exc:
        raise fail(bucket, job_id, f"{REFUSAL_PREFIX}{exc}") from None


def shard_ledger(
    specs: list[Any], models: list[Any], config: Any, settings: Settings, stored: dict[str, Any], job_id: str
) -> Any:
    """One shard's `JudgeLedger`, planned as `/run`'s is (`fair_forge_core.plan.plan_ledger`): the
    shard's tokens and cost (the reduce adds the shards' up); the job's cost cap as one budget
    shared by every shard (`handler.job_budget.DynamoBudget`); and the judge cache in the scope
    `POST /jobs` decided (`cache_scope`; None: not used), which the connectors are not asked again."""
    from fair_forge_core.plan import PlanError, plan_ledger
    from handler.job_budget import DynamoBudget
    from handler.judge_cache import open_cache

    budget = None
    if config.max_cost_usd is not None:
        if not settings.jobs_budget_table:  # POST /jobs refuses a cap without it: a deployment changed since
            raise fail(job_bucket(settings), job_id, "Agentic evaluation failed: the jobs budget table is gone")
        budget = DynamoBudget(settings.jobs_budget_table, job_id, config.max_cost_usd)
    scope = stored.get("cache_scope")
    cache = open_cache(settings.judge_cache) if scope and settings.judge_cache else None
    try:
        ledger, _ = plan_ledger(
            specs,
            config,
            models,
            prices=settings.price_table(),
            cache=cache,
            cache_scope=scope,
            budget=budget,
        )
    except PlanError as exc:  # POST /jobs planned the same cap: the job's own exception, as before plan.py
        raise exc.cause from None
    return ledger
