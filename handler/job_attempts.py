"""The attempts Lambda of a job that runs an agent (docs/jobs.md "Run the agent from a job"):
`attempts_handler`, looped by the state machine (`statemachine/evaluation.asl.json`, the
`RunAttempts` state and its `MoreAttempts` choice) until it answers `done`.

Each call:

1. reads what was recorded so far (`jobs/<id>/attempts/<n>.json`, `handler.job_store`) and plans
   what is still to run (`plan_attempts`): fixed K, the attempts of each task that are missing;
   adaptive, the next round (`fair_forge_core.adaptive.next_round` on each task's confidence
   sequence), each task held to `max_attempts` attempts made (an unscored attempt counts against
   it, though it decides nothing);
2. runs them with the library's `AttemptRunner` (`fair_forge_core.agents`, the `http` kind only)
   as far as its time allows: no attempt starts once what is left of the Lambda's time, less
   `FAIR_FORGE_JOBS_ATTEMPTS_MARGIN_S`, could not hold its worst case (the rest run in the next
   call; a round cut so is planned again from what ran, which the confidence sequence allows: it
   holds at any stopping). Attempt indices go on from those recorded, so a stub seeded by
   (task, attempt) gives a job the outcomes it gives `fair-forge run`;
3. adaptive: judges the new attempts (`handler.job_judging.judge_datasets`, as a shard is) to count
   each task's successes, and keeps their results, so no conversation is judged twice;
4. writes them as the next `attempts/<n>.json`, before answering: a call retried after it wrote
   goes on from there (one that failed before re-runs its attempts: the agent may see them twice).

When nothing is left to run (or the cost cap stopped the run), the call writes the recording as
a `datasets` job's shards and manifest, the provenance and warnings into `request.json`, and
`agent_run.json` (the run's `RunSummary` and the adaptive per-task report), and answers `done`;
the Map then evaluates the shards (adaptive: their results are already there, so the workers
skip them) and the reduce writes the result.

**Budgets** (`handler.job_budget`). With `config.max_cost_usd` the job's one budget holds the
agent's reported cost too: each call charges its attempts' `usage.cost_usd` to it, and no
attempt starts once it is spent (the `max_cost_usd` stop of `RunSummary`; `DynamoBudget.charge`);
the judge then gets what is left. The attempts in all are bounded at `POST /jobs` (`FAIR_FORGE_JOBS_MAX_ATTEMPTS`).

**The credential** is read here only, from the Secrets Manager secret the request named (under the
operator's `FAIR_FORGE_AGENT_SECRET_PREFIX`, checked again), with Powertools' parameters as the
judge's key is; the secret is `{"api_key": ..., "url": ...}`, and is sent only to an `agent.url`
at or below its own `url` (`url_within`), so a caller who names another's secret cannot have it
sent to a URL of their own. It is masked in every log line of the call and given to the agent's
client alone (`build_agent(environ=...)`): never stored.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from handler import job_store as store
from handler.agent_request import ServiceAgent, check_agent_url, check_secret_name
from handler.job_judging import fail, job_judges, judge_datasets, remaining_s
from handler.job_store import JobKeys
from handler.observability import logger, metrics, secrets_masked
from handler.settings import Settings
from handler.validation import RequestError

Settings.from_env()  # a malformed variable fails the cold start, named

CREDENTIAL_VARIABLE = "FAIR_FORGE_AGENT_CREDENTIAL"
"""The name the agent's header value has in the environment given to `build_agent` (a mapping of
this call's own, never `os.environ`)."""
REFUSED_SECRET_CODES = frozenset(
    {"ResourceNotFoundException", "AccessDeniedException", "DecryptionFailure", "InvalidRequestException"}
)
"""Secrets Manager errors a retry will not mend: they fail the job, named."""


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def attempts_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One call of the attempts loop (module docstring): `{"job_id"}` in; `{"job_id", "done"}` out,
    with `shards` and `conversations` once done."""
    settings = Settings.from_env()
    if not settings.jobs_bucket:
        raise RuntimeError("JOBS_BUCKET is not set")
    bucket = settings.jobs_bucket
    job_id = store.valid_job_id(event.get("job_id"))
    keys = JobKeys(job_id)
    logger.append_keys(job_id=job_id)
    from fair_forge_core.agents import TaskSpec
    from fair_forge_core.schemas import EvaluationConfig

    stored = store.get_json(bucket, keys.request)
    config = EvaluationConfig.model_validate(stored["config"])
    tasks = [TaskSpec.model_validate(task) for task in store.get_json(bucket, keys.tasks)]
    chunks = [store.get_json(bucket, key) for key in store.keys_under(bucket, keys.attempts_prefix)]
    plan = plan_attempts(stored, config.k, tasks, chunks)
    if plan and not stopped(chunks):
        agent = ServiceAgent.model_validate(stored["agent"])
        environ = agent_environ(agent, settings, bucket, job_id)
        with secrets_masked(environ.values()):
            chunk = asyncio.run(run_chunk(settings, bucket, keys, stored, tasks, plan, agent, environ, context))
            if stored["attempts"] and isinstance(stored["attempts"], dict) and chunk["attempts"]:
                judge_chunk(settings, bucket, job_id, stored, chunk, context)
            store.put(bucket, keys.attempts_chunk(len(chunks)), json.dumps(chunk))
        chunks.append(chunk)
        metrics.add_metric(name="AgentAttempts", unit=MetricUnit.Count, value=len(chunk["attempts"]))
        plan = plan_attempts(stored, config.k, tasks, chunks)
    if plan and not stopped(chunks):
        return {"job_id": job_id, "done": False}
    return finish(settings, bucket, keys, stored, config, tasks, chunks)


def records_of(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every attempt recorded, in the order the calls recorded them."""
    return [record for chunk in chunks for record in chunk["attempts"]]


