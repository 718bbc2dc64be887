"""Adaptive attempts (issue #35 item 4): the confidence sequence's decisions against fixed 20 attempts.

A suite of 50 tasks, each with its own per-attempt success rate p ~ Beta(4, 1); the question
`pass_pow_k>=0.8` at k = 5, so the boundary is p* = 0.8^(1/5) ≈ 0.9564. No agent: an attempt is a
Bernoulli(p) draw. Each task draws one sequence of 20 outcomes; **fixed 20** reads all of them,
the **adaptive** run reads them in order through the real planner (`adaptive.next_round`,
`max_attempts` 20, `round_size` 1, its defaults: α = 0.05, prior Beta(1, 1), futility 0.01), so
the two differ only in when they stop.

- (a) "fixed 20 decides confidently" means the same confidence sequence at 20 attempts excludes
  p* (`task_report(S20, F20)` is `above` or `below`); the adaptive run agrees on a task when it
  decided the same side. Beside it, for information: the classical fixed-n reading (the exact
  two-sided Clopper–Pearson interval at α excludes p*), and the adaptive run on a second,
  independent sequence of the same task against two independent fixed-20 runs.
- (b) attempts used by the adaptive run against 50 × 20.
- (c) a task exactly on the boundary (p = p*), 2,000 runs: any decision is on the wrong side
  (p* is neither above nor below itself), counted under the planner above and, the worst case of
  continuous monitoring, read after every attempt up to 1,000 attempts with no futility stop.
- (d) the bounds of every state (S, F) the suites reach, and a grid up to 2,000 attempts, against
  an independent computation with mpmath at 50 digits (its own Beta function and root finder).

Seeded: the same run prints the same figures. `--suites` repeats (a) and (b) over more suites.

    python -m benchmarks.bench_adaptive
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks.common import header, verdict
from fair_forge_core import adaptive
from fair_forge_core.schemas import AdaptiveTask

TASKS, FIXED, K, QUESTION = 50, 20, 5, "pass_pow_k>=0.8"
POPULATION = (4.0, 1.0)
BOUNDARY_RUNS, LONG_HORIZON = 2000, 1000
SEED = 35


PLAN = {"round_size": 1, "futility": adaptive.DEFAULT_FUTILITY, "prior": adaptive.DEFAULT_PRIOR}
"""The adaptive run's settings; `--round-size`, `--futility` and `--prior` change them."""


def fixed_decision(successes: int, boundary: float) -> str:
    """The same confidence sequence read once, at 20 attempts."""
    return adaptive.task_report(successes, FIXED - successes, boundary, prior=PLAN["prior"]).decided


def clopper_pearson_decision(successes: int, boundary: float, alpha: float = adaptive.DEFAULT_LEVEL) -> str:
    """The classical fixed-n decision: the exact two-sided interval at α excludes p*."""
    from scipy.stats import beta

    failures = FIXED - successes
    low = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, failures + 1))
    high = 1.0 if failures == 0 else float(beta.ppf(1 - alpha / 2, successes + 1, failures))
    return adaptive.decide(low, high, boundary)


def run_adaptive(outcomes: np.ndarray, boundary: float) -> list[AdaptiveTask]:
    """The planner's run over a suite: `outcomes[t]` is task t's sequence, read in order."""
    prior = PLAN["prior"]
    reports = {t: adaptive.task_report(0, 0, boundary, prior=prior) for t in range(len(outcomes))}
    while plan := adaptive.next_round(
        reports, max_attempts=FIXED, round_size=PLAN["round_size"], futility=PLAN["futility"]
    ):
        for t, more in plan.items():
            n = reports[t].attempts + more
            successes = int(outcomes[t, :n].sum())
            reports[t] = adaptive.task_report(successes, n - successes, boundary, prior=prior)
    return [reports[t] for t in range(len(outcomes))]


