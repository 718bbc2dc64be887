"""The fake Batch API, exercised through the real `openai` SDK (sync and async) over HTTP.

Every test talks to a `FakeBatchServer` on 127.0.0.1. What a batch line gets must be what the
same body gets online from the same server, so the comparison calls the chat-completions
endpoint directly; the other tests walk a batch through its statuses and check the files,
counts and errors against what OpenAI's Batch API reference describes.
"""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from langchain_core.messages import BaseMessage
from langchain_openai import ChatOpenAI

from fair_forge_core.judges.prompt import JudgeRequest, build_judge_messages
from fair_forge_testing.fake_azure_batch_api import FakeAzureBatchServer
from fair_forge_testing.fake_batch_api import FakeBatchServer
from fair_forge_testing.fake_llm_server import Reply, openai_usage

KEY = "sk-test"
RIGHT = JudgeRequest(query="What is the capital of France?", answer="It is Paris.", ground_truth="Paris")
WRONG = JudgeRequest(query="What is the capital of France?", answer="It is Lyon.", ground_truth="Paris")
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reasoning": {"type": "string"}},
    "required": ["score", "reasoning"],
}


@pytest.fixture
def server() -> Iterator[FakeBatchServer]:
    with FakeBatchServer() as fake:
        yield fake


def client_for(server: FakeBatchServer, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0, timeout=10, **kwargs)


def wire(messages: list[BaseMessage]) -> list[dict[str, str]]:
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    return [{"role": roles[message.type], "content": str(message.content)} for message in messages]


def judge_body(request: JudgeRequest, **extra: Any) -> dict[str, Any]:
    structured = bool(extra)
    return {"model": "gpt-4o-mini", "messages": wire(build_judge_messages(request, structured=structured))} | extra


def three_shapes() -> list[dict[str, Any]]:
    """A marker-text, a json_schema and a tools body: the three renderings of a verdict."""
    schema = {"type": "json_schema", "json_schema": {"name": "Verdict", "schema": VERDICT_SCHEMA}}
    tool = {"type": "function", "function": {"name": "Verdict", "parameters": VERDICT_SCHEMA}}
    return [
        judge_body(RIGHT),
        judge_body(WRONG, response_format=schema),
        judge_body(RIGHT, tools=[tool], tool_choice={"type": "function", "function": {"name": "Verdict"}}),
    ]


def jsonl(bodies: list[dict[str, Any]], **line: Any) -> bytes:
    lines = [
        {"custom_id": f"req-{i}", "method": "POST", "url": "/v1/chat/completions", "body": b}
        for i, b in enumerate(bodies)
    ]
    return "".join(json.dumps(entry | line) + "\n" for entry in lines).encode()


def start(client: openai.OpenAI, bodies: list[dict[str, Any]], **create: Any) -> Any:
    uploaded = client.files.create(file=("batch.jsonl", jsonl(bodies)), purpose="batch")
    return client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h", **create
    )


def poll(client: openai.OpenAI, batch_id: str, limit: int = 10) -> list[Any]:
    """Every batch object seen until a final status (at most `limit` retrieves)."""
    seen = [client.batches.retrieve(batch_id)]
    while seen[-1].status not in ("completed", "failed", "expired", "cancelled") and len(seen) < limit:
        seen.append(client.batches.retrieve(batch_id))
    return seen


def read_lines(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]


def counts(batch: Any) -> dict[str, int]:
    """A batch's `request_counts` as a dict ({} when it has none)."""
    return batch.request_counts.model_dump() if batch.request_counts is not None else {}


