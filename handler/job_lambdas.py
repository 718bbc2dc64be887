"""The Lambdas of a job's state machine (`statemachine/evaluation.asl.json`): the worker,
run once per shard by the Distributed Map, and the reduce, run once at the end.

Both are the service's image with another handler (`template.yaml`: `WorkerFunction`,
`ReduceFunction`); the job's objects are read and written through `handler.job_store`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from fair_forge_core.connectors import REFUSAL_PREFIX
from fair_forge_core.redact import redact
from handler import job_store as store
from handler.connectors import ConnectorError, ServerKeyUnavailable, judges_for_job
from handler.invocation import gc_paused
from handler.job_store import JobFailed, JobKeys
from handler.judged_run import JudgedRunFailed, judged_run
from handler.observability import current_secrets, logger, metrics, readiness_fields, secrets_masked
from handler.responses import JobResult
from handler.settings import Settings

Settings.from_env()  # a malformed variable fails the cold start, named, rather than every shard


def _job_bucket(settings: Settings) -> str:
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


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def worker_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One shard: `{"job_id", "shard_key"}` in, `results/<n>.json` written, a small summary out.

    The shard's turns are judged by the core's `evaluate_conversations` with the same judge, retry
    policy and key rules as `/run`. No new judge call starts after the Lambda's remaining
    time less `FAIR_FORGE_JOBS_WORKER_MARGIN_S`; turns left then are reported unscored, as
    `/run` reports them. A provider that refuses the key or model fails the job (`JobFailed`,
    not retried); any other exception fails this attempt, and the state machine retries it.
    """
    settings = Settings.from_env()
    bucket = _job_bucket(settings)
    job_id = store.valid_job_id(event.get("job_id"))
    keys = JobKeys(job_id)
    shard = event.get("shard_key")
    index = keys.shard_index(shard)
    logger.append_keys(job_id=job_id, shard_key=shard)
    metrics.add_metric(name="Shards", unit=MetricUnit.Count, value=1)
    target = keys.shard_result(index)
    if store.size(bucket, target) is not None:  # an attempt that wrote its result and failed after: done
        logger.info("shard already evaluated")
        return {"job_id": job_id, "shard_key": shard, "conversations": None, "skipped": True}
    # No pause of garbage collection here (unlike the reduce): a worker waits on the
    # network for minutes, and every retried call leaves a reference cycle.
    return _evaluate_shard(settings, bucket, keys, index, target, context)


def _evaluate_shard(
    settings: Settings, bucket: str, keys: JobKeys, index: int, target: str, context: Any
) -> dict[str, Any]:
    from fair_forge_core.schemas import Dataset
    from fair_forge_core.sharding import dump_conversations

    job_id = keys.job_id
    shard = keys.shard(index)
    stored = store.get_json(bucket, keys.request)
    judged = judge_datasets(
        settings,
        bucket,
        job_id,
        stored,
        lambda: [Dataset.model_validate(d) for d in store.get_json(bucket, shard)],
        context,
    )
    with secrets_masked(judged.secrets):
        store.put(bucket, keys.shard_usage(index), judged.usage.model_dump_json().encode())  # before the result
        store.put(bucket, target, dump_conversations(judged.conversations))
    conversations = judged.conversations
    unscored = sum(1 for c in conversations if not c.is_scored)
    logger.info(
        "shard evaluated",
        extra={
            "conversations": len(conversations),
            "turns": judged.turns,
            "unscored_conversations": unscored,
            "judge_calls": judged.telemetry.calls,
            "judge_errors": judged.telemetry.errors,
            "judge_input_tokens": judged.usage.input_tokens,
            "judge_output_tokens": judged.usage.output_tokens,
            "judge_cost_usd": judged.usage.cost_usd,
            "duration_ms": round((time.perf_counter() - judged.started) * 1000),  # the shard written too
        },
    )
    return {"job_id": job_id, "shard_key": shard, "conversations": len(conversations), "unscored": unscored}


@dataclass(frozen=True)
class Judged:
    """What `judge_datasets` gives: the per-conversation metrics in order, the judge's usage and
    telemetry, the turns judged, the judges' secrets (to keep masked) and when judging started."""

    conversations: list[Any]
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
) -> Judged:
    """Judge a part of a job (a shard, or an adaptive round's attempts) with the job's stored
    connectors, by the core's `evaluate_conversations` with the same judge, retry policy and key
    rules as `/run`. `datasets_of()` gives the datasets, called with the judges' secrets masked.
    No new judge call starts after the Lambda's remaining time less
    `FAIR_FORGE_JOBS_WORKER_MARGIN_S`; turns left then are reported unscored, as `/run` reports
    them. A provider that refuses the key or model fails the job (`JobFailed`); a passing
    Secrets Manager failure (`ServerKeyUnavailable`) propagates, for the state machine's Retry."""
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
                conversations = judged.run(evaluate_conversations(datasets, models, config, run_context))
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
            raise fail(_job_bucket(settings), job_id, "Agentic evaluation failed: the jobs budget table is gone")
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


