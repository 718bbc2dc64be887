"""Calibration of the judge against human labels: from judged pairs to agreement, κ, TPR, TNR.

The first part is pure (no judge, no I/O): `build_report` turns each pair's human label and
the judge's score into a `CalibrationReport`, and `format_report` into the text the CLI
prints. `calibrate` (at the end) runs the judge on the pairs through exactly the path of
`POST /run` (`fair_forge_core.evaluate.judge_all` with an `AnswerJudge`); it imports the
judge only when called.

Rules, over the *scored* pairs only (a pair the judge could not score, or abstained on, is
listed in `unscored_pairs` and counted nowhere else):

- The judge passes a pair ⇔ its score ≥ `threshold` (as `POST /run` decides a turn's answer).
- Agreement = (judge pass ∧ human pass + judge fail ∧ human fail) / scored.
- Cohen's κ = (p_o − p_e) / (1 − p_e), with p_o the agreement and p_e the agreement expected by
  chance from the two sides' marginals, (J_pass·H_pass + J_fail·H_fail) / scored²; computed
  exactly in rationals; None when p_e = 1 (one label everywhere on both sides).
- TPR = judge passes / human passes (the share of good answers the judge lets through);
  TNR = judge fails / human fails (the share of bad answers it catches); the false-pass rate
  = judge passes / human fails = 1 − TNR (bad answers that slip through).
- Each proportion carries Wilson's score interval at 95 % (`stats.wilson_interval`); a rate
  whose denominator is 0 is None.
- Best threshold: the candidates are the configured threshold and every distinct observed
  score; a candidate t passes a pair ⇔ score ≥ t. Every threshold up to the highest score
  classifies the pairs as one of these does; one above it fails every pair, and is a
  candidate only as the configured threshold (a judge that fails everything is no judge,
  however well it agrees with a set of failures). The best maximises the number of agreeing
  pairs; among equals, the one closest to the configured threshold wins (so the configured
  threshold is reported whenever nothing does strictly better), and of two equally close
  (distances equal to 1e-9, so 0.6 and 0.8 are equally close to 0.7 whatever binary floats
  make of them), the higher (the stricter). `BEST_THRESHOLD_RULE` says this in the report.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from fair_forge_core import stats
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.schemas.calibration import (
    CALIBRATION_CONFIDENCE,
    BestThreshold,
    CalibrationConfig,
    CalibrationReport,
    CategoryAgreement,
    ConfusionTable,
    LabelledPair,
    PairResult,
    Proportion,
    UnscoredPair,
)

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

    from fair_forge_core.judges.llm import JudgeTelemetry, RetryPolicy

BEST_THRESHOLD_RULE = (
    "candidates: the configured threshold and each distinct observed score (a pair passes at t when its "
    "score >= t); the most agreeing pairs wins; ties: the closest to the configured threshold, then the higher"
)

DISTANCE_DIGITS = 9
"""Distances to the configured threshold are compared rounded to this many decimals."""

SMALL_SAMPLE = 30
"""Below this many scored pairs the report warns that its intervals are wide."""


class NoPairScored(Exception):
    """The judge scored none of the pairs; the message gives the most common causes."""


@dataclass(frozen=True)
class Counts:
    """The confusion counts of the scored pairs: judge verdict × human label."""

    judge_pass_human_pass: int = 0
    judge_pass_human_fail: int = 0
    judge_fail_human_pass: int = 0
    judge_fail_human_fail: int = 0

    @property
    def scored(self) -> int:
        return self.judge_pass + self.judge_fail

    @property
    def agreed(self) -> int:
        return self.judge_pass_human_pass + self.judge_fail_human_fail

    @property
    def human_pass(self) -> int:
        return self.judge_pass_human_pass + self.judge_fail_human_pass

    @property
    def human_fail(self) -> int:
        return self.judge_pass_human_fail + self.judge_fail_human_fail

    @property
    def judge_pass(self) -> int:
        return self.judge_pass_human_pass + self.judge_pass_human_fail

    @property
    def judge_fail(self) -> int:
        return self.judge_fail_human_pass + self.judge_fail_human_fail


def count(scores: Sequence[float], human_pass: Sequence[bool], threshold: float) -> Counts:
    """The confusion counts of scored pairs (`scores[i]`, `human_pass[i]`) at `threshold`."""
    cells = [0, 0, 0, 0]
    for score, human in zip(scores, human_pass, strict=True):
        judge = score >= threshold
        cells[(0 if judge else 2) + (0 if human else 1)] += 1
    return Counts(*cells)


def proportion(successes: int, n: int, level: float = CALIBRATION_CONFIDENCE) -> Proportion | None:
    """`successes / n` with Wilson's score interval at `level`; None when n = 0."""
    if n == 0:
        return None
    low, high = stats.wilson_interval(n, successes, level)
    return Proportion(value=successes / n, successes=successes, n=n, ci_low=low, ci_high=high)


