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

Modules: `allowlist` (steps 1 and 2), `rules` (steps 3 to 5: parameters, keys, endpoints,
the server key's bounds), `build` (`build_chat_model`, in the order above, and step 7).
Import from this package.
"""

from fair_forge_core.connectors.allowlist import (
    BUILTIN_CONNECTORS,
    allowed_connectors,
    connector_loadable,
    load_chat_model_class,
    resolve_class_path,
)
from fair_forge_core.connectors.build import REPLY_LIMITED_CONNECTORS, Judge, ServerKey, build_chat_model
from fair_forge_core.connectors.rules import (
    ENDPOINT_PARAMS,
    FORWARDED_PARAMS,
    KEY_PARAMS,
    LOOPBACK_NETWORKS,
    REFUSAL_PREFIX,
    REFUSED_PARAMS,
    SERVER_KEY_SAFE_PARAMS,
    ConnectorError,
    ConnectorNotAllowed,
    EndpointPolicy,
    check_endpoint,
    secret_values,
)

__all__ = [
    "BUILTIN_CONNECTORS",
    "ENDPOINT_PARAMS",
    "FORWARDED_PARAMS",
    "KEY_PARAMS",
    "LOOPBACK_NETWORKS",
    "REFUSAL_PREFIX",
    "REFUSED_PARAMS",
    "REPLY_LIMITED_CONNECTORS",
    "SERVER_KEY_SAFE_PARAMS",
    "ConnectorError",
    "ConnectorNotAllowed",
    "EndpointPolicy",
    "Judge",
    "ServerKey",
    "allowed_connectors",
    "build_chat_model",
    "check_endpoint",
    "connector_loadable",
    "load_chat_model_class",
    "resolve_class_path",
    "secret_values",
]
