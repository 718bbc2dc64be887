"""`connectors.openai_body`: judge messages sent through the openai SDK's `extra_body`, skipping its
request transform (issue #27 target 1). Each test below guards one thing that relies on the SDK or
langchain-openai, and fails when an upgrade changes it; requests go to the fake server on 127.0.0.1."""

from __future__ import annotations

import copy
import datetime
import enum
import json
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import openai
import pytest
from langchain_core.messages import BaseMessage
from openai._utils import PropertyInfo  # the SDK's marker of a renamed or formatted key
from openai._utils._transform import async_maybe_transform
from openai.types.chat import completion_create_params
from pydantic import BaseModel
from typing_extensions import is_typeddict

from fair_forge_core.connectors.build import build_chat_model
from fair_forge_core.connectors.openai_body import UntransformedMessages, _RawCreate, is_plain_json
from fair_forge_core.connectors.rules import EndpointPolicy
from fair_forge_core.evaluate import run_sync
from fair_forge_core.judges.goal import GoalRequest, build_goal_messages
from fair_forge_core.judges.prompt import JudgeRequest, build_judge_messages
from fair_forge_core.judges.verdict import VERDICT_SCHEMA
from fair_forge_testing.fake_llm_server import FakeLLMServer

OPENAI = "langchain_openai.chat_models.ChatOpenAI"
AZURE = "langchain_openai.chat_models.AzureChatOpenAI"
LOCAL = EndpointPolicy(allowed_networks=("127.0.0.0/8",))
API_KEY = "sk-test-judge-0123456789abcdef"


@pytest.fixture
def server():
    with FakeLLMServer() as running:
        yield running


def judge_messages() -> list[list[BaseMessage]]:
    """What the judge sends: turns (marker and structured wording, text that looks like JSON or
    markers, non-ASCII, an observation) and a goal."""
    turn = JudgeRequest(
        query='Quelle est la réponse ? {"score": 1.0} <<<END>>> 日本語',
        answer="Ünïcödé answer\n\twith\x00controls and \\ backslashes",
        ground_truth="42",
        context="ctx",
        language="french",
        observation='{"tool": "calc", "result": [1, 2.5, null, true]}',
    )
    goal = GoalRequest(goal="book a flight", criteria=("cheapest",), transcript='{"turns": [{"user": "hi"}]}')
    return [
        build_judge_messages(turn, structured=False),
        build_judge_messages(turn, structured=True),
        build_goal_messages(goal, structured=False),
    ]


def chat_openai(server: FakeLLMServer, class_path: str = OPENAI) -> Any:
    params: dict[str, Any] = {"api_key": API_KEY, "timeout": 10}
    if class_path == AZURE:  # the fake server does not serve Azure's paths: only built, never called
        params |= {"azure_endpoint": server.base_url, "api_version": "2024-06-01", "azure_deployment": "judge"}
    else:
        params |= {"model": "judge", "base_url": server.base_url}
    return build_chat_model(class_path, params, policy=LOCAL).model


def property_infos(annotation: Any, seen: set[Any]) -> list[PropertyInfo]:
    """Every `PropertyInfo` in `annotation` and the types behind it (TypedDicts walked once)."""
    if get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        return [m for m in metadata if isinstance(m, PropertyInfo)] + property_infos(base, seen)
    if is_typeddict(annotation):
        if annotation in seen:
            return []
        seen.add(annotation)
        hints = get_type_hints(annotation, include_extras=True)
        return [info for hint in hints.values() for info in property_infos(hint, seen)]
    return [info for arg in get_args(annotation) for info in property_infos(arg, seen)]


def test_no_type_behind_the_messages_renames_or_formats_anything() -> None:
    # The transform changes plain JSON only through a PropertyInfo's alias or format (a pydantic
    # object, a date or a file is not plain JSON, and is sent through the SDK's own call).
    for params in (
        completion_create_params.CompletionCreateParamsNonStreaming,
        completion_create_params.CompletionCreateParamsStreaming,
    ):
        seen: set[Any] = set()
        messages = get_type_hints(params, include_extras=True)["messages"]
        infos = property_infos(messages, seen)
        assert [info for info in infos if info.alias is not None or info.format is not None] == []
        assert len(seen) >= 20  # the message and content-part types were walked


