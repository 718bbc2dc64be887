"""`headline`: one name per figure, and the goals line `fair-forge evaluate` prints (#33 items 2 and 11)."""

from __future__ import annotations

from fair_forge_core.headline import figure_name, goal_line, pooled_figure
from fair_forge_core.schemas import ConversationMetrics, GoalCheck
from fair_forge_testing.builders import scored_conversation


def test_the_per_task_figure_is_the_bare_name_and_every_other_is_qualified() -> None:
    assert figure_name("pass_pow_k", 3, "per_task") == "pass^3"
    assert figure_name("pass_at_k", 3, "per_task") == "pass@3"
    assert figure_name("pass_pow_k", 3, "pooled_plug_in") == "pass^3 (pooled plug-in)"
    assert figure_name("pass_pow_k", "K", "pooled_unbiased") == "pass^K (pooled unbiased)"
    assert figure_name("pass_at_k", 2, "per_task_plug_in") == "pass@2 (per-task plug-in)"
    assert figure_name("pass_pow_k", 3, "per_conversation") == "pass^3 (per-conversation)"
    assert pooled_figure("bayesian") == "pooled_posterior_mean" and pooled_figure("frequentist") == "pooled_plug_in"


def with_goal(name: str, achieved: bool | None, *, required: bool, error: str | None = None) -> ConversationMetrics:
    goal = GoalCheck(
        goal="the refund is issued",
        goal_achieved=achieved,
        score=None if achieved is None else float(achieved),
        reasoning=None,
        error=error,
        required=required,
    )
    return scored_conversation(name, True).model_copy(update={"goal_check": goal})


def test_no_goal_no_line() -> None:
    assert goal_line([scored_conversation("a", True), scored_conversation("b", False)]) is None


def test_the_goals_are_counted_achieved_not_achieved_and_not_judged() -> None:
    conversations = [
        with_goal("a", True, required=True),
        with_goal("b", True, required=True),
        with_goal("c", False, required=True),
        with_goal("d", None, required=True, error="the judge timed out"),
        scored_conversation("e", True),  # no goal: not counted
    ]
    assert goal_line(conversations) == (
        "goals: 4 conversation(s) with a goal — 2 achieved, 1 not achieved, 1 not judged (the judge timed out); "
        "required to pass"
    )


def test_goals_not_judged_for_several_reasons_name_none_and_required_is_counted() -> None:
    conversations = [
        with_goal("a", None, required=False, error="the judge timed out"),
        with_goal("b", None, required=False, error="the offline judge abstains"),
    ]
    assert goal_line(conversations) == (
        "goals: 2 conversation(s) with a goal — 0 achieved, 0 not achieved, 2 not judged; reported, not required"
    )
    mixed = [with_goal("a", True, required=True), with_goal("b", False, required=False)]
    assert goal_line(mixed) == (
        "goals: 2 conversation(s) with a goal — 1 achieved, 1 not achieved, 0 not judged; 1 of them required to pass"
    )
