"""Adaptive attempts (issue #35): an anytime-valid confidence sequence per task, its decision, and
which tasks get more attempts. Pure: no I/O. Docs: docs/statistics.md "Adaptive attempts".

The question. ``'pass_pow_k>=T'`` (with the run's k) or ``'p>=T'`` (``<=`` too) asks whether a
task's per-attempt success rate p clears one **boundary** p*: pass^k = p^k ≥ T ⇔ p ≥ T^(1/k), so
p* = T^(1/k) (`parse_question`). The operator only says which side answers "yes"; the decision is
the same either way.

The confidence sequence (Robbins 1970; Howard, Ramdas, McAuliffe & Sekhon 2021, "Time-uniform,
nonparametric, nonasymptotic confidence sequences", the beta-binomial mixture). After S successes
and F failures, with the prior Beta(a, b),

    M_n(p) = [B(a + S, b + F) / B(a, b)] / [p^S (1 − p)^F]

is the mixture over q ~ Beta(a, b) of the likelihood ratios of q against p: a nonnegative
martingale with M_0 = 1 under the true p. By Ville's inequality P(∃ n: M_n(p) ≥ 1/α) ≤ α, so

    CS_n = {p : M_n(p) < 1/α}

holds the true rate at **every** n at once with probability ≥ 1 − α: the decision may be read
after every attempt, or every round, and attempts stopped whenever it says so, without the level
changing. log M_n(p) is C − S·log p − F·log(1 − p), convex in p with its minimum at S/n, where
M_n ≤ 1 < 1/α (the marginal likelihood is at most the largest likelihood): CS_n is an interval
around S/n, and `confidence_sequence` finds its ends by bisection (log-space, `math.lgamma`).

Defaults: α = 0.05 and the uniform prior Beta(1, 1), with which M_n(p) = 1 / ((n + 1)·C(n, S)·
p^S (1 − p)^F): Robbins' own mixture, with no preference for rates near 0 or 1. Jeffreys'
Beta(1/2, 1/2) weighs the ends more, where pass^k boundaries sit (0.8^(1/5) ≈ 0.956): on the
issue's benchmark it spends fewer attempts (46.8 % fewer than fixed 20, against 42.1 %) but its
predictive stops more tasks that more attempts would have decided (agreement 99.0 %, against
99.7 %); both meet the bars (benchmarks/RESULTS.md "Adaptive attempts").

Not intersected over time. The running intersection ∩_{m≤n} CS_m is a confidence sequence too,
and tighter, but it depends on the order of the attempts, which a round's concurrent attempts do
not have; and it never changes a decision: a task stops the first time CS_n excludes p*, so before
that every CS_m held p* and so did their intersection. Bounds here are a function of (S, F) alone,
so a report is reproducible from its counts.

The planner (`next_round`): every task with no attempts gets `round_size` (the first round); after
it, only an `undecided` task gets more, at most `round_size` and never beyond `max_attempts`; and
not one whose chance of being decided within `max_attempts` is at most `futility` (default 0.01;
`decision_chance`: under the posterior predictive). With `futility=0` a task stops only when no
outcome of its remaining attempts can decide it, which changes no decision; above 0 the planner
may leave undecided a task that more attempts would have decided (it never makes a decision wrong:
stopping undecided decides nothing).

Use (the CLI's ``--until-decided``, ``--max-attempts``)::

    question = parse_question("pass_pow_k>=0.8", k=5)            # question.boundary = 0.8 ** (1/5)
    reports = {task: task_report(0, 0, question.boundary) for task in tasks}
    while plan := next_round(reports, max_attempts=20, round_size=1):
        ...  # run plan[task] more attempts of each task; count their scored successes and failures
        reports[task] = task_report(successes, failures, question.boundary)

A task's `successes` and `failures` are its **scored** attempts (an unscored attempt is neither:
docs/statistics.md "What n and c are"); the caller counts unscored runs against its own budget.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from fair_forge_core.schemas import AdaptiveDecision, AdaptiveTask

DEFAULT_LEVEL = 0.05
"""α: the chance that a task's confidence sequence ever excludes its true rate."""
DEFAULT_PRIOR = (1.0, 1.0)
"""The mixture's Beta(a, b): uniform (the module docstring says why)."""
DEFAULT_FUTILITY = 0.01
"""A task stops undecided once its chance of being decided within `max_attempts` is at most this."""
BOUND_TOLERANCE = 1e-12
"""Bisection stops when the bracket of a bound is this narrow; the outer end is reported."""

Metric = Literal["pass_pow_k", "p"]
Operator = Literal[">=", "<="]

_QUESTION = re.compile(r"\s*(pass_pow_k|p)\s*(>=|<=)\s*((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*")


@dataclass(frozen=True)
class Question:
    """A parsed question: its text, metric, operator, threshold T, the k it was read with, and the
    per-attempt boundary p* (T^(1/k) for pass_pow_k, T for p). `holds_when` is the decision that
    answers "yes": `above` for ``>=``, `below` for ``<=``."""

    text: str
    metric: Metric
    operator: Operator
    threshold: float
    k: int
    boundary: float

    @property
    def holds_when(self) -> AdaptiveDecision:
        return "above" if self.operator == ">=" else "below"


