"""`lambda_handler` through API Gateway REST proxy events: every success and error case of docs/response.md."""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fair_forge_testing.handler_client import call_handler
from handler.local import make_proxy_event

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = json.loads((ROOT / "examples" / "calculator.json").read_text())


def request(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(CALCULATOR)
    for key, value in changes.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def assert_error(response, status: int, message: str) -> None:
    assert response.status == status, response.body
    assert response.body["success"] is False
    assert message in response.body["error"]
    assert response.body["request_id"]
    assert "Traceback" not in response.raw and 'File "' not in response.raw


def test_calculator_example_succeeds() -> None:
    response = call_handler(CALCULATOR)
    assert response.status == 200, response.body
    body = response.body
    assert body["success"] is True and body["request_id"]
    assert response.headers["Content-Type"] == "application/json"
    agg = body["aggregated_metrics"]
    assert (agg["total_conversations"], agg["fully_correct_conversations"], agg["k"]) == (2, 2, 2)
    first = body["per_conversation_metrics"][0]
    assert first["session_id"] == "conversation_001" and first["total_interactions"] == 2
    assert first["tool_correctness_scores"][0]["overall_correctness"] == 1.0
    assert first["tool_correctness_scores"][1] is None
    assert [i["qa_id"] for i in first["interactions"]] == ["q1_interaction1", "q1_interaction2"]
    assert isinstance(body["warnings"], list)


def test_base64_body_is_decoded() -> None:
    event_body = base64.b64encode(json.dumps(CALCULATOR).encode()).decode()
    from handler.app import lambda_handler
    from handler.local import LocalLambdaContext

    event = make_proxy_event("POST", "/run", event_body)
    event["isBase64Encoded"] = True
    response = lambda_handler(event, LocalLambdaContext())
    assert response["statusCode"] == 200


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (request(connector=None), 400, "No connector configuration provided"),
        (request(connector={}), 400, "No connector configuration provided"),
        (request(connector={"params": {}}), 400, "connector.class_path is required"),
        (request(connector={"class_path": ""}), 400, "connector.class_path is required"),
        (request(connector={"class_path": "langchain_fake.FakeChat"}), 400, "Failed to create LLM connector"),
        (request(datasets=None), 400, "No datasets provided"),
        (request(datasets=[]), 400, "No datasets provided"),
        (
            request(datasets=[{"session_id": "s", "assistant_id": "a", "conversation": []}]),
            400,
            "No qa_ids found in datasets",
        ),
        (request(datasets={"session_id": "s"}), 400, "datasets must be a list"),
        (request(connector="ChatGroq"), 400, "connector must be an object"),
    ],
)
def test_source_error_messages(body: dict[str, Any], status: int, message: str) -> None:
    assert_error(call_handler(body), status, message)


def test_one_conversation_without_turns_among_others_names_the_field() -> None:
    datasets = [*CALCULATOR["datasets"], {"session_id": "empty", "assistant_id": "a", "conversation": []}]
    response = call_handler(request(datasets=datasets))
    assert_error(response, 400, "datasets[2].conversation")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("not json", "Invalid JSON body"),
        ('{"connector": ', "Invalid JSON body"),
        ("[1, 2]", "must be a JSON object"),
        ('"text"', "must be a JSON object"),
        ("42", "must be a JSON object"),
        ("", "Invalid JSON body"),
    ],
)
def test_bodies_that_are_not_json_objects(raw: str, message: str) -> None:
    assert_error(call_handler(raw=raw), 400, message)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"k": 0}, "config.k"),
        ({"k": "three"}, "config.k"),
        ({"threshold": 1.5}, "config.threshold"),
        ({"threshold": -0.1}, "config.threshold"),
        ({"tool_threshold": 2}, "config.tool_threshold"),
        ({"tool_weights": {"selection": -1}}, "config.tool_weights.selection"),
        (
            {"tool_weights": {"selection": 0, "parameters": 0, "sequence": 0, "utilization": 0}},
            "config.tool_weights",
        ),
        ({"tool_weights": {"speed": 1}}, "config.tool_weights.speed"),
        ({"statistical_mode": "magic"}, "config.statistical_mode"),  # as written: a string, not an object
        ({"statistical_mode": {"mode": "bayesian", "ci_level": 1.0}}, "config.statistical_mode.ci_level"),
        ({"statistical_mode": {"mode": "bayesian", "prior": [0, 1]}}, "config.statistical_mode.prior"),
        ({"max_concurrency": 0}, "config.max_concurrency"),
        ({"treshold": 0.5}, "config.treshold"),
        ({"use_structured_output": "maybe"}, "config.use_structured_output"),
    ],
)
def test_out_of_range_config_names_the_field(config: dict[str, Any], field: str) -> None:
    response = call_handler(request(config=config))
    assert_error(response, 400, field)
    assert any(detail["field"] == field for detail in response.body["details"])


