"""The judge's chat model, built from a class path — only from an allowlist.

Shared by the Lambda handler and the CLI, so both apply the same rules, in this order:

1. `class_path` must be one of the allowed spellings, compared exactly (no case
   folding, no trimming). Nothing is imported before this check passes, so
   `os.system` or `builtins.eval` never reach `importlib`.
2. The module is imported and the attribute must be a class subclassing
   LangChain's `BaseChatModel`.
3. Parameters are JSON values; the few that would hand the model live objects or
   hooks (`client`, `http_client`, `callbacks`, …) are refused. Every other name must
   be one the class declares (a field or its alias), or, for a class that forwards
   extra request parameters (`model_kwargs`: ChatOpenAI, ChatGroq), one of the
   providers' request parameters (`FORWARDED_PARAMS`): a typo (`temprature`) is
   refused here, naming it, rather than sent to the provider. A key must be printable
   ASCII (an HTTP header cannot carry "gsk_…"), and an endpoint (`base_url` and the
   like) must be an http(s) URL.
4. If the caller gave no key, the key of `server_key()` (the operator's) is added —
   and then only parameters that choose a model and its sampling
   (`SERVER_KEY_SAFE_PARAMS`) are accepted. A caller who sets anything else (an
   endpoint, a proxy, headers, client options) must bring a key: the operator's key
   never travels to an address or with a header the caller picked. Even then the
   caller may not inflate the operator's bill: one completion (`n` 1), at most
   `EndpointPolicy.server_key_max_tokens` tokens (set when the caller sets none), no
   `service_tier` or `reasoning_effort`, and a model from the operator's list when
   there is one. With no key at all, `no_key_message` (when given) says what to do
   instead of the SDK's advice to set an environment variable, which a caller of a
   deployed service cannot do.
5. An endpoint the caller chose must be an http(s) URL without credentials whose host
   resolves only to public addresses — no loopback, private, link-local (the cloud
   metadata service), shared or reserved range — unless the operator allows those
   networks (`EndpointPolicy.allowed_networks`: a judge in the operator's own VPC, a
   model server on localhost). Path-like parameters (`azure_deployment`,
   `deployment_name`, `api_version`) must be plain names, since SDKs paste them into
   the URL. (The check resolves the host once; a DNS answer that changes between the
   check and the call is not caught here: an egress proxy or VPC rules are the
   backstop for that.)
6. Provider SDK retries are turned off (`max_retries=0`) unless the caller set
   them, because the judge has its own retry budget and the two would multiply.
7. The classes of `REPLY_LIMITED_CONNECTORS` get an async HTTP client of our making
   (`judges.reply_limit`): a reply is read up to `MAX_JUDGE_REPLY_BYTES` and no
   further, and redirects are not followed (a redirect would take the request to an
   address step 5 never checked). A caller's proxy parameter goes to that client.
   Other classes (the optional providers, the operator's extensions) keep their SDK's
   client, without these two guards.

The operator (never the caller) extends the allowlist with `extra_connectors`
(`FAIR_FORGE_EXTRA_CONNECTORS`, comma-separated `module.Class` paths). Where the
operator's key comes from (environment, Secrets Manager) is the caller's business:
this module reads no environment and talks to no service.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import ipaddress
import json
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from fair_forge_core.judges.reply_limit import capped_async_client
from fair_forge_core.redact import redact

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
    # Optional providers: allowed, usable when their package is installed.
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
        "groq_proxy",
        "proxy",
        "anthropic_api_url",
    }
)
# With no key of the caller's, the server's key is attached only if every parameter
# is one of these: they choose a model and its sampling, never where a request goes
# or what it carries (endpoints, proxies, headers, client options are all absent).
SERVER_KEY_SAFE_PARAMS = frozenset(
    {
        "model",
        "model_name",
        "azure_deployment",
        "deployment_name",
        "api_version",
        "openai_api_version",
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "max_completion_tokens",
        "n",
        "seed",
        "stop",
        "frequency_penalty",
        "presence_penalty",
        "reasoning_effort",
        "service_tier",
        "timeout",
        "request_timeout",
        "max_retries",
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
        "http_socket_options",  # would bypass the operator's egress proxy
    }
)
PLAIN_NAME_PARAMS = frozenset({"azure_deployment", "deployment_name", "api_version", "openai_api_version"})
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SERVER_KEY_REFUSED_PARAMS = frozenset({"service_tier", "reasoning_effort"})
_TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")


@dataclass(frozen=True)
class EndpointPolicy:
    """The operator's rules for where a judge may be reached and what the server's key may buy.

    `allowed_networks`: CIDR ranges a caller-chosen endpoint may resolve into besides the
    public internet (none by default). `server_key_models`: the models the server's key
    may be used with (any when empty). `server_key_max_tokens`: the bound on a completion
    with the server's key.
    """

    allowed_networks: tuple[str, ...] = ()
    server_key_models: tuple[str, ...] = ()
    server_key_max_tokens: int = 1024


LOOPBACK_NETWORKS = ("127.0.0.0/8", "::1/128")
"""What the local API and the CLI allow by default: a model server on this machine."""
_SECRET_WORDS = ("key", "token", "secret", "password", "credential")

FORWARDED_PARAMS = frozenset(
    {
        "top_p",
        "top_k",
        "seed",
        "stop",
        "n",
        "frequency_penalty",
        "presence_penalty",
        "max_completion_tokens",
        "reasoning_effort",
        "service_tier",
        "response_format",
        "user",
        "parallel_tool_calls",
        "logprobs",
        "top_logprobs",
        "logit_bias",
    }
)
"""Request parameters of the providers' chat APIs that a class with `model_kwargs` passes
on even where it declares no field for them (ChatGroq has no `top_p` or `seed` field)."""

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


class ConnectorError(ValueError):
    """The connector cannot be built; the message is safe to show to the caller.

    `field` names the request field at fault (``connector.params.temprature``) when
    one is.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ConnectorNotAllowed(ConnectorError):
    """`class_path` is not on the allowlist. Each face adds where the list can be seen."""


