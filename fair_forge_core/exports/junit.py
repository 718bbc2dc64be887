"""JUnit XML of an evaluation or a comparison, the test report Jenkins, GitLab and GitHub's
test reporters read (the tests validate it against tests/data/junit.xsd, the Ant JUnit report format those
readers document).

Evaluation (`junit_evaluation`): `<testsuites name="fair-forge evaluate">` holding one
`<testsuite>` per assistant (in the order the result lists them), with `tests`, `failures`,
`errors` (always 0: an evaluation that could not run writes no report) and `skipped`
counts, and as `<properties>` the assistant's readiness, tier, k, and its figures named by
their JSON paths: `pass_at_k` and `pass_pow_k` (pooled over its conversations) and, when its
conversations carry task ids, `per_task.pass_at_k` and `per_task.pass_pow_k` (empty when no
task has k attempts; docs/statistics.md, "Which pass^k is which"); when attempts were adaptive,
`adaptive.question`, `adaptive.decided`, `adaptive.pass_at_k_lower`, `adaptive.pass_pow_k_lower`
and `adaptive.biased` (the fields adaptive stopping biases, labelled "adaptive stopping: biased");
when the run was corrected for the judge's error, `corrected.pass_at_k`, `corrected.pass_pow_k`,
`corrected.pass_pow_k_ci_low`, `corrected.pass_pow_k_ci_high`, `corrected.method` and
`corrected.calibration`, and with the judge's noise split, `judge_noise.judge_share` and
`judge_noise.estimator` (`judge_properties`: the run's own, so with several assistants, whose
`by_assistant` metrics carry neither, no suite has them). One
`<testcase>` per case of `cases.cases` (a task, or a conversation without a task_id;
`classname` is the assistant): a failed case has one `<failure>` whose `message` is the
first reason and whose text is every reason, one a line; a skipped case one `<skipped>`
with why; a failed task's unscored attempts are its `<system-out>`.

Comparison (`junit_comparison`): one `<testsuite name="fair-forge compare">`, one case per
compared metric of the task-level tests, named by its id (`pass@k`) — failed when
significantly lower (the candidate regressed on it), skipped when not tested (`note` says
why), passed otherwise —, a case `attempts` for the attempt-level test (failed when its own
verdict is `regressed`, skipped when not tested), and a case `verdict`, the one that decides
(`population`'s): failed when `regressed` (or `inconclusive` under `require_conclusive`),
skipped when `not_tested`; its text lists the tasks that changed, worst first. When either side
was corrected for its judge's error, the properties `judge_corrected_verdict` and
`within_judge_error` (`Comparison.judge_corrected`; they change no case). Figures in
messages have 3 decimals (p-values `<0.001` below), like the other faces.

Times (`EvaluationTiming`, given by `fair-forge evaluate`, which timed the run): `<testsuites>`
and every `<testsuite>` carry `time`, the evaluation's wall-clock seconds, and each
`<testsuite>` its `timestamp`, when the evaluation started (UTC, ISO 8601 to the second, no
zone: Ant's form). The assistants are judged together in one evaluation, so each suite's time
is the whole evaluation's, not a share of it. A `<testcase>` has no `time`: the cases are not
timed one by one, and an absent time is not a zero. Without a timing (a result read back from a
file), no time is written; the comparison's JUnit has none (a comparison times nothing).
Characters XML 1.0 cannot hold (control characters in a judge's reasoning) are dropped, so the
file always parses.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from fair_forge_core.exports.cases import Case, Outcome, cases
from fair_forge_core.schemas import AggregatedMetrics, Comparison, EvaluationResult, MetricComparison

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """`text` without the characters XML 1.0 does not allow (C0 controls but tab and newlines,
    lone surrogates, U+FFFE, U+FFFF)."""
    return _NOT_XML.sub("", text)


def _element(parent: ET.Element, tag: str, text: str | None = None, **attributes: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {key: xml_text(value) for key, value in attributes.items()})
    if text is not None:
        element.text = xml_text(text)
    return element


def _document(root: ET.Element) -> str:
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _figure(value: float | None) -> str:
    return "" if value is None else repr(value)


def _properties(suite: ET.Element, aggregated: AggregatedMetrics | None) -> None:
    if aggregated is None:
        return
    properties = _element(suite, "properties")
    readiness = aggregated.readiness
    values = {
        "readiness": "" if readiness is None else readiness.summary,
        "tier": aggregated.interpretation or "",
        "k": str(aggregated.k),
        "pass_at_k": _figure(aggregated.pass_at_k),
        "pass_pow_k": _figure(aggregated.pass_pow_k),
    }
    if aggregated.per_task is not None:  # the headline pass@k / pass^k when readiness is per task
        values["per_task.pass_at_k"] = _figure(aggregated.per_task.pass_at_k)
        values["per_task.pass_pow_k"] = _figure(aggregated.per_task.pass_pow_k)
    adaptive = aggregated.adaptive
    if adaptive is not None:  # the bounds the gates read, and which figures adaptive stopping biases
        values["adaptive.question"] = adaptive.question
        values["adaptive.decided"] = f"{adaptive.above} above, {adaptive.below} below, {adaptive.undecided} undecided"
        values["adaptive.pass_at_k_lower"] = _figure(adaptive.pass_at_k_lower)
        values["adaptive.pass_pow_k_lower"] = _figure(adaptive.pass_pow_k_lower)
        values["adaptive.biased"] = "adaptive stopping: biased: " + ", ".join(
            name.removeprefix("aggregated_metrics.") for name in adaptive.biased
        )
    values.update(judge_properties(aggregated))
    for name, value in values.items():
        _element(properties, "property", name=name, value=value)


def judge_properties(aggregated: AggregatedMetrics) -> dict[str, str]:
    """The judge's measured error and noise as properties, each only when the aggregate carries
    it: from `judge_corrected`, `corrected.pass_at_k`, `corrected.pass_pow_k` and its posterior
    bounds (`repr`, empty when no task has k attempts), `corrected.method` and `corrected.calibration`
    (`TPR 25/29, TNR 26/26, calibration.json`); from `judge_noise`, `judge_noise.judge_share` (empty
    when not measured) and `judge_noise.estimator`."""
    from fair_forge_core.headline import calibration_counts

    values = {}
    corrected = aggregated.judge_corrected
    if corrected is not None:
        values["corrected.pass_at_k"] = _figure(corrected.pass_at_k)
        values["corrected.pass_pow_k"] = _figure(corrected.pass_pow_k)
        values["corrected.pass_pow_k_ci_low"] = _figure(corrected.pass_pow_k_ci_low)
        values["corrected.pass_pow_k_ci_high"] = _figure(corrected.pass_pow_k_ci_high)
        values["corrected.method"] = corrected.method
        values["corrected.calibration"] = calibration_counts(corrected)
    noise = aggregated.judge_noise
    if noise is not None:
        values["judge_noise.judge_share"] = _figure(noise.judge_share)
        values["judge_noise.estimator"] = noise.estimator
    return values


def _testcase(suite: ET.Element, case: Case) -> None:
    element = _element(suite, "testcase", classname=case.assistant_id, name=case.name)
    if case.outcome == "failed":
        _element(element, "failure", "\n".join(case.reasons), message=case.message, type=case.kind)
    elif case.outcome == "skipped":
        _element(element, "skipped", "\n".join(case.reasons), message=case.message)
    if case.notes:
        _element(element, "system-out", "\n".join(case.notes))


def _counts(element: ET.Element, all_cases: Sequence[Case], *, skipped: bool = True) -> None:
    element.set("tests", str(len(all_cases)))
    element.set("failures", str(sum(1 for c in all_cases if c.outcome == "failed")))
    element.set("errors", "0")
    if skipped:  # the schema has no `skipped` on <testsuites>
        element.set("skipped", str(sum(1 for c in all_cases if c.outcome == "skipped")))


@dataclass(frozen=True)
class EvaluationTiming:
    """When an evaluation started (an aware datetime) and how many wall-clock seconds it took."""

    started: datetime
    seconds: float

    def __post_init__(self) -> None:
        if self.started.tzinfo is None or not self.seconds >= 0:
            raise ValueError("an evaluation's timing needs an aware start and seconds ≥ 0")

    @property
    def timestamp(self) -> str:
        """The start in UTC as Ant's JUnit report writes it: ``2026-12-02T01:40:14``."""
        return self.started.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds")

    @property
    def time(self) -> str:
        """The seconds as a decimal (milliseconds), never an exponent."""
        return f"{self.seconds:.3f}"


