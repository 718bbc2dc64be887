"""Is version B better than A? A paired comparison of two agents, or two runs of one, over
the tasks both attempted (DESIGN.md §10, issue #15).

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

Tests (`compare`): a task-level paired bootstrap for every metric averaged over at least 10
tasks, the exact sign-flip permutation test over fewer, McNemar's test when every shared
task has one attempt per side, Holm's adjustment across the metrics, and the Bayesian
probability that the candidate's per-attempt success rate is higher. A metric whose test
could not reach significance whatever the outcome is reported as not tested, and a
comparison in which no metric could be tested has the verdict `not_tested`.
`judging_differences` says whether the two sides were judged alike (their `Provenance`).
The rules are stated on each function. Pure: no I/O; numpy and scipy are imported inside
the functions that need them, so importing this module costs nothing.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from fair_forge_core import stats
from fair_forge_core.schemas import (
    PRIOR_RANGE,
    ComparedMetric,
    Comparison,
    ConversationMetrics,
    EvaluationResult,
    McNemarTest,
    MetricComparison,
    Provenance,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

Outcome = tuple[str, bool | None]
"""One conversation of one side: (its task, is_fully_correct), None when unscored."""

DEFAULT_RESAMPLES = 10_000
MIN_RESAMPLES = 2_000
MAX_TASK_DRAWS = 4_000_000


def bootstrap_resamples(tasks: int) -> int:
    """Bootstrap replicates for `tasks` shared tasks when the caller names none: 10,000,
    fewer when B × T would pass 4,000,000 task draws (about a second of CPU), never fewer
    than 2,000 (the percentile interval's Monte Carlo error stays under a point of coverage:
    `bench_compare` measures 93.8–95.6 % at 2,000)."""
    return max(MIN_RESAMPLES, min(DEFAULT_RESAMPLES, MAX_TASK_DRAWS // max(tasks, 1)))


POWER = 0.8
"""The power at which `minimum_detectable_effect` and `tasks_needed` are stated."""

EXACT_MCNEMAR_MAX_DISCORDANT = 25
"""McNemar's p-value is the exact binomial one while b + c ≤ 25, the chi-square one with
continuity correction above. The exact test is always valid; the chi-square form is the
conventional one once it approximates the exact test well, which the usual rule places at
about 25 discordant pairs (Wikipedia's *McNemar's test*: with b + c < 25 the statistic is
not well approximated by the chi-square distribution, use the exact binomial test). At
b + c = 26 the two p-values of a 9/17 split are 0.169 (exact) and 0.170 (chi-square).
Both are always reported."""

MIN_BOOTSTRAP_TASKS = 10
"""A bootstrap p-value enters the verdict only for a metric averaged over at least 10 tasks.
With fewer, the task-level bootstrap cannot see the spread between tasks (at one task, or
any few tasks with equal differences, every resample is the observed difference and the
p-value is 1/(B + 1)): the metric is tested by the exact sign-flip test
(`sign_flip_p_value`) instead; the bootstrap interval and p-value are still reported."""

MAX_SIGN_FLIP_TASKS = 16
"""`sign_flip_p_value` enumerates 2^T sign assignments: at most 2^16 (an 8 MB matrix).
`compare` calls it only below `MIN_BOOTSTRAP_TASKS`, at most 2^9 = 512 assignments."""

PValueMethod = Literal["bootstrap", "mcnemar_exact", "mcnemar_chi2", "sign_flip_exact"]
Verdict = Literal["improved", "regressed", "inconclusive", "not_tested"]

ALL_METRICS: tuple[ComparedMetric, ...] = ("pass@1", "pass@k", "pass^k", "pass@k_unbiased", "pass^k_unbiased")
_UNBIASED: frozenset[ComparedMetric] = frozenset({"pass@k_unbiased", "pass^k_unbiased"})


# --------------------------------------------------------------------------- input


def task_key(task_id: str | None, session_id: str) -> str:
    """The task a conversation attempts: its `task_id`, else its `session_id`."""
    return task_id if task_id is not None else session_id


def _conversation_fields(
    conversation: ConversationMetrics | Mapping[str, Any], index: int
) -> tuple[str, str, bool | None]:
    """(assistant_id, task, is_fully_correct) of one conversation, a model or its JSON dict."""
    if isinstance(conversation, ConversationMetrics):
        return (
            conversation.assistant_id,
            task_key(conversation.task_id, conversation.session_id),
            conversation.is_fully_correct,
        )
    if not isinstance(conversation, Mapping):
        raise TypeError(
            f"conversation {index}: expected ConversationMetrics or a dict, got {type(conversation).__name__}"
        )
    expected: dict[str, tuple[type, ...]] = {
        "session_id": (str,),
        "assistant_id": (str,),
        "task_id": (str, type(None)),
        "is_fully_correct": (bool, type(None)),
    }
    for name, types in expected.items():
        if name not in conversation:
            raise ValueError(f"conversation {index}: missing field {name!r}")
        if not isinstance(conversation[name], types):
            raise ValueError(f"conversation {index}: {name} must be {' or '.join(t.__name__ for t in types)}")
    return (
        conversation["assistant_id"],
        task_key(conversation["task_id"], conversation["session_id"]),
        conversation["is_fully_correct"],
    )


def outcomes_from_conversations(
    conversations: Iterable[ConversationMetrics | Mapping[str, Any]], assistant_id: str | None = None
) -> list[Outcome]:
    """One `(task, is_fully_correct)` per conversation, in the order given.

    A conversation is a `ConversationMetrics` or its JSON dict from a result file, of which
    `session_id`, `assistant_id`, `task_id` and `is_fully_correct` are read (ValueError
    naming the conversation's index when one is missing or of the wrong type; other fields
    are ignored). With `assistant_id`, only that assistant's conversations; ValueError,
    naming the assistants there are, when it has none. Without, every conversation.
    """
    rows = [_conversation_fields(conversation, i) for i, conversation in enumerate(conversations)]
    if assistant_id is None:
        return [(task, correct) for _, task, correct in rows]
    chosen = [(task, correct) for owner, task, correct in rows if owner == assistant_id]
    if not chosen:
        present = sorted({owner for owner, _, _ in rows})
        raise ValueError(f"no conversation of assistant {assistant_id!r}; assistants present: {present}")
    return chosen


def outcomes_from_result(
    result: EvaluationResult | Mapping[str, Any], assistant_id: str | None = None
) -> list[Outcome]:
    """`outcomes_from_conversations` of a result's `per_conversation_metrics` (an
    `EvaluationResult` or the JSON dict of one); ValueError when the dict has no such list."""
    if isinstance(result, EvaluationResult):
        return outcomes_from_conversations(result.per_conversation_metrics, assistant_id)
    conversations = result.get("per_conversation_metrics") if isinstance(result, Mapping) else None
    if not isinstance(conversations, list):
        raise ValueError("a result must have a list 'per_conversation_metrics'")
    return outcomes_from_conversations(conversations, assistant_id)


@dataclass
class _Side:
    """One side's outcomes by task: (scored attempts, successes), and unscored conversations."""

    scored: dict[str, tuple[int, int]] = field(default_factory=dict)
    unscored: dict[str, int] = field(default_factory=dict)


