"""`fair_forge_core.cli.startup`: no cyclic garbage collection during `fair-forge`'s start-up.

Each case runs in a fresh interpreter (the collector's state is the process's), with spies on
the points the rule names: the judges being built (`cli.common._plan`, during the start-up) and
the judging (`evaluate.run_sync`, after it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CALCULATOR = ROOT / "examples" / "calculator.json"

SPIES = """
import gc, json, sys
import fair_forge_core.cli.common as common
import fair_forge_core.evaluate as evaluate
seen = {}
def spy(name, real):
    def wrapper(*args, **kwargs):
        seen[name] = [gc.isenabled(), gc.get_freeze_count()]
        return real(*args, **kwargs)
    return wrapper
common._plan = spy("building the judges", common._plan)
evaluate.run_sync = spy("judging", evaluate.run_sync)
"""


def run(entry: str, argv: list[str]) -> dict[str, object]:
    """`entry` (`console_main()` or `main(argv)`) in a fresh interpreter after `SPIES`; what the
    spies saw, the exit code, and the collector's state and freeze count once it returned."""
    code = (
        SPIES
        + f"sys.argv = ['fair-forge', *{argv!r}]\n"
        + f"from fair_forge_core.cli import console_main, main\nexit_code = {entry}\n"
        + "print(json.dumps({'seen': seen, 'exit': exit_code, 'after': [gc.isenabled(), gc.get_freeze_count()]}))\n"
    )
    process = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, process.stderr
    return json.loads(process.stdout.strip().splitlines()[-1])


def test_evaluate_as_a_process_collects_nothing_until_the_judging_then_as_usual(tmp_path: Path) -> None:
    report = run("console_main()", ["evaluate", str(CALCULATOR), "--out", str(tmp_path / "r.json"), "--quiet"])
    assert report["exit"] == 0 and json.loads((tmp_path / "r.json").read_text())["per_conversation_metrics"]
    seen = report["seen"]
    assert isinstance(seen, dict)
    assert seen["building the judges"] == [False, 0]  # paused, nothing frozen yet
    enabled, frozen = seen["judging"]
    assert enabled and frozen > 10_000  # the start-up's objects (the imports) frozen, collection back on
    after_enabled, after_frozen = report["after"]  # type: ignore[misc]
    # Left on; nothing frozen since (frozen objects freed by reference counting leave the count).
    assert after_enabled and after_frozen <= frozen


def test_other_commands_collect_as_usual_from_their_parsed_arguments(tmp_path: Path) -> None:
    result = tmp_path / "r.json"
    assert run("main()", ["evaluate", str(CALCULATOR), "--out", str(result), "--quiet"])["exit"] == 0
    report = run("console_main()", ["report", str(result), "-o", str(tmp_path / "r.html")])
    assert report["exit"] == 0 and (tmp_path / "r.html").read_text().startswith("<!")
    enabled, frozen = report["after"]  # type: ignore[misc]
    assert enabled and frozen > 0  # resumed (and what the CLI's own import allocated, frozen)


def test_main_called_in_a_process_leaves_the_collector_alone(tmp_path: Path) -> None:
    # A test, a user's script or the pytest plugin calling `main`: nothing paused, nothing frozen.
    report = run("main()", ["evaluate", str(CALCULATOR), "--out", str(tmp_path / "r.json"), "--quiet"])
    assert report["exit"] == 0
    assert report["seen"] == {"building the judges": [True, 0], "judging": [True, 0]}
    assert report["after"] == [True, 0]
