"""Readiness tiers (docs/readiness.md): each rule, its boundaries, and the order they are tried in."""

from __future__ import annotations

import pytest

from fair_forge_core.stats import pass_at_k, pass_pow_k
from fair_forge_core.tiers import explain, interpret, sample_size_warning


@pytest.mark.parametrize(
    ("pass_at", "pass_pow", "tier"),
    [
        (0.99, 0.80, "reliable"),
        (0.96, 0.71, "reliable"),
        (0.96, 0.70, "functional"),  # pass^k must exceed 0.70
        (0.96, 0.49, "inconsistent"),
        (0.96, 0.50, "functional"),  # neither > 0.70 nor < 0.50
        (0.96, 0.60, "functional"),
        (0.95, 0.90, "functional"),  # pass@k must exceed 0.95
        (0.80, 0.10, "functional"),
        (0.70, 0.30, "functional"),  # needs_improvement is strictly below 0.70
        (0.69, 0.30, "needs_improvement"),
        (0.10, 0.00, "needs_improvement"),
    ],
)
def test_tier_rules_and_boundaries(pass_at: float, pass_pow: float, tier: str) -> None:
    assert interpret(pass_at, pass_pow) == tier


def test_the_readmes_example_is_inconsistent() -> None:
    # n = 3, c = 2, k = 3: pass@3 = 0.963 and pass^3 = 0.296, labelled "inconsistent" in the source README.
    assert interpret(pass_at_k(3, 2, 3), pass_pow_k(3, 2, 3)) == "inconsistent"


def test_explanation_names_the_tier_and_the_numbers() -> None:
    line = explain("inconsistent", 0.963, 0.2963, 3)
    assert line.startswith("inconsistent:")
    assert "pass@3 (pooled plug-in) = 0.963" in line and "pass^3 (pooled plug-in) = 0.296" in line
    assert "\n" not in line
    bayesian = explain("inconsistent", 0.963, 0.2963, 3, "pooled posterior mean")
    assert "pass^3 (pooled posterior mean) = 0.296" in bayesian


def test_sample_size_warning_below_thirty() -> None:
    assert sample_size_warning(29) is not None and "29" in sample_size_warning(29)
    assert sample_size_warning(30) is None


def test_sample_size_warning_in_bayesian_mode_points_at_the_intervals() -> None:
    warning = sample_size_warning(5, bayesian=True)
    assert "credible intervals" in warning and "use statistical_mode" not in warning
