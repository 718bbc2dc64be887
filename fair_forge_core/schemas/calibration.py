"""Calibration of the judge against human labels: the request (`CalibrationRequest`, the body of
`POST /calibrate`) and the report (`CalibrationReport`). The rules behind each figure are in
`fair_forge_core.calibration`.

A labelled pair is one answer a human graded at the evaluation's threshold: `label` "pass"
means the human would count the answer correct. The request side is as strict as
`RunRequest`'s (unknown fields refused, no coercion, finite numbers).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fair_forge_core.schemas.base import RequestModel, ResultModel
from fair_forge_core.schemas.config import EvaluationConfig, StructuredOutputMethod
from fair_forge_core.schemas.json_input import omitted_when_none
from fair_forge_core.schemas.request import ConnectorSpec
from fair_forge_core.schemas.result import JudgeProvenance

Label = Literal["pass", "fail"]

CALIBRATION_CONFIDENCE = 0.95
"""The two-sided level of every interval of a `CalibrationReport`."""


class LabelledPair(RequestModel):
    """One answer and its ground truth, graded by a human: `label` is "pass" when the answer
    is correct at the threshold, "fail" otherwise. `category` groups pairs in the report."""

    query: str
    answer: str
    ground_truth: str
    label: Label
    category: str | None = None


class CalibrationConfig(RequestModel):
    """Options of a calibration, all optional: the threshold under test (a pair passes the
    judge when its score ≥ `threshold`), the judge calls in flight, and the judge's output
    mode, exactly as in `EvaluationConfig` (so the judge is calibrated as it will run)."""

    threshold: float = Field(0.7, ge=0, le=1)
    max_concurrency: int = Field(8, ge=1, le=512)
    use_structured_output: bool = False
    structured_output_method: StructuredOutputMethod | None = None
    bos_json_clause: str = "```json"
    eos_json_clause: str = "```"

    def evaluation_config(self) -> EvaluationConfig:
        """The `EvaluationConfig` the judge runs under: these fields, every other at its default."""
        return EvaluationConfig(
            threshold=self.threshold,
            max_concurrency=self.max_concurrency,
            use_structured_output=self.use_structured_output,
            structured_output_method=self.structured_output_method,
            bos_json_clause=self.bos_json_clause,
            eos_json_clause=self.eos_json_clause,
        )


class CalibrationRequest(RequestModel):
    """The body of `POST /calibrate`: the judge (as in `POST /run`), the labelled pairs, options."""

    connector: ConnectorSpec
    pairs: list[LabelledPair] = Field(min_length=1)
    config: CalibrationConfig = Field(default_factory=CalibrationConfig)


# --------------------------------------------------------------------------- report


class Proportion(ResultModel):
    """`successes` of `n`, their share `value`, and Wilson's score interval at the report's level."""

    value: float
    successes: int
    n: int
    ci_low: float
    ci_high: float


class ConfusionTable(ResultModel):
    """Scored pairs by the judge's verdict (score ≥ threshold: pass) × the human label.
    Unscored pairs are in none of the four cells."""

    judge_pass_human_pass: int
    judge_pass_human_fail: int
    judge_fail_human_pass: int
    judge_fail_human_fail: int


class PairResult(ResultModel):
    """One pair: the judge's score (None when unscored), its verdict at the threshold, whether
    it agrees with the human, the judge's reasoning, or why the pair is unscored."""

    index: int
    category: str | None
    label: Label
    score: float | None
    judge_label: Label | None
    agrees: bool | None
    reasoning: str | None
    error: str | None


class UnscoredPair(ResultModel):
    """A pair the judge could not score (or abstained on): never counted as agreement or disagreement."""

    index: int
    category: str | None
    label: Label
    error: str


class CategoryAgreement(ResultModel):
    """Agreement within one category (`category` None: the pairs without one). `agreement` is
    `agreed / scored`, None when no pair of the category was scored."""

    category: str | None
    pairs: int
    scored: int
    unscored: int
    agreed: int
    agreement: float | None


class BestThreshold(ResultModel):
    """The threshold that maximises agreement over the observed scores (`rule` states how it
    is chosen), the agreement it gives, and its gain over the configured threshold's."""

    threshold: float
    agreed: int
    scored: int
    agreement: float
    improvement: float
    rule: str


class CalibrationReport(ResultModel):
    """How well the judge at `threshold` agrees with the human labels (`fair_forge_core.calibration`).

    Every rate is over the scored pairs only; each is None when its denominator is 0 (no
    scored pair; no pair a human passed, for `tpr`; none a human failed, for `tnr` and
    `false_pass_rate`). `kappa` is None when chance agreement is 1 (both sides gave one
    label to every scored pair).
    """

    success: Literal[True] = True
    threshold: float
    confidence: float = CALIBRATION_CONFIDENCE
    pairs: int
    scored: int
    unscored: int
    confusion: ConfusionTable
    agreement: Proportion | None
    kappa: float | None
    tpr: Proportion | None
    tnr: Proportion | None
    false_pass_rate: Proportion | None
    per_category: list[CategoryAgreement]
    best_threshold: BestThreshold | None
    unscored_pairs: list[UnscoredPair]
    results: list[PairResult]
    warnings: list[str] = Field(default_factory=list)
    judge: JudgeProvenance | None = omitted_when_none()
    """The judge calibrated (`provenance.judge_provenance` under the calibration's output mode): its
    `identity` is what `config.judge_error.judge` must be for a run it corrects (docs/statistics.md
    "Correcting for the judge's error"); absent from reports written before it was recorded."""
