"""`pip install fair-forge-agentic` (issue #26 §1): the wheel and the sdist are built from this
checkout (`python -m build --no-isolation`: the wheel from the sdist, so the sdist is complete; no
download), checked by `twine check`, read for their metadata (requirements, extras, entry points,
files), and the wheel is installed into a directory of its own and run from outside the repository,
so that it imports the installed package (its modules, templates and entry point), never the
checkout's files. The slim install is proven by running the CLI with every installed module that
the declared slim requirements do not bring refused at import (a meta path finder)."""

from __future__ import annotations

import configparser
import email.parser
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

PROVIDER_AND_AWS = {
    "langchain-openai",
    "langchain-groq",
    "langchain-anthropic",
    "langchain-google-genai",
    "langchain-ollama",
    "openai",
    "groq",
    "anthropic",
    "boto3",
    "botocore",
    "aws-lambda-powertools",
}
"""Distributions the slim package must not require (the providers' and the service's AWS side)."""


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory holding the built sdist and wheel."""
    work = tmp_path_factory.mktemp("build")
    # A copy of what the build reads, so that the build's own files (build/, *.egg-info) stay out of the checkout.
    source = work / "source"
    shutil.copytree(ROOT / "fair_forge_core", source / "fair_forge_core", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    # No build isolation: nothing is downloaded (only 127.0.0.1 traffic in tests).
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(work / "dist"), str(source)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return work / "dist"


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (built,) = dist.glob("fair_forge_agentic-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path) -> Path:
    """The target directory the wheel was installed into (dependencies come from this venv)."""
    site = wheel.parent.parent / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)], check=True)
    return site


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


def test_twine_check_passes_the_wheel_and_the_sdist(dist: Path) -> None:
    built = sorted(path.name for path in dist.iterdir())
    assert built == [f"fair_forge_agentic-{version()}-py3-none-any.whl", f"fair_forge_agentic-{version()}.tar.gz"]
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *(str(path) for path in sorted(dist.iterdir()))],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


def version() -> str:
    from fair_forge_core import __version__

    return __version__


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode())


def required(meta: email.message.Message, extra: str = "") -> list[Requirement]:
    """The wheel's requirements without extras (`extra` ""), or those an extra adds."""
    requirements = []
    for line in meta.get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        marker = requirement.marker
        applies = marker is None or marker.evaluate({**default_environment(), "extra": extra})
        base = marker is None or marker.evaluate({**default_environment(), "extra": ""})
        if applies and (extra == "" or not base):
            requirements.append(requirement)
    return requirements


def names(requirements: list[Requirement]) -> set[str]:
    return {canonicalize_name(r.name) for r in requirements}


def core_third_party_imports() -> dict[str, set[str]]:
    """Top-level module → the core's modules that import it, for every import of the core outside
    `if TYPE_CHECKING:` (lazy ones included) of a module neither standard nor the core's own."""
    from tests.unit.test_import_graph import imported_names, project_modules

    found: dict[str, set[str]] = {}
    for module, path in project_modules().items():
        if module.startswith("fair_forge_core"):
            for name in imported_names(module, path):
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top != "fair_forge_core":
                    found.setdefault(top, set()).add(module)
    return found


EXTRA_ONLY_IMPORTS = {
    # judges/reply_limit.py: only for the OpenAI and Groq SDKs' reply-limited client.
    "certifi": {"openai", "groq"},
    # the pytest plugin: loaded by pytest, which is there when it runs.
    "pytest": set(),
    # otel_sdk.py: `evaluate --otel-export`, imported only when asked for.
    "opentelemetry": {"otel"},
}
THROUGH_ANOTHER_REQUIREMENT = {
    # pydantic requires the one pydantic-core release it was built with (==): a range of ours could only conflict.
    "pydantic_core": "pydantic",
}