def test_a_bare_statistical_mode_that_is_no_mode_names_the_field_as_written() -> None:
    response = call_handler(request(config={"statistical_mode": "bayes"}))
    assert_error(response, 400, "Invalid request: config.statistical_mode: Input should be")
    assert [d["field"] for d in response.body["details"]] == ["config.statistical_mode"]
    assert response.body["details"][0]["message"].endswith("(did you mean bayesian?)")


@pytest.mark.parametrize(
    ("mutate", "field", "message"),
    [
        (lambda b: b["config"].update(treshold=0.5), "config.treshold", "unknown key (did you mean threshold?)"),
        (
            lambda b: b["config"].update(statistical_mode={"mode": "bayesian", "cilevel": 0.9}),
            "config.statistical_mode.cilevel",
            "unknown key (did you mean ci_level?)",
        ),
        (
            lambda b: b["datasets"][0].update(asistant_id="x"),
            "datasets[0].asistant_id",
            "unknown key (did you mean assistant_id?)",
        ),
        (
            lambda b: b["datasets"][0]["conversation"][0].update(ground_truth="x"),
            "datasets[0].conversation[0].ground_truth",
            "unknown key (did you mean ground_truth_agentic?)",
        ),
        (
            lambda b: b["datasets"][0]["conversation"][0]["agentic"]["tools_used"][0].update(paramters={}),
            "datasets[0].conversation[0].agentic.tools_used[0].paramters",
            "unknown key (did you mean parameters?)",
        ),
        (
            lambda b: b["datasets"][0]["conversation"][0]["ground_truth_agentic"]["expected_tools"][0].update(tool="x"),
            "datasets[0].conversation[0].ground_truth_agentic.expected_tools[0].tool",
            "unknown key (did you mean tool_name?)",
        ),
        (
            lambda b: b.update(connector=[{**b["connector"], "parms": {}}]),  # an ensemble: through the union
            "connector[0].parms",
            "unknown key (did you mean params?)",
        ),
        (lambda b: b["config"].update(zzz=1), "config.zzz", "unknown key"),  # nothing close: no guess
    ],
)
def test_an_unknown_key_says_which_key_was_meant(mutate, field: str, message: str) -> None:
    body = request()
    mutate(body)
    response = call_handler(body)
    assert_error(response, 400, f"Invalid request: {field}: {message}")
    assert {"field": field, "message": message} in response.body["details"]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d[0].pop("session_id"), "datasets[0].session_id"),
        (lambda d: d[0].update(assistant_id=7), "datasets[0].assistant_id"),
        (lambda d: d[0]["conversation"][1].update(query=["a"]), "datasets[0].conversation[1].query"),
        (
            lambda d: d[0]["conversation"][0]["agentic"].update(tools_used="calculator"),
            "datasets[0].conversation[0].agentic.tools_used",
        ),
        (
            lambda d: d[0]["conversation"][0]["agentic"]["tools_used"][0].pop("tool_name"),
            "datasets[0].conversation[0].agentic.tools_used[0].tool_name",
        ),
        (lambda d: d[1].update(conversation="hello"), "datasets[1].conversation"),
    ],
)
def test_wrong_types_name_the_field(mutate, field: str) -> None:
    datasets = copy.deepcopy(CALCULATOR["datasets"])
    mutate(datasets)
    assert_error(call_handler(request(datasets=datasets)), 400, field)


