"""fair_forge_core/judge_noise.py: judge noise against agent noise. The ANOVA on cases whose
components are known and by exact enumeration; the latent-class posterior, its moments and the
agent's part against brute force over every truth pattern in plain Python; the EM fit at a local
maximum of the likelihood, computed apart; which estimator a design gets; the refusals."""

from __future__ import annotations

import itertools
import math

import pytest

from fair_forge_core.judge_noise import (
    LatentClassFit,
    SampledAttempt,
    anova_decomposition,
    fit_latent_class,
    noise_decomposition,
)

# --------------------------------------------------------------------------- the ANOVA (two samples)


def test_no_judge_noise_when_every_sample_agrees() -> None:
    noise = anova_decomposition({"t": [[True, True], [False, False]]})
    task = noise.per_task[0]
    # MSW = 0, MSB = 2·(0.5² + 0.5²)/1 = 1, n0 = 2: agent = 0.5.
    assert (task.judge_variance, task.agent_variance, task.judge_share) == (0.0, 0.5, 0.0)
    assert (noise.judge_share, noise.agent_share) == (0.0, 1.0)


def test_only_judge_noise_when_every_attempt_reads_alike() -> None:
    noise = anova_decomposition({"t": [[True, False], [False, True]], "short": [[True, False]]})
    task = noise.per_task[0]
    # MSW = 0.5 (each attempt's [1, 0]), MSB = 0: agent = −0.25, truncated and flagged.
    assert (task.judge_variance, task.agent_variance, task.agent_truncated) == (0.5, 0.0, True)
    assert noise.tasks == 1 and noise.judge_share == 1.0  # 0.5 / (0.5 − 0.25), clipped
    assert noise.agent_variance == -0.25


def test_the_components_are_unbiased_by_exact_enumeration() -> None:
    # Two attempts, each judged fully correct w.p. q ∈ {0.2, 0.8} (equally likely), two samples
    # each: E[judge] = E[q(1 − q)] = 0.16 and E[agent] = Var(q) = 0.09.
    judge_mean = agent_mean = 0.0
    for q1, q2 in itertools.product((0.2, 0.8), repeat=2):
        for y in itertools.product((True, False), repeat=4):
            qs = (q1, q1, q2, q2)
            chance = 0.25 * math.prod(q if v else 1 - q for q, v in zip(qs, y, strict=True))
            noise = anova_decomposition({"t": [list(y[:2]), list(y[2:])]})
            assert noise.judge_variance is not None and noise.agent_variance is not None
            judge_mean += chance * noise.judge_variance
            agent_mean += chance * noise.agent_variance
    assert judge_mean == pytest.approx(0.16, abs=1e-12)
    assert agent_mean == pytest.approx(0.09, abs=1e-12)


def test_unbalanced_samples_use_the_anova_n0() -> None:
    # Attempts read 2 and 4 times: n0 = (6 − (4 + 16)/6)/1 = 8/3.
    readings = [[True, True], [False, False, True, False]]
    y = [1, 1, 0, 0, 1, 0]
    grand = sum(y) / 6
    ssw = (0.0 + 0.0) + sum((v - 0.25) ** 2 for v in [0, 0, 1, 0])
    ssb = 2 * (1 - grand) ** 2 + 4 * (0.25 - grand) ** 2
    msw, msb = ssw / 4, ssb / 1
    noise = anova_decomposition({"t": readings})
    assert noise.judge_variance == pytest.approx(msw)
    assert noise.agent_variance == pytest.approx((msb - msw) / (8 / 3))


# --------------------------------------------------------------------------- the latent class (≥ 3 samples)


def attempt(passed: bool, *turns: str) -> SampledAttempt:
    """`attempt(True, "110", "111")`: two turns, three samples each (1: judged correct)."""
    return SampledAttempt(passed, tuple(tuple(c == "1" for c in turn) for turn in turns))


def brute_posterior(turns: tuple[tuple[bool, ...], ...], tpr: float, tnr: float, theta: list[float]) -> dict:
    """P(truth pattern | samples) by enumeration: prior θ_w / C(U, w), samples independent given the truth."""
    size = len(turns)
    joint = {}
    for pattern in itertools.product((True, False), repeat=size):
        wrong = size - sum(pattern)
        chance = theta[wrong] / math.comb(size, wrong)
        for truth, samples in zip(pattern, turns, strict=True):
            for said in samples:
                chance *= (tpr if said else 1 - tpr) if truth else ((1 - tnr) if said else tnr)
        joint[pattern] = chance
    total = sum(joint.values())
    return {pattern: value / total for pattern, value in joint.items()}


def fit_with(tpr: float, tnr: float, theta: list[float], size: int, samples: int) -> LatentClassFit:
    patterns = list(itertools.product((1, 0), repeat=size))
    import numpy as np

    wrong = np.array([size - sum(p) for p in patterns])
    prior = np.array([theta[w] / math.comb(size, w) for w in wrong])
    return LatentClassFit(tpr, tnr, samples, {size: np.array(patterns)}, {size: prior})


def test_the_posterior_and_moments_match_enumeration() -> None:
    fit = fit_with(0.9, 0.8, [0.5, 0.3, 0.2], size=2, samples=3)
    one = attempt(True, "110", "001")
    posterior = brute_posterior(one.turns, 0.9, 0.8, [0.5, 0.3, 0.2])
    first = sum(p * math.prod(0.9 if t else 0.2 for t in pattern) for pattern, p in posterior.items())
    second = sum(p * math.prod(0.9 if t else 0.2 for t in pattern) ** 2 for pattern, p in posterior.items())
    assert fit.moments(one) == pytest.approx((first, second), rel=1e-12)
    assert fit.moments(attempt(False, "111", "111")) == (0.0, 0.0)
    assert fit.moments(SampledAttempt(True, ())) == (1.0, 1.0)


