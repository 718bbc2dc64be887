"""`POST /run` answers with the HTML report when the client asks for HTML; errors stay JSON."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handler.app import lambda_handler
from handler.local import LocalLambdaContext, make_proxy_event, make_server
from tests.report_html import parse, resolve, tied_numbers

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = (ROOT / "examples" / "support_agents.json").read_text()
CALCULATOR = (ROOT / "examples" / "calculator.json").read_text()


def invoke(body: str, *, headers: dict[str, str] | None = None, query: dict[str, str] | None = None) -> dict[str, Any]:
    """The proxy response of the handler, with a flat `headers` dict."""
    event = make_proxy_event(
        "POST", "/run", body, headers={"Content-Type": "application/json", **(headers or {})}, query=query
    )
    response = lambda_handler(event, LocalLambdaContext())
    flat = dict(response.get("headers") or {})
    for name, values in (response.get("multiValueHeaders") or {}).items():
        flat.setdefault(name, ", ".join(values))
    response["headers"] = {name.lower(): value for name, value in flat.items()}
    return response


def assert_html_report_matches_json(page: str, data: dict[str, Any]) -> None:
    tied = tied_numbers(parse(page))
    assert len(tied) > 100
    for _, path, shown in tied:
        assert shown == resolve(data, path), path


@pytest.mark.parametrize(
    ("headers", "query"),
    [
        ({"Accept": "text/html"}, None),
        ({}, {"format": "html"}),
        ({"accept": "application/json;q=0.5, text/html"}, None),
    ],
    ids=["accept-header", "format-query", "accept-with-q"],
)
def test_html_is_the_report_of_the_same_result(headers: dict[str, str], query: dict[str, str] | None) -> None:
    response = invoke(SUPPORT, headers=headers, query=query)
    assert response["statusCode"] == 200, response["body"][:300]
    assert response["headers"]["content-type"].startswith("text/html")
    page = response["body"]
    assert page.startswith("<!DOCTYPE html>")
    for ident in ("fig-pass-curves", "fig-tool-breakdown", "assistants", "conversations"):
        assert f'id="{ident}"' in page
    as_json = invoke(SUPPORT)  # the offline judge is deterministic: the same request gives the same numbers
    assert as_json["headers"]["content-type"] == "application/json"
    assert_html_report_matches_json(page, json.loads(as_json["body"]))


@pytest.mark.parametrize(
    ("headers", "query"),
    [
        ({}, None),
        ({"Accept": "*/*"}, None),
        ({"Accept": "text/html, application/json"}, None),  # a tie keeps the default
        ({"Accept": "text/html"}, {"format": "json"}),  # the query wins
    ],
)
def test_json_stays_the_default(headers: dict[str, str], query: dict[str, str] | None) -> None:
    response = invoke(CALCULATOR, headers=headers, query=query)
    assert response["statusCode"] == 200
    assert response["headers"]["content-type"] == "application/json"
    assert json.loads(response["body"])["success"] is True


def test_errors_stay_json_when_html_is_asked_for() -> None:
    response = invoke(json.dumps({"datasets": []}), headers={"Accept": "text/html"})
    assert response["statusCode"] == 400
    assert response["headers"]["content-type"] == "application/json"
    assert json.loads(response["body"]) == {
        "success": False,
        "error": "No connector configuration provided",
        "request_id": json.loads(response["body"])["request_id"],
    }


def test_an_unknown_format_is_a_400() -> None:
    response = invoke(CALCULATOR, query={"format": "xml"})
    assert response["statusCode"] == 400
    assert "Unsupported format" in json.loads(response["body"])["error"]


def test_the_report_carries_the_request_id() -> None:
    event = make_proxy_event("POST", "/run", CALCULATOR, headers={"Accept": "text/html"})
    page = lambda_handler(event, LocalLambdaContext())["body"]
    assert f"request {event['requestContext']['requestId']}" in page


def test_a_report_too_large_loses_per_turn_detail_then_fails_413(monkeypatch: pytest.MonkeyPatch) -> None:
    full = invoke(SUPPORT, query={"format": "html"})["body"]
    monkeypatch.setenv("FAIR_FORGE_MAX_RESPONSE_BYTES", str(len(full.encode()) - 1))
    trimmed = invoke(SUPPORT, query={"format": "html"})
    assert trimmed["statusCode"] == 200
    assert "per-turn detail left out" in trimmed["body"]
    assert "Per-turn detail was left out of this result." in trimmed["body"]
    monkeypatch.setenv("FAIR_FORGE_MAX_RESPONSE_BYTES", "2000")
    refused = invoke(SUPPORT, query={"format": "html"})
    assert refused["statusCode"] == 413
    assert refused["headers"]["content-type"] == "application/json"


@pytest.fixture
def local_api() -> Iterator[str]:
    server = make_server(port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_local_api_serves_the_report_to_a_browser_like_client(local_api: str) -> None:
    request = urllib.request.Request(
        f"{local_api}/run?format=html", data=CALCULATOR.encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        page = response.read().decode("utf-8")
    assert 'id="fig-pass-curves"' in page


def test_the_report_is_served_with_nosniff_and_a_policy_that_allows_only_what_it_uses() -> None:
    response = invoke(SUPPORT, headers={"Accept": "text/html"})
    assert response["statusCode"] == 200
    assert response["headers"]["x-content-type-options"] == "nosniff"
    policy = response["headers"]["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy and "frame-ancestors 'none'" in policy
    # What the policy allows is all the page needs: inline CSS and SVG, no script, nothing fetched.
    page = response["body"].lower()
    assert "<script" not in page and " src=" not in page and "<link" not in page


# Run in a fresh interpreter: this test process has imported jinja2 already.
TEMPLATE_ENGINE_PROBE = """
import json, sys
from pathlib import Path
from handler.app import lambda_handler
from handler.local import LocalLambdaContext, make_proxy_event