def junit_evaluation(result: EvaluationResult, timing: EvaluationTiming | None = None) -> str:
    """The JUnit XML of an evaluation (module docstring), timed when `timing` is given."""
    all_cases = cases(result.per_conversation_metrics)
    root = ET.Element("testsuites", {"name": "fair-forge evaluate"})
    _counts(root, all_cases, skipped=False)
    if timing is not None:
        root.set("time", timing.time)
    assistants = list(dict.fromkeys(c.assistant_id for c in all_cases))
    by_assistant = result.aggregated_metrics.by_assistant
    for assistant in assistants:
        suite_cases = [c for c in all_cases if c.assistant_id == assistant]
        suite = _element(root, "testsuite", name=assistant)
        _counts(suite, suite_cases)
        if timing is not None:
            suite.set("time", timing.time)
            suite.set("timestamp", timing.timestamp)
        own = by_assistant.get(assistant) if by_assistant else result.aggregated_metrics
        _properties(suite, own)
        for case in suite_cases:
            _testcase(suite, case)
    return _document(root)


def _three(value: float | None, signed: bool = False) -> str:
    """A figure in a message: 3 decimals (signed for a difference), `—` for none."""
    return "—" if value is None else f"{value:+.3f}" if signed else f"{value:.3f}"


def _p(value: float | None) -> str:
    return "—" if value is None else "<0.001" if value < 0.001 else f"{value:.3f}"


