"""Readiness tiers from pass@k and pass^k, and the readiness headline (docs: docs/semantics.md "Readiness
tiers" and docs/how-to/ci.md "Gate your CI"). Pure functions."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Literal, get_args

from fair_forge_core.schemas import AgentErrorCause, Readiness, ReadinessStatus, UnscoredCause

Tier = Literal["reliable", "inconsistent", "functional", "needs_improvement"]

MIN_RELIABLE_SAMPLE = 30

BOUNDARIES = (Fraction(95, 100), Fraction(70, 100), Fraction(50, 100))
"""The values §7 compares against, as exact fractions (0.95 as a float is not 95/100)."""

BOUND_SNAP = 1e-12
"""How close a credible bound must be to a boundary to count as on it (see `on_boundary`)."""

_EXPLANATIONS: dict[str, str] = {
    "reliable": "succeeds almost always within {k} attempts and is consistent: ready for production",
    "inconsistent": "can succeed within {k} attempts but rarely {k} times in a row: unreliable in production",
    "functional": "works, but neither reliably nor consistently enough for production yet",
    "needs_improvement": "fails too often even allowing {k} attempts: not ready",
}


def interpret(pass_at_k: float | Fraction, pass_pow_k: float | Fraction) -> Tier:
    """The tier of a (pass@k, pass^k) pair, rules tried in this order.

    Comparisons are exact: a fraction as it is, a float as the shortest decimal that
    reads back as it (0.7 is 7/10; 0.49999999999999994 stays below 1/2). So a value
    exactly on a boundary must be passed exactly: `stats.exact_point_estimates`, or
    `on_boundary` for a credible bound.

    - ``reliable``: pass@k > 0.95 and pass^k > 0.70
    - ``inconsistent``: pass@k > 0.95 and pass^k < 0.50
    - ``needs_improvement``: pass@k < 0.70
    - ``functional``: everything else (including pass@k > 0.95 with 0.50 ≤ pass^k ≤ 0.70,
      and the boundaries pass@k = 0.95 or 0.70 exactly)
    """
    at_95, at_70, at_50 = BOUNDARIES
    pass_at_k, pass_pow_k = _exact(pass_at_k), _exact(pass_pow_k)
    if pass_at_k > at_95 and pass_pow_k > at_70:
        return "reliable"
    if pass_at_k > at_95 and pass_pow_k < at_50:
        return "inconsistent"
    if pass_at_k < at_70:
        return "needs_improvement"
    return "functional"


def _exact(value: float | Fraction) -> Fraction:
    return value if isinstance(value, Fraction) else Fraction(repr(float(value)))


def on_boundary(bound: float) -> float | Fraction:
    """A credible bound as `interpret` should see it: the boundary itself when the bound is
    within `BOUND_SNAP` of one, else the bound.

    Beta quantiles are irrational in general and computed to about 1e-15; the bounds
    that land exactly on a boundary are closed forms (5 of 5 correct, k = 3, ci_level
    0.5: pass^3's lower bound is 0.25^(1/2) = 0.5 exactly) that rounding would put on
    either side.
    """
    for boundary in BOUNDARIES:
        if abs(bound - float(boundary)) <= BOUND_SNAP:
            return boundary
    return bound


def explain(tier: Tier, pass_at_k: float, pass_pow_k: float, k: int, figure: str = "pooled plug-in") -> str:
    """One line saying what the tier means, with the numbers that put the agent there, named
    with their qualifier (`figure`: the pooled figures the tier is decided on, "pooled plug-in"
    or in Bayesian mode "pooled posterior mean"; docs/statistics.md#which-passk-is-which)."""
    reason = _EXPLANATIONS[tier].format(k=k)
    return f"{tier}: pass@{k} ({figure}) = {pass_at_k:.3f}, pass^{k} ({figure}) = {pass_pow_k:.3f}; the agent {reason}."


def sample_size_warning(n: int, *, bayesian: bool = False) -> str | None:
    """A warning when fewer than 30 conversations were scored, else None.

    In frequentist mode it suggests the Bayesian mode; in Bayesian mode it points at
    the credible intervals already there.
    """
    if n >= MIN_RELIABLE_SAMPLE:
        return None
    advice = (
        "collect more, and read the credible intervals rather than the point estimates."
        if bayesian
        else "collect more, or use statistical_mode 'bayesian' for credible intervals."
    )
    return f"Only {n} scored conversation(s): estimates from fewer than {MIN_RELIABLE_SAMPLE} are unreliable; {advice}"


UNSCORED_CAUSES = {
    "abstained": "the judge abstained",
    "batch_expired": "the provider's batch ended before answering",
    "cost_cap": "the cost cap was reached",
    "deadline": "the time budget ran out",
    "judge_error": "judge errors",
    "not_measured": "nothing to measure",
    "not_joined": "trace attempts that match no task of the references",
    "state_not_reported": "trace attempts that report no final_state their task expects",
    "turns_differ": "trace attempts whose turns differ from their task's references",
    "agent_error": "agent attempts whose agent failed",
    "agent_malformed": "agent attempts answered outside the agent contract",
    "agent_timeout": "agent attempts whose agent timed out",
}
"""How a readiness summary names why conversations are unscored: the causes of judgements
(`judges.judgement.JudgementCause`, and `not_measured`), then those of conversations unscored before judging
(`schemas.UnscoredCause`; tested to name every one)."""


def cause_counts(counts: Mapping[UnscoredCause, int]) -> str:
    """Counts by cause as one phrase, most first (ties by cause): ``"2 state_not_reported, 1
    not_joined"``; the causes are typed names (`schemas.UnscoredCause`), never data."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{count} {cause}" for cause, count in ordered)


def unjoined_phrase(counts: Mapping[UnscoredCause, int]) -> str:
    """How every output says how many trace attempts were left unjoined and why: ``"4 trace
    attempt(s) could not be joined to the references (2 state_not_reported, 1 not_joined, 1
    turns_differ)"``; `counts` by cause, as `aggregated_metrics.unscored_by_cause` holds them. An
    agent run's failed attempts kept unscored (`AGENT_CAUSES`) are said apart after them: ``"2
    agent attempt(s) failed (2 agent_timeout)"``, joined by "; "."""
    joins = {cause: count for cause, count in counts.items() if cause not in AGENT_CAUSES}
    agents = {cause: count for cause, count in counts.items() if cause in AGENT_CAUSES}
    parts = [f"{sum(joins.values())} trace attempt(s) could not be joined to the references ({cause_counts(joins)})"]
    parts = parts if joins else []
    if agents:
        parts.append(f"{sum(agents.values())} agent attempt(s) failed ({cause_counts(agents)})")
    return "; ".join(parts)


AGENT_CAUSES = frozenset(get_args(AgentErrorCause))
"""The unscored causes of an agent run's failed attempts (`schemas.AgentErrorCause`)."""


def readiness(
    *,
    tier: Tier | None,
    basis: Literal["per_task", "conversations"],
    scored: int,
    total: int,
    sample: int,
    max_unscored_share: float,
    k: int,
    unscored_because: str | None = None,
) -> Readiness:
    """The headline of an evaluation: `tier` (decided by the caller on the figures of `basis`),
    with the status the evidence supports.

    - ``insufficient_evidence`` when the unscored share (total − scored) / total is above
      `max_unscored_share`, compared exactly (3 unscored of 30 is not above 0.10);
    - else ``preliminary`` when `sample`, what the tier rests on (scored conversations, or
      tasks with k scored attempts under the per-task basis), is below `MIN_RELIABLE_SAMPLE`;
    - else ``sufficient``.

    `unscored_because` (a key of `UNSCORED_CAUSES`) names the main reason for the unscored
    conversations in the summary, e.g. "reliable on 24 of 36 conversations; 12 unscored (the
    judge abstained) — not enough evidence (more than 10% unscored)".
    """
    unscored = total - scored
    if total and Fraction(unscored, total) > Fraction(repr(float(max_unscored_share))):
        status: ReadinessStatus = "insufficient_evidence"
    elif sample < MIN_RELIABLE_SAMPLE:
        status = "preliminary"
    else:
        status = "sufficient"
    if tier is None:
        summary = f"no conversation scored of {total}"
    elif basis == "per_task":
        summary = f"{tier} per task over {sample} task(s) with {k} or more attempts ({scored} of {total} conversations scored)"
    else:
        summary = f"{tier} on {scored} of {total} conversations"
    if unscored:
        cause = UNSCORED_CAUSES.get(unscored_because or "", "")
        summary += f"; {unscored} unscored" + (f" ({cause})" if cause else "")
    if status == "insufficient_evidence":
        summary += f" — not enough evidence (more than {max_unscored_share * 100:g}% unscored)"
    elif status == "preliminary":
        what = "tasks with k attempts" if basis == "per_task" else "scored conversations"
        summary += f" — preliminary: fewer than {MIN_RELIABLE_SAMPLE} {what}"
    return Readiness(tier=tier, basis=basis, scored=scored, total=total, status=status, summary=summary)
