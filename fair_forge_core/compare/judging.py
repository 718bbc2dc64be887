"""Were the two sides of a comparison judged alike? `judging_differences` compares their
`Provenance`."""

from __future__ import annotations

from fair_forge_core.schemas import Provenance


def _judges(provenance: Provenance) -> str:
    """The judges of one side, in order: class path, model and the identity's first 12 hex digits."""
    return "[" + ", ".join(f"{j.class_path} {j.model} {j.identity[:12]}" for j in provenance.judges) + "]"


def judging_differences(baseline: Provenance | None, candidate: Provenance | None) -> list[str]:
    """What differs between how the two sides were judged, one readable line per difference
    naming the field and both values (`different threshold: baseline 0.7 vs candidate 0.75`);
    [] when they were judged alike.

    Compared: the judges' `identity` lists (in order: the same judges, models, sampling and
    prompt, `judges.usage.judge_identity`), `prompt_hash`, `threshold`, `tool_threshold`,
    `tool_dimension_floor`, `k`, and, when either side judged goals, `require_goal` and
    `goal_prompt_hash` (null on a side without goals). A side without provenance (a result written before it
    existed, or computed without it) is one line saying that side cannot be checked, and
    nothing else is compared. Hashes are shown by their first 12 hex digits.
    """
    lines = [
        f"the {side}'s result has no provenance: how it was judged cannot be checked"
        for side, provenance in (("baseline", baseline), ("candidate", candidate))
        if provenance is None
    ]
    if baseline is None or candidate is None:
        return lines
    if [j.identity for j in baseline.judges] != [j.identity for j in candidate.judges]:
        lines.append(f"different judges (identity): baseline {_judges(baseline)} vs candidate {_judges(candidate)}")
    if baseline.prompt_hash != candidate.prompt_hash:
        lines.append(
            f"different prompt_hash: baseline {baseline.prompt_hash[:12]} vs candidate {candidate.prompt_hash[:12]}"
        )
    for name in ("threshold", "tool_threshold", "tool_dimension_floor", "k"):
        base_value, cand_value = getattr(baseline, name), getattr(candidate, name)
        if base_value != cand_value:
            lines.append(f"different {name}: baseline {base_value:g} vs candidate {cand_value:g}")
    if baseline.require_goal != candidate.require_goal:
        lines.append(f"different require_goal: baseline {baseline.require_goal} vs candidate {candidate.require_goal}")
    if baseline.goal_prompt_hash != candidate.goal_prompt_hash:
        base_hash, cand_hash = (p.goal_prompt_hash and p.goal_prompt_hash[:12] for p in (baseline, candidate))
        lines.append(f"different goal_prompt_hash: baseline {base_hash} vs candidate {cand_hash}")
    return lines