def stopped(chunks: list[dict[str, Any]]) -> str | None:
    """The bound that stopped the run (`max_cost_usd`), if one did."""
    return next((chunk["stopped"] for chunk in chunks if chunk.get("stopped")), None)


def plan_attempts(
    stored: dict[str, Any], k: int, tasks: list[Any], chunks: list[dict[str, Any]]
) -> dict[str, list[int]]:
    """task id → the attempt indices to run next (module docstring, step 1); empty: done. An
    index is the lowest one a task has not recorded, so the attempts of a call that ran out of
    time keep the indices a single run would have given them."""
    from fair_forge_core.adaptive import next_round, parse_question, task_report

    records = records_of(chunks)
    made = Counter(record["task_id"] for record in records)
    asked = stored["attempts"]
    if isinstance(asked, int):
        counts = {task.task_id: asked - made[task.task_id] for task in tasks}
    else:
        boundary = parse_question(asked["until_decided"], k=k).boundary
        successes = Counter(record["task_id"] for record in records if record["success"] is True)
        failures = Counter(record["task_id"] for record in records if record["success"] is False)
        reports = {
            task.task_id: task_report(successes[task.task_id], failures[task.task_id], boundary) for task in tasks
        }
        planned = next_round(reports, max_attempts=asked["max_attempts"], round_size=asked["round_size"])
        counts = {task_id: min(n, asked["max_attempts"] - made[task_id]) for task_id, n in planned.items()}
    recorded: dict[str, set[int]] = {}
    for record in records:
        recorded.setdefault(record["task_id"], set()).add(record["attempt"])
    plan = {}
    for task_id, count in counts.items():
        if count > 0:
            taken, index = recorded.get(task_id, set()), 0
            indices: list[int] = []
            while len(indices) < count:
                if index not in taken:
                    indices.append(index)
                index += 1
            plan[task_id] = indices
    return plan


