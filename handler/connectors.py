"""The judge's chat model, built from a caller's class path — only from an allowlist.

Rules, in the order they are applied:

1. `class_path` must be one of the allowed spellings, compared exactly (no case
   folding, no trimming). Nothing is imported before this check passes, so
   `os.system` or `builtins.eval` never reach `importlib`.
2. The module is imported and the attribute must be a class subclassing
   LangChain's `BaseChatModel`.
3. Parameters are JSON values; the few that would hand the model live objects or
   hooks (`client`, `http_client`, `callbacks`, …) are refused.
4. If the caller gave no key, the server's key (`LLM_API_KEY`, or the Secrets
   Manager secret `LLM_API_KEY_SECRET_ARN`) is added. A caller who chooses the
   endpoint (`base_url` and the like) must bring a key: the server's key never
   travels to an address the caller picked.
5. Provider SDK retries are turned off (`max_retries=0`) unless the caller set
   them, because the judge has its own retry budget and the two would multiply.

The operator extends the allowlist with `FAIR_FORGE_EXTRA_CONNECTORS`
(comma-separated `module.Class` paths); a caller cannot.
"""

from __future__ import annotations

import functools
import importlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fair_forge_core.redact import redact
from handler.settings import Settings

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

# canonical class path → other accepted spellings of it
BUILTIN_CONNECTORS: dict[str, tuple[str, ...]] = {
    "fair_forge_core.judges.ReferenceJudge": ("fair_forge_core.judges.reference.ReferenceJudge",),
    "langchain_groq.chat_models.ChatGroq": ("langchain_groq.ChatGroq",),
    "langchain_openai.chat_models.ChatOpenAI": (
        "langchain_openai.ChatOpenAI",
        "langchain_openai.chat_models.base.ChatOpenAI",
    ),
    "langchain_openai.chat_models.AzureChatOpenAI": (
        "langchain_openai.AzureChatOpenAI",
        "langchain_openai.chat_models.azure.AzureChatOpenAI",
    ),
    # Optional providers: allowed, usable when their package is installed in the image.
    "langchain_google_genai.chat_models.ChatGoogleGenerativeAI": ("langchain_google_genai.ChatGoogleGenerativeAI",),
    "langchain_ollama.chat_models.ChatOllama": ("langchain_ollama.ChatOllama",),
    "langchain_anthropic.chat_models.ChatAnthropic": ("langchain_anthropic.ChatAnthropic",),
}

ENDPOINT_PARAMS = frozenset(
    {
        "base_url",
        "openai_api_base",
        "api_base",
        "azure_endpoint",
        "endpoint",
        "endpoint_url",
        "groq_api_base",
        "host",
        "openai_proxy",
        "proxy",
        "default_headers",
    }
)
KEY_PARAMS = ("api_key", "openai_api_key", "groq_api_key", "google_api_key", "anthropic_api_key")
REFUSED_PARAMS = frozenset(
    {
        "client",
        "async_client",
        "root_client",
        "root_async_client",
        "http_client",
        "http_async_client",
        "callbacks",
        "callback_manager",
        "cache",
        "rate_limiter",
    }
)
_SECRET_WORDS = ("key", "token", "secret", "password", "credential")


class ConnectorError(ValueError):
    """The connector cannot be built; the message is safe to return to the caller."""


@dataclass(frozen=True)
class Judge:
    """A built chat model and the secret values it was given (to mask in logs)."""

    model: BaseChatModel
    secrets: frozenset[str]


def allowed_connectors(settings: Settings) -> dict[str, str]:
    """Every accepted spelling → its canonical class path, operator extensions included."""
    allowed = {path: path for path in settings.extra_connectors}
    for canonical, aliases in BUILTIN_CONNECTORS.items():
        allowed[canonical] = canonical
        allowed.update(dict.fromkeys(aliases, canonical))
    return allowed


def resolve_class_path(class_path: str, settings: Settings) -> str:
    """The canonical class path of an allowed spelling; `ConnectorError` for anything else."""
    canonical = allowed_connectors(settings).get(class_path)
    if canonical is None:
        shown = class_path if len(class_path) <= 120 else class_path[:120] + "…"
        raise ConnectorError(
            f"class_path {json.dumps(shown)} is not an allowed connector; see GET /health for the list"
        )
    return canonical


def load_chat_model_class(canonical: str) -> type[BaseChatModel]:
    """Import an allowed class path and check it is a LangChain chat model."""
    from langchain_core.language_models.chat_models import BaseChatModel

    module_name, _, class_name = canonical.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise ConnectorError(f"{canonical} is allowed but its package is not installed") from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseChatModel)):
        raise ConnectorError(f"{canonical} is not a LangChain chat model")
    return cls


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


def secret_values(params: dict[str, Any]) -> set[str]:
    """String values of parameters whose names look secret (key, token, secret, …)."""
    return {
        value
        for name, value in params.items()
        if isinstance(value, str) and any(word in name.lower() for word in _SECRET_WORDS)
    }


def _accepts(cls: type[BaseChatModel], name: str) -> bool:
    """Whether the model takes a constructor argument `name` (a field name or alias)."""
    return any(field == name or info.alias == name for field, info in cls.model_fields.items())


def build_judge(class_path: str, params: dict[str, Any], settings: Settings) -> Judge:
    """The judge's chat model for a request, following the rules of the module docstring."""
    canonical = resolve_class_path(class_path, settings)
    refused = sorted(REFUSED_PARAMS.intersection(params))
    if refused:
        raise ConnectorError(f"connector.params may not set {', '.join(refused)}")
    cls = load_chat_model_class(canonical)
    params = dict(params)
    secrets = secret_values(params)
    has_key = any(params.get(name) for name in KEY_PARAMS)
    chosen_endpoint = sorted(name for name in ENDPOINT_PARAMS if params.get(name) not in (None, ""))
    if not has_key and chosen_endpoint:
        # Without this, the provider SDK could fall back to a key from the server's
        # environment and send it to the caller's address.
        raise ConnectorError(f"connector.params.api_key is required when connector.params sets {chosen_endpoint[0]}")
    if not has_key and _accepts(cls, "api_key"):
        key = server_api_key(settings)
        if key is not None:
            params["api_key"] = key
            secrets.add(key)
    if _accepts(cls, "max_retries") and "max_retries" not in params:
        params["max_retries"] = 0
    try:
        model = cls(**params)
    except Exception as exc:
        raise ConnectorError(f"{type(exc).__name__}: {redact(str(exc), secrets)[:300]}") from None
    return Judge(model=model, secrets=frozenset(secrets))
