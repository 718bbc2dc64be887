"""The rules a connector's parameters must follow (steps 3 to 5 of the package docstring): which
parameters exist, which are refused, keys, plain names, endpoints, and what the server's key buys."""

from __future__ import annotations

import ipaddress
import json
import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from fair_forge_core.schemas.json_input import did_you_mean

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel


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
SAMPLING_PARAMS = (
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
)
"""The constructor parameters that choose how a model samples its reply."""
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
        *SAMPLING_PARAMS,
        "service_tier",
        "timeout",
        "request_timeout",
        "max_retries",
    }
)
KEY_PARAMS = ("api_key", "openai_api_key", "groq_api_key", "google_api_key", "anthropic_api_key")
CACHE_SAFE_PARAMS = frozenset(
    {*SERVER_KEY_SAFE_PARAMS, *KEY_PARAMS, "logit_bias", *(name for name in ENDPOINT_PARAMS if "proxy" not in name)}
)
"""The connector parameters with which a request may share the judge cache: a model and its
sampling, where it is served (all part of the cache key: `judges.usage.judge_identity`), the
key (the cache's scope: `judges.cache.cache_scope`) and client options that change nothing of
what the provider receives. Anything else — `extra_body`, headers, query parameters, proxies,
`model_kwargs` beyond sampling — can change what the provider receives or returns unseen by
the key, so a request with it judges every turn without the cache (`cache_unsafe_params`)."""


def cache_unsafe_params(params: dict[str, Any]) -> list[str]:
    """The parameters of `params` that keep a request out of the judge cache (see
    `CACHE_SAFE_PARAMS`), sorted; `model_kwargs` keys are named `model_kwargs.<key>` and are
    safe only when they are sampling parameters."""
    unsafe = sorted(name for name in params if name not in CACHE_SAFE_PARAMS and name != "model_kwargs")
    extra = params.get("model_kwargs")
    if isinstance(extra, dict):
        unsafe += sorted(f"model_kwargs.{key}" for key in extra if key not in (*SAMPLING_PARAMS, "logit_bias"))
    elif extra is not None:
        unsafe.append("model_kwargs")
    return unsafe


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
TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")


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


REFUSAL_PREFIX = "Failed to create LLM connector: "
"""How the service and the CLI introduce a `ConnectorError`'s message (the source's wording)."""


class ConnectorError(ValueError):
    """The connector cannot be built; the message is safe to show to the caller.

    `field` names the request field at fault (``connector.params.temprature``) when
    one is.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    def placed(self, where: str) -> ConnectorError:
        """The same refusal said of the connector at `where` in the request (`connector[1]` in an
        ensemble): `connector.params.x` becomes `connector[1].params.x`, in the message and the
        field; a message not about a `connector.` field is prefixed with `where`."""
        if where == "connector":
            return self
        message = str(self)
        message = (
            where + message.removeprefix("connector") if message.startswith("connector.") else f"{where}: {message}"
        )
        field = None if self.field is None else where + self.field.removeprefix("connector")
        return type(self)(message, field)


class ConnectorNotAllowed(ConnectorError):
    """`class_path` is not on the allowlist. Each face adds where the list can be seen."""


def _looks_secret(name: str) -> bool:
    return any(word in name.lower() for word in _SECRET_WORDS)


def secret_values(params: dict[str, Any]) -> set[str]:
    """String values of parameters whose names look secret (key, token, secret, …)."""
    return {value for name, value in params.items() if isinstance(value, str) and _looks_secret(name)}


def accepts(cls: type[BaseChatModel], name: str) -> bool:
    """Whether the model takes a constructor argument `name` (a field name or alias)."""
    return any(field == name or info.alias == name for field, info in cls.model_fields.items())


def param_field(name: str) -> str:
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
        field = param_field(name)
        raise ConnectorError(f"{field} is not a parameter of {cls.__name__}{did_you_mean(name, accepted)}", field)


def check_plain_names(params: dict[str, Any]) -> None:
    """`ConnectorError` when a path-like parameter is not a plain name (``../`` would move the URL)."""
    for name in sorted(PLAIN_NAME_PARAMS.intersection(params)):
        value = params[name]
        if not (isinstance(value, str) and _PLAIN_NAME.fullmatch(value) and ".." not in value):
            raise ConnectorError(
                f"connector.params.{name} must be a plain name (letters, digits, '.', '_', '-')", param_field(name)
            )


def _address_allowed(address: str, networks: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global or any(ip in network for network in networks)


def check_endpoint(name: str, url: Any, allowed_networks: Iterable[str] = ()) -> None:
    """`ConnectorError` unless `url` is an http(s) URL without credentials whose host resolves
    only to public addresses or to `allowed_networks` (rule 6 of the module docstring)."""
    field = param_field(name)
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
        raise ConnectorError(f"connector.params.{name} is not accepted with the server's key", param_field(name))
    if params.get("n", 1) != 1:
        raise ConnectorError("connector.params.n must be 1 with the server's key", "connector.params.n")
    for name in TOKEN_PARAMS:
        value = params.get(name)
        if value is not None and not (isinstance(value, int) and 1 <= value <= policy.server_key_max_tokens):
            raise ConnectorError(
                f"connector.params.{name} must be an integer from 1 to {policy.server_key_max_tokens} "
                "with the server's key",
                param_field(name),
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
            field = param_field(name)
            raise ConnectorError(
                f"{field} must be printable ASCII, as API keys are (look for a pasted '…', quotes or spaces)", field
            )