def agent_environ(agent: ServiceAgent, settings: Settings, bucket: str, job_id: str) -> dict[str, str]:
    """The environment the agent is built with: its header's value (`prefix` + the secret), or
    nothing without a credential. The URL and the secret's name are checked again under today's
    settings (`JobFailed` when they no longer pass); a secret that cannot be read fails the job
    when a retry cannot mend it (`REFUSED_SECRET_CODES`), else raises for the state machine's Retry."""
    try:
        check_agent_url(agent.url, settings)
        check_secret_name(agent.credential, settings)
    except RequestError as exc:
        raise fail(
            bucket, job_id, f"Agentic evaluation failed: {exc.message.removeprefix('Invalid request: ')}"
        ) from None
    if agent.credential is None:
        return {}
    name = agent.credential.secret
    try:
        value, bound = read_agent_secret(name, settings.secret_max_age_s)
    except Exception as exc:
        # Powertools wraps the AWS error (GetParameterError): its code is the one it was raised from.
        cause = exc.__cause__ or exc.__context__
        code = store.error_code(cause if isinstance(cause, Exception) else exc)
        message = f"the agent's credential (secret {name}) could not be read ({code})"
        if code in REFUSED_SECRET_CODES:
            raise fail(bucket, job_id, f"Agentic evaluation failed: {message}") from None
        raise RuntimeError(message) from None
    if value is None or bound is None:
        # (Worded so that the redaction in `fail` finds no "secret: <value>" to hide.)
        message = (
            f"the agent's credential (secret {name}) is not a JSON object with api_key and url, "
            "so it names no URL it may be sent to (agent.credential.secret)"
        )
        raise fail(bucket, job_id, f"Agentic evaluation failed: {message}")
    if not url_within(agent.url, bound):
        message = f"the secret {name} may not be sent to this agent.url (the secret's own url says where it may)"
        raise fail(bucket, job_id, f"Agentic evaluation failed: agent.url: {message}")
    return {CREDENTIAL_VARIABLE: agent.credential.prefix + value}


def read_agent_secret(name: str, max_age_s: int) -> tuple[str | None, str | None]:
    """(`api_key`, `url`) of the agent secret `name`, a JSON object (None for either that is not a
    string there, or for both when it is not such an object), with Powertools' parameters, cached
    `max_age_s` as the judge's key is (`handler.connectors.secret_from_secrets_manager`)."""
    from aws_lambda_powertools.utilities import parameters  # imports boto3: not at cold start

    raw = parameters.get_secret(name, max_age=max_age_s)
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    try:
        data = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None, None
    key, url = data.get("api_key"), data.get("url")
    return (key if isinstance(key, str) and key else None), (url if isinstance(url, str) and url else None)


def url_within(url: str, bound: str) -> bool:
    """Whether `url` is `bound` or below it: `bound` itself, or `bound` followed by a path, a query
    or more of a path after a "/" (`https://a.example/v1` covers `https://a.example/v1/turn`, not
    `https://a.example/v10` nor `https://a.example.evil/`). Scheme and host compare in any case."""
    from urllib.parse import urlsplit

    given, allowed = urlsplit(url), urlsplit(bound)
    if (given.scheme.lower(), given.netloc.lower()) != (allowed.scheme.lower(), allowed.netloc.lower()):
        return False
    base = allowed.path.rstrip("/")
    return given.path == allowed.path or given.path.startswith(base + "/")


