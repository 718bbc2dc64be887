"""`pip install .` gives a working `fair-forge` command: the wheel is built from this checkout and
installed into a directory of its own, then run from outside the repository, so that it imports the
installed package (its modules, templates and entry point), never the checkout's files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The target directory the wheel was installed into (dependencies come from this venv)."""
    work = tmp_path_factory.mktemp("install")
    # A copy of what the build reads, so that the build's own files (build/, *.egg-info) stay out of the checkout.
    source = work / "source"
    shutil.copytree(ROOT / "fair_forge_core", source / "fair_forge_core", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    # No build isolation and no index: nothing is downloaded (only 127.0.0.1 traffic in tests).
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(work / "dist"), str(source)], check=True
    )
    (wheel,) = (work / "dist").glob("fair_forge_agentic-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(work / "site"), str(wheel)], check=True)
    return work / "site"


def run_installed(site: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [str(site / "bin" / "fair-forge"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=site.parent,  # not the checkout: `import fair_forge_core` must find the installed copy
        env=env,
        timeout=120,
    )


def test_the_wheel_holds_the_core_and_not_the_lambda_handler(installed: Path) -> None:
    assert (installed / "fair_forge_core" / "cli" / "__init__.py").is_file()
    assert (installed / "fair_forge_core" / "py.typed").is_file()
    assert not (installed / "handler").exists()


def test_fair_forge_help(installed: Path) -> None:
    done = run_installed(installed, "--help")
    assert done.returncode == 0, done.stderr
    assert "usage: fair-forge" in done.stdout and "evaluate" in done.stdout and "report" in done.stdout


def test_fair_forge_evaluates_a_request_from_stdin_and_renders_its_report(installed: Path) -> None:
    request = (ROOT / "examples" / "calculator.json").read_text()
    done = run_installed(installed, "evaluate", "-", "--quiet", stdin=request)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["aggregated_metrics"]["total_conversations"] == len(json.loads(request)["datasets"])
    # The module that ran is the installed one.
    located = subprocess.run(
        [sys.executable, "-c", "import fair_forge_core, sys; sys.stdout.write(fair_forge_core.__file__)"],
        capture_output=True,
        text=True,
        cwd=installed.parent,
        env={**os.environ, "PYTHONPATH": str(installed)},
        check=True,
    )
    assert Path(located.stdout).is_relative_to(installed)
    report = run_installed(installed, "report", "-", stdin=done.stdout)
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith("<!DOCTYPE html>") and "conversation_001" in report.stdout


def test_a_bad_request_on_stdin_is_named_as_stdin(installed: Path) -> None:
    done = run_installed(installed, "evaluate", "-", stdin="{not json")
    assert done.returncode == 2
    assert done.stderr.startswith("error: <stdin> is not valid JSON: ")


def test_fair_forge_version(installed: Path) -> None:
    from fair_forge_core import __version__

    done = run_installed(installed, "--version")
    assert (done.returncode, done.stdout) == (0, f"fair-forge {__version__}\n"), done.stderr
