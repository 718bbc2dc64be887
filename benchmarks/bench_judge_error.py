"""pass^k corrected for the judge's measured error (issue #36, done-when (a)–(c)).

1,000 seeded suites of 50 tasks × 5 attempts × 3 turns, k = 5. Each task has a known per-attempt
rate p_t ~ Beta(3, 1). An attempt is truly fully correct with probability p_t; a failing one
failed a deterministic check with probability 0.3 (exact: the judge plays no part), else has
j ~ uniform{1, 2, 3} truly wrong turns (the agent's turn failures are correlated: the correction
does not assume independent turns). A simulated judge reads each turn: "correct" with
probability TPR = 0.90 when it is, 1 − TNR = 0.15 when it is not. Each suite has its own
calibration set of 100 labels from the same judge, each answer truly correct with probability
0.5 (a balanced set); its counts are the suite's TPR / TNR.

(a) the suite's per-task pass^5, the truth mean_t p_t^5: how often the corrected 95 % interval
    (`judge_error.correct_suite`) covers it (bar ≥ 93 %), with the uncorrected interval's
    (`per_task`'s Wilson over tasks) beside it;
(b) with 3 judge samples per turn (an attempt's reading j: every turn's j-th verdict correct),
    the estimated judge share of variance (`judge_noise.noise_decomposition`, the latent class
    at 3 samples; the ANOVA at 2, in the designs' table) against the
    simulated share of the suite's transcripts, Σ_t mean_a q(1 − q) / Σ_t (mean_a q(1 − q) +
    var_a q), q_a the chance attempt a is judged fully correct given its truth: within ±0.05 in
    ≥ 90 % of suites;
(c) TPR = TNR = 1 (calibration 50 of 50 each): the corrected figures equal the uncorrected
    ones exactly, in every suite.
(d) the correction's cost: an offline `evaluate_sync` (the ReferenceJudge) of 50 tasks × 5
    attempts × 3 turns (the benchmarks' turn pool) with and without `config.judge_error`, in
    alternation, in one process (the import of scipy's quadrature, once a process, timed apart):
    the median's ratio ≤ 1.10.

    python -m benchmarks.bench_judge_error [--suites 1000] [--seed 36] [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import NamedTuple

import numpy as np

from benchmarks.common import header, line, verdict
from fair_forge_core.judge_error import DEFAULT_DRAWS, JudgedAttempt, correct_suite
from fair_forge_core.judge_noise import SampledAttempt, noise_decomposition
from fair_forge_core.metrics import per_task_metrics
from fair_forge_core.schemas import Counts, JudgeErrorInput

TASKS, ATTEMPTS, TURNS, K = 50, 5, 3, 5
TPR, TNR = 0.90, 0.85
LABELS, POSITIVE_SHARE = 100, 0.5
RATES = (3.0, 1.0)  # Beta(a, b) of the tasks' per-attempt rates
CHECK_FAILED = 0.3  # of the failing attempts
SAMPLES = 3
LEVEL = 0.95


class Attempt(NamedTuple):
    """What `per_task_metrics` reads of a conversation."""

    task_id: str
    is_scored: bool
    is_fully_correct: bool
    assistant_id: str = "agent"


class Suite(NamedTuple):
    rates: np.ndarray  # (tasks,)
    checks: np.ndarray  # (tasks, attempts): every deterministic check passed
    truth: np.ndarray  # (tasks, attempts, turns): each turn truly correct


def simulate_suite(rng: np.random.Generator, tasks: int = TASKS) -> Suite:
    rates = rng.beta(*RATES, size=tasks)
    good = rng.random((tasks, ATTEMPTS)) < rates[:, None]
    checks = good | (rng.random((tasks, ATTEMPTS)) >= CHECK_FAILED)
    wrong = rng.integers(1, TURNS + 1, size=(tasks, ATTEMPTS))  # turns wrong in a failing attempt
    order = rng.random((tasks, ATTEMPTS, TURNS)).argsort(axis=2)  # which of them: a random subset
    truth = good[:, :, None] | (order >= wrong[:, :, None])
    return Suite(rates, checks, truth)


def read(truth: np.ndarray, tpr: float, tnr: float, rng: np.random.Generator, samples: int = 1) -> np.ndarray:
    """The judge's verdicts, shape truth.shape + (samples,)."""
    chance = np.where(truth, tpr, 1.0 - tnr)[..., None]
    return rng.random((*truth.shape, samples)) < chance


