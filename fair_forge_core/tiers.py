"""Readiness tiers from pass@k and pass^k (DESIGN.md §7). Pure functions."""

from __future__ import annotations

from typing import Literal

Tier = Literal["reliable", "inconsistent", "functional", "needs_improvement"]

MIN_RELIABLE_SAMPLE = 30

_EXPLANATIONS: dict[str, str] = {
    "reliable": "succeeds almost always within {k} attempts and is consistent: ready for production",
    "inconsistent": "can succeed within {k} attempts but rarely {k} times in a row: unreliable in production",
    "functional": "works, but neither reliably nor consistently enough for production yet",
    "needs_improvement": "fails too often even allowing {k} attempts: not ready",
}


def interpret(pass_at_k: float, pass_pow_k: float) -> Tier:
    """The tier of a (pass@k, pass^k) pair, rules tried in this order.

    - ``reliable``: pass@k > 0.95 and pass^k > 0.70
    - ``inconsistent``: pass@k > 0.95 and pass^k < 0.50
    - ``needs_improvement``: pass@k < 0.70
    - ``functional``: everything else (including pass@k > 0.95 with 0.50 ≤ pass^k ≤ 0.70,
      and the boundaries pass@k = 0.95 or 0.70 exactly)
    """
    if pass_at_k > 0.95 and pass_pow_k > 0.70:
        return "reliable"
    if pass_at_k > 0.95 and pass_pow_k < 0.50:
        return "inconsistent"
    if pass_at_k < 0.70:
        return "needs_improvement"
    return "functional"


def explain(tier: Tier, pass_at_k: float, pass_pow_k: float, k: int) -> str:
    """One line saying what the tier means, with the numbers that put the agent there."""
    reason = _EXPLANATIONS[tier].format(k=k)
    return f"{tier}: pass@{k} = {pass_at_k:.3f}, pass^{k} = {pass_pow_k:.3f}; the agent {reason}."


def sample_size_warning(n: int, *, bayesian: bool = False) -> str | None:
    """A warning when fewer than 30 conversations were scored, else None.

    In frequentist mode it suggests the Bayesian mode; in Bayesian mode it points at
    the credible intervals already there.
    """
    if n >= MIN_RELIABLE_SAMPLE:
        return None
    advice = (
        "collect more, and read the credible intervals rather than the point estimates."
        if bayesian
        else "collect more, or use statistical_mode 'bayesian' for credible intervals."
    )
    return f"Only {n} scored conversation(s): estimates from fewer than {MIN_RELIABLE_SAMPLE} are unreliable; {advice}"
