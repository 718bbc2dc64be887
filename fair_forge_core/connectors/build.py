"""Building the judge's chat model from a checked request (the order of the package docstring), with
the reply-limited HTTP client of step 7."""

from __future__ import annotations

import functools
import importlib
import itertools
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fair_forge_core.connectors.openai_body import skip_message_transform
from fair_forge_core.judges.reply_limit import capped_async_client, sync_client
from fair_forge_core.redact import redact

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

from fair_forge_core.connectors.allowlist import load_chat_model_class, resolve_class_path
from fair_forge_core.connectors.rules import (
    ENDPOINT_PARAMS,
    KEY_PARAMS,
    REFUSED_PARAMS,
    SERVER_KEY_SAFE_PARAMS,
    TOKEN_PARAMS,
    ConnectorError,
    EndpointPolicy,
    accepts,
    check_endpoint,
    check_key_values,
    check_param_names,
    check_plain_names,
    check_server_key_params,
    param_field,
    secret_values,
)

DEFAULT_POLICY = EndpointPolicy()

ServerKey = Callable[[], str | None]

REPLY_LIMITED_CONNECTORS: dict[str, tuple[str, str | None]] = {
    "langchain_openai.chat_models.ChatOpenAI": ("openai", "openai_proxy"),
    "langchain_openai.chat_models.AzureChatOpenAI": ("openai", None),
    "langchain_groq.chat_models.ChatGroq": ("groq", None),
}
"""Class path → (the SDK whose `DefaultAsyncHttpxClient` the class takes as
`http_async_client`, the class's proxy parameter that it would otherwise turn into a
client of its own and refuses alongside ours). AzureChatOpenAI and ChatGroq declare a
proxy field but never use it."""


@dataclass(frozen=True)
class Judge:
    """A built chat model, the secret values it was given (to mask in logs and messages), and
    whether it calls with the server's key (`server_key`: the operator pays for its calls)."""

    model: BaseChatModel
    secrets: frozenset[str]
    server_key: bool = False


_recipe_tokens = itertools.count(1)


@dataclass(frozen=True)
class ModelRecipe:
    """What `instantiate` builds a checked chat model from: the canonical class path and the
    params every rule of `build_chat_model` has already passed (keys, the server's key and its
    token bound, forwarded params, `max_retries`). A judge worker process builds the same model
    from it (`judges.processes`): the same class, params and reply-limited client, so the same
    requests on the wire. It holds the keys: it travels only to this process's own children."""

    class_path: str
    params: dict[str, Any]
    token: int = field(default_factory=lambda: next(_recipe_tokens), compare=False)
    """Unique in this process: what a worker keeps the model it built from this recipe by."""


def _give_reply_limited_client(
    cls: type[BaseChatModel], sdk_and_proxy: tuple[str, str | None], params: dict[str, Any]
) -> None:
    """Set `params["http_async_client"]` to a reply-limited client of the class's SDK, and
    `params["http_client"]` to its sync client on the same SSL context (`reply_limit.sync_client`:
    never called by a judge).

    The proxy the class would have used (the caller's parameter, else the field's own
    default, which may come from the environment: `OPENAI_PROXY`) moves to our client.
    """
    sdk_name, proxy_param = sdk_and_proxy
    proxy = None
    if proxy_param is not None:
        field = cls.model_fields[proxy_param]
        proxy = params.pop(proxy_param) if proxy_param in params else field.get_default(call_default_factory=True)
        params[proxy_param] = None
    params["http_async_client"] = _reply_limited_client(sdk_name, proxy or None)
    params["http_client"] = _sync_client(sdk_name, proxy or None)


@functools.lru_cache(maxsize=16)
def _reply_limited_client(sdk_name: str, proxy: str | None) -> Any:
    # Shared by every judge of the process, as the SDKs share their default clients: its
    # pooled connections stay open between warm invocations (`evaluate.run_sync` keeps
    # one event loop per process, so they stay usable), instead of one pool per request.
    return capped_async_client(importlib.import_module(sdk_name).DefaultAsyncHttpxClient, **_client_options(proxy))


@functools.lru_cache(maxsize=16)
def _sync_client(sdk_name: str, proxy: str | None) -> Any:
    return sync_client(importlib.import_module(sdk_name).DefaultHttpxClient, **_client_options(proxy))


def _client_options(proxy: str | None) -> dict[str, Any]:
    """What both HTTP clients of a judge are given: no redirect followed, the caller's proxy if any."""
    return {"follow_redirects": False} | ({} if proxy is None else {"proxy": proxy})


