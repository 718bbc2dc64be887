"""The code keeps a readable shape: no function or method in `fair_forge_core` or `handler`
above cyclomatic complexity 25 as radon measures it (`radon cc -s`), no source file there
above 500 lines, and no module importing another's private name.

Complexity is radon's own (`radon.complexity.cc_visit`), so that this test and `radon cc`
on the command line agree: a function nested in another, or a method of a class nested in
another, is measured on its own, as radon lists it. Lines are the file's physical lines
(`wc -l`), comments and docstrings included: they are what a reader scrolls through.

A private name is one with a single leading underscore (`_write`; a dunder such as `__version__`
is not private). A module may use its own, but `from <module> import _name` of a module of these
packages (absolute, or relative) is a cross-module use of what that module keeps to itself: the name
is either part of its interface, and then public, or a detail the importer should not need. Every
`from ... import` counts, at the top of the file or inside a function; `import a.b as _b` does not
(it binds a module under a private alias, and imports nothing private).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from radon.complexity import cc_visit
from radon.visitors import Class, Function

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fair_forge_core", "handler", "action")
MAX_COMPLEXITY = 25
MAX_LINES = 500


def measured_files() -> list[str]:
    """Every `.py` file of the packages, relative to the repository."""
    return [
        path.relative_to(ROOT).as_posix() for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
    ]


def private_imports(source: str, name: str) -> list[str]:
    """`name:line: from module import _private` for each private name `source` imports from a
    module of the packages (a relative import is one of them by construction); empty when none."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = "." * node.level + (node.module or "")
        if node.level == 0 and module.split(".")[0] not in PACKAGES:
            continue
        found.extend(
            f"{name}:{node.lineno}: from {module} import {alias.name}"
            for alias in node.names
            if alias.name.startswith("_") and not alias.name.startswith("__")
        )
    return found


def _blocks(blocks: list[Function | Class]) -> Iterator[Function]:
    """Every function and method radon found, nested ones included, each once (radon lists a
    class's methods both inside the class and beside it, and a function's closures inside it)."""
    seen: set[tuple[str, int]] = set()
    pending = list(blocks)
    while pending:
        block = pending.pop()
        if isinstance(block, Class):
            pending.extend(block.methods)
            pending.extend(block.inner_classes)
            continue
        pending.extend(block.closures)
        if (block.fullname, block.lineno) not in seen:
            seen.add((block.fullname, block.lineno))
            yield block


def test_there_are_files_to_measure() -> None:
    assert len(measured_files()) > 50


@pytest.mark.parametrize("name", measured_files())
def test_no_function_is_too_complex(name: str) -> None:
    too_complex = [
        f"{block.fullname} (line {block.lineno}): {block.complexity}"
        for block in _blocks(cc_visit((ROOT / name).read_text()))
        if block.complexity > MAX_COMPLEXITY
    ]
    assert not too_complex, f"{name}: above cyclomatic complexity {MAX_COMPLEXITY}: {too_complex}"


@pytest.mark.parametrize("name", measured_files())
def test_no_file_is_too_long(name: str) -> None:
    lines = len((ROOT / name).read_text().splitlines())
    assert lines <= MAX_LINES, f"{name}: {lines} lines, above {MAX_LINES}"


def test_the_measure_sees_a_complex_function() -> None:
    """The measure can fail: a function with 26 branch points is caught, nested in a method."""
    branches = "\n".join(f"            if x == {i}:\n                return {i}" for i in range(25))
    source = (
        f"class A:\n    def m(self) -> None:\n        def inner(x: int) -> int:\n{branches}\n            return -1\n"
    )
    found = {block.fullname: block.complexity for block in _blocks(cc_visit(source))}
    assert found["inner"] == 26
    assert found["A.m"] == 1


def test_no_module_imports_a_private_name_of_another() -> None:
    found = [hit for name in measured_files() for hit in private_imports((ROOT / name).read_text(), name)]
    assert not found, f"{len(found)} imports of another module's private name:\n" + "\n".join(found)


def test_the_walk_sees_a_private_import() -> None:
    """The walk can fail: it finds a private name imported absolutely, relatively and inside a
    function, and passes over public and dunder names, private aliases and other packages."""
    source = (
        "from fair_forge_core.cli.common import _write, read_json as _read, __version__\n"
        "from . import _sibling\n"
        "from os.path import _get_sep\n"
        "import handler.app as _app\n"
        "def f() -> None:\n"
        "    from handler.app import _Route\n"
    )
    assert private_imports(source, "m.py") == [
        "m.py:1: from fair_forge_core.cli.common import _write",
        "m.py:2: from . import _sibling",
        "m.py:6: from handler.app import _Route",
    ]