def test_validation_details_do_not_echo_values() -> None:
    datasets = copy.deepcopy(CALCULATOR["datasets"])
    datasets[0]["session_id"] = {"secret": "sk-do-not-echo-me-123456"}
    response = call_handler(request(datasets=datasets))
    assert response.status == 400
    assert "sk-do-not-echo-me" not in response.raw


def test_refused_class_paths_import_nothing() -> None:
    # In a fresh interpreter, so that "not imported" means something.
    script = f"""
import json, sys
from fair_forge_testing.handler_client import call_handler
paths = {["antigravity.geohash", "this.s", "turtle.Turtle", "tkinter.Tk", "smtplib.SMTP"]!r}
before = set(sys.modules)
for path in paths:
    response = call_handler({{"connector": {{"class_path": path}}, "datasets": {CALCULATOR["datasets"]!r}}})
    assert response.status == 400, response.body
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.split(".")[0] in {{"antigravity", "this", "turtle", "tkinter", "smtplib"}})))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_short_alias_is_accepted() -> None:
    body = request(connector={"class_path": "fair_forge_core.judges.reference.ReferenceJudge"})
    assert call_handler(body).status == 200


def test_operator_can_extend_the_allowlist(monkeypatch: pytest.MonkeyPatch) -> None:
    path = "langchain_core.language_models.fake_chat_models.FakeListChatModel"
    body = request(
        connector={
            "class_path": path,
            "params": {"responses": ['```json\n{"score": 1.0, "reasoning": "ok"}\n```']},
        }
    )
    assert_error(call_handler(body), 400, "not an allowed connector")
    monkeypatch.setenv("FAIR_FORGE_EXTRA_CONNECTORS", path)
    assert call_handler(body).status == 200


def test_allowed_path_that_is_not_a_chat_model_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_EXTRA_CONNECTORS", "collections.OrderedDict")
    assert_error(
        call_handler(request(connector={"class_path": "collections.OrderedDict"})),
        400,
        "not a LangChain chat model",
    )


@pytest.mark.parametrize("param", ["http_client", "callbacks", "client"])
def test_params_that_inject_objects_are_refused(param: str) -> None:
    body = request(connector={"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {param: "x"}})
    assert_error(call_handler(body), 400, param)


def test_too_large_body_is_413(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_MAX_BODY_BYTES", "1000")
    assert_error(call_handler(CALCULATOR), 413, "Request body too large")


@pytest.mark.parametrize(
    ("variable", "message"),
    [
        ("FAIR_FORGE_MAX_CONVERSATIONS", "Too many conversations"),
        ("FAIR_FORGE_MAX_TURNS", "Too many turns"),
        ("FAIR_FORGE_MAX_STRING_CHARS", "characters"),
    ],
)
def test_request_limits_are_413(monkeypatch: pytest.MonkeyPatch, variable: str, message: str) -> None:
    monkeypatch.setenv(variable, "1")
    assert_error(call_handler(CALCULATOR), 413, message)


def test_response_too_large_drops_per_turn_detail_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    full = call_handler(CALCULATOR)
    without_detail = dict(full.body, request_id=None)
    for conversation in without_detail["per_conversation_metrics"]:
        conversation["interactions"] = None
    limit = len(json.dumps(without_detail)) + 200
    assert limit < len(full.raw)
    monkeypatch.setenv("FAIR_FORGE_MAX_RESPONSE_BYTES", str(limit))
    response = call_handler(CALCULATOR)
    assert response.status == 200
    assert all(c["interactions"] is None for c in response.body["per_conversation_metrics"])
    assert any("6 MB" in w for w in response.body["warnings"])


def test_health_lists_connectors_without_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_API_KEY", "sk-server-secret-abcdef123456")
    response = call_handler(method="GET", path="/health")
    assert response.status == 200
    assert "langchain_groq.chat_models.ChatGroq" in response.body["connectors"]
    assert "fair_forge_core.judges.ReferenceJudge" in response.body["connectors"]
    assert response.body["version"]
    assert "sk-server-secret" not in response.raw


HEALTH_LOADABLE = """
import json, sys
from fair_forge_testing.handler_client import call_handler
body = call_handler(method="GET", path="/health").body
providers = ("langchain_openai", "langchain_groq", "langchain_anthropic", "langchain_google_genai", "langchain_ollama")
print(json.dumps({"body": body, "imported": sorted(m for m in sys.modules if m.startswith(providers))}))
"""


def test_health_says_which_allowed_connectors_can_be_loaded_here_importing_no_provider() -> None:
    from importlib.metadata import packages_distributions

    env = {**__import__("os").environ, "FAIR_FORGE_EXTRA_CONNECTORS": "not_installed_anywhere.chat.ChatNope"}
    done = subprocess.run(
        [sys.executable, "-c", HEALTH_LOADABLE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    body = report["body"]
    assert "not_installed_anywhere.chat.ChatNope" in body["connectors"]  # the list itself is unchanged
    installed = set(packages_distributions())  # top-level names of the installed distributions
    expected = {
        path: path.split(".")[0] in installed or path.startswith("fair_forge_core.") for path in body["connectors"]
    }
    assert body["connectors_loadable"] == expected
    assert expected["fair_forge_core.judges.ReferenceJudge"] is True
    assert expected["not_installed_anywhere.chat.ChatNope"] is False
    assert report["imported"] == []  # found, not imported: no provider SDK is loaded by /health


FIRST_RUN_IMPORTS = """
import json, sys
from fair_forge_testing.fake_llm_server import FakeLLMServer
from fair_forge_testing.handler_client import call_handler
body = json.loads(sys.stdin.read())
with FakeLLMServer() as server:
    if body["connector"]["class_path"].startswith("langchain_openai"):
        body["connector"]["params"] = {"model": "m", "api_key": "sk-local", "base_url": server.base_url}
    response = call_handler(body)
