"""The documentation holds together: every relative link in `docs/*.md` and README.md points at
a file that exists and, for an ``#anchor`` into a Markdown page, at one of its headings (GitHub's
slug rules); every docs page has one H1 and is linked from `docs/index.md`; and the code cites
the docs pages, never the contract file that is not in the repository."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CHECKED_PAGES = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
"""The pages whose links are checked."""

CODE_DIRS = ("fair_forge_core", "handler", "tests", "benchmarks", "fair_forge_testing")
OLD_CONTRACT = "DESIGN" + ".md"
"""The file the code used to cite; spelt in two pieces so that this file does not mention it."""

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(markdown: str) -> list[str]:
    """The lines of `markdown` outside fenced code blocks (a fence closes with the same character,
    at least as long, as CommonMark says)."""
    lines, fence = [], ""
    for line in markdown.splitlines():
        match = _FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = ""
            continue
        if match:
            fence = match.group(1)
            continue
        lines.append(line)
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text (its `github-slugger`): the rendered text (code
    spans' backticks and links' markup gone) lowercased, every character that is not a letter, a
    digit, ``_``, ``-`` or a space removed, and each space replaced by ``-`` (runs are not
    collapsed: "8 tasks × 3" gives ``8-tasks--3``)."""
    text = _INLINE_CODE.sub(lambda match: match.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors of `markdown`'s ATX headings; a repeated slug gets ``-1``, ``-2``, … as on GitHub."""
    seen: dict[str, int] = {}
    result: set[str] = set()
    for line in prose_lines(markdown):
        match = _HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        if slug in seen:
            seen[slug] += 1
            slug = f"{slug}-{seen[slug]}"
        else:
            seen[slug] = 0
        result.add(slug)
    return result


def h1_count(markdown: str) -> int:
    return sum(1 for line in prose_lines(markdown) if (match := _HEADING.match(line)) and match.group(1) == "#")


def link_targets(markdown: str) -> list[str]:
    """Every link and image target of `markdown` (inline and reference definitions), outside code."""
    targets: list[str] = []
    for line in prose_lines(markdown):
        if match := _REFERENCE_DEFINITION.match(line):
            targets.append(match.group(1))
            continue
        targets.extend(_INLINE_LINK.findall(_INLINE_CODE.sub("", line)))
    return targets


def broken_links(page: Path, anchored: Sequence[Path] = CHECKED_PAGES) -> list[str]:
    """The relative links of `page` that point nowhere: a missing file, or an anchor into one of the
    `anchored` pages (the docs pages and README.md) that no heading of that page has. Anchors into
    other files, such as benchmarks/RESULTS.md, are not checked here."""
    anchored_pages = {path.resolve() for path in anchored}
    problems = []
    for target in link_targets(page.read_text(encoding="utf-8")):
        if not target or _SCHEME.match(target) or target.startswith("//"):
            continue  # an absolute URL: not ours to check offline
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page.resolve()
        if not destination.exists():
            problems.append(f"{page.name}: {target}: no such file")
        elif (
            anchor and destination in anchored_pages and anchor not in anchors(destination.read_text(encoding="utf-8"))
        ):
            problems.append(f"{page.name}: {target}: no heading has the anchor #{anchor}")
    return problems


# --------------------------------------------------------------------------- the checker itself


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        # Anchors as GitHub renders them (github-slugger's rules, worked by hand).
        ("Readiness: the headline", "readiness-the-headline"),
        ("Large evaluations: `POST /jobs`", "large-evaluations-post-jobs"),
        (
            "The offline judge: `fair_forge_core.judges.ReferenceJudge`",
            "the-offline-judge-fair_forge_corejudgesreferencejudge",
        ),
        (
            "Small samples: the exact sign-flip test (8 tasks × 3 attempts)",
            "small-samples-the-exact-sign-flip-test-8-tasks--3-attempts",
        ),
        ("Judge each turn several times: samples and ensembles", "judge-each-turn-several-times-samples-and-ensembles"),
        ("See [the judge](judge.md) — **now**", "see-the-judge--now"),
        ("Über 1.0", "über-10"),
    ],
)
def test_github_slug(heading: str, slug: str) -> None:
    assert github_slug(heading) == slug


def test_anchors_number_repeated_headings_and_skip_code() -> None:
    markdown = "# Title\n## Limits\ntext\n```bash\n# not a heading\n```\n### Limits\n## Limits #\n"
    assert anchors(markdown) == {"title", "limits", "limits-1", "limits-2"}
    assert h1_count(markdown) == 1


def test_link_targets_skip_code_and_read_every_form() -> None:
    markdown = (
        'See [a](a.md#x), ![img](pic.png) and [`code`](b.md "title"); not `[c](c.md)`.\n'
        "```\n[d](d.md)\n```\n"
        "[ref]: e.md\n"
    )
    assert link_targets(markdown) == ["a.md#x", "pic.png", "b.md", "e.md"]


def test_broken_links_finds_missing_files_and_anchors(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n## Some section\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n## Here\n"
        "[ok](other.md#some-section) [ok](#here) [ok](https://example.com/x#y) [ok](other.md)\n"
        "[bad](missing.md) [bad](other.md#nowhere) [bad](#gone)\n",
        encoding="utf-8",
    )
    assert broken_links(page, [page, tmp_path / "other.md"]) == [
        "page.md: missing.md: no such file",
        "page.md: other.md#nowhere: no heading has the anchor #nowhere",
        "page.md: #gone: no heading has the anchor #gone",
    ]


# --------------------------------------------------------------------------- the repository's docs


@pytest.mark.parametrize("page", CHECKED_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_relative_links_point_at_existing_files_and_headings(page: Path) -> None:
    assert broken_links(page) == []


def test_every_docs_page_has_one_h1_and_is_linked_from_the_index() -> None:
    pages = sorted(DOCS.glob("*.md"))
    assert {page.name for page in pages} >= {
        "index.md",
        "request.md",
        "response.md",
        "correctness.md",
        "tool-rubric.md",
        "statistics.md",
        "readiness.md",
        "judge.md",
        "limits.md",
        "jobs.md",
    }
    assert {page.name: h1_count(page.read_text(encoding="utf-8")) for page in pages} == {page.name: 1 for page in pages}
    linked = {target.partition("#")[0] for target in link_targets((DOCS / "index.md").read_text(encoding="utf-8"))}
    assert {page.name for page in pages if page.name != "index.md"} <= linked


def test_code_cites_docs_pages_not_the_missing_contract_file() -> None:
    mentions = [
        f"{path.relative_to(ROOT)}:{number}"
        for directory in CODE_DIRS
        for path in sorted((ROOT / directory).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1)
        if OLD_CONTRACT in line
    ]
    assert mentions == []
