"""Asynchronous evaluation jobs on AWS Step Functions: `POST /jobs`, `GET /jobs/{id}`, and the job's two Lambdas.

A synchronous `/run` must answer within API Gateway's 29 s and 6 MB. A job has no such
bound: `POST /jobs` validates the request exactly as `/run` does (larger conversation
and turn limits aside), cuts it into shards (`fair_forge_core.sharding.plan_shards`),
writes everything to the jobs bucket and starts an execution of the state machine
(`statemachine/evaluation.asl.json`, a Standard workflow) named after the job id. Its
Distributed Map runs `worker_handler` once per shard; `reduce_handler` then combines
the shard results into exactly the response `/run` would have given.

S3 layout (the bucket expires it after the template's `JobRetentionDays`):

    jobs/<id>/request.json         connector class path, its params *encrypted with KMS*, config, counts
    jobs/<id>/shards/<n>.json      the raw datasets of shard n
    jobs/<id>/manifest.json        [{"job_id", "shard_key"}, ...], the Map's ItemReader
    jobs/<id>/results/<n>.json     shard n's per-conversation metrics (written by a worker)
    jobs/<id>/result.json          the /run response (written by the reduce)
    jobs/<id>/error.json           why the job cannot succeed (the provider refused, nothing scored)

The judge's key never reaches S3 in clear: `connector.params` as a whole (so a key in a
header or any other parameter is covered too) is encrypted with `kms:Encrypt` under the
encryption context `{"job_id": <id>}`; only the worker's role may decrypt. A request
without a key gets the server's key in the worker, under the same rules as `/run`
(`handler.connectors.build_judge`). SECURITY.md says why KMS rather than the alternatives.

Cold start: boto3 is imported on first use, not with `handler.app`.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from fair_forge_core.redact import redact
from fair_forge_core.schemas import input_warnings
from handler.connectors import ConnectorError, ServerKeyUnavailable, build_judge, judge_for_request
from handler.observability import current_secrets, logger, metrics, secrets_masked
from handler.settings import Settings
from handler.validation import RequestError, decode_body, parse_run_request

router = Router()

JOB_ID = re.compile(r"^[0-9a-f]{32}$")
KMS_MAX_PLAINTEXT_BYTES = 4096  # what one kms:Encrypt call takes
_IO_THREADS = 16  # S3 requests in flight when writing or reading shards

STATUS = {
    "RUNNING": "running",
    "PENDING_REDRIVE": "running",
    "SUCCEEDED": "succeeded",
    "FAILED": "failed",
    "TIMED_OUT": "failed",
    "ABORTED": "failed",
}


class JobFailed(Exception):
    """The job cannot succeed: retrying will not help. The state machine does not retry this
    error type (its `errorType` is this class's name), and GET /jobs/{id} shows the message."""


# --------------------------------------------------------------------------- S3 layout


def request_key(job_id: str) -> str:
    return f"jobs/{job_id}/request.json"


def manifest_key(job_id: str) -> str:
    return f"jobs/{job_id}/manifest.json"


def shard_key(job_id: str, index: int) -> str:
    return f"jobs/{job_id}/shards/{index:05d}.json"


def shard_result_key(shard: str) -> str:
    """Where the worker writes the result of shard `shard` (a key from `shard_key`)."""
    return shard.replace("/shards/", "/results/", 1)


def results_prefix(job_id: str) -> str:
    return f"jobs/{job_id}/results/"


def result_key(job_id: str) -> str:
    return f"jobs/{job_id}/result.json"


def error_key(job_id: str) -> str:
    return f"jobs/{job_id}/error.json"


def execution_arn(state_machine_arn: str, job_id: str) -> str:
    """The ARN of the job's execution: the state machine's, with `execution` and the job id."""
    return state_machine_arn.replace(":stateMachine:", ":execution:", 1) + ":" + job_id


# --------------------------------------------------------------------------- AWS clients


@functools.cache
def client(service: str) -> Any:
    """A boto3 client for `service`, made once per container (tests call `client.cache_clear()`)."""
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 5}, signature_version="s3v4")
    return boto3.client(service, config=config)


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code") or type(exc).__name__)
    return type(exc).__name__


