"""The GitHub Action's rule for its output directory (`fair_forge_action.py evaluate`), checked
before anything is removed or written there.

The workflow's checkout is the pull request's: a PR can commit the output directory, or a
directory above it, as a symbolic link to anywhere on the runner (the step would then delete
and rewrite files there, and the upload step publish that directory), or commit a link inside
it (the upload would publish what it points to). Standard library only, like the script.
"""

from __future__ import annotations

import os
from pathlib import Path


def problem(value: str, workspace: Path) -> str | None:
    """What is wrong with the output directory `value` (relative to the working directory), or
    None: it resolves outside `workspace`; it, or a directory between `workspace` and it, is a
    symbolic link; or it already holds a symbolic link at any depth (walked without following
    links). `..` is folded before anything is looked up; `workspace` may itself be reached
    through a link (its resolved path counts). A part that does not exist yet is not looked at:
    `mkdir` creates it as a directory."""
    real = workspace.resolve()
    target = Path(os.path.abspath(value))
    for base in (Path(os.path.abspath(workspace)), real):
        if target.is_relative_to(base):
            parts = target.relative_to(base).parts
            break
    else:
        return f"{value} is outside the workspace ({workspace})"
    current = real
    for part in parts:
        current = current / part
        if current.is_symlink():
            return f"{current} is a symbolic link: the action writes only into a real directory of the workspace"
        if not current.exists():
            return None
    if not current.resolve().is_relative_to(real):
        return f"{value} resolves outside the workspace ({workspace})"
    if (link := _link_inside(current)) is not None:
        return f"{value} holds a symbolic link, {link}: the upload step would publish what it points to"
    return None


def _link_inside(directory: Path) -> Path | None:
    """The first symbolic link under `directory`, walked without following links, or None."""
    for root, dirs, files in os.walk(directory):
        for name in sorted(dirs + files):
            if os.path.islink(os.path.join(root, name)):
                return Path(root, name)
    return None


def written_input(name: str, value: str, directory: Path, written: tuple[str, ...]) -> str | None:
    """Why the input `name` (a file, `value`) cannot be used, or None: it is one of the `written`
    files of `directory`, which the step removes before a run (a baseline kept as `result.json`
    there would be lost)."""
    if value and Path(value).resolve() in {(directory / file).resolve() for file in written}:
        return (
            f"input {name}: {value} is a file this action writes in its output-directory: "
            "move it, or choose another output-directory"
        )
    return None
