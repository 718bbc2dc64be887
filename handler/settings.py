"""Operator settings, read from the environment (pydantic-settings).

Each field is the variable `FAIR_FORGE_<FIELD>` (the README's configuration table),
except the few without the prefix, named by their alias. An empty variable means the
default. A malformed one (`FAIR_FORGE_MAX_TURNS=ten`, a bad CIDR range) raises
`SettingsError` naming the variable: `handler.app` and `handler.job_lambdas` read the
settings when imported, so such a deployment fails at its cold start, with that
message in the log, instead of answering 500 to every request.

Read again at each request (cheap, and tests can change the environment).
"""

from __future__ import annotations

import functools
import ipaddress
import os
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

if TYPE_CHECKING:
    from fair_forge_core.connectors import EndpointPolicy
    from fair_forge_core.judges.llm import RetryPolicy

ENV_PREFIX = "FAIR_FORGE_"

# A comma-separated list: never JSON, which pydantic-settings would expect for a tuple.
CommaList = Annotated[tuple[str, ...], NoDecode]


def _unprefixed(name: str) -> Any:
    """A field read from the variable `name`, without the FAIR_FORGE_ prefix."""
    return Field(default=None, validation_alias=AliasChoices(name))


class SettingsError(ValueError):
    """A malformed environment variable: the message names it and says what is expected."""


class Settings(BaseSettings):
    """Limits and options of the service. Each field's environment variable is in the README."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, populate_by_name=True, extra="ignore")

    max_body_bytes: int = 6_000_000
    max_response_bytes: int = 5_500_000
    max_conversations: int = 2_000
    max_turns: int = 10_000
    max_string_chars: int = 100_000
    max_nesting_depth: int = 32
    # What bounds the deterministic work (tool pairing is quadratic in one turn's calls; the
    # aggregate is computed per assistant): DESIGN.md §9.
    max_tool_calls_per_turn: int = 64
    max_tool_calls: int = 20_000
    max_assistants: int = 50
    max_curve_points: int = 10_000
    sync_budget_s: float = 27.0
    deadline_margin_s: float = 1.5
    judge_max_attempts: int = 8
    judge_call_timeout_s: float = 30.0
    extra_connectors: CommaList = ()
    # Where caller-chosen judge endpoints may point besides the public internet, and what the
    # server's key may buy (fair_forge_core.connectors.EndpointPolicy).
    allowed_endpoint_networks: CommaList = ()
    server_key_models: CommaList = ()
    server_key_max_tokens: int = 1024
    cors_allow_origin: str | None = _unprefixed("CORS_ALLOW_ORIGIN")
    server_api_key_env: str | None = _unprefixed("LLM_API_KEY")
    server_api_key_secret_arn: str | None = _unprefixed("LLM_API_KEY_SECRET_ARN")
    # How long the secret's value is trusted before Secrets Manager is asked again: a rotated
    # key is in use within this time, at one GetSecretValue per container per period.
    secret_max_age_s: int = 300
    # Asynchronous jobs (handler.routes.jobs, handler.job_lambdas): where they live, how they are
    # cut, what GET /jobs/{id} returns.
    jobs_bucket: str | None = _unprefixed("JOBS_BUCKET")
    jobs_state_machine_arn: str | None = _unprefixed("JOBS_STATE_MACHINE_ARN")
    jobs_kms_key_id: str | None = _unprefixed("JOBS_KMS_KEY_ID")
    jobs_max_conversations: int = 100_000
    jobs_max_turns: int = 1_000_000
    jobs_max_tool_calls: int = 1_000_000
    shard_size: int = 200
    shard_max_turns: int = 2_000
    jobs_max_parallel_shards: int = 10
    jobs_inline_result_bytes: int = 1_000_000
    jobs_result_url_expiry_s: int = 3_600
    jobs_worker_margin_s: float = 10.0

    @model_validator(mode="before")
    @classmethod
    def _blank_is_default(cls, values: Any) -> Any:
        """`FAIR_FORGE_X=` (or only spaces) means "not set", as it always has: the default applies."""
        if isinstance(values, dict):
            return {k: v for k, v in values.items() if not (isinstance(v, str) and not v.strip())}
        return values

    @field_validator("extra_connectors", "allowed_endpoint_networks", "server_key_models", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(item.strip() for item in value.split(",") if item.strip())
        return value

    @field_validator("allowed_endpoint_networks")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """CIDR ranges, normalised; a malformed one is refused here, not on some later request."""
        return tuple(str(ipaddress.ip_network(item, strict=False)) for item in value)

    @field_validator("shard_size", "shard_max_turns", "jobs_max_parallel_shards")
    @classmethod
    def _at_least_one(cls, value: int) -> int:
        return max(1, value)

    @field_validator("secret_max_age_s")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        return max(0, value)  # 0: ask Secrets Manager every time

    def endpoint_policy(self) -> EndpointPolicy:
        from fair_forge_core.connectors import EndpointPolicy

        return EndpointPolicy(self.allowed_endpoint_networks, self.server_key_models, self.server_key_max_tokens)

    def retry_policy(self) -> RetryPolicy:
        """The judge's retry policy under these settings (imports the judge, so only when judging)."""
        from fair_forge_core.judges.llm import RetryPolicy

        return RetryPolicy(max_attempts=self.judge_max_attempts, call_timeout_s=self.judge_call_timeout_s)

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable of `field`."""
        alias = cls.model_fields[field].validation_alias
        if isinstance(alias, AliasChoices):
            return str(alias.choices[0])
        return ENV_PREFIX + field.upper()

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
        raise SettingsError(_describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    """One line per malformed variable, without pydantic's copy of its value (it could be a key)."""
    fields = {Settings.variable(field): field for field in Settings.model_fields}
    problems = []
    for error in exc.errors(include_input=False, include_url=False):
        location = str(error["loc"][0]) if error["loc"] else ""
        field = location if location in Settings.model_fields else fields.get(location.upper(), location)
        variable = Settings.variable(field) if field in Settings.model_fields else location
        problems.append(f"{variable}: {error['msg']}")
    return "Invalid environment variable " + "; ".join(problems)
