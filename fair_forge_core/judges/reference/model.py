"""`ReferenceJudge`: the offline judge as a LangChain chat model (package docstring, "Reply formats")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from fair_forge_core.judges.llm import JudgeAbstained
from fair_forge_core.judges.prompt import read_judge_prompt
from fair_forge_core.judges.reference.rules import score_answer

ABSTAIN_MESSAGE = "the offline judge cannot decide this turn"
"""The message of every abstention of the offline judge (its reasoning says why)."""

INLINE_MAX_CHARS = 1000  # `_agenerate` scores a longer judge message in a worker thread


def _text_of(message: BaseMessage) -> str:
    """The text of a message, its text blocks joined when the content is a list."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        block if isinstance(block, str) else str(block.get("text", "")) if isinstance(block, dict) else ""
        for block in content
    )


def _last_human(messages: Sequence[BaseMessage]) -> BaseMessage | None:
    """The last human message, None without one."""
    return next((m for m in reversed(messages) if isinstance(m, HumanMessage) or m.type == "human"), None)


def _tool_name(tools: Sequence[dict[str, Any]], tool_choice: Any) -> str | None:
    """The tool to call: one with a `score` parameter, else the one named by `tool_choice`, else the first."""
    names = [t.get("function", {}).get("name") or t.get("name") for t in tools]
    for tool, name in zip(tools, names, strict=True):
        params = tool.get("function", {}).get("parameters") or tool.get("parameters") or {}
        if name and "score" in params.get("properties", {}):
            return str(name)
    if isinstance(tool_choice, dict):
        chosen = tool_choice.get("function", {}).get("name") or tool_choice.get("name")
        if chosen:
            return str(chosen)
    if isinstance(tool_choice, str) and tool_choice in names:
        return tool_choice
    return str(names[0]) if names and names[0] else None


class ReferenceJudge(BaseChatModel):
    """The offline judge: a `BaseChatModel` that grades with `score_answer`, no model, no network.

    Reads the turn from the last human message (`read_judge_prompt`); answers with a
    tool call when tools are bound (so `with_structured_output` works), otherwise with
    `<bos>{"score": ..., "reasoning": ...}<eos>` using the markers the prompt asked for.
    Without judge data it replies with an explanation and no score, which the caller's
    parser counts as a parse failure. When `score_answer` abstains (its rules conflict or none
    is decisive) it raises `JudgeAbstained(ABSTAIN_MESSAGE)` (the rule's reasoning is its
    `reasoning` attribute): `AnswerJudge` re-raises any `JudgeCallError` at once, so the turn
    is reported unscored with that message, not retried, and left out of n and c. Its only setting is a name, `model` (as in the
    provider classes); the connector rules refuse any other parameter.
    """

    model_config = ConfigDict(populate_by_name=True)

    model_name: str = Field("fair-forge-reference", alias="model")

    @property
    def _llm_type(self) -> str:
        return "fair-forge-reference"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as OpenAI tool schemas; the judge then replies with a call to the score tool."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, **kwargs))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # A short turn takes at most about 10 ms: scored inline. A long one (up to about half a second
        # for 3 x 100,000 characters) goes to a worker thread, so that it neither blocks the event
        # loop nor outlives a caller's timeout (asyncio.wait_for returns; the thread finishes).
        human = _last_human(messages)
        if human is None or len(_text_of(human)) <= INLINE_MAX_CHARS:
            message = self._reply(messages, **kwargs)
        else:
            message = await asyncio.to_thread(self._reply, messages, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _reply(
        self,
        messages: list[BaseMessage],
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **_: Any,
    ) -> AIMessage:
        human = _last_human(messages)
        text = _text_of(human) if human is not None else ""
        prompt = read_judge_prompt(text) if text else None
        if prompt is None:
            return AIMessage(
                content="No evaluation data found in the last human message, so no score is given "
                "(expected the judge prompt built by build_judge_messages)."
            )
        score, reasoning = score_answer(prompt.request.query, prompt.request.answer, prompt.request.ground_truth)
        if score is None:
            raise JudgeAbstained(ABSTAIN_MESSAGE, reasoning)
        verdict = {"score": score, "reasoning": reasoning}
        name = _tool_name(tools, tool_choice) if tools and tool_choice != "none" else None
        if name:
            return AIMessage(
                content="",
                tool_calls=[{"name": name, "args": verdict, "id": "call_reference_judge", "type": "tool_call"}],
            )
        return AIMessage(content=f"{prompt.bos}{json.dumps(verdict, ensure_ascii=False)}{prompt.eos}")