@contextmanager
def _aws(what: str) -> Iterator[None]:
    """AWS errors in a request as a 503 that names the operation and the error code (never its text)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError) as exc:
        logger.error("AWS call failed", extra={"operation": what, "error_code": _error_code(exc)})
        raise RequestError(503, f"Job storage unavailable: {what} failed ({_error_code(exc)}); try again") from None


def _put(bucket: str, key: str, body: bytes | str) -> None:
    data = body.encode() if isinstance(body, str) else body
    client("s3").put_object(Bucket=bucket, Key=key, Body=data, ContentType="application/json")


def _get(bucket: str, key: str) -> bytes:
    return bytes(client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def _get_json(bucket: str, key: str) -> Any:
    return json.loads(_get(bucket, key))


def _is_missing(exc: Exception) -> bool:
    return _error_code(exc) in ("NoSuchKey", "404", "NotFound")


def _size(bucket: str, key: str) -> int | None:
    """The object's size in bytes, or None when there is no such object."""
    from botocore.exceptions import ClientError

    try:
        return int(client("s3").head_object(Bucket=bucket, Key=key)["ContentLength"])
    except ClientError as exc:
        if _is_missing(exc):
            return None
        raise


# --------------------------------------------------------------------------- the connector's params


def encrypt_params(params: dict[str, Any], job_id: str, key_id: str | None) -> str | None:
    """`params` as base64 KMS ciphertext bound to the job (encryption context), or None if empty."""
    if not params:
        return None
    if not key_id:
        raise RequestError(503, "Asynchronous jobs cannot store connector parameters here: JOBS_KMS_KEY_ID is not set")
    plaintext = json.dumps(params, separators=(",", ":")).encode()
    if len(plaintext) > KMS_MAX_PLAINTEXT_BYTES:
        raise RequestError(
            413,
            f"connector.params too large for a job: {len(plaintext)} bytes as JSON (limit {KMS_MAX_PLAINTEXT_BYTES})",
        )
    with _aws("kms:Encrypt"):
        blob = client("kms").encrypt(KeyId=key_id, Plaintext=plaintext, EncryptionContext={"job_id": job_id})
    return base64.b64encode(blob["CiphertextBlob"]).decode("ascii")


def decrypt_params(ciphertext: str | None, job_id: str, key_id: str | None) -> dict[str, Any]:
    """The inverse of `encrypt_params` (only the worker's role may call kms:Decrypt)."""
    if ciphertext is None:
        return {}
    arguments: dict[str, Any] = {
        "CiphertextBlob": base64.b64decode(ciphertext),
        "EncryptionContext": {"job_id": job_id},
    }
    if key_id:
        arguments["KeyId"] = key_id  # decrypt only with the key the template made
    params = json.loads(client("kms").decrypt(**arguments)["Plaintext"])
    if not isinstance(params, dict):
        raise JobFailed("the job's connector parameters are not an object")
    return params


# --------------------------------------------------------------------------- POST /jobs


def _require_jobs(settings: Settings) -> tuple[str, str]:
    if not (settings.jobs_bucket and settings.jobs_state_machine_arn):
        raise RequestError(
            503,
            "Asynchronous jobs are not enabled here (JOBS_BUCKET and JOBS_STATE_MACHINE_ARN are not set): "
            "use POST /run, or deploy with scripts/deploy.sh",
        )
    return settings.jobs_bucket, settings.jobs_state_machine_arn


def _request_id() -> str | None:
    event = router.current_event
    return event.request_context.request_id if event is not None else None


