"""The original library's entry points, as alquimia-fair-forge's users call them.

Code written for ``fair_forge.metrics.agentic`` runs here with its imports changed:

    metrics = Agentic.run(
        lambda: PayloadRetriever(payload),   # or a Retriever class, or a list of datasets
        model=judge, k=3, threshold=0.7, tool_weights=None,
        statistical_mode=BayesianMode(ci_level=0.9),
    )

- `Agentic.run(retriever, k, **kwargs)` keeps the original's shape: keyword arguments
  that are options of the metric (`model`, `threshold`, `tool_threshold`,
  `tool_weights`, `use_structured_output`, `statistical_mode`, every
  `EvaluationConfig` field, and the original's `strict` and `verbose`) configure
  the evaluation; every other keyword argument is passed on to the retriever, as
  the original does (``retriever(**kwargs)``). `retriever` may be a class or any
  callable returning an object with `load_dataset()` (such as a lambda), an object
  with `load_dataset()`, or the datasets themselves (models or dicts).
- `tool_weights=None` and `statistical_mode=None` mean the defaults.
- `statistical_mode` may be a `FrequentistMode()` or `BayesianMode(...)` (these
  classes, or the original library's, read by their attributes), or what
  `EvaluationConfig` takes ("bayesian", ``{"mode": "bayesian", "ci_level": 0.9}``).
  `BayesianMode`'s ``beta_prior_a`` / ``beta_prior_b`` are the prior; ``mc_samples``,
  ``rng_seed`` and ``dirichlet_prior`` are accepted and unused, since the intervals
  here are exact rather than sampled.
- Defaults are this service's (docs/request.md), not the original's: ``tool_threshold``
  0.75 (the original: 1.0), ``use_structured_output`` false (the original: true).

It returns the per-conversation metrics, as the original does; `evaluate` gives the
aggregated metrics too. The result's warnings (unscored conversations, the original's
`logprobs` / `weight` ignored, …) are issued as Python `UserWarning`s, since the list
returned has no place for them.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.schemas import ConversationMetrics, Dataset, EvaluationConfig, StatisticalMode

__all__ = ["Agentic", "BayesianMode", "FrequentistMode"]


class FrequentistMode:
    """The original's point-estimate mode: p = c/n plugged into the formulas."""


class BayesianMode:
    """The original's Bayesian mode. ``ci_level`` and the Beta prior ``(beta_prior_a,
    beta_prior_b)`` are used; the Monte Carlo settings are accepted for compatibility only."""

    def __init__(
        self,
        mc_samples: int = 5000,
        ci_level: float = 0.95,
        dirichlet_prior: float = 1.0,
        beta_prior_a: float = 1.0,
        beta_prior_b: float = 1.0,
        rng_seed: int | None = 42,
    ) -> None:
        self.mc_samples = mc_samples
        self.ci_level = ci_level
        self.dirichlet_prior = dirichlet_prior
        self.beta_prior_a = beta_prior_a
        self.beta_prior_b = beta_prior_b
        self.rng_seed = rng_seed


def statistical_mode_of(mode: Any) -> Any:
    """What `EvaluationConfig.statistical_mode` takes, from a mode object of this module or
    of the original library (matched by class name, as that package is not a dependency).
    Anything else is returned as it is, for `EvaluationConfig` to accept or refuse."""
    kind = type(mode).__name__
    if kind == "FrequentistMode":
        return StatisticalMode(mode="frequentist")
    if kind == "BayesianMode":
        return StatisticalMode(
            mode="bayesian",
            ci_level=getattr(mode, "ci_level", 0.95),
            prior=[getattr(mode, "beta_prior_a", 1.0), getattr(mode, "beta_prior_b", 1.0)],
        )
    return mode


def _load_datasets(retriever: Any, retriever_kwargs: dict[str, Any]) -> list[Dataset]:
    """The datasets a retriever, a retriever factory, or a list of datasets stands for."""
    source = retriever
    if isinstance(source, type) or (callable(source) and not hasattr(source, "load_dataset")):
        source = source(**retriever_kwargs)
    elif retriever_kwargs:
        names = ", ".join(sorted(retriever_kwargs))
        raise TypeError(f"Agentic.run got unexpected keyword arguments for a non-callable retriever: {names}")
    if hasattr(source, "load_dataset"):
        source = source.load_dataset()
    items: Iterable[Any] = source
    return [d if isinstance(d, Dataset) else Dataset.model_validate(d) for d in items]


_ORIGINAL_ONLY = frozenset({"strict"})
"""Options of the original's `Agentic` with no counterpart here (accepted, ignored)."""


class Agentic:
    """The original library's entry point (see the module docstring)."""

    @classmethod
    def run(cls, retriever: Any, k: int, *, model: BaseChatModel, **kwargs: Any) -> list[ConversationMetrics]:
        """Evaluate the retriever's conversations with `model` as judge; their per-conversation metrics."""
        config_fields = set(EvaluationConfig.model_fields)
        options = {name: kwargs.pop(name) for name in sorted(set(kwargs) & (config_fields | _ORIGINAL_ONLY))}
        for name in _ORIGINAL_ONLY:
            options.pop(name, None)
        for name in ("tool_weights", "statistical_mode"):
            if name in options and options[name] is None:
                del options[name]
        if "statistical_mode" in options:
            options["statistical_mode"] = statistical_mode_of(options["statistical_mode"])
        config = EvaluationConfig.model_validate({"k": k, **options})
        datasets = _load_datasets(retriever, kwargs)
        result = evaluate_sync(datasets, model, config)
        for message in result.warnings:
            warnings.warn(message, UserWarning, stacklevel=2)
        return result.per_conversation_metrics