def suites(count: int, boundary: float) -> dict[str, float]:
    rng = np.random.default_rng(SEED)
    agree = confident = used = 0
    savings = []
    cp_agree = cp_confident = indep_agree = twin_agree = 0
    for _ in range(count):
        p = rng.beta(*POPULATION, size=TASKS)
        first = rng.random((TASKS, FIXED)) < p[:, None]
        second = rng.random((TASKS, FIXED)) < p[:, None]
        reports = run_adaptive(first, boundary)
        second_reports = run_adaptive(second, boundary)
        used += sum(report.attempts for report in reports)
        savings.append(1 - sum(report.attempts for report in reports) / (TASKS * FIXED))
        for t, report in enumerate(reports):
            fixed = fixed_decision(int(first[t].sum()), boundary)
            if fixed != "undecided":
                confident += 1
                agree += report.decided == fixed
                indep_agree += second_reports[t].decided == fixed
                twin_agree += fixed_decision(int(second[t].sum()), boundary) == fixed
            classical = clopper_pearson_decision(int(first[t].sum()), boundary)
            if classical != "undecided":
                cp_confident += 1
                cp_agree += report.decided == classical
    return {
        "confident": confident / (count * TASKS),
        "agree": agree / confident,
        "saving": 1 - used / (count * TASKS * FIXED),
        "saving_min": min(savings),
        "saving_max": max(savings),
        "cp_confident": cp_confident / (count * TASKS),
        "cp_agree": cp_agree / cp_confident,
        "indep_agree": indep_agree / confident,
        "twin_agree": twin_agree / confident,
    }


def boundary_planner(boundary: float) -> float:
    """Share of runs of a task with p = p* that the planner (as in (a), (b)) decides either way."""
    rng = np.random.default_rng(SEED + 1)
    outcomes = rng.random((BOUNDARY_RUNS, FIXED)) < boundary
    decided = 0
    for start in range(0, BOUNDARY_RUNS, TASKS):  # in suites of 50, as a run would plan them
        decided += sum(r.decided != "undecided" for r in run_adaptive(outcomes[start : start + TASKS], boundary))
    return decided / BOUNDARY_RUNS


def excluded_table(horizon: int, boundary: float) -> np.ndarray:
    """excluded[n, S]: p* is outside CS_n at S successes of n (log M_n(p*) ≥ log(1/α)), vectorised
    (scipy's gammaln); checked against `task_report` on every state up to 150 attempts."""
    from scipy.special import gammaln

    a, b = PLAN["prior"]
    n = np.arange(horizon + 1)[:, None]
    s = np.arange(horizon + 1)[None, :]
    f = n - s
    with np.errstate(invalid="ignore"):
        log_m = (gammaln(a + s) + gammaln(b + f) - gammaln(a + b + n) - (gammaln(a) + gammaln(b) - gammaln(a + b))) - (
            s * math.log(boundary) + f * math.log1p(-boundary)
        )
    table = (f >= 0) & (log_m >= -math.log(adaptive.DEFAULT_LEVEL))
    mismatches = [
        (size, wins)
        for size in range(1, 151)
        for wins in range(size + 1)
        if bool(table[size, wins])
        != (adaptive.task_report(wins, size - wins, boundary, prior=PLAN["prior"]).decided != "undecided")
    ]
    assert not mismatches, f"the vectorised table disagrees with task_report at {mismatches[:5]}"
    return table


def boundary_monitoring(boundary: float) -> float:
    """Share of 2,000 runs with p = p*, read after every attempt up to LONG_HORIZON, ever decided."""
    table = excluded_table(LONG_HORIZON, boundary)
    rng = np.random.default_rng(SEED + 2)
    wins = np.cumsum(rng.random((BOUNDARY_RUNS, LONG_HORIZON)) < boundary, axis=1)
    counts = np.arange(1, LONG_HORIZON + 1)
    ever = table[counts[None, :], wins].any(axis=1)
    return float(ever.mean())


