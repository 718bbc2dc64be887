"""`POST /calibrate` through the real handler (API Gateway proxy events), with the offline judge
and with the real `ChatOpenAI` against the fake OpenAI-compatible server scripted to give known
scores, so that every count of the report is known in advance."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.judges.prompt import parse_judge_request
from fair_forge_testing.cloudformation import template
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply, last_user_text
from fair_forge_testing.handler_client import HandlerResponse, call_handler

ROOT = Path(__file__).resolve().parents[2]
STARTER = [json.loads(line) for line in (ROOT / "examples" / "calibration" / "starter.jsonl").read_text().splitlines()]
OFFLINE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}
OPENAI = "langchain_openai.chat_models.ChatOpenAI"
CALLER_KEY = "sk-caller-calibrate-7a6b5c4d3e2f1029"


def calibrate(body: Any, **kwargs: Any) -> HandlerResponse:
    return call_handler(body, path="/calibrate", **kwargs)


def openai_connector(server: FakeLLMServer, api_key: str = CALLER_KEY) -> dict[str, Any]:
    return {"class_path": OPENAI, "params": {"model": "judge", "base_url": server.base_url, "api_key": api_key}}


def scripted(request: dict[str, Any]) -> Reply | dict[str, Any]:
    """The judge's score is written in the query: "score=0.85" → 0.85; "status=422" → that error."""
    judged = parse_judge_request(last_user_text(request))
    assert judged is not None
    key, _, value = judged.query.partition("=")
    if key == "status":
        return Reply(status=int(value))
    return {"score": float(value), "reasoning": f"scripted {value}"}


def labelled(score: str, label: str, category: str | None = None) -> dict[str, Any]:
    pair = {"query": score, "answer": "an answer", "ground_truth": "the truth", "label": label}
    return pair | ({"category": category} if category is not None else {})


# 10 pairs whose scores the fake judge gives (queries unique, so each is one call), 2 it fails.
KNOWN_PAIRS = [
    labelled("score=0.95", "pass", "a"),
    labelled("score=0.9", "pass", "a"),
    labelled("score=0.7", "pass", "a"),  # on the threshold: the judge passes it
    labelled("score=0.65", "pass", "b"),  # judge fail, human pass
    labelled("score=0.6", "pass", "b"),  # judge fail, human pass
    labelled("score=0.85", "fail", "b"),  # judge pass, human fail
    labelled("score=0.3", "fail", "a"),
    labelled("score=0.2", "fail", "b"),
    labelled("score=0.1", "fail"),
    labelled("score=0.0", "fail"),
    labelled("status=422", "pass", "a"),
    labelled("status=422", "fail", "c"),
]


