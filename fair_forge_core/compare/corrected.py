"""The comparison corrected for the judges' measured error (issue #36, item 5;
docs/statistics.md "Correcting for the judge's error", bullet "compare"): `compare_corrected`.

Each side that was corrected carries the calibration it was corrected with (`JudgeErrorInput`,
rebuilt from its `judge_corrected` by `judge_error_of_corrected`). Over the tasks both sides
scored with ≥ k attempts, each side's per-task rate draws are recomputed from its conversations
(`judge_error.task_rate_draws`), its suite mean of p^k (and of 1 − (1 − p)^k) taken at every
draw, and the difference candidate − baseline read off the joint draws: its posterior mean,
equal-tailed interval at the comparison's confidence, and P(difference < 0).

Draws. Both sides corrected with the same judge identity, level and TPR / TNR counts share the
judge draws (common random numbers: it is one unknown judge error, seed `seed`), their tasks'
noise from two streams (`[seed, 1]` and `[seed, 2]`); otherwise each side draws its judge
independently (the candidate's at seed + 1). The verdict is on pass^k: `improved` when its
interval is above 0, `regressed` below, `no_detectable_change` when it includes 0. It is
*within the judge's error* when it disagrees with the observed verdict (inconclusive read as no
detectable change). Pure; numpy is imported by `judge_error`, inside the function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from fair_forge_core.schemas import (
    Comparison,
    ConversationMetrics,
    CorrectedDifference,
    JudgeCorrected,
    JudgeCorrectedComparison,
    JudgeErrorInput,
)
from fair_forge_core.schemas.comparison import CorrectedVerdict

if TYPE_CHECKING:
    from fair_forge_core.judge_error import Floats, JudgedAttempt

OBSERVED_AS_CORRECTED: dict[str, CorrectedVerdict] = {
    "improved": "improved",
    "regressed": "regressed",
    "inconclusive": "no_detectable_change",
}
"""The observed verdict in the corrected verdict's terms (`not_tested` has none: nothing to reverse)."""

CANDIDATE_STREAM = 2
"""The candidate's tasks' noise stream (the baseline's is 1, `correct_suite`'s own)."""


def judge_error_of_corrected(corrected: JudgeCorrected) -> JudgeErrorInput:
    """The calibration a result was corrected with, from its `judge_corrected`: judge identity,
    level, TPR and TNR counts, source (the threshold is not recorded there, nor needed here)."""
    return JudgeErrorInput(
        judge=corrected.judge, level=corrected.level, tpr=corrected.tpr, tnr=corrected.tnr, source=corrected.source
    )


def same_calibration(baseline: JudgeErrorInput, candidate: JudgeErrorInput) -> bool:
    """One judge and one calibration: the same identity, level, TPR counts and TNR counts (the
    source, a file name, does not matter)."""
    return (baseline.judge, baseline.level, baseline.tpr, baseline.tnr) == (
        candidate.judge,
        candidate.level,
        candidate.tpr,
        candidate.tnr,
    )


def _exact(error: JudgeErrorInput) -> bool:
    return error.tpr.successes == error.tpr.n and error.tnr.successes == error.tnr.n


def _not_measured(comparison: Comparison, reason: str, **fields: object) -> JudgeCorrectedComparison:
    return JudgeCorrectedComparison.model_validate(
        {
            "measured": False,
            "reason": reason,
            "k": comparison.k,
            "confidence": comparison.confidence,
            "observed_verdict": comparison.verdict,
            "explanation": f"the judge-corrected comparison was not measured: {reason}",
            **fields,
        }
    )


def calibration_notes(baseline: JudgeErrorInput, candidate: JudgeErrorInput) -> list[str]:
    """What a reader must know of the two calibrations: different judges (identities), or one
    judge with two different calibrations; [] when they are one."""
    if baseline.judge != candidate.judge:
        return [
            f"the sides were judged by different judges (baseline {baseline.judge[:12]}, candidate "
            f"{candidate.judge[:12]}): the corrected comparison rests on two different calibrations, drawn independently"
        ]
    if not same_calibration(baseline, candidate):
        return [
            "the sides were corrected with two different calibrations of one judge: the corrected comparison rests "
            "on both, drawn independently"
        ]
    return []


