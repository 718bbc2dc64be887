"""pass@k and pass^k corrected for the judge's measured error (issue #36; judge noise against agent
noise is `judge_noise`). Pure: no I/O. Docs: docs/statistics.md "Correcting for the judge's error".

The measurement model. Calibration measures the judge per answer (a turn): it says "correct" with
probability TPR when the answer truly is, and 1 − TNR when it is not, each turn's reading
independent of the others' given the truth (conditional independence, the classical
misclassification model). Deterministic checks (tools, policies, end states) are exact. An attempt
is truly fully correct iff every deterministic check passed and every judged turn is truly
correct, and judged fully correct iff every check passed and every turn was judged correct.

With J = TPR + TNR − 1 and M = [[TNR, 1 − TPR], [1 − TNR, TPR]] the per-turn matrix of
P(reading | truth), det M = J: for J ≠ 0 the distribution of an attempt's m true turn verdicts is
(M⁻¹)^⊗m applied to that of its readings, whatever the dependence between the agent's turns. The
row of M⁻¹ for "truly correct" is (−(1 − TNR)/J, TNR/J), so

    w(attempt) = 0 if a deterministic check failed, else x^s · y^u,  x = TNR/J, y = −(1 − TNR)/J,

with s turns judged correct and u judged incorrect, has E[w | truth] = 1{truly fully correct}:
w is an unbiased reading of the attempt's truth. A task's mean w is its true per-attempt rate's
estimate, Rogan & Gladen's (1978) (q + TNR − 1)/J at m = 1, the same inversion for m turns; its
elementary symmetric means e_k(w)/C(n, k) and 1 − e_k(1 − w)/C(n, k) are unbiased for p^k and
1 − (1 − p)^k, as C(c, k)/C(n, k) is for a perfect judge (they are those at x = 1, y = 0), but
their variance multiplies with every reading (50 tasks × 5 attempts × 3 turns at TPR 0.90, TNR
0.85: the suite's mean has a standard deviation of 2.5): the figures reported are posterior
means. A truly fully correct attempt is judged so with probability TPR^m; one with j of m turns
wrong, TPR^(m − j)(1 − TNR)^j (`observed_success`).

Identifiability: J ≤ 0 is refused (`check_identifiable`): at J = 0 the readings do not depend on
the truth, and below it the judge is worse than chance; so is a calibration that leaves more than
`MAX_UNIDENTIFIED` of its posterior at J ≤ 0. The Rogan–Gladen rate may leave [0, 1]: it is
clipped, and the clipping reported. With TPR and TNR measured n of n the judge is read as exact
and `correct_suite` returns today's figures ("identity": a special case, since no posterior of
TPR and TNR that is not a point mass gives them exactly).

The posterior. TPR ~ Beta(s + ½, n − s + ½) (Jeffreys), TNR alike, independent, conditioned on
J > 0. A task's attempts fall into C reading patterns (a failed check, or (s, m − s)); their
frequencies ~ Dirichlet(counts + 1/C) (prior mass one attempt), independently across tasks and of
TPR / TNR. At each of `draws` seeded judge draws, a task's rate Σ frequency × weight is drawn from
the normal with its exact Dirichlet mean and variance (`rate_draws`: moment matching, one normal
variate where the Dirichlet takes C gamma variates; the two give the same coverage within the
benchmark's error), clipped to [0, 1] (`clipped_draws` reports how often), hence each task's p^k
and the suite's mean of them. Reported: posterior means, and equal-tailed quantiles as bounds.
Monte Carlo error: a bound is an empirical quantile of N draws, and the empirical CDF at the true
quantile has the standard error √(t(1 − t)/N), t the tail: at 4,000 draws and 95 %, each tail's
level is 2.5 % ± 0.49 points (two standard errors, `monte_carlo_error`); a posterior mean of
values in [0, 1] has a standard error below 0.5/√N ≈ 0.008.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fair_forge_core import stats
from fair_forge_core.metrics import per_task_figures
from fair_forge_core.schemas import (
    CorrectedCurvePoint,
    CorrectedTask,
    Counts,
    JudgeCorrected,
    JudgeErrorInput,
)

DEFAULT_DRAWS = 4_000
"""Joint posterior draws: each bound's tail level within ±0.49 points at 95 % (2 s.e.); the
correction then costs about 5 % of an offline `evaluate` of 50 tasks × 5 attempts × 3 turns
(benchmarks/RESULTS.md), where 10,000 cost about 11 %."""
DEFAULT_SEED = 0
MAX_UNIDENTIFIED = 1e-3
"""Refuse when the posterior puts more than this on TPR + TNR ≤ 1 (the judge may be no better than chance)."""

CALIBRATION_PRIOR = 0.5
"""TPR and TNR each have the posterior Beta(s + ½, n − s + ½): Jeffreys' prior."""
PATTERN_PRIOR = 1.0
"""The Dirichlet prior's total mass (one pseudo-attempt), spread evenly over a task's reading patterns."""

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class JudgedAttempt:
    """What the correction reads of one scored attempt: whether every deterministic check passed,
    and how many of its judged turns the judge said were correct, of how many were judged."""

    deterministic_passed: bool
    judged_correct: int
    judged_turns: int

    def signature(self, level: str) -> tuple[int, int] | None:
        """(s, u): turns judged correct and incorrect (None: a deterministic check failed). At level
        "conversation" the attempt is one reading: (1, 0) if every turn was judged correct, else (0, 1)."""
        if not self.deterministic_passed:
            return None
        if level == "conversation" and self.judged_turns:
            return (1, 0) if self.judged_correct == self.judged_turns else (0, 1)
        return self.judged_correct, self.judged_turns - self.judged_correct


