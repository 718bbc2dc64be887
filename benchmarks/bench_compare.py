"""Paired comparison (issue #15): is `fair_forge_core.compare` calibrated? A simulation.

Each scenario runs 1,000 paired experiments. In one experiment every task i gets a
baseline chance p_i ~ Uniform(0.2, 0.95), drawn afresh (tasks differ), and the candidate
the chance p_i + δ on the same task (both sides share its difficulty); each side makes
`attempts` independent attempts per task. The true pass@1 difference — the mean of
p_C − p_B over the population of tasks — is δ exactly. Inside the simulation the bootstrap
draws B = 2,000 resamples (the default is 10,000), seeded by the experiment's number.

Figures and targets:
- coverage of the 95 % bootstrap interval for the pass@1 difference: 93–97 %;
- false `regressed` rate when nothing changed (δ = 0): ≤ 5 %;
- power to call `regressed` at a 10-point drop (δ = −0.10), 50 tasks × 3 attempts: reported,
  at k = 3 (five metrics, Holm-adjusted) and at k = 1 (pass@1 alone);
- one attempt a task (McNemar decides): false `regressed` rate ≤ 5 %;
- small samples, 8 tasks × 3 attempts (the exact sign-flip test decides, below
  `MIN_BOOTSTRAP_TASKS`): false `regressed` rate ≤ 5 % at equal chances, and the power to
  call `regressed` at a large drop (δ = −0.35; a chance below 0 is 0, so the true drop is a
  little smaller), at k = 3 and k = 1; also 5 tasks, where nothing can be tested: the share
  of `not_tested` verdicts (100 %);
- the attempt-level test (issue #33, the default gate: `population="attempts"`; the scenarios
  above are gated by the task-level tests, `population="tasks"`): false `regressed` rate ≤ 5 %
  at 50 tasks × 3 and 8 tasks × 3 when nothing changed, and its power at the same drops;
- the time of one `compare` at the default B = 10,000 on 500 tasks × 5 attempts, and of the
  attempt-level test alone (`stratified_exact_test`) on 1,000 tasks × 5 attempts and 10,000
  tasks × 3 attempts.

    python -m benchmarks.bench_compare [--experiments 1000] [--resamples 2000] [--only small]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np

from benchmarks.common import header, line, verdict
from fair_forge_core.compare import MIN_BOOTSTRAP_TASKS, Outcome, compare
from fair_forge_core.compare.stratified import stratified_exact_test

LOW, HIGH = 0.2, 0.95


@dataclass
class Scenario:
    name: str
    tasks: int
    attempts: int
    delta: float
    k: int
    population: Literal["attempts", "tasks"] = "tasks"


@dataclass
class Figures:
    covered: int = 0
    regressed: int = 0
    improved: int = 0
    not_tested: int = 0
    experiments: int = 0
    seconds: float = 0.0


def experiment(rng: np.random.Generator, scenario: Scenario) -> tuple[list[Outcome], list[Outcome]]:
    """One paired experiment: shared task difficulties, independent attempts per side."""
    chance = rng.uniform(LOW, HIGH, scenario.tasks)
    shape = (scenario.tasks, scenario.attempts)
    base = rng.random(shape) < chance[:, None]
    cand = rng.random(shape) < (chance + scenario.delta)[:, None]
    tasks = [f"t{i}" for i in range(scenario.tasks)]
    return (
        [(tasks[i], bool(x)) for i in range(scenario.tasks) for x in base[i]],
        [(tasks[i], bool(x)) for i in range(scenario.tasks) for x in cand[i]],
    )


def simulate(scenario: Scenario, experiments: int, resamples: int, seed: int) -> Figures:
    rng = np.random.default_rng(seed)
    figures = Figures(experiments=experiments)
    started = time.perf_counter()
    for index in range(experiments):
        base, cand = experiment(rng, scenario)
        result = compare(base, cand, k=scenario.k, resamples=resamples, seed=index, population=scenario.population)
        pass1 = next(m for m in result.metrics if m.metric == "pass@1")
        assert pass1.ci_low is not None and pass1.ci_high is not None
        figures.covered += pass1.ci_low <= scenario.delta <= pass1.ci_high
        figures.regressed += result.verdict == "regressed"
        figures.improved += result.verdict == "improved"
        figures.not_tested += result.verdict == "not_tested"
    figures.seconds = time.perf_counter() - started
    return figures


def stratified_counts(rng: np.random.Generator, tasks: int, attempts: int) -> list[tuple[int, int, int, int]]:
    """(n_b, c_b, n_c, c_c) per task for the timing: chances p_i ~ U(LOW, HIGH), the same on both
    sides (most tasks informative, the convolution at its widest)."""
    chance = rng.uniform(LOW, HIGH, tasks)
    base = rng.binomial(attempts, chance)
    cand = rng.binomial(attempts, chance)
    return [(attempts, int(b), attempts, int(c)) for b, c in zip(base, cand, strict=True)]


def percent(count: int, total: int) -> str:
    return f"{100 * count / total:.1f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--experiments", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--only", choices=["small"], help="run only the small-sample scenarios")
    args = parser.parse_args()
    n, b = args.experiments, args.resamples

    header(f"compare: {n} simulated paired experiments per scenario, bootstrap B = {b}, p_i ~ U({LOW}, {HIGH})")
    scenarios = [
        Scenario("no change, 50 tasks × 3, k = 3", 50, 3, 0.0, 3),
        Scenario("10-point drop, 50 tasks × 3, k = 3", 50, 3, -0.10, 3),
        Scenario("no change, 50 tasks × 3, k = 1", 50, 3, 0.0, 1),
        Scenario("10-point drop, 50 tasks × 3, k = 1", 50, 3, -0.10, 1),
        Scenario("no change, 100 tasks × 1 (McNemar), k = 1", 100, 1, 0.0, 1),
    ]
    # Seeds 2000 + i: the small-sample scenarios draw the same experiments whether run alone or not.
    small = [
        Scenario("no change, 8 tasks × 3 (exact sign-flip), k = 3", 8, 3, 0.0, 3),
        Scenario("35-point drop, 8 tasks × 3 (exact sign-flip), k = 3", 8, 3, -0.35, 3),
        Scenario("no change, 8 tasks × 3 (exact sign-flip), k = 1", 8, 3, 0.0, 1),
        Scenario("35-point drop, 8 tasks × 3 (exact sign-flip), k = 1", 8, 3, -0.35, 1),
        Scenario("35-point drop, 5 tasks × 3 (nothing testable), k = 3", 5, 3, -0.35, 3),
    ]
    attempts = [
        Scenario("attempt-level: no change, 50 tasks × 3", 50, 3, 0.0, 3, "attempts"),
        Scenario("attempt-level: 10-point drop, 50 tasks × 3", 50, 3, -0.10, 3, "attempts"),
        Scenario("attempt-level: no change, 8 tasks × 3", 8, 3, 0.0, 3, "attempts"),
        Scenario("attempt-level: 35-point drop, 8 tasks × 3", 8, 3, -0.35, 3, "attempts"),
        Scenario("attempt-level: 35-point drop, 5 tasks × 3", 5, 3, -0.35, 3, "attempts"),
    ]
    checks: list[tuple[bool, str]] = []
    runs = [(2000 + i, s) for i, s in enumerate(small)]
    if args.only is None:
        runs = [(1000 + i, s) for i, s in enumerate(scenarios)] + runs + [(3000 + i, s) for i, s in enumerate(attempts)]
    for seed, scenario in runs:
        figures = simulate(scenario, n, b, seed=seed)
        coverage = figures.covered / n
        print(f"   {scenario.name}:")
        print(f"      pass@1 difference in its 95 % interval: {percent(figures.covered, n)}")
        undecided = n - figures.regressed - figures.improved - figures.not_tested
        print(
            f"      verdicts: regressed {percent(figures.regressed, n)}, improved {percent(figures.improved, n)}, "
            f"inconclusive {percent(undecided, n)}, not tested {percent(figures.not_tested, n)}"
            f"   ({figures.seconds:.1f} s, {1000 * figures.seconds / n:.1f} ms an experiment)"
        )
        # The bootstrap interval is not what decides below MIN_BOOTSTRAP_TASKS: its coverage is
        # printed, not checked.
        if scenario.attempts > 1 and scenario.tasks >= MIN_BOOTSTRAP_TASKS:
            checks.append((0.93 <= coverage <= 0.97, f"coverage 93–97 % ({scenario.name}): {coverage:.1%}"))
        if scenario.tasks < 6 and scenario.population == "tasks":
            rate = figures.not_tested / n
            checks.append((rate == 1.0, f"'not_tested' = 100 % ({scenario.name}): {rate:.1%}"))
        elif scenario.delta == 0:
            rate = figures.regressed / n
            checks.append((rate <= 0.05, f"false 'regressed' ≤ 5 % ({scenario.name}): {rate:.1%}"))
        else:
            print(f"      power to call 'regressed': {percent(figures.regressed, n)}")
    if args.only is not None:
        for ok, what in checks:
            print("   " + verdict(ok, what))
        return

    rng = np.random.default_rng(7)
    large = Scenario("timing", 500, 5, -0.05, 3)
    base, cand = experiment(rng, large)
    compare(base, cand, k=3, resamples=100)  # imports numpy and scipy once
    seconds = []
    for seed in range(5):
        started = time.perf_counter()
        compare(base, cand, k=3, seed=seed)
        seconds.append(time.perf_counter() - started)
    print("   " + line("one compare, 500 tasks × 5 attempts, k = 3, B = 10,000", seconds))
    for tasks, tries in ((1_000, 5), (10_000, 3)):
        counts = stratified_counts(rng, tasks, tries)
        seconds = []
        for _ in range(5):
            started = time.perf_counter()
            stratified_exact_test(counts)
            seconds.append(time.perf_counter() - started)
        print("   " + line(f"the attempt-level test alone, {tasks:,} tasks × {tries} attempts", seconds))
    for ok, what in checks:
        print("   " + verdict(ok, what))


if __name__ == "__main__":
    main()
