"""The project's own modules import one another without a cycle, and the evaluation core
knows nothing of the service: `fair_forge_core` imports neither `handler` nor AWS.

Read from the source with `ast`, so that imports made inside functions (the lazy ones that
keep the cold start short) count as much as those at the top. Imports under
`if TYPE_CHECKING:` do not: they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("handler", "fair_forge_core")
FORBIDDEN_IN_CORE = ("handler", "boto3", "botocore", "aws_lambda_powertools")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under `node`, at any depth, except in `if TYPE_CHECKING:` blocks."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _imports_of(other)
            continue
        yield from _imports_of(child)


def _imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    yield from _imports(node)


def imported_names(name: str, path: Path) -> set[str]:
    """The absolute names `name` imports: modules, and `module.attribute` for `from module import attribute`."""
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in _imports(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:  # relative: counted from the importing module's package
            package = name.split(".") if is_package else name.split(".")[:-1]
            anchor = package[: len(package) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        names.add(base)
        names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The project module `name` refers to: itself, else the longest module it lies in."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = {_owner(imported, modules) for imported in imported_names(name, path)}
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of `graph` (its modules in order, the first repeated at the end), or None."""
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(graph, white)
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = grey
        stack.append(node)
        for target in sorted(graph[node]):
            if colour[target] == grey:
                return [*stack[stack.index(target) :], target]
            if colour[target] == white:
                found = visit(target)
                if found:
                    return found
        stack.pop()
        colour[node] = black
        return None

    for node in sorted(graph):
        if colour[node] == white:
            found = visit(node)
            if found:
                return found
    return None


def test_find_cycle_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_function_level_imports() -> None:
    graph = import_graph()
    assert "handler.job_store" in graph["handler.routes.jobs"]  # `from handler import job_store as store`
    assert "fair_forge_core.sharding" in graph["handler.job_lambdas"]  # imported inside a function only


def test_relative_and_type_checking_imports(tmp_path: Path) -> None:
    source = tmp_path / "module.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "from ..other import thing\n"
        "if TYPE_CHECKING:\n"
        "    import never.at.runtime\n"
        "else:\n"
        "    import at_runtime\n"
        "def later():\n"
        "    from .lazy import x\n"
    )
    names = imported_names("pkg.sub.module", source)
    assert {"pkg.sub.sibling", "pkg.other.thing", "pkg.sub.lazy.x", "at_runtime"} <= names
    assert not any(name.startswith("never") for name in names)


def test_the_project_imports_without_a_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


@pytest.mark.parametrize("forbidden", FORBIDDEN_IN_CORE)
def test_core_imports_nothing_of_the_service_or_aws(forbidden: str) -> None:
    modules = project_modules()
    offenders = {
        name: sorted(i for i in imported_names(name, path) if i == forbidden or i.startswith(forbidden + "."))
        for name, path in modules.items()
        if name.startswith("fair_forge_core")
    }
    offenders = {name: found for name, found in offenders.items() if found}
    assert not offenders, f"fair_forge_core imports {forbidden}: {offenders}"
