"""Text from the data stays text: the one escaping of Markdown (and the HTML GitHub lets
through it) and the one neutralising of terminal and CI-runner log lines.

Task ids, assistant ids, reasons, warnings and judge text come from agent traces and request
files, which a pull request can change. They reach a step summary and a pull-request comment
(GitHub-flavoured Markdown, rendered by GitHub's cmark-gfm with raw HTML let through its
sanitiser) and the job's log, whose every line of stdout and stderr the runner scans for
workflow commands. Every cell and line built from data goes through `markdown_text` or
`log_line`, so a value can neither format, link, mention nor command anything.

Standard library only: the GitHub Action's script (`action/fair_forge_action.py`) imports this
module from its own checkout before the package is installed.
"""

from __future__ import annotations

import re

ZWSP = "\u200b"
"""The zero-width space put inside what would otherwise be a mention or a workflow command:
invisible, not whitespace to GitHub's runner (so a trimmed line still does not start with
`::`), and not part of a GitHub login."""

_MENTION = re.compile(r"(?<![A-Za-z0-9])@(?=[A-Za-z0-9])|@(?=[A-Za-z0-9_-]+\.[A-Za-z0-9])")
# Markdown's inline punctuation (escapes, code spans, emphasis, link and image brackets,
# table cell breaks, strikethrough, math) and HTML's three: escaped wherever they stand. `(`,
# `)` and `!` need no escape once no `[` can open a link or an image.
# An `_` between two letters or digits is kept: it cannot open or close emphasis there
# (CommonMark's flanking rules), and `task_1` reads better as written.
_MARKDOWN_PUNCTUATION = re.compile(r"[\\`*\[\]|~$<>&]|(?<![^\W_])_|_(?![^\W_])")
_HTML = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
# A block marker at the start of a line: a list item (`-`, `+`, `1.`, `1)`), a heading (`#`)
# or a setext underline (`=`); `>` and `*` are escaped everywhere already.
_LEADING_BLOCK = re.compile(r"^(?:[-+=#]|\d{1,9}(?=[.)]))")
_SCHEME = re.compile(r":(?=//)")
_WWW = re.compile(r"(?i)(?<=www)\.")
# Line breaks (CR, LF and what else a reader may split lines on) and other control
# characters; a tab is kept.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED_CONTROLS = {"\n": "\\n", "\r": "\\r"}


def without_mentions(text: str) -> str:
    """`text` with `ZWSP` after every `@` that GitHub could turn into a mention or an e-mail
    link: an `@` before a letter or digit that does not follow one (`@name`, `(@name`, `_@name`;
    GitHub finds mentions in the rendered text, so entity forms such as `&#64;name` must be
    escaped too, which `markdown_text` does), and an `@` before a domain (`a@host.example`,
    which cmark-gfm links as `mailto:`). `pass@k`, `pass@3` stay as written. Idempotent."""
    return _MENTION.sub("@" + ZWSP, text)


def markdown_text(text: str, limit: int | None = None) -> str:
    """`text` as one line of GitHub-flavoured Markdown that renders as exactly that text, and
    as nothing else, in a table cell, a list item, a heading or a paragraph.

    In order: every run of whitespace (line breaks included) is folded to one space and the
    ends are stripped; the line is cut at `limit` characters with `…` (before escaping, so an
    escape is never cut); then

    - `<`, `>`, `&` become `&lt;`, `&gt;`, `&amp;`: no tag, comment or entity survives
      (`&#64;` stays the literal text `&#64;`);
    - the backslash and `` ` * [ ] | ~ $ `` are backslash-escaped (a backslash is kept as
      one backslash), and `_` unless it stands between two letters or digits: no code span, emphasis, link, image (no `[` opens one, so `(`, `)` and
      `!` stay as written), table cell break, strikethrough or math;
    - a leading `-`, `+`, `=`, `#`, or digits before `.` / `)`, is escaped: no list or
      heading;
    - autolinks are broken: the `:` of `scheme://` and the `.` after `www` are
      backslash-escaped (cmark-gfm then links neither), and `without_mentions` puts a
      zero-width space after an `@` that could mention someone or form an e-mail link.

    The rendered text equals the folded (and cut) input, save the zero-width spaces."""
    line = " ".join(text.split())
    if limit is not None and len(line) > limit:
        line = line[: limit - 1] + "…"
    line = _MARKDOWN_PUNCTUATION.sub(lambda m: _HTML.get(m.group(), "\\" + m.group()), line)
    line = _LEADING_BLOCK.sub(lambda m: "\\" + m.group() if not m.group().isdigit() else m.group() + "\\", line)
    line = _WWW.sub("\\.", _SCHEME.sub("\\:", line))
    return without_mentions(line)


def log_line(text: str) -> str:
    """`text` as one line of a terminal or a CI runner's log that runs no workflow command.

    Line breaks become visible escapes (`\\n`, `\\r`; other control characters and U+2028,
    U+2029 `\\xNN` / `\\uNNNN`), so a value cannot start a line of its own; a line that, with
    its leading whitespace trimmed, starts with `::` (GitHub's `::command::`) gets `ZWSP`
    between the two colons; `##[` anywhere (the runner's older `##[command]` form, found
    anywhere in a line) gets `ZWSP` between the two `#`. A tab is kept. Used for every line the
    CLI and the Action write with data in it; a command the tool means to issue is written
    without it."""
    line = _CONTROL.sub(_escape_control, text).replace("##[", "#" + ZWSP + "#[")
    body = line.lstrip()
    if body.startswith("::"):
        line = line[: len(line) - len(body)] + ":" + ZWSP + body[1:]
    return line


def log_lines(text: str) -> str:
    """Each line of a multi-line `text` through `log_line` (the lines split at `\\n` are the
    writer's own), joined with `\\n`; for reports printed whole (`fair-forge compare`'s table)."""
    return "\n".join(log_line(line) for line in text.split("\n"))


def json_text(text: str) -> str:
    """JSON text (as `json.dumps` writes it, indented) that runs no workflow command when it is
    printed, its value unchanged: `##[`, which JSON holds only inside strings, is written
    `#\\u0023[`. An indented JSON line never starts with `::` (it starts with a quote, a bracket,
    a digit or a literal), and a string never spans lines."""
    return text.replace("##[", "#\\u0023[")


def _escape_control(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED_CONTROLS:
        return _NAMED_CONTROLS[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