def check_identifiable(tpr: Counts, tnr: Counts) -> None:
    """ValueError, saying why, unless the measured TPR + TNR > 1 and the posterior puts at most
    `MAX_UNIDENTIFIED` on TPR + TNR ≤ 1 (`unidentified_mass`)."""
    total = tpr.rate + tnr.rate
    if total <= 1.0:
        raise ValueError(
            f"the judge's error cannot be corrected: TPR + TNR = {tpr.successes}/{tpr.n} + {tnr.successes}/{tnr.n}"
            f" = {total:.4f} ≤ 1, so its verdicts carry no information on the truth (J = TPR + TNR − 1 ≤ 0)"
        )
    mass = unidentified_mass(tpr, tnr)
    if mass > MAX_UNIDENTIFIED:
        raise ValueError(
            f"the calibration set is too small to tell the judge from chance: P(TPR + TNR ≤ 1) = {mass:.2g}"
            f" under the posterior of TPR {tpr.successes}/{tpr.n} and TNR {tnr.successes}/{tnr.n} (at most"
            f" {MAX_UNIDENTIFIED:g} allowed); label more answers"
        )


def unidentified_mass(tpr: Counts, tnr: Counts) -> float:
    """P(TPR + TNR ≤ 1) under the posteriors TPR ~ Beta(s + ½, n − s + ½) and TNR likewise
    (`posterior_draws`): ∫ f_TPR(t) F_TNR(1 − t) dt, by adaptive quadrature (scipy's `quad`,
    absolute error 1e-12)."""
    from scipy.integrate import quad
    from scipy.special import betainc, betaln

    a1, b1 = tpr.successes + CALIBRATION_PRIOR, tpr.n - tpr.successes + CALIBRATION_PRIOR
    a2, b2 = tnr.successes + CALIBRATION_PRIOR, tnr.n - tnr.successes + CALIBRATION_PRIOR
    log_norm = float(betaln(a1, b1))

    def integrand(t: float) -> float:
        if t <= 0.0 or t >= 1.0:
            return 0.0
        density = math.exp((a1 - 1) * math.log(t) + (b1 - 1) * math.log1p(-t) - log_norm)
        return density * float(betainc(a2, b2, 1.0 - t))

    # Around TPR's posterior mean: a peaked density (thousands of labels) is not stepped over.
    mean, spread = a1 / (a1 + b1), math.sqrt(a1 * b1 / ((a1 + b1) ** 2 * (a1 + b1 + 1)))
    marks = sorted({min(max(mean + d * spread, 1e-9), 1 - 1e-9) for d in (-6.0, -3.0, 0.0, 3.0, 6.0)})
    value, _ = quad(integrand, 0.0, 1.0, points=marks, epsabs=1e-12, limit=200)
    return min(max(float(value), 0.0), 1.0)


def reading_weights(tpr: float, tnr: float) -> tuple[float, float]:
    """(x, y) = (TNR/J, −(1 − TNR)/J), J = TPR + TNR − 1: the weights of a turn judged correct and
    judged incorrect in `attempt_weight`. ValueError when J ≤ 0."""
    if tpr + tnr - 1.0 <= 0.0:
        raise ValueError(f"TPR + TNR = {tpr + tnr} ≤ 1: the model is not identifiable")
    x, y = _inverse_row(np.array([tpr]), np.array([tnr]))
    return float(x[0]), float(y[0])