def compare_corrected(
    comparison: Comparison,
    baseline: tuple[Sequence[ConversationMetrics], JudgeErrorInput | None],
    candidate: tuple[Sequence[ConversationMetrics], JudgeErrorInput | None],
    draws: int | None = None,
) -> JudgeCorrectedComparison | None:
    """The judge-corrected comparison of two sides (conversations, calibration), at the
    comparison's k, confidence and seed, with `draws` joint draws (`DEFAULT_DRAWS`). None when
    neither side was corrected; not measured (`reason`) when only one was, or when no task has
    ≥ k scored attempts on both sides. `check_identifiable`'s ValueError propagates (a result's
    calibration was checked before it was corrected)."""
    from fair_forge_core.judge_error import DEFAULT_DRAWS
    from fair_forge_core.judge_error_input import judged_tasks

    base_error, cand_error = baseline[1], candidate[1]
    if base_error is None and cand_error is None:
        return None
    if base_error is None or cand_error is None:
        which = "candidate" if base_error is None else "baseline"
        other = "baseline" if base_error is None else "candidate"
        return _not_measured(comparison, f"only the {which} was corrected for its judge's error, not the {other}")
    notes = calibration_notes(base_error, cand_error)
    judges: dict[str, object] = {
        "baseline_judge": base_error.judge,
        "candidate_judge": cand_error.judge,
        "notes": notes,
    }
    base_tasks, cand_tasks = judged_tasks(baseline[0]), judged_tasks(candidate[0])
    k = comparison.k
    names = [n for n in base_tasks if n in cand_tasks and min(len(base_tasks[n]), len(cand_tasks[n])) >= k]
    if not names:
        return _not_measured(comparison, f"no task was scored with at least {k} attempts on both sides", **judges)
    draws = draws or DEFAULT_DRAWS
    base, cand, shared = side_draws(
        ({n: base_tasks[n] for n in names}, base_error),
        ({n: cand_tasks[n] for n in names}, cand_error),
        draws,
        comparison.seed,
    )
    return _measured(
        comparison, base, cand, len(names), shared, draws, judges, _exact(base_error) and _exact(cand_error)
    )


def side_draws(
    baseline: tuple[Mapping[str, Sequence[JudgedAttempt]], JudgeErrorInput],
    candidate: tuple[Mapping[str, Sequence[JudgedAttempt]], JudgeErrorInput],
    draws: int,
    seed: int,
) -> tuple[Floats, Floats, bool]:
    """Each side's per-task rate draws as a (tasks, draws) array, rows in its tasks' order
    (`judge_error.task_rate_draws`), and whether they share the judge draws: with one calibration
    (`same_calibration`) both sides' judge draws are those at `seed`, the tasks' noise streams 1
    and `CANDIDATE_STREAM`; otherwise the candidate's judge is drawn at seed + 1, independently."""
    import numpy as np

    from fair_forge_core.judge_error import task_rate_draws

    shared = same_calibration(baseline[1], candidate[1])
    base = task_rate_draws(baseline[0], baseline[1], draws, seed, 1)
    cand = task_rate_draws(candidate[0], candidate[1], draws, seed if shared else seed + 1, CANDIDATE_STREAM)
    return np.stack(list(base.values())), np.stack(list(cand.values())), shared


def _measured(
    comparison: Comparison,
    base: Floats,
    cand: Floats,
    tasks: int,
    shared: bool,
    draws: int,
    judges: Mapping[str, object],
    identity: bool,
) -> JudgeCorrectedComparison:
    """The measured comparison from the sides' (tasks, draws) rate arrays: the differences, the
    verdict, and whether the observed verdict is within the judge's error."""
    import math

    k, level = comparison.k, comparison.confidence
    pow_k = difference_of("pass^k", (base**k).mean(axis=0), (cand**k).mean(axis=0), level)
    at_k = None
    if k > 1:
        at_k = difference_of("pass@k", 1 - ((1 - base) ** k).mean(axis=0), 1 - ((1 - cand) ** k).mean(axis=0), level)
    verdict = corrected_verdict(pow_k)
    within = within_judge_error(comparison.verdict, verdict, identity)
    tail = (1.0 - level) / 2.0
    return JudgeCorrectedComparison.model_validate(
        {
            "measured": True,
            "method": "identity" if identity else "monte_carlo",
            "k": k,
            "confidence": level,
            "draws": draws,
            "seed": comparison.seed,
            "monte_carlo_error": 2.0 * math.sqrt(tail * (1.0 - tail) / draws),
            "tasks": tasks,
            "same_judge": judges["baseline_judge"] == judges["candidate_judge"],
            "shared_judge_draws": shared,
            "pass_pow_k": pow_k,
            "pass_at_k": at_k,
            "verdict": verdict,
            "observed_verdict": comparison.verdict,
            "within_judge_error": within,
            "explanation": explanation(comparison.verdict, verdict, within, identity, level),
            **judges,
        }
    )