async def run_chunk(
    settings: Settings,
    bucket: str,
    keys: JobKeys,
    stored: dict[str, Any],
    tasks: list[Any],
    plan: dict[str, list[int]],
    agent: ServiceAgent,
    environ: dict[str, str],
    context: Any,
) -> dict[str, Any]:
    """Run the planned attempts as far as the time and the budget allow (module docstring, step 2);
    the chunk to record: `attempts` (each `task_id`, `attempt`, `dataset`, `cost_usd`, `failure`'s
    cause, `success` None until judged), `not_started` and `stopped` (the cost cap), `deferred`
    (left for the next call)."""
    from fair_forge_core.agents import SERVICE_KINDS, AttemptRunner, build_agent
    from fair_forge_core.schemas import EvaluationConfig

    cap = EvaluationConfig.model_validate(stored["config"]).max_cost_usd
    budget = None
    left = None
    if cap is not None and settings.jobs_budget_table:
        from handler.job_budget import DynamoBudget

        budget = DynamoBudget(settings.jobs_budget_table, keys.job_id, cap)
        committed, _ = await asyncio.to_thread(budget.committed_usd)
        left = cap - committed
        if left <= 0:
            return {
                "attempts": [],
                "not_started": sum(map(len, plan.values())),
                "stopped": "max_cost_usd",
                "deferred": 0,
            }
    by_id = {task.task_id: task for task in tasks}
    longest = max(len(task.turns) for task in tasks)
    spec = agent.spec(CREDENTIAL_VARIABLE)
    remaining = remaining_s(context)
    start_by = None
    if remaining is not None:  # an attempt started before this ends within the Lambda's time
        start_by = time.monotonic() + remaining - settings.jobs_attempts_margin_s
        start_by -= agent.worst_attempt_s(longest, spec.retry_backoff_s)
    concurrency = settings.jobs_agent_concurrency
    client = build_agent(spec, allowed_kinds=SERVICE_KINDS, environ=environ, concurrency=concurrency)
    runner = AttemptRunner(tasks, client, concurrency=concurrency, max_cost_usd=left)
    gate = asyncio.Semaphore(concurrency)  # the runner's own slots: the time is read when one is free
    deferred = 0
    started = 0

    async def one(task_id: str, index: int) -> None:
        nonlocal deferred, started
        async with gate:
            if start_by is not None and started and time.monotonic() > start_by:
                deferred += 1  # the next call runs it: the first attempt always starts
                return
            started += 1
            await runner.run(by_id[task_id], index)

    try:
        await asyncio.gather(*(one(task_id, index) for task_id, indices in plan.items() for index in indices))
    finally:
        await client.aclose()
    recording = runner.recording()
    if budget is not None and recording.summary.agent_cost_usd > 0:
        await budget.charge(recording.summary.agent_cost_usd)  # spent: the judge has what is left
    order = {task.task_id: i for i, task in enumerate(tasks)}
    outcomes = sorted(runner.outcomes, key=lambda o: (order[o.task_id], o.attempt))
    logger.info(
        "attempts run",
        extra={
            "attempts": len(outcomes),
            "failed": dict(recording.summary.failed),
            "deferred": deferred,
            "agent_cost_usd": recording.summary.agent_cost_usd,
        },
    )
    return {
        "attempts": [
            {
                "task_id": o.task_id,
                "attempt": o.attempt,
                "dataset": o.dataset.model_dump(mode="json"),
                "cost_usd": o.cost_usd,
                "failure": o.failure.cause if o.failure is not None else None,
                "success": None,
            }
            for o in outcomes
        ],
        "not_started": recording.summary.not_started,
        "stopped": recording.summary.stopped,
        "deferred": deferred,
    }


def judge_chunk(
    settings: Settings, bucket: str, job_id: str, stored: dict[str, Any], chunk: dict[str, Any], context: Any
) -> None:
    """Adaptive: judge the chunk's attempts as a shard is judged and set each one's `success`
    (fully correct; False when scored and not; None when unscored: it decides nothing), keeping
    the results (`results`) and the judge's usage (`judge_usage`) in the chunk."""
    from fair_forge_core.schemas import Dataset
    from fair_forge_core.sharding import dump_conversations

    judged = judge_datasets(
        settings,
        bucket,
        job_id,
        stored,
        lambda: [Dataset.model_validate(r["dataset"]) for r in chunk["attempts"]],
        context,
    )
    for record, conversation in zip(chunk["attempts"], judged.conversations, strict=True):
        record["success"] = bool(conversation.is_fully_correct) if conversation.is_scored else None
    chunk["results"] = json.loads(dump_conversations(judged.conversations))
    chunk["judge_usage"] = judged.usage.model_dump(mode="json")


