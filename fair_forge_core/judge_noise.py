"""Judge noise against agent noise (issue #36): each task's variance in the judged success split
into the part between judge samples of one transcript (the judge's) and the part between attempts
(the agent's). Pure: no I/O. Docs: docs/statistics.md "Judge noise against agent noise".

Y_aj is whether sample j passed attempt a: every deterministic check passed and every judged
turn's j-th verdict was "correct". By the law of total variance, Var(Y) = E[Var(Y | attempt)] +
Var(E[Y | attempt]); with q_a = P(Y_aj = 1 | attempt a's transcript), the judge's part of a task
is mean_a q_a(1 − q_a) and the agent's the variance of q_a over its attempts (n − 1 denominator).
A mistake the judge repeats in every sample of a transcript is not judge noise here: it reads as
the agent's, under either estimator.

Two estimators of the q_a:

- **latent_class** (every attempt judged ≥ 3 times, at most `MAX_ENUMERATED_TURNS` judged turns):
  the measurement model of docs/statistics.md "Correcting for the judge's error", fitted to the
  samples themselves. A judged turn is truly correct or not; each sample of it says "correct"
  with probability TPR when it is and 1 − TNR when it is not, independently given the truth. An
  attempt's truth pattern over its U judged turns has the prior θ_U,w / C(U, w), w the number of
  wrong turns (exchangeable turns, any dependence between them). TPR, TNR and every θ_U are fitted
  by EM over the attempts whose checks passed (started at TPR = TNR = 0.8, the side of the
  likelihood where the judge is better than chance); each attempt's posterior over its 2^U truth
  patterns then gives E[q_a] and E[q_a²], q(pattern) = TPR^(U − w)·(1 − TNR)^w (0 after a failed
  check), and the parts are their posterior expectations: judge = mean_a (E[q_a] − E[q_a²]),
  agent = ((1 − 1/n) Σ E[q_a²] − Σ_{a≠b} E[q_a]E[q_b]/n)/(n − 1). With three samples a turn's
  truth is nearly read from its samples, which the ANOVA below cannot use.
- **one_way_anova** (two samples, or longer attempts): the one-way random-effects ANOVA of the
  Y_aj (Searle, Casella & McCulloch 1992, ch. 3), free of any model, unbiased, and noisier.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fair_forge_core.schemas import NoiseDecomposition, NoiseEstimator, TaskNoise

MAX_ENUMERATED_TURNS = 10
"""The latent-class posterior enumerates an attempt's 2^U truth patterns: U ≤ 10 (1,024)."""
EM_TOLERANCE = 1e-10
EM_MAX_ITERATIONS = 2000
EM_START = 0.8
"""TPR and TNR where EM starts: the mode where the judge is better than chance."""
_PROBABILITY_FLOOR = 1e-12

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class SampledAttempt:
    """One attempt judged several times: whether every deterministic check passed, and each
    judged turn's verdicts, one a sample (True: judged correct)."""

    deterministic_passed: bool
    turns: tuple[tuple[bool, ...], ...]

    def readings(self, samples: int) -> list[bool]:
        """Y_aj for j < samples: the checks passed and every turn's j-th verdict was "correct"."""
        return [self.deterministic_passed and all(turn[j] for turn in self.turns) for j in range(samples)]


def noise_decomposition(tasks: Mapping[str, Sequence[SampledAttempt]], samples: int) -> NoiseDecomposition:
    """The split of every task with ≥ 2 attempts, each attempt's judged turns read `samples` times
    (module docstring): `latent_class` when samples ≥ 3 and no attempt has more than
    `MAX_ENUMERATED_TURNS` judged turns, else `one_way_anova`. The overall components are the sums
    over the tasks; the judge's share is their ratio, clipped to [0, 1], None when the total is not
    positive. ValueError when samples < 2 or a turn has another number of verdicts."""
    if samples < 2:
        raise ValueError(f"the judge's noise needs at least 2 samples of each turn, got {samples}")
    if any(len(turn) != samples for attempts in tasks.values() for a in attempts for turn in a.turns):
        raise ValueError(f"every judged turn must have {samples} verdicts")
    kept = {name: attempts for name, attempts in tasks.items() if len(attempts) >= 2}
    longest = max((len(a.turns) for attempts in kept.values() for a in attempts), default=0)
    if samples >= 3 and longest <= MAX_ENUMERATED_TURNS:
        return _latent_class(kept, samples)
    return anova_decomposition({name: [a.readings(samples) for a in attempts] for name, attempts in kept.items()})


