"""`handler.settings`: the environment variables of docs/how-to/deploy.md "Configuration by environment", their defaults and clamps,
and a malformed one refused at start with its name, not answered 500 on every request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fair_forge_testing.handler_client import call_handler
from handler.local import make_proxy_event
from handler.settings import Settings, SettingsError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("FAIR_FORGE_") or name.upper() in {
            Settings.variable(field) for field in Settings.model_fields
        }:
            monkeypatch.delenv(name)


def test_defaults() -> None:
    settings = Settings.from_env()
    assert (settings.max_body_bytes, settings.max_turns, settings.sync_budget_s) == (3_000_000, 10_000, 27.0)
    assert (settings.shard_size, settings.jobs_max_parallel_shards, settings.secret_max_age_s) == (200, 10, 300)
    assert settings.extra_connectors == () and settings.allowed_endpoint_networks == ()
    assert settings.cors_allow_origin is None and settings.jobs_bucket is None and settings.server_api_key_env is None


def test_variables_are_read_with_and_without_the_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "FAIR_FORGE_MAX_TURNS": " 12 ",
        "FAIR_FORGE_SYNC_BUDGET_S": "3.5",
        "FAIR_FORGE_EXTRA_CONNECTORS": " my_pkg.A , other.B,",
        "FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS": "10.1.2.3/8,::1/128",
        "FAIR_FORGE_SECRET_MAX_AGE_S": "60",
        "CORS_ALLOW_ORIGIN": "https://example.com",
        "LLM_API_KEY_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:k",
        "JOBS_BUCKET": "bucket",
        "JOBS_STATE_MACHINE_ARN": "arn:sm",
        "JOBS_KMS_KEY_ID": "key",
    }.items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env()
    assert settings.max_turns == 12 and settings.sync_budget_s == 3.5 and settings.secret_max_age_s == 60
    assert settings.extra_connectors == ("my_pkg.A", "other.B")
    assert settings.allowed_endpoint_networks == ("10.0.0.0/8", "::1/128")  # normalised, as before
    assert settings.cors_allow_origin == "https://example.com"
    assert settings.server_api_key_secret_arn.endswith(":secret:k")  # type: ignore[union-attr]
    assert (settings.jobs_bucket, settings.jobs_state_machine_arn, settings.jobs_kms_key_id) == (
        "bucket",
        "arn:sm",
        "key",
    )


def test_blank_means_default_and_the_clamps_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_MAX_TURNS", "")
    monkeypatch.setenv("FAIR_FORGE_SYNC_BUDGET_S", "   ")
    monkeypatch.setenv("CORS_ALLOW_ORIGIN", "")
    for name in ("FAIR_FORGE_SHARD_SIZE", "FAIR_FORGE_SHARD_MAX_TURNS", "FAIR_FORGE_JOBS_MAX_PARALLEL_SHARDS"):
        monkeypatch.setenv(name, "0")
    monkeypatch.setenv("FAIR_FORGE_SECRET_MAX_AGE_S", "-5")
    settings = Settings.from_env()
    assert settings.max_turns == 10_000 and settings.sync_budget_s == 27.0 and settings.cors_allow_origin is None
    assert (settings.shard_size, settings.shard_max_turns, settings.jobs_max_parallel_shards) == (1, 1, 1)
    assert settings.secret_max_age_s == 0


def test_the_environment_is_read_again_when_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_MAX_TURNS", "5")
    assert Settings.from_env().max_turns == 5
    monkeypatch.setenv("FAIR_FORGE_MAX_TURNS", "6")
    assert Settings.from_env().max_turns == 6


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("FAIR_FORGE_MAX_TURNS", "ten", "valid integer"),
        ("FAIR_FORGE_SYNC_BUDGET_S", "27s", "valid number"),
        ("FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS", "10.0.0.0/8,not-a-network", "network"),
        ("FAIR_FORGE_SECRET_MAX_AGE_S", "5 minutes", "valid integer"),
    ],
)
def test_a_malformed_variable_is_named(monkeypatch: pytest.MonkeyPatch, variable: str, value: str, reason: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=rf"^Invalid environment variable {variable}: .*{reason}"):
        Settings.from_env()


def test_every_malformed_variable_is_named_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_MAX_TURNS", "ten")
    monkeypatch.setenv("FAIR_FORGE_SHARD_SIZE", "big")
    with pytest.raises(SettingsError) as raised:
        Settings.from_env()
    assert "FAIR_FORGE_MAX_TURNS" in str(raised.value) and "FAIR_FORGE_SHARD_SIZE" in str(raised.value)


@pytest.mark.parametrize("module", ["handler.app", "handler.job_lambdas"])
def test_a_malformed_variable_fails_the_cold_start(module: str) -> None:
    """The Lambda's init fails (the runtime logs the message), so the deployment is seen broken at once."""
    env = {**os.environ, "FAIR_FORGE_SHARD_SIZE": "two hundred"}
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "SettingsError: Invalid environment variable FAIR_FORGE_SHARD_SIZE: Input should be a valid integer" in (
        done.stderr
    )