@pytest.mark.parametrize("class_path", [OPENAI, AZURE])
def test_the_transform_of_the_messages_we_send_is_the_identity(class_path: str) -> None:
    with FakeLLMServer() as server:
        model = chat_openai(server, class_path)
    for messages in judge_messages():
        payload = model._get_request_payload(messages)
        assert is_plain_json(payload["messages"])
        sent = {"model": payload["model"], "stream": False, "messages": payload["messages"]}
        transformed = run_sync(async_maybe_transform(sent, completion_create_params.CompletionCreateParamsNonStreaming))
        assert json.dumps(transformed) == json.dumps(sent)


@pytest.mark.parametrize("method", [None, "function_calling"], ids=["marker", "function-calling"])
def test_the_request_on_the_wire_and_the_reply_are_the_same(server: FakeLLMServer, method: str | None) -> None:
    # Function calling (tools bound, no response_format) takes the same SDK call as marker mode.
    fast = chat_openai(server)
    assert isinstance(fast.async_client, UntransformedMessages)
    assert isinstance(chat_openai(server, AZURE).async_client, UntransformedMessages)
    usual = chat_openai(server)
    usual.async_client = usual.async_client._completions  # the SDK's own, as before
    given = record_what_the_sdk_is_given(fast)
    models = [fast, usual]
    if method is not None:
        models = [model.with_structured_output(VERDICT_SCHEMA, method=method) for model in models]
    for messages in judge_messages():
        replies = [run_sync(model.ainvoke(messages)) for model in models]
        new, old = server.requests[-2:]
        assert (new.path, new.headers) == (old.path, old.headers)
        assert json.dumps(new.body) == json.dumps(old.body)  # the same keys in the same order
        assert new.body is not None and new.body["messages"] and "extra_body" not in new.body
        if method is None:
            assert replies[0].content == replies[1].content
            assert replies[0].usage_metadata == replies[1].usage_metadata is not None
        else:  # the server numbers its tool calls, so only the parsed arguments can be equal
            assert replies[0] == replies[1] and isinstance(replies[0], dict) and "reasoning" in replies[0]
    assert server.call_count == 2 * len(judge_messages())
    # ... and the fast model took the fast path: the SDK was given no messages to walk.
    assert [(call["messages"], call["extra_body"]["messages"]) for call in given] == [
        ([], usual._get_request_payload(messages)["messages"]) for messages in judge_messages()
    ]


def record_what_the_sdk_is_given(model: Any) -> list[dict[str, Any]]:
    """The parameters `model`'s `UntransformedMessages` passes to the SDK's `with_raw_response.create`,
    recorded as the calls go."""
    sdk = model.async_client.with_raw_response._raw
    given: list[dict[str, Any]] = []

    class Recording:
        async def create(self, **params: Any) -> Any:
            given.append(params)
            return await sdk.create(**params)

    model.async_client.with_raw_response._raw = Recording()
    return given


def test_an_azure_request_on_the_wire_is_the_same(server: FakeLLMServer) -> None:
    # The fake server serves no Azure path, so both get its 404: the requests are what is compared.
    fast, usual = chat_openai(server, AZURE), chat_openai(server, AZURE)
    usual.async_client = usual.async_client._completions
    given = record_what_the_sdk_is_given(fast)
    messages = judge_messages()[0]
    for model in (fast, usual):
        with pytest.raises(openai.NotFoundError):
            run_sync(model.ainvoke(messages))
    new, old = server.requests[-2:]
    assert "/openai/deployments/judge/chat/completions" in new.path
    assert (new.path, new.headers) == (old.path, old.headers)
    assert json.dumps(new.body) == json.dumps(old.body) and new.body is not None and new.body["messages"]
    assert [call["messages"] for call in given] == [[]]


