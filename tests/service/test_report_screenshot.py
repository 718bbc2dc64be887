"""The HTML report renders in a real browser: headless Chromium takes a screenshot, and it is not blank.

Chromium is Debian's `chromium` package, which `.ci/run` installs. Without it the test
is skipped on a developer's machine but fails in CI (`CI=true`), so a broken install
cannot turn the check green by skipping it.

The same code makes the README's screenshot:

    .venv/bin/python -m tests.service.test_report_screenshot docs/report.png
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from collections import Counter
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[2]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PASS_AT_BLUE = (0x25, 0x63, 0xEB)  # fair_forge_core.report.PASS_AT_COLOUR
PASS_POW_ORANGE = (0xEA, 0x58, 0x0C)  # fair_forge_core.report.PASS_POW_COLOUR


def find_chromium() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def run_chromium(chromium: str, page: Path, *flags: str) -> str:
    """Headless Chromium with networking off, on the file `page` with `flags` (what to make of it);
    its stdout. Raises when it fails."""
    with tempfile.TemporaryDirectory() as profile:
        process = subprocess.run(
            [
                chromium,
                "--headless",
                *CHROMIUM_ARGS,  # the browser tests' flags: networking off, no first-run work
                f"--user-data-dir={profile}",
                *flags,
                page.resolve().as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env={**os.environ, "HOME": profile},
        )
    if process.returncode != 0:
        raise RuntimeError(f"chromium failed ({process.returncode}): {process.stderr[-2000:]}")
    return process.stdout


def screenshot(chromium: str, page: Path, png: Path, width: int = 1280, height: int = 1600) -> None:
    """A `width` × `height` screenshot of the file `page`, by headless Chromium with networking off."""
    flags = (
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--screenshot={png}",
        f"--window-size={width},{height}",
    )
    run_chromium(chromium, page, *flags)
    if not png.exists():
        raise RuntimeError(f"chromium wrote no screenshot to {png}")


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, compressed = 8, bytearray()
    width = height = colour_type = 0
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        chunk = data[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and colour_type in (2, 6) and interlace == 0, "unsupported PNG layout"
        elif kind == b"IDAT":
            compressed += chunk
    channels = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(bytes(compressed)), width * channels
    rows, previous, offset = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[offset], bytearray(raw[offset + 1 : offset + 1 + stride])
        offset += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                corner = previous[i - channels] if i >= channels else 0
                estimate = left + up - corner
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + predictor) & 0xFF
        previous = line
        rows.append(bytes(line) if channels == 3 else bytes(b for j, b in enumerate(line) if j % 4 != 3))
    return width, height, rows


def colour_counts(rows: list[bytes]) -> Counter[tuple[int, int, int]]:
    counts: Counter[tuple[int, int, int]] = Counter()
    for row in rows:
        counts.update(zip(row[0::3], row[1::3], row[2::3], strict=True))
    return counts


def near(counts: Counter[tuple[int, int, int]], colour: tuple[int, int, int], tolerance: int = 12) -> int:
    """How many pixels are within `tolerance` of `colour` on every channel."""
    return sum(n for c, n in counts.items() if all(abs(a - b) <= tolerance for a, b in zip(c, colour, strict=True)))


def support_report(directory: Path) -> Path:
    """The report of `examples/support_agents.json`, judged offline, written to `directory`."""
    from fair_forge_core.evaluate import evaluate_sync
    from fair_forge_core.judges import ReferenceJudge
    from fair_forge_core.report import render_html
    from fair_forge_core.schemas import RunRequest

    request = RunRequest.model_validate(json.loads((ROOT / "examples" / "support_agents.json").read_text()))
    result = evaluate_sync(request.datasets, ReferenceJudge(), request.config)
    page = directory / "report.html"
    page.write_text(render_html(result), encoding="utf-8")
    return page


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("chromium is not installed: CI must have it (.ci/run installs Debian's chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


@pytest.mark.slow
def test_the_report_renders_in_chromium_and_is_not_blank(chromium: str, tmp_path: Path) -> None:
    png = tmp_path / "report.png"
    screenshot(chromium, support_report(tmp_path), png)
    width, height, rows = decode_png(png.read_bytes())
    assert (width, height) == (1280, 1600)
    counts = colour_counts(rows)
    _, background_pixels = counts.most_common(1)[0]
    assert len(counts) > 200, f"only {len(counts)} colours: the page looks blank"
    assert 1 - background_pixels / (width * height) > 0.25, "the page is mostly background"
    # the pass@K and pass^K curves were drawn
    assert near(counts, PASS_AT_BLUE) > 500
    assert near(counts, PASS_POW_ORANGE) > 500


@pytest.mark.slow
def test_the_blank_check_does_detect_a_blank_page(chromium: str, tmp_path: Path) -> None:
    page, png = tmp_path / "blank.html", tmp_path / "blank.png"
    page.write_text("<!DOCTYPE html><html><body></body></html>")
    screenshot(chromium, page, png, height=400)
    _, _, rows = decode_png(png.read_bytes())
    counts = colour_counts(rows)
    assert len(counts) <= 2
    assert near(counts, PASS_AT_BLUE) == 0


def dump_dom(chromium: str, page: Path) -> str:
    """The DOM of the file `page` after headless Chromium parsed and laid it out (`--dump-dom`)."""
    dom = run_chromium(chromium, page, "--dump-dom")
    if "</html>" not in dom:
        raise RuntimeError("chromium dumped no document")
    return dom


CORRECTED_POW_PURPLE = (0x93, 0x33, 0xEA)  # fair_forge_core.report.charts.CORRECTED_POW_COLOUR


@pytest.mark.slow
def test_the_corrected_band_is_drawn_in_chromium(chromium: str, tmp_path: Path) -> None:
    """examples/flaky_tasks.json corrected for the starter calibration's counts (TPR 25/29, TNR
    26/26): in the DOM Chromium built, Figure 1 holds the corrected pass^K band (two points for
    each of its 10 K) and its mean line, and the line's purple is on the screen."""
    from fair_forge_core.report import render_html
    from tests.report_html import parse
    from tests.unit.test_report_judge_error import corrected_run

    result = corrected_run((25, 29), (26, 26), "calibration.json")
    page, png = tmp_path / "corrected.html", tmp_path / "corrected.png"
    page.write_text(render_html(result), encoding="utf-8")
    elements = parse(dump_dom(chromium, page))
    bands = [e for e in elements if e.tag == "polygon" and "corrected-band" in e.classes]
    lines = [e for e in elements if e.tag == "polyline" and "corrected-line" in e.classes]
    assert (
        [e.attrs["data-series"] for e in bands]
        == [e.attrs["data-series"] for e in lines]
        == [
            "pass_at_k",
            "pass_pow_k",
        ]
    )
    assert [len(e.attrs["points"].split()) for e in bands] == [20, 20]
    assert [len(e.attrs["points"].split()) for e in lines] == [10, 10]
    screenshot(chromium, page, png, height=1600)
    _, _, rows = decode_png(png.read_bytes())
    assert near(colour_counts(rows), CORRECTED_POW_PURPLE) > 200


