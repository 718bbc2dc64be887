"""What the viewer's pages read (`fair_forge_core.view`): the index of runs, the tasks over time,
each run's conversations by task, and the comparison of each run with the one before it. Pure:
results in, JSON-ready values out.

- **Runs** are ordered by `run.started_at`, after the results without one (written before
  results knew their run, or by the API), which keep their order among the files given; they
  are named `r0001`, `r0002`, … in that order, so the last run is the newest.
- A run's **headline** is the pass^k readiness was decided on (`headline.headline_figure`: per
  task when its basis is, else the pooled one), named as every output names it, with its
  interval bounds when the result has them.
- A **task** is one assistant's task (`compare.outcomes.task_key`: its `task_id`, else its
  session), keyed `assistant/task`. Its figure in a run is its scored attempts `n`, those that
  passed `c`, and its label by `flakiness.label_of` ("stable", "flaky", "failing"; none under
  `flakiness.MIN_ATTEMPTS` scored attempts). A task **changed** between two runs when its label or its pass rate
  c/n differs.
- The **comparison** of an earlier and a later run (`run_comparison`: `compare.compare_sides`,
  what `fair-forge compare` reports: the verdict, its explanation and the tasks that changed)
  when both have one and the same assistant; else None, and the viewer lists the tasks that
  changed by the rule above. Which pairs the site compares is `view.compared_pairs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fair_forge_core.schemas import EvaluationResult

TASK_SEPARATOR = "/"


@dataclass(frozen=True)
class Run:
    """One result in the site: its id, the file it came from, the result."""

    id: str
    source: str
    result: EvaluationResult


def ordered_runs(results: Sequence[tuple[str, EvaluationResult]]) -> list[Run]:
    """The results as runs, in the module docstring's order, with their ids."""

    def when(item: tuple[int, tuple[str, EvaluationResult]]) -> tuple[int, datetime, int]:
        place, (_, result) = item
        started = _run_field(result, "started_at")
        if not isinstance(started, str):
            return (0, datetime.min.replace(tzinfo=UTC), place)
        return (1, datetime.fromisoformat(started.replace("Z", "+00:00")), place)

    ordered = sorted(enumerate(results), key=when)
    return [Run(f"r{number:04d}", source, result) for number, (_, (source, result)) in enumerate(ordered, start=1)]


def _run_field(result: EvaluationResult, name: str) -> Any:
    """A field of the result's `run` (#39 item 1), or None for a result without one."""
    run = getattr(result, "run", None)
    return getattr(run, name, None) if run is not None else None


def headline(result: EvaluationResult) -> dict[str, Any]:
    """The run's headline pass^k and its bounds: the figure readiness was decided on
    (`headline.headline_figure`), named as every output names it (`headline.figure_name`)."""
    from fair_forge_core.headline import figure_name, headline_figure

    agg = result.aggregated_metrics
    figure = headline_figure(agg)
    name = figure_name("pass_pow_k", agg.k, figure)
    if figure == "per_task" and agg.per_task is not None:
        task = agg.per_task
        return {"name": name, "value": task.pass_pow_k, "low": task.pass_pow_k_ci_low, "high": task.pass_pow_k_ci_high}
    return {"name": name, "value": agg.pass_pow_k, "low": agg.pass_pow_k_ci_low, "high": agg.pass_pow_k_ci_high}


def run_row(run: Run) -> dict[str, Any]:
    """The index's row of `run`: when, labels, assistants, readiness, headline, cost, counts."""
    result = run.result
    agg = result.aggregated_metrics
    readiness = agg.readiness
    usage = agg.judge_usage
    labels = _run_field(result, "labels") or {}
    return {
        "id": run.id,
        "source": run.source,
        "started_at": _run_field(result, "started_at"),
        "labels": dict(labels),
        "ci": _run_field(result, "ci"),
        "assistants": sorted({c.assistant_id for c in result.per_conversation_metrics}),
        "k": agg.k,
        "conversations": agg.total_conversations,
        "unscored": agg.unscored_conversations,
        "tier": readiness.tier if readiness else agg.interpretation,
        "status": readiness.status if readiness else None,
        "summary": readiness.summary if readiness else None,
        "headline": headline(result),
        "cost_usd": usage.cost_usd if usage else None,
    }


