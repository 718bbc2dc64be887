"""The docs site builds strictly: `mkdocs build --strict` (what `make docs` runs) on mkdocs.yml,
in a subprocess, into a temporary directory. Strict turns every warning into a failure: a link
to a page or an anchor that does not exist (`validation` in mkdocs.yml: anchors included), a
page missing from the nav, a reference page (mkdocstrings) naming an object that does not
exist. The build's own log is the failure message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # the theme's banner on stderr: noise, not a warning
        check=False,
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    process = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert process.returncode == 0, process.stderr
    assert "WARNING" not in process.stderr, process.stderr
    site = tmp_path / "site"
    # the pages were written, the reference from the docstrings included
    assert (site / "tutorial" / "index.html").is_file()
    reference = (site / "reference" / "evaluate" / "index.html").read_text(encoding="utf-8")
    assert "evaluate_sync" in reference


def test_a_broken_anchor_fails_the_build(tmp_path: Path) -> None:
    """The strict build can fail: a copy of the site's configuration on two pages, one linking
    an anchor the other does not have."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the gates](other.md#gate-your-ci).\n", encoding="utf-8")
    (docs / "other.md").write_text("# Other\n\n## Flaky tasks\n", encoding="utf-8")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config[: config.index("\nplugins:")] + "\nnav:\n  - index.md\n  - other.md\n"
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    process = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert process.returncode != 0
    assert "other.md#gate-your-ci" in process.stderr

    (docs / "other.md").write_text("# Other\n\n## Gate your CI\n", encoding="utf-8")
    assert build(tmp_path / "mkdocs.yml", tmp_path / "site").returncode == 0
