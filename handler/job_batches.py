"""A shard judged through the provider's batch API (`config.judge_batch`; docs/jobs.md "Batch
judging"): the worker's three phases, each one invocation of `handler.job_lambdas.worker_handler`
(`statemachine/evaluation.asl.json`: EvaluateShard, PollBatch, CollectBatch).

- **submit** (phase "evaluate" of a batch job): the submit pass over the shard
  (`fair_forge_core.batch_run.submit_evaluation`) sends its judge calls as batches, and what it
  sent is written to `batches/<n>.json` with when; the cap's reservations stay in the job's
  budget. A retried invocation that finds the file does not submit again.
- **poll**: where the shard's batches stand; `ended` once every one has (a passing failure of
  the provider's API reads as not ended: the next poll asks again); past
  `FAIR_FORGE_JOBS_BATCH_DEADLINE_S` after the submission the batches still validating or in
  progress are cancelled (what they answered stays). The next wait is 1.5 times this one, at
  most `FAIR_FORGE_JOBS_BATCH_MAX_POLL_S`.
- **collect**: the collect pass (`collect_evaluation`) judges the shard from the answers, and its
  result and usage are written as any shard's; then what the cap reserved beyond what the
  answers cost goes back to the job's budget, for the shards still submitting, and the batches'
  files are deleted from the provider (`give_back`).

Before its first submission a shard writes when it began (`batches/<n>.attempt.json`). A retried
invocation that finds that but not `batches/<n>.json` (the worker died between creating its
batches and writing the file) takes the batches the dead attempt created, found by the job and
the shard in their metadata (`judges.batch_api.submit_lines`), and sends only the lines none of
them holds; the dead attempt's cap reservations stay held (the cap still holds).
"""

from __future__ import annotations

import json
import time
from typing import Any

from handler import job_store as store
from handler.job_judging import Judged, job_judges, judge_datasets
from handler.job_store import JobKeys
from handler.observability import logger
from handler.settings import Settings


def _stored_batch(bucket: str, keys: JobKeys, index: int) -> tuple[Any, float] | None:
    """The shard's `BatchSubmission` and when it was submitted (epoch seconds), if it was."""
    from fair_forge_core.judges.batch import BatchSubmission

    if store.size(bucket, keys.shard_batch(index)) is None:
        return None
    data = store.get_json(bucket, keys.shard_batch(index))
    return BatchSubmission.model_validate(data["submission"]), float(data["submitted_at"])


def _earlier_attempt(bucket: str, keys: JobKeys, index: int) -> float | None:
    """When an earlier attempt of the shard began to submit (less `batch_api.CLOCK_SKEW_S`), None
    for the first attempt, which writes when it begins (module docstring)."""
    from fair_forge_core.judges.batch_api import CLOCK_SKEW_S

    if store.size(bucket, keys.shard_batch_attempt(index)) is None:
        store.put(bucket, keys.shard_batch_attempt(index), json.dumps({"started_at": time.time()}))
        return None
    return float(store.get_json(bucket, keys.shard_batch_attempt(index))["started_at"]) - CLOCK_SKEW_S


def submit_shard(
    settings: Settings, bucket: str, keys: JobKeys, index: int, datasets_of: Any, context: Any
) -> dict[str, Any]:
    """Phase "evaluate" of a batch job (module docstring): the answer's `poll_s` is the first wait."""
    from fair_forge_core.batch_run import submit_evaluation

    if _stored_batch(bucket, keys, index) is None:
        stored = store.get_json(bucket, keys.request)
        metadata = {"fair_forge_job": keys.job_id, "fair_forge_shard": str(index)}
        since = _earlier_attempt(bucket, keys, index)

        def submit(datasets: Any, models: Any, config: Any, run_context: Any) -> Any:
            return submit_evaluation(datasets, models, config, run_context, metadata, since)

        judged = judge_datasets(settings, bucket, keys.job_id, stored, datasets_of, context, submit)
        submission = judged.conversations
        record = {"submission": submission.model_dump(mode="json"), "submitted_at": time.time()}
        store.put(bucket, keys.shard_batch(index), json.dumps(record))
        logger.info(
            "shard submitted to the batch API",
            extra={
                "batches": sum(len(part.batch_ids) for part in submission.models),
                "judge_calls": sum(len(part.submitted) for part in submission.models),
                "reserved_usd": submission.reserved_usd,
            },
        )
    submission = _submission(bucket, keys, index)
    nothing_sent = not any(part.batch_ids for part in submission.models)  # the cap, the cache: no batch
    return {"batch": True, "poll_s": 0 if nothing_sent else settings.jobs_batch_poll_s, "ended": False}