def boundary_rate(threshold: float, k: int) -> float:
    """The per-attempt rate p* with p*^k = threshold: threshold^(1/k), exact at 0 and 1.

    Raises ValueError unless 0 ≤ threshold ≤ 1 and k ≥ 1 (TypeError for a non-int k)."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not 0.0 <= threshold <= 1.0:  # NaN fails this too
        raise ValueError(f"a threshold must be between 0 and 1, got {threshold}")
    if threshold in (0.0, 1.0) or k == 1:
        return float(threshold)
    return math.exp(math.log(threshold) / k)


def parse_question(text: str, k: int) -> Question:
    """Read ``'pass_pow_k>=T'`` or ``'p>=T'`` (``<=`` too; spaces allowed; T a decimal in [0, 1])
    with the run's k. The boundary is T^(1/k) for pass_pow_k (pass^k ≥ T ⇔ p ≥ T^(1/k)) and T for
    p (k then plays no part). T = 0 or 1 is allowed: p* = 0 can only be decided `above` (p > 0:
    once a success is seen often enough), p* = 1 only `below` (one failure suffices in the limit).

    Raises ValueError naming the text for anything else (another metric, ``>``, ``=``, no number,
    T outside [0, 1]), and for k < 1."""
    match = _QUESTION.fullmatch(text)
    if match is None:
        raise ValueError(
            f"cannot read the question {text!r}: expected 'pass_pow_k>=T' or 'p>=T' (or <=), T a number in [0, 1]"
        )
    metric, operator, number = match.groups()
    threshold = float(number)
    if threshold > 1.0:
        raise ValueError(f"cannot read the question {text!r}: the threshold {number} is above 1")
    rate = boundary_rate(threshold, k)  # checks k, whichever the metric
    if metric == "p":
        rate = threshold
    return Question(text, metric, operator, threshold, k, rate)  # type: ignore[arg-type]


def _check(successes: int, failures: int, level: float, prior: tuple[float, float]) -> None:
    for name, value in (("successes", successes), ("failures", failures)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must be at least 0, got {value}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"the level must be between 0 and 1 (exclusive), got {level}")
    if len(prior) != 2 or not all(math.isfinite(v) and v > 0 for v in prior):
        raise ValueError(f"the prior must be two positive numbers, got {prior}")


def _log_beta(x: float, y: float) -> float:
    return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)


def log_mixture(p: float, successes: int, failures: int, prior: tuple[float, float] = DEFAULT_PRIOR) -> float:
    """log M_n(p) = log B(a + S, b + F) − log B(a, b) − S·log p − F·log(1 − p), in [−∞, +∞]:
    +∞ at p = 0 with a success or at p = 1 with a failure (such a p is excluded outright); the
    term of a count of 0 is 0 at every p, endpoints included."""
    a, b = prior
    value = _log_beta(a + successes, b + failures) - _log_beta(a, b)
    if successes:
        value -= successes * math.log(p) if p > 0 else -math.inf
    if failures:
        value -= failures * math.log1p(-p) if p < 1 else -math.inf
    return value


def confidence_sequence(
    successes: int, failures: int, level: float = DEFAULT_LEVEL, prior: tuple[float, float] = DEFAULT_PRIOR
) -> tuple[float, float]:
    """(lower, upper): the ends of CS_n = {p : M_n(p) < 1/level} (module docstring), each by
    bisection on log M_n(p) = log(1/level) to `BOUND_TOLERANCE`, reporting the bracket's outer end
    (the reported interval holds the exact one and exceeds it by less than 1e-12 a side).

    Edge cases: no attempts, [0, 1]; no success, lower = 0 (log M_n(0) = log B(a, b + F)/B(a, b)
    < 0); no failure, upper = 1 likewise. With both, 0 < lower ≤ S/n ≤ upper < 1.
    Raises ValueError for a negative count, a level outside (0, 1) or a non-positive prior
    (TypeError for a non-int count)."""
    _check(successes, failures, level, prior)
    n = successes + failures
    if n == 0:
        return 0.0, 1.0
    centre = successes / n

    def outside(p: float) -> bool:
        return excludes(p, successes, failures, level, prior)

    lower = 0.0 if successes == 0 else _bisect(outside, 0.0, centre)
    upper = 1.0 if failures == 0 else _bisect(outside, 1.0, centre)
    return lower, upper


def _bisect(outside: Callable[[float], bool], excluded: float, included: float) -> float:
    """The end of an interval between `excluded` (outside the set) and `included` (inside):
    halves the bracket until it is `BOUND_TOLERANCE` wide and returns its excluded end, so that
    the reported interval holds the exact one."""
    while abs(included - excluded) > BOUND_TOLERANCE:
        middle = (excluded + included) / 2
        if outside(middle):
            excluded = middle
        else:
            included = middle
    return excluded


def decide(lower: float, upper: float, boundary: float) -> AdaptiveDecision:
    """`above` when lower > boundary, `below` when upper < boundary, else `undecided` (a boundary
    at a bound, or inside, decides nothing). p* = 0 is never `below`, p* = 1 never `above`."""
    if lower > boundary:
        return "above"
    if upper < boundary:
        return "below"
    return "undecided"


def task_report(
    successes: int,
    failures: int,
    boundary: float,
    level: float = DEFAULT_LEVEL,
    prior: tuple[float, float] = DEFAULT_PRIOR,
) -> AdaptiveTask:
    """A task's `AdaptiveTask`: its confidence sequence at (successes, failures) and the decision
    on `boundary` (`decide`). Same errors as `confidence_sequence`; ValueError for a boundary
    outside [0, 1]."""
    if not 0.0 <= boundary <= 1.0:
        raise ValueError(f"the boundary must be between 0 and 1, got {boundary}")
    lower, upper = confidence_sequence(successes, failures, level, prior)
    return AdaptiveTask(
        decided=decide(lower, upper, boundary),
        attempts=successes + failures,
        successes=successes,
        lower=lower,
        upper=upper,
        boundary=boundary,
        level=level,
        prior=prior,
    )


def excludes(p: float, successes: int, failures: int, level: float, prior: tuple[float, float]) -> bool:
    """Whether p lies outside CS_n: log M_n(p) ≥ log(1/level). One evaluation, no bisection: a
    task is decided exactly when its boundary is excluded (CS_n is an interval around S/n), so
    this is `decide`'s rule up to the bounds' 1e-12 tolerance (they agree on every state up to
    150 attempts of the benchmark's boundary: benchmarks/bench_adaptive.py)."""
    return log_mixture(p, successes, failures, prior) >= -math.log(level)


@functools.lru_cache(maxsize=1 << 16)
def _decided(successes: int, failures: int, boundary: float, level: float, prior: tuple[float, float]) -> bool:
    # Cached: the planner asks about the same states for every task of a run.
    return excludes(boundary, successes, failures, level, prior)


def decision_chance(task: AdaptiveTask, max_attempts: int) -> float:
    """The chance that `task`, given attempts one at a time up to `max_attempts`, is decided at
    some count, under the posterior predictive of its own prior (the next attempt succeeds with
    probability (a + S)/(a + b + n), a Pólya urn); exact, by dynamic programming over the states
    (S', F') within the budget, a decided state absorbing. 1 for a decided task; 0 when it has no
    attempts left, and 0 exactly when no outcome of the remaining attempts decides it (every
    probability on the way is positive; a path's product underflows only with hundreds of
    attempts left). It counts a decision at any count, so it is an upper
    bound on the chance when decisions are read only at the end of rounds. A state is decided
    when `excludes` says its boundary is out. Cost O((max_attempts − attempts)²), cached by
    counts: meant for budgets of up to a few hundred attempts."""
    if task.decided != "undecided":
        return 1.0
    return _chance(task.successes, task.attempts, max_attempts, task.boundary, task.level, task.prior)


@functools.lru_cache(maxsize=1 << 16)
def _chance(
    successes: int, attempts: int, max_attempts: int, boundary: float, level: float, prior: tuple[float, float]
) -> float:
    # Cached: in a run every task at the same counts asks the same question.
    a, b = prior
    states = {successes: 1.0}  # successes -> probability, at the current count, undecided
    reached = 0.0
    for n in range(attempts, max_attempts):
        following: dict[int, float] = {}
        for wins, chance in states.items():
            win = (a + wins) / (a + b + n)
            for next_wins, step in ((wins + 1, win), (wins, 1.0 - win)):
                if _decided(next_wins, n + 1 - next_wins, boundary, level, prior):
                    reached += chance * step
                else:
                    following[next_wins] = following.get(next_wins, 0.0) + chance * step
        states = following
    return min(reached, 1.0)


def next_round(
    tasks_state: Mapping[str, AdaptiveTask],
    max_attempts: int,
    round_size: int,
    futility: float = DEFAULT_FUTILITY,
) -> dict[str, int]:
    """How many more attempts each task gets in the next round; a task that gets none is absent,
    so an empty plan means the run is over. A task with no attempts gets `round_size` (the first
    round; capped by `max_attempts`). After it, a task gets min(round_size, max_attempts −
    attempts) when it is `undecided`, has attempts left, and `decision_chance` > `futility`.

    Raises ValueError unless max_attempts ≥ 1, round_size ≥ 1 and 0 ≤ futility < 1."""
    if max_attempts < 1 or round_size < 1:
        raise ValueError(f"max_attempts and round_size must be at least 1, got {max_attempts} and {round_size}")
    if not 0.0 <= futility < 1.0:
        raise ValueError(f"futility must be in [0, 1), got {futility}")
    plan = {}
    for name, task in tasks_state.items():
        left = max_attempts - task.attempts
        if left <= 0 or task.decided != "undecided":
            continue
        if task.attempts == 0 or decision_chance(task, max_attempts) > futility:
            plan[name] = min(round_size, left)
    return plan
