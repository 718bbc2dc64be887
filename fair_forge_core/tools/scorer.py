"""`ToolScorer`: `score_tool_calls` under one config, with a memo of the turns scored."""

from __future__ import annotations

import marshal
import math
from collections.abc import Hashable, Sequence
from typing import Any, cast

from pydantic import BaseModel

from fair_forge_core.schemas import (
    AgenticTrace,
    Batch,
    Dataset,
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
    (`share_equal_tool_fields`): they are then found by identity too.
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


TOOL_FIELDS = ("agentic", "ground_truth_agentic")
"""The turn fields the tool rubric reads besides the answer (`ToolScorer.score_batch`)."""


def share_equal_tool_fields(datasets: Sequence[Dataset], decoded: Sequence[Any]) -> None:
    """Give turns whose `agentic` (or `ground_truth_agentic`) was written as equal JSON one
    and the same model object, so that `ToolScorer` finds a repeated turn by identity instead
    of building its exact key (`_frozen`), and the copies are freed.

    `decoded` is what `datasets` were validated from, item for item: the `datasets` list of a
    request's JSON as `json.loads` decodes it. Equal decoded values give equal models
    (validation is a function of the value), so sharing one changes no score and no byte of
    any output. The values are compared by their `marshal` bytes (version 2, no
    back-references): marshal writes the exact type of each value (True, 1 and 1.0 differ,
    -0.0 and 0.0 differ) and a dict's keys in order, and reads back what it wrote, so equal
    bytes are equal values; the converse may fail (a string marshal writes as interned), which
    only shares less. A value marshal refuses (anything but plain data), a turn or dataset that
    is not a dict, a field the JSON does not give, and None are left as they are.

    The models are not frozen: nothing in an evaluation changes them in place (what changes a
    turn's calls, `tools.policy.without_ignored_parameters`, copies them).
    """
    shared: dict[tuple[str, bytes], Any] = {}
    for dataset, source in zip(datasets, decoded, strict=True):
        turns = source.get("conversation") if type(source) is dict else None
        if type(turns) is not list:
            continue
        for batch, turn in zip(dataset.conversation, turns, strict=True):
            if type(turn) is not dict or ("agentic" not in turn and "ground_truth_agentic" not in turn):
                continue  # most turns: no tools at all
            for name in TOOL_FIELDS:
                value = batch.__dict__[name]
                if value is None or name not in turn:
                    continue
                try:
                    key = (name, marshal.dumps(turn[name], 2))
                except ValueError:  # not plain data
                    continue
                first = shared.setdefault(key, value)
                if first is not value:
                    # Straight into the instance's fields: the field was given (in the JSON), so
                    # the fields set is already right, and pydantic's setattr would only re-add it.
                    batch.__dict__[name] = first
