"""Is version B better than A? A paired comparison of two agents, or two runs of one, over
the tasks both attempted (docs/compare.md, issue #15).

Input, per side: one `(task, is_fully_correct)` per conversation, `task` being its
`task_id` (its `session_id` when it has none) and `is_fully_correct` True, False or None
(unscored). `outcomes_from_conversations` and `outcomes_from_result` build it from
`ConversationMetrics` or from a result file's JSON.

Pairing. A task is *shared* when each side has at least one scored attempt at it; only
shared tasks are compared. Tasks scored on one side only are listed
(`baseline_only_tasks`, `candidate_only_tasks`) and unscored conversations counted and
listed per task; neither is ever paired nor scored as a failure.

Metrics, per shared task with n scored attempts of which c succeeded (`per_task_values`,
through `fair_forge_core.stats`): pass@1 = c/n; plug-in pass@k = 1 − (1 − c/n)^k and
pass^k = (c/n)^k; unbiased pass@k = 1 − C(n−c, k)/C(n, k) and pass^k = C(c, k)/C(n, k)
(Chen et al. 2021, τ-bench), only on the tasks with n ≥ k on both sides. Each metric is
averaged over the tasks it is defined on, per side; its difference is the mean of the
per-task differences candidate − baseline. At k = 1 only pass@1 is reported (the other
four are the same number by definition).

The verdict (`compare`, `population`): by default the attempt-level test — is the candidate
worse on THESE tasks? the exact test of per-attempt success stratified by task, conditional
on each task's totals (`stratified`, `attempts`) —, or with `population="tasks"` the
task-level tests, always reported beside it; and the tasks that changed, worst first, each
with its own exact p. A side may also be a result (`EvaluationResult` or its JSON dict).

Task-level tests: a task-level paired bootstrap for every metric averaged over at least 10
tasks, the exact sign-flip permutation test over fewer, McNemar's test when every shared
task has one attempt per side, Holm's adjustment across the metrics, and the Bayesian
probability that the candidate's per-attempt success rate is higher. A metric whose test
could not reach significance whatever the outcome is reported as not tested, and a
comparison in which no metric could be tested has the verdict `not_tested`.
`judging_differences` says whether the two sides were judged alike (their `Provenance`).
`compare_efficiency` (module `efficiency`) pairs what the sides spent the same way, for
`Comparison.efficiency`; it never enters the verdict, nor does `corrected.compare_corrected`,
the comparison corrected for the judges' measured error (`Comparison.judge_corrected`, issue #36). `compare_sides` (module `sides`) is
the one orchestration every face runs: each side's assistant, k, the judging check, the
comparison, the efficiency, the warnings, and `ComparisonRefused` for what cannot be compared.
The rules are stated on each function. Modules: `outcomes` (the input, per-task values),
`tests` (the statistical tests), `stratified` (the attempt-level test), `attempts` (its
verdict, the tasks that changed), `verdict` (the Holm family, the verdict rule), `paired`
(`compare`, step by step), `judging` (`judging_differences`), `labels` (how every face names
a metric). Pure: no I/O; numpy and scipy
are imported inside the functions that need them, so importing this package costs nothing.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from fair_forge_core.compare.efficiency import compare_efficiency
from fair_forge_core.compare.judging import judging_differences
from fair_forge_core.compare.outcomes import (
    Outcome,
    outcomes_from_conversations,
    outcomes_from_result,
    per_task_values,
    task_key,
)
from fair_forge_core.compare.paired import ALL_METRICS, compare
from fair_forge_core.compare.sides import (
    ComparedSide,
    ComparisonRefused,
    SidesComparison,
    compare_sides,
    comparison_warnings,
    side_of,
)
from fair_forge_core.compare.tests import (
    DEFAULT_RESAMPLES,
    MAX_SIGN_FLIP_TASKS,
    MAX_TASK_DRAWS,
    MIN_BOOTSTRAP_TASKS,
    MIN_RESAMPLES,
    POWER,
    PValueMethod,
    bootstrap_resamples,
    holm_adjust,
    mcnemar,
    minimum_detectable_effect,
    minimum_tasks,
    probability_better,
    sign_flip_p_value,
    smallest_exact_p,
    tasks_needed,
    z_value,
)
from fair_forge_core.compare.verdict import decide_verdict
from fair_forge_core.schemas import Comparison
from fair_forge_core.schemas.comparison import Verdict

__all__ = [
    "ALL_METRICS",
    "DEFAULT_RESAMPLES",
    "MAX_SIGN_FLIP_TASKS",
    "MAX_TASK_DRAWS",
    "MIN_BOOTSTRAP_TASKS",
    "MIN_RESAMPLES",
    "POWER",
    "ComparedSide",
    "ComparisonRefused",
    "Outcome",
    "PValueMethod",
    "SidesComparison",
    "Verdict",
    "bootstrap_resamples",
    "compare",
    "compare_efficiency",
    "compare_sides",
    "comparison_warnings",
    "decide_verdict",
    "holm_adjust",
    "judging_differences",
    "mcnemar",
    "minimum_detectable_effect",
    "minimum_tasks",
    "outcomes_from_conversations",
    "outcomes_from_result",
    "per_task_values",
    "probability_better",
    "side_of",
    "sign_flip_p_value",
    "smallest_exact_p",
    "task_key",
    "tasks_needed",
    "z_value",
]


class _CallablePackage(types.ModuleType):
    """This package, callable as its `compare`: `from fair_forge_core import compare` gives the
    package (Python sets a subpackage as its parent's attribute once imported, so a function of
    the same name could not stay there), and `compare(baseline, candidate, k=3)` then runs the
    comparison, while `compare.holm_adjust` and the other names stay reachable."""

    def __call__(self, *args: Any, **kwargs: Any) -> Comparison:
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