def calibration(tpr: float, tnr: float, rng: np.random.Generator) -> tuple[Counts, Counts]:
    truth = rng.random(LABELS) < POSITIVE_SHARE
    passed = read(truth, tpr, tnr, rng)[:, 0]
    return (
        Counts(successes=int((passed & truth).sum()), n=int(truth.sum())),
        Counts(successes=int((~passed & ~truth).sum()), n=int((~truth).sum())),
    )


def attempts_of(suite: Suite, verdicts: np.ndarray) -> dict[str, list[JudgedAttempt]]:
    return {
        f"t{t}": [JudgedAttempt(bool(suite.checks[t, a]), int(verdicts[t, a].sum()), TURNS) for a in range(ATTEMPTS)]
        for t in range(TASKS)
    }


def sampled(suite: Suite, verdicts: np.ndarray) -> dict[str, list[SampledAttempt]]:
    """What `noise_decomposition` reads: each attempt's checks and its turns' sample verdicts."""
    return {
        f"t{t}": [
            SampledAttempt(bool(suite.checks[t, a]), tuple(tuple(map(bool, turn)) for turn in verdicts[t, a]))
            for a in range(verdicts.shape[1])
        ]
        for t in range(verdicts.shape[0])
    }


def uncorrected(suite: Suite, verdicts: np.ndarray) -> tuple[float | None, float | None, float | None]:
    judged = suite.checks & verdicts.all(axis=2)
    rows = [Attempt(f"t{t}", True, bool(judged[t, a])) for t in range(TASKS) for a in range(ATTEMPTS)]
    figures = per_task_metrics(rows, K, LEVEL)  # type: ignore[arg-type]
    return figures.pass_pow_k, figures.pass_pow_k_ci_low, figures.pass_pow_k_ci_high


def simulated_share(suite: Suite, tpr: float, tnr: float) -> float:
    """The share the simulation put in the judge, for this suite's transcripts: with q_a the chance
    attempt a is judged fully correct given its truth (0 after a failed check, else ∏ TPR over its
    truly correct turns × ∏ (1 − TNR) over the others), Σ_t mean_a q(1 − q) over
    Σ_t (mean_a q(1 − q) + var_a q), var with the n − 1 denominator."""
    q = suite.checks * np.where(suite.truth, tpr, 1.0 - tnr).prod(axis=2)  # (tasks, attempts)
    judge = float((q * (1 - q)).mean(axis=1).sum())
    agent = float(q.var(axis=1, ddof=1).sum())
    return judge / (judge + agent)