def _status_url(job_id: str) -> str:
    """The absolute URL of GET /jobs/{id} on this API's own domain and stage (or base path).

    Built from the request context, which API Gateway fills in (`domainName`, and `path`
    as requested: /<stage>/jobs on the execute-api domain, /<base path>/jobs on a custom
    domain), never from the caller's `Host` or `X-Forwarded-Proto`: a client must not
    make this API hand out links to another host. The local API has no stage and plain HTTP.
    """
    event = router.current_event
    path = f"/jobs/{job_id}"
    domain = event.request_context.domain_name
    if not domain:
        return path
    if urlsplit(f"//{domain}").hostname in ("127.0.0.1", "localhost", "::1"):
        return f"http://{domain}{path}"
    base = (event.request_context.path or "").removesuffix(event.path)
    return f"https://{domain}{base}{path}"


@router.post("/jobs")
def submit_job() -> Response:
    settings = Settings.from_env()
    bucket, state_machine_arn = _require_jobs(settings)
    event = router.current_event
    body = decode_body(event.body, bool(event.is_base64_encoded), settings)
    limits = replace(
        settings,
        max_conversations=settings.jobs_max_conversations,
        max_turns=settings.jobs_max_turns,
        max_tool_calls=settings.jobs_max_tool_calls,
    )
    request = parse_run_request(body, limits)
    # The connector is checked now, as /run does, not found wrong by every worker later.
    judge = judge_for_request(request.connector, settings)
    with secrets_masked(judge.secrets):
        job = create_job(body, request, settings, bucket, state_machine_arn)
    metrics.add_metric(name="Jobs", unit=MetricUnit.Count, value=1)
    status_url = _status_url(job["job_id"])
    payload = {
        "success": True,
        "job_id": job["job_id"],
        "status": "running",
        "status_url": status_url,
        "conversations": job["conversations"],
        "turns": job["turns"],
        "shards": job["shards"],
        "request_id": _request_id(),
    }
    return Response(
        status_code=202, content_type="application/json", body=json.dumps(payload), headers={"Location": status_url}
    )