heavy = ("scipy", "numpy", "openai", "langchain_openai", "langchain_groq", "groq")
print(json.dumps({
    "status": response.status,
    "tool_scores": [s for m in response.body["per_conversation_metrics"] for s in m["tool_correctness_scores"]],
    "unscored": sum(m["unscored_interactions"] for m in response.body["per_conversation_metrics"]),
    "judged_offline": "fair_forge_core.judges.offline" in sys.modules,
    "loaded": sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in heavy}),
    "reference_rules": "fair_forge_core.judges.reference" in sys.modules,
}))
"""


def first_run_imports(body: dict[str, Any]) -> dict[str, Any]:
    """What one /run of `body` in a fresh process imported (the judge server in that process)."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_RUN_IMPORTS],
        input=json.dumps(body),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"] == 200 and report["unscored"] == 0
    assert any(score is not None for score in report["tool_scores"])  # the tool rubric ran
    return report


def test_an_offline_run_with_tool_calls_imports_no_scipy_numpy_or_provider_sdk() -> None:
    # #27 target 3: the first /run on a cold process imports only what it uses. The tool
    # rubric's assignment is ours (not scipy's), the default frequentist intervals need no
    # scipy, and the offline judge no provider SDK.
    report = first_run_imports(CALCULATOR)
    assert report["judged_offline"] and report["reference_rules"]
    assert report["loaded"] == []