def difference_of(metric: str, base: Floats, cand: Floats, level: float) -> CorrectedDifference:
    """One metric's `CorrectedDifference` from the two sides' draws of their suite means, paired
    draw by draw: the means, the difference's mean, its equal-tailed quantiles (numpy's linear
    rule, as `correct_suite`'s bounds) and the share of draws below 0."""
    import numpy as np

    difference = cand - base
    low, high = (float(q) for q in np.quantile(difference, [(1.0 - level) / 2.0, (1.0 + level) / 2.0]))
    return CorrectedDifference.model_validate(
        {
            "metric": metric,
            "baseline": float(base.mean()),
            "candidate": float(cand.mean()),
            "difference": float(difference.mean()),
            "ci_low": low,
            "ci_high": high,
            "probability_lower": float((difference < 0).mean()),
        }
    )


def corrected_verdict(difference: CorrectedDifference) -> CorrectedVerdict:
    """`improved` when the interval is above 0, `regressed` when below, else `no_detectable_change`
    (an interval touching 0 includes it)."""
    if difference.ci_low > 0:
        return "improved"
    if difference.ci_high < 0:
        return "regressed"
    return "no_detectable_change"


def within_judge_error(observed: str, corrected: CorrectedVerdict, identity: bool) -> bool | None:
    """Whether the observed verdict is within the judge's error band: it and the corrected verdict
    disagree (`OBSERVED_AS_CORRECTED`). None when the observed comparison was not tested (nothing
    to reverse); False when both judges are read as exact (`identity`: no judge error)."""
    if observed not in OBSERVED_AS_CORRECTED:
        return None
    if identity:
        return False
    return OBSERVED_AS_CORRECTED[observed] != corrected


def explanation(observed: str, corrected: CorrectedVerdict, within: bool | None, identity: bool, level: float) -> str:
    """One sentence on what the corrected comparison says of the observed verdict."""
    from fair_forge_core.compare.verdict import level_text

    shown = corrected.replace("_", " ")
    if identity:
        return (
            f"both calibrations are perfect (n of n): the judges are read as exact, so the observed verdict ({observed}) "
            f"cannot be within their error; corrected: {shown}"
        )
    if within is None:
        return f"the observed comparison was not tested; corrected for the judges' error: {shown}"
    if within:
        return (
            f"the observed verdict ({observed}) is within the judge's error band: corrected for the judges' measured "
            f"error, pass^k shows {shown} at {level_text(level)}"
        )
    return f"the observed verdict ({observed}) holds under the judges' measured error (corrected: {shown})"


def _label(metric: str, k: int) -> str:
    return "pass@1" if k == 1 else f"{metric[:-1]}{k}"


def _probability_text(p: float) -> str:
    return "> 0.999" if p > 0.999 else "< 0.001" if p < 0.001 else f"= {p:.3f}"


def difference_line(difference: CorrectedDifference, k: int, level: str) -> str:
    """One metric as every face words it: `pass^3: baseline 0.258 → candidate 0.725, difference
    +0.468, 95% interval [+0.257, +0.664], P(difference < 0) < 0.001`."""
    return (
        f"{_label(difference.metric, k)}: baseline {difference.baseline:.3f} → candidate {difference.candidate:.3f}, "
        f"difference {difference.difference:+.3f}, {level} interval [{difference.ci_low:+.3f}, {difference.ci_high:+.3f}], "
        f"P(difference < 0) {_probability_text(difference.probability_lower)}"
    )


def corrected_lines(corrected: JudgeCorrectedComparison) -> tuple[str, list[str]]:
    """(heading, lines) of the judge-corrected comparison as every face shows it: not measured
    (why, and that it is not a pass), or the draws and tasks, one line per metric
    (`difference_line`), the corrected verdict with its explanation, and the notes (different
    judges or calibrations)."""
    from fair_forge_core.compare.verdict import level_text

    if not corrected.measured:
        return "corrected for the judge's error: NOT MEASURED", [
            f"{corrected.reason}: the observed verdict was not checked against the judge's error (not a pass)"
        ]
    level = level_text(corrected.confidence)
    draws = "the judge read as exact" if corrected.method == "identity" else f"{corrected.draws} draws"
    how = (
        "one judge, one calibration: shared judge draws" if corrected.shared_judge_draws else "independent judge draws"
    )
    heading = (
        f"corrected for the judge's error ({draws}, seed {corrected.seed}, {corrected.tasks} task(s) with ≥ "
        f"{corrected.k} attempts on both sides; {how}; not part of the verdict):"
    )
    lines = [difference_line(d, corrected.k, level) for d in (corrected.pass_pow_k, corrected.pass_at_k) if d]
    shown = (corrected.verdict or "").replace("_", " ")
    band = "WITHIN THE JUDGE'S ERROR BAND" if corrected.within_judge_error else shown
    lines.append(f"corrected verdict: {band} — {corrected.explanation}")
    return heading, [*lines, *(f"note: {n}" for n in corrected.notes)]