def test_the_slim_package_requires_what_the_core_imports_and_nothing_provider_specific(wheel: Path) -> None:
    from fair_forge_core import __version__

    meta = wheel_metadata(wheel)
    assert (meta["Name"], meta["Version"], meta["Requires-Python"]) == ("fair-forge-agentic", __version__, ">=3.11")
    slim = names(required(meta))
    assert not slim & PROVIDER_AND_AWS, slim & PROVIDER_AND_AWS
    owners = metadata.packages_distributions()
    for top, importers in sorted(core_third_party_imports().items()):
        distributions = {canonicalize_name(d) for d in owners.get(top, [])}
        assert distributions, f"{top} (imported by {sorted(importers)}) is not installed here"
        if top in EXTRA_ONLY_IMPORTS:
            for extra in EXTRA_ONLY_IMPORTS[top]:
                assert distributions & names(required(meta, extra)), (top, extra)
            continue
        if top in THROUGH_ANOTHER_REQUIREMENT:
            parent = THROUGH_ANOTHER_REQUIREMENT[top]
            assert canonicalize_name(parent) in slim and distributions & names(
                [Requirement(line) for line in metadata.requires(parent) or []]
            ), (top, parent)
            continue
        assert distributions & slim, f"{top} (imported by {sorted(importers)}) is not a requirement of the package"


def test_each_allowed_provider_is_an_extra_and_all_holds_them_all(wheel: Path) -> None:
    from fair_forge_core.connectors.allowlist import BUILTIN_CONNECTORS

    meta = wheel_metadata(wheel)
    extras = {"openai", "groq", "anthropic", "google", "ollama", "otel"}
    assert set(meta.get_all("Provides-Extra") or []) == extras | {"all"}
    (everything,) = required(meta, "all")  # fair-forge-agentic[openai,groq,…]: itself with every extra
    assert canonicalize_name(everything.name) == "fair-forge-agentic" and everything.extras == extras
    under_all = set().union(*(names(required(meta, extra)) for extra in everything.extras))
    providers = {
        canonicalize_name(path.partition(".")[0].replace("_", "-"))
        for path in BUILTIN_CONNECTORS
        if not path.startswith("fair_forge_core.")
    }
    assert providers == {
        "langchain-openai",
        "langchain-groq",
        "langchain-anthropic",
        "langchain-google-genai",
        "langchain-ollama",
    }
    assert providers <= under_all
    for extra in extras - {"otel"}:  # each provider extra is one provider's package (and what it needs)
        assert len(names(required(meta, extra)) & providers) == 1, extra
    assert names(required(meta, "otel")) == {"opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"}


def test_the_entry_points_are_the_command_and_the_pytest_plugin(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = archive.read(name).decode()
    entry_points = configparser.ConfigParser(delimiters=("=",))
    entry_points.optionxform = str  # type: ignore[assignment, method-assign]
    entry_points.read_string(text)
    assert dict(entry_points["console_scripts"]) == {"fair-forge": "fair_forge_core.cli:console_main"}
    # Named by its module: `-p fair_forge_core.pytest_plugin` is then the same plugin, not a second one.
    assert dict(entry_points["pytest11"]) == {"fair_forge_core.pytest_plugin": "fair_forge_core.pytest_plugin"}


def test_the_wheel_and_the_sdist_hold_every_file_of_the_core_and_nothing_else(dist: Path, wheel: Path) -> None:
    core = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "fair_forge_core").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    assert any(name.endswith(".j2") for name in core) and "fair_forge_core/py.typed" in core
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = {n for n in archive.namelist() if ".dist-info/" not in n}
    assert in_wheel == core
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        in_sdist = {name.partition("/")[2] for name in archive.getnames()}
    assert core <= in_sdist and {"pyproject.toml", "README.md"} <= in_sdist
    assert not {name for name in in_sdist if name.split("/")[0] in ("handler", "tests", "fair_forge_testing")}


def slim_closure(requirements: list[Requirement]) -> set[str]:
    """The distributions the requirements bring, transitively (markers evaluated here, each
    requirement's extras honoured), as installed in this environment."""
    found: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = list(requirements)
    while todo:
        requirement = todo.pop()
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        found.add(key[0])
        try:
            distribution = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue  # not installed here: nothing of it to allow
        for line in distribution.requires or []:
            sub = Requirement(line)
            extras = ("", *requirement.extras)
            if sub.marker is None or any(
                sub.marker.evaluate({**default_environment(), "extra": extra}) for extra in extras
            ):
                todo.append(sub)
    return found


