"""`fair_forge_core.safe_text`: text from the data renders as that text in GitHub-flavoured
Markdown (rendered here by cmark-gfm, GitHub's own renderer, with raw HTML let through as
GitHub lets it through to its sanitiser, which keeps `<details>`, `<img>` and `<a>`), and a log
line runs no workflow command (GitHub's runner: `::command::` once the line's leading
whitespace is trimmed, `##[command]` anywhere in a line)."""

from __future__ import annotations

import re

import pytest

from fair_forge_core.safe_text import ZWSP, json_text, log_line, log_lines, markdown_text, without_mentions
from tests.gfm import MENTION, Page, render

HOSTILE = [
    "</td></tr></table><details><summary>all gates met</summary>",
    '<img src="https://evil.example/pixel.png"> <a href="https://evil.example">docs</a>',
    "![logo](https://evil.example/i.png) [log in](https://evil.example/login) [ref]: https://evil.example",
    "see https://evil.example/x, HTTPS://evil.example, ftp://evil.example, www.evil.example, (www.evil.example)",
    "mail a@evil.example or xmpp:a@evil.example/x",
    "<https://evil.example> &lt;b&gt; &#64;octocat &#x40;octocat &commat;octocat",
    "a\\|b a\\\\|b | `code` *em* **strong** _u_ __u__ ~~del~~ $x^2$ <!-- hidden -->",
    "# heading",
    "- item",
    "1. item",
    "2) item",
    "+ item",
    "> quote",
    "=== ",
    "cc @octocat, (@octocat) _@octocat_ .@octocat",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_renders_as_itself_in_a_cell_and_in_a_list_item(text: str) -> None:
    escaped = markdown_text(text)
    for markdown, wrapper in (
        (f"| h |\n| --- |\n| {escaped} |\n", {"table", "thead", "tr", "th", "tbody", "td"}),
        (f"- {escaped}\n", {"ul", "li"}),
        (f"{escaped}\n", {"p"}),
    ):
        page = Page(render(markdown))
        assert set(page.tags) <= wrapper, (markdown, page.tags)
        assert not page.hrefs
        assert page.plain().strip().endswith(" ".join(text.split())), render(markdown)
        assert not MENTION.search("".join(page.text)), page.text
    # One cell: the data's `|` never splits it.
    page = Page(render(f"| h | i |\n| --- | --- |\n| {escaped} | end |\n"))
    assert [cell.replace(ZWSP, "").strip() for cell in page.cells] == ["h", "i", " ".join(text.split()), "end"]


def test_a_backslash_is_kept_and_entities_stay_literal() -> None:
    assert markdown_text("a\\|b") == "a\\\\\\|b"
    assert Page(render(markdown_text("a\\|b"))).plain().strip() == "a\\|b"
    assert markdown_text("&#64;me") == "&amp;#64;me"


def test_line_breaks_fold_and_the_cut_never_splits_an_escape() -> None:
    assert markdown_text("a\nb\r\n\u2028c\t d") == "a b c d"
    assert markdown_text("<<<<<<", limit=4) == "&lt;&lt;&lt;…"


def test_plain_text_stays_as_written() -> None:
    """What the summary writes most: no escape where nothing could form."""
    line = "task_1: pass@3 = 0.512 (95% interval [0.1, 0.9]) — a@b, 3 of 4 passed!"
    assert markdown_text(line) == line.replace("[", "\\[").replace("]", "\\]")


def test_mentions_and_mail_links_get_a_zero_width_space_and_pass_at_k_does_not() -> None:
    assert without_mentions("@a (@b) x@c.org pass@3 pass@k") == f"@{ZWSP}a (@{ZWSP}b) x@{ZWSP}c.org pass@3 pass@k"
    assert without_mentions(without_mentions("@a")) == f"@{ZWSP}a"


@pytest.mark.parametrize(
    "value",
    [
        "t\n::error title=x::pwned",
        "t\r::add-mask::FAILED",
        "t\r\n  ::warning::w",
        "t\u2028::error::x",
        "t\x0b::error::x",
        "::set-output name=a::b",
        "\u2003::error::x",
        "t ##[add-mask]FAILED",
        "t ##[error]x",
    ],
)
def test_a_log_line_runs_no_workflow_command(value: str) -> None:
    for line in (log_line(value), log_line(f"FAILED: {value}"), log_lines(f"ok\n{value}\nok")):
        for part in re.split(r"\r\n|\r|\n", line):
            assert not part.lstrip().startswith("::"), part
            assert "##[" not in part, part
    assert "\n" not in log_line(value) and "\r" not in log_line(value)


def test_a_log_line_shows_breaks_as_escapes_and_keeps_the_rest() -> None:
    assert log_line("a\nb\rc\td\x1b[31m") == "a\\nb\\rc\td\\x1b[31m"
    assert log_line("  ::error::x") == f"  :{ZWSP}:error::x"
    assert log_line("pass@3 = 0.5 (a::b)") == "pass@3 = 0.5 (a::b)"


def test_json_text_keeps_the_value() -> None:
    import json

    text = json.dumps({"task_id": "##[add-mask]FAILED"}, indent=2)
    assert "##[" not in json_text(text)
    assert json.loads(json_text(text)) == {"task_id": "##[add-mask]FAILED"}
