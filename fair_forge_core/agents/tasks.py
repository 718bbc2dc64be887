"""The TASKS file: a request's datasets without the agent's side (docs/agent-contract.md "Tasks").
Pure: no I/O.

A task (`TaskSpec`) is what every attempt at it shares: `task_id`, its turns (`TaskTurn`: the
user's `query`, the reference answer `ground_truth_assistant`, the expected tools
`ground_truth_agentic`, and optionally `qa_id` and per-turn `criteria`), and the task's own
fields, each the request's (`schemas.Dataset`): `language`, `context`, `goal`, `goal_rubric`,
`expected_state`, `tool_policy`, `criteria`; and `initial_state` (any JSON), sent to the agent with
every turn and recorded nowhere else. A task obeys the rules of `Dataset` (a `goal_rubric` needs a
`goal`; a turn's tool policy agrees with the task's): each is checked by building the dataset a
task gives (`TaskSpec.dataset`), so the rules are written once.

`TasksFile` is the file: `tasks` (task ids unique) and, optionally, the `connector` and `config`
the recording is to be evaluated with (carried into it as they are).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationError, field_validator, model_validator

from fair_forge_core.schemas import Dataset, EvaluationConfig, GroundTruthAgentic, ToolPolicy
from fair_forge_core.schemas.base import RequestModel
from fair_forge_core.schemas.json_input import omitted_when_none
from fair_forge_core.schemas.request import Connectors, Criteria, MayHoldRules, none_without_expected_tools


class TaskTurn(RequestModel):
    """One turn of a task: what the user says and what is expected (`schemas.Batch`'s fields).
    `qa_id` names the turn in the result; absent, `<task_id>-<turn>` (as references do)."""

    query: str
    ground_truth_assistant: str
    ground_truth_agentic: GroundTruthAgentic | None = None
    qa_id: str | None = omitted_when_none(min_length=1)
    criteria: Criteria | None = omitted_when_none()

    @field_validator("ground_truth_agentic", mode="before")
    @classmethod
    def _tools_not_evaluated_without_expected_tools(cls, value: Any) -> Any:
        return none_without_expected_tools(value)


class TaskSpec(RequestModel):
    """One task (module docstring)."""

    task_id: str = Field(min_length=1)
    turns: list[TaskTurn] = Field(min_length=1)
    language: str = "english"
    context: str = ""
    initial_state: Any = None
    goal: str | None = omitted_when_none(min_length=1)
    goal_rubric: list[Annotated[str, Field(min_length=1)]] | None = omitted_when_none(min_length=1)
    expected_state: MayHoldRules = omitted_when_none()
    tool_policy: ToolPolicy | None = omitted_when_none()
    criteria: Criteria | None = omitted_when_none()

    @model_validator(mode="after")
    def _the_rules_of_a_dataset(self) -> TaskSpec:
        try:  # a placeholder answer and state: only the task's own fields are checked here
            self.dataset(session_id="-", assistant_id="-", answers=[""] * len(self.turns), final_state={})
        except ValidationError as error:
            first = error.errors(include_input=False, include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"{where}: {first['msg'].removeprefix('Value error, ')}") from None
        return self

    def qa_id(self, turn: int) -> str:
        """The turn's `qa_id`: its own, else `<task_id>-<turn>`."""
        return self.turns[turn].qa_id or f"{self.task_id}-{turn}"

    def dataset(
        self,
        *,
        session_id: str,
        assistant_id: str,
        answers: list[str],
        turns: list[dict[str, Any]] | None = None,
        final_state: Any = None,
        **fields: Any,
    ) -> Dataset:
        """The dataset of one attempt: the task's first `len(answers)` turns with those answers
        (`turns[i]`, when given, adds the turn's recorded fields: `agentic`, `agent_usage`), the
        task's fields, `final_state`, and `fields` (`agent_error`, `unscored`)."""
        conversation = []
        for index, answer in enumerate(answers):
            spec = self.turns[index]
            batch: dict[str, Any] = {
                "qa_id": self.qa_id(index),
                "query": spec.query,
                "assistant": answer,
                "ground_truth_assistant": spec.ground_truth_assistant,
                "ground_truth_agentic": spec.ground_truth_agentic,
                **({"criteria": spec.criteria} if spec.criteria is not None else {}),
                **(turns[index] if turns is not None else {}),
            }
            conversation.append(batch)
        task_fields = {
            name: getattr(self, name)
            for name in ("goal", "goal_rubric", "expected_state", "tool_policy", "criteria")
            if getattr(self, name) is not None
        }
        return Dataset.model_validate(
            {
                "session_id": session_id,
                "assistant_id": assistant_id,
                "language": self.language,
                "context": self.context,
                "task_id": self.task_id,
                "conversation": conversation,
                **task_fields,
                "final_state": final_state,
                **fields,
            }
        )


def unique_task_ids(tasks: list[TaskSpec]) -> list[TaskSpec]:
    """`tasks` when no two share a `task_id`, else `ValueError` naming the first repeated one."""
    seen: dict[str, int] = {}
    for index, task in enumerate(tasks):
        if task.task_id in seen:
            raise ValueError(f"{task.task_id!r} names tasks [{seen[task.task_id]}] and [{index}]: a task_id is unique")
        seen[task.task_id] = index
    return tasks


class TasksFile(RequestModel):
    """A TASKS file (module docstring): `tasks`, and the `connector` and `config` to evaluate the
    recording with (optional: absent, the caller gives them)."""

    tasks: Annotated[list[TaskSpec], Field(min_length=1), AfterValidator(unique_task_ids)]
    connector: Connectors | None = omitted_when_none()
    config: EvaluationConfig | None = omitted_when_none()
