"""Validated conversations that repeat data (attempts of one task, a test set reused across
attempts) hold one object for each repeated value instead of one copy per turn.

`share_repeated_values(datasets, decoded)`, called by a face right after validating a request
from its decoded JSON (`handler.validation.parse_run_request`), makes turns written with equal
text share one `str` and turns whose tool fields were written as equal JSON share one model.
Nothing can tell the difference (strings are immutable; the models are equal, and nothing in an
evaluation changes them in place: what changes a turn's calls,
`tools.policy.without_ignored_parameters`, copies them), except that the copies are freed and
the tool rubric (`tools.scorer.ToolScorer`) finds a repeated turn by identity instead of building
its exact key (`tools.scorer._frozen`, a walk of every value).
"""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from typing import Any

from fair_forge_core.schemas import Dataset

TOOL_FIELDS = ("agentic", "ground_truth_agentic")
"""The turn fields the tool rubric reads besides the answer (`ToolScorer.score_batch`)."""
TEXT_FIELDS = ("query", "assistant", "ground_truth_assistant")
"""The turn texts the judge reads that repeat from attempt to attempt (`qa_id` rarely does)."""


def share_repeated_values(datasets: Sequence[Dataset], decoded: Sequence[Any]) -> None:
    """Give equal `TEXT_FIELDS` of the turns of `datasets` one `str` object, and turns whose
    `agentic` (or `ground_truth_agentic`) was written as equal JSON one model object.

    `decoded` is what `datasets` were validated from, item for item: the `datasets` list of a
    request's JSON as `json.loads` decodes it. Equal decoded values give equal models
    (validation is a function of the value), so sharing one changes no score and no byte of
    any output. The tool values are compared by their `marshal` bytes (version 2, no
    back-references): marshal writes the exact type of each value (True, 1 and 1.0 differ,
    -0.0 and 0.0 differ) and a dict's keys in order, and reads back what it wrote, so equal
    bytes are equal values; the converse may fail (a string marshal writes as interned), which
    only shares less. A value marshal refuses (anything but plain data), a turn or dataset that
    is not a dict, a field the JSON does not give, and None are left as they are.

    The values are written straight into each model's fields (`__dict__`): each replaces an
    equal one the field already holds, so the fields set stays right, and pydantic's setattr
    would only add to it.
    """
    texts: dict[str, str] = {}
    tools: dict[tuple[str, bytes], Any] = {}
    for dataset, source in zip(datasets, decoded, strict=True):
        turns = source.get("conversation") if type(source) is dict else None
        for index, batch in enumerate(dataset.conversation):
            fields = batch.__dict__
            for name in TEXT_FIELDS:
                text = fields[name]
                fields[name] = texts.setdefault(text, text)
            turn = turns[index] if type(turns) is list and index < len(turns) else None
            if type(turn) is not dict or ("agentic" not in turn and "ground_truth_agentic" not in turn):
                continue  # most turns: no tools at all
            for name in TOOL_FIELDS:
                value = fields[name]
                if value is None or name not in turn:
                    continue
                try:
                    key = (name, marshal.dumps(turn[name], 2))
                except ValueError:  # not plain data
                    continue
                fields[name] = tools.setdefault(key, value)
