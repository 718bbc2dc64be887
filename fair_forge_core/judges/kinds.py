"""The registry of judges, keyed by judge name, with its built-in kinds registered: "llm", the
LLM judge (`judges.llm`, the default for every chat model no registration names), and
"reference", the offline rules judge (`judges.offline`, for `ReferenceJudge`). Import the
registry's functions from here (`judges.base` defines them, and imports no judge).

The offline judge registers here by its class path, and `judges.offline` (with the reference
rules it scores by, `judges.reference`) is imported when a `ReferenceJudge` is first judged
with: a request on another connector does not load them (#27: the first request imports only
what it uses). Importing `judges.offline` registers its `rules_judge` for the same class, the
same kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fair_forge_core.judges import llm as _llm  # noqa: F401  (registers "llm")
from fair_forge_core.judges.base import (
    Judge,
    RunContext,
    is_offline,
    judge_for,
    judge_named,
    judge_names,
    register_judge,
    registration_for,
    registration_for_class_path,
)
from fair_forge_core.schemas import EvaluationConfig

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

__all__ = [
    "is_offline",
    "judge_for",
    "judge_named",
    "judge_names",
    "register_judge",
    "registration_for",
    "registration_for_class_path",
]

REFERENCE_JUDGE_CLASS = "fair_forge_core.judges.reference.model.ReferenceJudge"
"""`model_class_path(ReferenceJudge)`: where the class is defined (tested)."""


@register_judge("reference", model_class=REFERENCE_JUDGE_CLASS, offline=True)
def _rules_judge(model: BaseChatModel, config: EvaluationConfig, context: RunContext) -> Judge:
    """`judges.offline.rules_judge`, imported on first use."""
    from fair_forge_core.judges.offline import rules_judge

    return rules_judge(model, config, context)
