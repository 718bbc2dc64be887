"""What the report shows of the judge's measured error and noise (issue #36): the figures of
`aggregated_metrics.judge_corrected` beside the observed ones, with the calibration they were
corrected by, and `aggregated_metrics.judge_noise` in one line (`headline.judge_noise_line`).

Plain data for the templates, like `view`: nothing is markup, nothing is escaped here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fair_forge_core.headline import CORRECTED_LABEL, Metric, symbol
from fair_forge_core.report.values import Interval, JsonPath, percent, value_at

CORRECTED: JsonPath = ("aggregated_metrics", "judge_corrected")
"""Where the corrected figures are in the result."""


def corrected_name(metric: Metric, k: int | str) -> str:
    """The one name of a corrected figure, as the headline writes it: `pass^3 (per task, corrected
    for the judge's error)`; `pass^K (…)` for the curve."""
    return f"{symbol(metric, k)} ({CORRECTED_LABEL})"


@dataclass(frozen=True)
class CorrectedFigures:
    """The corrected key figures: `measured` when some task has k attempts (else there are no
    figures, and `reason` says why); `identity` when the calibration was perfect and the figures are
    today's. `intervals` are the posterior ones ("95% posterior"), or under "identity" Wilson's over
    tasks; `calibration` the counts and source (`headline.calibration_counts`) and `method` how
    they were drawn (`headline.corrected_method`)."""

    base: JsonPath
    k: int
    measured: bool
    identity: bool
    intervals: dict[str, Interval | None]
    calibration: str
    method: str
    reason: str

    @property
    def symbols(self) -> dict[str, str]:
        """Each figure's bare symbol at k (`pass@3`, `pass^3`), for the intervals under the tile's name."""
        return {metric: symbol(metric, self.k) for metric in ("pass_at_k", "pass_pow_k")}

    @property
    def pair_name(self) -> str:
        """The tile's label: `pass@3 / pass^3 (per task, corrected for the judge's error)`."""
        return f"{symbol('pass_at_k', self.k)} / {corrected_name('pass_pow_k', self.k)}"


def corrected_interval(data: Mapping[str, Any], metric: str) -> Interval | None:
    """The interval of a corrected figure at the result's `ci_level`: posterior under "monte_carlo",
    Wilson over tasks under "identity"; None when the figure was not measured."""
    corrected = data["aggregated_metrics"]["judge_corrected"]
    low, high = value_at(data, (*CORRECTED, f"{metric}_ci_low")), value_at(data, (*CORRECTED, f"{metric}_ci_high"))
    if low.value is None or high.value is None:
        return None
    kind = "Wilson" if corrected["interval_method"] == "task_wilson" else "posterior"
    return Interval(f"{percent(corrected['ci_level'])} {kind} ", low, high)


def corrected_figures(data: Mapping[str, Any]) -> CorrectedFigures | None:
    """The corrected key figures of the result `data`, None when it carries no `judge_corrected`."""
    from fair_forge_core.headline import calibration_counts, corrected_method
    from fair_forge_core.schemas import JudgeCorrected

    raw = data["aggregated_metrics"].get("judge_corrected")
    if raw is None:
        return None
    corrected = JudgeCorrected.model_validate(raw)
    return CorrectedFigures(
        base=CORRECTED,
        k=corrected.k,
        measured=corrected.pass_pow_k is not None and corrected.pass_at_k is not None,
        identity=corrected.method == "identity",
        intervals={metric: corrected_interval(data, metric) for metric in ("pass_at_k", "pass_pow_k")},
        calibration=calibration_counts(corrected),
        method=corrected_method(corrected),
        reason=f"not measured: no task with {corrected.k} or more attempts",
    )


def judge_noise_line(data: Mapping[str, Any]) -> str | None:
    """`aggregated_metrics.judge_noise` in one line (`headline.judge_noise_line`), None without it."""
    from fair_forge_core.headline import judge_noise_line as line
    from fair_forge_core.schemas import NoiseDecomposition

    raw = data["aggregated_metrics"].get("judge_noise")
    return None if raw is None else line(NoiseDecomposition.model_validate(raw))
