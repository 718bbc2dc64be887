"""A 500 is logged with its traceback, and with no secret in it: the request's key is masked
in the message, the chained exceptions and the traceback alike, whenever the defect happens."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any, NoReturn

import pytest

import handler.connectors
import handler.routes.run
from fair_forge_testing.handler_client import call_handler
from handler.observability import logger

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = json.loads((ROOT / "examples" / "calculator.json").read_text())
# Not key-shaped: only masking the request's own values can hide it.
SECRET = "hunter2-correct-horse-battery-staple"
HEADER_SECRET = "opaque-header-value-0451"


def request_with_secrets() -> dict[str, Any]:
    body = copy.deepcopy(CALCULATOR)
    body["connector"] = {
        "class_path": "langchain_openai.chat_models.ChatOpenAI",
        "params": {
            "model": "judge",
            "base_url": "http://127.0.0.1:9/v1",
            "api_key": SECRET,
            "default_headers": {"X-Auth-Token": HEADER_SECRET},
        },
    }
    return body


def defect(*secrets: str) -> NoReturn:
    """A bug that quotes the secrets it was handed, in a chained exception and in its own."""
    try:
        raise KeyError(f"lookup failed for {secrets[-1]}")
    except KeyError as exc:
        raise RuntimeError(f"defect while judging with {secrets[0]!r}") from exc


@pytest.fixture
def log_lines(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    stream = io.StringIO()
    monkeypatch.setattr(logger.registered_handler, "stream", stream)
    return stream


def planning_breaks(request: Any, source: Any, **_: Any) -> NoReturn:
    params = request.connector.params
    defect(params["api_key"], params["default_headers"]["X-Auth-Token"])


def evaluation_breaks(request: Any, *_: Any) -> NoReturn:
    params = request.connector.params
    defect(params["api_key"], params["default_headers"]["X-Auth-Token"])


@pytest.mark.parametrize(
    ("module", "name", "replacement"),
    [
        (handler.connectors, "plan_run", planning_breaks),  # building the judge: before it knows its secrets
        (handler.routes.run, "_evaluate", evaluation_breaks),  # while the judge's secrets are masked
    ],
    ids=["building the judge", "evaluating"],
)
def test_a_defect_is_logged_with_its_traceback_and_no_secret(
    monkeypatch: pytest.MonkeyPatch, log_lines: io.StringIO, module: Any, name: str, replacement: Any
) -> None:
    monkeypatch.setattr(module, name, replacement)
    response = call_handler(request_with_secrets())
    assert response.status == 500
    assert response.body["error"] == "Agentic evaluation failed: internal error (RuntimeError)"
    output = log_lines.getvalue()
    [line] = [json.loads(text) for text in output.splitlines() if '"internal error"' in text]
    assert line["level"] == "ERROR" and line["error_type"] == "RuntimeError"
    traceback = line["exception"]
    assert traceback.startswith("Traceback (most recent call last)")
    assert "in defect" in traceback and "KeyError: 'lookup failed for [REDACTED]'" in traceback
    assert "RuntimeError: defect while judging with '[REDACTED]'" in traceback
    for secret in (SECRET, HEADER_SECRET):
        assert secret not in output and secret not in response.raw
        assert secret[:12] not in output