def create_job(
    body: dict[str, Any], request: Any, settings: Settings, bucket: str, state_machine_arn: str
) -> dict[str, Any]:
    """Write the job's request, shards and manifest to S3 and start its execution; its summary."""
    from fair_forge_core.sharding import plan_shards

    job_id = uuid.uuid4().hex
    turn_counts = [len(d.conversation) for d in request.datasets]
    tool_call_counts = [sum(batch.tool_call_count() for batch in d.conversation) for d in request.datasets]
    # A shard scores at most as many tool calls as one /run may: its deterministic work is bounded alike.
    shards = plan_shards(
        turn_counts,
        settings.shard_size,
        settings.shard_max_turns,
        tool_call_counts=tool_call_counts,
        max_tool_calls_per_shard=settings.max_tool_calls,
    )
    raw_datasets = body["datasets"]  # validated: the workers validate the same JSON again, as /run would
    stored = {
        "job_id": job_id,
        "request_id": _request_id(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "connector": {
            "class_path": request.connector.class_path,
            "params_ciphertext": encrypt_params(request.connector.params, job_id, settings.jobs_kms_key_id),
        },
        "config": body.get("config") or {},
        "warnings": input_warnings(request.datasets),
        "conversations": len(turn_counts),
        "turns": sum(turn_counts),
        "shards": len(shards),
    }
    manifest = [{"job_id": job_id, "shard_key": shard_key(job_id, n)} for n in range(len(shards))]

    def write_shard(n: int) -> None:
        part = raw_datasets[shards[n].start : shards[n].stop]
        _put(bucket, shard_key(job_id, n), json.dumps(part, separators=(",", ":")))

    with _aws("s3:PutObject"), ThreadPoolExecutor(_IO_THREADS) as pool:
        list(pool.map(write_shard, range(len(shards))))
        _put(bucket, request_key(job_id), json.dumps(stored))
        _put(bucket, manifest_key(job_id), json.dumps(manifest))
    execution_input = {
        "job_id": job_id,
        "manifest_key": manifest_key(job_id),
        "max_parallel_shards": settings.jobs_max_parallel_shards,
        "shards": len(shards),
        "conversations": stored["conversations"],
    }
    with _aws("states:StartExecution"):
        client("stepfunctions").start_execution(
            stateMachineArn=state_machine_arn, name=job_id, input=json.dumps(execution_input)
        )
    logger.info(
        "job started",
        extra={
            "job_id": job_id,
            "conversations": stored["conversations"],
            "turns": stored["turns"],
            "shards": len(shards),
        },
    )
    return stored


# --------------------------------------------------------------------------- GET /jobs/{id}


@router.get("/jobs/<job_id>")
def job_status(job_id: str) -> Response:
    from botocore.exceptions import ClientError

    settings = Settings.from_env()
    bucket, state_machine_arn = _require_jobs(settings)
    if not JOB_ID.match(job_id):
        raise RequestError(404, "Not found: no job with that id (a job id is 32 lowercase hexadecimal characters)")
    with _aws("states:DescribeExecution"):
        try:
            execution = client("stepfunctions").describe_execution(
                executionArn=execution_arn(state_machine_arn, job_id)
            )
        except ClientError as exc:
            if _error_code(exc) != "ExecutionDoesNotExist":
                raise
            execution = None
    if execution is None:
        raise RequestError(404, f"Not found: no job {job_id}")
    status = STATUS.get(execution["status"], "running")
    execution_input = json.loads(execution.get("input") or "{}")
    total = int(execution_input.get("shards", 0))
    payload: dict[str, Any] = {
        "success": True,
        "job_id": job_id,
        "status": status,
        "submitted_at": _timestamp(execution.get("startDate")),
        "finished_at": _timestamp(execution.get("stopDate")),
        "progress": {
            "shards_done": total if status == "succeeded" else _shards_done(bucket, job_id),
            "shards_total": total,
            "conversations": execution_input.get("conversations"),
        },
        "error": None,
        "result_url": None,
        "result_url_expires_in": None,
        "result_bytes": None,
        "request_id": _request_id(),
    }
    if status == "failed":
        payload["error"] = _failure_cause(bucket, job_id, execution)
    inline: bytes | None = None
    if status == "succeeded":
        with _aws("s3:GetObject"):
            size = _size(bucket, result_key(job_id))
            if size is None:
                payload["error"] = "the result has expired (job data is kept for a limited time)"
            elif size <= settings.jobs_inline_result_bytes:
                inline = _get(bucket, result_key(job_id))
                payload["result_bytes"] = size
            else:
                payload["result_bytes"] = size
                payload["result_url"] = client("s3").generate_presigned_url(
                    "get_object",
                    Params={"Bucket": bucket, "Key": result_key(job_id)},
                    ExpiresIn=settings.jobs_result_url_expiry_s,
                )
                payload["result_url_expires_in"] = settings.jobs_result_url_expiry_s
    body = json.dumps({**payload, "result": None})
    if inline is not None:  # spliced in as it is: no need to parse and re-serialise megabytes
        body = body[: -len('"result": null}')] + '"result": ' + inline.decode("utf-8") + "}"
    return Response(status_code=200, content_type="application/json", body=body)


def _timestamp(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def _shards_done(bucket: str, job_id: str) -> int:
    with _aws("s3:ListObjectsV2"):
        pages = client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=results_prefix(job_id))
        return sum(int(page.get("KeyCount", 0)) for page in pages)


def _recorded_failure(bucket: str, job_id: str) -> str | None:
    """The reason a worker or the reduce recorded in error.json, if any."""
    from botocore.exceptions import ClientError

    try:
        return str(_get_json(bucket, error_key(job_id))["error"])
    except ClientError as exc:
        if not _is_missing(exc):
            logger.warning("error.json unreadable", extra={"error_code": _error_code(exc)})
    except (ValueError, KeyError, TypeError):
        pass
    return None


def _failure_cause(bucket: str, job_id: str, execution: dict[str, Any]) -> str:
    """Why the job failed, without stack traces: the job's own error.json, else the execution's error."""
    recorded = _recorded_failure(bucket, job_id)
    if recorded is not None:
        return recorded
    error = execution.get("error") or execution["status"]
    cause = execution.get("cause") or ""
    try:  # a Lambda error's cause is its payload: keep its type and message, drop its stackTrace
        parsed = json.loads(cause)
        if isinstance(parsed, dict) and "errorMessage" in parsed:
            cause = f"{parsed.get('errorType', 'Error')}: {parsed['errorMessage']}"
    except ValueError:
        pass
    text = f"{error}: {cause}" if cause else str(error)
    return redact(text, current_secrets())[:1000]


# --------------------------------------------------------------------------- the state machine's Lambdas


def _job_bucket() -> str:
    bucket = Settings.from_env().jobs_bucket
    if not bucket:
        raise RuntimeError("JOBS_BUCKET is not set")
    return bucket


def _valid_job_id(value: Any) -> str:
    if not isinstance(value, str) or not JOB_ID.match(value):
        raise JobFailed("the event has no valid job_id")
    return value


def _fail(bucket: str, job_id: str, message: str) -> JobFailed:
    """Record why the job cannot succeed (for GET /jobs/{id}) and return the error to raise."""
    message = redact(message, current_secrets())
    logger.error("job failed", extra={"reason": message})
    try:
        _put(bucket, error_key(job_id), json.dumps({"error": message}))
    except Exception as exc:  # the failure itself still reaches Step Functions
        logger.warning("error.json not written", extra={"error_code": _error_code(exc)})
    return JobFailed(message)


def _remaining_s(context: Any) -> float | None:
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
    bucket = _job_bucket()
    job_id = _valid_job_id(event.get("job_id"))
    shard = event.get("shard_key")
    if not isinstance(shard, str) or not re.fullmatch(rf"jobs/{job_id}/shards/\d+\.json", shard):
        raise JobFailed("the event's shard_key is not a shard of its job")
    logger.append_keys(job_id=job_id, shard_key=shard)
    metrics.add_metric(name="Shards", unit=MetricUnit.Count, value=1)
    target = shard_result_key(shard)
    if _size(bucket, target) is not None:  # an attempt that wrote its result and failed after: done
        logger.info("shard already evaluated")
        return {"job_id": job_id, "shard_key": shard, "conversations": None, "skipped": True}
    # No pause of garbage collection here (unlike the reduce): a worker waits on the
    # network for minutes, and every retried call leaves a reference cycle.
    return _evaluate_shard(settings, bucket, job_id, shard, target, context)


def _evaluate_shard(
    settings: Settings, bucket: str, job_id: str, shard: str, target: str, context: Any
) -> dict[str, Any]:
    from fair_forge_core.evaluate import evaluate_conversations, run_sync
    from fair_forge_core.judges.llm import JudgeProviderRefused, JudgeTelemetry
    from fair_forge_core.schemas import Dataset, EvaluationConfig
    from fair_forge_core.sharding import dump_conversations

    stored = _get_json(bucket, request_key(job_id))
    params = decrypt_params(stored["connector"].get("params_ciphertext"), job_id, settings.jobs_kms_key_id)
    try:
        judge = build_judge(stored["connector"]["class_path"], params, settings)
    except ServerKeyUnavailable:
        raise  # a passing Secrets Manager failure: the state machine's Retry gets another go
    except ConnectorError as exc:  # its message is safe to show (the core redacts it)
        raise _fail(bucket, job_id, f"Failed to create LLM connector: {exc}") from None
    with secrets_masked(judge.secrets):
        datasets = [Dataset.model_validate(d) for d in _get_json(bucket, shard)]
        config = EvaluationConfig.model_validate(stored["config"])
        remaining = _remaining_s(context)
        deadline = None
        if remaining is not None:
            deadline = time.monotonic() + max(remaining - settings.jobs_worker_margin_s, 0.0)
        telemetry = JudgeTelemetry()
        started = time.perf_counter()
        try:
            conversations = run_sync(
                evaluate_conversations(
                    datasets,
                    judge.model,
                    config,
                    deadline=deadline,
                    retry=settings.retry_policy(),
                    telemetry=telemetry,
                )
            )
        except JudgeProviderRefused as exc:
            raise _fail(bucket, job_id, f"Agentic evaluation failed: {exc}") from None
        _put(bucket, target, dump_conversations(conversations))
    unscored = sum(1 for c in conversations if not c.is_scored)
    turns = sum(len(d.conversation) for d in datasets)
    metrics.add_metric(name="Conversations", unit=MetricUnit.Count, value=len(conversations))
    metrics.add_metric(name="Turns", unit=MetricUnit.Count, value=turns)
    metrics.add_metric(name="JudgeCalls", unit=MetricUnit.Count, value=telemetry.calls)
    metrics.add_metric(name="JudgeErrors", unit=MetricUnit.Count, value=telemetry.errors)
    logger.info(
        "shard evaluated",
        extra={
            "conversations": len(conversations),
            "turns": turns,
            "unscored_conversations": unscored,
            "judge_calls": telemetry.calls,
            "judge_errors": telemetry.errors,
            "duration_ms": round((time.perf_counter() - started) * 1000),
        },
    )
    return {"job_id": job_id, "shard_key": shard, "conversations": len(conversations), "unscored": unscored}


@logger.inject_lambda_context(clear_state=True)
def reduce_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """`{"job_id"}` in: every shard's result, in manifest order, combined into the /run response
    (`fair_forge_core.sharding.reduce_shards`) and written to `result.json`.

    The response carries the `request_id` of the POST /jobs that started it and the `job_id`.
    If no conversation could be scored, the job fails (`JobFailed`) with /run's 502 message.
    """
    from fair_forge_core.evaluate import NoConversationScored
    from fair_forge_core.schemas import EvaluationConfig
    from fair_forge_core.sharding import load_conversations, reduce_shards
    from handler.app import _gc_paused, _json_body

    bucket = _job_bucket()
    job_id = _valid_job_id(event.get("job_id"))
    logger.append_keys(job_id=job_id)
    started = time.perf_counter()
    with _gc_paused():
        stored = _get_json(bucket, request_key(job_id))
        manifest = _get_json(bucket, manifest_key(job_id))
        keys = [shard_result_key(item["shard_key"]) for item in manifest]
        config = EvaluationConfig.model_validate(stored["config"])

        def fetch(key: str) -> bytes:
            try:
                return _get(bucket, key)
            except Exception as exc:
                if not _is_missing(exc):
                    raise
            # A shard without a result: its worker failed. (On AWS the Map fails first and the reduce never
            # runs; an emulator that tolerates failed items, as moto's does, gets here.) Its reason stands.
            recorded = _recorded_failure(bucket, job_id)
            if recorded is not None:
                raise JobFailed(recorded)
            raise _fail(bucket, job_id, f"Agentic evaluation failed: internal error (no result for {key})")

        with ThreadPoolExecutor(_IO_THREADS) as pool:
            try:  # map keeps the manifest's order, which is the request's order of conversations
                result = reduce_shards(
                    (load_conversations(data) for data in pool.map(fetch, keys)), config, stored.get("warnings", [])
                )
            except NoConversationScored as exc:
                raise _fail(bucket, job_id, f"Agentic evaluation failed: {exc}") from None
        body = _json_body(result, stored.get("request_id"), job_id=job_id)
        _put(bucket, result_key(job_id), body)
    conversations = len(result.per_conversation_metrics)
    logger.info(
        "job reduced",
        extra={
            "shards": len(keys),
            "conversations": conversations,
            "result_bytes": len(body),
            "duration_ms": round((time.perf_counter() - started) * 1000),
            "interpretation": result.aggregated_metrics.interpretation,
        },
    )
    return {"job_id": job_id, "result_key": result_key(job_id), "conversations": conversations}