@dataclass(frozen=True)
class Judge:
    """A built chat model and the secret values it was given (to mask in logs and messages)."""

    model: BaseChatModel
    secrets: frozenset[str]


def allowed_connectors(extra_connectors: Iterable[str] = ()) -> dict[str, str]:
    """Every accepted spelling → its canonical class path, the operator's extensions included."""
    allowed = {path: path for path in extra_connectors}
    for canonical, aliases in BUILTIN_CONNECTORS.items():
        allowed[canonical] = canonical
        allowed.update(dict.fromkeys(aliases, canonical))
    return allowed


def resolve_class_path(class_path: str, extra_connectors: Iterable[str] = ()) -> str:
    """The canonical class path of an allowed spelling; `ConnectorNotAllowed` for anything else."""
    canonical = allowed_connectors(extra_connectors).get(class_path)
    if canonical is None:
        shown = class_path if len(class_path) <= 120 else class_path[:120] + "…"
        raise ConnectorNotAllowed(f"class_path {json.dumps(shown)} is not an allowed connector")
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


def _looks_secret(name: str) -> bool:
    return any(word in name.lower() for word in _SECRET_WORDS)


def secret_values(params: dict[str, Any]) -> set[str]:
    """String values of parameters whose names look secret (key, token, secret, …)."""
    return {value for name, value in params.items() if isinstance(value, str) and _looks_secret(name)}


def _accepts(cls: type[BaseChatModel], name: str) -> bool:
    """Whether the model takes a constructor argument `name` (a field name or alias)."""
    return any(field == name or info.alias == name for field, info in cls.model_fields.items())


def _param_field(name: str) -> str:
    """`connector.params.<name>` as a field path; a name that is no identifier is quoted (and cut)."""
    shown = name if name.isidentifier() and len(name) <= 80 else json.dumps(name[:80])
    return f"connector.params.{shown}"