def cohens_kappa(counts: Counts) -> float | None:
    """Cohen's κ of the judge and the human, (p_o − p_e) / (1 − p_e), computed in rationals.

    p_o = agreed / n; p_e = (J_pass·H_pass + J_fail·H_fail) / n². None when n = 0 or p_e = 1.
    """
    n = counts.scored
    if n == 0:
        return None
    observed = Fraction(counts.agreed, n)
    chance = Fraction(counts.judge_pass * counts.human_pass + counts.judge_fail * counts.human_fail, n * n)
    if chance == 1:
        return None
    return float((observed - chance) / (1 - chance))


def best_threshold(scores: Sequence[float], human_pass: Sequence[bool], configured: float) -> BestThreshold | None:
    """The agreement-maximising threshold under `BEST_THRESHOLD_RULE` (module docstring); None
    when nothing was scored. O(n log n): the agreement at t is the human passes scoring ≥ t plus
    the human fails scoring < t, read off the two sorted score lists."""
    if not scores:
        return None
    passes = sorted(s for s, h in zip(scores, human_pass, strict=True) if h)
    fails = sorted(s for s, h in zip(scores, human_pass, strict=True) if not h)

    def agreed(t: float) -> int:
        return len(passes) - bisect.bisect_left(passes, t) + bisect.bisect_left(fails, t)

    candidates = sorted({configured, *scores})
    # Most agreeing pairs, then the nearest to the configured threshold, then the higher.
    best = max(candidates, key=lambda t: (agreed(t), -round(abs(t - configured), DISTANCE_DIGITS), t))
    n = len(scores)
    at_best, at_configured = agreed(best), agreed(configured)
    return BestThreshold(
        threshold=best,
        agreed=at_best,
        scored=n,
        agreement=at_best / n,
        improvement=(at_best - at_configured) / n,
        rule=BEST_THRESHOLD_RULE,
    )