def test_a_chat_openai_run_loads_its_sdk_but_not_scipy_numpy_or_the_offline_rules() -> None:
    body = copy.deepcopy(CALCULATOR)
    body["connector"] = {"class_path": "langchain_openai.chat_models.ChatOpenAI", "params": {}}
    report = first_run_imports(body)
    assert report["loaded"] == ["langchain_openai", "openai"]
    assert not report["judged_offline"] and not report["reference_rules"]


def test_unknown_route_is_404_in_the_error_shape() -> None:
    assert_error(call_handler(method="GET", path="/nope"), 404, "Not found")


@pytest.mark.parametrize(
    ("method", "path", "allowed", "shown"),
    [
        ("GET", "/run", "POST", "/run"),
        ("PUT", "/health", "GET", "/health"),
        ("DELETE", "/jobs/0b7c6f1e", "GET", "/jobs/{job_id}"),
        ("GET", "/calibrate", "POST", "/calibrate"),
        ("PATCH", "/schema", "GET", "/schema"),
    ],
)
def test_a_known_path_with_another_method_is_a_405_naming_the_methods(
    method: str, path: str, allowed: str, shown: str
) -> None:
    response = call_handler(method=method, path=path)
    assert_error(response, 405, f"Method not allowed: {shown} takes {allowed}")
    assert response.headers["Allow"] == allowed
    assert set(response.body) == {"success", "error", "request_id"}


def test_cors_header_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    script = """
import json, os
from fair_forge_testing.handler_client import call_handler
print(json.dumps(call_handler(method="GET", path="/health", headers={"Origin": "https://app.example"}).headers))
"""
    env = {**__import__("os").environ, "CORS_ALLOW_ORIGIN": "https://app.example"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    headers = json.loads(result.stdout.strip().splitlines()[-1])
    assert headers.get("Access-Control-Allow-Origin") == "https://app.example"


# --------------------------------------------------------------------------- audit: strict input


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"k": True}, "config.k"),
        ({"k": "3"}, "config.k"),
        ({"k": 3.0}, "config.k"),
        ({"threshold": True}, "config.threshold"),
        ({"threshold": "0.7"}, "config.threshold"),
        ({"require_tool_correctness": "no"}, "config.require_tool_correctness"),
        ({"require_tool_correctness": 0}, "config.require_tool_correctness"),
        ({"tool_dimension_floor": 1.5}, "config.tool_dimension_floor"),
        (
            {"tool_weights": dict.fromkeys(["selection", "parameters", "sequence", "utilization"], 1e308)},
            "config.tool_weights",
        ),
        ({"statistical_mode": {"mode": "bayesian", "prior": [1e-300, 1]}}, "config.statistical_mode.prior"),
        ({"statistical_mode": {"mode": "bayesian", "prior": [1, 1e300]}}, "config.statistical_mode.prior"),
    ],
)
def test_types_are_strict_and_values_finite(config: dict[str, Any], field: str) -> None:
    response = call_handler(request(config=config))
    assert_error(response, 400, field)
    assert any(detail["field"] == field for detail in response.body["details"])


def test_an_integer_is_a_number() -> None:
    assert call_handler(request(config={"threshold": 1, "tool_threshold": 0})).status == 200


@pytest.mark.parametrize("literal", ["1e309", "-1e309", "NaN", "Infinity"])
def test_non_finite_numbers_anywhere_are_refused(literal: str) -> None:
    raw = json.dumps(CALCULATOR).replace('"b": 3', f'"b": {literal}', 1)
    assert literal in raw
    assert_error(call_handler(raw=raw), 400, "Invalid JSON body")


def test_a_json_syntax_error_gives_its_line_and_column() -> None:
    raw = '{\n  "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"}\n  "datasets": []\n}'
    assert_error(call_handler(raw=raw), 400, "Invalid JSON body: Expecting ',' delimiter at line 3, column 3")


OPENAI = "langchain_openai.chat_models.ChatOpenAI"