def run(suites: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    hits = {"corrected": 0, "uncorrected": 0, "share": 0, "identity": 0}
    widths, gaps, errors, points = [], [], [], []
    for index in range(suites):
        suite = simulate_suite(rng)
        truth = float(np.mean(suite.rates**K))
        tpr, tnr = calibration(TPR, TNR, rng)
        verdicts = read(suite.truth, TPR, TNR, rng, SAMPLES)
        first = verdicts[..., 0]
        judge = JudgeErrorInput(judge="sim", tpr=tpr, tnr=tnr)
        corrected = correct_suite(attempts_of(suite, first), K, judge, LEVEL, draws=DEFAULT_DRAWS, seed=index)
        assert corrected.pass_pow_k_ci_low is not None and corrected.pass_pow_k_ci_high is not None
        hits["corrected"] += corrected.pass_pow_k_ci_low <= truth <= corrected.pass_pow_k_ci_high
        widths.append(corrected.pass_pow_k_ci_high - corrected.pass_pow_k_ci_low)
        errors.append(corrected.monte_carlo_error or 0.0)
        point, low, high = uncorrected(suite, first)
        points.append((truth, point or 0.0, corrected.pass_pow_k or 0.0))
        hits["uncorrected"] += low <= truth <= high  # type: ignore[operator]
        # (b): each sample's reading of each attempt.
        noise = noise_decomposition(sampled(suite, verdicts), SAMPLES)
        assert noise.judge_share is not None
        gap = noise.judge_share - simulated_share(suite, TPR, TNR)
        gaps.append(gap)
        hits["share"] += abs(gap) <= 0.05
        # (c): a perfect judge and perfect calibration counts.
        perfect = read(suite.truth, 1.0, 1.0, rng)[..., 0]
        exact = correct_suite(
            attempts_of(suite, perfect),
            K,
            JudgeErrorInput(judge="sim", tpr=Counts(successes=50, n=50), tnr=Counts(successes=50, n=50)),
        )
        hits["identity"] += (exact.pass_pow_k, exact.pass_pow_k_ci_low, exact.pass_pow_k_ci_high) == uncorrected(
            suite, perfect
        )
    return {
        **{name: count / suites for name, count in hits.items()},
        "width": float(np.median(widths)),
        "gap_mean": float(np.mean(gaps)),
        **dict(zip(("truth", "uncorrected_point", "corrected_point"), np.mean(points, axis=0).tolist(), strict=True)),
        "gap_sd": float(np.std(gaps)),
        "mc_error": float(np.max(errors)),
    }


def share_row(samples: int, tasks: int, suites: int, seed: int) -> tuple[float, float, float]:
    """(b) alone with another design: (share of suites within ±0.05, mean and sd of the gap)."""
    rng = np.random.default_rng(seed)
    gaps = []
    for _ in range(suites):
        suite = simulate_suite(rng, tasks)
        verdicts = read(suite.truth, TPR, TNR, rng, samples)
        noise = noise_decomposition(sampled(suite, verdicts), samples)
        assert noise.judge_share is not None
        gaps.append(noise.judge_share - simulated_share(suite, TPR, TNR))
    within = float(np.mean(np.abs(gaps) <= 0.05))
    return within, float(np.mean(gaps)), float(np.std(gaps))


class Cost(NamedTuple):
    """(d), in seconds: `evaluate_sync` without and with `config.judge_error` (in alternation),
    what the correction adds inside it (its refusal check and `judge_corrected`, timed alone), and
    `import scipy.integrate` in a fresh process that had imported the evaluation path (once a
    process: what the first corrected run pays)."""

    without: list[float]
    with_: list[float]
    correction: list[float]
    imported: float


def correction_cost(runs: int) -> Cost:
    """(d) on 50 tasks × 5 attempts × 3 turns of the benchmarks' turn pool, the ReferenceJudge,
    calibrated at TPR 45/50 and TNR 43/50; one warm-up run of each first."""
    import subprocess
    import sys

    from fair_forge_core.evaluate import evaluate_sync
    from fair_forge_core.judge_error_input import check_judge_error, judge_corrected
    from fair_forge_core.judges import ReferenceJudge
    from fair_forge_core.schemas import Dataset, EvaluationConfig
    from fair_forge_testing.workloads import pooled_conversations, turn_pool

    conversations = pooled_conversations(TASKS * ATTEMPTS, TURNS, turn_pool(), attempts_per_task=ATTEMPTS)
    datasets = [Dataset.model_validate({**c, "assistant_id": "agent"}) for c in conversations]
    plain = EvaluationConfig(k=K)
    identity = evaluate_sync(datasets, ReferenceJudge(), plain).provenance.judges[0].identity
    calibration = JudgeErrorInput(judge=identity, tpr=Counts(successes=45, n=50), tnr=Counts(successes=43, n=50))
    corrected = plain.model_copy(update={"judge_error": calibration})
    result = evaluate_sync(datasets, ReferenceJudge(), corrected)
    assert result.aggregated_metrics.judge_corrected is not None
    cost = Cost([], [], [], 0.0)
    for _ in range(runs):
        for config, times in ((plain, cost.without), (corrected, cost.with_)):
            started = time.perf_counter()
            evaluate_sync(datasets, ReferenceJudge(), config)
            times.append(time.perf_counter() - started)
        started = time.perf_counter()
        check_judge_error(corrected, [identity])
        judge_corrected(result.per_conversation_metrics, corrected)
        cost.correction.append(time.perf_counter() - started)
    script = (
        "import time, fair_forge_core.evaluate, fair_forge_core.stats, scipy.special\n"
        "t = time.perf_counter(); import scipy.integrate; print(time.perf_counter() - t)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return cost._replace(imported=float(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suites", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    header("pass^k corrected for the judge's measured error (issue #36)")
    print(
        f"   {args.suites} suites of {TASKS} tasks × {ATTEMPTS} attempts × {TURNS} turns, k = {K}, "
        f"judge TPR {TPR} TNR {TNR}, {LABELS} calibration labels a suite"
    )
    started = time.perf_counter()
    figures = run(args.suites, args.seed)
    elapsed = time.perf_counter() - started
    print(f"   (a) corrected 95 % interval covers the suite's per-task pass^5: {figures['corrected']:.1%}")
    print(f"       uncorrected (Wilson over tasks) covers it: {figures['uncorrected']:.1%}")
    print(
        f"       median corrected width {figures['width']:.3f}; largest Monte Carlo level error {figures['mc_error']:.4f}"
    )
    print(
        f"       mean over suites: truth {figures['truth']:.4f}, uncorrected {figures['uncorrected_point']:.4f}, "
        f"corrected (posterior mean) {figures['corrected_point']:.4f}"
    )
    print(verdict(figures["corrected"] >= 0.93, "(a) corrected coverage ≥ 93 %"))
    print(
        f"   (b) judge share within ±0.05 of the simulated: {figures['share']:.1%} (gap: mean {figures['gap_mean']:+.4f}, sd {figures['gap_sd']:.4f})"
    )
    print(verdict(figures["share"] >= 0.90, "(b) ≥ 90 % of suites"))
    print(
        "       the same estimate with other designs (300 suites each): | samples | tasks | within ±0.05 | mean gap | sd |"
    )
    for samples, tasks in ((2, 50), (3, 50), (5, 50), (3, 100)):
        within, mean, sd = share_row(samples, tasks, 300, args.seed + samples * 1000 + tasks)
        print(f"       | {samples} | {tasks} | {within:.1%} | {mean:+.4f} | {sd:.4f} |", flush=True)
    print(
        verdict(
            figures["identity"] == 1.0,
            f"(c) TPR = TNR = 1: corrected == uncorrected exactly ({figures['identity']:.1%})",
        )
    )
    cost = correction_cost(args.runs)
    evaluate_s, correction_s = statistics.median(cost.without), statistics.median(cost.correction)
    print(f"   (d) {line('evaluate', cost.without)}")
    print(f"       {line('evaluate + judge_error', cost.with_)} (this machine's noise is of the same order)")
    print(
        f"       {line('the correction alone', cost.correction, digits=4)}: {correction_s / evaluate_s:.1%} of evaluate"
    )
    print(f"       scipy.integrate's import, once a process: {cost.imported * 1000:.0f} ms")
    print(verdict(correction_s / evaluate_s <= 0.10, "(d) the correction adds ≤ 10 % to an offline evaluate"))
    print(f"   {elapsed:.1f} s")


if __name__ == "__main__":
    main()