REFUSING = """
import importlib.abc, json, sys
at_start = set(sys.modules)  # the interpreter's own, and what site's .pth files loaded
refused = frozenset(json.loads(sys.argv[1]))

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in refused:
            raise ModuleNotFoundError(f"No module named {name!r} (not brought by the slim requirements)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
"""
RUN_CLI = """
from fair_forge_core.cli import main
code = main(sys.argv[3:])
with open(sys.argv[2], "w") as out:
    json.dump(sorted({name.partition(".")[0] for name in set(sys.modules) - at_start}), out)
sys.exit(code)
"""


@pytest.fixture(scope="module")
def refused(wheel: Path) -> list[str]:
    """The top-level modules installed here that the slim requirements do not bring."""
    allowed = slim_closure(required(wheel_metadata(wheel))) | {"fair-forge-agentic"}
    owners = metadata.packages_distributions()
    return sorted(top for top, dists in owners.items() if not {canonicalize_name(d) for d in dists} & allowed)


def run_slim(site: Path, refused: list[str], *args: str | Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the installed CLI's `main` with every module in `refused` refused; its outcome, and the
    top-level modules it loaded (those of the interpreter's start left out)."""
    loaded = site.parent / "loaded.json"
    done = subprocess.run(
        [sys.executable, "-c", REFUSING + RUN_CLI, json.dumps(refused), str(loaded), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=site.parent,
        env={**os.environ, "PYTHONPATH": str(site)},
        timeout=300,
    )
    return done, set(json.loads(loaded.read_text())) if loaded.exists() else set()


def test_the_refusal_is_real(installed: Path, refused: list[str]) -> None:
    # What this environment has and the slim package must do without.
    assert {"langchain_openai", "langchain_groq", "openai", "groq", "boto3", "botocore", "pytest"} <= set(refused)
    assert not {"scipy", "numpy", "pydantic", "langchain_core", "jinja2"} & set(refused)
    done = subprocess.run(
        [sys.executable, "-c", REFUSING + "import langchain_openai", json.dumps(refused)],
        capture_output=True,
        text=True,
        cwd=installed.parent,
    )
    assert done.returncode == 1 and "No module named 'langchain_openai' (not brought by" in done.stderr


def test_the_cli_evaluates_compares_and_reports_with_only_the_slim_requirements(
    installed: Path, refused: list[str], tmp_path: Path
) -> None:
    done, loaded = run_slim(installed, refused, "--version")
    assert done.returncode == 0 and done.stdout.startswith("fair-forge "), done.stderr
    # Bayesian intervals (scipy), tools with argument rules, two assistants over four tasks.
    result, html = tmp_path / "result.json", tmp_path / "report.html"
    done, loaded = run_slim(
        installed,
        refused,
        "evaluate",
        ROOT / "examples" / "support_agents.json",
        "--quiet",
        "--out",
        result,
        "--html",
        html,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(result.read_text())["aggregated_metrics"]["total_conversations"] == 16
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert {"scipy", "jinja2", "langchain_core"} <= loaded and not loaded & set(refused)
    done, loaded = run_slim(
        installed,
        refused,
        "compare",
        result,
        result,
        "--baseline-assistant",
        "support_agent_v1",
        "--candidate-assistant",
        "support_agent_v2",
    )
    assert "verdict: " in done.stdout and "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1, 4, 5)  # a verdict, whichever it is: not bad input (2), not a failed run (3)
    assert "numpy" in loaded and not loaded & set(refused)


def test_a_provider_without_its_extra_is_bad_input_naming_it(installed: Path, refused: list[str]) -> None:
    done, _ = run_slim(installed, refused, "evaluate", ROOT / "examples" / "openai.json", "--quiet")
    assert done.returncode == 2, done.stderr
    assert "langchain_openai.chat_models.ChatOpenAI is allowed but its package is not installed" in done.stderr
    assert "Traceback" not in done.stderr
