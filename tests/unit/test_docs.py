"""The documentation holds together: every relative link in the docs pages (`docs/**/*.md`) and
README.md points at a file that exists and, for an ``#anchor`` into a Markdown page, at one of its
headings (GitHub's slug rules, which the site's `pymdownx.slugs` shares); every docs page has one
H1 and is in the site's nav (mkdocs.yml); no docs page links out of `docs/` (the site could not
follow it); every citation of a section in the code (`README "X"`, `docs/how-to/ci.md "X"`) names
a heading of that page; and the code cites the docs pages, never the contract file that is not in
the repository. The site's strict build is tests/unit/test_docs_site.py."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DOCS_PAGES = sorted(DOCS.rglob("*.md"))
CHECKED_PAGES = [*DOCS_PAGES, ROOT / "README.md"]
"""The pages whose links are checked."""

CODE_DIRS = ("fair_forge_core", "handler", "tests", "benchmarks", "fair_forge_testing", "examples", "scripts")
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


def nav_pages(mkdocs_yml: str) -> list[str]:
    """The pages (paths under `docs/`) the nav of `mkdocs_yml` lists, in order. The file's Python
    tags (the slugify function) are read as nothing: only the nav matters here."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)

    def walk(entry: object) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [page for item in entry for page in walk(item)]
        if isinstance(entry, dict):
            return [page for value in entry.values() for page in walk(value)]
        return []

    return walk(yaml.load(mkdocs_yml, Loader=Loader)["nav"])  # a SafeLoader: nothing is constructed


def test_every_docs_page_has_one_h1_and_is_in_the_nav() -> None:
    pages = {str(page.relative_to(DOCS)) for page in DOCS_PAGES}
    assert pages >= {
        "index.md",
        "tutorial.md",
        "semantics.md",
        "request.md",
        "response.md",
        "correctness.md",
        "tool-rubric.md",
        "statistics.md",
        "readiness.md",
        "judge.md",
        "limits.md",
        "jobs.md",
        "compare.md",
        "architecture.md",
    }
    assert {str(page.relative_to(DOCS)): h1_count(page.read_text(encoding="utf-8")) for page in DOCS_PAGES} == {
        page: 1 for page in pages
    }
    nav = nav_pages((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert sorted(nav) == sorted(pages)  # each page once, and no nav entry without its page


def test_the_contract_page_links_every_semantics_page() -> None:
    semantics = {"request.md", "response.md", "correctness.md", "tool-rubric.md", "statistics.md"}
    semantics |= {"readiness.md", "judge.md", "limits.md", "jobs.md", "compare.md"}
    linked = {target.partition("#")[0] for target in link_targets((DOCS / "semantics.md").read_text(encoding="utf-8"))}
    assert semantics <= linked


@pytest.mark.parametrize("page", DOCS_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_docs_pages_link_nothing_outside_docs(page: Path) -> None:
    """The site holds `docs/` only: a link to `../examples/x.json` works on GitHub and breaks on
    the site, so a repository file is named in `code` instead."""
    outside = [
        target
        for target in link_targets(page.read_text(encoding="utf-8"))
        if target
        and not _SCHEME.match(target)
        and not target.startswith(("//", "#"))
        and not (page.parent / target.partition("#")[0]).resolve().is_relative_to(DOCS.resolve())
    ]
    assert outside == []


# --------------------------------------------------------------------------- citations of sections

_CITATION = re.compile(r'(README|docs/[\w./-]+\.md)\s+(?:#\s*)?"([^"]{1,160})"')
"""A citation of a section by name: `README "Flaky tasks"`, `docs/how-to/ci.md "Gate your CI"`; the
heading's text may wrap onto the next line (of a docstring, or of a ``#`` comment)."""


def dangling_citations(text: str, where: str, root: Path = ROOT) -> list[str]:
    """The citations in `text` naming a page that does not exist or a heading that page does not
    have (compared by GitHub slug, so `code` spans and case do not matter)."""
    problems = []
    for match in _CITATION.finditer(text):
        page = root / ("README.md" if match.group(1) == "README" else match.group(1))
        heading = " ".join(re.sub(r"\n\s*#?\s*", " ", match.group(2)).split())
        line = text.count("\n", 0, match.start()) + 1
        if not page.is_file():
            problems.append(f"{where}:{line}: {match.group(1)}: no such page")
        elif github_slug(heading) not in anchors(page.read_text(encoding="utf-8")):
            problems.append(f'{where}:{line}: {match.group(1)} has no heading "{heading}"')
    return problems


def test_dangling_citations_finds_missing_pages_and_headings(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# Title\n## Flaky tasks\n", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ci.md").write_text("# CI\n## Gate your `CI`\n", encoding="utf-8")
    text = (
        'Docs: README "Flaky tasks", docs/ci.md "Gate your\n    # CI" and docs/ci.md "Gate your CI".\n'
        'Gone: README "Tool policies", docs/gone.md "X", docs/ci.md "Flaky tasks".\n'
    )
    assert dangling_citations(text, "x.py", tmp_path) == [
        'x.py:3: README has no heading "Tool policies"',
        "x.py:3: docs/gone.md: no such page",
        'x.py:3: docs/ci.md has no heading "Flaky tasks"',
    ]


def test_every_citation_of_a_section_names_a_heading_that_exists() -> None:
    files = [
        path
        for directory in CODE_DIRS
        for path in sorted((ROOT / directory).rglob("*"))
        if path.suffix in {".py", ".sh", ".md"} and "__pycache__" not in path.parts and path != Path(__file__)
    ]  # this file's own examples of citations aside
    files += [*CHECKED_PAGES, ROOT / "SECURITY.md"]
    problems = [
        problem
        for path in files
        for problem in dangling_citations(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert problems == []


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
