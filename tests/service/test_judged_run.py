"""`handler.judged_run`: the one middleware of a judged run. `POST /run` and `POST /calibrate`
emit the EMF metrics they always have, on success and on a provider's refusal alike, and a
judging that gave no result is the 502 each has always answered. Real API Gateway events
(`call_handler`) against the fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fair_forge_core.calibration import NoPairScored
from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply
from fair_forge_testing.handler_client import call_handler
from handler.judged_run import JudgedRunFailed, judged_run

KEY = "sk-judged-run-0123456789abcdefXYZ"
RUN_METRICS = [
    "Conversations",
    "Turns",
    "JudgeCalls",
    "JudgeErrors",
    "JudgeParseFailures",
    "JudgeInputTokens",
    "JudgeOutputTokens",
    "EvaluationDuration",
]
CALIBRATION_METRICS = ["CalibrationPairs", "JudgeCalls", "JudgeErrors"]


def connector(server: FakeLLMServer) -> dict[str, Any]:
    return {
        "class_path": "langchain_openai.chat_models.ChatOpenAI",
        "params": {"model": "judge", "base_url": server.base_url, "api_key": KEY},
    }


INVOCATION_METRICS = {"Requests"}  # `handler.app`'s, around every route


def emf(out: str) -> list[dict[str, Any]]:
    """Each EMF document printed: metric name → value, in the order the metrics were declared,
    without the invocation's own metrics."""
    documents = [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]
    return [
        {
            m["Name"]: doc[m["Name"]][0]  # one value a metric in each invocation's document
            for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            if m["Name"] not in INVOCATION_METRICS
        }
        for doc in documents
    ]


def run_body(server: FakeLLMServer) -> dict[str, Any]:
    data = datasets(
        conversation("a", [turn("q1", "What is 5 + 3?", "8", "8"), turn("q2", "And 2 + 2?", "4", "4")]),
        conversation("b", [turn("q3", "Capital of France?", "Paris", "Paris")]),
    )
    return {"connector": connector(server), "datasets": [d.model_dump(mode="json", exclude_none=True) for d in data]}


def refusals() -> list[Reply]:
    return [Reply(status=401, error_message=f"Incorrect API key provided: {KEY}")] * 5


def test_run_emits_its_metrics_on_success_and_on_a_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLMServer() as server:
        capsys.readouterr()
        scored = call_handler(run_body(server))
        server.enqueue(*refusals())
        refused = call_handler(run_body(server))
    assert scored.status == 200, scored.body
    assert refused.status == 502
    assert refused.body["error"].startswith("Agentic evaluation failed: ")
    assert KEY not in refused.raw
    ok, failed = emf(capsys.readouterr().out)
    assert list(ok) == list(failed) == RUN_METRICS
    # 2 conversations of 2 and 1 turns, each turn judged once by the fake server
    assert (ok["Conversations"], ok["Turns"], ok["JudgeCalls"], ok["JudgeErrors"]) == (2, 3, 3, 0)
    assert (failed["Conversations"], failed["Turns"]) == (2, 3) and failed[
        "JudgeCalls"
    ] >= 1  # the refused call was made


def test_calibrate_emits_its_metrics_on_success_and_on_a_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    pair = {"query": "What is 2 + 2?", "answer": "4", "ground_truth": "4", "label": "pass"}
    with FakeLLMServer() as server:
        capsys.readouterr()
        scored = call_handler(
            {"connector": connector(server), "pairs": [pair, pair | {"query": "2+2?"}]}, path="/calibrate"
        )
        server.enqueue(*refusals())
        refused = call_handler({"connector": connector(server), "pairs": [pair]}, path="/calibrate")
    assert scored.status == 200, scored.body
    assert refused.status == 502 and refused.body["error"].startswith("Calibration failed: ")
    ok, failed = emf(capsys.readouterr().out)
    assert list(ok) == list(failed) == CALIBRATION_METRICS
    assert (ok["CalibrationPairs"], ok["JudgeCalls"], ok["JudgeErrors"]) == (2, 2, 0)
    assert failed["CalibrationPairs"] == 1 and failed["JudgeCalls"] >= 1  # the refused call was made


def test_a_judging_without_result_is_judged_run_failed_and_anything_else_passes_through() -> None:
    with pytest.raises(JudgedRunFailed) as failed, judged_run("calibration", {}):
        raise NoPairScored("no pair could be scored")
    assert str(failed.value) == "Calibration failed: no pair could be scored"
    assert failed.value.what == "calibration" and isinstance(failed.value.cause, NoPairScored)
    with pytest.raises(KeyError), judged_run("evaluation", {}):
        raise KeyError("a defect stays a defect: the API's 500")