def finish(
    settings: Settings,
    bucket: str,
    keys: JobKeys,
    stored: dict[str, Any],
    config: Any,
    tasks: list[Any],
    chunks: list[dict[str, Any]],
) -> dict[str, Any]:
    """The recording as a `datasets` job (module docstring): shards, manifest, provenance, warnings,
    `agent_run.json`; adaptive, the rounds' results as the shards' and their usage as shard 0's.
    No attempt recorded fails the job."""
    from fair_forge_core.agents import RunSummary
    from fair_forge_core.judges.ledger import total_usage
    from fair_forge_core.provenance import provenance_of
    from fair_forge_core.schemas import Dataset, input_warnings
    from fair_forge_core.schemas.result import JudgeUsage
    from fair_forge_core.sharding import dump_conversations, load_conversations

    job_id = keys.job_id
    order = {task.task_id: i for i, task in enumerate(tasks)}
    adaptive = isinstance(stored["attempts"], dict)
    pairs = [
        (record, result)
        for chunk in chunks
        for record, result in zip(
            chunk["attempts"], chunk.get("results") or [None] * len(chunk["attempts"]), strict=True
        )
    ]
    pairs.sort(key=lambda pair: (order[pair[0]["task_id"]], pair[0]["attempt"]))
    if not pairs:
        raise fail(
            bucket, job_id, "Agentic evaluation failed: no attempt of the agent was made (the cost cap was spent)"
        )
    raw = [record["dataset"] for record, _ in pairs]
    datasets = [Dataset.model_validate(d) for d in raw]
    _, judges = job_judges(settings, bucket, job_id, stored, config)
    with secrets_masked(frozenset().union(*(judge.secrets for judge in judges))):
        shards = store.write_shards(bucket, keys, datasets, raw, config, len(judges), settings)
        if adaptive:  # judged in the rounds: the shards' results are those, so the workers skip them
            results = load_conversations(json.dumps([result for _, result in pairs]))
            for n, part in enumerate(shards):
                store.put(bucket, keys.shard_result(n), dump_conversations(results[part.start : part.stop]))
            usages = [JudgeUsage.model_validate(c["judge_usage"]) for c in chunks if c.get("judge_usage")]
            if usages:
                store.put(bucket, keys.shard_usage(0), total_usage(usages).model_dump_json().encode())
        provenance = provenance_of([judge.model for judge in judges], config, datasets).model_dump(mode="json")
    records = [record for record, _ in pairs]
    summary = RunSummary(
        attempts=len(records),
        failed=dict(sorted(Counter(r["failure"] for r in records if r["failure"]).items())),
        agent_cost_usd=sum(r["cost_usd"] for r in records),
        not_started=sum(chunk.get("not_started", 0) for chunk in chunks),
        stopped=stopped(chunks),  # type: ignore[arg-type]
    )
    adaptive_run = adaptive_report(stored, config.k, tasks, records)
    agent_run = {"summary": summary.model_dump(mode="json"), "adaptive": adaptive_run}
    store.put(bucket, keys.agent_run, json.dumps(agent_run))
    stored.update(
        conversations=len(datasets),
        turns=sum(len(d.conversation) + (d.goal is not None) for d in datasets),
        shards=len(shards),
        warnings=[*input_warnings(datasets), *stored.get("ledger_warnings", [])],
        provenance=provenance,
        judged_in_rounds=adaptive,
        recorded_attempts=recorded_attempts(stored, adaptive_run),
    )
    store.put(bucket, keys.request, json.dumps(stored))
    logger.info("attempts done", extra={"attempts": summary.attempts, "failed": summary.failed, "shards": len(shards)})
    return {"job_id": job_id, "done": True, "shards": len(shards), "conversations": len(datasets)}


def recorded_attempts(stored: dict[str, Any], report: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the run decided, as a recording of `fair-forge run --until-decided` says it
    (`schemas.AdaptiveAttempts`, `RunRequest.attempts`): the reduce reads it into
    `aggregated_metrics.adaptive`. None for fixed attempts."""
    from fair_forge_core.adaptive import DEFAULT_LEVEL, DEFAULT_PRIOR
    from fair_forge_core.schemas import AdaptiveAttempts

    if report is None:
        return None
    asked = stored["attempts"]
    fields = {
        "policy": "adaptive",
        "question": report["question"],
        "k": report["k"],
        "boundary": report["boundary"],
        "level": DEFAULT_LEVEL,
        "prior": DEFAULT_PRIOR,
        "max_attempts": asked["max_attempts"],
        "round_size": asked["round_size"],
        "tasks": report["tasks"],  # each an `AdaptiveTask` as JSON
    }
    return AdaptiveAttempts.model_validate_json(json.dumps(fields)).model_dump(mode="json")


def adaptive_report(
    stored: dict[str, Any], k: int, tasks: list[Any], records: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Adaptive: the question, its boundary and each task's `AdaptiveTask` (its confidence
    sequence and decision on its scored attempts); None for fixed attempts."""
    from fair_forge_core.adaptive import parse_question, task_report

    asked = stored["attempts"]
    if not isinstance(asked, dict):
        return None
    question = parse_question(asked["until_decided"], k=k)
    report = {}
    for task in tasks:
        mine = [r for r in records if r["task_id"] == task.task_id]
        successes = sum(1 for r in mine if r["success"] is True)
        failures = sum(1 for r in mine if r["success"] is False)
        report[task.task_id] = task_report(successes, failures, question.boundary).model_dump(mode="json")
    return {"question": question.text, "k": k, "boundary": question.boundary, "tasks": report}
