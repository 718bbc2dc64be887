"""One name per pass^k (#33 item 2): on one run where the four pass^3 of the issue differ, every
face's headline is the per-task figure readiness is decided on, under the bare name `pass^3`,
and every other pass^3 / pass@3 carries its qualifier (docs/statistics.md, "Which pass^k is
which").

The run, counted by hand: 12 tasks × 3 attempts, 10 tasks right 3 of 3 and 2 right 2 of 3 (the
offline judge: "It is N." right, "No idea." wrong), k = 3; 34 of 36 attempts fully correct. The
figures, from `fractions` and `math.comb` (module constants below), not from our code:

- pass^3 (per task) = mean over tasks of C(c, 3)/C(3, 3) = 10/12 = 0.833 — the headline;
- pass^3 (pooled plug-in) = (34/36)^3 = 0.842;
- pass^3 (pooled unbiased) = C(34, 3)/C(36, 3) = 0.838;
- pass^3 (per-task plug-in) = (10 + 2·(2/3)^3)/12 = 0.883 — `compare`'s, shown on no face here.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from html.parser import HTMLParser
from math import comb

import pytest

from tests.cli.test_cli import run_cli_in_process
from tests.cli.test_cli_compare import Pattern, attempts, request_file
from tests.report_html import by_id, parse

K = 3
PATTERN: Pattern = [(True, True, True)] * 10 + [(True, True, False), (True, False, True)]
COUNTS = [sum(outcomes) for outcomes in PATTERN]
N, C = 3 * len(PATTERN), sum(COUNTS)
PER_TASK_POW = sum(Fraction(comb(c, K), comb(3, K)) for c in COUNTS) / len(COUNTS)
PER_TASK_AT = sum(1 - Fraction(comb(3 - c, K), comb(3, K)) for c in COUNTS) / len(COUNTS)
POOLED_PLUG_IN = Fraction(C, N) ** K
POOLED_UNBIASED = Fraction(comb(C, K), comb(N, K))
PER_TASK_PLUG_IN = sum(Fraction(c, 3) ** K for c in COUNTS) / len(COUNTS)

QUALIFIERS = {"pooled plug-in", "pooled unbiased", "per-conversation"}
# a figure's name (pass^3, pass@3, pass^K, pass@10, …) and its qualifier when it has one
NAME = re.compile(r"(?<![A-Za-z])(pass[@^](?:\d+|K))(?: \(([^()]*)\))?")


def test_the_four_figures_differ_as_the_issue_says() -> None:
    assert (N, C) == (36, 34)
    shown = [f"{float(x):.3f}" for x in (POOLED_PLUG_IN, POOLED_UNBIASED, PER_TASK_POW, PER_TASK_PLUG_IN)]
    assert shown == ["0.842", "0.838", "0.833", "0.883"]


def qualified_only(text: str) -> int:
    """Check that every pass@3 / pass^3 / pass^K … in `text` is the headline — bare and followed
    by the per-task value (3 or 4 decimals; after `=`, a table bar or a line break), or named as
    its lower bound — or carries a known qualifier; return how many bare ones there were."""
    bare = 0
    for match in NAME.finditer(text):
        name, qualifier = match.groups()
        around = text[max(0, match.start() - 60) : match.end() + 40]
        if qualifier is not None:
            assert qualifier in QUALIFIERS, around
            continue
        assert name in HEADLINE, around
        value = re.match(r"[\s|=]*(\d\.\d+)", text[match.end() :])
        bound = text[: match.start()].endswith("lower bound of ")
        assert bound or (value is not None and value.group(1).startswith(HEADLINE[name])), around
        bare += 1
    return bare


class _Text(HTMLParser):
    """The visible text of a page, one chunk a line (what a reader sees, its pieces apart)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self.skip = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.skip = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self.skip = False

    def handle_data(self, data: str) -> None:
        if not self.skip and data.strip():
            self.chunks.append(" ".join(data.split()))


def page_text(page: str) -> str:
    collector = _Text()
    collector.feed(page)
    return "\n".join(collector.chunks)