def _latent_class(tasks: Mapping[str, Sequence[SampledAttempt]], samples: int) -> NoiseDecomposition:
    fitted = fit_latent_class([a for attempts in tasks.values() for a in attempts if a.deterministic_passed], samples)
    per_task: list[tuple[TaskNoise, float]] = []
    for name, attempts in tasks.items():
        moments = [fitted.moments(a) for a in attempts]
        m = np.array([first for first, _ in moments])
        m2 = np.array([second for _, second in moments])
        n = len(attempts)
        judge = max(float(np.mean(m - m2)), 0.0)  # q ≥ q²: below 0 by rounding only
        cross = float(m.sum() ** 2 - (m * m).sum())
        agent = ((1.0 - 1.0 / n) * float(m2.sum()) - cross / n) / (n - 1)
        per_task.append((_task_noise(name, n, n * samples, judge, agent), agent))
    return _overall("latent_class", per_task, fitted.tpr, fitted.tnr)


@dataclass(frozen=True)
class LatentClassFit:
    """The judge's TPR and TNR fitted to its samples, and per number U of judged turns, the
    posterior machinery: every truth pattern (rows of `patterns[U]`, 1 = truly correct) and its
    prior probability (`priors[U]`)."""

    tpr: float
    tnr: float
    samples: int
    patterns: Mapping[int, npt.NDArray[np.int64]]
    priors: Mapping[int, Floats]

    def posterior(self, counts: npt.NDArray[np.int64]) -> Floats:
        """P(truth pattern | each row's correct-sample counts per turn), rows of shape (N, U)."""
        patterns, prior = self.patterns[counts.shape[1]], self.priors[counts.shape[1]]
        right = counts * math.log(self.tpr) + (self.samples - counts) * math.log1p(-self.tpr)
        wrong = counts * math.log1p(-self.tnr) + (self.samples - counts) * math.log(self.tnr)
        log_joint = right @ patterns.T + wrong @ (1 - patterns).T + np.log(prior)
        log_joint -= log_joint.max(axis=1, keepdims=True)
        joint: Floats = np.exp(log_joint)
        joint /= joint.sum(axis=1, keepdims=True)
        return joint

    def moments(self, attempt: SampledAttempt) -> tuple[float, float]:
        """(E[q], E[q²]) of an attempt under its posterior: (0, 0) after a failed check, (1, 1)
        with no judged turn."""
        if not attempt.deterministic_passed:
            return 0.0, 0.0
        if not attempt.turns:
            return 1.0, 1.0
        counts = np.array([[sum(turn) for turn in attempt.turns]])
        patterns = self.patterns[len(attempt.turns)]
        q = np.prod(np.where(patterns == 1, self.tpr, 1.0 - self.tnr), axis=1)
        weights = self.posterior(counts)[0]
        return float(weights @ q), float(weights @ (q * q))


def fit_latent_class(attempts: Sequence[SampledAttempt], samples: int) -> LatentClassFit:
    """EM for TPR, TNR and each θ_U (module docstring) over `attempts` (those whose checks passed),
    until no parameter moves by more than `EM_TOLERANCE` or `EM_MAX_ITERATIONS`. Probabilities are
    kept within [1e-12, 1 − 1e-12], so that no pattern's likelihood is exactly 0."""
    groups: dict[int, npt.NDArray[np.int64]] = {}
    for size in sorted({len(a.turns) for a in attempts if a.turns}):
        groups[size] = np.array([[sum(turn) for turn in a.turns] for a in attempts if len(a.turns) == size])
    patterns = {size: np.array(list(itertools.product((1, 0), repeat=size))) for size in groups}
    wrong = {size: size - rows.sum(axis=1) for size, rows in patterns.items()}
    thetas = {size: np.full(size + 1, 1.0 / (size + 1)) for size in groups}
    fit = LatentClassFit(EM_START, EM_START, samples, patterns, _priors(thetas, wrong))
    for _ in range(EM_MAX_ITERATIONS):
        correct_samples = correct_weight = incorrect_samples = incorrect_weight = 0.0
        moved = 0.0
        for size, counts in groups.items():
            posterior = fit.posterior(counts)
            truly_correct = posterior @ patterns[size]  # P(turn truly correct), (N, U)
            correct_samples += float((truly_correct * counts).sum())
            correct_weight += float(truly_correct.sum()) * samples
            incorrect_samples += float(((1.0 - truly_correct) * (samples - counts)).sum())
            incorrect_weight += float((1.0 - truly_correct).sum()) * samples
            theta = np.bincount(wrong[size], weights=posterior.mean(axis=0), minlength=size + 1)
            moved = max(moved, float(np.abs(theta - thetas[size]).max()))
            thetas[size] = theta
        tpr = _floor(correct_samples / correct_weight) if correct_weight > 0 else fit.tpr
        tnr = _floor(incorrect_samples / incorrect_weight) if incorrect_weight > 0 else fit.tnr
        moved = max(moved, abs(tpr - fit.tpr), abs(tnr - fit.tnr))
        fit = LatentClassFit(tpr, tnr, samples, patterns, _priors(thetas, wrong))
        if moved < EM_TOLERANCE:
            break
    return fit