def _inverse_row(tpr: Floats, tnr: Floats) -> tuple[Floats, Floats]:
    """The row "truly correct" of the inverse of [[TNR, 1 − TPR], [1 − TNR, TPR]], elementwise."""
    j = tpr + tnr - 1.0
    return tnr / j, -(1.0 - tnr) / j


def attempt_weight(attempt: JudgedAttempt, tpr: float, tnr: float, level: str = "turn") -> float:
    """The unbiased reading of an attempt's truth: 0 if a deterministic check failed, else x^s·y^u
    (`reading_weights`). 1 for a passed attempt with no judged turn; at TPR = TNR = 1, 1 exactly
    when every judged turn was judged correct, else 0."""
    signature = attempt.signature(level)
    if signature is None:
        return 0.0
    x, y = reading_weights(tpr, tnr)
    return float(x ** signature[0] * y ** signature[1])


def observed_success(true_turns: Sequence[bool], tpr: float, tnr: float) -> float:
    """P(an attempt whose deterministic checks passed is judged fully correct | its turns' truth):
    ∏ TPR over the truly correct turns × ∏ (1 − TNR) over the others (TPR^m when all m are)."""
    return math.prod(tpr if truth else 1.0 - tnr for truth in true_turns)


def elementary_symmetric(weights: Sequence[float] | Floats, k: int) -> Floats:
    """e_k of the rows of `weights` (shape (n,) or (n, draws)): Σ over k-subsets of attempts of
    the product of their weights, by the recurrence e_j ← e_j + w·e_(j−1) (no subsets formed).
    0 when k > n."""
    w = np.asarray(weights, dtype=np.float64)
    e = [np.ones(w.shape[1:])] + [np.zeros(w.shape[1:]) for _ in range(k)]
    for row in w:
        for j in range(k, 0, -1):
            e[j] = e[j] + row * e[j - 1]
    return e[k]


def corrected_pass_pow_k(weights: Sequence[float] | Floats, k: int) -> Floats:
    """e_k(w)/C(n, k): unbiased for p^k (C(c, k)/C(n, k) when every w is 0 or 1). Needs k ≤ n."""
    return elementary_symmetric(weights, k) / math.comb(len(weights), k)


def corrected_pass_at_k(weights: Sequence[float] | Floats, k: int) -> Floats:
    """1 − e_k(1 − w)/C(n, k): unbiased for 1 − (1 − p)^k. Needs k ≤ n."""
    return 1.0 - elementary_symmetric(1.0 - np.asarray(weights, dtype=np.float64), k) / math.comb(len(weights), k)


def posterior_draws(counts: Counts, draws: int, rng: np.random.Generator) -> Floats:
    """`draws` values of the posterior Beta(s + CALIBRATION_PRIOR, n − s + CALIBRATION_PRIOR)."""
    s, f = counts.successes, counts.n - counts.successes
    return rng.beta(s + CALIBRATION_PRIOR, f + CALIBRATION_PRIOR, size=draws)


def _judge_draws(tpr: Counts, tnr: Counts, draws: int, seed: int) -> tuple[Floats, Floats]:
    """(x, y) per posterior draw, conditioned on J > 0 by drawing again where J ≤ 0 (at most
    `MAX_UNIDENTIFIED` of the mass, `check_identifiable`)."""
    rng = np.random.default_rng(seed)
    a, b = posterior_draws(tpr, draws, rng), posterior_draws(tnr, draws, rng)
    for _ in range(100):
        bad = a + b <= 1.0
        if not bad.any():
            break
        a[bad], b[bad] = posterior_draws(tpr, int(bad.sum()), rng), posterior_draws(tnr, int(bad.sum()), rng)
    return _inverse_row(a, b)


def _weights(signatures: Sequence[tuple[int, int] | None], x: Floats, y: Floats) -> Floats:
    return np.array([np.zeros_like(x) if sig is None else x ** sig[0] * y ** sig[1] for sig in signatures])


def _cells(signatures: Sequence[tuple[int, int] | None]) -> tuple[tuple[int, int] | None, ...]:
    """A task's possible reading patterns: a failed check, and (s, m − s) for every s ≤ m of each
    number m of judged turns its passed attempts had."""
    sizes = {sum(sig) for sig in signatures if sig is not None} or {0}
    return (None, *((s, m - s) for m in sorted(sizes) for s in range(m + 1)))


