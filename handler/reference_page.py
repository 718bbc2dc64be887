"""The field tables of docs/reference/schemas.md, generated from the published JSON Schemas.

One table per model of the request (`RunRequest`, `TracesRunRequest` and every model they
hold) and of the 200 response (`RunResponse` and every model it holds): each field's name, its
JSON type (a model is a link to its own table), whether it is required or its default, and
its meaning where the model documents the field (a `Field(description=…)`, else the
docstring under the field in the class). A model both sides hold is listed once, with the
request. The page is written with the schemas by `make schema` (`python -m handler.api_schema`),
and a test fails while the checked-in page differs from this text.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import textwrap
from typing import Any

from pydantic import BaseModel

import fair_forge_core.schemas as schemas_module
from handler import responses

PAGE = "docs/reference/schemas.md"

_INTRO = """\
# Requests and results

The pydantic models at the boundary, field by field: what a request holds (its rules:
[The request](../request.md)) and what a result holds (its meaning:
[The response](../response.md)). Generated from the JSON Schemas the service publishes
(`schemas/`, `GET /schema`) by `make schema`; do not edit this page by hand.
"""


def _models() -> dict[str, type[BaseModel]]:
    """Every pydantic model of `fair_forge_core.schemas` and `handler.responses`, by class name."""
    found: dict[str, type[BaseModel]] = {}
    for module in (schemas_module, responses):
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseModel):
                found.setdefault(value.__name__, value)
    return found


def _field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """The docstring written under each field of `model` and of its bases, by field name."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (inspect.isclass(cls) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for statement, following in itertools.pairwise(body):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[statement.target.id] = following.value.value
    return docs


def _one_line(text: str) -> str:
    """`text` as one table cell: its lines joined, a "|" escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _type(prop: dict[str, Any]) -> str:
    """A property's JSON type in words; a model is a link to its table."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    for union in ("anyOf", "oneOf"):
        if union in prop:
            return " or ".join(dict.fromkeys(_type(arm) for arm in prop[union]))
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    if "enum" in prop:
        return " or ".join(f"`{json.dumps(value)}`" for value in prop["enum"])
    kind = prop.get("type")
    if isinstance(kind, list):
        return " or ".join(_type({**prop, "type": one}) for one in kind)
    if kind == "array":
        items = prop.get("items")
        if not items:
            return "list"
        item = _type(items)
        return f"list of ({item})" if " or " in item else f"list of {item}"
    if kind == "object":
        values = prop.get("additionalProperties")
        if not (isinstance(values, dict) and values):
            return "object"
        value = _type(values)
        return f"object of ({value})" if " or " in value else f"object of {value}"
    return {"integer": "integer", "number": "number", "string": "string", "boolean": "bool", "null": "null"}.get(
        kind or "", "any JSON"
    )


def _presence(name: str, prop: dict[str, Any], required: set[str]) -> str:
    if name in required:
        return "required"
    if "default" in prop:
        text = json.dumps(prop["default"], ensure_ascii=False)
        return f"default `{text}`" if len(text) <= 40 else "default: see the model"
    return "optional"


def _table(name: str, definition: dict[str, Any], model: type[BaseModel] | None) -> list[str]:
    """The section of one model: its heading, its docstring's first paragraph, its fields."""
    lines = [f"### {name}", ""]
    description = (definition.get("description") or "").split("\n\n")[0]
    if description:
        lines += [_one_line(description), ""]
    properties: dict[str, Any] = definition.get("properties", {})
    if not properties:
        return [*lines, f"A JSON value of type {_type(definition)}.", ""]
    documented = _field_docstrings(model) if model is not None else {}
    fields = model.model_fields if model is not None else {}
    meanings = {
        field: (info.description or documented.get(field, "")) for field, info in fields.items() if field in properties
    }
    described = any(meanings.values())  # a meaning column only where the model documents a field
    lines += [
        "| field | type | presence |" + (" meaning |" if described else ""),
        "|---|---|---|" + ("---|" * described),
    ]
    required = set(definition.get("required", []))
    for field, prop in properties.items():
        row = f"| `{field}` | {_type(prop)} | {_presence(field, prop, required)} |"
        lines.append(row + (f" {_one_line(meanings.get(field, ''))} |" if described else ""))
    return [*lines, ""]


def _section(title: str, tops: dict[str, dict[str, Any]], defs: dict[str, Any], models: dict[str, Any]) -> list[str]:
    lines = [f"## {title}", ""]
    for name, definition in {**tops, **dict(sorted(defs.items()))}.items():
        lines += _table(name, definition, models.get(name))
    return lines


def reference_page(request: dict[str, Any], response: dict[str, Any]) -> str:
    """The text of docs/reference/schemas.md from the published request and response schemas."""
    models = _models()
    request_defs = dict(request["$defs"])
    tops = {name: request_defs.pop(name) for name in ("RunRequest", "TracesRunRequest")}
    response_defs = {name: d for name, d in response["$defs"].items() if name not in request["$defs"]}
    top = {key: value for key, value in response.items() if key not in ("$schema", "$defs", "title")}
    top["description"] = models["RunResponse"].__doc__ or ""
    lines = [
        _INTRO,
        *_section("The request", tops, request_defs, models),
        *_section("The result", {"RunResponse": top}, response_defs, models),
    ]
    return "\n".join(lines).rstrip() + "\n"