@pytest.mark.parametrize(
    ("class_path", "params", "field", "message"),
    [
        (
            OPENAI,
            {"model": "m", "api_key": "sk-caller", "temprature": 0},
            "connector.params.temprature",
            "connector.params.temprature is not a parameter of ChatOpenAI (did you mean temperature?)",
        ),
        (
            "langchain_groq.chat_models.ChatGroq",
            {"model": "m", "api_key": "gsk_…"},
            "connector.params.api_key",
            "connector.params.api_key must be printable ASCII",
        ),
        (
            "fair_forge_core.judges.ReferenceJudge",
            {"temperature": 0},
            "connector.params.temperature",
            "connector.params.temperature is not a parameter of ReferenceJudge",
        ),
    ],
)
def test_connector_params_are_checked_against_the_class(
    class_path: str, params: dict[str, Any], field: str, message: str
) -> None:
    response = call_handler(request(connector={"class_path": class_path, "params": params}))
    assert_error(response, 400, f"Failed to create LLM connector: {message}")
    assert response.body["details"][0]["field"] == field
    assert "sk-caller" not in response.raw and "gsk_" not in response.raw


def test_forwarded_request_parameters_are_accepted() -> None:
    # ChatGroq declares no top_p or seed; it forwards them to the API, so they are not typos.
    from fair_forge_core.connectors import build_chat_model

    params = {"model": "m", "api_key": "gsk-caller", "top_p": 0.5, "seed": 1, "stop": ["\n"]}
    judge = build_chat_model("langchain_groq.chat_models.ChatGroq", params)
    assert judge.model.model_kwargs == {"top_p": 0.5, "seed": 1}
    assert judge.model.stop == ["\n"]


def test_without_any_key_the_service_says_what_it_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLM_API_KEY", raising=False)
    monkeypatch.delenv("LLM_API_KEY_SECRET_ARN", raising=False)
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    response = call_handler(
        request(connector={"class_path": "langchain_groq.chat_models.ChatGroq", "params": {"model": "m"}})
    )
    assert_error(response, 400, "connector.params.api_key is required: this deployment has no provider key of its own")
    assert "GROQ_API_KEY" not in response.raw


def test_original_datasets_are_accepted_with_a_warning() -> None:
    datasets = copy.deepcopy(CALCULATOR["datasets"])
    for dataset in datasets:
        dataset["language"] = None
        for batch in dataset["conversation"]:
            batch.update(logprobs={}, weight=None)
            batch.setdefault("ground_truth_agentic", {})
    response = call_handler(request(datasets=datasets))
    assert response.status == 200, response.body
    assert sum("alquimia-fair-forge" in w for w in response.body["warnings"]) == 1
    assert response.body["per_conversation_metrics"][0]["tool_correctness_scores"][1] is None


# --------------------------------------------------------------------------- bounded work (issue #12)


def tool_turn(qa_id: str, used: int, expected: int) -> dict[str, Any]:
    return {
        "qa_id": qa_id,
        "query": "q",
        "assistant": "a",
        "ground_truth_assistant": "a",
        "agentic": {"tools_used": [{"tool_name": "t", "parameters": {"i": i}} for i in range(used)]},
        "ground_truth_agentic": {
            "expected_tools": [{"tool_name": "t", "parameters": {"i": i}} for i in range(expected)]
        },
    }


def test_tool_calls_per_turn_are_bounded() -> None:
    datasets = [
        {"session_id": "s", "assistant_id": "a", "conversation": [tool_turn("q0", 64, 64), tool_turn("q1", 3, 65)]}
    ]
    response = call_handler(request(datasets=datasets))
    assert_error(
        response, 413, "Too many tool calls in datasets[0].conversation[1].ground_truth_agentic.expected_tools: 65"
    )
    assert "limit 64 per turn" in response.body["error"]


def test_tool_calls_per_request_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_MAX_TOOL_CALLS", "100")
    turns = [tool_turn(f"q{i}", 30, 30) for i in range(2)]  # 120 calls
    response = call_handler(request(datasets=[{"session_id": "s", "assistant_id": "a", "conversation": turns}]))
    assert_error(response, 413, "Too many tool calls: 120 (limit 100 per request)")


