"""Fair-Forge Agentic's evaluation library: no HTTP, no AWS.

The public API, imported on first use (so `import fair_forge_core` stays cheap for the CLI and
the Lambda's cold start)::

    from fair_forge_core import EvaluationConfig, ReferenceJudge, evaluate_sync, render_html

    result = evaluate_sync(datasets, ReferenceJudge(), EvaluationConfig(k=3))
    print(result.aggregated_metrics.readiness.summary)
    html = render_html(result)

- `evaluate` / `evaluate_sync`: judge and score conversations (`Dataset`s), with a `Judge` or
  any LangChain chat model as the judge, or a list of them (an ensemble); `EvaluationConfig`
  holds every option.
- `datasets_from_traces`: agent traces (seven formats) and a references file to datasets.
- `compare`: is the candidate better than the baseline? (`compare(baseline, candidate, k=3)`: the
  package `fair_forge_core.compare`, callable as its `compare` function)
- `render_html`: the self-contained HTML report of a result.
- `ReferenceJudge`: the offline judge; `Judge`, `JudgeSpec`, `RunContext` and `register_judge`:
  the judge protocol and its registry (`fair_forge_core.judges.base`), to add a judge of your own.

The original library's entry points stay importable from `fair_forge_core.compat` (`Agentic`,
`FrequentistMode`, `BayesianMode`), and from here as before.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
"""The package's version: the one place it is written (pyproject.toml reads it from here)."""

_EXPORTS = {
    "evaluate": ("fair_forge_core.evaluate", "evaluate"),
    "evaluate_sync": ("fair_forge_core.evaluate", "evaluate_sync"),
    "EvaluationConfig": ("fair_forge_core.schemas", "EvaluationConfig"),
    "Dataset": ("fair_forge_core.schemas", "Dataset"),
    "EvaluationResult": ("fair_forge_core.schemas", "EvaluationResult"),
    "datasets_from_traces": ("fair_forge_core.importers", "datasets_from_traces"),
    "render_html": ("fair_forge_core.report", "render_html"),
    "ReferenceJudge": ("fair_forge_core.judges.reference", "ReferenceJudge"),
    "Judge": ("fair_forge_core.judges.base", "Judge"),
    "JudgeSpec": ("fair_forge_core.judges.base", "JudgeSpec"),
    "RunContext": ("fair_forge_core.judges.base", "RunContext"),
    "register_judge": ("fair_forge_core.judges.kinds", "register_judge"),
    "pass_at_k": ("fair_forge_core.stats", "pass_at_k"),
    "pass_pow_k": ("fair_forge_core.stats", "pass_pow_k"),
    # The original library's facade (fair_forge_core.compat), kept where it was.
    "Agentic": ("fair_forge_core.compat", "Agentic"),
    "BayesianMode": ("fair_forge_core.compat", "BayesianMode"),
    "FrequentistMode": ("fair_forge_core.compat", "FrequentistMode"),
}

__all__ = sorted([*_EXPORTS, "compare"])


def __getattr__(name: str) -> Any:
    if name == "compare":  # the subpackage, callable as its compare(): see fair_forge_core.compare
        return importlib.import_module("fair_forge_core.compare")
    if name in _EXPORTS:
        module, attribute = _EXPORTS[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
