"""The published JSON Schemas of the API: the body of `POST /run` and its 200 response.

Generated from the pydantic models that validate and build them (`RunRequest` and
`TracesRunRequest`, `RunResponse`), so the schema cannot drift from what the service accepts: the copies
checked in under `schemas/` are compared with these by the tests, and `GET /schema`
serves them. The TASKS file that `fair_forge_core.agents` runs an agent on (docs/agent-contract.md)
is published beside them (`tasks.schema.json`, from `TasksFile`). The field tables of docs/reference/schemas.md are generated from them too
(`handler.reference_page`). Refresh the files with `make schema` (`python -m handler.api_schema`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from fair_forge_core.schemas import RunRequest, TracesRunRequest
from handler.responses import RunResponse

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _published(schema: dict[str, Any], title: str, description: str) -> dict[str, Any]:
    return {"$schema": DIALECT, **schema, "title": title, "description": description}


def request_schema() -> dict[str, Any]:
    """The JSON Schema of a `POST /run` body: a `RunRequest` (conversations), or a
    `TracesRunRequest` (traces and references). `POST /jobs` takes the first."""
    return _published(
        TypeAdapter(RunRequest | TracesRunRequest).json_schema(mode="validation"),
        "Fair-Forge Agentic request",
        "The body of POST /run: the judge's connector, the options, and either the conversations (`datasets`, "
        "also the body of POST /jobs) or agent traces with their references (`traces`, `references`).",
    )


def response_schema() -> dict[str, Any]:
    """The JSON Schema of a 200 response of `POST /run`."""
    return _published(
        RunResponse.model_json_schema(mode="serialization"),
        "Fair-Forge Agentic result",
        "The 200 body of POST /run: per-conversation results, the aggregate, warnings and the request id.",
    )


def tasks_schema() -> dict[str, Any]:
    """The JSON Schema of a TASKS file (`fair_forge_core.agents.TasksFile`)."""
    from fair_forge_core.agents import TasksFile

    return _published(
        TasksFile.model_json_schema(mode="validation"),
        "Fair-Forge Agentic tasks",
        "The tasks an agent is run on (docs/agent-contract.md): per task its turns' queries and references, "
        "and its checks; optionally the connector and config the recording is evaluated with.",
    )


def schema_files() -> dict[str, str]:
    """File name under `schemas/` → its text, as checked in."""
    schemas = (
        ("request.schema.json", request_schema()),
        ("response.schema.json", response_schema()),
        ("tasks.schema.json", tasks_schema()),
    )
    return {name: json.dumps(schema, indent=2, ensure_ascii=False) + "\n" for name, schema in schemas}


def reference_text() -> str:
    """The text of docs/reference/schemas.md (`handler.reference_page`), as checked in."""
    from handler.reference_page import reference_page

    return reference_page(request_schema(), response_schema())


def main() -> None:
    SCHEMA_DIR.mkdir(exist_ok=True)
    for name, text in schema_files().items():
        (SCHEMA_DIR / name).write_text(text, encoding="utf-8")
        print(f"wrote schemas/{name}")
    from handler.reference_page import PAGE

    (SCHEMA_DIR.parent / PAGE).write_text(reference_text(), encoding="utf-8")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