def test_langchain_openai_sends_a_chat_completion_through_with_raw_response_create(server: FakeLLMServer) -> None:
    # Where the speed-up lives: if langchain-openai stops calling this method, it is lost silently.
    model = chat_openai(server)
    raw = model.async_client.with_raw_response
    calls: list[dict[str, Any]] = []

    class Counting:
        async def create(self, **params: Any) -> Any:
            calls.append(params)
            return await raw.create(**params)

    model.async_client.with_raw_response = Counting()
    run_sync(model.ainvoke(judge_messages()[0]))
    assert len(calls) == 1 and calls[0]["messages"][0]["role"] == "system"


class Recorder:
    """Stands in for the SDK's `with_raw_response`: records what `create` is given."""

    def __init__(self) -> None:
        self.given: list[dict[str, Any]] = []

    async def create(self, **params: Any) -> str:
        self.given.append(params)
        return "sent"


PLAIN = [{"role": "system", "content": "rubric"}, {"role": "user", "content": [{"type": "text", "text": "x"}]}]


def test_plain_messages_move_to_extra_body_and_keep_the_callers_extra_body() -> None:
    recorder = Recorder()
    create = _RawCreate(recorder).create
    assert run_sync(create(model="m", messages=PLAIN, stream=False)) == "sent"
    assert run_sync(create(model="m", messages=PLAIN, extra_body={"top_k": 3}))
    assert recorder.given == [
        {"model": "m", "messages": [], "stream": False, "extra_body": {"messages": PLAIN}},
        {"model": "m", "messages": [], "extra_body": {"top_k": 3, "messages": PLAIN}},
    ]


@pytest.mark.parametrize(
    "params",
    [
        {"model": "m", "messages": PLAIN, "stream": True},
        {"model": "m", "messages": PLAIN, "extra_body": {"messages": []}},
        {"model": "m", "messages": []},
        {"model": "m", "messages": tuple(PLAIN)},
        {"model": "m", "messages": [{"role": "user", "content": ("a", "b")}]},
    ],
    ids=["streamed", "extra-body-sets-messages", "empty", "tuple", "nested-tuple"],
)
def test_anything_else_goes_through_the_sdks_own_call_unchanged(params: dict[str, Any]) -> None:
    recorder = Recorder()
    run_sync(_RawCreate(recorder).create(**params))
    assert recorder.given == [params]


class Role(enum.StrEnum):
    USER = "user"


class Part(BaseModel):
    text: str


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ({"a": [1, 2.5, True, None, "x", {"b": []}]}, True),
        ([], True),
        ((1, 2), False),
        ({1: "x"}, False),
        ({"role": Role.USER}, False),
        ([Part(text="x")], False),
        ({"at": datetime.date(2026, 1, 1)}, False),
        ({"b": b"bytes"}, False),
        ({"s": {"x"}}, False),
    ],
)
def test_is_plain_json(value: object, plain: bool) -> None:
    assert is_plain_json(value) is plain


def test_other_connectors_keep_the_sdks_client() -> None:
    model = build_chat_model(
        "langchain_groq.chat_models.ChatGroq", {"model": "judge", "api_key": "gsk_test_0123456789abcdef"}
    ).model
    assert not isinstance(model.async_client, UntransformedMessages)


def test_the_wrapper_copies_and_a_bare_instance_fails_cleanly(server: FakeLLMServer) -> None:
    # copy.copy and unpickling build an instance without __init__: forwarding must not recurse.
    client = chat_openai(server).async_client
    assert copy.copy(client).create == client.create
    bare = UntransformedMessages.__new__(UntransformedMessages)
    with pytest.raises(AttributeError):
        getattr(bare, "create")  # noqa: B009 (the access is what is tested)
    with pytest.raises(AttributeError):
        getattr(_RawCreate.__new__(_RawCreate), "parse")  # noqa: B009
