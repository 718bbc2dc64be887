"""Installed size and install time of the package, slim and with extras (issue #26 §1).

    python -m benchmarks.install_size [--runs 1]

Not part of `make bench`: it downloads from PyPI (every other benchmark talks to 127.0.0.1
only). It builds the wheel of this checkout, then for each variant creates a fresh virtual
environment and times `pip install --no-cache-dir` of the wheel from PyPI (pip's own cache
and this machine's pip configuration are ignored, `--isolated`, so that every file is
downloaded as a new user's would be), and measures the environment's site-packages (the
sum of the files' sizes, as `du -sb` counts them) and the share numpy and scipy take.

Variants: the slim package (`fair-forge-agentic`), `[openai,groq]` (what the package
installed before the providers became extras: the same requirements), and `[all]`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

from benchmarks.common import ROOT

VARIANTS = ("", "[openai,groq]", "[all]")


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _build_wheel(work: Path) -> Path:
    source = work / "source"
    shutil.copytree(ROOT / "fair_forge_core", source / "fair_forge_core", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--isolated", "--quiet"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(work / "dist"), str(source)], check=True)
    (wheel,) = (work / "dist").glob("fair_forge_agentic-*.whl")
    return wheel


def _install(wheel: Path, extras: str, where: Path) -> tuple[float, int, int, int]:
    """(seconds, site-packages bytes, numpy + scipy bytes, distributions) of one fresh install."""
    venv.create(where, with_pip=True)
    python = where / "bin" / "python"
    site = next((where / "lib").glob("python3.*")) / "site-packages"
    before = {p.name for p in site.iterdir()}
    started = time.perf_counter()
    subprocess.run(
        [str(python), "-m", "pip", "install", "--isolated", "--no-cache-dir", "--quiet", f"{wheel}{extras}"],
        check=True,
    )
    seconds = time.perf_counter() - started
    # pip and setuptools came with the venv: not part of what the package installed.
    added = [p for p in site.iterdir() if p.name not in before]
    total = sum(_size(p) if p.is_dir() else p.stat().st_size for p in added)
    heavy = sum(_size(site / name) for name in ("numpy", "numpy.libs", "scipy", "scipy.libs") if (site / name).exists())
    distributions = sum(1 for p in added if p.name.endswith(".dist-info"))
    return seconds, total, heavy, distributions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        wheel = _build_wheel(work)
        print(f"{wheel.name}: {wheel.stat().st_size / 1e3:.0f} kB", flush=True)
        for extras in VARIANTS:
            runs = [_install(wheel, extras, work / f"venv{i}{extras}") for i in range(args.runs)]
            seconds = statistics.median(r[0] for r in runs)
            _, total, heavy, distributions = runs[-1]
            print(
                f"fair-forge-agentic{extras}: {total / 1e6:.0f} MB in {distributions} distributions "
                f"(numpy + scipy {heavy / 1e6:.0f} MB), installed in {seconds:.1f} s "
                f"(median of {args.runs}; {', '.join(f'{r[0]:.1f}' for r in runs)})",
                flush=True,
            )


if __name__ == "__main__":
    main()
