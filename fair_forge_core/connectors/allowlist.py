"""Which chat-model classes a request may name (steps 1 and 2 of the package docstring)."""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

from fair_forge_core.connectors.rules import ConnectorError, ConnectorNotAllowed

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


def allowed_connectors(extra_connectors: Iterable[str] = ()) -> dict[str, str]:
    """Every accepted spelling → its canonical class path, the operator's extensions included."""
    allowed = {path: path for path in extra_connectors}
    for canonical, aliases in BUILTIN_CONNECTORS.items():
        allowed[canonical] = canonical
        allowed.update(dict.fromkeys(aliases, canonical))
    return allowed


def connector_loadable(class_path: str) -> bool:
    """Whether the package of `class_path` is installed here: its top-level package can be found
    (`importlib.util.find_spec`, which imports nothing for a top-level name; the spec of a
    submodule would import its parents, the provider's SDK, which takes seconds). A class
    path whose package is installed can still fail to load (a missing class): building the
    judge says so."""
    top = class_path.partition(".")[0]
    try:
        return bool(top) and importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):  # a name that is no module name
        return False


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