def comparable(completion: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion without what differs between two answers to one body: ids, timestamps."""
    result = {key: value for key, value in completion.items() if key not in ("id", "created")}
    result["choices"] = [json.loads(json.dumps(choice)) for choice in completion["choices"]]
    for choice in result["choices"]:
        for call in choice["message"].get("tool_calls") or []:
            call.pop("id")
    return result


def usage_by_length(request: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(request["messages"])
    return openai_usage(len(text), len(request.get("tools") or []) + 7, cached_tokens=len(request["messages"]))


def test_a_batch_line_gets_what_the_same_body_gets_online() -> None:
    bodies = three_shapes()
    with FakeBatchServer(usage=usage_by_length) as server:
        client = client_for(server)
        batch = start(client, bodies, metadata={"suite": "fake-batch"})
        seen = poll(client, batch.id)
        assert batch.status == "validating"
        assert [b.status for b in seen] == ["in_progress", "completed"]
        done = seen[-1]
        assert counts(done) == {"total": 3, "completed": 3, "failed": 0}
        assert done.error_file_id is None and done.metadata == {"suite": "fake-batch"}
        assert client.files.retrieve(done.output_file_id).purpose == "batch_output"
        assert client.files.content(batch.input_file_id).content == jsonl(bodies)
        assert client.files.retrieve(batch.input_file_id).bytes == len(jsonl(bodies))
        assert server.call_count == 0 and server.batch_lines_answered == len(bodies)

        lines = read_lines(client, done.output_file_id)
        assert [line["custom_id"] for line in lines] == [f"req-{i}" for i in range(len(bodies))]
        for body, line in zip(bodies, lines, strict=True):
            assert line["error"] is None and line["response"]["status_code"] == 200
            online = client.chat.completions.with_raw_response.create(**body).http_response.json()
            assert comparable(line["response"]["body"]) == comparable(online)
            assert line["response"]["body"]["usage"] == usage_by_length(body)
        assert server.call_count == len(bodies)

    first, second, third = (line["response"]["body"]["choices"][0]["message"] for line in lines)
    assert '"score": 1.0' in first["content"] and json.loads(second["content"])["score"] == 0.0
    assert json.loads(third["tool_calls"][0]["function"]["arguments"])["score"] == 1.0
    record = server.batches[done.id]
    assert record.completion_window == "24h" and record.metadata == {"suite": "fake-batch"}
    assert [line["body"] for line in record.lines] == bodies and record.retrieves == len(seen)
    assert {request.api_key for request in server.batch_requests} == {KEY}


def test_one_server_serves_chat_openai_and_the_batch_api(server: FakeBatchServer) -> None:
    llm = ChatOpenAI(base_url=server.base_url, model="gpt-4o-mini", api_key=KEY, max_retries=0, timeout=5)
    answer = llm.invoke(build_judge_messages(RIGHT, structured=False))
    assert '"score": 1.0' in str(answer.content)
    batch = start(client_for(server), [judge_body(WRONG)])
    assert poll(client_for(server), batch.id)[-1].status == "completed"
    assert server.call_count == 1 and server.batch_lines_answered == 1


@pytest.mark.parametrize("polls", [0, 1, 3])
def test_a_batch_stays_in_progress_for_polls_until_done_retrieves(polls: int) -> None:
    with FakeBatchServer(polls_until_done=polls) as server:
        client = client_for(server)
        statuses = [b.status for b in poll(client, start(client, [judge_body(RIGHT)]).id)]
    assert statuses == ["in_progress"] * polls + ["completed"]


def test_a_scripted_fault_is_a_line_of_the_error_file() -> None:
    with FakeBatchServer(script=[Reply(status=503, error_message="overloaded, try later")]) as server:
        client = client_for(server)
        done = poll(client, start(client, [judge_body(RIGHT), judge_body(WRONG)]).id)[-1]
        outputs, errors = read_lines(client, done.output_file_id), read_lines(client, done.error_file_id)
    assert done.status == "completed"
    assert counts(done) == {"total": 2, "completed": 1, "failed": 1}
    assert [line["custom_id"] for line in outputs] == ["req-1"]
    assert [line["custom_id"] for line in errors] == ["req-0"]
    assert errors[0]["response"]["status_code"] == 503 and errors[0]["error"] is None
    assert errors[0]["response"]["body"]["error"]["message"] == "overloaded, try later"


def test_expire_after_leaves_batch_expired_lines_in_the_error_file(server: FakeBatchServer) -> None:
    client = client_for(server)
    batch = start(client, [judge_body(RIGHT), judge_body(WRONG), judge_body(RIGHT), judge_body(WRONG)])
    server.expire_after = 1  # changed while the server runs, after the batch was created
    done = poll(client, batch.id)[-1]
    assert done.status == "expired" and done.expired_at is not None
    assert counts(done) == {"total": 4, "completed": 1, "failed": 3}
    assert [line["custom_id"] for line in read_lines(client, done.output_file_id)] == ["req-0"]
    errors = read_lines(client, done.error_file_id)
    assert [line["custom_id"] for line in errors] == ["req-1", "req-2", "req-3"]
    message = "This request could not be executed before the completion window expired."
    assert all(line["response"] is None for line in errors)
    assert all(line["error"] == {"code": "batch_expired", "message": message} for line in errors)
    assert server.batch_lines_answered == 1 and server.call_count == 0


def test_a_cancelled_batch_keeps_the_answered_lines() -> None:
    with FakeBatchServer(polls_until_done=5, lines_per_poll=1) as server:
        client = client_for(server)
        batch = start(client, [judge_body(RIGHT), judge_body(WRONG), judge_body(RIGHT)])
        running = client.batches.retrieve(batch.id)
        assert running.status == "in_progress" and counts(running)["completed"] == 1
        cancelling = client.batches.cancel(batch.id)
        assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
        done = client.batches.retrieve(batch.id)
        assert done.status == "cancelled" and done.cancelled_at is not None
        assert counts(done) == {"total": 3, "completed": 1, "failed": 2}
        assert [line["custom_id"] for line in read_lines(client, done.output_file_id)] == ["req-0"]
        errors = read_lines(client, done.error_file_id)
        assert [(line["custom_id"], line["response"], line["error"]["code"]) for line in errors] == [
            ("req-1", None, "batch_cancelled"),
            ("req-2", None, "batch_cancelled"),
        ]
        with pytest.raises(openai.BadRequestError, match="cancelled"):
            client.batches.cancel(batch.id)
        assert server.batch_lines_answered == 1


def test_fail_batch_with_fails_the_batch_with_that_message(server: FakeBatchServer) -> None:
    client = client_for(server)
    batch = start(client, [judge_body(RIGHT)])
    server.fail_batch_with = "The input file is not readable: test-chosen reason 41"
    done = client.batches.retrieve(batch.id)
    assert done.status == "failed" and done.failed_at is not None and done.output_file_id is None
    assert done.errors is not None and [e.message for e in done.errors.data or []] == [server.fail_batch_with]
    assert server.batch_lines_answered == 0


def line_of(**changes: Any) -> dict[str, Any]:
    return {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": judge_body(RIGHT)} | changes


@pytest.mark.parametrize(
    ("lines", "param", "words"),
    [
        ([line_of(), line_of(custom_id="b"), line_of()], "custom_id", ["Line 3", "'a'", "not unique", "line 1"]),
        ([line_of(url="/v1/embeddings")], "url", ["Line 1", "`url`", "/v1/embeddings"]),
        ([line_of(method="GET")], "method", ["Line 1", "`method`", "GET"]),
        ([line_of(), line_of(custom_id="b", body={"messages": []})], "body", ["Line 2", "`model`"]),
        ([line_of(custom_id=7)], "custom_id", ["Line 1", "`custom_id`", "string"]),
    ],
)
def test_an_invalid_input_line_is_a_400_naming_it(
    server: FakeBatchServer, lines: list[dict[str, Any]], param: str, words: list[str]
) -> None:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    with pytest.raises(openai.BadRequestError) as caught:
        client_for(server).files.create(file=("batch.jsonl", data), purpose="batch")
    assert caught.value.status_code == 400 and caught.value.param == param
    assert all(word in caught.value.message for word in words), caught.value.message
    assert server.files == {}


def test_an_upload_needs_purpose_batch_and_a_jsonl_file(server: FakeBatchServer) -> None:
    client = client_for(server)
    with pytest.raises(openai.BadRequestError, match="purpose 'fine-tune'") as caught:
        client.files.create(file=("batch.jsonl", jsonl([judge_body(RIGHT)])), purpose="fine-tune")
    assert caught.value.param == "purpose"
    with pytest.raises(openai.BadRequestError, match=r"\.jsonl"):
        client.files.create(file=("batch.txt", jsonl([judge_body(RIGHT)])), purpose="batch")
    server.max_requests = 2
    with pytest.raises(openai.BadRequestError, match="3 requests; at most 2"):
        client.files.create(file=("batch.jsonl", jsonl([judge_body(RIGHT)] * 3)), purpose="batch")
    assert server.files == {}


def test_a_batch_endpoint_must_match_the_file(server: FakeBatchServer) -> None:
    client = client_for(server)
    uploaded = client.files.create(file=("batch.jsonl", jsonl([judge_body(RIGHT)])), purpose="batch")
    with pytest.raises(openai.BadRequestError) as caught:
        client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")
    assert caught.value.param == "endpoint"
    assert "'/v1/embeddings'" in caught.value.message and "'/v1/chat/completions'" in caught.value.message
    with pytest.raises(openai.BadRequestError, match="at most 16"):
        metadata = {f"k{i}": "v" for i in range(17)}
        client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h", metadata=metadata
        )
    with pytest.raises(openai.NotFoundError, match="file-missing"):
        client.batches.create(input_file_id="file-missing", endpoint="/v1/chat/completions", completion_window="24h")
    assert server.batches == {}


def test_a_call_without_a_bearer_key_is_a_401(server: FakeBatchServer) -> None:
    keyless = client_for(server, default_headers={"Authorization": ""})
    with pytest.raises(openai.AuthenticationError) as caught:
        keyless.files.create(file=("batch.jsonl", jsonl([judge_body(RIGHT)])), purpose="batch")
    assert caught.value.status_code == 401 and "API key" in caught.value.message
    with pytest.raises(openai.AuthenticationError):
        keyless.batches.list()
    assert server.files == {} and [r.authorization for r in server.batch_requests] == ["", ""]

    server.api_key = "sk-the-right-one"
    with pytest.raises(openai.AuthenticationError) as wrong:
        client_for(server).batches.list()
    assert wrong.value.code == "invalid_api_key"
    listed = client_for(server, default_headers={"Authorization": "Bearer sk-the-right-one"}).batches.list()
    assert listed.data == []


def test_the_async_client_runs_a_batch_to_completion(server: FakeBatchServer) -> None:
    bodies = three_shapes()

    async def run() -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]]]:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key=KEY, max_retries=0, timeout=10) as client:
            uploaded = await client.files.create(file=("judge.jsonl", jsonl(bodies)), purpose="batch")
            batch = await client.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            statuses: list[str] = [batch.status]
            while statuses[-1] not in ("completed", "failed", "expired", "cancelled") and len(statuses) < 10:
                batch = await client.batches.retrieve(batch.id)
                statuses.append(batch.status)
            content = await client.files.content(batch.output_file_id or "")
            online = [await client.chat.completions.with_raw_response.create(**body) for body in bodies]
            lines = [json.loads(line) for line in content.text.splitlines()]
            return statuses, lines, [response.http_response.json() for response in online]

    statuses, lines, online = asyncio.run(run())
    assert statuses == ["validating", "in_progress", "completed"]
    for line, answer in zip(lines, online, strict=True):
        batch_body, online_body = comparable(line["response"]["body"]), comparable(answer)
        assert batch_body == online_body, json.dumps({"batch": batch_body, "online": online_body}, indent=1)
    assert [line["custom_id"] for line in lines] == ["req-0", "req-1", "req-2"]
    assert server.batch_lines_answered == 3 and server.call_count == 3


# --------------------------------------------------------------------------- Azure OpenAI's routes

AZURE_VERSION = "2024-10-21"


def azure_client(server: FakeAzureBatchServer, key: str = KEY, **kwargs: Any) -> openai.AzureOpenAI:
    return openai.AzureOpenAI(
        azure_endpoint=server.azure_endpoint,
        api_key=key,
        api_version=AZURE_VERSION,
        max_retries=0,
        timeout=10,
        **kwargs,
    )


def on_deployment(request: JudgeRequest, deployment: str = "judge", **extra: Any) -> dict[str, Any]:
    return judge_body(request, **extra) | {"model": deployment}


def test_the_azure_fake_serves_the_batch_api_and_the_deployment_on_azure_routes() -> None:
    bodies = [on_deployment(RIGHT), on_deployment(WRONG)]
    with FakeAzureBatchServer(usage=usage_by_length) as server:
        client = azure_client(server)
        uploaded = client.files.create(file=("batch.jsonl", jsonl(bodies, url="/chat/completions")), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id,
            endpoint="/chat/completions",  # Azure's endpoint (not in the SDK's Literal of OpenAI's)
            completion_window="24h",
        )
        done = poll(client, batch.id)[-1]
        assert done.status == "completed" and counts(done) == {"total": 2, "completed": 2, "failed": 0}
        # Azure gives a batch without errors an empty error file, not none.
        assert done.error_file_id is not None and client.files.content(done.error_file_id).content == b""
        for body, line in zip(bodies, read_lines(client, done.output_file_id), strict=True):
            online = client.chat.completions.with_raw_response.create(**body).http_response.json()
            assert comparable(line["response"]["body"]) == comparable(online)
        paths = [r.path for r in server.batch_requests + server.requests]
        online_paths = {r.path for r in server.requests}
        headers = {r.headers.get("api-key") for r in server.batch_requests + server.requests}
    assert online_paths == {f"/openai/deployments/judge/chat/completions?api-version={AZURE_VERSION}"}
    assert all(path.startswith("/openai/") and path.endswith(f"?api-version={AZURE_VERSION}") for path in paths)
    assert headers == {KEY}


@pytest.mark.parametrize(
    ("lines", "param", "code", "words"),
    [
        ([line_of(body=on_deployment(RIGHT))], "url", None, ["Line 1", "/v1/chat/completions", "/chat/completions"]),
        ([line_of(url="/chat/completions")], "body", "model_not_found", ["Line 1", "gpt-4o-mini"]),
        (
            [
                line_of(url="/chat/completions", body=on_deployment(RIGHT)),
                line_of(custom_id="b", url="/chat/completions", body=on_deployment(WRONG, "other")),
            ],
            "body",
            "model_mismatch",
            ["Line 2", "'other'", "line 1"],
        ),
    ],
    ids=["openai_url", "unknown_deployment", "two_deployments"],
)
def test_the_azure_fake_refuses_openai_lines_and_other_deployments(
    lines: list[dict[str, Any]], param: str, code: str | None, words: list[str]
) -> None:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    with FakeAzureBatchServer(deployments=("judge", "other")) as server:
        with pytest.raises(openai.BadRequestError) as caught:
            azure_client(server).files.create(file=("batch.jsonl", data), purpose="batch")
        assert server.files == {}
    assert (caught.value.param, caught.value.code) == (param, code)
    assert all(word in caught.value.message for word in words), caught.value.message


def test_the_azure_fake_needs_its_key_and_api_version_and_serves_no_openai_route() -> None:
    with FakeAzureBatchServer(api_key="azure-right-key") as server:
        with pytest.raises(openai.AuthenticationError):
            azure_client(server).batches.list()  # another key
        with pytest.raises(openai.AuthenticationError):  # a bearer token, no api-key header
            openai.AzureOpenAI(
                azure_endpoint=server.azure_endpoint, azure_ad_token="token", api_version=AZURE_VERSION, max_retries=0
            ).batches.list()
        client = azure_client(server, key="azure-right-key")
        assert client.batches.list().data == []
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        connection.request("GET", "/openai/batches", headers={"api-key": "azure-right-key"})  # no api-version
        assert connection.getresponse().status == 404
        connection.close()
        with pytest.raises(openai.NotFoundError):  # OpenAI's route
            openai.OpenAI(base_url=server.base_url, api_key="azure-right-key", max_retries=0).batches.list()
        with pytest.raises(openai.NotFoundError):  # a deployment the resource does not have
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        assert client.chat.completions.create(**on_deployment(RIGHT)).choices[0].message.content
        assert [r.status for r in server.requests] == [404, 200]
