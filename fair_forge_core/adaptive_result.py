"""A request's adaptive attempts read against its evaluation (docs/statistics.md "Adaptive
attempts"; docs/how-to/ci.md "Adaptive attempts and the gates"). Pure: no I/O.

When a recording says its attempts were adaptive (`RunRequest.attempts`, written by `fair-forge
run --until-decided`), its result carries `aggregated_metrics.adaptive` (`AdaptiveResult`):

- **each task's confidence sequence, recomputed here** (`adaptive.task_report`) from the task's
  scored attempts in this evaluation (successes: fully correct; an unscored attempt is neither), at
  the run's boundary, level and prior. The bounds are a function of the counts alone, so they are
  the run's whenever this judge agrees with the one the run judged its rounds with; a task whose
  decision differs from the run's is named in a warning (the run stopped on other verdicts). A task
  of the run that no conversation here has keeps 0 attempts: bounds [0, 1], `undecided`;
- **the gates' bounds**: with L a task's lower bound and k the result's k, `pass_pow_k_lower` is
  the mean over the tasks of L^k and `pass_at_k_lower` of 1 − (1 − L)^k (both increasing in p, so
  a bound of p gives one of the metric). Each L holds at every number of attempts with probability
  ≥ 1 − α whatever the stopping, so the mean bounds the tasks' mean pass^k from below whenever all
  of the tasks' sequences hold (probability ≥ 1 − T·α for T tasks, by the union bound; in practice
  far more, each bound being conservative);
- **the biased fields** (`schemas.ADAPTIVE_BIASED_FIELDS`), which every face labels.

The tasks are matched by `task_id` (a recording is one assistant's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from fair_forge_core import stats
from fair_forge_core.adaptive import task_report
from fair_forge_core.schemas import (
    ADAPTIVE_BIASED_FIELDS,
    AdaptiveAttempts,
    AdaptiveResult,
    ConversationMetrics,
    EvaluationResult,
)


def adaptive_result(conversations: Sequence[ConversationMetrics], attempts: AdaptiveAttempts, k: int) -> AdaptiveResult:
    """`aggregated_metrics.adaptive` of `conversations` under the run's `attempts` at the result's
    `k` (module docstring)."""
    successes: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    for conversation in conversations:
        if conversation.task_id not in attempts.tasks or not conversation.is_scored:
            continue
        if conversation.is_fully_correct:
            successes[conversation.task_id] += 1
        else:
            failures[conversation.task_id] += 1
    tasks = {
        task_id: task_report(successes[task_id], failures[task_id], attempts.boundary, attempts.level, attempts.prior)
        for task_id in attempts.tasks
    }
    decided = Counter(task.decided for task in tasks.values())
    lowers = [task.lower for task in tasks.values()]
    return AdaptiveResult(
        policy=attempts.policy,
        question=attempts.question,
        k=attempts.k,
        boundary=attempts.boundary,
        level=attempts.level,
        prior=attempts.prior,
        max_attempts=attempts.max_attempts,
        round_size=attempts.round_size,
        tasks=tasks,
        above=decided["above"],
        below=decided["below"],
        undecided=decided["undecided"],
        pass_at_k_lower=sum(stats.at_least_one_of(low, k) for low in lowers) / len(lowers) if lowers else None,
        pass_pow_k_lower=sum(low**k for low in lowers) / len(lowers) if lowers else None,
        biased=list(ADAPTIVE_BIASED_FIELDS),
    )


def disagreements(run: AdaptiveAttempts, here: AdaptiveResult) -> list[str]:
    """The tasks whose decision here differs from the one the run recorded, as `task (run: above,
    here: undecided)`, in the run's task order."""
    return [
        f"{task_id} (run: {task.decided}, here: {here.tasks[task_id].decided})"
        for task_id, task in run.tasks.items()
        if here.tasks[task_id].decided != task.decided
    ]


def with_adaptive(result: EvaluationResult, attempts: AdaptiveAttempts | None) -> EvaluationResult:
    """`result` with `aggregated_metrics.adaptive` when `attempts` is given (else `result` as it
    is), and a warning naming the tasks decided otherwise than the run decided them."""
    if attempts is None:
        return result
    aggregated = result.aggregated_metrics
    adaptive = adaptive_result(result.per_conversation_metrics, attempts, aggregated.k)
    warnings = list(result.warnings)
    differ = disagreements(attempts, adaptive)
    if differ:
        warnings.append(
            f"adaptive attempts: {len(differ)} task(s) decided otherwise here than when the run stopped "
            f"(the judge's verdicts differ from the run's): {', '.join(differ[:10])}"
        )
    return result.model_copy(
        update={"aggregated_metrics": aggregated.model_copy(update={"adaptive": adaptive}), "warnings": warnings}
    )