def mpmath_bounds(successes: int, failures: int) -> tuple[float, float]:
    """The confidence sequence's ends, independently: mpmath's Beta function and root finder, 50 digits."""
    import mpmath

    mpmath.mp.dps = 50
    a, b = (mpmath.mpf(v) for v in PLAN["prior"])
    limit = mpmath.log(1 / mpmath.mpf(adaptive.DEFAULT_LEVEL))
    marginal = mpmath.log(mpmath.beta(a + successes, b + failures) / mpmath.beta(a, b))

    def g(p: mpmath.mpf) -> mpmath.mpf:
        return marginal - successes * mpmath.log(p) - failures * mpmath.log(1 - p) - limit

    n = successes + failures
    if n == 0:
        return 0.0, 1.0
    centre = mpmath.mpf(successes) / n
    tiny = mpmath.mpf(10) ** -40
    lower = 0.0 if successes == 0 else float(mpmath.findroot(g, (tiny, centre), solver="anderson"))
    upper = 1.0 if failures == 0 else float(mpmath.findroot(g, (centre, 1 - tiny), solver="anderson"))
    return lower, upper


def bounds_difference() -> tuple[float, int]:
    """The largest |ours − mpmath's| over every state up to 20 attempts and a grid up to 2,000."""
    states = {(s, n - s) for n in range(FIXED + 1) for s in range(n + 1)}
    states |= {(s, f) for s in (0, 1, 3, 10, 50, 200, 1000) for f in (0, 1, 2, 7, 30, 150, 1000)}
    worst = 0.0
    for successes, failures in sorted(states):
        ours = adaptive.confidence_sequence(successes, failures, prior=PLAN["prior"])
        theirs = mpmath_bounds(successes, failures)
        worst = max(worst, abs(ours[0] - theirs[0]), abs(ours[1] - theirs[1]))
    return worst, len(states)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=int, default=200, help="suites of 50 tasks for (a) and (b)")
    parser.add_argument("--round-size", type=int, default=1)
    parser.add_argument("--futility", type=float, default=adaptive.DEFAULT_FUTILITY)
    parser.add_argument("--prior", type=float, nargs=2, default=adaptive.DEFAULT_PRIOR)
    args = parser.parse_args()
    PLAN.update(round_size=args.round_size, futility=args.futility, prior=tuple(args.prior))
    header("adaptive attempts (issue #35 item 4)")
    started = time.perf_counter()
    boundary = adaptive.parse_question(QUESTION, K).boundary
    print(
        f"   {QUESTION} at k = {K}: boundary p* = {boundary:.6f}; tasks' p ~ Beta{POPULATION};"
        f" {args.suites} suites;"
        f" round_size {PLAN['round_size']}, futility {PLAN['futility']}, prior Beta{PLAN['prior']}"
    )
    figures = suites(args.suites, boundary)
    print(f"   fixed 20 decides confidently (same CS at 20): {figures['confident']:.1%} of tasks")
    print(verdict(figures["agree"] >= 0.98, f"(a) adaptive agrees on {figures['agree']:.2%} of them (bar ≥ 98 %)"))
    print(
        f"      for information: Clopper–Pearson at 20 decides {figures['cp_confident']:.1%} of tasks, adaptive agrees"
        f" on {figures['cp_agree']:.2%}; on independent attempts adaptive agrees on {figures['indep_agree']:.2%},"
        f" two independent fixed-20 runs on {figures['twin_agree']:.2%}"
    )
    print(verdict(figures["saving"] >= 0.40, f"(b) adaptive uses {figures['saving']:.1%} fewer attempts (bar ≥ 40 %)"))
    print(f"      per suite of 50 tasks: {figures['saving_min']:.1%} to {figures['saving_max']:.1%}")
    planned = boundary_planner(boundary)
    print(verdict(planned <= 0.05, f"(c) p = p*, {BOUNDARY_RUNS} runs, the planner: {planned:.2%} decided (bar ≤ 5 %)"))
    monitored = boundary_monitoring(boundary)
    print(
        verdict(
            monitored <= 0.05,
            f"(c) p = p*, {BOUNDARY_RUNS} runs, read after every attempt to {LONG_HORIZON}: {monitored:.2%} ever"
            " decided (bar ≤ 5 %)",
        )
    )
    worst, count = bounds_difference()
    print(
        verdict(
            worst <= 1e-9, f"(d) bounds against mpmath, {count} states: largest difference {worst:.1e} (bar ≤ 1e-9)"
        )
    )
    print(f"   {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
