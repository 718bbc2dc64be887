"""The flags of `fair-forge pull` (`cli.pull` states the rules, `pull_stores` what each store is
asked): argparse only, so that `cli.parser` and `--help` stay instant."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

PULL_EPILOG = (
    "Credentials from the environment only: Langfuse LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY (LANGFUSE_HOST); "
    "Phoenix PHOENIX_BASE_URL or PHOENIX_COLLECTOR_ENDPOINT (PHOENIX_API_KEY); LangSmith LANGSMITH_API_KEY "
    "(LANGSMITH_ENDPOINT). Exit codes: 0 every page pulled; 2 bad input (a flag, a missing variable); "
    "6 with --references, attempts not joined (as convert's); "
    "7 stopped at --max-pages or --max-bytes with more to fetch (what was fetched is written); "
    "8 the store refused, failed or could not be reached (nothing written)."
)


def add_pull_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser], count: Callable[[str], int]) -> None:
    """`pull STORE` and its flags; `count` is the parser's check of a whole number ≥ 1."""
    from fair_forge_core.cli.pull import DEFAULT_MAX_BYTES, DEFAULT_MAX_PAGES

    pull = commands.add_parser(
        "pull",
        help="fetch traces from Langfuse, Phoenix or LangSmith into a file convert reads",
        description=(
            "Fetch traces from a store over its REST API, page after page, and write them as the traces file "
            "fair-forge convert reads: Langfuse's v2 observations pages, Phoenix's OTLP span pages, LangSmith's runs."
        ),
        epilog=PULL_EPILOG,
    )
    pull.add_argument("store", choices=("langfuse", "phoenix", "langsmith"), help="the store to read")
    pull.add_argument("--since", metavar="ISO", help="only what started at or after this instant (with its offset: Z)")
    pull.add_argument("--until", metavar="ISO", help="only what started before this instant (with its offset: Z)")
    pull.add_argument(
        "--session", action="append", default=[], metavar="ID", help="one conversation session (langfuse, phoenix)"
    )
    pull.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="TAG",
        help="only traces with this tag; repeatable, all must match",
    )
    pull.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="EXPR",
        help="the store's own filter, repeatable, all must hold: langfuse a JSON condition, "
        'phoenix KEY:VALUE of an attribute, langsmith an expression such as eq(run_type, "llm")',
    )
    pull.add_argument("--project", metavar="ID", help="phoenix: the project's name or id; langsmith: the project's id")
    pull.add_argument("--page-size", type=count, default=100, metavar="N", help="items a page (default: 100)")
    pull.add_argument(
        "--max-pages",
        type=count,
        default=DEFAULT_MAX_PAGES,
        metavar="N",
        help=f"fetch at most N pages, then stop with exit 7 if there are more (default: {DEFAULT_MAX_PAGES})",
    )
    pull.add_argument(
        "--max-bytes",
        type=count,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help=f"read at most N bytes of answers, then stop with exit 7 (default: {DEFAULT_MAX_BYTES:,})",
    )
    pull.add_argument("-o", "--out", type=Path, metavar="FILE", help="write the traces here (default: stdout)")
    pull.add_argument(
        "--references",
        type=Path,
        metavar="REFS",
        help="convert what was pulled with these references and write the request instead (convert's rules)",
    )
    pull.add_argument("--task-key", help="with --references: what matches a trace to its task (as convert's)")
    pull.add_argument(
        "--allow-unjoined",
        action="store_true",
        help="with --references: exit 0 when some trace attempts could not be joined (as convert's)",
    )
