"""A plug-in judge, in one file, that abstains in words of its own: it declines every answer whose
query mentions a dose ("I do not grade dosage advice"), and scores the rest 1.0. Admitted with
`FAIR_FORGE_EXTRA_CONNECTORS=fair_forge_testing.declining_judge.DecliningModel`.

It shows that an abstention is the exception's type, `JudgeAbstained`, not its wording: its turns are
unscored with cause `abstained`, and an evaluation where every unscored turn abstained stands (a 200
with readiness `insufficient_evidence`), where a judge error would not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from fair_forge_core.judges.base import JudgeAbstained, JudgeSpec, RunContext, register_judge
from fair_forge_core.judges.prompt import JudgeRequest
from fair_forge_core.judges.verdict import Verdict
from fair_forge_core.schemas import EvaluationConfig

DECLINED = "I do not grade dosage advice"
"""The judge's own words for an abstention (no phrase of the project's)."""


class DecliningModel(BaseChatModel):
    """What the connector builds: a chat model that is never called (the judge below decides)."""

    model: str = "declining"

    @property
    def _llm_type(self) -> str:
        return "declining"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="not a judge by itself"))])


@dataclass
class DecliningJudge:
    """Declines a query that mentions a dose; scores anything else 1.0."""

    def spec(self) -> JudgeSpec:
        return JudgeSpec(kind="declining", model="declining", offline=True)

    async def judge(self, request: JudgeRequest, sample: int = 0) -> Verdict:
        if "dose" in request.query.lower():
            raise JudgeAbstained(DECLINED)
        return Verdict(score=1.0, reasoning="not a dosage question")


@register_judge("declining", model_class=DecliningModel, offline=True)
def declining_judge(model: BaseChatModel, config: EvaluationConfig, context: RunContext) -> DecliningJudge:
    return DecliningJudge()
