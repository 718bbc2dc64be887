"""The judge's measured error and its noise in words, as the report, the JUnit XML and the Markdown
summary write them (issue #36; docs/statistics.md "Correcting for the judge's error" and "Judge
noise against agent noise"). The headline's corrected line is `headline.judge_corrected_line`;
these are the pieces the other faces need beside it. Pure: text from a result, no I/O.
"""

from __future__ import annotations

from fair_forge_core.schemas import JudgeCorrected, NoiseDecomposition

ESTIMATOR_NAMES = {"latent_class": "latent class", "one_way_anova": "one-way ANOVA"}
"""Each `NoiseDecomposition.estimator` in words."""


def calibration_counts(corrected: JudgeCorrected) -> str:
    """What the correction was measured on, the way the headline writes it: `TPR 25/29, TNR 26/26,
    calibration.json` (successes/n of each; the source only when the calibration names one)."""
    source = f", {corrected.source}" if corrected.source else ""
    return f"TPR {corrected.tpr.successes}/{corrected.tpr.n}, TNR {corrected.tnr.successes}/{corrected.tnr.n}{source}"


def corrected_method(corrected: JudgeCorrected) -> str:
    """How the corrected figures were drawn: `posterior, 4000 seeded draws; 2 task(s) clipped to
    [0, 1]` (the clipped tasks only when there are any), or under "identity" that the calibration
    was perfect, so the figures are today's."""
    if corrected.method == "identity":
        return "calibration perfect (n of n): the judge is read as exact, so these are today's figures"
    clipped = f"; {len(corrected.clipped_tasks)} task(s) clipped to [0, 1]" if corrected.clipped_tasks else ""
    return f"posterior, {corrected.draws} seeded draws{clipped}"


def share_percents(noise: NoiseDecomposition) -> tuple[int, int] | None:
    """The judge's and the agent's shares in whole percent, the judge's rounded and the agent's
    100 minus it (so the two always add up to 100); None when the share was not measured."""
    if noise.judge_share is None:
        return None
    judge = round(noise.judge_share * 100)
    return judge, 100 - judge


def judge_noise_line(noise: NoiseDecomposition) -> str:
    """`aggregated_metrics.judge_noise` in one line: `judge noise: 64 % of the variance in judged
    success is between the judge's samples of one transcript (latent class); agent 36 %`
    (`share_percents`), or, when there was no variance to split, that it was not measured."""
    estimator = ESTIMATOR_NAMES.get(noise.estimator, noise.estimator)
    shares = share_percents(noise)
    if shares is None:
        return f"judge noise: not measured, no variance in judged success over {noise.tasks} task(s) ({estimator})"
    judge, agent = shares
    return (
        f"judge noise: {judge} % of the variance in judged success is between the judge's samples of one "
        f"transcript ({estimator}); agent {agent} %"
    )