HEADLINE = {"pass^3": f"{float(PER_TASK_POW):.3f}", "pass@3": f"{float(PER_TASK_AT):.3f}"}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The run's faces: the CLI's stderr (with a gate met), the Markdown, the step summary, the
    HTML page and the JUnit file, each as `fair-forge evaluate` wrote it."""
    directory = tmp_path_factory.mktemp("names")
    request = request_file(directory / "request.json", attempts("agent", PATTERN), k=K)
    summary = directory / "step-summary.md"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GITHUB_STEP_SUMMARY", str(summary))
        process = run_cli_in_process(
            "evaluate",
            request,
            *("--out", directory / "result.json", "--html", directory / "report.html"),
            *("--markdown", directory / "summary.md", "--junit", directory / "junit.xml"),
            *("--fail-under-pass-pow-k", "0.5", "--fail-if-lower-bound", "pass_pow_k<0.5"),
        )
    assert process.returncode == 0, process.stderr
    return {
        "stderr": process.stderr,
        "result": (directory / "result.json").read_text(),
        "markdown": (directory / "summary.md").read_text(),
        "summary": summary.read_text(),
        "html": (directory / "report.html").read_text(),
        "junit": (directory / "junit.xml").read_text(),
    }


def test_the_result_holds_the_four_figures_under_their_json_fields(run: dict[str, str]) -> None:
    aggregated = json.loads(run["result"])["aggregated_metrics"]
    assert aggregated["readiness"]["basis"] == "per_task"
    assert aggregated["per_task"]["pass_pow_k"] == pytest.approx(float(PER_TASK_POW), abs=1e-15)
    assert aggregated["pass_pow_k"] == pytest.approx(float(POOLED_PLUG_IN), abs=1e-15)
    assert aggregated["pass_pow_k_unbiased"] == pytest.approx(float(POOLED_UNBIASED), abs=1e-12)


def test_the_cli_opens_with_the_per_task_figure_and_qualifies_the_others(run: dict[str, str]) -> None:
    lines = [line for line in run["stderr"].splitlines() if not line.startswith("judging")]
    assert lines[0].startswith("readiness: reliable per task over 12 task(s)")
    assert f"pass^3 = {float(PER_TASK_POW):.3f}" in lines[0] and "pass@3 = 1.000" in lines[0]
    assert f"pass^3 (pooled plug-in) = {float(POOLED_PLUG_IN):.3f}" in run["stderr"]
    assert f"gate met: pass^3 = {float(PER_TASK_POW):.4f} (per task" in run["stderr"]
    assert "gate met: lower bound of pass^3 = " in run["stderr"]
    assert qualified_only(run["stderr"]) == 4  # the first line's two, the two gates'


@pytest.mark.parametrize("face", ["markdown", "summary"])
def test_the_markdown_and_the_step_summary_head_with_the_per_task_figure(run: dict[str, str], face: str) -> None:
    text = run[face]
    bullets = [line for line in text.splitlines() if line.startswith("- ")]
    assert bullets[0].startswith("- readiness: ") and f"pass^3 = {float(PER_TASK_POW):.3f}" in bullets[0]
    key_figures = text.split("### Key figures")[1].split("###")[0]
    rows = [line.strip("| ").split(" | ") for line in key_figures.splitlines() if line.startswith("| pass")]
    assert [row[:2] for row in rows] == [
        ["pass@3", f"{float(PER_TASK_AT):.3f}"],
        ["pass^3", f"{float(PER_TASK_POW):.3f}"],
        ["pass@3 (pooled plug-in)", f"{float(1 - (1 - Fraction(C, N)) ** K):.3f}"],
        ["pass^3 (pooled plug-in)", f"{float(POOLED_PLUG_IN):.3f}"],
    ]
    assert qualified_only(text) == 4  # the headline bullet's two, the key figures' first two rows


def test_the_html_big_tiles_are_the_per_task_figures_and_every_other_is_qualified(run: dict[str, str]) -> None:
    page = run["html"]
    elements = parse(page)

    def tile(ident: str) -> list[str]:
        start = page.index(f'<div class="kpi" id="{ident}"')
        return page_text(page[start : page.index('<div class="kpi"', start + 1)]).splitlines()

    assert tile("kpi-pass-at-k")[:2] == ["pass@3", f"{float(PER_TASK_AT):.3f}"]
    assert tile("kpi-pass-pow-k")[:2] == ["pass^3", f"{float(PER_TASK_POW):.3f}"]
    assert tile("kpi-pooled")[:4] == [
        "pass@3 (pooled plug-in) / pass^3 (pooled plug-in)",
        f"{float(1 - (1 - Fraction(C, N)) ** K):.3f}",
        "/",
        f"{float(POOLED_PLUG_IN):.3f}",
    ]
    assert tile("kpi-unbiased")[:4] == [
        "pass@3 (pooled unbiased) / pass^3 (pooled unbiased)",
        f"{float(1 - Fraction(comb(N - C, K), comb(N, K))):.3f}",
        "/",
        f"{float(POOLED_UNBIASED):.3f}",
    ]
    assert by_id(elements, "kpis") is not None
    text = page_text(page)
    assert qualified_only(text) == 2  # the two big tiles; the curve, the tables, the footer: qualified
    assert len(NAME.findall(text)) > 40


def test_the_junit_properties_are_named_by_their_json_paths(run: dict[str, str]) -> None:
    properties = dict(re.findall(r'<property name="([^"]+)" value="([^"]*)"', run["junit"]))
    assert float(properties["per_task.pass_pow_k"]) == pytest.approx(float(PER_TASK_POW), abs=1e-15)
    assert float(properties["pass_pow_k"]) == pytest.approx(float(POOLED_PLUG_IN), abs=1e-15)