def poll_shard(settings: Settings, bucket: str, keys: JobKeys, index: int, last_wait_s: Any) -> dict[str, Any]:
    """Phase "poll" (module docstring): `ended`, and the next wait after `last_wait_s`."""
    from fair_forge_core.batch_run import answered_counts, batch_progress, cancel_submission
    from fair_forge_core.evaluate import run_sync
    from fair_forge_core.judges.batch_api import BatchError
    from fair_forge_core.schemas import EvaluationConfig

    found = _stored_batch(bucket, keys, index)
    if found is None:
        raise RuntimeError("the shard has no batch to poll")
    submission, submitted_at = found
    stored = store.get_json(bucket, keys.request)
    config = EvaluationConfig.model_validate(stored["config"])
    _, judges = job_judges(settings, bucket, keys.job_id, stored, config)
    models = [judge.model for judge in judges]
    try:
        states = run_sync(batch_progress(models, submission))
    except BatchError as exc:  # a provider's passing failure: the next poll asks again
        logger.warning("shard batch not polled", extra={"error": str(exc)})
        states = None
    ended = states is not None and all(state.ended for state in states)
    late = time.time() - submitted_at >= settings.jobs_batch_deadline_s
    if late and not ended:
        run_sync(cancel_submission(models, submission))
    counts = answered_counts(states) if states is not None else {}
    logger.info("shard batch polled", extra={**counts, "ended": ended, "past_deadline": late})
    previous = last_wait_s if isinstance(last_wait_s, int) and last_wait_s > 0 else settings.jobs_batch_poll_s
    next_wait = min(max(1, round(previous * 1.5)), settings.jobs_batch_max_poll_s)
    return {"batch": True, "poll_s": next_wait, "ended": ended}


def collect_shard(settings: Settings, bucket: str, keys: JobKeys, index: int, datasets_of: Any, context: Any) -> Judged:
    """Phase "collect" (module docstring): the shard judged from its batches' answers."""
    from fair_forge_core.batch_run import collect_evaluation

    submission = _submission(bucket, keys, index)
    stored = store.get_json(bucket, keys.request)

    def collect(datasets: Any, models: Any, config: Any, run_context: Any) -> Any:
        return collect_evaluation(datasets, models, config, run_context, submission)

    return judge_datasets(settings, bucket, keys.job_id, stored, datasets_of, context, collect)


def give_back(settings: Settings, bucket: str, keys: JobKeys, index: int, judged: Judged) -> None:
    """After the shard's result is written: release what the cap reserved for its lines beyond
    what their answers cost, and delete its batches' files from the provider (best effort). A
    retried collect finds the result and stops before this, so nothing is given back twice; a
    collect that dies in between gives nothing back, which only leaves the other shards less."""
    from fair_forge_core.batch_run import delete_submission_files
    from fair_forge_core.evaluate import run_sync
    from fair_forge_core.schemas import EvaluationConfig
    from handler.job_budget import DynamoBudget

    submission = _submission(bucket, keys, index)
    stored = store.get_json(bucket, keys.request)
    cap = stored["config"].get("max_cost_usd")
    if cap is not None and settings.jobs_budget_table and submission.reserved_usd:
        spent = judged.usage.cost_usd if judged.usage.cost_usd is not None else submission.reserved_usd
        budget = DynamoBudget(settings.jobs_budget_table, keys.job_id, cap)
        run_sync(budget.settle(submission.reserved_usd, min(spent, submission.reserved_usd)))
    _, judges = job_judges(settings, bucket, keys.job_id, stored, EvaluationConfig.model_validate(stored["config"]))
    run_sync(delete_submission_files([judge.model for judge in judges], submission))


def _submission(bucket: str, keys: JobKeys, index: int) -> Any:
    found = _stored_batch(bucket, keys, index)
    if found is None:
        raise RuntimeError("the shard has no batch to collect")
    return found[0]