def test_the_agent_part_is_the_expected_sample_variance_by_enumeration() -> None:
    # Three attempts, independent posteriors: E[Σ(q − q̄)²]/(n − 1) over every joint truth pattern.
    fit = fit_with(0.85, 0.75, [0.6, 0.3, 0.1], size=2, samples=3)
    attempts = [attempt(True, "111", "110"), attempt(True, "000", "101"), attempt(True, "111", "111")]
    posteriors = [brute_posterior(a.turns, 0.85, 0.75, [0.6, 0.3, 0.1]) for a in attempts]
    expected_variance = expected_judge = 0.0
    for combo in itertools.product(*(p.items() for p in posteriors)):
        chance = math.prod(p for _, p in combo)
        qs = [math.prod(0.85 if t else 0.25 for t in pattern) for pattern, _ in combo]
        mean = sum(qs) / 3
        expected_variance += chance * sum((q - mean) ** 2 for q in qs) / 2
        expected_judge += chance * sum(q * (1 - q) for q in qs) / 3
    moments = [fit.moments(a) for a in attempts]
    m = [first for first, _ in moments]
    m2 = [second for _, second in moments]
    cross = sum(m) ** 2 - sum(x * x for x in m)
    assert ((1 - 1 / 3) * sum(m2) - cross / 3) / 2 == pytest.approx(expected_variance, rel=1e-10)
    assert sum(a - b for a, b in zip(m, m2, strict=True)) / 3 == pytest.approx(expected_judge, rel=1e-10)


def log_likelihood(attempts: list[SampledAttempt], tpr: float, tnr: float, theta: list[float]) -> float:
    """The marginal log-likelihood of the samples, summed over every truth pattern, in plain Python."""
    total = 0.0
    for one in attempts:
        size = len(one.turns)
        chance = 0.0
        for pattern in itertools.product((True, False), repeat=size):
            wrong = size - sum(pattern)
            value = theta[wrong] / math.comb(size, wrong)
            for truth, samples in zip(pattern, one.turns, strict=True):
                for said in samples:
                    value *= (tpr if said else 1 - tpr) if truth else ((1 - tnr) if said else tnr)
            chance += value
        total += math.log(chance)
    return total


ATTEMPTS = [
    attempt(True, "111", "111"),
    attempt(True, "111", "110"),
    attempt(True, "001", "111"),
    attempt(True, "000", "100"),
    attempt(True, "111", "011"),
    attempt(True, "111", "111"),
    attempt(True, "000", "000"),
    attempt(True, "101", "111"),
]


def test_the_fit_is_a_local_maximum_of_the_likelihood() -> None:
    fit = fit_latent_class(ATTEMPTS, 3)
    theta = [float(fit.priors[2][index]) * math.comb(2, w) for index, w in ((0, 0), (1, 1), (3, 2))]
    assert sum(theta) == pytest.approx(1.0, abs=1e-9)
    best = log_likelihood(ATTEMPTS, fit.tpr, fit.tnr, theta)
    for d_tpr, d_tnr in itertools.product((-1e-3, 0.0, 1e-3), repeat=2):
        assert log_likelihood(ATTEMPTS, fit.tpr + d_tpr, fit.tnr + d_tnr, theta) <= best + 1e-9
    for shift in itertools.permutations((1e-3, -1e-3, 0.0)):
        moved = [t + d for t, d in zip(theta, shift, strict=True)]
        if min(moved) >= 0:  # within the simplex (the fit may sit on its edge)
            assert log_likelihood(ATTEMPTS, fit.tpr, fit.tnr, moved) <= best + 1e-9
    assert fit.tpr + fit.tnr > 1.0  # the mode where the judge is better than chance


def test_samples_that_always_agree_are_no_judge_noise() -> None:
    tasks = {
        "a": [attempt(True, "111", "111"), attempt(True, "000", "111"), attempt(False, "111", "111")],
        "b": [attempt(True, "111", "000"), attempt(True, "111", "111")],
    }
    noise = noise_decomposition(tasks, 3)
    assert noise.estimator == "latent_class"
    assert noise.judge_variance == pytest.approx(0.0, abs=1e-6)
    assert noise.agent_share == pytest.approx(1.0, abs=1e-5)
    assert noise.sample_tpr == pytest.approx(1.0, abs=1e-6) and noise.sample_tnr == pytest.approx(1.0, abs=1e-6)


def test_each_design_gets_its_estimator() -> None:
    three = {"t": [attempt(True, "110"), attempt(True, "011"), attempt(True, "111")]}
    assert noise_decomposition(three, 3).estimator == "latent_class"
    two = {"t": [attempt(True, "10"), attempt(True, "11")]}
    anova = noise_decomposition(two, 2)
    assert anova.estimator == "one_way_anova" and anova.sample_tpr is None
    assert anova.judge_variance == anova_decomposition({"t": [[True, False], [True, True]]}).judge_variance
    long = {"t": [attempt(True, *["111"] * 11), attempt(True, *["110"] * 11)]}
    assert noise_decomposition(long, 3).estimator == "one_way_anova"
    alone = noise_decomposition({"t": [attempt(True, "110")]}, 3)
    assert (alone.tasks, alone.judge_share) == (0, None)


def test_refusals_say_why() -> None:
    with pytest.raises(ValueError, match="at least 2 samples"):
        noise_decomposition({"t": [attempt(True, "1")]}, 1)
    with pytest.raises(ValueError, match="must have 3 verdicts"):
        noise_decomposition({"t": [attempt(True, "11"), attempt(True, "111")]}, 3)