def rate_draws(
    signatures: Sequence[tuple[int, int] | None],
    cells: Sequence[tuple[int, int] | None],
    weights: tuple[Floats, Floats],
    rng: np.random.Generator,
) -> tuple[Floats, float]:
    """Posterior draws of one task's true per-attempt rate, clipped to [0, 1], and the share of
    them clipped. `cells` are its reading patterns (`_cells`), `weights` their weights at each
    judge draw (`_weights`, shape (C, draws)) and the weights' squares. The patterns' frequencies π ~ Dirichlet(α = counts +
    PATTERN_PRIOR/C); at the d-th judge draw the rate π·w_d has the mean μ = α·w/α₀ and the
    variance (α·w²/α₀ − μ²)/(α₀ + 1) (the Dirichlet's first two moments, exact), and is drawn from
    the normal with those moments: one standard normal a draw, where drawing π itself costs C
    gamma variates, and made the correction cost more than the evaluation it corrects."""
    counts = Counter(signatures)
    alpha = np.array([counts[cell] + PATTERN_PRIOR / len(cells) for cell in cells])
    total = float(alpha.sum())
    mean = alpha @ weights[0] / total
    variance = (alpha @ weights[1] / total - mean * mean) / (total + 1.0)
    rates = rng.standard_normal(mean.shape)
    rates *= np.sqrt(np.maximum(variance, 0.0, out=variance), out=variance)
    rates += mean
    outside = np.count_nonzero((rates < 0.0) | (rates > 1.0)) / rates.shape[0]
    return np.clip(rates, 0.0, 1.0, out=rates), outside


def task_rate_draws(
    tasks: Mapping[str, Sequence[JudgedAttempt]], judge_error: JudgeErrorInput, draws: int, seed: int, stream: int
) -> dict[str, Floats]:
    """Each task's `draws` posterior draws of its true per-attempt rate (`rate_draws`), in `tasks`'
    order: the d-th of every task at the d-th judge draw of `_judge_draws(…, seed)` (one shared
    unknown judge), the tasks' noise from default_rng([seed, stream]); at stream 1 exactly
    `correct_suite`'s draws at that seed. Two suites at one seed and one calibration share their
    judge draws (common random numbers) and, at two streams, not their tasks' noise. With TPR and TNR
    both n of n the judge is exact: x = 1, y = 0 at every draw. `check_identifiable`'s ValueError."""
    tpr, tnr = judge_error.tpr, judge_error.tnr
    if tpr.successes == tpr.n and tnr.successes == tnr.n:
        x, y = np.ones(draws), np.zeros(draws)
    else:
        check_identifiable(tpr, tnr)
        x, y = _judge_draws(tpr, tnr, draws, seed)
    rng, found = np.random.default_rng([seed, stream]), {}
    cached: dict[tuple[tuple[int, int] | None, ...], tuple[Floats, Floats]] = {}  # by reading patterns
    for name, attempts in tasks.items():
        signatures = [a.signature(judge_error.level) for a in attempts]
        cells = _cells(signatures)
        if cells not in cached:
            weights = _weights(cells, x, y)
            cached[cells] = weights, weights * weights
        found[name] = rate_draws(signatures, cells, cached[cells], rng)[0]
    return found


def _quantiles(values: Floats, level: float) -> tuple[float, float]:
    """The equal-tailed quantiles at `level`, linear between order statistics (numpy's default
    method; by hand, since `np.quantile`'s overhead on 4,000 draws is most of its cost)."""
    ordered = np.sort(values)
    return _interpolated(ordered, (1.0 - level) / 2.0), _interpolated(ordered, (1.0 + level) / 2.0)


def _interpolated(ordered: Floats, q: float) -> float:
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return float(ordered[below] + (position - below) * (ordered[above] - ordered[below]))


def _clip(value: float) -> tuple[float, bool]:
    clipped = min(max(value, 0.0), 1.0)
    return clipped, clipped != value


