"""The verdict of a comparison from its metrics' tests: which tests could be significant (the
Holm family), Holm's adjustment over them, the verdict rule (`decide_verdict`), and the
sentences that explain a verdict and a metric left untested."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fair_forge_core.compare.tests import PValueMethod, holm_adjust, significance_level
from fair_forge_core.schemas import ComparedMetric
from fair_forge_core.schemas.comparison import Verdict


@dataclass
class MetricNumbers:
    """One metric's numbers before the verdict."""

    name: ComparedMetric
    tasks: int
    baseline: float | None = None
    candidate: float | None = None
    difference: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    bootstrap_p: float | None = None
    p_value: float | None = None
    method: PValueMethod | None = None
    standard_error: float | None = None
    notes: list[str] = field(default_factory=list)
    same_as: int = -1  # index of the first metric with the same per-task data, or its own
    floor: float | None = None  # the smallest p-value its test can give; None when no test ran


def testable_family(metrics: Sequence[MetricNumbers], confidence: float) -> tuple[list[int], int]:
    """Which of `metrics`' distinct tests could be significant at α = 1 − confidence, as
    (the family: their indices, the number of distinct tests that ran).

    A distinct test is a metric that is its own `same_as` and has a `floor`. Ranked by floor,
    the family is the largest group whose size times its largest floor is ≤ α (Holm's first
    step at best; the product grows with the floor, so the groups that qualify are the ones
    below a cut-off). A test outside it loses its p-value and method and gets a note saying
    why in numbers (`untestable`); a metric that shares the test of one outside it
    (`same_as`) loses them too and takes that metric's notes after its own. Mutates `metrics`.
    """
    floors = {i: m.floor for i, m in enumerate(metrics) if m.same_as == i and m.floor is not None}
    family = _family(floors, significance_level(confidence))
    for i, floor in floors.items():
        if i not in family:
            together = sum(1 for f in floors.values() if f <= floor)
            metrics[i].notes.append(untestable(metrics[i], floor, together, confidence))
            metrics[i].p_value = metrics[i].method = None
    for i, metric in enumerate(metrics):
        if metric.same_as != i and metric.same_as not in family:
            metric.p_value = metric.method = None
            metric.notes = [*metric.notes, *(n for n in metrics[metric.same_as].notes if n not in metric.notes)]
    return family, len(floors)


def _family(floors: Mapping[int, float], alpha: float) -> list[int]:
    """The tests (index: floor) of the largest group, by floor, whose size times its largest
    floor is ≤ `alpha`; [] when even the smallest floor's group is above it."""
    cutoff = None
    for floor in sorted(set(floors.values())):
        if sum(1 for f in floors.values() if f <= floor) * floor > alpha:
            break
        cutoff = floor
    return [i for i, f in floors.items() if cutoff is not None and f <= cutoff]


def holm_of(metrics: Sequence[MetricNumbers], family: Sequence[int]) -> list[float | None]:
    """Each metric's Holm-adjusted p-value: the family's p-values adjusted together
    (`holm_adjust`), a metric taking its test's (`same_as`); None for a metric without a p-value."""
    adjusted = dict(zip(family, holm_adjust([metrics[i].p_value or 0.0 for i in family]), strict=True))
    return [adjusted.get(m.same_as) if m.p_value is not None else None for m in metrics]


@dataclass(frozen=True)
class Decision:
    """A verdict and what decided it: which metrics are significant, and the names of those
    significantly lower and higher, in the metrics' order."""

    verdict: Verdict
    significant: list[bool]
    lower: list[ComparedMetric]
    higher: list[ComparedMetric]


def decide_verdict(
    metrics: Sequence[MetricNumbers], holm: Sequence[float | None], alpha: float, tested: bool
) -> Decision:
    """The verdict rule, from the Holm-adjusted p-values `holm` at level `alpha` (1 − confidence).

    A metric is significant when its Holm-adjusted p-value is ≤ α and its difference
    (candidate − baseline) is neither 0 nor None; lower or higher by the difference's sign.
    The verdict is `regressed` if any metric is significantly lower; else `improved` if at
    least one is significantly higher; else `inconclusive` if some test could be significant
    (`tested`: the Holm family is not empty); else `not_tested` (no metric was tested: no
    shared task, or too few for any test). The Bayesian probability does not vote.
    """
    significant = [p is not None and p <= alpha and bool(m.difference) for m, p in zip(metrics, holm, strict=True)]
    lower = [m.name for m, s in zip(metrics, significant, strict=True) if s and (m.difference or 0.0) < 0]
    higher = [m.name for m, s in zip(metrics, significant, strict=True) if s and (m.difference or 0.0) > 0]
    verdict: Verdict = "regressed" if lower else "improved" if higher else "inconclusive" if tested else "not_tested"
    return Decision(verdict, significant, lower, higher)


_TEST_NAMES: dict[PValueMethod, str] = {
    "bootstrap": "the bootstrap",
    "mcnemar_exact": "McNemar's exact test",
    "mcnemar_chi2": "McNemar's test",
    "sign_flip_exact": "the exact sign-flip test",
}


def level_text(confidence: float) -> str:
    """A confidence level as written in notes and explanations: 95%, or 0.955 when not a whole percent."""
    return f"{confidence:.0%}" if round(confidence * 100, 6).is_integer() else f"{confidence:g}"


def untestable(metric: MetricNumbers, floor: float, together: int, confidence: float) -> str:
    """Why a test that ran cannot show a difference: its floor alone is above α, or its floor
    times `together`, the tests Holm would adjust it with (its own and those with a floor as
    small or smaller), is."""
    test = _TEST_NAMES[metric.method] if metric.method is not None else "its test"
    head = f"{metric.tasks} tasks cannot show a difference at {level_text(confidence)}"
    if floor > significance_level(confidence):
        return f"{head}: {test}'s smallest p-value is {floor:.3g}"
    return (
        f"{head} among {together} distinct tests: {test}'s smallest p-value, {floor:.3g}, "
        f"is {together * floor:.3g} after Holm's adjustment"
    )


def explain(
    verdict: Verdict,
    metrics: Sequence[MetricNumbers],
    holm: Sequence[float | None],
    lower: Sequence[ComparedMetric],
    higher: Sequence[ComparedMetric],
    confidence: float,
    shared: int,
    k: int = 1,
) -> str:
    """One sentence on why the verdict is what it is, naming the metrics as every face does
    (`labels.metric_label` at `k`)."""
    from fair_forge_core.compare.labels import metric_label

    level = level_text(confidence)
    by_name = {m.name: (m, p) for m, p in zip(metrics, holm, strict=True)}

    def listed(names: Sequence[ComparedMetric]) -> str:
        return ", ".join(
            f"{metric_label(n, k)} ({by_name[n][0].difference:+.3f}, Holm-adjusted p = {by_name[n][1]:.3g})"
            for n in names
        )

    if verdict == "regressed":
        text = f"regressed: significantly lower at {level}: {listed(lower)}"
        return text + (f"; significantly higher: {listed(higher)}" if higher else "")
    if verdict == "improved":
        return f"improved: significantly higher at {level}: {listed(higher)}; none lower"
    if verdict == "not_tested":
        if not shared:
            return "not tested: no task was scored on both sides"
        return f"not tested: no metric could be tested at {level} on {shared} shared task(s) (see the metrics' notes)"
    tested = [p for p in holm if p is not None]
    return f"inconclusive: no metric differs significantly at {level} (smallest Holm-adjusted p = {min(tested):.3g})"
