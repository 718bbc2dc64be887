"""The test cases of a result, as a CI system reads them: what passed, what failed and why,
what could not be scored and why. `junit` writes them as XML, `markdown` lists the worst.

Rule (one case per task, or per conversation):

- A case is a task when its conversations carry a `task_id`: the conversations of one
  assistant sharing a task_id are the attempts of one case (`flakiness.task_key`, per
  assistant). A conversation without a task_id is a case of its own.
- A case *failed* when any scored conversation is not fully correct: a task passes only
  when every scored attempt passed (pass^k's reading: an agent that sometimes fails a task
  is not reliable on it; a flaky task is a failure, as `--max-flaky-tasks 0` would make it).
  Its reasons are each failing attempt's (`failure_reasons`); its unscored attempts are
  noted (`notes`).
- Else it is *skipped* when any of its conversations is unscored (none scored, or some
  attempts not measured: what was not measured never reads as a pass); its reasons are the
  unscored turns' errors and, under `config.require_goal`, the unjudged goal's.
- Else it *passed*.

Turns are numbered from 1 in the reasons ("turn 2 (q2)"); the rows of `rows` give the
0-based index of `interactions`. Pure: text from a result, no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fair_forge_core.checks.end_state import state_reason
from fair_forge_core.flakiness import task_key
from fair_forge_core.schemas import ConversationMetrics, InteractionResult, ToolCorrectnessScore

Outcome = Literal["passed", "failed", "skipped"]
CaseKind = Literal["task", "conversation", "metric", "verdict"]
"""What a case is: a task's attempts, a conversation, and in a comparison a metric or the verdict."""


def _number(value: float | None) -> str:
    return "none" if value is None else f"{value:.3f}"


def _turn_name(index: int, interaction: InteractionResult | None) -> str:
    return f"turn {index + 1}" + (f" ({interaction.qa_id})" if interaction is not None else "")


def _sentence(text: str | None) -> str:
    """A reasoning on one line (newlines folded), or a note that there is none."""
    return " ".join(text.split()) if text else "no reasoning given"


def turn_reasons(conversation: ConversationMetrics, index: int) -> list[str]:
    """Why turn `index` (0-based) of a scored conversation is wrong: each failing signal — the
    answer below the threshold with the judge's reasoning; the tools judged wrong, with the
    rubric's reasoning (or the trajectory the tool policy expected); each tool-policy
    violation. Empty for a correct or unscored turn. Without per-turn detail in the result
    (`interactions` null), only the score against the threshold can be said."""
    interactions = conversation.interactions
    if interactions is None:
        score = conversation.correctness_scores[index]
        if score is None or index in conversation.correct_indices:
            return []
        return [
            f"turn {index + 1}: not correct (answer score {_number(score)}, threshold "
            f"{_number(conversation.threshold)}; the result has no per-turn detail)"
        ]
    turn = interactions[index]
    if turn.is_correct is not False:
        return []
    name = _turn_name(index, turn)
    reasons = []
    if turn.answer_correct is False:
        reasons.append(
            f"{name}: answer score {_number(turn.answer_score)} below the threshold "
            f"{_number(conversation.threshold)}: {_sentence(turn.judge_reasoning)}"
        )
    if turn.tool_correct is False:
        reasons.append(f"{name}: tools: {_tool_reason(conversation.tool_correctness_scores[index], turn)}")
    if turn.tool_policy is not None:
        reasons += [f"{name}: tool policy: {violation.message}" for violation in turn.tool_policy.violations]
    return reasons or [f"{name}: not correct"]


def _tool_reason(score: ToolCorrectnessScore | None, turn: InteractionResult) -> str:
    """The tools' verdict: the trajectory match when the policy decided it, else the rubric's."""
    policy = turn.tool_policy
    if policy is not None and policy.trajectory_matches is False:
        return f"the calls do not match the expected trajectory (trajectory_match {policy.trajectory_match})"
    if score is None:
        return "judged wrong"
    return f"overall {_number(score.overall_correctness)}: {_sentence(score.reasoning)}"


def failure_reasons(conversation: ConversationMetrics) -> list[str]:
    """Why a scored conversation is not fully correct: its wrong turns' reasons (`turn_reasons`),
    its end state when it does not match, its goal when required and not achieved. Empty for a
    fully correct or an unscored conversation."""
    if not conversation.is_scored or conversation.is_fully_correct:
        return []
    reasons = [
        reason for index in range(conversation.total_interactions) for reason in turn_reasons(conversation, index)
    ]
    if conversation.state_check is not None and not conversation.state_check.matches:
        reasons.append(state_reason(conversation.state_check))
    goal = conversation.goal_check
    if goal is not None and goal.required and goal.goal_achieved is False:
        reasons.append(f"goal not achieved (score {_number(goal.score)}): {_sentence(goal.reasoning)}")
    return reasons or ["not fully correct"]


