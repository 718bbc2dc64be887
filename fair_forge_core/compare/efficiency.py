"""Efficiency in a comparison (`Comparison.efficiency`): what each side spent, paired per task
like the pass metrics (the package docstring). Pure: no I/O.

Rule, for each measure of `fair_forge_core.efficiency.MEASURES`:

- The tasks are the shared ones (each side has a scored attempt at it: `task_key`), and a side's
  value at a task is the mean of the measure over its *scored* attempts there that have it (not
  null); a task is compared when both sides have a value. Unscored conversations are left out,
  as the pass metrics leave them out.
- `baseline` / `candidate`: the mean of the side's per-task values over the compared tasks;
  `difference`: the mean of the per-task differences candidate − baseline (lower is cheaper).
- The interval and p-value are the pass metrics' (`compare.paired`): the task-level paired
  bootstrap (`tests.bootstrap_replicates`, with the comparison's resamples and seed: the same
  draws of tasks), its percentile interval (`tests.percentile_interval`); the exact sign-flip
  test over the per-task differences under `MIN_BOOTSTRAP_TASKS` compared tasks, the bootstrap
  p-value (`tests.bootstrap_p_value`) from there on. No Holm adjustment: these p-values are
  descriptive, and **no efficiency measure enters the verdict**, which stays on the pass metrics.
- Present only when every conversation of both sides carries `efficiency` (`config.efficiency`);
  otherwise None, and `Comparison.efficiency` is left out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fair_forge_core.compare.outcomes import task_key
from fair_forge_core.compare.tests import (
    MIN_BOOTSTRAP_TASKS,
    bootstrap_p_value,
    bootstrap_replicates,
    paired_standard_error,
    percentile_interval,
    sign_flip_p_value,
)
from fair_forge_core.efficiency import MEASURES
from fair_forge_core.schemas import (
    ConversationEfficiency,
    ConversationMetrics,
    EfficiencyComparison,
    EfficiencyMeasure,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


def _by_task(conversations: Sequence[ConversationMetrics]) -> dict[str, list[ConversationEfficiency]]:
    """The efficiency of each scored conversation, by task."""
    tasks: dict[str, list[ConversationEfficiency]] = defaultdict(list)
    for m in conversations:
        if m.is_scored and m.efficiency is not None:
            tasks[task_key(m.task_id, m.session_id)].append(m.efficiency)
    return tasks


def _task_mean(attempts: Sequence[ConversationEfficiency], measure: str) -> float | None:
    values = [value for e in attempts if (value := getattr(e, measure)) is not None]
    return math.fsum(values) / len(values) if values else None


def compare_efficiency(
    baseline: Sequence[ConversationMetrics],
    candidate: Sequence[ConversationMetrics],
    *,
    confidence: float,
    resamples: int,
    seed: int,
) -> list[EfficiencyComparison] | None:
    """Each efficiency measure compared (the module docstring is the rule); None unless every
    conversation of both sides carries `efficiency`."""
    import numpy as np

    if not baseline or not candidate or any(m.efficiency is None for m in (*baseline, *candidate)):
        return None
    base, cand = _by_task(baseline), _by_task(candidate)
    shared = sorted(base.keys() & cand.keys())
    values = [[(_task_mean(base[t], measure), _task_mean(cand[t], measure)) for t in shared] for measure in MEASURES]
    eligible = np.array([[b is not None and c is not None for b, c in row] for row in values], dtype=np.float64)
    base_values = np.array([[b or 0.0 for b, _ in row] for row in values], dtype=np.float64).reshape(eligible.shape)
    cand_values = np.array([[c or 0.0 for _, c in row] for row in values], dtype=np.float64).reshape(eligible.shape)
    replicates = (
        bootstrap_replicates(cand_values - base_values, eligible, resamples, seed)
        if shared
        else np.full((resamples, len(MEASURES)), np.nan)
    )
    results = []
    for m, measure in enumerate(MEASURES):
        mask = eligible[m] > 0
        results.append(_measure(measure, base_values[m][mask], cand_values[m][mask], replicates[:, m], confidence))
    return results


def _measure(
    measure: EfficiencyMeasure,
    base_values: NDArray[np.float64],
    cand_values: NDArray[np.float64],
    replicates: NDArray[np.float64],
    confidence: float,
) -> EfficiencyComparison:
    """One measure from its per-task values on its compared tasks and its bootstrap replicates."""
    import numpy as np

    tasks = len(base_values)
    if tasks == 0:
        return EfficiencyComparison(
            measure=measure,
            tasks=0,
            baseline=None,
            candidate=None,
            difference=None,
            ci_low=None,
            ci_high=None,
            p_value=None,
            p_value_method=None,
            standard_error=None,
            note="no shared task where both sides report it",
        )
    differences = (cand_values - base_values).tolist()
    difference = math.fsum(differences) / tasks
    valid = replicates[~np.isnan(replicates)]
    ci_low = ci_high = bootstrap_p = None
    if len(valid):
        ci_low, ci_high = percentile_interval(valid, 1.0 - confidence)
        bootstrap_p = bootstrap_p_value(valid, difference)
    exact = tasks < MIN_BOOTSTRAP_TASKS
    return EfficiencyComparison(
        measure=measure,
        tasks=tasks,
        baseline=math.fsum(base_values.tolist()) / tasks,
        candidate=math.fsum(cand_values.tolist()) / tasks,
        difference=difference,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=sign_flip_p_value(differences) if exact else bootstrap_p,
        p_value_method="sign_flip_exact" if exact else ("bootstrap" if bootstrap_p is not None else None),
        standard_error=paired_standard_error(differences),
    )