FOREST_HIGHER_GREEN = (0x05, 0x96, 0x69)  # fair_forge_core.report.charts.FOREST_HIGHER


@pytest.mark.slow
def test_the_comparison_forest_plot_renders_in_chromium(chromium: str, tmp_path: Path) -> None:
    """The report of `examples/compare_agents.json` cut to its comparison section (page head and
    CSS kept), so the forest plot is in view: its significant rows' green is drawn."""
    from fair_forge_core.evaluate import evaluate_sync
    from fair_forge_core.judges import ReferenceJudge
    from fair_forge_core.report import render_html
    from fair_forge_core.schemas import RunRequest

    request = RunRequest.model_validate(json.loads((ROOT / "examples" / "compare_agents.json").read_text()))
    full = render_html(evaluate_sync(request.datasets, ReferenceJudge(), request.config))
    body = full.index(">", full.index('<main id="report"')) + 1
    start = full.index('<section id="comparison"')
    end = full.index("</section>", start) + len("</section>")
    page, png = tmp_path / "comparison.html", tmp_path / "comparison.png"
    page.write_text(full[:body] + full[start:end] + "</main></body></html>", encoding="utf-8")
    screenshot(chromium, page, png, height=1600)  # below the tasks that changed (12 rows here)
    _, _, rows = decode_png(png.read_bytes())
    assert near(colour_counts(rows), FOREST_HIGHER_GREEN) > 300


if __name__ == "__main__":
    browser = find_chromium()
    if browser is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/report.png")
    with tempfile.TemporaryDirectory() as work:
        screenshot(browser, support_report(Path(work)), target, height=int(os.environ.get("HEIGHT", "2600")))
    print(f"wrote {target}")