def correct_suite(
    tasks: Mapping[str, Sequence[JudgedAttempt]],
    k: int,
    judge_error: JudgeErrorInput,
    ci_level: float = 0.95,
    draws: int = DEFAULT_DRAWS,
    seed: int = DEFAULT_SEED,
) -> JudgeCorrected:
    """Each task's corrected rate, pass@k and pass^k, and the suite's means over the tasks with
    ≥ k attempts, with equal-tailed intervals at `ci_level` (module docstring).

    A task's rate is the Rogan–Gladen estimate, clipped to [0, 1] (reported); its pass@k / pass^k
    and the suite's are posterior means, E[1 − (1 − p)^k] and E[p^k] (E of the mean over tasks for
    the suite), bounds the posterior quantiles. With TPR and TNR both n of n the judge is exact and
    the figures are today's (per task c/n with its Clopper–Pearson interval, C(c, k)/C(n, k), the
    suite's mean an exact fraction correctly rounded, Wilson over tasks). ValueError when the model
    is not identifiable (`check_identifiable`), k < 1, a task has no attempt, 0 < ci_level < 1 fails
    or draws < 100. The same input and seed always give the same figures."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not 0.0 < ci_level < 1.0 or draws < 100:
        raise ValueError(f"need 0 < ci_level < 1 and at least 100 draws, got {ci_level} and {draws}")
    empty = [name for name, attempts in tasks.items() if not attempts]
    if empty:
        raise ValueError(f"task {empty[0]!r} has no attempt")
    tpr, tnr = judge_error.tpr, judge_error.tnr
    check_identifiable(tpr, tnr)
    signatures = [[a.signature(judge_error.level) for a in attempts] for attempts in tasks.values()]
    exact = tpr.successes == tpr.n and tnr.successes == tnr.n
    tail = (1.0 - ci_level) / 2.0
    if exact:
        reports = [_identity_task(name, sigs, k, ci_level) for name, sigs in zip(tasks, signatures, strict=True)]
        suite = _identity_suite(reports, k, ci_level)
    else:
        reports, curve = _posterior(signatures, list(tasks), k, ci_level, judge_error, draws, seed)
        suite = curve[k - 1].model_dump(exclude={"k"}) if curve else dict(_NO_SUITE)
    return JudgeCorrected(
        judge=judge_error.judge,
        level=judge_error.level,
        k=k,
        ci_level=ci_level,
        tpr=tpr,
        tnr=tnr,
        calibration_labels=tpr.n + tnr.n,
        source=judge_error.source,
        method="identity" if exact else "monte_carlo",
        interval_method="task_wilson" if exact else "posterior",
        draws=None if exact else draws,
        seed=None if exact else seed,
        # A quantile of N draws: the CDF there has the standard error √(tail(1 − tail)/N); two of them.
        monte_carlo_error=None if exact else 2.0 * math.sqrt(tail * (1.0 - tail) / draws),
        tasks=len(reports),
        tasks_with_k_attempts=sum(1 for sigs in signatures if len(sigs) >= k),
        clipped_tasks=[r.task for r in reports if r.rate_clipped],
        per_task=reports,
        curve=[] if exact else curve,
        **suite,
    )


def _identity_task(name: str, signatures: Sequence[tuple[int, int] | None], k: int, level: float) -> CorrectedTask:
    """Today's figures of one task: c/n, Clopper–Pearson, the unbiased estimators."""
    n = len(signatures)
    c = sum(1 for sig in signatures if sig is not None and sig[1] == 0)  # every judged turn judged correct
    low, high = stats.clopper_pearson_interval(n, c, level)
    return CorrectedTask(
        task=name,
        attempts=n,
        correct=c,
        rate=c / n,
        rate_raw=c / n,
        rate_clipped=False,
        clipped_draws=0.0,
        rate_ci_low=low,
        rate_ci_high=high,
        pass_at_k=stats.pass_at_k_unbiased(n, c, k),
        pass_pow_k=stats.pass_pow_k_unbiased(n, c, k),
        pass_at_k_ci_low=stats.at_least_one_of(low, k),
        pass_at_k_ci_high=stats.at_least_one_of(high, k),
        pass_pow_k_ci_low=low**k,
        pass_pow_k_ci_high=high**k,
    )


