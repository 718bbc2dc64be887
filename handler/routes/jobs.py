"""`POST /jobs` and `GET /jobs/{id}`: asynchronous evaluations on AWS Step Functions.

A synchronous `/run` must answer within API Gateway's 29 s and 6 MB. A job has no such
bound: `POST /jobs` validates the request exactly as `/run` does (larger conversation
and turn limits aside), cuts it into shards (`fair_forge_core.sharding.plan_shards`),
writes everything to the jobs bucket (`handler.job_store`) and starts an execution of
the state machine (`statemachine/evaluation.asl.json`, a Standard workflow) named after
the job id. Its Distributed Map runs `handler.job_lambdas.worker_handler` once per
shard; `handler.job_lambdas.reduce_handler` then combines the shard results into
exactly the response `/run` would have given.

A request without a key gets the server's key in the worker, under the same rules as
`/run` (`handler.connectors.judges_for_job`: `fair_forge_core.plan.build_judges`).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.metrics import MetricUnit

from fair_forge_core.redact import redact
from handler import job_store as store
from handler.agent_request import parse_agent_job
from handler.connectors import plan_for_request
from handler.invocation import api_key_id
from handler.observability import current_secrets, metrics, secrets_masked
from handler.responses import request_id
from handler.settings import Settings
from handler.validation import RequestError, check_judge_batch, decode_body, parse_run_request

router = Router()

STATUS = {
    "RUNNING": "running",
    "PENDING_REDRIVE": "running",
    "SUCCEEDED": "succeeded",
    "FAILED": "failed",
    "TIMED_OUT": "failed",
    "ABORTED": "failed",
}


def _require_jobs(settings: Settings) -> tuple[str, str]:
    if not (settings.jobs_bucket and settings.jobs_state_machine_arn):
        raise RequestError(
            503,
            "Asynchronous jobs are not enabled here (JOBS_BUCKET and JOBS_STATE_MACHINE_ARN are not set): "
            "use POST /run, or deploy with scripts/deploy.sh",
        )
    return settings.jobs_bucket, settings.jobs_state_machine_arn


def _status_url(job_id: str) -> str:
    """The absolute URL of GET /jobs/{id} on this API's own domain and stage (or base path).

    Built from the request context, which API Gateway fills in (`domainName`, and `path`
    as requested: /<stage>/jobs on the execute-api domain, /<base path>/jobs on a custom
    domain), never from the caller's `Host` or `X-Forwarded-Proto`: a client must not
    make this API hand out links to another host. The local API has no stage and plain HTTP.
    """
    event: Any = router.current_event  # the REST resolver's event: it has a request context
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
    if "traces" in body:
        raise RequestError(
            400,
            "POST /jobs takes datasets: send traces to POST /run, or turn them into datasets with fair-forge convert",
        )
    limits = settings.model_copy(
        update={
            "max_conversations": settings.jobs_max_conversations,
            "max_turns": settings.jobs_max_turns,
            "max_tool_calls": settings.jobs_max_tool_calls,
            "max_rule_work": settings.jobs_max_rule_work,
        }
    )
    job = parse_agent_job(body, settings) if ("tasks" in body or "agent" in body) else None
    # An agent job's connector and config are checked on one placeholder conversation per task.
    request = parse_run_request(job.evaluation_body if job is not None else body, limits)
    check_judge_batch(request, on_jobs=True, agent_job=job is not None)
    if request.config.max_cost_usd is not None and not settings.jobs_budget_table:
        # The shards run apart: without the shared budget a cap could not hold, and ignoring it would mislead.
        message = "needs the service's jobs budget table (JOBS_BUDGET_TABLE), which this deployment has not"
        field = "config.max_cost_usd"
        raise RequestError(400, f"{field} {message}", [{"field": field, "message": message}])
    # The connector is checked now, as /run does, not found wrong by every worker later.
    # The cap's price and output bound, the cache's scope (the caller's API key) and whether the
    # connectors may share it are decided now, as /run decides them, and stored for the workers.
    # What the judge is asked: every turn, and every conversation's goal once (`judges.goal`);
    # for an agent job, of as many attempts of each task as it may get.
    per_dataset = job.attempts_per_task if job is not None else 1
    questions = per_dataset * sum(len(d.conversation) + (d.goal is not None) for d in request.datasets)
    plan = plan_for_request(request, settings, api_key_id=api_key_id(router.current_event), turns=questions)
    with secrets_masked(plan.secrets):
        from fair_forge_core.provenance import provenance_of

        ledger = plan.ledger
        stored: dict[str, Any] = {
            "cache_scope": ledger.cache_scope if ledger.cache is not None else None,
            "ledger_warnings": plan.ledger_warnings,
        }
        if job is not None:
            created = store.create_agent_job(
                body, request, job, settings, bucket, state_machine_arn, request_id(router), stored
            )
        else:
            stored["provenance"] = provenance_of(plan.models, request.config, request.datasets).model_dump(mode="json")
            created = store.create_job(body, request, settings, bucket, state_machine_arn, request_id(router), stored)
    metrics.add_metric(name="Jobs", unit=MetricUnit.Count, value=1)
    status_url = _status_url(created["job_id"])
    payload = {
        "success": True,
        "job_id": created["job_id"],
        "status": "running",
        "status_url": status_url,
        "conversations": created["conversations"],
        "turns": created["turns"],
        "shards": created["shards"],
        "request_id": request_id(router),
    }
    if job is not None:  # the conversations are the attempts, and the shards are cut once they have run
        payload["tasks"] = created["tasks"]
    return Response(
        status_code=202, content_type="application/json", body=json.dumps(payload), headers={"Location": status_url}
    )


@router.get("/jobs/<job_id>")
def job_status(job_id: str) -> Response:
    settings = Settings.from_env()
    bucket, state_machine_arn = _require_jobs(settings)
    if not store.JOB_ID.match(job_id):
        raise RequestError(404, "Not found: no job with that id (a job id is 32 lowercase hexadecimal characters)")
    keys = store.JobKeys(job_id)
    with store.aws("states:DescribeExecution"):
        execution = store.execution(state_machine_arn, job_id)
    if execution is None:
        raise RequestError(404, f"Not found: no job {job_id}")
    status = STATUS.get(execution["status"], "running")
    execution_input = json.loads(execution.get("input") or "{}")
    total = int(execution_input.get("shards", 0))
    agent_run: Any = None
    if execution_input.get("agent"):  # its shards are cut once the agent has run: request.json says how many
        with store.aws("s3:GetObject"):
            stored = store.get_json(bucket, keys.request)
            total = int(stored.get("shards", 0))
            execution_input["conversations"] = stored.get("conversations")
            if total and store.size(bucket, keys.agent_run) is not None:
                agent_run = store.get_json(bucket, keys.agent_run)
    if status == "succeeded":
        shards_done = total
    else:
        with store.aws("s3:ListObjectsV2"):
            shards_done = store.count(bucket, keys.results_prefix)
    payload: dict[str, Any] = {
        "success": True,
        "job_id": job_id,
        "status": status,
        "submitted_at": _timestamp(execution.get("startDate")),
        "finished_at": _timestamp(execution.get("stopDate")),
        "progress": {
            "shards_done": shards_done,
            "shards_total": total,
            "conversations": execution_input.get("conversations"),
        },
        "error": None,
        "result_url": None,
        "result_url_expires_in": None,
        "result_bytes": None,
        "request_id": request_id(router),
    }
    if execution_input.get("agent"):  # what the run did (docs/jobs.md "Run the agent from a job")
        payload["agent_run"] = agent_run
    if status == "failed":
        payload["error"] = _failure_cause(bucket, job_id, execution)
    inline: bytes | None = None
    if status == "succeeded":
        with store.aws("s3:GetObject"):
            size = store.size(bucket, keys.result)
            if size is None:
                payload["error"] = "the result has expired (job data is kept for a limited time)"
            elif size <= settings.jobs_inline_result_bytes:
                inline = store.get(bucket, keys.result)
                payload["result_bytes"] = size
            else:
                payload["result_bytes"] = size
                payload["result_url"] = store.client("s3").generate_presigned_url(
                    "get_object",
                    Params={"Bucket": bucket, "Key": keys.result},
                    ExpiresIn=settings.jobs_result_url_expiry_s,
                )
                payload["result_url_expires_in"] = settings.jobs_result_url_expiry_s
    body = json.dumps({**payload, "result": None})
    if inline is not None:  # spliced in as it is: no need to parse and re-serialise megabytes
        body = body[: -len('"result": null}')] + '"result": ' + inline.decode("utf-8") + "}"
    return Response(status_code=200, content_type="application/json", body=body)


def _timestamp(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def _failure_cause(bucket: str, job_id: str, execution: dict[str, Any]) -> str:
    """Why the job failed, without stack traces: the job's own error.json, else the execution's error."""
    recorded = store.recorded_failure(bucket, job_id)
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
