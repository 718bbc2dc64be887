"""The published JSON Schemas (`schemas/`, `GET /schema`): generated from the models, current,
and true of what the service accepts and answers."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from examples.run_local import TRACE_EXAMPLES, trace_requests
from fair_forge_testing.handler_client import call_handler
from handler.api_schema import reference_text, schema_files

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
REFERENCE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}


def validator(name: str) -> Draft202012Validator:
    schema = json.loads((ROOT / "schemas" / name).read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_the_checked_in_schemas_are_the_generated_ones() -> None:
    for name, text in schema_files().items():
        assert (ROOT / "schemas" / name).read_text() == text, f"schemas/{name} is stale: run `make schema`"


def test_the_reference_page_is_the_generated_one_and_lists_every_field() -> None:
    text = reference_text()
    assert (ROOT / "docs" / "reference" / "schemas.md").read_text() == text, (
        "docs/reference/schemas.md is stale: run `make schema`"
    )
    # every model of both schemas has a table, and every one of its fields a row
    for name in ("request.schema.json", "response.schema.json"):
        schema = json.loads(schema_files()[name])
        models = {**schema["$defs"], **({"RunResponse": schema} if "properties" in schema else {})}
        for model, definition in models.items():
            assert f"### {model}\n" in text, model
            section = text.split(f"### {model}\n", 1)[1].split("\n### ", 1)[0]
            for field in definition.get("properties", {}):
                assert f"| `{field}` |" in section, (model, field)


def _documented_fields(page: str, heading: str) -> set[str]:
    """Every name in backquotes in the first column of the table under `heading` in docs/<page>."""
    section = (ROOT / "docs" / page).read_text().split(heading, 1)[1].split("\n## ", 1)[0]
    cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {name for cell in cells for name in cell.split("`")[1::2]}


@pytest.mark.parametrize(
    ("model", "heading"),
    [("EvaluationConfig", "## Config"), ("Dataset", "## Datasets: one conversation each"), ("Batch", "## Turns")],
)
def test_the_request_page_lists_every_field_of_the_request(model: str, heading: str) -> None:
    # #33: request.md had no row for config.efficiency (and the reader found no agent_usage).
    import fair_forge_core.schemas as schemas

    fields = set(getattr(schemas, model).model_fields)
    listed = _documented_fields("request.md", heading)
    assert fields <= listed, sorted(fields - listed)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_every_example_is_a_valid_request(example: Path) -> None:
    errors = list(validator("request.schema.json").iter_errors(json.loads(example.read_text())))
    assert not errors, [error.message for error in errors]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_every_response_to_an_example_is_valid(example: Path) -> None:
    body = {**json.loads(example.read_text()), "connector": REFERENCE}
    response = call_handler(body)
    assert response.status == 200, response.body
    errors = list(validator("response.schema.json").iter_errors(response.body))
    assert not errors, [error.message for error in errors]


def test_every_trace_example_is_sent_by_make_run() -> None:
    assert sorted(TRACE_EXAMPLES) == sorted(p.name for p in (ROOT / "examples" / "traces").glob("*.json"))


@pytest.mark.parametrize(("name", "body"), trace_requests(), ids=lambda value: value if isinstance(value, str) else "")
def test_every_trace_example_is_a_valid_request_answered_without_warnings(name: str, body: dict[str, Any]) -> None:
    assert not [error.message for error in validator("request.schema.json").iter_errors(body)]
    response = call_handler(body)
    assert response.status == 200, response.body
    assert not list(validator("response.schema.json").iter_errors(response.body))
    assert not [w for w in response.body["warnings"] if "trace" in w or "task" in w], response.body["warnings"]


@pytest.mark.parametrize(
    "change",
    [
        lambda body: body["config"].update(treshold=0.5),  # a typo: the service answers 400
        lambda body: body["config"].update(k="3"),  # a string for a number: 400 too
        lambda body: body["datasets"][0].pop("session_id"),
    ],
    ids=["typo", "string-k", "missing-session-id"],
)
def test_what_the_service_refuses_the_schema_refuses(change: Any) -> None:
    body = copy.deepcopy(json.loads((ROOT / "examples" / "calculator.json").read_text()))
    body.setdefault("config", {})
    change(body)
    assert not validator("request.schema.json").is_valid(body)
    assert call_handler({**body, "connector": REFERENCE}).status == 400


def test_get_schema_serves_both() -> None:
    response = call_handler(method="GET", path="/schema")
    assert response.status == 200
    assert response.body == {
        "request": json.loads(schema_files()["request.schema.json"]),
        "response": json.loads(schema_files()["response.schema.json"]),
    }