def _tally(outcomes: Iterable[Outcome], side: str) -> _Side:
    tally = _Side()
    for index, outcome in enumerate(outcomes):
        if not (isinstance(outcome, tuple) and len(outcome) == 2):
            raise TypeError(f"{side} outcome {index}: expected a (task, is_fully_correct) pair")
        task, correct = outcome
        if not isinstance(task, str):
            raise TypeError(f"{side} outcome {index}: the task must be a str, got {type(task).__name__}")
        if correct is None:
            tally.unscored[task] = tally.unscored.get(task, 0) + 1
        elif isinstance(correct, bool):
            n, c = tally.scored.get(task, (0, 0))
            tally.scored[task] = (n + 1, c + correct)
        else:
            raise TypeError(f"{side} outcome {index}: is_fully_correct must be True, False or None")
    return tally


# --------------------------------------------------------------------------- per task


def per_task_values(n: int, c: int, k: int) -> dict[ComparedMetric, float | None]:
    """Every metric of one task with c successes in n scored attempts.

    pass@1 = c/n; pass@k = 1 − (1 − c/n)^k and pass^k = (c/n)^k (`stats.pass_at_k`,
    `stats.pass_pow_k`); the unbiased `stats.pass_at_k_unbiased` and
    `stats.pass_pow_k_unbiased`, None when n < k. ValueError unless n ≥ 1, 0 ≤ c ≤ n, k ≥ 1.
    """
    return {
        "pass@1": stats.pass_pow_k(n, c, 1),
        "pass@k": stats.pass_at_k(n, c, k),
        "pass^k": stats.pass_pow_k(n, c, k),
        "pass@k_unbiased": stats.pass_at_k_unbiased(n, c, k),
        "pass^k_unbiased": stats.pass_pow_k_unbiased(n, c, k),
    }