def unscored_reasons(conversation: ConversationMetrics) -> list[str]:
    """Why a conversation is unscored: for one unscored before judging (an attempt left unjoined),
    its cause and detail alone; else each unscored turn's error, and the required goal's when it
    was not judged. Empty for a scored conversation."""
    if conversation.is_scored:
        return []
    if conversation.unscored is not None:  # unscored before judging: its cause, not its turns'
        return [f"{conversation.unscored.cause}: {conversation.unscored.detail}"]
    if conversation.interactions is None:
        reasons = [f"{conversation.unscored_interactions} turn(s) unscored (the result has no per-turn detail)"]
    else:
        reasons = [
            f"{_turn_name(index, turn)}: {_sentence(turn.error) if turn.error else 'no score'}"
            for index, turn in enumerate(conversation.interactions)
            if turn.is_correct is None
        ]
    goal = conversation.goal_check
    if goal is not None and goal.required and goal.goal_achieved is None:
        reasons.append(f"goal not judged: {_sentence(goal.error)}")
    return [reason for reason in reasons if reason] or ["unscored"]


@dataclass(frozen=True)
class Case:
    """One test case: a task's attempts or one conversation (module docstring); in a comparison
    (`junit.junit_comparison`) a metric or the verdict, with no conversations."""

    assistant_id: str
    kind: CaseKind
    name: str
    conversations: tuple[ConversationMetrics, ...]
    outcome: Outcome
    reasons: tuple[str, ...]
    """Failed: each failing attempt's reasons; skipped: why nothing was scored; passed: none."""
    notes: tuple[str, ...]
    """Of a task with scored attempts: its unscored attempts, with why."""

    @property
    def scored(self) -> int:
        return sum(1 for c in self.conversations if c.is_scored)

    @property
    def passed(self) -> int:
        return sum(1 for c in self.conversations if c.is_scored and c.is_fully_correct)

    @property
    def message(self) -> str:
        """One line: what happened, and the first reason."""
        first = self.reasons[0] if self.reasons else ""
        if self.outcome == "skipped":
            return f"unscored: {first}"
        if self.outcome == "passed":
            return f"{self.passed} of {self.scored} scored attempt(s) passed" if self.kind == "task" else "passed"
        if self.kind == "task":
            return f"{self.passed} of {self.scored} scored attempt(s) passed; {first}"
        return first


def _case(
    assistant: str, kind: Literal["task", "conversation"], name: str, members: Sequence[ConversationMetrics]
) -> Case:
    scored = [c for c in members if c.is_scored]
    several = len(members) > 1

    def labelled(conversation: ConversationMetrics, reasons: list[str]) -> list[str]:
        # A task's reasons name the attempt they belong to.
        return [f"{conversation.session_id}: {reason}" if several else reason for reason in reasons]

    failing = [c for c in scored if not c.is_fully_correct]
    if not failing and len(scored) < len(members):
        reasons = [r for c in members if not c.is_scored for r in labelled(c, unscored_reasons(c))]
        return Case(assistant, kind, name, tuple(members), "skipped", tuple(reasons), ())
    reasons = [r for c in failing for r in labelled(c, failure_reasons(c))]
    notes = [
        f"{c.session_id}: unscored: {reason}" for c in members if not c.is_scored for reason in unscored_reasons(c)
    ]
    return Case(assistant, kind, name, tuple(members), "failed" if failing else "passed", tuple(reasons), tuple(notes))


def cases(conversations: Sequence[ConversationMetrics]) -> list[Case]:
    """The cases of a result's conversations, in the order their first conversation comes
    (module docstring). Names are `task <task_id>` and `conversation <session_id>`; a
    conversation whose session_id another conversation of its assistant shares is named with
    its position too (`conversation s1 [4]`), so that no two cases of a suite share a name."""
    groups: dict[tuple[str, str | int], list[ConversationMetrics]] = {}
    for index, conversation in enumerate(conversations):
        groups.setdefault((conversation.assistant_id, task_key(index, conversation)), []).append(conversation)
    sessions: Counter[tuple[str, str]] = Counter(
        (c.assistant_id, c.session_id) for c in conversations if c.task_id is None
    )
    result = []
    for (assistant, key), members in groups.items():
        if isinstance(key, str):
            result.append(_case(assistant, "task", f"task {key}", members))
            continue
        session = members[0].session_id
        name = f"conversation {session}" + (f" [{key}]" if sessions[(assistant, session)] > 1 else "")
        result.append(_case(assistant, "conversation", name, members))
    return result
