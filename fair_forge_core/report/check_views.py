"""The check results of a conversation as the report shows them (docs/checks.md): each with the
template that writes it. Plain data for the templates, like `view`."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fair_forge_core.report.values import JsonPath

GENERIC_CHECK_TEMPLATE = "checks/_generic.html.j2"
"""How a check result without a partial of its own is shown: its name, outcome (and cause),
score and reason."""


@functools.cache
def check_partials() -> frozenset[str]:
    """The names of the checks with a partial of their own, `templates/checks/<name>.html.j2`
    (read once from the package; `_`-prefixed templates are not partials)."""
    from importlib.resources import files

    folder = files("fair_forge_core.report").joinpath("templates", "checks")
    suffix = ".html.j2"
    return frozenset(
        entry.name.removesuffix(suffix)
        for entry in folder.iterdir()
        if entry.name.endswith(suffix) and not entry.name.startswith("_")
    )


@dataclass(frozen=True)
class CheckView:
    """One check result as the report shows it: the result's JSON (`ConversationMetrics.checks`),
    its JSON path (for `data-field`), and the template that writes it — its check's partial
    `checks/<name>.html.j2` when there is one (a rich view of the check's detail), else
    `GENERIC_CHECK_TEMPLATE`. The template is chosen here from the names of the partials that
    exist, never built from the result's text, so no name in a result can reach another template."""

    result: Mapping[str, Any]
    path: JsonPath

    @property
    def template(self) -> str:
        name = self.result["name"]
        return f"checks/{name}.html.j2" if name in check_partials() else GENERIC_CHECK_TEMPLATE

    @property
    def state(self) -> str:
        """pass, fail or unscored: the result's outcome as the report's classes spell it."""
        return {"passed": "pass", "failed": "fail"}.get(self.result["outcome"], "unscored")


def check_views(conversation: Mapping[str, Any], base: JsonPath, turn: int | None) -> list[CheckView]:
    """The results of turn `turn` of `conversation` (the conversation's own when None), in the
    order of its `checks`, each at its path under `base` (the conversation's)."""
    return [
        CheckView(check, (*base, "checks", index))
        for index, check in enumerate(conversation.get("checks") or [])
        if check.get("turn") == turn
    ]
