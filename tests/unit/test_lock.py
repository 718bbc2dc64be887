"""requirements.lock (what the Lambda image installs) pins every requirement of requirements.txt,
within its range, with hashes: a change to requirements.txt without `make lock` fails here."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def pinned() -> dict[str, tuple[str, list[str]]]:
    """name → (version, hashes) of every entry of the lock."""
    text = (ROOT / "requirements.lock").read_text().replace("\\\n", " ")
    entries = {}
    for line in text.splitlines():
        match = re.match(r"([A-Za-z0-9._-]+)==([^\s;]+)(.*)", line)  # name==version [; marker] --hash=…
        if match:
            hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", match.group(3))
            entries[canonicalize_name(match.group(1))] = (match.group(2), hashes)
    return entries


def requirements() -> list[Requirement]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return [Requirement(line.split("#", 1)[0].strip()) for line in lines if line.split("#", 1)[0].strip()]


def test_every_requirement_is_pinned_within_its_range() -> None:
    lock = pinned()
    for requirement in requirements():
        name = canonicalize_name(requirement.name)
        assert name in lock, f"{requirement.name} is not in requirements.lock: run `make lock`"
        version, _ = lock[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"requirements.lock pins {name}=={version}, outside {requirement.specifier}: run `make lock`"
        )


def test_every_pin_carries_hashes() -> None:
    lock = pinned()
    assert len(lock) > len(requirements())  # the transitive dependencies are pinned too
    assert all(hashes for _, hashes in lock.values())
