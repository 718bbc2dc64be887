"""Conversations that repeat data (attempts of one task, a test set reused across attempts)
validated into one object for each repeated value instead of one copy per turn.

`share_repeated_values(datasets)` runs on a request's decoded JSON just before it is validated
(`handler.validation.parse_run_request`): turns written with equal texts then hold one `str`,
and turns whose tool fields were written as equal JSON one model, validated once. Nothing can
tell the difference (strings are immutable; the models are equal to what validation would have
made, and nothing in an evaluation changes them in place: what changes a turn's calls,
`tools.policy.without_ignored_parameters`, copies them), except that the copies are neither
built nor held, and the tool rubric (`tools.scorer.ToolScorer`) finds a repeated turn by
identity instead of building its exact key (`tools.scorer._frozen`, a walk of every value).
"""

from __future__ import annotations

import marshal
from typing import Any

from pydantic import BaseModel, ValidationError

from fair_forge_core.schemas import AgenticTrace, GroundTruthAgentic
from fair_forge_core.schemas.request import none_without_expected_tools

TEXT_FIELDS = ("query", "assistant", "ground_truth_assistant")
"""The turn texts the judge reads that repeat from attempt to attempt (`qa_id` rarely does)."""
TOOL_FIELDS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("agentic", AgenticTrace),
    ("ground_truth_agentic", GroundTruthAgentic),
)
"""The turn fields the tool rubric reads besides the answer (`ToolScorer.score_batch`), and their models."""


def share_repeated_values(datasets: Any) -> None:
    """In the decoded `datasets` of a request (what `json.loads` gives, about to be validated as
    `list[Dataset]`), in place: equal `TEXT_FIELDS` of the turns become one `str` object, and a
    turn's `agentic` or `ground_truth_agentic` becomes the one model validated from its value
    for every turn where that value is written as equal JSON.

    Validation then gives the same `RunRequest`, field for field and with the same fields set:
    pydantic keeps the `str` it is given, and takes a model instance given to a field of its
    class as it is (`revalidate_instances` "never"), which is the model the field would have
    validated from the value: the value goes through the field's own before-validator first
    (`ground_truth_agentic` of `{}` stays a dict, for validation to make None). A value that
    does not validate on its own is left as it is, so validation reports it where it is, with
    the same errors; anything that is not the shape of a request (a dataset or turn that is
    not a dict) is left to validation too.

    The values are compared by their `marshal` bytes (version 2, no back-references): marshal
    writes the exact type of each value (True, 1 and 1.0 differ, -0.0 and 0.0 differ) and a
    dict's keys in order, and reads back what it wrote, so equal bytes are equal values, which
    validation turns into equal models. A value marshal refuses (anything but plain data, or
    nested too deeply) is left as it is. Each distinct value is validated once: the work is
    bounded by the request's size, which the limits have checked before this runs.
    """
    if type(datasets) is not list:
        return
    texts: dict[str, str] = {}
    tools: dict[tuple[str, bytes], BaseModel | None] = {}
    for dataset in datasets:
        turns = dataset.get("conversation") if type(dataset) is dict else None
        for turn in turns if type(turns) is list else ():
            if type(turn) is not dict:
                continue
            for name in TEXT_FIELDS:
                text = turn.get(name)
                if type(text) is str:
                    turn[name] = texts.setdefault(text, text)
            if "agentic" not in turn and "ground_truth_agentic" not in turn:
                continue  # most turns: no tools at all
            for name, model in TOOL_FIELDS:
                if name not in turn:
                    continue
                value = turn[name]
                try:
                    key = (name, marshal.dumps(value, 2))
                except ValueError:  # not plain data, or nested too deeply
                    continue
                if key not in tools:
                    tools[key] = _validated(name, model, value)
                if (shared := tools[key]) is not None:
                    turn[name] = shared


def _validated(name: str, model: type[BaseModel], value: Any) -> BaseModel | None:
    """The model the turn field `name` validates `value` into, or None when that is None or an
    error (both left to the request's validation, which then validates an invalid value again:
    only on the way to a 400, and bounded by the limits). `Batch`'s validators of these fields
    are reproduced here: `tests/service/test_perf_core.py` fails when `Batch` gains another."""
    if name == "ground_truth_agentic":
        value = none_without_expected_tools(value)  # `Batch`'s before-validator of the field
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None
