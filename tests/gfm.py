"""GitHub-flavoured Markdown as github.com renders it, for the tests that check that text from
the data stays text (the summaries, the pull-request comment): cmark-gfm, GitHub's own fork of
cmark, with its extensions (tables, autolinks, strikethrough, tag filter) and raw HTML kept, as
GitHub keeps it for its sanitiser (which lets `<details>`, `<img>` and `<a>` through); the
rendered page's tags, link targets, cells and text; GitHub's mention pattern."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

ZWSP = "\u200b"
EVIL = "evil.example"
MENTION = re.compile(r"(?:^|[^\w`])@[A-Za-z0-9]")
"""GitHub's mention filter, on the rendered text: `@login` not after a word character."""


def render(markdown: str) -> str:
    """The HTML of `markdown` as github.com renders it before sanitising."""
    return str(cmarkgfm.github_flavored_markdown_to_html(markdown, Options.CMARK_OPT_UNSAFE))


class Page(HTMLParser):
    """The tags, the link and image targets, the table cells and the text of rendered HTML."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.hrefs: list[str] = []
        self.cells: list[str] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.hrefs += [value or "" for name, value in attrs if name in ("href", "src")]
        if tag in ("td", "th"):
            self.cells.append("")

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.cells:
            self.cells[-1] += data

    def plain(self) -> str:
        """The text, without the zero-width spaces that break mentions."""
        return "".join(self.text).replace(ZWSP, "")
