"""A judge added in one file, as an operator would add one: a chat model class for the connector to
name (admitted with `FAIR_FORGE_EXTRA_CONNECTORS=fair_forge_testing.length_judge.LengthModel`)
and, registered beside it, the judge that judges with it. Nothing else in the project knows it.

The judge scores an answer by how close its length is to the ground truth's: the shorter length
over the longer (1.0 when equal, 0.0 when one is empty). A toy, deterministic and offline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from fair_forge_core.judges.base import JudgeSpec, RunContext, register_judge
from fair_forge_core.judges.prompt import JudgeRequest
from fair_forge_core.judges.verdict import Verdict
from fair_forge_core.schemas import EvaluationConfig


class LengthModel(BaseChatModel):
    """What the connector builds: a chat model that is never called (the judge below scores)."""

    model: str = "length"

    @property
    def _llm_type(self) -> str:
        return "length"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="not a judge by itself"))])


@dataclass
class LengthJudge:
    """Shorter length over longer, of the answer and the ground truth."""

    config: EvaluationConfig
    context: RunContext

    def spec(self) -> JudgeSpec:
        return JudgeSpec(kind="length", model="length", offline=True)

    async def judge(self, request: JudgeRequest, sample: int = 0) -> Verdict:
        lengths = sorted((len(request.answer.strip()), len(request.ground_truth.strip())))
        score = lengths[0] / lengths[1] if lengths[1] else 0.0
        self.context.telemetry.calls += 1
        return Verdict(score=score, reasoning=f"lengths {lengths[0]} and {lengths[1]}")


@register_judge("length", model_class=LengthModel, offline=True)
def length_judge(model: BaseChatModel, config: EvaluationConfig, context: RunContext) -> LengthJudge:
    return LengthJudge(config=config, context=context)