def check_param_names(cls: type[BaseChatModel], params: dict[str, Any]) -> None:
    """`ConnectorError` naming the first parameter `cls` would not take (rule 3 of the module
    docstring), with the nearest accepted name as a hint."""
    forwards = "model_kwargs" in cls.model_fields
    accepted = {name for field, info in cls.model_fields.items() for name in (field, info.alias) if name}
    if forwards:
        accepted |= FORWARDED_PARAMS
    for name in sorted(params):
        if name in accepted:
            continue
        field = _param_field(name)
        close = difflib.get_close_matches(name, sorted(accepted), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ConnectorError(f"{field} is not a parameter of {cls.__name__}{hint}", field)


def check_plain_names(params: dict[str, Any]) -> None:
    """`ConnectorError` when a path-like parameter is not a plain name (``../`` would move the URL)."""
    for name in sorted(PLAIN_NAME_PARAMS.intersection(params)):
        value = params[name]
        if not (isinstance(value, str) and _PLAIN_NAME.fullmatch(value) and ".." not in value):
            raise ConnectorError(
                f"connector.params.{name} must be a plain name (letters, digits, '.', '_', '-')", _param_field(name)
            )


def _address_allowed(address: str, networks: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global or any(ip in network for network in networks)


def check_endpoint(name: str, url: Any, allowed_networks: Iterable[str] = ()) -> None:
    """`ConnectorError` unless `url` is an http(s) URL without credentials whose host resolves
    only to public addresses or to `allowed_networks` (rule 6 of the module docstring)."""
    field = _param_field(name)
    if not isinstance(url, str):
        return  # not a URL at all: the class's own validation refuses it
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        # file://, unix sockets and the like would let a caller point the SDK at local resources.
        raise ConnectorError(f"{field} must be an http(s) URL", field)
    if parts.username is not None or parts.password is not None:
        raise ConnectorError(f"{field} may not carry credentials", field)
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)}
    except (OSError, ValueError):
        raise ConnectorError(f"{field}: the host could not be resolved", field) from None
    networks = [ipaddress.ip_network(network, strict=False) for network in allowed_networks]
    if not all(_address_allowed(address, networks) for address in addresses):
        raise ConnectorError(
            f"{field} resolves to a loopback, private, link-local or reserved address, "
            "which this deployment does not allow as a judge endpoint",
            field,
        )


def check_server_key_params(cls: type[BaseChatModel], params: dict[str, Any], policy: EndpointPolicy) -> None:
    """`ConnectorError` when parameters sent with the server's key would inflate its bill
    (rule 4 of the module docstring). `params` are the caller's, before the key is added."""
    for name in sorted(SERVER_KEY_REFUSED_PARAMS.intersection(params)):
        raise ConnectorError(f"connector.params.{name} is not accepted with the server's key", _param_field(name))
    if params.get("n", 1) != 1:
        raise ConnectorError("connector.params.n must be 1 with the server's key", "connector.params.n")
    for name in _TOKEN_PARAMS:
        value = params.get(name)
        if value is not None and not (isinstance(value, int) and 1 <= value <= policy.server_key_max_tokens):
            raise ConnectorError(
                f"connector.params.{name} must be an integer from 1 to {policy.server_key_max_tokens} "
                "with the server's key",
                _param_field(name),
            )
    model = params.get("model", params.get("model_name"))
    if policy.server_key_models and model is not None and model not in policy.server_key_models:
        raise ConnectorError(
            "connector.params.model is not one of the models this deployment's key may be used with "
            f"({', '.join(policy.server_key_models)})",
            "connector.params.model",
        )


def check_key_values(params: dict[str, Any]) -> None:
    """`ConnectorError` when a secret-looking parameter is not printable ASCII (never showing it)."""
    for name in sorted(params):
        value = params[name]
        if isinstance(value, str) and _looks_secret(name) and not (value.isascii() and value.isprintable()):
            field = _param_field(name)
            raise ConnectorError(
                f"{field} must be printable ASCII, as API keys are (look for a pasted '…', quotes or spaces)", field
            )


