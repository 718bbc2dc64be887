"""Checks: the parts of a conversation's verdict, one unit each (docs/checks.md).

`base` defines the unit (`Check`, `register_check`, the verdict rule); the built-in checks register
when this package is imported, in this order: `answer_correctness` (`answer`), `tool_correctness`
(`tools`), `tool_policy` (`policy`), `end_state` (`end_state`), `goal` (`goal`), `criteria`
(`criteria`: the one built-in check with settings in `config.checks`), `agent_run` (`agent_run`: an
agent runner's failed attempt). A plug-in check
is one module that defines a class and decorates it with `register_check`; the operator loads it by
listing the module in `FAIR_FORGE_EXTRA_CHECKS` (comma-separated module names, imported with this
package, after the built-in checks). A request can turn a loaded check on (`config.checks`), never
name code to import.
"""

import importlib
import os

from fair_forge_core.checks.base import (
    Check,
    active_checks,
    conversation_verdict,
    ordered,
    register_check,
    registered_checks,
    result,
    run_checks,
    turn_verdict,
)
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_core.schemas import config as _config

BUILT_IN = ("answer", "tools", "policy", "end_state", "goal", "criteria", "agent_run")
"""The built-in checks' modules, in the order they register (the order of their results)."""

EXTRA_CHECKS_VARIABLE = "FAIR_FORGE_EXTRA_CHECKS"


class ExtraCheckError(ImportError):
    """A module `FAIR_FORGE_EXTRA_CHECKS` lists does not import; the message names it and why."""


def load_extra_checks(modules: str) -> None:
    """Import each module of a comma-separated list (blank entries skipped), so that its checks
    register; `ExtraCheckError` naming the variable and the module when one does not import."""
    for name in (item.strip() for item in modules.split(",")):
        if not name:
            continue
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise ExtraCheckError(
                f"{EXTRA_CHECKS_VARIABLE}: the module {name!r} does not import ({type(exc).__name__})"
            ) from None


for _module in BUILT_IN:
    importlib.import_module(f"{__name__}.{_module}")
BUILT_IN_NAMES = frozenset(check.name for check in registered_checks())
"""The names of the built-in checks (whose settings provenance records as fields of their own)."""


def validate_check_settings(config: EvaluationConfig) -> None:
    """`config.checks` against the loaded checks that take settings there (the plug-in checks, and
    a built-in one that says it `takes_settings`): `ValueError` naming `checks.<name>` for a name
    none has, or settings its `for_config` refuses."""
    known = {
        check.name: check
        for check in registered_checks()
        if check.name not in BUILT_IN_NAMES or getattr(check, "takes_settings", False)
    }
    for name in config.checks or {}:
        if name not in known:
            raise ValueError(
                f"checks.{name}: no loaded plug-in check is named {name!r} (loaded: "
                f"{', '.join(sorted(known)) or 'none'}; the operator loads them with FAIR_FORGE_EXTRA_CHECKS)"
            )
        try:
            known[name].for_config(config)
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"checks.{name}: {exc}") from None


_config.check_settings_validator = validate_check_settings
load_extra_checks(os.environ.get(EXTRA_CHECKS_VARIABLE, ""))

__all__ = [
    "BUILT_IN_NAMES",
    "EXTRA_CHECKS_VARIABLE",
    "Check",
    "ExtraCheckError",
    "active_checks",
    "conversation_verdict",
    "load_extra_checks",
    "ordered",
    "register_check",
    "registered_checks",
    "result",
    "run_checks",
    "turn_verdict",
]
