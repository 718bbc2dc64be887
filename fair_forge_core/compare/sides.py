"""Comparing two sides, orchestrated once for every face: `evaluate`'s `config.compare`,
`fair-forge compare` and the pytest plugin's `assert_no_regression` (docs/how-to/compare.md).

A face reads its sides its own way (one evaluation's conversations, result or request files, a
test's arguments), makes each a `ComparedSide` (`side_of`), and hands both to `compare_sides`,
which runs the steps in this order:

1. The side's conversations (`side_of`): one assistant's, or all of them when they are one
   assistant's; a refusal when the side holds several and none was chosen, or none of the one
   chosen.
2. k: the one given, else the sides' own (the k their results were computed at); a refusal
   when they differ.
3. How they were judged: `judging_differences` of their provenance, none when both sides come
   from one evaluation (judged alike by construction); under `require_same_judge` any
   difference is a refusal.
4. The comparison (`paired.compare`) of their outcomes at k, under `prior`, with the
   differences in judging recorded in it.
5. What the sides spent, paired the same way (`efficiency.compare_efficiency`, with the
   comparison's resamples and seed; never part of the verdict).
6. The comparison corrected for the judges' error, when either side carries the calibration it
   was corrected with (`corrected.compare_corrected`; never part of the verdict).
7. The warnings: the differences in judging first, then the tasks only one side scored and
   the unscored conversations left out (`comparison_warnings`).
8. Under `require_shared_tasks`, a refusal when no task was scored on both sides.

Every refusal is a `ComparisonRefused` (a ValueError) whose `kind` says which step refused and
whose `warnings` are the lines a face prints before it (so a reader sees the differences that
made `require_same_judge` refuse). A face maps it to its answer (exit 2, a failed test, a
ValueError from `evaluate`) and words it its own way. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from fair_forge_core.compare.corrected import compare_corrected
from fair_forge_core.compare.efficiency import compare_efficiency
from fair_forge_core.compare.judging import judging_differences
from fair_forge_core.compare.outcomes import outcomes_from_conversations
from fair_forge_core.compare.paired import compare
from fair_forge_core.schemas import (
    Comparison,
    ConversationMetrics,
    EvaluationResult,
    JudgeErrorInput,
    Population,
    Provenance,
)

SideName = Literal["baseline", "candidate"]

RefusalKind = Literal["several_assistants", "no_such_assistant", "k_differs", "not_judged_alike", "no_shared_task"]


class ComparisonRefused(ValueError):
    """Two sides that cannot be compared. `kind` is the step that refused (module docstring),
    `side` the side it is about (None when it is about both), `assistant` the assistant chosen
    for it (`no_such_assistant`), `differences` the differences in
    judging (`not_judged_alike`), and `warnings` the lines to show before the refusal. The
    message says what is wrong without naming a file or a flag, which only the face knows."""

    def __init__(
        self,
        kind: RefusalKind,
        message: str,
        *,
        side: SideName | None = None,
        assistant: str | None = None,
        differences: Sequence[str] = (),
        warnings: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.kind, self.side, self.assistant = kind, side, assistant
        self.differences, self.warnings = list(differences), list(warnings)


@dataclass(frozen=True)
class ComparedSide:
    """One side of a comparison: its conversations (one assistant's), the k its result was
    computed at (None: not known, so `compare_sides` must be given k), its result's
    provenance (None: how it was judged cannot be checked), and the calibration its result was
    corrected with (`judge_error`; None: not corrected for its judge's error)."""

    conversations: Sequence[ConversationMetrics]
    k: int | None = None
    provenance: Provenance | None = None
    judge_error: JudgeErrorInput | None = None


def side_of(
    conversations: Sequence[ConversationMetrics],
    assistant: str | None,
    side: SideName,
    *,
    k: int | None = None,
    provenance: Provenance | None = None,
    judge_error: JudgeErrorInput | None = None,
) -> ComparedSide:
    """The `ComparedSide` of `assistant`'s conversations among `conversations` (all of them when
    `assistant` is None). `ComparisonRefused` `several_assistants` when `assistant` is None and
    the conversations are of several assistants, and `no_such_assistant` (the message names the
    assistants there are) when `assistant` has no conversation among them."""
    present = sorted({m.assistant_id for m in conversations})
    if assistant is None:
        if len(present) > 1:
            raise ComparisonRefused(
                "several_assistants",
                f"holds the conversations of {len(present)} assistants ({', '.join(present)})",
                side=side,
            )
        return ComparedSide(list(conversations), k, provenance, judge_error)
    chosen = [m for m in conversations if m.assistant_id == assistant]
    if not chosen:
        # The words of `outcomes_from_conversations`, which `evaluate` raised before this module.
        raise ComparisonRefused(
            "no_such_assistant",
            f"no conversation of assistant {assistant!r}; assistants present: {present}",
            side=side,
            assistant=assistant,
        )
    return ComparedSide(chosen, k, provenance, judge_error)


@dataclass
class SidesComparison:
    """What `compare_sides` found: the comparison, and the warnings a reader must see (the
    differences in judging, then the tasks and conversations left out)."""

    comparison: Comparison
    warnings: list[str] = field(default_factory=list)


def _listed(items: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", … and {len(items) - limit} more" if len(items) > limit else "")


def comparison_warnings(comparison: Comparison) -> list[str]:
    """The tasks only one side scored, and the unscored conversations by task: never compared.
    One line per side and kind, at most 10 tasks named in each."""
    lines = []
    for side, tasks in (("baseline", comparison.baseline_only_tasks), ("candidate", comparison.candidate_only_tasks)):
        if tasks:
            lines.append(f"{len(tasks)} task(s) scored only for the {side}, not compared: {_listed(tasks)}")
    for side, count, by_task in (
        ("baseline", comparison.baseline_unscored_conversations, comparison.baseline_unscored_by_task),
        ("candidate", comparison.candidate_unscored_conversations, comparison.candidate_unscored_by_task),
    ):
        if count:
            per_task = [f"{task} ×{n}" for task, n in by_task.items()]
            lines.append(f"{count} unscored {side} conversation(s) left out: {_listed(per_task)}")
    return lines


def compare_sides(
    baseline: ComparedSide,
    candidate: ComparedSide,
    *,
    k: int | None = None,
    population: Population = "attempts",
    confidence: float = 0.95,
    seed: int = 0,
    prior: Sequence[float] = (1.0, 1.0),
    one_evaluation: bool = False,
    require_same_judge: bool = False,
    require_shared_tasks: bool = True,
) -> SidesComparison:
    """Compare the two sides, step by step as the module docstring says.

    `k` None takes the sides' k: `ComparisonRefused` `k_differs` when they differ or neither
    side knows it (a side whose k is not known differs from one that does). `one_evaluation`: both sides come from one
    evaluation, so no difference in judging is looked for. `require_same_judge`: a difference
    in judging (a side without provenance is one) is `ComparisonRefused` `not_judged_alike`.
    `require_shared_tasks`: no task scored on both sides is `ComparisonRefused`
    `no_shared_task`, after the comparison (whose warnings it carries); without it the
    comparison stands, with its note saying so. The ValueErrors of `paired.compare` (k,
    confidence, seed, population, prior) propagate."""
    if k is None:
        if baseline.k != candidate.k:
            raise ComparisonRefused(
                "k_differs", f"the baseline's k ({baseline.k}) and the candidate's k ({candidate.k}) differ"
            )
        k = baseline.k
    if k is None:
        raise ComparisonRefused("k_differs", "neither side's k is known: give k")
    judging = [] if one_evaluation else judging_differences(baseline.provenance, candidate.provenance)
    if judging and require_same_judge:
        raise ComparisonRefused(
            "not_judged_alike",
            "the baseline and the candidate were not judged alike",
            differences=judging,
            warnings=judging,
        )
    comparison = compare(
        outcomes_from_conversations(baseline.conversations),
        outcomes_from_conversations(candidate.conversations),
        k=k,
        population=population,
        confidence=confidence,
        seed=seed,
        prior=prior,
        judging=judging,
    )
    comparison.efficiency = compare_efficiency(
        baseline.conversations,
        candidate.conversations,
        confidence=confidence,
        resamples=comparison.bootstrap_resamples,
        seed=seed,
    )
    comparison.judge_corrected = compare_corrected(
        comparison,
        (baseline.conversations, baseline.judge_error),
        (candidate.conversations, candidate.judge_error),
    )
    warnings = [*judging, *comparison_warnings(comparison)]
    if require_shared_tasks and comparison.shared_tasks == 0:
        raise ComparisonRefused(
            "no_shared_task", "no task was scored on both sides: nothing to compare", warnings=warnings
        )
    return SidesComparison(comparison, warnings)


def side_of_result(result: EvaluationResult, assistant: str | None, which: SideName) -> ComparedSide:
    """One side of a comparison from its result: `assistant`'s conversations (all of them when
    None), the result's k, provenance and the calibration it was corrected with, if it was
    (`judge_corrected`; `side_of`; its `ComparisonRefused` propagates). What every face that
    compares results uses (`fair-forge compare`, the pytest plugin, the viewer)."""
    from fair_forge_core.compare.corrected import judge_error_of_corrected

    corrected = result.aggregated_metrics.judge_corrected
    return side_of(
        result.per_conversation_metrics,
        assistant,
        which,
        k=result.aggregated_metrics.k,
        provenance=result.provenance,
        judge_error=None if corrected is None else judge_error_of_corrected(corrected),
    )
