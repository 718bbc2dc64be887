"""The judge's chat model, built from a caller's class path — only from an allowlist.

Rules, in the order they are applied:

1. `class_path` must be one of the allowed spellings, compared exactly (no case
   folding, no trimming). Nothing is imported before this check passes, so
   `os.system` or `builtins.eval` never reach `importlib`.
2. The module is imported and the attribute must be a class subclassing
   LangChain's `BaseChatModel`.
3. Parameters are JSON values; the few that would hand the model live objects or
   hooks (`client`, `http_client`, `callbacks`, …) are refused, and an endpoint
   (`base_url` and the like) must be an http(s) URL.
4. If the caller gave no key, the server's key (`LLM_API_KEY`, or the Secrets
   Manager secret `LLM_API_KEY_SECRET_ARN`) is added. A caller who chooses the
   endpoint (`base_url` and the like) must bring a key: the server's key never
   travels to an address the caller picked.
5. Provider SDK retries are turned off (`max_retries=0`) unless the caller set
   them, because the judge has its own retry budget and the two would multiply.

The operator extends the allowlist with `FAIR_FORGE_EXTRA_CONNECTORS`
(comma-separated `module.Class` paths); a caller cannot.

The rules themselves live in `fair_forge_core.connectors` (the CLI applies them
too); this module adds what only the service has: the settings, the server's key
from the environment or Secrets Manager, and a pointer to `GET /health` when a
class path is refused.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from fair_forge_core import connectors as core
from fair_forge_core.connectors import (
    BUILTIN_CONNECTORS,
    ENDPOINT_PARAMS,
    KEY_PARAMS,
    REFUSED_PARAMS,
    ConnectorError,
    ConnectorNotAllowed,
    Judge,
    load_chat_model_class,
    secret_values,
)
from handler.settings import Settings

__all__ = [
    "BUILTIN_CONNECTORS",
    "ENDPOINT_PARAMS",
    "KEY_PARAMS",
    "REFUSED_PARAMS",
    "ConnectorError",
    "Judge",
    "allowed_connectors",
    "build_judge",
    "load_chat_model_class",
    "resolve_class_path",
    "secret_from_secrets_manager",
    "secret_values",
    "server_api_key",
]

_SEE_HEALTH = "see GET /health for the list"


def allowed_connectors(settings: Settings) -> dict[str, str]:
    """Every accepted spelling → its canonical class path, operator extensions included."""
    return core.allowed_connectors(settings.extra_connectors)


def resolve_class_path(class_path: str, settings: Settings) -> str:
    """The canonical class path of an allowed spelling; `ConnectorError` for anything else."""
    try:
        return core.resolve_class_path(class_path, settings.extra_connectors)
    except ConnectorNotAllowed as exc:
        raise ConnectorNotAllowed(f"{exc}; {_SEE_HEALTH}") from None


@functools.cache
def secret_from_secrets_manager(secret_arn: str) -> str:
    """The API key in a Secrets Manager secret: its plain string, or the `api_key` of a JSON one.

    Fetched once per container (cached), since the secret changes rarely and each
    call costs latency and money.
    """
    import boto3

    value = boto3.client("secretsmanager").get_secret_value(SecretId=secret_arn)["SecretString"]
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    if isinstance(parsed, dict) and isinstance(parsed.get("api_key"), str):
        return parsed["api_key"]
    return value


def server_api_key(settings: Settings) -> str | None:
    """The service's own provider key: `LLM_API_KEY`, else the secret `LLM_API_KEY_SECRET_ARN`."""
    if settings.server_api_key_env:
        return settings.server_api_key_env
    if settings.server_api_key_secret_arn:
        try:
            return secret_from_secrets_manager(settings.server_api_key_secret_arn)
        except Exception as exc:
            raise ConnectorError(f"the server's API key could not be read ({type(exc).__name__})") from None
    return None


def build_judge(class_path: str, params: dict[str, Any], settings: Settings) -> Judge:
    """The judge's chat model for a request, following the rules of the module docstring."""
    try:
        return core.build_chat_model(
            class_path,
            params,
            extra_connectors=settings.extra_connectors,
            server_key=lambda: server_api_key(settings),
        )
    except ConnectorNotAllowed as exc:
        raise ConnectorNotAllowed(f"{exc}; {_SEE_HEALTH}") from None
