"""The fake OpenAI-compatible server, exercised through the real LangChain clients.

Every test talks HTTP to a `FakeLLMServer` on 127.0.0.1 through `ChatOpenAI` or
`ChatGroq` (or urllib for what the clients cannot send), so a change in either
the server or the clients' wire format shows up here.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import BaseMessage
from langchain_groq import ChatGroq
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from fair_forge_core.judges.prompt import JudgeRequest, build_judge_messages
from fair_forge_testing.fake_llm_server import GARBAGE_CONTENT, FakeLLMServer, Reply, judge_responder


class Verdict(BaseModel):
    score: float
    reasoning: str


RIGHT = JudgeRequest(query="What is the capital of France?", answer="It is Paris.", ground_truth="Paris")
WRONG = JudgeRequest(query="What is the capital of France?", answer="It is Lyon.", ground_truth="Paris")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def openai_llm(server: FakeLLMServer, **kwargs: Any) -> ChatOpenAI:
    options: dict[str, Any] = {"model": "gpt-4o-mini", "api_key": "sk-test", "max_retries": 0, "timeout": 5}
    return ChatOpenAI(base_url=server.base_url, **(options | kwargs))


def groq_llm(server: FakeLLMServer, **kwargs: Any) -> ChatGroq:
    options: dict[str, Any] = {
        "model": "llama-3.3-70b-versatile",
        "api_key": "gsk-test",
        "max_retries": 0,
        "timeout": 5,
    }
    return ChatGroq(base_url=server.groq_base_url, **(options | kwargs))


def marker_messages(request: JudgeRequest = RIGHT) -> list[BaseMessage]:
    return build_judge_messages(request, structured=False)


def structured_messages(request: JudgeRequest = RIGHT) -> list[BaseMessage]:
    return build_judge_messages(request, structured=True)


def fenced_json(content: str) -> dict[str, Any]:
    assert content.startswith("```json\n")
    assert content.endswith("\n```")
    return json.loads(content[len("```json\n") : -len("\n```")])


def post(server: FakeLLMServer, path: str, body: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
    """A raw POST to the server: (status, lower-case headers, parsed body)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, json.load(error)


# --------------------------------------------------------------------------- response shapes


def test_marker_mode_returns_fenced_verdict(server: FakeLLMServer) -> None:
    message = openai_llm(server).invoke(marker_messages())

    assert fenced_json(str(message.content)) == {
        "score": 1.0,
        "reasoning": "The answer contains the ground truth 'Paris'.",
    }
    assert message.response_metadata["finish_reason"] == "stop"
    assert message.usage_metadata is not None
    assert message.usage_metadata["total_tokens"] > 0
    assert server.requests[0].path == "/v1/chat/completions"


def test_marker_mode_scores_a_wrong_answer_zero(server: FakeLLMServer) -> None:
    message = openai_llm(server).invoke(marker_messages(WRONG))

    assert fenced_json(str(message.content))["score"] == 0.0


@pytest.mark.parametrize(
    ("method", "expected_shape"),
    [
        ("json_schema", {"response_format": "json_schema"}),
        ("json_mode", {"response_format": "json_object"}),
        ("function_calling", {"tool_choice": "Verdict"}),
    ],
)
def test_openai_structured_output_methods(server: FakeLLMServer, method: str, expected_shape: dict[str, str]) -> None:
    judge = openai_llm(server).with_structured_output(Verdict, method=method)

    right = judge.invoke(structured_messages(RIGHT))
    wrong = judge.invoke(structured_messages(WRONG))

    assert right == Verdict(score=1.0, reasoning="The answer contains the ground truth 'Paris'.")
    assert isinstance(wrong, Verdict)
    assert wrong.score == 0.0
    body = server.requests[0].body
    assert body is not None
    if "response_format" in expected_shape:
        assert body["response_format"]["type"] == expected_shape["response_format"]
        assert "tools" not in body
    else:
        assert body["tool_choice"]["function"]["name"] == expected_shape["tool_choice"]


@pytest.mark.parametrize("method", ["json_schema", "json_mode", "function_calling"])
def test_groq_structured_output_methods(server: FakeLLMServer, method: str) -> None:
    verdict = groq_llm(server).with_structured_output(Verdict, method=method).invoke(structured_messages())

    assert verdict == Verdict(score=1.0, reasoning="The answer contains the ground truth 'Paris'.")
    assert server.requests[0].path == "/openai/v1/chat/completions"


