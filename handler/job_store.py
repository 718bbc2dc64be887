"""Where a job lives: its S3 objects, the encryption of its connector's params, its execution.

S3 layout (the bucket expires it after the template's `JobRetentionDays`); `JobKeys` is
the only place that spells these keys:

    jobs/<id>/request.json         connector class path, its params *encrypted with KMS*, config, counts
    jobs/<id>/shards/<n>.json      the raw datasets of shard n
    jobs/<id>/manifest.json        [{"job_id", "shard_key"}, ...], the Map's ItemReader
    jobs/<id>/results/<n>.json     shard n's per-conversation metrics (written by a worker)
    jobs/<id>/result.json          the /run response (written by the reduce)
    jobs/<id>/error.json           why the job cannot succeed (the provider refused, nothing scored)

A job that runs an agent (docs/jobs.md "Run the agent from a job") starts with no shards; beside
`request.json` (which then holds the agent, never its credential, and the attempts asked for):

    jobs/<id>/tasks.json           the tasks the agent is run on
    jobs/<id>/attempts/<n>.json    the n-th call of the attempts Lambda: the attempts it recorded
    jobs/<id>/agent_run.json       what the run did (attempts, failures by cause, the agent's cost,
                                   the adaptive per-task report), written with the shards and manifest

The judge's key never reaches S3 in clear: `connector.params` as a whole (so a key in a
header or any other parameter is covered too) is encrypted with `kms:Encrypt` under the
encryption context `{"job_id": <id>}`; only the worker's role may decrypt. SECURITY.md
says why KMS rather than the alternatives.

Cold start: boto3 is imported on first use, not with `handler.app`.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fair_forge_core.schemas import input_warnings
from handler.observability import logger
from handler.settings import Settings
from handler.validation import RequestError

JOB_ID = re.compile(r"^[0-9a-f]{32}$")
KMS_MAX_PLAINTEXT_BYTES = 4096  # what one kms:Encrypt call takes
IO_THREADS = 16  # S3 requests in flight when writing or reading shards


class JobFailed(Exception):
    """The job cannot succeed: retrying will not help. The state machine does not retry this
    error type (its `errorType` is this class's name), and GET /jobs/{id} shows the message."""


@dataclass(frozen=True)
class JobKeys:
    """The S3 keys of one job (the layout in the module docstring)."""

    job_id: str

    @property
    def prefix(self) -> str:
        return f"jobs/{self.job_id}/"

    @property
    def request(self) -> str:
        return f"{self.prefix}request.json"

    @property
    def manifest(self) -> str:
        return f"{self.prefix}manifest.json"

    @property
    def result(self) -> str:
        return f"{self.prefix}result.json"

    @property
    def error(self) -> str:
        return f"{self.prefix}error.json"

    @property
    def results_prefix(self) -> str:
        return f"{self.prefix}results/"

    def shard(self, index: int) -> str:
        return f"{self.prefix}shards/{index:05d}.json"

    def shard_result(self, index: int) -> str:
        return f"{self.results_prefix}{index:05d}.json"

    def shard_usage(self, index: int) -> str:
        """The judge usage of shard `index` (`JudgeUsage` JSON), written before its result."""
        return f"{self.prefix}usage/{index:05d}.json"

    def shard_batch(self, index: int) -> str:
        """What shard `index` sent to the provider's batch API (`handler.job_batches`)."""
        return f"{self.prefix}batches/{index:05d}.json"

    def shard_batch_attempt(self, index: int) -> str:
        """When shard `index` first began to submit to the provider's batch API (`handler.job_batches`)."""
        return f"{self.prefix}batches/{index:05d}.attempt.json"

    @property
    def tasks(self) -> str:
        return f"{self.prefix}tasks.json"

    @property
    def attempts_prefix(self) -> str:
        return f"{self.prefix}attempts/"

    def attempts_chunk(self, index: int) -> str:
        """The attempts recorded by the `index`-th call of the attempts Lambda."""
        return f"{self.attempts_prefix}{index:05d}.json"

    @property
    def agent_run(self) -> str:
        return f"{self.prefix}agent_run.json"

    def shard_index(self, key: Any) -> int:
        """The index of shard `key`; `JobFailed` if it is not a shard of this job (a worker
        must never read or write outside its own job)."""
        match = re.fullmatch(re.escape(self.prefix) + r"shards/(\d+)\.json", key) if isinstance(key, str) else None
        if match is None or key != self.shard(int(match.group(1))):
            raise JobFailed("the event's shard_key is not a shard of its job")
        return int(match.group(1))


def valid_job_id(value: Any) -> str:
    if not isinstance(value, str) or not JOB_ID.match(value):
        raise JobFailed("the event has no valid job_id")
    return value


# --------------------------------------------------------------------------- AWS clients and S3


@functools.cache
def client(service: str) -> Any:
    """A boto3 client for `service`, made once per container (tests call `client.cache_clear()`)."""
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 5}, signature_version="s3v4")
    return boto3.client(service, config=config)