def wilson(successes: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


# --------------------------------------------------------------------------- judged


def test_the_offline_judge_on_the_starter_set() -> None:
    response = calibrate({"connector": OFFLINE, "pairs": STARTER})
    assert response.status == 200, response.body
    body = response.body
    assert body["success"] is True and body["request_id"]
    assert body["pairs"] == body["scored"] + body["unscored"] == len(STARTER)
    # Pairs the offline judge abstains on are listed apart and counted in no cell.
    abstained = {u["index"] for u in body["unscored_pairs"]}
    assert all(u["error"] == "the offline judge cannot decide this turn" for u in body["unscored_pairs"])
    cells = body["confusion"]
    assert sum(cells.values()) == body["scored"]
    assert body["tpr"]["n"] == sum(p["label"] == "pass" for n, p in enumerate(STARTER) if n not in abstained)
    assert body["agreement"]["successes"] == cells["judge_pass_human_pass"] + cells["judge_fail_human_fail"]
    assert [r["index"] for r in body["results"]] == list(range(len(STARTER)))
    assert body["best_threshold"]["rule"].startswith("candidates: the configured threshold")


def test_chat_openai_with_known_scores_gives_the_report_known_in_advance() -> None:
    with FakeLLMServer(responder=scripted) as server:
        response = calibrate(
            {"connector": openai_connector(server), "pairs": KNOWN_PAIRS, "config": {"threshold": 0.7}}
        )
        assert server.requests[0].api_key == CALLER_KEY  # the real client, the caller's key
        assert server.call_count == len(KNOWN_PAIRS) - 1  # the two 422 pairs are one request
    assert response.status == 200, response.body
    body = response.body
    assert (body["pairs"], body["scored"], body["unscored"]) == (12, 10, 2)
    assert body["confusion"] == {
        "judge_pass_human_pass": 3,
        "judge_pass_human_fail": 1,
        "judge_fail_human_pass": 2,
        "judge_fail_human_fail": 4,
    }
    for name, (successes, n) in {"agreement": (7, 10), "tpr": (3, 5), "tnr": (4, 5), "false_pass_rate": (1, 5)}.items():
        rate = body[name]
        assert (rate["successes"], rate["n"]) == (successes, n), name
        assert (rate["ci_low"], rate["ci_high"]) == pytest.approx(wilson(successes, n), abs=1e-9), name
    # p_o = 0.7, p_e = (4·5 + 6·5) / 100 = 0.5: kappa = 0.4
    assert body["kappa"] == pytest.approx(0.4, abs=1e-12)
    # Lowering the threshold to 0.6 passes the two human passes at 0.6 and 0.65: 9 of 10 agree.
    assert body["best_threshold"] | {"rule": None} == {
        "threshold": 0.6,
        "agreed": 9,
        "scored": 10,
        "agreement": 0.9,
        "improvement": pytest.approx(0.2),
        "rule": None,
    }
    categories = {c["category"]: (c["agreed"], c["scored"], c["unscored"]) for c in body["per_category"]}
    assert categories == {"a": (4, 4, 1), "b": (1, 4, 0), "c": (0, 0, 1), None: (2, 2, 0)}
    assert body["results"][5] | {"reasoning": None} == {
        "index": 5,
        "category": "b",
        "label": "fail",
        "score": 0.85,
        "judge_label": "pass",
        "agrees": False,
        "reasoning": None,
        "error": None,
    }


def test_unscored_pairs_are_listed_and_counted_nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_JUDGE_MAX_ATTEMPTS", "2")
    pairs = [labelled("score=0.9", "pass"), labelled("status=500", "pass"), labelled("status=422", "fail")]
    with FakeLLMServer(responder=scripted) as server:
        body = calibrate({"connector": openai_connector(server), "pairs": pairs}).body
    assert (body["scored"], body["unscored"]) == (1, 2)
    assert sum(body["confusion"].values()) == 1 and body["agreement"]["n"] == 1
    unscored = {u["index"]: u for u in body["unscored_pairs"]}
    assert set(unscored) == {1, 2}
    assert "still failing after 2 attempts" in unscored[1]["error"] and "500" in unscored[1]["error"]
    assert "422" in unscored[2]["error"]
    assert [r["agrees"] for r in body["results"]] == [True, None, None]
    assert any("2 pair(s) unscored" in w for w in body["warnings"])


def test_nothing_scored_is_a_502() -> None:
    with FakeLLMServer(responder=scripted) as server:
        response = calibrate({"connector": openai_connector(server), "pairs": [labelled("status=422", "pass")]})
    assert response.status == 502
    assert response.body["error"].startswith("Calibration failed: no pair could be scored: 1× judge call failed")


def test_a_provider_refusing_is_a_502_without_the_key() -> None:
    with FakeLLMServer() as server:
        server.enqueue(*[Reply(status=401, error_message=f"Incorrect API key provided: {CALLER_KEY}")] * 5)
        response = calibrate({"connector": openai_connector(server), "pairs": KNOWN_PAIRS[:2]})
    assert response.status == 502
    assert response.body["error"].startswith("Calibration failed: the judge provider refused the request")
    assert CALLER_KEY not in response.raw


def test_the_threshold_and_the_output_mode_are_the_requests() -> None:
    with FakeLLMServer(responder=scripted) as server:
        body = calibrate(
            {
                "connector": openai_connector(server),
                "pairs": KNOWN_PAIRS[:10],
                "config": {"threshold": 0.6, "use_structured_output": True, "structured_output_method": "json_schema"},
            }
        ).body
        assert server.requests[0].body["response_format"]["type"] == "json_schema"
    assert body["threshold"] == 0.6 and body["agreement"]["successes"] == 9
    assert body["best_threshold"]["threshold"] == 0.6 and body["best_threshold"]["improvement"] == 0.0


# --------------------------------------------------------------------------- refused


def assert_error(response: HandlerResponse, status: int, message: str, field: str | None = None) -> None:
    assert response.status == status, response.body
    assert response.body["success"] is False
    assert response.body["error"].startswith(message), response.body["error"]
    if field is not None:
        assert field in {d["field"] for d in response.body["details"]}


PAIR = {"query": "What is 2 + 2?", "answer": "4", "ground_truth": "4", "label": "pass"}


@pytest.mark.parametrize(
    ("body", "message", "field"),
    [
        ({"pairs": [PAIR]}, "No connector configuration provided", None),
        ({"connector": {"params": {}}, "pairs": [PAIR]}, "connector.class_path is required", None),
        ({"connector": OFFLINE}, "No pairs provided", None),
        ({"connector": OFFLINE, "pairs": []}, "No pairs provided", None),
        ({"connector": OFFLINE, "pairs": {"0": PAIR}}, "pairs must be a list", "pairs"),
        (
            {"connector": OFFLINE, "pairs": [PAIR, PAIR | {"label": "yes"}]},
            "Invalid request: pairs[1].label",
            "pairs[1].label",
        ),
        (
            {"connector": OFFLINE, "pairs": [{"query": "q", "answer": "a", "label": "fail"}]},
            "Invalid request: pairs[0].ground_truth",
            "pairs[0].ground_truth",
        ),
        (
            {"connector": OFFLINE, "pairs": [PAIR | {"category": 3}]},
            "Invalid request: pairs[0].category",
            "pairs[0].category",
        ),
        (
            {"connector": OFFLINE, "pairs": [PAIR], "config": {"threshold": "0.7"}},
            "Invalid request: config.threshold",
            "config.threshold",
        ),
        (
            {"connector": OFFLINE, "pairs": [PAIR], "config": {"max_concurrency": 0}},
            "Invalid request: config.max_concurrency",
            "config.max_concurrency",
        ),
        ({"connector": OFFLINE, "pairs": [PAIR], "config": {"k": 3}}, "Invalid request: config.k", "config.k"),
        ({"connector": OFFLINE, "pairs": [PAIR], "datasets": []}, "Invalid request: datasets", "datasets"),
        ({"connector": {"class_path": "os.system"}, "pairs": [PAIR]}, "Failed to create LLM connector", None),
    ],
)
def test_bad_input_is_a_400_naming_the_field(body: dict[str, Any], message: str, field: str | None) -> None:
    assert_error(calibrate(body), 400, message, field)


def test_not_json_is_a_400() -> None:
    assert_error(calibrate(None, raw="{not json"), 400, "Invalid JSON body")
    assert_error(calibrate(None, raw="[1]"), 400, "Request body must be a JSON object")


def test_too_many_pairs_is_a_413(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_MAX_CALIBRATION_PAIRS", "3")
    assert calibrate({"connector": OFFLINE, "pairs": [PAIR] * 3}).status == 200
    assert_error(calibrate({"connector": OFFLINE, "pairs": [PAIR] * 4}), 413, "Too many pairs: 4 (limit 3 per request)")


def test_the_default_pair_limit_is_2000() -> None:
    assert_error(calibrate({"connector": OFFLINE, "pairs": [PAIR] * 2001}), 413, "Too many pairs: 2001 (limit 2000")


def test_too_large_is_a_413(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_MAX_STRING_CHARS", "50")
    assert_error(calibrate({"connector": OFFLINE, "pairs": [PAIR | {"answer": "x" * 51}]}), 413, "A text field")
    monkeypatch.setenv("FAIR_FORGE_MAX_BODY_BYTES", "100")
    assert_error(calibrate({"connector": OFFLINE, "pairs": [PAIR] * 5}), 413, "Request body too large")


def test_the_404_lists_the_route() -> None:
    assert "POST /calibrate" in call_handler(method="GET", path="/nope").body["error"]


# --------------------------------------------------------------------------- secrets


SUBPROCESS = """
import json, sys
from fair_forge_testing.handler_client import call_handler
for line in sys.stdin:
    response = call_handler(json.loads(line), path="/calibrate")
    print("RESPONSE=" + json.dumps({"status": response.status, "raw": response.raw}), flush=True)
"""


def calibrate_in_subprocess(bodies: list[dict[str, Any]], env: dict[str, str] | None = None) -> tuple[list[dict], str]:
    """Each body through the handler in a fresh interpreter: the responses and everything printed."""
    import os

    result = subprocess.run(
        [sys.executable, "-c", SUBPROCESS],
        input="".join(json.dumps(b) + "\n" for b in bodies),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore", "POWERTOOLS_LOG_LEVEL": "DEBUG", **(env or {})},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    responses = [
        json.loads(line[len("RESPONSE=") :]) for line in result.stdout.splitlines() if line.startswith("RESPONSE=")
    ]
    return responses, result.stdout + result.stderr


def test_no_key_in_a_response_or_a_log_line() -> None:
    server_key = "gsk_server_calibrate_0123456789abcdef"
    with FakeLLMServer(responder=scripted) as good, FakeLLMServer() as refusing:
        refusing.enqueue(*[Reply(status=401, error_message=f"Incorrect API key provided: {CALLER_KEY}")] * 5)
        bodies = [
            {"connector": openai_connector(good), "pairs": KNOWN_PAIRS},  # 200, with unscored pairs
            {"connector": openai_connector(refusing), "pairs": KNOWN_PAIRS[:1]},  # 502, the key echoed
            {  # 400: pydantic would echo a bad value
                "connector": {
                    "class_path": OPENAI,
                    "params": {"model": "judge", "api_key": CALLER_KEY, "temperature": CALLER_KEY},
                },
                "pairs": [PAIR],
            },
            {"connector": OFFLINE, "pairs": [PAIR | {"label": CALLER_KEY}]},  # 400: a key-shaped value in a field
        ]
        responses, output = calibrate_in_subprocess(bodies, {"LLM_API_KEY": server_key})
        assert good.requests[0].api_key == CALLER_KEY
    assert [r["status"] for r in responses] == [200, 502, 400, 400]
    assert '"message":"calibration finished"' in output
    for secret in (CALLER_KEY, server_key):
        assert secret not in output and secret[:14] not in output
        for response in responses:
            assert secret not in response["raw"]


# --------------------------------------------------------------------------- deployment


def test_the_route_is_in_the_template_behind_the_api_key() -> None:
    body = template()
    resources = body["Resources"]
    assert resources["CalibrateResource"]["Properties"]["PathPart"] == "calibrate"
    method = resources["CalibratePostMethod"]["Properties"]
    assert method["HttpMethod"] == "POST"
    assert method["ResourceId"] == {"Ref": "CalibrateResource"}
    assert method["Integration"]["Type"] == "AWS_PROXY"
    assert method["ApiKeyRequired"] == {"Fn::If": ["UseApiKey", True, False]}
    assert resources["CalibrateOptionsMethod"]["Condition"] == "HasCors"
    deployment = resources["Deployment"]
    assert "CalibratePostMethod" in deployment["DependsOn"]
    _, with_cors, without_cors = deployment["Properties"]["Description"]["Fn::If"]
    assert "POST /calibrate" in with_cors["Fn::Sub"] and "${CalibrateOptionsMethod}" in with_cors["Fn::Sub"]
    assert "POST /calibrate" in without_cors["Fn::Sub"]
    assert "POST /calibrate" in body["Description"]


def test_an_unknown_key_of_a_pair_says_which_key_was_meant() -> None:
    pair = {**PAIR, "groundtruth": PAIR["ground_truth"]}
    del pair["ground_truth"]
    response = calibrate({"connector": OFFLINE, "pairs": [PAIR, pair]})
    assert response.status == 400
    assert {"field": "pairs[1].groundtruth", "message": "unknown key (did you mean ground_truth?)"} in response.body[
        "details"
    ]
