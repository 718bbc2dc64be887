"""Modules that were split to be read as small named steps stay that way: every function and
method at most `MAX_COMPLEXITY` by radon's cyclomatic complexity (what `radon cc -s` prints),
and every module under `MAX_LINES` lines.

Checked: the paired comparison (`fair_forge_core/compare/`) and the modules of the judge's cost
ledger (`fair_forge_core/judges/usage.py` and the modules it re-exports from).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from radon.complexity import cc_visit
from radon.visitors import Class, Function

ROOT = Path(__file__).resolve().parents[2]
MAX_COMPLEXITY = 15
MAX_LINES = 500
CHECKED = sorted(
    [
        *(ROOT / "fair_forge_core" / "compare").glob("*.py"),
        *(
            ROOT / "fair_forge_core" / "judges" / f"{name}.py"
            for name in ("usage", "ledger", "identity", "budget", "tokens", "prices")
        ),
    ]
)


def functions(source: str) -> list[Function]:
    """Every function and method radon sees in `source`, closures included (radon's blocks
    are the functions, each class and each method; a closure is counted apart, on its function)."""
    found: list[Function] = []
    pending = [block for block in cc_visit(source) if not isinstance(block, Class)]
    while pending:
        block = pending.pop()
        found.append(block)
        pending.extend(block.closures)
    return found


def test_the_checker_sees_methods_closures_and_branches() -> None:
    source = (
        "class A:\n"
        "    def m(self, x):\n"
        "        if x:\n"
        "            return 1\n"
        "        return 2\n"
        "def f(x):\n"
        "    def inner(y):\n"
        "        return y if y else 0\n"
        "    for i in x:\n"
        "        if i and x:\n"
        "            pass\n"
        "    return inner\n"
    )
    # By hand: 1 + one `if` for m; 1 + `for` + `if` + `and` for f; 1 + one conditional expression for inner.
    assert sorted((f.name, f.complexity) for f in functions(source)) == [("f", 4), ("inner", 2), ("m", 2)]


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_function_is_small(path: Path) -> None:
    source = path.read_text()
    assert len(source.splitlines()) < MAX_LINES
    too_complex = {f.fullname: f.complexity for f in functions(source) if f.complexity > MAX_COMPLEXITY}
    assert not too_complex, f"above radon cyclomatic complexity {MAX_COMPLEXITY}: {too_complex}"
