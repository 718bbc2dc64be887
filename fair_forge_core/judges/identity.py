"""Who the judge is: everything that decides its verdicts besides the messages
(`judge_identity`: connector class, model name, sampling parameters, endpoint, deployment,
output mode, and `prompt_hash` of the rubric version and the prompt's template), never an API
key or a header. What the judge cache's key holds (`ledger.JudgeLedger.cache_key`, with
`messages_for_key`), how an ensemble's connectors are told apart (`judges.panel`), and what a
result's provenance records."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage

from fair_forge_core.connectors.rules import ENDPOINT_PARAMS, SAMPLING_PARAMS
from fair_forge_core.judges.prompt import JudgeRequest, build_judge_messages
from fair_forge_core.schemas import EvaluationConfig

RUBRIC_VERSION = "1"
"""The version of the judge's rubric, hashed into `prompt_hash` with the prompt's template.
Any change of the prompt's wording changes the hash by itself; bump this when what a score
means changes without the wording changing (a new parser, new bands read elsewhere)."""

SAMPLING_FIELDS = (*SAMPLING_PARAMS, "logit_bias")
"""The model attributes (and `model_kwargs` keys) that are sampling parameters: the connector
rules' (`SAMPLING_PARAMS`), and `logit_bias`, which also decides a verdict though the server's
key is not lent with it. The only ones read into the cache key as sampling; api keys, headers
and clients never are (an endpoint is, apart: `judge_identity`)."""


def judge_model_name(model: BaseChatModel) -> str:
    """The model name a chat model was configured with (`model_name`, else `model`, else
    LangChain's `ls_model_name`), else its class name."""
    for attribute in ("model_name", "model", "deployment_name"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    try:
        name = model._get_ls_params().get("ls_model_name")
    except Exception:
        name = None
    return name if isinstance(name, str) and name else type(model).__name__


def class_path_of(model: BaseChatModel) -> str:
    return f"{type(model).__module__}.{type(model).__qualname__}"


ENDPOINT_FIELDS = tuple(sorted(name for name in ENDPOINT_PARAMS if "proxy" not in name))
"""The model attributes that may hold the endpoint a chat model calls: the connector rules'
endpoint parameters, less the proxies (which change the route, not the judge)."""


def endpoint_of(model: BaseChatModel) -> str | None:
    """The endpoint a chat model calls when it says (the first `ENDPOINT_FIELDS` attribute set
    to a text), else None (the provider's default)."""
    for name in ENDPOINT_FIELDS:
        value = getattr(model, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def judge_identity(model: BaseChatModel, config: EvaluationConfig) -> dict[str, Any]:
    """Everything that decides a judge's verdicts besides the messages: the key format, the
    connector's class path, the model name, its sampling parameters, its endpoint when it sets
    one (`endpoint_of`: two servers that serve a model of one name are two judges), the output
    mode and the prompt hash. Never an API key or a header. What the judge cache's key holds
    (`JudgeLedger.cache_key`), and how an ensemble's connectors are told apart (`judges.panel`)."""
    identity: dict[str, Any] = {
        "key_format": 1,
        "class_path": class_path_of(model),
        "model": judge_model_name(model),
        "sampling": sampling_parameters(model),
        "output_mode": {
            "structured": config.use_structured_output,
            "method": config.structured_output_method,
        },
        "prompt_hash": prompt_hash(),
    }
    endpoint = endpoint_of(model)
    if endpoint is not None:  # only when set, so that the keys of a provider's default endpoint stay the same
        identity["endpoint"] = endpoint
    for name in DEPLOYMENT_FIELDS:  # which deployment, API version and tier the endpoint serves
        value = getattr(model, name, None)
        if isinstance(value, str) and value:
            identity[name] = value
    return identity


DEPLOYMENT_FIELDS = ("deployment_name", "azure_deployment", "openai_api_version", "api_version", "service_tier")
"""Model attributes that choose what an endpoint serves (an Azure deployment, an API version, a
service tier): part of the judge's identity when set."""


def sampling_parameters(model: BaseChatModel) -> dict[str, Any]:
    """The model's sampling parameters that are set: `SAMPLING_FIELDS` read as attributes,
    then from `model_kwargs` (which wins, as it does in the request). Nothing else."""
    found: dict[str, Any] = {}
    for name in SAMPLING_FIELDS:
        value = getattr(model, name, None)
        if value is not None and not callable(value):
            found[name] = value
    extra = getattr(model, "model_kwargs", None)
    if isinstance(extra, Mapping):
        found.update({name: extra[name] for name in SAMPLING_FIELDS if extra.get(name) is not None})
    return found


def prompt_hash(rubric_version: str | None = None) -> str:
    """sha256 (hex) of the rubric version and the judge prompt's template: the messages
    `build_judge_messages` makes for a placeholder turn, in marker mode (default markers)
    and in structured mode. It changes with any wording of the prompt or the rubric."""
    version = RUBRIC_VERSION if rubric_version is None else rubric_version
    placeholder = JudgeRequest(
        query="{query}",
        answer="{answer}",
        ground_truth="{ground_truth}",
        context="{context}",
        language="{language}",
        observation="{observation}",
    )
    parts = [f"rubric_version={version}"]
    for structured in (False, True):
        parts += [f"{m.type}:{m.content}" for m in build_judge_messages(placeholder, structured=structured)]
    return hashlib.sha256("\n\x00\n".join(parts).encode()).hexdigest()


def messages_for_key(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The messages sent, as the cache key reads them: role and content, in order."""
    return [{"role": m.type, "content": m.content} for m in messages]
