"""No API key in a log line or a response, and the server's key never goes to a caller-chosen endpoint."""

from __future__ import annotations

import copy
import io
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply
from fair_forge_testing.handler_client import run_in_subprocess

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = json.loads((ROOT / "examples" / "calculator.json").read_text())
CALLER_KEY = "sk-caller-9f8e7d6c5b4a3210"
SERVER_KEY = "gsk_server_0123456789abcdef"


def openai_request(base_url: str, *, api_key: str | None, verbose: bool = True) -> dict:
    body = copy.deepcopy(CALCULATOR)
    params = {"model": "judge", "base_url": base_url}
    if api_key is not None:
        params["api_key"] = api_key
    body["connector"] = {"class_path": "langchain_openai.chat_models.ChatOpenAI", "params": params}
    body["config"]["verbose"] = verbose
    return body


def run_handler_in_subprocess(body: dict, env: dict[str, str] | None = None) -> tuple[dict, str]:
    (response,), output = run_in_subprocess([body], env)
    return response, output


def test_verbose_run_leaks_no_key() -> None:
    with FakeLLMServer() as server:
        response, logs = run_handler_in_subprocess(openai_request(server.base_url, api_key=CALLER_KEY))
        assert server.requests[0].api_key == CALLER_KEY  # the key was really used
    assert response["status"] == 200, response["body"]
    assert '"level":"DEBUG"' in logs  # verbose raised the level: there is something to leak into
    assert '"message":"conversation scored"' in logs
    assert CALLER_KEY not in logs and CALLER_KEY not in response["raw"]
    assert CALLER_KEY[:12] not in logs


def test_provider_echoing_the_key_in_an_error_leaks_nothing() -> None:
    with FakeLLMServer() as server:
        server.enqueue(*[Reply(status=401, error_message=f"Incorrect API key provided: {CALLER_KEY}")] * 5)
        response, logs = run_handler_in_subprocess(openai_request(server.base_url, api_key=CALLER_KEY))
    assert response["status"] == 502
    assert response["body"]["error"].startswith("Agentic evaluation failed:")
    assert "evaluation failed" in logs
    assert CALLER_KEY not in logs and CALLER_KEY not in response["raw"]


def test_connector_failure_does_not_echo_the_key() -> None:
    body = openai_request("http://127.0.0.1:9/v1", api_key=CALLER_KEY)
    body["connector"]["params"]["temperature"] = CALLER_KEY  # pydantic echoes a bad input in its error
    response, logs = run_handler_in_subprocess(body)
    assert response["status"] == 400 and "Failed to create LLM connector" in response["body"]["error"]
    assert CALLER_KEY[-12:] not in response["raw"] and CALLER_KEY[-12:] not in logs


def test_server_key_never_reaches_a_caller_chosen_endpoint() -> None:
    with FakeLLMServer() as server:
        response, logs = run_handler_in_subprocess(
            openai_request(server.base_url, api_key=None), env={"LLM_API_KEY": SERVER_KEY}
        )
        assert all(SERVER_KEY not in json.dumps(r.headers) for r in server.requests)
        assert server.call_count == 0
    assert response["status"] == 400
    assert "api_key is required" in response["body"]["error"]
    assert SERVER_KEY not in response["raw"] and SERVER_KEY not in logs


def test_server_key_is_used_for_the_providers_own_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    from handler.connectors import build_judge
    from handler.settings import Settings

    monkeypatch.setenv("LLM_API_KEY", SERVER_KEY)
    judge = build_judge("langchain_groq.ChatGroq", {"model": "llama-3.3-70b-versatile"}, Settings.from_env())
    assert judge.model.groq_api_key.get_secret_value() == SERVER_KEY
    assert SERVER_KEY in judge.secrets
    assert judge.model.max_retries == 0  # the judge's own retry budget applies, not the SDK's


def test_verbose_logging_is_bounded() -> None:
    # 101 conversations of 21 turns (the same 21 in each, so 21 judge calls), and a judge whose
    # reasoning is 50,000 characters: the DEBUG detail stops at 100 conversations and 20 turns
    # each, every reason cut to 1,000 characters.
    turns = [
        {"qa_id": f"q{t}", "query": f"What is {t} + 1?", "assistant": "x", "ground_truth_assistant": "x"}
        for t in range(21)
    ]
    body = copy.deepcopy(CALCULATOR)
    body["datasets"] = [{"session_id": f"s{c}", "assistant_id": "a", "conversation": turns} for c in range(101)]
    with FakeLLMServer(responder=lambda request: {"score": 1.0, "reasoning": "r" * 50_000}) as server:
        body["connector"] = {
            "class_path": "langchain_openai.chat_models.ChatOpenAI",
            "params": {"model": "judge", "base_url": server.base_url, "api_key": CALLER_KEY},
        }
        body["config"] = {"verbose": True}
        response, logs = run_handler_in_subprocess(body)
        assert server.call_count == 21
    assert response["status"] == 200, response["body"]
    lines = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    scored = [line for line in lines if line.get("message") == "conversation scored"]
    assert len(scored) == 100
    assert all(len(line["reasons"]) == 20 and line["turns_not_logged"] == 1 for line in scored)
    assert all(len(reason) == 1_000 for line in scored for reason in line["reasons"])
    assert [line["count"] for line in lines if line.get("message") == "conversations not logged"] == [1]


class FrozenClock(datetime):
    """Powertools' parameter cache reads `datetime.now()`: this one moves only when told."""

    current = datetime(2026, 1, 1)

    @classmethod
    def now(cls, tz: Any = None) -> datetime:
        return cls.current


