"""Inspect AI's side of `benchmarks/bench_peers.py`: the given answers graded by `model_graded_fact()`.

    inspect eval inspect_task.py --model openai/ff-inspect --max-connections 16 (cases: $PEERS_CASES)

The solver does not call the model: it sets the case's answer as the output, so the only model
calls are the grader's, one a sample (`model_graded_fact()` with the task's model, the stub).
"""

from __future__ import annotations

import json
import os

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import model_graded_fact
from inspect_ai.solver import Generate, Solver, TaskState, solver


@solver
def given_answer() -> Solver:
    """The case's answer as the model's output, without a model call."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.output = ModelOutput.from_content(model=str(state.model), content=str(state.metadata["answer"]))
        return state

    return solve


@task
def peers() -> Task:
    with open(os.environ["PEERS_CASES"], encoding="utf-8") as handle:
        cases = [json.loads(text) for text in handle if text.strip()]
    samples = [
        Sample(input=case["query"], target=case["reference"], metadata={"answer": case["answer"]}, id=i)
        for i, case in enumerate(cases)
    ]
    return Task(dataset=MemoryDataset(samples), solver=given_answer(), scorer=model_graded_fact())