def test_distinct_assistants_are_bounded() -> None:
    datasets = [
        {"session_id": f"s{i}", "assistant_id": f"agent-{i}", "conversation": [tool_turn("q", 0, 0)]} for i in range(51)
    ]
    assert_error(
        call_handler(request(datasets=datasets)), 413, "Too many assistants: 51 distinct assistant_id (limit 50)"
    )


def test_curve_points_are_bounded() -> None:
    # 10 assistants: 11 curves (the aggregate and one per assistant) × max(k, 10) points.
    datasets = [
        {"session_id": f"s{i}", "assistant_id": f"agent-{i}", "conversation": [tool_turn("q", 0, 0)]} for i in range(10)
    ]
    assert call_handler(request(datasets=datasets, config={"k": 909})).status == 200  # 11 × 909 = 9,999
    assert_error(
        call_handler(request(datasets=datasets, config={"k": 910})),
        413,
        "Too many curve points: 11 curve(s) × max(k, 10) = 10010",
    )


def test_health_states_every_limit() -> None:
    limits = call_handler(method="GET", path="/health").body["limits"]
    assert {
        key: limits[key]
        for key in (
            "max_tool_calls_per_turn",
            "max_tool_calls",
            "max_assistants",
            "max_curve_points",
            "max_k",
            "max_judge_reply_bytes",
            "max_calibration_pairs",
            "max_any_of_options",
            "max_rule_work",
        )
    } == {
        "max_tool_calls_per_turn": 64,
        "max_tool_calls": 20_000,
        "max_assistants": 50,
        "max_curve_points": 10_000,
        "max_k": 1000,
        "max_judge_reply_bytes": 1_000_000,
        "max_calibration_pairs": 2_000,
        "max_any_of_options": 1_000,
        "max_rule_work": 1_000_000,
    }


def test_a_typo_inside_ground_truth_agentic_is_a_400_not_tools_silently_off() -> None:
    datasets = copy.deepcopy(CALCULATOR["datasets"])
    truth = datasets[0]["conversation"][0]["ground_truth_agentic"]
    truth["expected_tool"] = truth.pop("expected_tools")
    response = call_handler(request(datasets=datasets))
    assert_error(response, 400, "datasets[0].conversation[0].ground_truth_agentic.expected_tool")


@pytest.mark.parametrize("class_path", [OPENAI, "langchain_groq.chat_models.ChatGroq"])
def test_common_request_parameters_are_forwarded_not_refused(class_path: str) -> None:
    from fair_forge_core.connectors import build_chat_model

    params = {
        "model": "m",
        "api_key": "caller-key",
        "response_format": {"type": "json_object"},
        "user": "ci",
        "parallel_tool_calls": False,
    }
    judge = build_chat_model(class_path, params)
    assert judge.model.model_kwargs["response_format"] == {"type": "json_object"}
    assert judge.model.model_kwargs["parallel_tool_calls"] is False


def test_the_finished_log_line_splits_the_judge_phase_from_what_follows_it() -> None:
    # What follows the judge phase is the work its deadline does not stop: operators see it in CloudWatch.
    from fair_forge_testing.fake_llm_server import FakeLLMServer
    from fair_forge_testing.handler_client import run_in_subprocess

    with FakeLLMServer(latency_s=0.2) as server:
        body = request()
        body["connector"] = {
            "class_path": OPENAI,
            "params": {"model": "judge", "base_url": server.base_url, "api_key": "sk-caller-1"},
        }
        (response,), logs = run_in_subprocess([body])
    assert response["status"] == 200, response["body"]
    (finished,) = [json.loads(line) for line in logs.splitlines() if '"evaluation finished"' in line]
    assert 200 <= finished["judging_ms"] <= finished["duration_ms"]  # at least one call of the server's latency
    assert finished["after_judge_ms"] >= 0