# --------------------------------------------------------------------------- the body limit a caller can reach

LAMBDA_EVENT_LIMIT = 6 * 1024 * 1024  # a synchronous invocation's event: 6 MB, 6,291,456 bytes
HEADER_LIMIT = 10_240  # API Gateway REST: request line and headers together


def lambda_event_bytes(event: dict[str, Any]) -> int:
    """The event's size as Lambda counts it: JSON (with json's default ", " and ": ", which are never smaller
    than API Gateway's), non-ASCII as UTF-8."""
    return len(json.dumps(event, ensure_ascii=False).encode())


def worst_body(size: int) -> bytes:
    """A JSON object of exactly `size` bytes whose every byte but 8 is escaped in the event: `\\"` repeated
    (a `\\` and a `"`, each two bytes in a JSON string)."""
    prefix, suffix = b'{"a":"', b'"}'
    pairs, odd = divmod(size - len(prefix) - len(suffix), 2)
    return prefix + b'\\"' * pairs + b"x" * odd + suffix


def api_gateway_event(body: bytes) -> dict[str, Any]:
    """POST /run as API Gateway sends it, with the request line and headers at their limit, all quotes."""
    headers = {"Content-Type": "application/json", "Host": "abc123.execute-api.us-east-1.amazonaws.com"}
    taken = len("POST /prod/run HTTP/1.1\r\n") + sum(len(k) + len(v) + 4 for k, v in headers.items())
    headers["X-Padding"] = '"' * (HEADER_LIMIT - taken - len("X-Padding") - 4)
    return make_proxy_event("POST", "/run", body, headers=headers, stage="prod")


def test_a_body_at_the_limit_always_fits_in_lambdas_event() -> None:
    limit = Settings.from_env().max_body_bytes
    body = worst_body(limit)
    assert len(body) == limit and json.loads(body)  # valid JSON, every byte but 8 a `\` or `"`
    event = api_gateway_event(body)
    size = lambda_event_bytes(event)
    assert size >= 2 * (limit - 8)  # the worst case: the body doubled
    assert size <= LAMBDA_EVENT_LIMIT, f"{size - LAMBDA_EVENT_LIMIT} bytes over Lambda's limit"
    # Base64 (API Gateway sends bodies of binary media types so): 4/3 of the decoded bytes, no escapes.
    binary = make_proxy_event("POST", "/run", b"\xff" * limit, headers=event["headers"], stage="prod")
    assert binary["isBase64Encoded"] is True
    assert lambda_event_bytes(binary) <= LAMBDA_EVENT_LIMIT


def test_a_body_twice_as_large_as_its_share_would_not_fit() -> None:
    """The limit is not needlessly low: the old 6,000,000 (or anything above half the event) cannot arrive."""
    limit = Settings.from_env().max_body_bytes
    assert lambda_event_bytes(api_gateway_event(worst_body(limit * 21 // 20))) > LAMBDA_EVENT_LIMIT
    assert lambda_event_bytes(api_gateway_event(worst_body(6_000_000))) > LAMBDA_EVENT_LIMIT


def test_the_handler_takes_a_body_at_the_limit_and_refuses_one_byte_more() -> None:
    limit = Settings.from_env().max_body_bytes
    at_limit = call_handler(raw=worst_body(limit).decode())
    assert at_limit.status == 400  # read and parsed: refused for what it says (no connector), not its size
    over = call_handler(raw=worst_body(limit + 1).decode())
    assert (over.status, over.body["error"]) == (413, f"Request body too large: {limit + 1} bytes (limit {limit})")
