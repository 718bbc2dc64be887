"""`ToolScorer`: `score_tool_calls` under one config, with a memo of the turns scored."""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any, cast

from pydantic import BaseModel

from fair_forge_core.schemas import (
    AgenticTrace,
    Batch,
    EvaluationConfig,
    GroundTruthAgentic,
    ToolCorrectnessScore,
    ToolWeights,
)
from fair_forge_core.tools.score import score_tool_calls


class ToolScorer:
    """`score_tool_calls` under one config, scoring each distinct turn once.

    Turns often repeat (attempts of one task, a shared test set), and scoring is a
    pure function of the trace, the ground truth and the answer, so equal inputs
    share one `ToolCorrectnessScore` (treat it as read-only). Inputs are compared
    exactly: by type as well as value (True ≠ 1, 5 ≠ 5.0, dict key order counts),
    including which fields were set. A turn holding a value that is not plain JSON
    data (str, int, float, bool, None, dict, list, tuple) is scored without the memo.
    The same objects asked for again (an evaluation scores tools before judging, then
    reads the scores back per conversation) are found by identity first, without
    building the key; the scorer keeps them alive, so an identity is never reused.
    Turns validated from equal JSON can be given the same objects beforehand
    (`fair_forge_core.sharing.share_repeated_values`): they are then found by identity too.
    """

    def __init__(self, weights: ToolWeights, tool_threshold: float, dimension_floor: float) -> None:
        self.weights = weights
        self.tool_threshold = tool_threshold
        self.dimension_floor = dimension_floor
        self._scores: dict[Hashable, ToolCorrectnessScore] = {}
        self._seen: dict[tuple[int, int, str], tuple[Any, Any, ToolCorrectnessScore]] = {}

    @classmethod
    def for_config(cls, config: EvaluationConfig) -> ToolScorer:
        """The scorer of an evaluation's `tool_weights`, `tool_threshold` and `tool_dimension_floor`."""
        return cls(config.tool_weights, config.tool_threshold, config.tool_dimension_floor)

    def score_batch(self, batch: Batch) -> ToolCorrectnessScore | None:
        """The tool score of one turn, or None when its tools are not evaluated (no
        `ground_truth_agentic`, or one with only a `tool_policy`: expected tools and none used
        is a real, failing score)."""
        if batch.ground_truth_agentic is None or not batch.ground_truth_agentic.has_expected_tools:
            return None
        return self.score(batch.agentic, batch.ground_truth_agentic, batch.assistant)

    def score(self, used: AgenticTrace | None, expected: GroundTruthAgentic, answer: str) -> ToolCorrectnessScore:
        """The same as `score_tool_calls(used, expected, answer=answer, ...)` with this scorer's config."""
        identity = (id(used), id(expected), answer)
        if (seen := self._seen.get(identity)) is not None:
            return seen[2]
        score = self._score(used, expected, answer)
        self._seen[identity] = (used, expected, score)  # holding them keeps their ids from being reused
        return score

    def _score(self, used: AgenticTrace | None, expected: GroundTruthAgentic, answer: str) -> ToolCorrectnessScore:
        try:
            key: Hashable = (answer, _frozen(used), _frozen(expected))
        except _NotPlainData:
            key = None
        if key is not None and (known := self._scores.get(key)) is not None:
            return known
        score = score_tool_calls(
            used,
            expected,
            answer=answer,
            weights=self.weights,
            tool_threshold=self.tool_threshold,
            dimension_floor=self.dimension_floor,
        )
        if key is not None:
            self._scores[key] = score
        return score


class _NotPlainData(Exception):
    """A value `_frozen` does not know how to compare exactly."""


def _frozen(value: Any) -> Hashable:
    """A hashable equal to another's exactly when the two values are the same data.

    Numbers and bools carry their type ((int, 1) ≠ (bool, True) ≠ (float, 1.0));
    strings and None stand for themselves (they equal nothing else); containers
    carry their kind and items in order; models their class, the fields set, every
    field and any extra. Anything else raises `_NotPlainData`.
    """
    kind = type(value)
    if kind is str or value is None:
        return cast(Hashable, value)
    if kind is float:
        return kind, value, math.copysign(1.0, value)  # -0.0 == 0.0, but their JSON text differs
    if kind is int or kind is bool:
        return kind, value
    if kind is dict:
        return dict, tuple(
            [
                (key if type(key) is str else _frozen(key), item if type(item) is str else _frozen(item))
                for key, item in value.items()
            ]
        )
    if kind is list or kind is tuple:
        return kind, tuple([item if type(item) is str else _frozen(item) for item in value])
    if isinstance(value, BaseModel):  # a model's fields are its __dict__
        extra = value.__pydantic_extra__
        return (
            kind,
            frozenset(value.model_fields_set),
            _frozen(value.__dict__),
            None if extra is None else _frozen(extra),
        )
    raise _NotPlainData(kind.__name__)