def _posterior(
    signatures: Sequence[Sequence[tuple[int, int] | None]],
    names: Sequence[str],
    k: int,
    level: float,
    judge_error: JudgeErrorInput,
    draws: int,
    seed: int,
) -> tuple[list[CorrectedTask], list[CorrectedCurvePoint]]:
    """Every task's report (`_corrected_task`) and the suite's curve over the tasks with ≥ k
    attempts, K = 1 … max(k, 10) (`_posterior_suite`; its point at k is the suite's figures),
    from `draws` joint draws: the d-th judge draw (x_d, y_d) is shared by every task, so the
    tasks' d-th draws, independent given it, sum to one draw of the suite. One task at a time:
    its arrays stay in the cache, where the whole (tasks × draws) matrix would not."""
    x, y = _judge_draws(judge_error.tpr, judge_error.tnr, draws, seed)
    point = reading_weights(judge_error.tpr.rate, judge_error.tnr.rate)
    rng = np.random.default_rng([seed, 1])
    pattern_weights: dict[tuple[tuple[int, int] | None, ...], tuple[Floats, Floats]] = {}
    points = max(k, stats.CURVE_MIN_K)
    powers, counted = np.zeros((points, 2, draws)), 0  # Σ over the tasks of (p^K, (1 − p)^K)
    reports = []
    for name, task in zip(names, signatures, strict=True):
        cells = _cells(task)
        if cells not in pattern_weights:
            weights = _weights(cells, x, y)
            pattern_weights[cells] = weights, weights * weights
        rates, outside = rate_draws(task, cells, pattern_weights[cells], rng)
        pass_pow_k = pass_at_k = math.nan  # not reported below k attempts (`_corrected_task`)
        if len(task) >= k:  # p^K and (1 − p)^K at every K, both in one array: half the numpy calls
            counted += 1
            base = np.stack((rates, 1.0 - rates))
            power = base.copy()
            for index in range(points):
                powers[index] += power
                if index == k - 1:
                    pass_pow_k, pass_at_k = float(power[0].mean()), 1.0 - float(power[1].mean())
                power *= base
        posterior = (*_quantiles(rates, level), outside, pass_pow_k, pass_at_k)
        reports.append(_corrected_task(name, task, k, point, posterior))
    curve = [
        _posterior_suite(index + 1, powers[index, 0] / counted, 1.0 - powers[index, 1] / counted, level)
        for index in range(points if counted else 0)
    ]
    return reports, curve


def _corrected_task(
    name: str,
    signatures: Sequence[tuple[int, int] | None],
    k: int,
    point: tuple[float, float],
    posterior: tuple[float, float, float, float, float],
) -> CorrectedTask:
    """One task: Rogan–Gladen at the measured TPR / TNR (`point`: its (x, y)); from the
    posterior, the rate's quantiles, the share of draws clipped and the means of p^k and
    1 − (1 − p)^k (None below k attempts)."""
    x, y = point
    raw = math.fsum(0.0 if sig is None else x ** sig[0] * y ** sig[1] for sig in signatures) / len(signatures)
    rate, rate_clipped = _clip(raw)
    low, high, clipped_share, pass_pow_k, pass_at_k = posterior
    enough = len(signatures) >= k
    return CorrectedTask(
        task=name,
        attempts=len(signatures),
        correct=None,
        rate=rate,
        rate_raw=raw,
        rate_clipped=rate_clipped,
        clipped_draws=clipped_share,
        rate_ci_low=low,
        rate_ci_high=high,
        pass_at_k=pass_at_k if enough else None,
        pass_pow_k=pass_pow_k if enough else None,
        pass_at_k_ci_low=stats.at_least_one_of(low, k),
        pass_at_k_ci_high=stats.at_least_one_of(high, k),
        pass_pow_k_ci_low=low**k,
        pass_pow_k_ci_high=high**k,
    )


_NO_SUITE: dict[str, float | None] = {
    "pass_at_k": None,
    "pass_pow_k": None,
    "pass_at_k_ci_low": None,
    "pass_at_k_ci_high": None,
    "pass_pow_k_ci_low": None,
    "pass_pow_k_ci_high": None,
}


def _identity_suite(reports: list[CorrectedTask], k: int, level: float) -> dict[str, float | None]:
    """Today's `per_task` figures (`metrics.per_task_metrics`): the exact means, Wilson over tasks."""
    outcomes = Counter((r.attempts, r.correct or 0) for r in reports if r.attempts >= k)
    figures = per_task_figures(outcomes, k, level)
    return dict(_NO_SUITE) if figures is None else {**figures}


def _posterior_suite(k: int, pow_k: Floats, at_k: Floats, level: float) -> CorrectedCurvePoint:
    """The suite's figures at k from the draws of its mean over the tasks of p^k and of
    1 − (1 − p)^k: their means and quantiles."""
    (at_low, at_high), (pow_low, pow_high) = _quantiles(at_k, level), _quantiles(pow_k, level)
    return CorrectedCurvePoint(
        k=k,
        pass_at_k=float(at_k.mean()),
        pass_pow_k=float(pow_k.mean()),
        pass_at_k_ci_low=at_low,
        pass_at_k_ci_high=at_high,
        pass_pow_k_ci_low=pow_low,
        pass_pow_k_ci_high=pow_high,
    )