def build_report(
    pairs: Sequence[LabelledPair], judgements: Sequence[TurnJudgement], threshold: float
) -> CalibrationReport:
    """The report of `pairs` judged as `judgements` (one each, in order) at `threshold`.

    See the module docstring for each figure's rule. Unscored pairs (score None) are listed
    with their error and counted in no rate, cell or category agreement.
    """
    if len(pairs) != len(judgements):
        raise ValueError(f"{len(pairs)} pairs but {len(judgements)} judgements")
    results: list[PairResult] = []
    unscored: list[UnscoredPair] = []
    scores: list[float] = []
    human: list[bool] = []
    by_category: dict[str | None, list[int]] = {}  # category → [pairs, scored, agreed]
    for index, (pair, judgement) in enumerate(zip(pairs, judgements, strict=True)):
        tally = by_category.setdefault(pair.category, [0, 0, 0])
        tally[0] += 1
        if judgement.score is None:
            error = judgement.error or "the judge gave no score"
            unscored.append(UnscoredPair(index=index, category=pair.category, label=pair.label, error=error))
            results.append(
                PairResult(
                    index=index,
                    category=pair.category,
                    label=pair.label,
                    score=None,
                    judge_label=None,
                    agrees=None,
                    reasoning=judgement.reasoning,
                    error=error,
                )
            )
            continue
        judge_pass = judgement.score >= threshold
        agrees = judge_pass == (pair.label == "pass")
        tally[1] += 1
        tally[2] += int(agrees)
        scores.append(judgement.score)
        human.append(pair.label == "pass")
        results.append(
            PairResult(
                index=index,
                category=pair.category,
                label=pair.label,
                score=judgement.score,
                judge_label="pass" if judge_pass else "fail",
                agrees=agrees,
                reasoning=judgement.reasoning,
                error=None,
            )
        )
    counts = count(scores, human, threshold)
    categories = sorted(by_category, key=lambda c: (c is None, c or ""))
    warnings: list[str] = []
    if unscored:
        warnings.append(f"{len(unscored)} pair(s) unscored and left out of every figure (listed in unscored_pairs)")
    if 0 < counts.scored < SMALL_SAMPLE:
        warnings.append(f"only {counts.scored} scored pairs: the intervals are wide; label at least {SMALL_SAMPLE}")
    if counts.scored and (counts.human_pass == 0 or counts.human_fail == 0):
        missing = "pass" if counts.human_pass == 0 else "fail"
        warnings.append(f"no scored pair is labelled {missing!r}: add some to measure the judge on both sides")
    return CalibrationReport(
        threshold=threshold,
        pairs=len(pairs),
        scored=counts.scored,
        unscored=len(unscored),
        confusion=ConfusionTable(
            judge_pass_human_pass=counts.judge_pass_human_pass,
            judge_pass_human_fail=counts.judge_pass_human_fail,
            judge_fail_human_pass=counts.judge_fail_human_pass,
            judge_fail_human_fail=counts.judge_fail_human_fail,
        ),
        agreement=proportion(counts.agreed, counts.scored),
        kappa=cohens_kappa(counts),
        tpr=proportion(counts.judge_pass_human_pass, counts.human_pass),
        tnr=proportion(counts.judge_fail_human_fail, counts.human_fail),
        false_pass_rate=proportion(counts.judge_pass_human_fail, counts.human_fail),
        per_category=[
            CategoryAgreement(
                category=category,
                pairs=tally[0],
                scored=tally[1],
                unscored=tally[0] - tally[1],
                agreed=tally[2],
                agreement=tally[2] / tally[1] if tally[1] else None,
            )
            for category in categories
            for tally in [by_category[category]]
        ],
        best_threshold=best_threshold(scores, human, threshold),
        unscored_pairs=unscored,
        results=results,
        warnings=warnings,
    )


# --------------------------------------------------------------------------- text


def _rate(rate: Proportion | None) -> str:
    if rate is None:
        return "—"
    return f"{rate.value:6.1%}  ({rate.successes}/{rate.n}; 95% CI {rate.ci_low:.1%}–{rate.ci_high:.1%})"