def build_chat_model(
    class_path: str,
    params: dict[str, Any],
    *,
    extra_connectors: Iterable[str] = (),
    server_key: ServerKey | None = None,
    no_key_message: str | None = None,
    policy: EndpointPolicy = DEFAULT_POLICY,
) -> Judge:
    """The judge's chat model, following the rules of the package docstring.

    `server_key` is called (at most once) only when the caller gave no key, chose no
    endpoint, and the model takes an `api_key`. If there is still no key then and
    `no_key_message` is given, it is raised (the caller must bring a key); without it
    the provider SDK may find one in the environment (the CLI's case). Raises
    `ConnectorError` with a message that never contains a secret.
    """
    canonical = resolve_class_path(class_path, extra_connectors)
    refused = sorted(REFUSED_PARAMS.intersection(params))
    if refused:
        raise ConnectorError(f"connector.params may not set {', '.join(refused)}", param_field(refused[0]))
    cls = load_chat_model_class(canonical)
    check_param_names(cls, params)
    check_key_values(params)
    check_plain_names(params)
    params = dict(params)
    secrets = secret_values(params)
    for name in sorted(ENDPOINT_PARAMS.intersection(params)):
        check_endpoint(name, params[name], policy.allowed_networks)
    has_key = any(params.get(name) for name in KEY_PARAMS)
    uses_server_key = False
    unsafe = sorted(set(params) - SERVER_KEY_SAFE_PARAMS)
    if not has_key and unsafe and accepts(cls, "api_key"):
        # Otherwise the server's key (or one the provider SDK finds in the server's
        # environment) could travel to an endpoint, proxy or header the caller chose.
        raise ConnectorError(
            f"connector.params.api_key is required when connector.params sets {unsafe[0]}: "
            "the server's key is used only with model and sampling parameters",
            "connector.params.api_key",
        )
    if not has_key and accepts(cls, "api_key"):
        key = server_key() if server_key is not None else None
        if key is not None:
            check_server_key_params(cls, params, policy)
            bounded = next((name for name in TOKEN_PARAMS if name in params), None)
            if bounded is None and accepts(cls, "max_tokens"):
                params["max_tokens"] = policy.server_key_max_tokens
            params["api_key"] = key
            secrets.add(key)
            uses_server_key = True
        elif no_key_message is not None:
            raise ConnectorError(no_key_message, "connector.params.api_key")
    forwarded = {name: params.pop(name) for name in sorted(params) if not accepts(cls, name)}
    if forwarded:  # only FORWARDED_PARAMS are left here; handing them over ourselves spares the SDK's warning
        params["model_kwargs"] = {**params.get("model_kwargs", {}), **forwarded}
    if accepts(cls, "max_retries") and "max_retries" not in params:
        params["max_retries"] = 0
    recipe = ModelRecipe(canonical, params)
    try:
        model = instantiate(recipe)
    except Exception as exc:
        raise ConnectorError(f"{type(exc).__name__}: {redact(str(exc), secrets)[:300]}") from None
    remember_recipe(model, recipe)
    return Judge(model=model, secrets=frozenset(secrets), server_key=uses_server_key)


def instantiate(recipe: ModelRecipe) -> BaseChatModel:
    """The chat model of `recipe`: its class called with its params and, for the classes of
    `REPLY_LIMITED_CONNECTORS`, the reply-limited HTTP client; exceptions are the class's own."""
    cls = load_chat_model_class(recipe.class_path)
    params = dict(recipe.params)
    if recipe.class_path in REPLY_LIMITED_CONNECTORS:
        _give_reply_limited_client(cls, REPLY_LIMITED_CONNECTORS[recipe.class_path], params)
    model = cls(**params)
    if REPLY_LIMITED_CONNECTORS.get(recipe.class_path, ("", None))[0] == "openai":
        # The same requests without the SDK's walk of the messages (issue #27: a quarter fewer Python calls a judge call).
        skip_message_transform(model)
    return model


_recipes: dict[int, tuple[weakref.ref[Any], ModelRecipe]] = {}


def remember_recipe(model: BaseChatModel, recipe: ModelRecipe) -> None:
    """Keep `recipe` as the one `model` was built from, as long as `model` lives."""
    key = id(model)
    _recipes[key] = (weakref.ref(model, lambda _: _recipes.pop(key, None)), recipe)


def recipe_of(model: BaseChatModel) -> ModelRecipe | None:
    """The recipe `build_chat_model` built `model` from; None for a model built any other way."""
    entry = _recipes.get(id(model))
    return entry[1] if entry is not None and entry[0]() is model else None