def metric_case(metric: MetricComparison) -> Case:
    """A compared metric as a case: failed when significantly lower, skipped when not tested."""
    from fair_forge_core.compare.labels import metric_label

    # Named by its id (`pass@k`), not its label at k (`pass@3`): a CI keeps a test's history by
    # its name, and at k = 1 the labels of pass@1 and pass@k would be one name.
    name = metric.metric
    label = metric_label(metric.metric, metric.k)
    if metric.p_value is None:
        return Case("compare", "metric", name, (), "skipped", (metric.note or "not tested",), ())
    if metric.significant and metric.difference is not None and metric.difference < 0:
        reason = (
            f"{label} significantly lower: {_three(metric.baseline)} → {_three(metric.candidate)}, difference "
            f"{metric.difference:+.3f} [{_three(metric.ci_low, True)}, {_three(metric.ci_high, True)}], "
            f"p (Holm) {_p(metric.p_value_holm)}, over {metric.tasks} task(s)"
        )
        return Case("compare", "metric", name, (), "failed", (reason,), ())
    return Case("compare", "metric", name, (), "passed", (), ())


def attempt_case(comparison: Comparison) -> Case | None:
    """The attempt-level test as a case: failed when its verdict is regressed, skipped when not
    tested; None in a comparison written before it existed."""
    test = comparison.attempt_test
    if test is None:
        return None
    outcome: Outcome = (
        "failed" if test.verdict == "regressed" else "skipped" if test.verdict == "not_tested" else "passed"
    )
    return Case("compare", "verdict", "attempts", (), outcome, (test.verdict_explanation,), ())


def changed_lines(comparison: Comparison) -> list[str]:
    """The tasks that changed as lines, worst first, at most `labels.MAX_CHANGED_TASKS`."""
    from fair_forge_core.compare.labels import MAX_CHANGED_TASKS, counts

    changed = comparison.changed_tasks or []
    lines = [
        f"{t.task}: {counts(t.baseline_successes, t.baseline_attempts)} → "
        f"{counts(t.candidate_successes, t.candidate_attempts)}, difference {t.difference:+.3f}, "
        f"p (this task alone) {_p(t.p_value)}{', significant alone' if t.significant_alone else ''}"
        for t in changed[:MAX_CHANGED_TASKS]
    ]
    if len(changed) > MAX_CHANGED_TASKS:
        lines.append(f"… and {len(changed) - MAX_CHANGED_TASKS} more")
    return (["tasks that changed (worst first):", *lines]) if lines else []


def verdict_case(comparison: Comparison, require_conclusive: bool = False) -> Case:
    """The verdict as a case: failed when regressed (or inconclusive under `require_conclusive`),
    skipped when not tested, passed otherwise; its reason is the verdict's explanation, then
    the tasks that changed."""
    reasons = (comparison.verdict_explanation, *changed_lines(comparison))
    failed = comparison.verdict == "regressed" or (comparison.verdict == "inconclusive" and require_conclusive)
    outcome: Outcome = "failed" if failed else "skipped" if comparison.verdict == "not_tested" else "passed"
    return Case("compare", "verdict", "verdict", (), outcome, reasons, ())


def _corrected_properties(comparison: Comparison) -> list[tuple[str, str]]:
    """When either side was corrected for its judge's error: the corrected verdict ("not_measured"
    when it was not) and whether the verdict is within the judge's error band ("unknown" when
    that could not be said)."""
    corrected = comparison.judge_corrected
    if corrected is None:
        return []
    within = corrected.within_judge_error
    return [
        ("judge_corrected_verdict", corrected.verdict or "not_measured"),
        ("within_judge_error", "unknown" if within is None else str(within).lower()),
    ]


def junit_comparison(comparison: Comparison, require_conclusive: bool = False) -> str:
    """The JUnit XML of a comparison (module docstring)."""
    attempts = attempt_case(comparison)
    all_cases = [
        *(metric_case(m) for m in comparison.metrics),
        *([attempts] if attempts is not None else []),
        verdict_case(comparison, require_conclusive),
    ]
    root = ET.Element("testsuites", {"name": "fair-forge compare"})
    _counts(root, all_cases, skipped=False)
    suite = _element(root, "testsuite", name="fair-forge compare")
    _counts(suite, all_cases)
    properties = _element(suite, "properties")
    for name, value in (
        ("verdict", comparison.verdict),
        ("shared_tasks", str(comparison.shared_tasks)),
        ("k", str(comparison.k)),
        ("confidence", repr(comparison.confidence)),
        ("population", comparison.population or "tasks"),
        *_corrected_properties(comparison),
    ):
        _element(properties, "property", name=name, value=value)
    for case in all_cases:
        element = _element(suite, "testcase", classname="compare", name=case.name)
        if case.outcome == "failed":
            _element(element, "failure", "\n".join(case.reasons), message=case.reasons[0], type=case.kind)
        elif case.outcome == "skipped":
            _element(element, "skipped", "\n".join(case.reasons), message=case.reasons[0])
        elif case.name == "verdict":
            _element(element, "system-out", "\n".join(case.reasons))
    return _document(root)
