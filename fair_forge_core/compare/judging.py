"""Were the two sides of a comparison judged alike? `judging_differences` compares their
`Provenance`, field by field."""

from __future__ import annotations

import json
from typing import Any

from fair_forge_core.schemas import Provenance

NOT_COMPARED = frozenset({"version", "datasets_hash"})
"""The provenance fields that say nothing of how a side was judged: the package version (a
release that changes a verdict changes a hash or a setting recorded beside it) and the datasets
(the two sides are different runs of an agent: their conversations differ)."""


def _judges(provenance: Provenance) -> str:
    """The judges of one side, in order: class path, model and the identity's first 12 hex digits."""
    return "[" + ", ".join(f"{j.class_path} {j.model} {j.identity[:12]}" for j in provenance.judges) + "]"


def _shown(name: str, value: Any) -> str:
    """A provenance value as a difference line shows it: a hash by its first 12 hex digits, a
    number by `:g`, an object or list as compact JSON, anything else as `str`."""
    if name.endswith("_hash") and isinstance(value, str):
        return value[:12]
    if isinstance(value, float | int) and not isinstance(value, bool):
        return f"{value:g}"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def judging_differences(baseline: Provenance | None, candidate: Provenance | None) -> list[str]:
    """What differs between how the two sides were judged, one readable line per difference
    naming the field and both values (`different threshold: baseline 0.7 vs candidate 0.75`);
    [] when they were judged alike.

    Compared: every field of `Provenance` but `NOT_COMPARED`, in the model's order — the
    judges' `identity` lists (in order: the same judges, models, sampling and prompt,
    `judges.usage.judge_identity`), the prompt hash, every setting that decides a verdict or a
    figure (thresholds, the floor, the tool weights, `require_tool_correctness`, k, the
    statistical mode, samples, vote, cascade, `max_unscored_share`) and, when either side judged
    goals, `require_goal` and `goal_prompt_hash`. A value a side did not record (a result written
    before the field existed, a side without goals) shows as None and differs from any recorded
    one: what cannot be checked is not alike. A side without provenance at all is one line saying
    that side cannot be checked, and nothing else is compared.
    """
    lines = [
        f"the {side}'s result has no provenance: how it was judged cannot be checked"
        for side, provenance in (("baseline", baseline), ("candidate", candidate))
        if provenance is None
    ]
    if baseline is None or candidate is None:
        return lines
    for name in Provenance.model_fields:
        if name in NOT_COMPARED:
            continue
        if name == "judges":
            if [j.identity for j in baseline.judges] != [j.identity for j in candidate.judges]:
                lines.append(
                    f"different judges (identity): baseline {_judges(baseline)} vs candidate {_judges(candidate)}"
                )
            continue
        base_value, cand_value = getattr(baseline, name), getattr(candidate, name)
        if base_value != cand_value:
            lines.append(
                f"different {name}: baseline {_shown(name, base_value)} vs candidate {_shown(name, cand_value)}"
            )
    return lines
