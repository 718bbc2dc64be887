"""The tutorial and the README's tour show commands that exist: every `fair-forge …` line of
their shell blocks parses with the CLI's own parser (a renamed or removed flag fails here), and
the tutorial's workflow gives this repository's action (action.yml) only inputs it declares."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from fair_forge_core.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "tutorial.md", ROOT / "README.md"]
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks(markdown: str, language: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(markdown) if lang == language]


def commands(script: str) -> list[list[str]]:
    """The `fair-forge` commands of a shell block: continuation lines joined, comments dropped,
    each cut at its first shell operator (`|`, `<`, `>`, `&&`, `;`)."""
    joined = re.sub(r"\\\n\s*", " ", script)
    found = []
    for line in joined.splitlines():
        if not line.startswith("fair-forge "):
            continue  # another command (curl with its JSON, pip, make): not ours to parse
        words = shlex.split(line, comments=True)
        cut = [n for n, word in enumerate(words) if word in {"|", "<", ">", ">>", "&&", ";"}]
        found.append(words[1 : cut[0]] if cut else words[1:])
    return found


def test_commands_reads_continuations_comments_and_pipes() -> None:
    script = (
        "fair-forge convert a.json --from openai \\\n    --references r.jsonl | fair-forge evaluate -  # c\n"
        "ls\nfair-forge evaluate - < r.json\n"
    )
    assert commands(script) == [
        ["convert", "a.json", "--from", "openai", "--references", "r.jsonl"],
        ["evaluate", "-"],
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_command_shown_parses(page: Path) -> None:
    shown = [words for block in blocks(page.read_text(encoding="utf-8"), "bash") for words in commands(block)]
    assert {words[0] for words in shown} >= {"convert", "evaluate", "compare"}
    parser = build_parser()
    for words in shown:
        if words == ["--version"]:
            continue
        try:
            parser.parse_args(words)
        except SystemExit as exit_:  # argparse's way to refuse
            pytest.fail(f"{page.name}: fair-forge {shlex.join(words)}: refused by the parser ({exit_.code})")


def tutorial_workflow() -> str:
    """The tutorial's workflow: its one YAML block that is a whole workflow (with `jobs:`); the
    others are parts to add to it ("Publish the viewer": steps, then a job)."""

    def is_workflow(block: str) -> bool:
        try:
            return "jobs" in (yaml.safe_load(block) or {})
        except yaml.YAMLError:  # a part, indented as it goes into the workflow
            return False

    (workflow,) = [
        b for b in blocks((ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8"), "yaml") if is_workflow(b)
    ]
    return workflow


def test_the_tutorials_workflow_gives_the_action_only_its_inputs() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    workflow = tutorial_workflow()
    steps = yaml.safe_load(workflow)["jobs"]["evaluate"]["steps"]
    (step,) = [step for step in steps if step.get("uses") == "OWNER/REPO@REF"]
    assert set(step["with"]) <= set(action["inputs"])
    assert {"request", "baseline", "gates"} <= set(step["with"])


def test_the_tutorials_baseline_is_mains_latest_completed_run_whatever_its_conclusion() -> None:
    """dawidd6/action-download-artifact takes the latest *successful* run unless told otherwise: a main that
    fails its gates would leave pull requests without a baseline, or with a stale one (issue #33)."""
    steps = yaml.safe_load(tutorial_workflow())["jobs"]["evaluate"]["steps"]
    (download,) = [step for step in steps if str(step.get("uses", "")).startswith("dawidd6/action-download-artifact@")]
    inputs = download["with"]
    assert inputs["branch"] == "main"
    assert inputs["workflow_conclusion"] == "completed"
    assert inputs["search_artifacts"] is True
    assert "run_id" not in inputs  # (the action refuses workflow_conclusion together with run_id)
    # It downloads the artifact the action uploads, and the action's step reads the result from it.
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert inputs["name"] == action["inputs"]["report-name"]["default"]
    (step,) = [step for step in steps if step.get("uses") == "OWNER/REPO@REF"]
    assert f"{inputs['path']}/result.json" in step["with"]["baseline"]


OUTPUT_OPTIONS = {"-o", "--out", "--html", "--junit", "--markdown"}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_what_the_commands_write_is_ignored_by_git(page: Path) -> None:
    """Run in a checkout, the tour and the tutorial leave their outputs at the root, and `python -m build` its
    dist/: none of it may show up as untracked (issue #33)."""
    shown = [words for block in blocks(page.read_text(encoding="utf-8"), "bash") for words in commands(block)]
    written = {words[n + 1] for words in shown for n, word in enumerate(words[:-1]) if word in OUTPUT_OPTIONS}
    assert {"candidate.result.json", "report.html", "junit.xml", "summary.md"} <= written
    written |= {"dist/fair_forge_agentic-0.1.0-py3-none-any.whl", "dist/fair_forge_agentic-0.1.0.tar.gz"}
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "--verbose", "--non-matching", *sorted(written)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    not_ignored = [line.split("\t")[-1] for line in done.stdout.splitlines() if line.startswith("::")]
    assert not not_ignored, f"{page.name}: git would list {not_ignored} as untracked: add them to .gitignore"
