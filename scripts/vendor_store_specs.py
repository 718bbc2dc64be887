"""Cut the excerpts of the stores' OpenAPI documents that `fair_forge_testing.fake_stores` serves
(`fair_forge_testing/specs/*.json`): the one path `fair-forge pull` calls, the schemas it
references (their closure), the security schemes, and an `x-source` naming the repository, path
and commit it came from. Run by hand when a store's spec moves on:

    python scripts/vendor_store_specs.py LANGFUSE_OPENAPI.yml LANGFUSE_COMMIT PHOENIX_OPENAPI.json PHOENIX_COMMIT

(LangSmith publishes no OpenAPI document in its SDK repository: `specs/langsmith.json` is written
by hand from the SDK's `Client.list_runs`, see `specs/README.md`.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

SPECS = Path(__file__).resolve().parents[1] / "fair_forge_testing" / "specs"


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(value) for value in node))
    return set()


def excerpt(document: dict[str, Any], path: str, method: str, source: dict[str, str]) -> dict[str, Any]:
    """`document` cut down to `path`'s `method` and the closure of the schemas it references."""
    operation = document["paths"][path][method]
    schemas = document.get("components", {}).get("schemas", {})
    wanted, pending = set(), _refs(operation)
    while pending:
        name = pending.pop()
        if name not in wanted:
            wanted.add(name)
            pending |= _refs(schemas[name])
    components: dict[str, Any] = {"schemas": {name: schemas[name] for name in sorted(wanted)}}
    if "securitySchemes" in document.get("components", {}):
        components["securitySchemes"] = document["components"]["securitySchemes"]
    return {
        "openapi": document["openapi"],
        "info": {"title": document["info"]["title"], "version": document["info"].get("version", "")},
        "x-source": source,
        "paths": {path: {method: operation}},
        "components": components,
    }


def main(argv: list[str]) -> None:
    langfuse_file, langfuse_commit, phoenix_file, phoenix_commit = argv
    langfuse = yaml.safe_load(Path(langfuse_file).read_text(encoding="utf-8"))
    phoenix = json.loads(Path(phoenix_file).read_text(encoding="utf-8"))
    cuts = {
        "langfuse.json": excerpt(
            langfuse,
            "/api/public/v2/observations",
            "get",
            {"repo": "langfuse/langfuse", "path": "web/public/generated/api/openapi.yml", "commit": langfuse_commit},
        ),
        "phoenix.json": excerpt(
            phoenix,
            "/v1/projects/{project_identifier}/spans/otlpv1",
            "get",
            {"repo": "Arize-ai/phoenix", "path": "schemas/openapi.json", "commit": phoenix_commit},
        ),
    }
    for name, cut in cuts.items():
        (SPECS / name).write_text(json.dumps(cut, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
