"""Operator settings, read from the environment at each request (cheap, and tests can change them)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fair_forge_core.connectors import EndpointPolicy
    from fair_forge_core.judges.llm import RetryPolicy


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def _list(name: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in os.environ.get(name, "").split(",") if item.strip())


def _networks(name: str) -> tuple[str, ...]:
    """CIDR ranges; a malformed one fails here, loudly, rather than on some later request."""
    import ipaddress

    return tuple(str(ipaddress.ip_network(item, strict=False)) for item in _list(name))


def _float(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    return float(value) if value else default


@dataclass(frozen=True)
class Settings:
    """Limits and options of the service. Each field's environment variable is in the README."""

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
    extra_connectors: tuple[str, ...] = ()
    # Where caller-chosen judge endpoints may point besides the public internet, and what the
    # server's key may buy (fair_forge_core.connectors.EndpointPolicy).
    allowed_endpoint_networks: tuple[str, ...] = ()
    server_key_models: tuple[str, ...] = ()
    server_key_max_tokens: int = 1024
    cors_allow_origin: str | None = None
    server_api_key_env: str | None = None
    server_api_key_secret_arn: str | None = None
    # Asynchronous jobs (handler.routes.jobs, handler.job_lambdas): where they live, how they are cut, what GET /jobs/{id} returns.
    jobs_bucket: str | None = None
    jobs_state_machine_arn: str | None = None
    jobs_kms_key_id: str | None = None
    jobs_max_conversations: int = 100_000
    jobs_max_turns: int = 1_000_000
    jobs_max_tool_calls: int = 1_000_000
    shard_size: int = 200
    shard_max_turns: int = 2_000
    jobs_max_parallel_shards: int = 10
    jobs_inline_result_bytes: int = 1_000_000
    jobs_result_url_expiry_s: int = 3_600
    jobs_worker_margin_s: float = 10.0

    def endpoint_policy(self) -> EndpointPolicy:
        from fair_forge_core.connectors import EndpointPolicy

        return EndpointPolicy(self.allowed_endpoint_networks, self.server_key_models, self.server_key_max_tokens)

    def retry_policy(self) -> RetryPolicy:
        """The judge's retry policy under these settings (imports the judge, so only when judging)."""
        from fair_forge_core.judges.llm import RetryPolicy

        return RetryPolicy(max_attempts=self.judge_max_attempts, call_timeout_s=self.judge_call_timeout_s)

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            max_body_bytes=_int("FAIR_FORGE_MAX_BODY_BYTES", cls.max_body_bytes),
            max_response_bytes=_int("FAIR_FORGE_MAX_RESPONSE_BYTES", cls.max_response_bytes),
            max_conversations=_int("FAIR_FORGE_MAX_CONVERSATIONS", cls.max_conversations),
            max_turns=_int("FAIR_FORGE_MAX_TURNS", cls.max_turns),
            max_string_chars=_int("FAIR_FORGE_MAX_STRING_CHARS", cls.max_string_chars),
            max_nesting_depth=_int("FAIR_FORGE_MAX_NESTING_DEPTH", cls.max_nesting_depth),
            max_tool_calls_per_turn=_int("FAIR_FORGE_MAX_TOOL_CALLS_PER_TURN", cls.max_tool_calls_per_turn),
            max_tool_calls=_int("FAIR_FORGE_MAX_TOOL_CALLS", cls.max_tool_calls),
            max_assistants=_int("FAIR_FORGE_MAX_ASSISTANTS", cls.max_assistants),
            max_curve_points=_int("FAIR_FORGE_MAX_CURVE_POINTS", cls.max_curve_points),
            sync_budget_s=_float("FAIR_FORGE_SYNC_BUDGET_S", cls.sync_budget_s),
            deadline_margin_s=_float("FAIR_FORGE_DEADLINE_MARGIN_S", cls.deadline_margin_s),
            judge_max_attempts=_int("FAIR_FORGE_JUDGE_MAX_ATTEMPTS", cls.judge_max_attempts),
            judge_call_timeout_s=_float("FAIR_FORGE_JUDGE_CALL_TIMEOUT_S", cls.judge_call_timeout_s),
            extra_connectors=_list("FAIR_FORGE_EXTRA_CONNECTORS"),
            allowed_endpoint_networks=_networks("FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS"),
            server_key_models=_list("FAIR_FORGE_SERVER_KEY_MODELS"),
            server_key_max_tokens=_int("FAIR_FORGE_SERVER_KEY_MAX_TOKENS", cls.server_key_max_tokens),
            cors_allow_origin=os.environ.get("CORS_ALLOW_ORIGIN") or None,
            server_api_key_env=os.environ.get("LLM_API_KEY") or None,
            server_api_key_secret_arn=os.environ.get("LLM_API_KEY_SECRET_ARN") or None,
            jobs_bucket=os.environ.get("JOBS_BUCKET") or None,
            jobs_state_machine_arn=os.environ.get("JOBS_STATE_MACHINE_ARN") or None,
            jobs_kms_key_id=os.environ.get("JOBS_KMS_KEY_ID") or None,
            jobs_max_conversations=_int("FAIR_FORGE_JOBS_MAX_CONVERSATIONS", cls.jobs_max_conversations),
            jobs_max_turns=_int("FAIR_FORGE_JOBS_MAX_TURNS", cls.jobs_max_turns),
            jobs_max_tool_calls=_int("FAIR_FORGE_JOBS_MAX_TOOL_CALLS", cls.jobs_max_tool_calls),
            shard_size=max(1, _int("FAIR_FORGE_SHARD_SIZE", cls.shard_size)),
            shard_max_turns=max(1, _int("FAIR_FORGE_SHARD_MAX_TURNS", cls.shard_max_turns)),
            jobs_max_parallel_shards=max(1, _int("FAIR_FORGE_JOBS_MAX_PARALLEL_SHARDS", cls.jobs_max_parallel_shards)),
            jobs_inline_result_bytes=_int("FAIR_FORGE_JOBS_INLINE_RESULT_BYTES", cls.jobs_inline_result_bytes),
            jobs_result_url_expiry_s=_int("FAIR_FORGE_JOBS_RESULT_URL_EXPIRY_S", cls.jobs_result_url_expiry_s),
            jobs_worker_margin_s=_float("FAIR_FORGE_JOBS_WORKER_MARGIN_S", cls.jobs_worker_margin_s),
        )
