"""Fair-Forge Agentic's evaluation library: no HTTP, no AWS.

The original library's entry points, imported on first use (so `import fair_forge_core`
stays cheap for the CLI and the Lambda's cold start)::

    from fair_forge_core import Agentic, BayesianMode, FrequentistMode, evaluate, evaluate_sync, pass_at_k, pass_pow_k

(see `fair_forge_core.compat` for what `Agentic.run` accepts).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
"""The package's version: the one place it is written (pyproject.toml reads it from here)."""

_EXPORTS = {
    "Agentic": "fair_forge_core.compat",
    "BayesianMode": "fair_forge_core.compat",
    "FrequentistMode": "fair_forge_core.compat",
    "evaluate": "fair_forge_core.evaluate",
    "evaluate_sync": "fair_forge_core.evaluate",
    "pass_at_k": "fair_forge_core.stats",
    "pass_pow_k": "fair_forge_core.stats",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
