"""fair_forge_core/headline.py: the judge's error and noise in the words every face shares (the
headline, the Markdown summary, the report, the JUnit properties)."""

from __future__ import annotations

from fair_forge_core.headline import calibration_counts, corrected_method, judge_noise_line
from fair_forge_core.judge_noise import anova_decomposition
from fair_forge_core.schemas import JudgeCorrected, NoiseDecomposition


def noise(judge_share: float | None, estimator: str = "latent_class") -> NoiseDecomposition:
    agent = None if judge_share is None else 1 - judge_share
    return NoiseDecomposition.model_validate(
        {
            "estimator": estimator,
            "tasks": 4,
            "judge_variance": judge_share,
            "agent_variance": agent,
            "judge_share": judge_share,
            "agent_share": agent,
            "per_task": [],
        }
    )


def test_the_noise_line_names_the_estimator_and_says_when_nothing_was_split() -> None:
    assert judge_noise_line(noise(0.64)) == (
        "judge noise: 64% of the variance in judged success is between the judge's samples of one transcript "
        "(latent class, 4 task(s)); agent 36%"
    )
    anova = anova_decomposition({"t": [[True, False], [False, True]]})
    assert judge_noise_line(anova).endswith("(one-way ANOVA, 1 task(s)); agent 0%")
    assert judge_noise_line(noise(None)) == (
        "judge noise: not measured (latent class, 4 task(s): no task with 2 read attempts and any variance)"
    )


def corrected(method: str, source: str | None, clipped: list[str]) -> JudgeCorrected:
    return JudgeCorrected.model_validate(
        {
            "judge": "j",
            "level": "turn",
            "k": 3,
            "ci_level": 0.95,
            "tpr": {"successes": 25, "n": 29},
            "tnr": {"successes": 26, "n": 26},
            "calibration_labels": 55,
            "source": source,
            "method": method,
            "interval_method": "posterior" if method == "monte_carlo" else "task_wilson",
            "draws": 4000 if method == "monte_carlo" else None,
            "seed": 0 if method == "monte_carlo" else None,
            "monte_carlo_error": None,
            "tasks": 0,
            "tasks_with_k_attempts": 0,
            "pass_at_k": None,
            "pass_pow_k": None,
            "pass_at_k_ci_low": None,
            "pass_at_k_ci_high": None,
            "pass_pow_k_ci_low": None,
            "pass_pow_k_ci_high": None,
            "clipped_tasks": clipped,
            "per_task": [],
            "curve": [],
        }
    )


def test_the_calibration_and_the_method_in_words() -> None:
    assert (
        calibration_counts(corrected("monte_carlo", "calibration.json", [])) == "TPR 25/29, TNR 26/26, calibration.json"
    )
    assert calibration_counts(corrected("monte_carlo", None, [])) == "TPR 25/29, TNR 26/26"
    assert (
        corrected_method(corrected("monte_carlo", None, ["a", "b"]))
        == "posterior, 4000 seeded draws; 2 task(s) clipped to [0, 1]"
    )
    assert corrected_method(corrected("monte_carlo", None, [])) == "posterior, 4000 seeded draws"
    assert corrected_method(corrected("identity", None, [])) == "exact judge: today's figures"
