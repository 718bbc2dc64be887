"""`answer_correctness`: the judge's score of each turn's answer against `config.threshold`
(docs/correctness.md). Required: a turn whose answer is wrong is wrong."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from fair_forge_core.checks.base import judged_outcome, one_line, register_check, result
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.judges.prompt import JudgeRequest
from fair_forge_core.schemas import CheckResult, Dataset, EvaluationConfig


def answer_reason(judgement: TurnJudgement, threshold: float) -> str:
    """`answer score 0.300 below the threshold 0.500: <reasoning>` (or `at or above`); for an
    unscored turn, the judgement's error as it is."""
    if judgement.score is None:
        return judgement.error or "no score"
    side = "at or above" if judgement.score >= threshold else "below"
    return f"answer score {judgement.score:.3f} {side} the threshold {threshold:.3f}: {one_line(judgement.reasoning)}"


@register_check
@dataclass(frozen=True)
class AnswerCheck:
    """Turn `i` passes when its judgement's score ≥ `threshold`, fails below it, and is unscored
    (with the judgement's cause) when the judge gave no score.

    A judgement is one object per distinct question of an evaluation (`evaluate.judge_all`), and
    attempts of one task repeat their turns' questions: so the result of each (judgement, turn)
    is made once per check, that is per evaluation (`_made`, keyed by the judgement's identity:
    the entry holds the judgement, so no other object can take that identity while it lives)."""

    name: ClassVar[str] = "answer_correctness"
    threshold: float
    _made: dict[tuple[int, int], tuple[TurnJudgement, CheckResult]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _asked: dict[tuple[int, ...], tuple[tuple[str | None, ...], JudgeRequest]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def for_config(cls, config: EvaluationConfig) -> AnswerCheck:
        return cls(threshold=config.threshold)

    def questions(self, dataset: Dataset) -> Sequence[JudgeRequest]:
        """Each turn as the judge reads it: query, answer, ground truth, the conversation's context
        and language, the turn's observation (equal requests are judged once per evaluation).

        Equal texts of a request are one `str` (`sharing`), so a repeated turn gives the same
        texts by identity, and its request is made once per check (`_asked`: each entry holds
        its texts, so no other object can take their identities while it lives)."""
        context, language = dataset.context, dataset.language
        asked, requests = self._asked, []
        for b in dataset.conversation:
            texts = (b.query, b.assistant, b.ground_truth_assistant, context, language, b.observation)
            key = tuple(map(id, texts))
            found = asked.get(key)
            if found is None:
                found = asked[key] = (texts, JudgeRequest(*texts))
            requests.append(found[1])
        return requests

    def check(self, dataset: Dataset, judged: Sequence[TurnJudgement]) -> list[CheckResult]:
        made = self._made
        results = []
        for index, j in enumerate(judged):
            found = made.get((id(j), index))
            if found is None:
                found = made[id(j), index] = (j, self._result(index, j))
            results.append(found[1])
        return results

    def _result(self, index: int, j: TurnJudgement) -> CheckResult:
        threshold = self.threshold
        return result(
            self,
            turn=index,
            outcome=judged_outcome(None if j.score is None else j.score >= threshold),
            reason=answer_reason(j, threshold),
            required=True,
            score=j.score,
            cause=j.cause if j.score is None else None,
            view=j,
        )

    def spec(self) -> dict[str, Any]:
        return {"threshold": self.threshold}