def loaded():
    return sorted(name for name in ("jinja2", "markupsafe") if name in sys.modules)

def run(body, query):
    event = make_proxy_event("POST", "/run", body, headers={"Content-Type": "application/json"}, query=query)
    return lambda_handler(event, LocalLambdaContext())["statusCode"]

body = Path("examples/calculator.json").read_text()
after_import = loaded()
json_status = run(body, None)
after_json = loaded()
html_status = run(body, {"format": "html"})
print(json.dumps([after_import, json_status, after_json, html_status, loaded()]))
"""


def test_the_template_engine_is_imported_only_for_an_html_report() -> None:
    process = subprocess.run(
        [sys.executable, "-c", TEMPLATE_ENGINE_PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert process.returncode == 0, process.stderr[-2000:]
    after_import, json_status, after_json, html_status, after_html = json.loads(process.stdout.splitlines()[-1])
    assert after_import == [], "import handler.app loads the template engine on the cold path"
    assert (json_status, after_json) == (200, []), "a JSON response loads the template engine"
    # and the probe does see it once a report is rendered
    assert (html_status, after_html) == (200, ["jinja2", "markupsafe"])


def test_the_report_names_the_judge_and_what_it_used() -> None:
    data = json.loads(invoke(CALCULATOR)["body"])
    page = invoke(CALCULATOR, query={"format": "html"})["body"]
    usage = data["aggregated_metrics"]["judge_usage"]
    cost = "no price" if usage["cost_usd"] is None else f"${usage['cost_usd']:.4f}"
    calls = f"{usage['calls']} call{'s' if usage['calls'] != 1 else ''}"
    expected = (
        f"judge {usage['model']} (prompt {usage['prompt_hash'][:8]}): {calls}, "
        f"{usage['input_tokens']:,} + {usage['output_tokens']:,} tokens, {cost}"
    )
    assert expected in page