def test_a_rotated_secret_is_used_once_max_age_has_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    """LLM_API_KEY_SECRET_ARN against moto's Secrets Manager: the key is cached for
    FAIR_FORGE_SECRET_MAX_AGE_S, and the rotated key is the one used after that."""
    import boto3
    from aws_lambda_powertools.utilities import parameters
    from aws_lambda_powertools.utilities.parameters import base
    from moto import mock_aws

    from handler.connectors import build_judge
    from handler.settings import Settings

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_REGION": "eu-west-1",
        "FAIR_FORGE_SECRET_MAX_AGE_S": "300",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(base, "datetime", FrozenClock)
    monkeypatch.setattr(FrozenClock, "current", datetime(2026, 1, 1))
    first, rotated = "gsk_first_0123456789abcdef", "gsk_rotated_fedcba9876543210"
    with mock_aws():
        parameters.clear_caches()  # a provider made before moto started would call AWS itself
        secrets = boto3.client("secretsmanager", region_name="eu-west-1")
        arn = secrets.create_secret(Name="llm-key", SecretString=json.dumps({"api_key": first}))["ARN"]
        monkeypatch.setenv("LLM_API_KEY_SECRET_ARN", arn)

        def key_in_use() -> str:
            judge = build_judge("langchain_groq.ChatGroq", {"model": "llama-3.3-70b-versatile"}, Settings.from_env())
            return str(judge.model.groq_api_key.get_secret_value())

        try:
            assert key_in_use() == first
            secrets.put_secret_value(SecretId=arn, SecretString=json.dumps({"api_key": rotated}))
            FrozenClock.current += timedelta(seconds=299)
            assert key_in_use() == first  # cached: no GetSecretValue per request
            FrozenClock.current += timedelta(seconds=2)
            assert key_in_use() == rotated
        finally:
            parameters.clear_caches()


# --------------------------------------------------------------------------- keys in what the judge says (issue #32)

# Not key-shaped (no sk-/gsk_ prefix): only the exact-value masking can catch it.
PLAIN_KEY = "plain-caller-secret-7f6e5d4c3b2a"
GOAL = json.loads((ROOT / "examples" / "goal.json").read_text())


def quoting_the_key(request: dict[str, Any]) -> dict[str, Any]:
    """A judge that quotes the caller's key back in everything it says."""
    from fair_forge_testing.fake_llm_server import judge_responder

    verdict = judge_responder(request)
    verdict["reasoning"] = f"Checked with key {PLAIN_KEY} and Bearer {PLAIN_KEY}. {verdict['reasoning']}"
    if "goal_achieved" in verdict:
        verdict.update(goal_achieved=False, unmet_criteria=[f"the key is {PLAIN_KEY}"])
    return verdict


def with_openai(body: dict[str, Any], base_url: str) -> dict[str, Any]:
    body = copy.deepcopy(body)
    params = {"model": "judge", "base_url": base_url, "api_key": PLAIN_KEY}
    body["connector"] = {"class_path": "langchain_openai.chat_models.ChatOpenAI", "params": params}
    body["config"]["verbose"] = True
    return body


def test_a_judge_quoting_the_key_puts_it_in_no_response_or_log_line() -> None:
    with FakeLLMServer(responder=quoting_the_key) as server:
        responses, logs = run_in_subprocess(
            [with_openai(CALCULATOR, server.base_url), with_openai(GOAL, server.base_url)]
        )
        assert server.requests[0].api_key == PLAIN_KEY  # the key was really used
    for response in responses:
        assert response["status"] == 200, response["body"]
        assert "[REDACTED]" in response["raw"]  # the reasoning came back, masked
        assert PLAIN_KEY not in response["raw"]
    goal_check = responses[1]["body"]["per_conversation_metrics"][0]["goal_check"]
    assert "Unmet: the key is [REDACTED]" in goal_check["reasoning"]
    assert '"message":"conversation scored"' in logs and PLAIN_KEY not in logs


def test_a_judge_quoting_the_key_puts_it_in_no_file_the_cli_writes(tmp_path: Path) -> None:
    from fair_forge_core.cli import main

    with FakeLLMServer(responder=quoting_the_key) as server:
        request = tmp_path / "request.json"
        request.write_text(json.dumps(with_openai(CALCULATOR, server.base_url)))
        outputs = {
            "--out": tmp_path / "result.json",
            "--html": tmp_path / "report.html",
            "--otel-events": tmp_path / "events.json",
            "--junit": tmp_path / "junit.xml",
            "--markdown": tmp_path / "summary.md",
        }
        stdout, stderr = io.StringIO(), io.StringIO()
        code = main(
            ["evaluate", str(request), *(str(a) for pair in outputs.items() for a in pair)],
            stdout=stdout,
            stderr=stderr,
            stdin=io.StringIO(""),
        )
    assert code == 0, stderr.getvalue()
    assert "[REDACTED]" in (tmp_path / "result.json").read_text()
    for path in outputs.values():
        assert PLAIN_KEY not in path.read_text(), path.name
    assert PLAIN_KEY not in stdout.getvalue() + stderr.getvalue()


def test_a_model_built_by_the_library_caller_has_its_key_masked_too() -> None:
    from langchain_openai import ChatOpenAI

    from fair_forge_core.evaluate import evaluate_sync
    from fair_forge_core.schemas import Dataset

    with FakeLLMServer(responder=quoting_the_key) as server:
        model = ChatOpenAI(model="judge", base_url=server.base_url, api_key=PLAIN_KEY, max_retries=0)
        result = evaluate_sync([Dataset.model_validate(d) for d in CALCULATOR["datasets"]], model)
    reasons = [i.judge_reasoning for c in result.per_conversation_metrics for i in c.interactions or []]
    assert reasons and all(r is not None and "[REDACTED]" in r and PLAIN_KEY not in r for r in reasons)
