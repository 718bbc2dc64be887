"""Operator settings, read from the environment (pydantic-settings).

Each field is the variable `FAIR_FORGE_<FIELD>` (docs/how-to/deploy.md "Configuration by environment"),
except the few without the prefix, named by their alias. An empty variable means the
default. A malformed one (`FAIR_FORGE_MAX_TURNS=ten`, a bad CIDR range) raises
`SettingsError` naming the variable: `handler.app` and `handler.job_lambdas` read the
settings when imported, so such a deployment fails at its cold start, with that
message in the log, instead of answering 500 to every request.

Read again at each request (cheap, and tests can change the environment).
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING

from pydantic import Field, ValidationError, field_validator

from fair_forge_core.connectors.environment import CommaList, JudgeEnvironment, SettingsError, unprefixed

if TYPE_CHECKING:
    from fair_forge_core.judges.llm import RetryPolicy

__all__ = ["Settings", "SettingsError"]


class Settings(JudgeEnvironment):
    """Limits and options of the service. Each field's environment variable is in docs/how-to/deploy.md.

    The judge's part (extra connectors, endpoint networks, what the server's key buys,
    `LLM_API_KEY`) is `fair_forge_core.connectors.environment.JudgeEnvironment`, which
    the CLI reads too.
    """

    # The largest body whose API Gateway event always fits Lambda's 6 MB event limit (6,291,456
    # bytes), so that a larger one reaches the handler and gets its 413 rather than API Gateway's
    # 5xx. In the event the body is a JSON string, where each `"` or `\` (and newline or tab)
    # of a JSON body takes two bytes (non-ASCII stays UTF-8 as it is), and the rest of the event
    # (headers and query twice each, at most 10,240 bytes together, and the request context)
    # takes under 64 KiB: 2 × 3,000,000 + 65,536 = 6,065,536 ≤ 6,291,456. A base64 body
    # (binary media types) takes 4/3 of its decoded bytes, 4,000,000: it fits too. A typical
    # JSON body grows about 11 %, so bodies up to about 5.6 MB would fit; the limit is the one
    # that holds for every body (tests/unit/test_body_limit.py builds the worst event).
    max_body_bytes: int = 3_000_000
    max_response_bytes: int = 5_500_000
    max_conversations: int = 2_000
    max_turns: int = 10_000
    max_string_chars: int = 100_000
    max_nesting_depth: int = 32
    # What bounds the deterministic work (tool pairing is quadratic in one turn's calls; the
    # aggregate is computed per assistant): docs/limits.md.
    max_tool_calls_per_turn: int = 64
    max_tool_calls: int = 20_000
    # What bounds comparing values (issue #32): the options of one `$any_of`, and the rule work of
    # a request (each expected call's `rule_cost` work × the used calls of its tool, plus the
    # end states'), so the worst body at the body limit costs ≤ 3 s of CPU (benchmarks/RESULTS.md).
    max_any_of_options: int = 1_000
    max_rule_work: int = 1_000_000
    max_assistants: int = 50
    max_curve_points: int = 10_000
    max_calibration_pairs: int = 2_000
    sync_budget_s: float = 27.0
    deadline_margin_s: float = 1.5
    judge_max_attempts: int = 8
    judge_call_timeout_s: float = 30.0
    cors_allow_origin: str | None = unprefixed("CORS_ALLOW_ORIGIN")
    server_api_key_secret_arn: str | None = unprefixed("LLM_API_KEY_SECRET_ARN")
    # How long the secret's value is trusted before Secrets Manager is asked again: a rotated
    # key is in use within this time, at one GetSecretValue per container per period.
    secret_max_age_s: int = 300
    # Asynchronous jobs (handler.routes.jobs, handler.job_lambdas): where they live, how they are
    # cut, what GET /jobs/{id} returns.
    jobs_bucket: str | None = unprefixed("JOBS_BUCKET")
    jobs_state_machine_arn: str | None = unprefixed("JOBS_STATE_MACHINE_ARN")
    jobs_kms_key_id: str | None = unprefixed("JOBS_KMS_KEY_ID")
    jobs_max_conversations: int = 100_000
    jobs_max_turns: int = 1_000_000
    jobs_max_tool_calls: int = 1_000_000
    jobs_max_rule_work: int = 50_000_000
    shard_size: int = 200
    shard_max_turns: int = 2_000
    jobs_max_parallel_shards: int = 10
    jobs_inline_result_bytes: int = 1_000_000
    jobs_result_url_expiry_s: int = 3_600
    jobs_worker_margin_s: float = 10.0
    # Batch judging (config.judge_batch, handler.job_batches): the first wait before a shard's batch
    # is polled, the longest wait between polls (each 1.5 times the last), and how long after its
    # submission a batch may run before the job cancels it and collects what it answered.
    jobs_batch_poll_s: int = Field(60, ge=0)
    jobs_batch_max_poll_s: int = Field(900, ge=60)  # ≥ 60: 25 hours of polls within Step Functions' 25,000 events
    jobs_batch_deadline_s: int = Field(90_000, ge=0)
    # What the server's key may buy: judge calls per turn (judge_samples × the connectors that use
    # it), in /run and in jobs, and judge calls per job (turns × those calls per turn).
    server_key_max_calls_per_turn: int = 3
    jobs_max_server_key_calls: int = 200_000
    # The DynamoDB table where a job's cost cap is one budget shared by every shard
    # (handler.job_budget); without it POST /jobs refuses config.max_cost_usd.
    jobs_budget_table: str | None = unprefixed("JOBS_BUDGET_TABLE")
    # Jobs that run an agent (handler.agent_request, handler.job_attempts; docs/jobs.md "Run the agent
    # from a job"): the hosts an agent's URL may name outside the judge's endpoint rules (exact host
    # names, for an agent in the operator's own network), the Secrets Manager name prefix an agent's
    # credential may be read from (unset: no credential can be named), the attempts a job may make in
    # all, how many are in flight, and what an attempts Lambda keeps free of its timeout.
    agent_hosts: CommaList = ()
    agent_secret_prefix: str | None = None
    jobs_max_attempts: int = 10_000
    jobs_agent_concurrency: int = 8
    jobs_attempts_margin_s: float = 30.0
    # The longest one attempt may take at its worst (turns x tries x the agent's timeout): it must
    # finish inside one attempts Lambda (WorkerTimeout less the margin), so POST /jobs refuses more.
    jobs_max_attempt_s: float = 840.0

    @field_validator("agent_hosts", mode="before")
    @classmethod
    def _host_names(cls, value: object) -> object:
        """Comma-separated host names, compared in lower case (a host name is case-insensitive)."""
        if isinstance(value, str):
            return tuple(item.strip().lower() for item in value.split(",") if item.strip())
        return value

    @field_validator("shard_size", "shard_max_turns", "jobs_max_parallel_shards", "jobs_agent_concurrency")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        return max(1, value)

    @field_validator("secret_max_age_s")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        return max(0, value)  # 0: ask Secrets Manager every time

    def retry_policy(self) -> RetryPolicy:
        """The judge's retry policy under these settings (imports the judge, so only when judging)."""
        from fair_forge_core.judges.llm import RetryPolicy

        return RetryPolicy(max_attempts=self.judge_max_attempts, call_timeout_s=self.judge_call_timeout_s)

    @classmethod
    def from_env(cls) -> Settings:
        """The settings in the environment now; `SettingsError` naming each malformed variable."""
        variables = _variables()
        return _from_variables(tuple(sorted((k, v) for k, v in os.environ.items() if k.upper() in variables)))


@functools.cache
def _variables() -> frozenset[str]:
    return frozenset(Settings.variable(field) for field in Settings.model_fields)


@functools.lru_cache(maxsize=16)
def _from_variables(_environment: tuple[tuple[str, str], ...]) -> Settings:
    """Settings for one state of the environment (its relevant variables are the cache key):
    parsing them costs about 2 ms, checking they are unchanged a few microseconds."""
    try:
        return Settings()
    except ValidationError as exc:
        raise Settings.describe(exc) from None