def test_groq_marker_mode_and_api_key(server: FakeLLMServer) -> None:
    message = groq_llm(server, api_key="gsk-from-test").invoke(marker_messages(WRONG))

    assert fenced_json(str(message.content))["score"] == 0.0
    assert server.requests[0].authorization == "Bearer gsk-from-test"
    assert server.requests[0].api_key == "gsk-from-test"


def test_authorization_header_is_recorded(server: FakeLLMServer) -> None:
    openai_llm(server, api_key="sk-first").invoke("hello")
    openai_llm(server, api_key="sk-second").invoke("hello")

    assert [r.authorization for r in server.requests] == ["Bearer sk-first", "Bearer sk-second"]
    assert server.call_count == 2


def test_custom_responder_sees_the_request_and_can_return_tool_calls() -> None:
    seen: list[dict[str, Any]] = []

    def responder(request: dict[str, Any]) -> Reply:
        seen.append(request)
        return Reply(tool_calls=[{"name": "Verdict", "arguments": {"score": 0.5, "reasoning": "half"}}])

    with FakeLLMServer(responder) as fake:
        message = openai_llm(fake).invoke("grade this")

    assert seen[0]["messages"][-1] == {"role": "user", "content": "grade this"}
    assert message.tool_calls[0]["name"] == "Verdict"
    assert message.tool_calls[0]["args"] == {"score": 0.5, "reasoning": "half"}
    assert message.response_metadata["finish_reason"] == "tool_calls"


def test_responder_str_is_sent_verbatim_and_can_be_swapped_at_runtime(server: FakeLLMServer) -> None:
    server.responder = lambda request: "plain words"

    assert openai_llm(server).invoke(marker_messages()).content == "plain words"


def test_responder_failure_is_a_500_the_sdk_does_not_retry(server: FakeLLMServer) -> None:
    def broken(request: dict[str, Any]) -> str:
        raise RuntimeError("boom")

    server.responder = broken

    with pytest.raises(openai.InternalServerError, match="boom"):
        openai_llm(server, max_retries=2).invoke("hello")
    assert server.call_count == 1


def test_default_responder_without_evaluation_data_scores_zero() -> None:
    verdict = judge_responder({"messages": [{"role": "user", "content": "no data here"}]})

    assert verdict["score"] == 0.0


def test_streaming_is_rejected_with_400(server: FakeLLMServer) -> None:
    with pytest.raises(openai.BadRequestError, match="Streaming is not supported"):
        openai_llm(server, streaming=True).invoke("hello")
    assert server.status_counts[400] == 1


def test_unknown_path_and_broken_body(server: FakeLLMServer) -> None:
    status, _, body = post(server, "/v1/responses", b"{}")
    assert status == 404
    assert body["error"]["type"] == "invalid_request_error"

    status, _, body = post(server, "/v1/chat/completions", b"not json")
    assert status == 400
    assert "JSON" in body["error"]["message"]


# --------------------------------------------------------------------------- script


def test_script_is_consumed_in_order_then_the_responder_answers(server: FakeLLMServer) -> None:
    server.script = [Reply(status=500), Reply(content="garbage"), Reply(status=401), {"score": 0.25}]
    llm = openai_llm(server)

    with pytest.raises(openai.InternalServerError):
        llm.invoke(marker_messages())
    assert llm.invoke(marker_messages()).content == "garbage"
    with pytest.raises(openai.AuthenticationError) as auth_error:
        llm.invoke(marker_messages())
    assert auth_error.value.code == "invalid_api_key"
    assert auth_error.value.type == "invalid_request_error"
    assert fenced_json(str(llm.invoke(marker_messages()).content)) == {"score": 0.25}
    assert fenced_json(str(llm.invoke(marker_messages()).content))["score"] == 1.0

    assert server.script == []
    assert [r.status for r in server.requests] == [500, 200, 401, 200, 200]
    assert server.status_counts == {500: 1, 200: 3, 401: 1}


def test_scripted_429_carries_retry_after_and_an_openai_error_body(server: FakeLLMServer) -> None:
    server.enqueue(Reply(status=429, retry_after_s=0.25))

    with pytest.raises(openai.RateLimitError) as error:
        openai_llm(server).invoke("hello")

    headers = error.value.response.headers
    assert headers["retry-after-ms"] == "250"
    assert float(headers["retry-after"]) == 0.25
    assert error.value.code == "rate_limit_exceeded"
    assert set(error.value.body) >= {"message", "type", "code"}  # type: ignore[arg-type]


def test_sdk_retries_after_a_scripted_429(server: FakeLLMServer) -> None:
    server.enqueue(Reply(status=429, retry_after_s=0.05))

    message = openai_llm(server, max_retries=1).invoke(marker_messages())

    assert fenced_json(str(message.content))["score"] == 1.0
    assert [r.status for r in server.requests] == [429, 200]