def format_report(report: CalibrationReport, disagreements: int = 10) -> str:
    """The readable report `fair-forge calibrate` prints: the figures with their intervals, the
    confusion table, agreement per category, the best threshold, then up to `disagreements`
    pairs where the judge and the human disagree, and every unscored pair's index and cause
    (at most 20 lines)."""
    c = report.confusion
    lines = [
        f"{report.pairs} labelled pairs, {report.scored} scored, {report.unscored} unscored; "
        f"threshold {report.threshold:g} (judge passes when score >= threshold)",
        "",
        f"agreement        {_rate(report.agreement)}",
        f"Cohen's kappa    {'—' if report.kappa is None else f'{report.kappa:6.3f}'}",
        f"TPR              {_rate(report.tpr)}   judge passes / human passes",
        f"TNR              {_rate(report.tnr)}   judge fails / human fails",
        f"false-pass rate  {_rate(report.false_pass_rate)}   judge passes / human fails",
        "",
    ]
    lines += [
        f"{'':12}{'human pass':>12}{'human fail':>12}",
        f"{'judge pass':12}{c.judge_pass_human_pass:>12}{c.judge_pass_human_fail:>12}",
        f"{'judge fail':12}{c.judge_fail_human_pass:>12}{c.judge_fail_human_fail:>12}",
        f"{'unscored':12}{_unscored_with(report, 'pass'):>12}{_unscored_with(report, 'fail'):>12}"
        "   (not counted above)",
        "",
    ]
    if report.per_category:
        name_width = max(len("category"), *(len(cat.category or "(none)") for cat in report.per_category))
        lines.append(f"{'category':<{name_width}}  agreed/scored  agreement  unscored")
        for cat in report.per_category:
            agreement = "—" if cat.agreement is None else f"{cat.agreement:.1%}"
            lines.append(
                f"{cat.category or '(none)':<{name_width}}  {f'{cat.agreed}/{cat.scored}':>13}  "
                f"{agreement:>9}  {cat.unscored:>8}"
            )
        lines.append("")
    best = report.best_threshold
    if best is not None:
        change = "the configured threshold" if best.threshold == report.threshold else f"{best.improvement:+.1%}"
        lines.append(
            f"best threshold   {best.threshold:g}: agreement {best.agreement:.1%} ({best.agreed}/{best.scored}), {change}"
        )
        lines.append(f"  rule: {best.rule}")
    wrong = [r for r in report.results if r.agrees is False]
    if wrong:
        lines.append("")
        lines.append(f"disagreements ({len(wrong)}; #index in the file from 0, category, human label, judge score):")
        for r in wrong[:disagreements]:
            lines.append(f"  #{r.index} {r.category or '(none)'}: human {r.label}, judge {r.score:g}")
        if len(wrong) > disagreements:
            lines.append(f"  … and {len(wrong) - disagreements} more (see --out)")
    if report.unscored_pairs:
        lines.append("")
        lines.append("unscored (not counted):")
        for u in report.unscored_pairs[:20]:
            lines.append(f"  #{u.index} {u.category or '(none)'}: {u.error}")
        if len(report.unscored_pairs) > 20:
            lines.append(f"  … and {len(report.unscored_pairs) - 20} more")
    return "\n".join(lines) + "\n"


def _unscored_with(report: CalibrationReport, label: str) -> int:
    return sum(1 for u in report.unscored_pairs if u.label == label)


# --------------------------------------------------------------------------- running the judge


async def calibrate(
    pairs: Sequence[LabelledPair],
    chat_model: BaseChatModel,
    config: CalibrationConfig | None = None,
    *,
    deadline: float | None = None,
    retry: RetryPolicy | None = None,
    telemetry: JudgeTelemetry | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> CalibrationReport:
    """Judge every pair with `chat_model` exactly as `POST /run` judges a turn (the same
    `AnswerJudge`, prompt, retries, concurrency cap and deadline; identical pairs judged once;
    context "" and language "english"), then `build_report`.

    Raises `JudgeProviderRefused` when the provider refuses, and `NoPairScored` when no pair
    could be scored.
    """
    from collections import Counter

    from fair_forge_core.evaluate import judge_all
    from fair_forge_core.judges.base import JudgeTelemetry, RetryPolicy, RunContext
    from fair_forge_core.judges.kinds import judge_for
    from fair_forge_core.judges.prompt import JudgeRequest

    config = config or CalibrationConfig()
    context = RunContext(retry=retry or RetryPolicy(), telemetry=telemetry or JudgeTelemetry(), deadline=deadline)
    judge = judge_for(chat_model, config.evaluation_config(), context)  # as POST /run judges a turn
    requests = [JudgeRequest(pair.query, pair.answer, pair.ground_truth) for pair in pairs]
    judged = await judge_all(requests, judge, on_progress)
    judgements = [judged[request] for request in requests]
    if pairs and all(j.score is None for j in judgements):
        causes = Counter(j.error or "no score" for j in judgements)
        summary = "; ".join(f"{n}× {cause}" for cause, n in causes.most_common(3))
        raise NoPairScored(f"no pair could be scored: {summary}")
    from fair_forge_core.provenance import judge_provenance

    report = build_report(pairs, judgements, config.threshold)
    report.judge = judge_provenance(chat_model, config.evaluation_config())
    return report


def calibrate_sync(pairs: Sequence[LabelledPair], chat_model: BaseChatModel, **kwargs: Any) -> CalibrationReport:
    """`calibrate` for callers without an event loop (`evaluate.run_sync`: one loop per process)."""
    from fair_forge_core.evaluate import run_sync

    return run_sync(calibrate(pairs, chat_model, **kwargs))