def error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code") or type(exc).__name__)
    return type(exc).__name__


@contextmanager
def aws(what: str) -> Iterator[None]:
    """AWS errors in a request as a 503 that names the operation and the error code (never its text)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError) as exc:
        logger.error("AWS call failed", extra={"operation": what, "error_code": error_code(exc)})
        raise RequestError(503, f"Job storage unavailable: {what} failed ({error_code(exc)}); try again") from None


def put(bucket: str, key: str, body: bytes | str) -> None:
    data = body.encode() if isinstance(body, str) else body
    client("s3").put_object(Bucket=bucket, Key=key, Body=data, ContentType="application/json")


def get(bucket: str, key: str) -> bytes:
    return bytes(client("s3").get_object(Bucket=bucket, Key=key)["Body"].read())


def get_json(bucket: str, key: str) -> Any:
    return json.loads(get(bucket, key))


def is_missing(exc: Exception) -> bool:
    return error_code(exc) in ("NoSuchKey", "404", "NotFound")


def size(bucket: str, key: str) -> int | None:
    """The object's size in bytes, or None when there is no such object."""
    from botocore.exceptions import ClientError

    try:
        return int(client("s3").head_object(Bucket=bucket, Key=key)["ContentLength"])
    except ClientError as exc:
        if is_missing(exc):
            return None
        raise


def keys_under(bucket: str, prefix: str) -> list[str]:
    """The keys of every object under `prefix`, in S3's order (ascending)."""
    pages = client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return [str(item["Key"]) for page in pages for item in page.get("Contents", [])]


def count(bucket: str, prefix: str) -> int:
    """How many objects there are under `prefix`."""
    pages = client("s3").get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return sum(int(page.get("KeyCount", 0)) for page in pages)


def execution_arn(state_machine_arn: str, job_id: str) -> str:
    """The ARN of the job's execution: the state machine's, with `execution` and the job id."""
    return state_machine_arn.replace(":stateMachine:", ":execution:", 1) + ":" + job_id


def execution(state_machine_arn: str, job_id: str) -> dict[str, Any] | None:
    """The job's execution as Step Functions describes it, or None when there is no such job."""
    from botocore.exceptions import ClientError

    try:
        return dict(client("stepfunctions").describe_execution(executionArn=execution_arn(state_machine_arn, job_id)))
    except ClientError as exc:
        if error_code(exc) == "ExecutionDoesNotExist":
            return None
        raise


def recorded_failure(bucket: str, job_id: str) -> str | None:
    """The reason a worker or the reduce recorded in error.json, if any."""
    from botocore.exceptions import ClientError

    try:
        return str(get_json(bucket, JobKeys(job_id).error)["error"])
    except ClientError as exc:
        if not is_missing(exc):
            logger.warning("error.json unreadable", extra={"error_code": error_code(exc)})
    except (ValueError, KeyError, TypeError):
        pass
    return None


# --------------------------------------------------------------------------- the connector's params


