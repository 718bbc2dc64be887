"""The CLI's tests run as if not in a CI job: a runner's `GITHUB_STEP_SUMMARY` would otherwise
receive every test's summary (the CLI appends to it), and the CI variables `evaluate` reads
(`run_info.CI_VARIABLES`: GITHUB_ACTIONS, GITLAB_CI, the commit, the branch, ...) would put the
job's labels into every result. They are removed for the whole session (module-scoped fixtures
that run the CLI included) and again around each test; tests of the step summary, and of the
CI's labels, set them themselves."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fair_forge_core.run_info import CI_VARIABLES

NOT_IN_CI = ("GITHUB_STEP_SUMMARY", *CI_VARIABLES)


@pytest.fixture(autouse=True, scope="session")
def not_in_ci() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name in NOT_IN_CI:
            patch.delenv(name, raising=False)
        yield


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in NOT_IN_CI:
        monkeypatch.delenv(name, raising=False)
    yield
