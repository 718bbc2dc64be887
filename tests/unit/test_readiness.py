"""The readiness headline (`aggregated_metrics.readiness`) and the per-task figures it may rest on.

Golden values come from the rules written out here (the unscored share against the default
0.10, the sample-size limit of 30), math.comb for the τ-bench estimators and Wilson's formula
written out from its definition, never from our own output.
"""

from __future__ import annotations

import math
import statistics
from fractions import Fraction

import pytest

from fair_forge_core import tiers
from fair_forge_core.metrics import aggregate, per_task_exact, per_task_metrics, task_outcomes
from fair_forge_core.schemas import ConversationMetrics, EvaluationConfig
from fair_forge_testing.builders import scored_conversation


def conversation(index: int, correct: bool | None, task: str | None = None) -> ConversationMetrics:
    """A one-turn conversation: fully correct, wrong, or unscored (None)."""
    return scored_conversation(f"s{index}", correct, task)


def attempts(outcomes: dict[str, list[bool]]) -> list[ConversationMetrics]:
    rows, index = [], 0
    for task, results in outcomes.items():
        for result in results:
            rows.append(conversation(index, result, task))
            index += 1
    return rows


def wilson(mean: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval written out from its definition."""
    z = statistics.NormalDist().inv_cdf(0.5 + level / 2)
    centre = (mean + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * math.sqrt(mean * (1 - mean) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return max(0.0, centre - half) if mean > 0 else 0.0, min(1.0, centre + half) if mean < 1 else 1.0


# --------------------------------------------------------------------------- status


@pytest.mark.parametrize(
    ("scored", "total", "sample", "status"),
    [
        (27, 30, 27, "preliminary"),  # 3 of 30 unscored is 0.10, not above it; 27 < 30
        (30, 33, 30, "sufficient"),  # 3 of 33 unscored
        (26, 30, 26, "insufficient_evidence"),  # 4 of 30 is above 0.10
        (40, 40, 40, "sufficient"),
        (29, 29, 29, "preliminary"),
        (0, 12, 0, "insufficient_evidence"),
    ],
)
def test_status_follows_the_unscored_share_then_the_sample(scored: int, total: int, sample: int, status: str) -> None:
    readiness = tiers.readiness(
        tier="reliable" if scored else None,
        basis="conversations",
        scored=scored,
        total=total,
        sample=sample,
        max_unscored_share=0.1,
        k=3,
    )
    assert readiness.status == status


def test_the_observed_case_reads_not_enough_evidence() -> None:
    # 24 of 36 scored, all right; the judge abstained on the other 12: the seeds' tier is
    # "reliable" over what was scored, and the headline says that is not enough evidence.
    rows = [conversation(i, True) for i in range(24)] + [conversation(24 + i, None) for i in range(12)]
    aggregated = aggregate(rows, EvaluationConfig())
    assert aggregated.interpretation == "reliable"
    readiness = aggregated.readiness
    assert readiness is not None
    assert (readiness.tier, readiness.basis, readiness.scored, readiness.total, readiness.status) == (
        "reliable",
        "conversations",
        24,
        36,
        "insufficient_evidence",
    )
    assert readiness.summary == (
        "reliable on 24 of 36 conversations; 12 unscored — not enough evidence (more than 10% unscored)"
    )


def test_the_share_is_a_setting() -> None:
    rows = [conversation(i, True) for i in range(30)] + [conversation(30 + i, None) for i in range(10)]
    assert aggregate(rows, EvaluationConfig()).readiness.status == "insufficient_evidence"  # type: ignore[union-attr]
    lenient = EvaluationConfig(max_unscored_share=0.25)
    assert aggregate(rows, lenient).readiness.status == "sufficient"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- per task


def test_per_task_leads_when_tasks_have_k_attempts() -> None:
    # The observed case: 3 tasks × 3 attempts, each 2 of 3 right. Pooled plug-in pass^3 is
    # (6/9)^3 = 0.296; per task, C(2, 3)/C(3, 3) = 0 on every task: no task succeeds 3 times in 3.
    rows = attempts({"a": [True, True, False], "b": [True, False, True], "c": [False, True, True]})
    aggregated = aggregate(rows, EvaluationConfig(k=3))
    assert aggregated.pass_pow_k == pytest.approx((6 / 9) ** 3)
    assert aggregated.per_task is not None and aggregated.per_task.pass_pow_k == 0.0
    readiness = aggregated.readiness
    assert readiness is not None and readiness.basis == "per_task"
    # per task: pass@3 = 1 − C(1, 3)/C(3, 3) = 1 and pass^3 = 0 → inconsistent
    assert readiness.tier == tiers.interpret(1.0, 0.0) == "inconsistent"
    assert "per task over 3 task(s) with 3 or more attempts" in readiness.summary
    assert readiness.status == "preliminary"


def test_without_k_attempts_the_conversations_decide() -> None:
    rows = attempts({"a": [True, True], "b": [True]})
    aggregated = aggregate(rows, EvaluationConfig(k=3))
    assert aggregated.per_task is not None and aggregated.per_task.pass_pow_k is None
    assert aggregated.readiness is not None and aggregated.readiness.basis == "conversations"
    assert aggregated.readiness.tier == aggregated.interpretation


def test_per_task_figures_are_the_exact_mean_of_the_unbiased_estimators() -> None:
    outcomes = {"a": [True] * 4, "b": [True, True, False, False], "c": [True, False, False], "d": [False] * 3}
    rows = attempts(outcomes)
    k = 2
    per_task = per_task_metrics(rows, k)
    at_k = [1 - Fraction(math.comb(len(o) - sum(o), k), math.comb(len(o), k)) for o in outcomes.values()]
    pow_k = [Fraction(math.comb(sum(o), k), math.comb(len(o), k)) for o in outcomes.values()]
    assert per_task.pass_at_k == float(sum(at_k) / 4) and per_task.pass_pow_k == float(sum(pow_k) / 4)
    assert per_task.tasks == per_task.tasks_with_k_attempts == 4
    low, high = wilson(float(sum(pow_k) / 4), 4)
    assert (per_task.pass_pow_k_ci_low, per_task.pass_pow_k_ci_high) == (pytest.approx(low), pytest.approx(high))
    low, high = wilson(float(sum(at_k) / 4), 4, 0.95)
    assert per_task.pass_at_k_ci_low == pytest.approx(low) and per_task.interval_method == "task_wilson"


def test_the_interval_never_collapses_when_every_task_scored_alike() -> None:
    # A bootstrap of 5 identical tasks would say [1, 1]; five tasks cannot show that.
    per_task = per_task_metrics(attempts({str(t): [True] * 3 for t in range(5)}), 3)
    low, _ = wilson(1.0, 5)
    assert per_task.pass_pow_k_ci_high == 1.0 and per_task.pass_pow_k_ci_low == pytest.approx(low)
    assert low < 0.6


def test_a_per_task_tier_on_a_boundary_falls_where_the_rule_says() -> None:
    # k = 2: 18 tasks at 3/3 (pass^2 = 1), 9 at 2/3 (pass^2 = C(2,2)/C(3,2) = 1/3), 3 at 0/3: the
    # mean pass^2 is (18 + 3)/30 = 0.7 exactly, not above it: functional, not reliable.
    outcomes = {f"a{i}": [True] * 3 for i in range(18)}
    outcomes |= {f"b{i}": [True, True, False] for i in range(9)}
    outcomes |= {f"c{i}": [True, False, False] for i in range(3)}
    exact = per_task_exact(task_outcomes(attempts(outcomes), 2), 2)
    assert exact is not None and exact[1] == Fraction(7, 10)
    assert tiers.interpret(*exact) == "functional"
    assert aggregate(attempts(outcomes), EvaluationConfig(k=2)).readiness.tier == "functional"  # type: ignore[union-attr]