def encrypt_params(params: dict[str, Any], job_id: str, key_id: str | None, where: str = "connector") -> str | None:
    """`params` as base64 KMS ciphertext bound to the job (encryption context), or None if empty;
    `where` names the connector in the body when its parameters are too large (`connector[1]`)."""
    if not params:
        return None
    if not key_id:
        raise RequestError(503, "Asynchronous jobs cannot store connector parameters here: JOBS_KMS_KEY_ID is not set")
    plaintext = json.dumps(params, separators=(",", ":")).encode()
    if len(plaintext) > KMS_MAX_PLAINTEXT_BYTES:
        raise RequestError(
            413,
            f"{where}.params too large for a job: {len(plaintext)} bytes as JSON (limit {KMS_MAX_PLAINTEXT_BYTES})",
        )
    with aws("kms:Encrypt"):
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


# --------------------------------------------------------------------------- a new job


def write_shards(
    bucket: str,
    keys: JobKeys,
    datasets: list[Any],
    raw_datasets: list[Any],
    config: Any,
    connectors: int,
    settings: Settings,
) -> list[range]:
    """Cut `datasets` (validated; `raw_datasets` their JSON, what is written) into shards
    (`fair_forge_core.sharding.plan_shards`), write each and the manifest; the shards' ranges of
    conversations, in order.
    A conversation's goal is one more judge question (`judges.goal`), about as long as its turns;
    a shard scores at most as many tool calls as one /run may, so its deterministic work is bounded
    alike; a turn costs `judge_samples` calls of each connector, so shards shrink to keep a shard's
    calls from growing."""
    from fair_forge_core.sharding import plan_shards

    turn_counts = [len(d.conversation) + (d.goal is not None) for d in datasets]
    tool_call_counts = [sum(batch.tool_call_count() for batch in d.conversation) for d in datasets]
    calls_per_turn = config.judge_samples * connectors
    shards = plan_shards(
        turn_counts,
        max(1, settings.shard_size // calls_per_turn),
        max(1, settings.shard_max_turns // calls_per_turn),
        tool_call_counts=tool_call_counts,
        max_tool_calls_per_shard=settings.max_tool_calls,
    )
    manifest = [{"job_id": keys.job_id, "shard_key": keys.shard(n)} for n in range(len(shards))]

    def write_shard(n: int) -> None:
        part = raw_datasets[shards[n].start : shards[n].stop]
        put(bucket, keys.shard(n), json.dumps(part, separators=(",", ":")))

    with ThreadPoolExecutor(IO_THREADS) as pool:
        list(pool.map(write_shard, range(len(shards))))
    put(bucket, keys.manifest, json.dumps(manifest))
    return [range(shard.start, shard.stop) for shard in shards]


def stored_connectors(request: Any, settings: Settings, job_id: str) -> list[dict[str, Any]]:
    """The request's connectors as stored: one, or an ensemble's in request order, each with its
    params encrypted (`encrypt_params`)."""
    ensemble = isinstance(request.connector, list)
    return [
        {
            "class_path": spec.class_path,
            "params_ciphertext": encrypt_params(
                spec.params, job_id, settings.jobs_kms_key_id, f"connector[{i}]" if ensemble else "connector"
            ),
        }
        for i, spec in enumerate(request.connectors)
    ]


def start(state_machine_arn: str, job_id: str, execution_input: dict[str, Any]) -> None:
    """Start the job's execution, named after the job."""
    with aws("states:StartExecution"):
        client("stepfunctions").start_execution(
            stateMachineArn=state_machine_arn, name=job_id, input=json.dumps(execution_input)
        )


def create_job(
    body: dict[str, Any],
    request: Any,
    settings: Settings,
    bucket: str,
    state_machine_arn: str,
    request_id: str | None,
    decided: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the job's request, shards and manifest to S3 and start its execution; its summary.
    `decided` holds what `POST /jobs` decided for the workers and the reduce, stored with the
    request: `provenance` (`fair_forge_core.provenance.provenance_of`, as JSON: the reduce puts
    it into the result; the workers build the judges, the reduce does not), `cache_scope` (the
    judge cache's scope, None when the job does not use the cache) and `ledger_warnings` (what
    the result must say about the cache, after the input's warnings)."""
    decided = decided or {}
    job_id = uuid.uuid4().hex
    keys = JobKeys(job_id)
    stored = {
        "job_id": job_id,
        "request_id": request_id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "connectors": stored_connectors(request, settings, job_id),
        "config": body.get("config") or {},
        "warnings": [*input_warnings(request.datasets), *decided.get("ledger_warnings", [])],
        "provenance": decided.get("provenance"),
        "cache_scope": decided.get("cache_scope"),
        # A recording's adaptive attempts (`RunRequest.attempts`): the reduce adds `aggregated_metrics.adaptive`.
        "recorded_attempts": body.get("attempts"),
        "conversations": len(request.datasets),
        "turns": sum(len(d.conversation) + (d.goal is not None) for d in request.datasets),
    }
    with aws("s3:PutObject"):
        # The raw datasets are written: validated, the workers validate the same JSON again, as /run would.
        stored["shards"] = len(
            write_shards(
                bucket, keys, request.datasets, body["datasets"], request.config, len(request.connectors), settings
            )
        )
        put(bucket, keys.request, json.dumps(stored))
    start(state_machine_arn, job_id, execution_input(job_id, settings, stored))
    logger.info(
        "job started",
        extra={
            "job_id": job_id,
            "conversations": stored["conversations"],
            "turns": stored["turns"],
            "shards": stored["shards"],
        },
    )
    return stored


def execution_input(job_id: str, settings: Settings, stored: dict[str, Any], agent: bool = False) -> dict[str, Any]:
    """The execution's input (statemachine/evaluation.asl.json): `agent` true sends it through the
    attempts loop first, whose last call writes the shards and the manifest."""
    return {
        "job_id": job_id,
        "manifest_key": JobKeys(job_id).manifest,
        "max_parallel_shards": settings.jobs_max_parallel_shards,
        "shards": stored["shards"],
        "conversations": stored["conversations"],
        "agent": agent,
    }


def create_agent_job(
    body: dict[str, Any],
    request: Any,
    job: Any,
    settings: Settings,
    bucket: str,
    state_machine_arn: str,
    request_id: str | None,
    decided: dict[str, Any],
) -> dict[str, Any]:
    """Write a job that runs an agent (`handler.agent_request.AgentJob`) and start it: its
    request (the agent's URL, settings and credential's secret name, the attempts asked for, the
    connectors encrypted as `create_job` stores them) and its tasks; no shard yet (the attempts
    Lambda's last call writes them). `decided` is `create_job`'s, less the provenance, which
    needs the recorded conversations (the attempts Lambda writes it)."""
    job_id = uuid.uuid4().hex
    keys = JobKeys(job_id)
    stored = {
        "job_id": job_id,
        "request_id": request_id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "connectors": stored_connectors(request, settings, job_id),
        "config": body.get("config") or {},
        "agent": job.body.agent.model_dump(mode="json"),
        "attempts": job.body.attempts if isinstance(job.body.attempts, int) else job.body.attempts.model_dump(),
        "ledger_warnings": decided.get("ledger_warnings", []),
        "warnings": [],
        "provenance": None,
        "cache_scope": decided.get("cache_scope"),
        "tasks": len(job.body.tasks),
        "conversations": 0,
        "turns": 0,
        "shards": 0,
    }
    with aws("s3:PutObject"):
        put(bucket, keys.tasks, json.dumps(body["tasks"]))  # validated: read again by the attempts Lambda
        put(bucket, keys.request, json.dumps(stored))
    start(state_machine_arn, job_id, execution_input(job_id, settings, stored, agent=True))
    logger.info("agent job started", extra={"job_id": job_id, "tasks": stored["tasks"]})
    return stored