def test_hang_outlasts_the_client_timeout_and_stop_does_not_wait_for_it() -> None:
    fake = FakeLLMServer(script=[Reply(hang_s=30)])
    try:
        with pytest.raises(openai.APITimeoutError):
            openai_llm(fake, timeout=0.2).invoke("hello")
    finally:
        stopper = threading.Thread(target=fake.stop)
        stopper.start()
        # Not a speed check: stop() either returns before the 30 s hang ends or it waits for it.
        stopper.join(timeout=25)
    assert not stopper.is_alive()


# --------------------------------------------------------------------------- latency and rate limit


def test_latency_does_not_serialise_concurrent_requests() -> None:
    async def fire(fake: FakeLLMServer) -> list[BaseMessage]:
        llm = openai_llm(fake)
        return await asyncio.gather(*(llm.ainvoke(marker_messages()) for _ in range(8)))

    with FakeLLMServer(latency_s=0.2) as fake:
        replies = asyncio.run(fire(fake))

    assert len(replies) == 8
    assert fake.status_counts == {200: 8}
    assert fake.max_in_flight >= 2


def test_rate_limit_answers_429_beyond_the_limit() -> None:
    async def fire(fake: FakeLLMServer) -> list[Any]:
        llm = openai_llm(fake)
        calls = (llm.ainvoke(f"hello {i}") for i in range(10))
        return await asyncio.gather(*calls, return_exceptions=True)

    with FakeLLMServer(rate_limit_rps=3) as fake:
        results = asyncio.run(fire(fake))

    limited = [r for r in results if isinstance(r, openai.RateLimitError)]
    assert fake.status_counts[429] >= 1
    assert len(limited) == fake.status_counts[429]
    assert "retry-after-ms" in limited[0].response.headers
    assert 0 < float(limited[0].response.headers["retry-after"]) <= 1.0


def test_settings_change_at_runtime_and_are_validated(server: FakeLLMServer) -> None:
    server.rate_limit_rps = 1
    llm = openai_llm(server)
    llm.invoke("first")
    with pytest.raises(openai.RateLimitError):
        llm.invoke("second")

    server.rate_limit_rps = None
    llm.invoke("third")
    assert server.status_counts == {200: 2, 429: 1}

    with pytest.raises(ValueError):
        server.garbage_fraction = 1.5
    with pytest.raises(ValueError):
        server.latency_s = -1


# --------------------------------------------------------------------------- seeded faults


def test_fail_first_attempt_fails_only_the_first_attempt(server: FakeLLMServer) -> None:
    server.fail_first_attempt_fraction = 1.0
    llm = openai_llm(server)

    with pytest.raises(openai.InternalServerError):
        llm.invoke(marker_messages())
    assert fenced_json(str(llm.invoke(marker_messages()).content))["score"] == 1.0
    with pytest.raises(openai.InternalServerError):
        llm.invoke(marker_messages(WRONG))  # other messages: a distinct request


def test_fail_first_attempt_fraction_is_deterministic_per_seed() -> None:
    def failing_prompts(seed: int) -> list[int]:
        with FakeLLMServer(fail_first_attempt_fraction=0.5, seed=seed) as fake:
            llm = openai_llm(fake)
            failed = []
            for i in range(16):
                try:
                    llm.invoke(f"question {i}")
                except openai.InternalServerError:
                    failed.append(i)
            return failed

    first = failing_prompts(seed=7)
    assert first == failing_prompts(seed=7)
    assert 0 < len(first) < 16


def test_garbage_fraction_sends_unparseable_content(server: FakeLLMServer) -> None:
    server.garbage_fraction = 1.0

    assert openai_llm(server).invoke(marker_messages()).content == GARBAGE_CONTENT
    with pytest.raises(OutputParserException):
        openai_llm(server).with_structured_output(Verdict, method="json_mode").invoke(structured_messages())


def test_timeout_fraction_hangs_past_the_client_timeout(server: FakeLLMServer) -> None:
    server.timeout_fraction = 1.0
    server.hang_s = 5

    with pytest.raises(openai.APITimeoutError):
        openai_llm(server, timeout=0.2).invoke("hello")


def test_reset_stats(server: FakeLLMServer) -> None:
    openai_llm(server).invoke("hello")
    server.reset_stats()

    assert server.requests == []
    assert server.call_count == 0
    assert server.max_in_flight == 0
    assert server.status_counts == {}