@logger.inject_lambda_context(clear_state=True)
def reduce_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """`{"job_id"}` in: every shard's result, in manifest order, combined into the /run response
    (`fair_forge_core.sharding.reduce_shards`) and written to `result.json`; the shards' judge
    usage added up into its `judge_usage` (`judges.usage.total_usage`).

    The response carries the `request_id` of the POST /jobs that started it and the `job_id`; when
    the recording's attempts were adaptive (`recorded_attempts`: a request's `attempts`, or what an
    agent job's run decided), `aggregated_metrics.adaptive` as `/run` gives it.
    If no conversation could be scored, the job fails (`JobFailed`) with /run's 502 message.
    """
    from fair_forge_core.evaluate import NoConversationScored
    from fair_forge_core.judges.usage import total_usage
    from fair_forge_core.schemas import EvaluationConfig, Provenance
    from fair_forge_core.schemas.result import JudgeUsage
    from fair_forge_core.sharding import load_conversations, reduce_shards

    bucket = _job_bucket(Settings.from_env())
    job_id = store.valid_job_id(event.get("job_id"))
    keys = JobKeys(job_id)
    logger.append_keys(job_id=job_id)
    started = time.perf_counter()
    with gc_paused():
        stored = store.get_json(bucket, keys.request)
        manifest = store.get_json(bucket, keys.manifest)
        indices = [keys.shard_index(item["shard_key"]) for item in manifest]
        results = [keys.shard_result(index) for index in indices]
        config = EvaluationConfig.model_validate(stored["config"])

        def fetch_usage(index: int) -> JudgeUsage | None:
            """A shard's judge usage; None for a shard a worker of an older version evaluated."""
            try:
                return JudgeUsage.model_validate_json(store.get(bucket, keys.shard_usage(index)))
            except Exception as exc:
                if store.is_missing(exc):
                    return None
                raise

        def fetch(key: str) -> bytes:
            try:
                return store.get(bucket, key)
            except Exception as exc:
                if not store.is_missing(exc):
                    raise
            # A shard without a result: its worker failed. (On AWS the Map fails first and the reduce never
            # runs; an emulator that tolerates failed items, as moto's does, gets here.) Its reason stands.
            recorded = store.recorded_failure(bucket, job_id)
            if recorded is not None:
                raise JobFailed(recorded)
            raise fail(bucket, job_id, f"Agentic evaluation failed: internal error (no result for {key})")

        with ThreadPoolExecutor(store.IO_THREADS) as pool:
            try:  # map keeps the manifest's order, which is the request's order of conversations
                result = reduce_shards(
                    (load_conversations(data) for data in pool.map(fetch, results)),
                    config,
                    stored.get("warnings", []),
                )
            except NoConversationScored as exc:
                raise fail(bucket, job_id, f"Agentic evaluation failed: {exc}") from None
            usages = list(pool.map(fetch_usage, indices))
        recorded = stored.get("recorded_attempts")
        if recorded is not None:  # as /run: `plan.execute` adds it from `RunRequest.attempts`
            from fair_forge_core.adaptive_result import with_adaptive
            from fair_forge_core.schemas import AdaptiveAttempts

            result = with_adaptive(result, AdaptiveAttempts.model_validate(recorded))
        if stored.get("judged_in_rounds"):  # an adaptive agent job: its rounds were judged, usage in shard 0's
            usages = [usage for usage in usages if usage is not None]
        if usages and all(usage is not None for usage in usages):
            result.aggregated_metrics.judge_usage = total_usage([usage for usage in usages if usage is not None])
        if stored.get("provenance"):  # None for a job stored by an older version
            result.provenance = Provenance.model_validate(stored["provenance"])
        body = JobResult.of(result, stored.get("request_id"), job_id=job_id).model_dump_json()
        store.put(bucket, keys.result, body)
    conversations = len(result.per_conversation_metrics)
    logger.info(
        "job reduced",
        extra={
            "shards": len(results),
            "conversations": conversations,
            "result_bytes": len(body),
            "duration_ms": round((time.perf_counter() - started) * 1000),
            "interpretation": result.aggregated_metrics.interpretation,
            **readiness_fields(result.aggregated_metrics.readiness),
        },
    )
    return {"job_id": job_id, "result_key": keys.result, "conversations": conversations}