def _priors(thetas: Mapping[int, Floats], wrong: Mapping[int, npt.NDArray[np.int64]]) -> dict[int, Floats]:
    """Each truth pattern's prior θ_U,w / C(U, w), floored (`_PROBABILITY_FLOOR`)."""
    priors = {}
    for size, theta in thetas.items():
        binomials = np.array([math.comb(size, w) for w in range(size + 1)], dtype=float)
        priors[size] = np.maximum(theta[wrong[size]] / binomials[wrong[size]], _PROBABILITY_FLOOR)
    return priors


def _floor(value: float) -> float:
    return min(max(value, _PROBABILITY_FLOOR), 1.0 - _PROBABILITY_FLOOR)


def anova_decomposition(readings: Mapping[str, Sequence[Sequence[bool]]]) -> NoiseDecomposition:
    """The one-way random-effects ANOVA of `readings[task][attempt][sample]` (the Y_aj): with a
    attempts, N readings, SSW and SSB the within- and between-attempt sums of squares,
    MSW = SSW/(N − a), MSB = SSB/(a − 1), n0 = (N − Σ n_i²/N)/(a − 1): judge = MSW,
    agent = (MSB − MSW)/n0, both unbiased (agent reported truncated at 0, flagged; the overall sums
    untruncated). Only tasks with ≥ 2 attempts each read ≥ 2 times count."""
    per_task: list[tuple[TaskNoise, float]] = []
    for name, attempts in readings.items():
        if len(attempts) < 2 or any(len(samples) < 2 for samples in attempts):
            continue
        judge, agent = _anova(attempts)
        noise = _task_noise(name, len(attempts), sum(len(samples) for samples in attempts), judge, agent)
        per_task.append((noise, agent))
    return _overall("one_way_anova", per_task, None, None)


def _anova(attempts: Sequence[Sequence[bool]]) -> tuple[float, float]:
    """(MSW, (MSB − MSW)/n0) of one task (`anova_decomposition`)."""
    sizes = [len(samples) for samples in attempts]
    means = [sum(samples) / len(samples) for samples in attempts]
    total, groups = sum(sizes), len(attempts)
    grand = sum(sum(samples) for samples in attempts) / total
    ssw = math.fsum((float(y) - mean) ** 2 for samples, mean in zip(attempts, means, strict=True) for y in samples)
    ssb = math.fsum(size * (mean - grand) ** 2 for size, mean in zip(sizes, means, strict=True))
    msw, msb = ssw / (total - groups), ssb / (groups - 1)
    n0 = (total - sum(size * size for size in sizes) / total) / (groups - 1)
    return msw, (msb - msw) / n0


def _task_noise(name: str, attempts: int, samples: int, judge: float, agent: float) -> TaskNoise:
    """A task's split, the agent's part truncated at 0 (flagged)."""
    kept = max(agent, 0.0)
    return TaskNoise(
        task=name,
        attempts=attempts,
        samples=samples,
        judge_variance=judge,
        agent_variance=kept,
        agent_truncated=agent < 0,
        judge_share=judge / (judge + kept) if judge + kept > 0 else None,
    )


def _overall(
    estimator: NoiseEstimator, per_task: list[tuple[TaskNoise, float]], tpr: float | None, tnr: float | None
) -> NoiseDecomposition:
    """The sums over the tasks (the agent's untruncated, so that the sum stays unbiased) and the
    judge's share of the total, clipped to [0, 1]."""
    judge = math.fsum(noise.judge_variance for noise, _ in per_task)
    agent = math.fsum(untruncated for _, untruncated in per_task)
    share = min(max(judge / (judge + agent), 0.0), 1.0) if per_task and judge + agent > 0 else None
    return NoiseDecomposition(
        estimator=estimator,
        tasks=len(per_task),
        judge_variance=judge if per_task else None,
        agent_variance=agent if per_task else None,
        judge_share=share,
        agent_share=None if share is None else 1.0 - share,
        sample_tpr=tpr,
        sample_tnr=tnr,
        per_task=[noise for noise, _ in per_task],
    )
