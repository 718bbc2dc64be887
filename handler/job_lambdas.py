"""The Lambdas of a job's state machine (`statemachine/evaluation.asl.json`): the worker,
run once per shard by the Distributed Map, and the reduce, run once at the end.

Both are the service's image with another handler (`template.yaml`: `WorkerFunction`,
`ReduceFunction`); the job's objects are read and written through `handler.job_store`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from handler import job_store as store
from handler.invocation import gc_paused
from handler.job_judging import Judged, fail, job_bucket, judge_datasets
from handler.job_store import JobFailed, JobKeys
from handler.observability import logger, metrics, readiness_fields, secrets_masked
from handler.responses import JobResult
from handler.settings import Settings

Settings.from_env()  # a malformed variable fails the cold start, named, rather than every shard


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def worker_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One shard: `{"job_id", "shard_key"}` in, `results/<n>.json` written, a small summary out.

    The shard's turns are judged by the core's `evaluate_conversations` with the same judge, retry
    policy and key rules as `/run`. No new judge call starts after the Lambda's remaining
    time less `FAIR_FORGE_JOBS_WORKER_MARGIN_S`; turns left then are reported unscored, as
    `/run` reports them. A provider that refuses the key or model fails the job (`JobFailed`,
    not retried); any other exception fails this attempt, and the state machine retries it.

    Under `config.judge_batch` the event's `phase` says which step of batch judging this is
    (`handler.job_batches`): "evaluate" (absent: the first) submits the shard's judge calls,
    "poll" reads the batches, "collect" judges the shard from their answers. Every answer has
    `batch`, `poll_s` and `ended`, which the state machine reads to go on.
    """
    from handler import job_batches

    settings = Settings.from_env()
    bucket = job_bucket(settings)
    job_id = store.valid_job_id(event.get("job_id"))
    keys = JobKeys(job_id)
    shard = event.get("shard_key")
    index = keys.shard_index(shard)
    phase = event.get("phase", "evaluate")
    logger.append_keys(job_id=job_id, shard_key=shard, phase=phase)
    if phase == "evaluate":  # once a shard: a batch shard's poll and collect are the same shard
        metrics.add_metric(name="Shards", unit=MetricUnit.Count, value=1)
    answer = {"job_id": job_id, "shard_key": shard, "conversations": None, "batch": False, "poll_s": 0, "ended": True}
    target = keys.shard_result(index)
    if store.size(bucket, target) is not None:  # an attempt that wrote its result and failed after: done
        logger.info("shard already evaluated")
        return {**answer, "skipped": True}
    if phase == "poll":
        return {**answer, **job_batches.poll_shard(settings, bucket, keys, index, event.get("poll_s"))}
    stored = store.get_json(bucket, keys.request)
    datasets_of = _shard_datasets(bucket, keys.shard(index))
    if phase == "evaluate" and stored["config"].get("judge_batch"):
        return {**answer, **job_batches.submit_shard(settings, bucket, keys, index, datasets_of, context)}
    if phase == "collect":
        judged = job_batches.collect_shard(settings, bucket, keys, index, datasets_of, context)
        written = _write_shard(bucket, keys, index, target, judged)
        job_batches.give_back(settings, bucket, keys, index, judged)
        return {**answer, **written}
    # No pause of garbage collection here (unlike the reduce): a worker waits on the
    # network for minutes, and every retried call leaves a reference cycle.
    judged = judge_datasets(settings, bucket, job_id, stored, datasets_of, context)
    return {**answer, **_write_shard(bucket, keys, index, target, judged)}


def _shard_datasets(bucket: str, key: str) -> Callable[[], list[Any]]:
    """A reader of the shard's datasets (called once its judges' secrets are masked)."""
    from fair_forge_core.schemas import Dataset

    return lambda: [Dataset.model_validate(d) for d in store.get_json(bucket, key)]


def _write_shard(bucket: str, keys: JobKeys, index: int, target: str, judged: Judged) -> dict[str, Any]:
    """Write a judged shard's usage, then its result; log it; its summary for the state machine."""
    from fair_forge_core.sharding import dump_conversations

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
    return {"conversations": len(conversations), "unscored": unscored}


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

    bucket = job_bucket(Settings.from_env())
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