def task_figures(result: EvaluationResult) -> dict[str, dict[str, Any]]:
    """Each task of the result (`assistant/task`) with n, c and its label (module docstring)."""
    from fair_forge_core.flakiness import MIN_ATTEMPTS, label_of

    figures: dict[str, dict[str, Any]] = {}
    for conversation in result.per_conversation_metrics:
        figure = figures.setdefault(task_of(conversation), {"n": 0, "c": 0, "unscored": 0, "label": None})
        if conversation.is_scored:
            figure["n"] += 1
            figure["c"] += int(bool(conversation.is_fully_correct))
        else:
            figure["unscored"] += 1
    for figure in figures.values():
        figure["label"] = label_of(figure["n"], figure["c"]) if figure["n"] >= MIN_ATTEMPTS else None
    return figures


def task_of(conversation: Any) -> str:
    """A conversation's task as the site names it: `assistant/task` (`compare.outcomes.task_key`)."""
    from fair_forge_core.compare.outcomes import task_key

    return f"{conversation.assistant_id}{TASK_SEPARATOR}{task_key(conversation.task_id, conversation.session_id)}"


def changed(before: dict[str, Any] | None, after: dict[str, Any] | None) -> bool:
    """Whether a task's figure changed between two runs (module docstring); a task in one run
    only has not changed (it is new or gone)."""
    if before is None or after is None:
        return False
    return before["label"] != after["label"] or _rate(before) != _rate(after)


def _rate(figure: dict[str, Any]) -> float | None:
    return figure["c"] / figure["n"] if figure["n"] else None


def task_matrix(runs: Sequence[Run]) -> dict[str, Any]:
    """The tasks over time: every task, and per run each task's [n, c, label] (null where the run
    has no attempt at it), with the tasks that changed from the run before."""
    per_run = [task_figures(run.result) for run in runs]
    tasks = sorted({task for figures in per_run for task in figures})
    cells = []
    for index, figures in enumerate(per_run):
        before = per_run[index - 1] if index else {}
        cells.append(
            {
                "run": runs[index].id,
                "figures": [
                    None if (f := figures.get(task)) is None else [f["n"], f["c"], f["label"], f["unscored"]]
                    for task in tasks
                ],
                "changed": [task for task in tasks if index and changed(before.get(task), figures.get(task))],
            }
        )
    return {"tasks": tasks, "runs": cells}


def run_details(run: Run) -> dict[str, Any]:
    """A run's conversations by task, for the side by side of a task: each attempt's session,
    outcome and its first failing turn's reason (the report has the rest)."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for index, conversation in enumerate(run.result.per_conversation_metrics):
        key = task_of(conversation)
        outcome = "unscored" if not conversation.is_scored else "pass" if conversation.is_fully_correct else "fail"
        by_task.setdefault(key, []).append(
            {
                "index": index,
                "session": conversation.session_id,
                "outcome": outcome,
                "reason": _first_failure(conversation),
            }
        )
    return {"id": run.id, "tasks": by_task}


def _first_failure(conversation: Any) -> str | None:
    """The reason of the conversation's first check that did not pass, turn checks first (None: all passed)."""
    for check in conversation.checks:
        if check.outcome != "passed" and check.required:
            where = f"turn {check.turn + 1}: " if check.turn is not None else ""
            return f"{where}{check.name}: {check.reason}"
    return None


def run_comparison(before: Run, after: Run) -> dict[str, Any] | None:
    """`fair-forge compare`'s comparison of `after` against `before` (module docstring), as JSON;
    None when they do not have one and the same assistant, or it is refused."""
    from fair_forge_core.compare import ComparisonRefused, compare_sides
    from fair_forge_core.compare.sides import side_of_result

    assistants = {c.assistant_id for c in before.result.per_conversation_metrics}
    if len(assistants) != 1 or assistants != {c.assistant_id for c in after.result.per_conversation_metrics}:
        return None

    try:  # as `fair-forge compare` does, with its defaults
        compared = compare_sides(
            side_of_result(before.result, None, "baseline"), side_of_result(after.result, None, "candidate")
        )
    except (ComparisonRefused, ValueError):
        return None
    comparison = compared.comparison
    [assistant] = assistants
    return {
        "verdict": comparison.verdict,
        "explanation": comparison.verdict_explanation,
        "changed_tasks": [
            {**task.model_dump(mode="json"), "task": f"{assistant}{TASK_SEPARATOR}{task.task}"}
            for task in comparison.changed_tasks or []
        ],
    }
