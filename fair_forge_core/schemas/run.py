"""The run a result came from (`EvaluationResult.run`), set by `fair-forge evaluate` and `fair-forge run
--evaluate` (`fair_forge_core.run_info`); never by the service, whose responses do not carry it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fair_forge_core.schemas.base import ResultModel

CiSystem = Literal["github", "gitlab"]
"""The CI systems whose environment `fair_forge_core.run_info.ci_labels` reads."""


class RunInfo(ResultModel):
    """When and on which tasks a result was computed, and the labels it was given.

    `started_at`: when the evaluation started, ISO 8601 in UTC ("2026-12-04T18:50:00.000Z"; what is
    written is to the millisecond, what is read may have no fraction or up to six digits).
    `tasks_hash`: the sha256 (hex) of the suite's tasks, not of the answers
    (`fair_forge_core.run_info.tasks_hash`: each conversation's task with its turns' queries,
    ground truths and expected tools, its goal and expected state): two runs of one suite share it
    whatever the agent answered and however many attempts each task had.
    `labels`: `--label KEY=VALUE`s and, in CI, what the CI's environment says of the run (commit,
    branch, pr or mr, run_url, repository), never a secret; a `--label` overrides a CI label of its key.
    `ci`: the CI system the labels were read from, None outside CI."""

    started_at: str = Field(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")
    tasks_hash: str
    labels: dict[str, str]
    ci: CiSystem | None