# --------------------------------------------------------------------------- tests


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's (1979) step-down adjusted p-values, in the order given.

    With the m p-values sorted p_(1) ≤ … ≤ p_(m): p̃_(i) = max_{j ≤ i} min(1, (m − j + 1)·p_(j)).
    Rejecting every hypothesis with p̃ ≤ α is Holm's procedure, which keeps the family-wise
    error rate at α under any dependence between the tests. Ties get equal adjusted values
    whatever their order; an empty list gives []. ValueError for a p-value outside [0, 1].
    """
    if any(not 0.0 <= p <= 1.0 for p in p_values):  # NaN included
        raise ValueError("p-values must be between 0 and 1")
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def mcnemar(b: int, c: int, tasks: int) -> McNemarTest:
    """McNemar's test of `tasks` paired single attempts, b of them baseline right and
    candidate wrong, c the reverse.

    - exact: two-sided binomial p = min(1, 2·P(X ≤ min(b, c))), X ~ Binomial(b + c, 1/2);
      1 when b + c = 0;
    - chi-square with continuity correction: χ² = max(0, |b − c| − 1)² / (b + c) on one
      degree of freedom (the correction never pushes past zero, so b = c gives χ² = 0 and
      p = 1); None when b + c = 0;
    - `method`/`p_value`: exact while b + c ≤ `EXACT_MCNEMAR_MAX_DISCORDANT` (25), else chi-square;
    - the paired difference (c − b)/tasks and its standard error
      sqrt((b + c)/tasks − ((c − b)/tasks)²)/sqrt(tasks), the plug-in standard deviation of
      the per-task differences (each −1, 0 or 1) over sqrt(tasks).
    """
    from scipy.stats import binom, chi2

    for name, value in (("b", b), ("c", c), ("tasks", tasks)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int")
    if tasks < 1 or b + c > tasks:
        raise ValueError("tasks must be at least 1 and at least b + c")
    discordant = b + c
    exact = 1.0 if discordant == 0 else min(1.0, 2.0 * float(binom.cdf(min(b, c), discordant, 0.5)))
    statistic = p_chi2 = None
    if discordant:
        statistic = max(0, abs(b - c) - 1) ** 2 / discordant
        p_chi2 = float(chi2.sf(statistic, 1))
    use_exact = discordant <= EXACT_MCNEMAR_MAX_DISCORDANT or p_chi2 is None
    difference = (c - b) / tasks
    variance = max(0.0, discordant / tasks - difference**2)
    return McNemarTest(
        tasks=tasks,
        b=b,
        c=c,
        exact_p_value=exact,
        chi2_statistic=statistic,
        chi2_p_value=p_chi2,
        method="exact" if use_exact else "chi2",
        p_value=exact if use_exact or p_chi2 is None else p_chi2,
        difference=difference,
        standard_error=math.sqrt(variance / tasks),
    )


def sign_flip_p_value(differences: Sequence[float]) -> float:
    """Fisher's randomisation test of paired differences d_1 … d_T (the exact sign-flip
    permutation test): under "no difference" each d_i is as likely to have had the other
    sign, so the two-sided p-value is

        p = #{s ∈ {±1}^T : |Σ s_i·d_i| ≥ |Σ d_i| − 1e-9·Σ|d_i|} / 2^T,

    enumerated exactly (the tolerance makes float sums that are equal in exact arithmetic,
    such as 0.1 + 0.2 and 0.3, count as ties). It is 1 when every d_i is 0, and never below
    2/2^T (s and −s reach the same |Σ|), which it is when every d_i has one sign and none
    is 0. On differences in {−1, 0, 1} it is McNemar's exact test. ValueError unless
    1 ≤ T ≤ `MAX_SIGN_FLIP_TASKS`.
    """
    import numpy as np

    tasks = len(differences)
    if not 1 <= tasks <= MAX_SIGN_FLIP_TASKS:
        raise ValueError(f"the sign-flip test takes 1 to {MAX_SIGN_FLIP_TASKS} differences, got {tasks}")
    values = np.asarray(differences, dtype=np.float64)
    # row r of `signs` is assignment r: bit i of r set flips the sign of d_i
    signs = 1 - 2 * ((np.arange(1 << tasks)[:, None] >> np.arange(tasks)) & 1)
    sums = np.abs(signs @ values)
    observed = abs(math.fsum(differences))
    tolerance = 1e-9 * math.fsum(abs(d) for d in differences)
    return int(np.count_nonzero(sums >= observed - tolerance)) / (1 << tasks)


def smallest_exact_p(tasks: int) -> float:
    """The smallest two-sided p-value an exact test of `tasks` paired tasks can give, at its
    most extreme outcome (every task differs, all one way): 2/2^T for the sign-flip test,
    and for McNemar's exact test (`mcnemar`) while T ≤ `EXACT_MCNEMAR_MAX_DISCORDANT`;
    beyond, 2/2^25 (25 discordant pairs, all one way), which no confidence in use reaches."""
    return 2.0 ** (1 - min(tasks, EXACT_MCNEMAR_MAX_DISCORDANT))


def minimum_tasks(confidence: float = 0.95, tests: int = 1, resamples: int | None = None) -> int:
    """The fewest tasks at which one of `tests` metrics, Holm-adjusted together, can be
    significant at α = 1 − confidence: the smallest T with tests·2/2^T ≤ α (an exact test's
    smallest p-value, `smallest_exact_p`, times the factor of Holm's first step). With
    `resamples` (the metric may be bootstrapped from `MIN_BOOTSTRAP_TASKS` tasks on), at
    most `MIN_BOOTSTRAP_TASKS` when tests/(resamples + 1), the bootstrap's smallest Holm
    step, is ≤ α. At α = 0.05: 6 for one test, 7 for two or three, 8 for four to six."""
    alpha = 1.0 - confidence
    tasks = 1
    while tests * smallest_exact_p(tasks) > alpha and tasks < EXACT_MCNEMAR_MAX_DISCORDANT:
        tasks += 1
    if resamples is not None and tasks > MIN_BOOTSTRAP_TASKS and tests / (resamples + 1) <= alpha:
        return MIN_BOOTSTRAP_TASKS
    return tasks


def probability_better(
    baseline_successes: int,
    baseline_failures: int,
    candidate_successes: int,
    candidate_failures: int,
    prior: Sequence[float] = (1.0, 1.0),
) -> float:
    """P(θ_cand > θ_base) for independent θ_side ~ Beta(a + successes, b + failures), prior (a, b).

    Exact numerical integration, no sampling: with f_C the candidate's density and I_x the
    baseline's CDF (the regularised incomplete beta), P = ∫₀¹ f_C(x)·I_x(α_B, β_B) dx, by
    `scipy.integrate.quad` over the interval between the candidate's 1e-15 and 1 − 1e-15
    quantiles (the mass left out changes P by at most 2e-15), with both posteriors' means and
    the baseline's central quantiles as break points so the quadrature sees where the CDF
    rises however concentrated either posterior is. Clipped to [0, 1]. ValueError for a
    negative count or a prior outside `PRIOR_RANGE`.
    """
    from scipy.integrate import quad
    from scipy.special import betainc, betaincinv, betaln, xlog1py, xlogy

    a, b = _check_prior(prior)
    for value in (baseline_successes, baseline_failures, candidate_successes, candidate_failures):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("successes and failures must be non-negative ints")
    alpha_b, beta_b = a + baseline_successes, b + baseline_failures
    alpha_c, beta_c = a + candidate_successes, b + candidate_failures
    tail = 1e-15
    low = float(betaincinv(alpha_c, beta_c, tail))
    high = float(betaincinv(alpha_c, beta_c, 1.0 - tail))
    if not low < high:  # a posterior too concentrated for the quantiles to part: its mean
        mean_c = alpha_c / (alpha_c + beta_c)
        return float(betainc(alpha_b, beta_b, mean_c))
    breaks = [alpha_b / (alpha_b + beta_b), alpha_c / (alpha_c + beta_c)]
    breaks += [float(betaincinv(alpha_b, beta_b, q)) for q in (1e-6, 0.01, 0.5, 0.99, 1 - 1e-6)]
    points = sorted({x for x in breaks if low < x < high})

    log_norm = float(betaln(alpha_c, beta_c))

    def integrand(x: float) -> float:
        density = math.exp(float(xlogy(alpha_c - 1.0, x)) + float(xlog1py(beta_c - 1.0, -x)) - log_norm)
        return density * float(betainc(alpha_b, beta_b, x))

    value, _ = quad(integrand, low, high, points=points or None, limit=500, epsabs=1e-14, epsrel=1e-12)
    return min(1.0, max(0.0, float(value)))


def _check_prior(prior: Sequence[float]) -> tuple[float, float]:
    values = list(prior)
    low, high = PRIOR_RANGE
    if len(values) != 2 or not all(isinstance(v, int | float) and low <= v <= high for v in values):
        raise ValueError(f"prior must be two numbers between {low:g} and {high:g}")
    return float(values[0]), float(values[1])


def z_value(confidence: float) -> float:
    """z_{1−α/2} with α = 1 − confidence: the two-sided standard normal critical value."""
    return statistics.NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def minimum_detectable_effect(standard_error: float, confidence: float = 0.95, power: float = POWER) -> float:
    """(z_{1−α/2} + z_power)·SE: the true difference a two-sided test at level α = 1 −
    confidence detects with probability `power`, by the normal approximation."""
    return (z_value(confidence) + statistics.NormalDist().inv_cdf(power)) * standard_error


def tasks_needed(
    tasks: int,
    standard_error: float,
    difference: float,
    confidence: float = 0.95,
    power: float = POWER,
    *,
    minimum: int = 1,
) -> int | None:
    """Shared tasks that would detect a true difference of size |difference| with probability
    `power`: ⌈tasks·(minimum_detectable_effect(SE)/|difference|)²⌉, the standard error
    shrinking as 1/sqrt(tasks), and never fewer than `minimum` (`compare` passes the fewest
    tasks its tests can reject with, and one more than the tasks given). None when the
    difference is 0."""
    if difference == 0:
        return None
    normal = math.ceil(tasks * (minimum_detectable_effect(standard_error, confidence, power) / abs(difference)) ** 2)
    return max(minimum, normal)


def _bootstrap(
    differences: NDArray[np.float64], eligible: NDArray[np.float64], resamples: int, seed: int
) -> NDArray[np.float64]:
    """Bootstrap replicates of every metric's mean difference: `resamples` × metrics.

    Each replicate draws T of the T shared tasks with replacement — every attempt of a task,
    both sides, together — as `numpy.random.default_rng(seed).integers(0, T, (B, T))`, in
    blocks of rows, turned into counts per task; a metric's replicate is Σ count·eligible·difference / Σ count·eligible over its tasks,
    NaN when the draw holds none of them. All metrics share the draws.
    """
    import numpy as np

    metrics, tasks = differences.shape
    rng = np.random.default_rng(seed)
    rows = max(1, 1_000_000 // tasks)  # memory of one block of draws and counts: at most 16 MB
    weighted = (differences * eligible).T
    out = np.empty((resamples, metrics))
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        draws = rng.integers(0, tasks, size=(stop - start, tasks))
        draws += np.arange(stop - start)[:, None] * tasks  # row r's task j is cell r·T + j
        counts = np.bincount(draws.ravel(), minlength=(stop - start) * tasks).reshape(stop - start, tasks)
        counts = counts.astype(np.float64)
        denominator = counts @ eligible.T
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:stop] = np.where(denominator > 0, (counts @ weighted) / denominator, np.nan)
    return out


# --------------------------------------------------------------------------- the comparison


@dataclass
class _Metric:
    """One metric's numbers before the verdict."""

    name: ComparedMetric
    tasks: int
    baseline: float | None = None
    candidate: float | None = None
    difference: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    bootstrap_p: float | None = None
    p_value: float | None = None
    method: PValueMethod | None = None
    standard_error: float | None = None
    notes: list[str] = field(default_factory=list)
    same_as: int = -1  # index of the first metric with the same per-task data, or its own
    floor: float | None = None  # the smallest p-value its test can give; None when no test ran


def compare(
    baseline: Iterable[Outcome],
    candidate: Iterable[Outcome],
    *,
    k: int = 3,
    confidence: float = 0.95,
    resamples: int | None = None,
    seed: int = 0,
    prior: Sequence[float] = (1.0, 1.0),
    judging: Sequence[str] = (),
) -> Comparison:
    """Is the candidate better than the baseline on the tasks both attempted?

    Rules (α = 1 − confidence):

    - Metrics: pass@1, and at k > 1 also plug-in pass@k, pass^k and unbiased pass@k, pass^k
      (see the module docstring), each averaged per side over its tasks: the shared tasks,
      or for the unbiased ones those with ≥ k scored attempts on both sides (a note, and
      None values, when none has). `difference` is the mean of the per-task differences
      candidate − baseline.
    - Interval: the task-level paired bootstrap (`resamples` replicates, by default
      `bootstrap_resamples` of the shared tasks; seeded by `seed`:
      the same input and seed give the same numbers); the percentile interval, the α/2 and
      1 − α/2 quantiles of the replicates (numpy's linear interpolation).
    - Bootstrap p-value, two-sided, from the replicates D*_b centred on the observed D:
      p = (1 + #{b : |D*_b − D| ≥ |D|}) / (B + 1), B counting the replicates that hold one of
      the metric's tasks. It is 1 when D = 0.
    - The test of a metric: McNemar's (`mcnemar`, exact or chi-square) for pass@1 when every
      shared task has exactly one scored attempt per side, at any number of tasks;
      otherwise the bootstrap p-value when the metric is averaged over ≥
      `MIN_BOOTSTRAP_TASKS` tasks, and the exact sign-flip test over its per-task
      differences (`sign_flip_p_value`, method "sign_flip_exact") when over fewer. Metrics
      whose per-task values coincide on both sides with an earlier metric's (at one attempt
      a task, pass@k and pass^k are pass@1) are the same test: they take its p-value and
      count once in the Holm family.
    - Tested or not: a test's floor is the smallest p-value it can give at its most extreme
      outcome (`smallest_exact_p` of the metric's tasks for the exact tests, 1/(B + 1) for
      the bootstrap). The distinct tests, ranked by floor, are tested as the largest group
      whose size times its largest floor is ≤ α — Holm's first step at best, so each of
      them could be significant. A metric outside it (5 tasks at 95 %: 2/2⁵ = 0.0625 > 0.05;
      6 tasks and five distinct tests: 5·2/2⁶ > 0.05) is not tested: no p-value, and a note
      saying why in numbers. So is a metric no test could run on (no task, or no bootstrap
      resample holding one of its tasks). A test that ran never carries a "not tested" note.
    - Holm: the tested p-values are adjusted together (`holm_adjust`); a metric is
      significant when its adjusted p ≤ α and its difference is not 0.
    - Verdict: `regressed` if any metric is significantly lower; `improved` if at least one
      is significantly higher and none significantly lower; `not_tested` if no metric was
      tested (no shared task included); else `inconclusive`. The Bayesian probability
      informs, it does not vote.
    - Standard error of a metric: the sample standard deviation (n − 1) of its per-task
      differences over sqrt(tasks), None under two tasks and exactly 0.0 when the
      differences are all equal (no variation); `minimum_detectable_effect` at 80 % power
      and level α from it, None when it is None or 0.0.
    - `tasks_needed` (inconclusive and not_tested verdicts only; None when the difference
      is 0 or under two tasks): the shared tasks that would detect a true difference of the
      observed size with 80 % power (`tasks_needed`), and never fewer than the fewest tasks
      at which one of the comparison's distinct tests can be significant (`minimum_tasks`),
      nor than the shared tasks + 1.
    - `probability_candidate_better`: `probability_better` on the scored attempts of the
      shared tasks pooled per side, with `prior` (a, b); None without shared tasks.
    - `judging`: the lines of `judging_differences`, copied into `judging_differences`.

    ValueError for k < 1, a confidence outside (0, 1), resamples < 1, a negative seed or a
    prior outside `PRIOR_RANGE`; TypeError for a malformed outcome.
    """
    import numpy as np

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError("k must be an int of at least 1")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    if resamples is not None and (isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1):
        raise ValueError("resamples must be an int of at least 1")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError("seed must be a non-negative int")
    prior_a, prior_b = _check_prior(prior)
    alpha = 1.0 - confidence

    base, cand = _tally(baseline, "baseline"), _tally(candidate, "candidate")
    shared = sorted(base.scored.keys() & cand.scored.keys())
    if resamples is None:
        resamples = bootstrap_resamples(len(shared))
    names: tuple[ComparedMetric, ...] = ("pass@1",) if k == 1 else ALL_METRICS
    notes: list[str] = []
    baseline_only = sorted(base.scored.keys() - cand.scored.keys())
    candidate_only = sorted(cand.scored.keys() - base.scored.keys())
    if baseline_only:
        notes.append(f"{len(baseline_only)} task(s) scored only for the baseline were not compared")
    if candidate_only:
        notes.append(f"{len(candidate_only)} task(s) scored only for the candidate were not compared")
    for side, tally in (("baseline", base), ("candidate", cand)):
        if tally.unscored:
            notes.append(f"{sum(tally.unscored.values())} unscored {side} conversation(s) left out")

    metrics: list[_Metric] = []
    mcnemar_test: McNemarTest | None = None
    if not shared:
        notes.append("no task was scored on both sides: nothing to compare")
        metrics = [_Metric(name, 0, notes=["no shared task"]) for name in names]
    else:
        values = {
            side: [per_task_values(*tally.scored[task], k) for task in shared]
            for side, tally in (("b", base), ("c", cand))
        }
        single = all(base.scored[t][0] == 1 and cand.scored[t][0] == 1 for t in shared)
        eligible = np.array(
            [
                [values["b"][i][m] is not None and values["c"][i][m] is not None for i in range(len(shared))]
                for m in names
            ],
            dtype=np.float64,
        )
        base_values = np.array([[values["b"][i][m] or 0.0 for i in range(len(shared))] for m in names])
        cand_values = np.array([[values["c"][i][m] or 0.0 for i in range(len(shared))] for m in names])
        differences = cand_values - base_values
        replicates = _bootstrap(differences, eligible, resamples, seed)
        if single:
            b = sum(1 for t in shared if base.scored[t][1] == 1 and cand.scored[t][1] == 0)
            c = sum(1 for t in shared if base.scored[t][1] == 0 and cand.scored[t][1] == 1)
            mcnemar_test = mcnemar(b, c, len(shared))
        signatures: list[bytes] = []
        for m, name in enumerate(names):
            mask = eligible[m] > 0
            metric = _metric(name, base_values[m][mask], cand_values[m][mask], replicates[:, m], alpha, k)
            # + 0.0 turns −0.0 into 0.0, so equal values have equal bytes.
            signature = mask.tobytes() + (base_values[m] + 0.0).tobytes() + (cand_values[m] + 0.0).tobytes()
            metric.same_as = signatures.index(signature) if signature in signatures else m
            signatures.append(signature)
            if metric.same_as != m:  # the same test as an earlier metric, whatever decided it
                earlier = metrics[metric.same_as]
                metric.p_value, metric.method, metric.floor = earlier.p_value, earlier.method, earlier.floor
            elif name == "pass@1" and mcnemar_test is not None:
                metric.p_value, metric.floor = mcnemar_test.p_value, smallest_exact_p(metric.tasks)
                metric.method = "mcnemar_exact" if mcnemar_test.method == "exact" else "mcnemar_chi2"
            metrics.append(metric)

    # Which tests could be significant: the largest group, by floor, that Holm's first step
    # lets through. The product (group size × largest floor) grows with the floor, so the
    # groups that qualify are the ones below a cut-off.
    floors = {i: m.floor for i, m in enumerate(metrics) if m.same_as == i and m.floor is not None}
    cutoff = None
    for floor in sorted(set(floors.values())):
        if sum(1 for f in floors.values() if f <= floor) * floor > alpha:
            break
        cutoff = floor
    family = [i for i, f in floors.items() if cutoff is not None and f <= cutoff]
    for i, floor in floors.items():
        if i not in family:
            together = sum(1 for f in floors.values() if f <= floor)
            metrics[i].notes.append(_untestable(metrics[i], floor, together, confidence))
            metrics[i].p_value = metrics[i].method = None
    for i, metric in enumerate(metrics):
        if metric.same_as != i and metric.same_as not in family:
            metric.p_value = metric.method = None
            metric.notes = [*metric.notes, *(n for n in metrics[metric.same_as].notes if n not in metric.notes)]

    # Holm over the distinct tested metrics.
    adjusted = dict(zip(family, holm_adjust([metrics[i].p_value or 0.0 for i in family]), strict=True))
    holm = [adjusted.get(m.same_as) if m.p_value is not None else None for m in metrics]
    significant = [p is not None and p <= alpha and bool(m.difference) for m, p in zip(metrics, holm, strict=True)]
    lower = [m.name for m, s in zip(metrics, significant, strict=True) if s and (m.difference or 0.0) < 0]
    higher = [m.name for m, s in zip(metrics, significant, strict=True) if s and (m.difference or 0.0) > 0]
    verdict: Verdict = "regressed" if lower else "improved" if higher else "inconclusive" if family else "not_tested"
    explanation = _explain(verdict, metrics, holm, lower, higher, confidence, len(shared))
    fewest = max(
        minimum_tasks(confidence, max(1, len(floors)), None if mcnemar_test is not None else resamples),
        len(shared) + 1,
    )

    results = []
    for metric, p_holm, is_significant in zip(metrics, holm, significant, strict=True):
        se = metric.standard_error
        needed = None
        if verdict in ("inconclusive", "not_tested") and se is not None and metric.difference is not None:
            needed = tasks_needed(metric.tasks, se, metric.difference, confidence, minimum=fewest)
        results.append(
            MetricComparison(
                metric=metric.name,
                k=1 if metric.name == "pass@1" else k,
                tasks=metric.tasks,
                baseline=metric.baseline,
                candidate=metric.candidate,
                difference=metric.difference,
                ci_low=metric.ci_low,
                ci_high=metric.ci_high,
                bootstrap_p_value=metric.bootstrap_p,
                p_value=metric.p_value,
                p_value_method=metric.method,
                p_value_holm=p_holm,
                significant=is_significant,
                standard_error=se,
                minimum_detectable_effect=minimum_detectable_effect(se, confidence) if se else None,
                tasks_needed=needed,
                note="; ".join(metric.notes) or None,
            )
        )

    attempts = {side: [tally.scored[t] for t in shared] for side, tally in (("b", base), ("c", cand))}
    n_b, c_b = sum(n for n, _ in attempts["b"]), sum(c for _, c in attempts["b"])
    n_c, c_c = sum(n for n, _ in attempts["c"]), sum(c for _, c in attempts["c"])
    return Comparison(
        verdict=verdict,
        verdict_explanation=explanation,
        confidence=confidence,
        k=k,
        seed=seed,
        bootstrap_resamples=resamples,
        shared_tasks=len(shared),
        baseline_attempts=n_b,
        baseline_successes=c_b,
        candidate_attempts=n_c,
        candidate_successes=c_c,
        metrics=results,
        mcnemar=mcnemar_test,
        prior=[prior_a, prior_b],
        probability_candidate_better=probability_better(c_b, n_b - c_b, c_c, n_c - c_c, (prior_a, prior_b))
        if shared
        else None,
        baseline_only_tasks=baseline_only,
        candidate_only_tasks=candidate_only,
        baseline_unscored_conversations=sum(base.unscored.values()),
        candidate_unscored_conversations=sum(cand.unscored.values()),
        baseline_unscored_by_task=dict(sorted(base.unscored.items())),
        candidate_unscored_by_task=dict(sorted(cand.unscored.items())),
        notes=notes,
        judging_differences=list(judging),
    )


def _metric(
    name: ComparedMetric,
    base_values: NDArray[np.float64],
    cand_values: NDArray[np.float64],
    replicates: NDArray[np.float64],
    alpha: float,
    k: int,
) -> _Metric:
    """One metric from its per-task values on its tasks and its bootstrap replicates."""
    import numpy as np

    tasks = len(base_values)
    if tasks == 0:
        return _Metric(name, 0, notes=[f"no shared task has k = {k} scored attempts on both sides"])
    differences = (cand_values - base_values).tolist()
    difference = math.fsum(differences) / tasks
    metric = _Metric(
        name,
        tasks,
        baseline=math.fsum(base_values.tolist()) / tasks,
        candidate=math.fsum(cand_values.tolist()) / tasks,
        difference=difference,
    )
    if tasks >= 2:
        if min(differences) == max(differences):  # no variation: exactly 0, not a rounding residue
            metric.standard_error = 0.0
        else:
            spread = math.fsum((x - difference) ** 2 for x in differences) / (tasks - 1)
            metric.standard_error = math.sqrt(spread / tasks)
    if tasks < MIN_BOOTSTRAP_TASKS:
        metric.p_value, metric.method = sign_flip_p_value(differences), "sign_flip_exact"
        metric.floor = smallest_exact_p(tasks)
    valid = replicates[~np.isnan(replicates)]
    if len(valid) < len(replicates):
        metric.notes.append(
            f"{len(replicates) - len(valid)} bootstrap resample(s) held none of its tasks and were left out"
        )
    if len(valid) == 0:
        if metric.floor is None:
            metric.notes.append("no bootstrap resample held one of its tasks: not tested")
        return metric
    low, high = np.quantile(valid, [alpha / 2.0, 1.0 - alpha / 2.0])
    metric.ci_low, metric.ci_high = float(low), float(high)
    exceed = int(np.count_nonzero(np.abs(valid - difference) >= abs(difference)))
    metric.bootstrap_p = (1 + exceed) / (len(valid) + 1)
    if tasks >= MIN_BOOTSTRAP_TASKS:
        metric.p_value, metric.method, metric.floor = metric.bootstrap_p, "bootstrap", 1 / (len(valid) + 1)
    return metric


_TEST_NAMES: dict[PValueMethod, str] = {
    "bootstrap": "the bootstrap",
    "mcnemar_exact": "McNemar's exact test",
    "mcnemar_chi2": "McNemar's test",
    "sign_flip_exact": "the exact sign-flip test",
}


def _level(confidence: float) -> str:
    """A confidence level as written in notes and explanations: 95%, or 0.955 when not a whole percent."""
    return f"{confidence:.0%}" if round(confidence * 100, 6).is_integer() else f"{confidence:g}"


def _untestable(metric: _Metric, floor: float, together: int, confidence: float) -> str:
    """Why a test that ran cannot show a difference: its floor alone is above α, or its floor
    times `together`, the tests Holm would adjust it with (its own and those with a floor as
    small or smaller), is."""
    test = _TEST_NAMES[metric.method] if metric.method is not None else "its test"
    head = f"{metric.tasks} tasks cannot show a difference at {_level(confidence)}"
    if floor > 1.0 - confidence:
        return f"{head}: {test}'s smallest p-value is {floor:.3g}"
    return (
        f"{head} among {together} distinct tests: {test}'s smallest p-value, {floor:.3g}, "
        f"is {together * floor:.3g} after Holm's adjustment"
    )


def _explain(
    verdict: Verdict,
    metrics: Sequence[_Metric],
    holm: Sequence[float | None],
    lower: Sequence[ComparedMetric],
    higher: Sequence[ComparedMetric],
    confidence: float,
    shared: int,
) -> str:
    """One sentence on why the verdict is what it is."""
    level = _level(confidence)
    by_name = {m.name: (m, p) for m, p in zip(metrics, holm, strict=True)}

    def listed(names: Sequence[ComparedMetric]) -> str:
        return ", ".join(f"{n} ({by_name[n][0].difference:+.3f}, Holm-adjusted p = {by_name[n][1]:.3g})" for n in names)

    if verdict == "regressed":
        text = f"regressed: significantly lower at {level}: {listed(lower)}"
        return text + (f"; significantly higher: {listed(higher)}" if higher else "")
    if verdict == "improved":
        return f"improved: significantly higher at {level}: {listed(higher)}; none lower"
    if verdict == "not_tested":
        if not shared:
            return "not tested: no task was scored on both sides"
        return f"not tested: no metric could be tested at {level} on {shared} shared task(s) (see the metrics' notes)"
    tested = [p for p in holm if p is not None]
    return f"inconclusive: no metric differs significantly at {level} (smallest Holm-adjusted p = {min(tested):.3g})"


# --------------------------------------------------------------------------- judged alike?


def _judges(provenance: Provenance) -> str:
    """The judges of one side, in order: class path, model and the identity's first 12 hex digits."""
    return "[" + ", ".join(f"{j.class_path} {j.model} {j.identity[:12]}" for j in provenance.judges) + "]"


def judging_differences(baseline: Provenance | None, candidate: Provenance | None) -> list[str]:
    """What differs between how the two sides were judged, one readable line per difference
    naming the field and both values (`different threshold: baseline 0.7 vs candidate 0.75`);
    [] when they were judged alike.

    Compared: the judges' `identity` lists (in order: the same judges, models, sampling and
    prompt, `judges.usage.judge_identity`), `prompt_hash`, `threshold`, `tool_threshold`,
    `tool_dimension_floor` and `k`. A side without provenance (a result written before it
    existed, or computed without it) is one line saying that side cannot be checked, and
    nothing else is compared. Hashes are shown by their first 12 hex digits.
    """
    lines = [
        f"the {side}'s result has no provenance: how it was judged cannot be checked"
        for side, provenance in (("baseline", baseline), ("candidate", candidate))
        if provenance is None
    ]
    if baseline is None or candidate is None:
        return lines
    if [j.identity for j in baseline.judges] != [j.identity for j in candidate.judges]:
        lines.append(f"different judges (identity): baseline {_judges(baseline)} vs candidate {_judges(candidate)}")
    if baseline.prompt_hash != candidate.prompt_hash:
        lines.append(
            f"different prompt_hash: baseline {baseline.prompt_hash[:12]} vs candidate {candidate.prompt_hash[:12]}"
        )
    for name in ("threshold", "tool_threshold", "tool_dimension_floor", "k"):
        base_value, cand_value = getattr(baseline, name), getattr(candidate, name)
        if base_value != cand_value:
            lines.append(f"different {name}: baseline {base_value:g} vs candidate {cand_value:g}")
    return lines