def _give_reply_limited_client(
    cls: type[BaseChatModel], sdk_and_proxy: tuple[str, str | None], params: dict[str, Any]
) -> None:
    """Set `params["http_async_client"]` to a reply-limited client of the class's SDK.

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


@functools.lru_cache(maxsize=16)
def _reply_limited_client(sdk_name: str, proxy: str | None) -> Any:
    # Shared by every judge of the process, as the SDKs share their default clients: its
    # pooled connections stay open between warm invocations (`evaluate.run_sync` keeps
    # one event loop per process, so they stay usable), instead of one pool per request.
    options: dict[str, Any] = {"follow_redirects": False}
    if proxy is not None:
        options["proxy"] = proxy
    return capped_async_client(importlib.import_module(sdk_name).DefaultAsyncHttpxClient, **options)


def build_chat_model(
    class_path: str,
    params: dict[str, Any],
    *,
    extra_connectors: Iterable[str] = (),
    server_key: ServerKey | None = None,
    no_key_message: str | None = None,
    policy: EndpointPolicy = EndpointPolicy(),
) -> Judge:
    """The judge's chat model, following the rules of the module docstring.

    `server_key` is called (at most once) only when the caller gave no key, chose no
    endpoint, and the model takes an `api_key`. If there is still no key then and
    `no_key_message` is given, it is raised (the caller must bring a key); without it
    the provider SDK may find one in the environment (the CLI's case). Raises
    `ConnectorError` with a message that never contains a secret.
    """
    canonical = resolve_class_path(class_path, extra_connectors)
    refused = sorted(REFUSED_PARAMS.intersection(params))
    if refused:
        raise ConnectorError(f"connector.params may not set {', '.join(refused)}", _param_field(refused[0]))
    cls = load_chat_model_class(canonical)
    check_param_names(cls, params)
    check_key_values(params)
    check_plain_names(params)
    params = dict(params)
    secrets = secret_values(params)
    for name in sorted(ENDPOINT_PARAMS.intersection(params)):
        check_endpoint(name, params[name], policy.allowed_networks)
    has_key = any(params.get(name) for name in KEY_PARAMS)
    unsafe = sorted(set(params) - SERVER_KEY_SAFE_PARAMS)
    if not has_key and unsafe and _accepts(cls, "api_key"):
        # Otherwise the server's key (or one the provider SDK finds in the server's
        # environment) could travel to an endpoint, proxy or header the caller chose.
        raise ConnectorError(
            f"connector.params.api_key is required when connector.params sets {unsafe[0]}: "
            "the server's key is used only with model and sampling parameters",
            "connector.params.api_key",
        )
    if not has_key and _accepts(cls, "api_key"):
        key = server_key() if server_key is not None else None
        if key is not None:
            check_server_key_params(cls, params, policy)
            bounded = next((name for name in _TOKEN_PARAMS if name in params), None)
            if bounded is None and _accepts(cls, "max_tokens"):
                params["max_tokens"] = policy.server_key_max_tokens
            params["api_key"] = key
            secrets.add(key)
        elif no_key_message is not None:
            raise ConnectorError(no_key_message, "connector.params.api_key")
    forwarded = {name: params.pop(name) for name in sorted(params) if not _accepts(cls, name)}
    if forwarded:  # only FORWARDED_PARAMS are left here; handing them over ourselves spares the SDK's warning
        params["model_kwargs"] = {**params.get("model_kwargs", {}), **forwarded}
    if _accepts(cls, "max_retries") and "max_retries" not in params:
        params["max_retries"] = 0
    if canonical in REPLY_LIMITED_CONNECTORS:
        _give_reply_limited_client(cls, REPLY_LIMITED_CONNECTORS[canonical], params)
    try:
        model = cls(**params)
    except Exception as exc:
        raise ConnectorError(f"{type(exc).__name__}: {redact(str(exc), secrets)[:300]}") from None
    return Judge(model=model, secrets=frozenset(secrets))
