"""The CLI's tests run as if not in a GitHub Actions step: a runner's `GITHUB_STEP_SUMMARY`
would otherwise receive every test's summary (the CLI appends to it). Tests of the step
summary set it to a file of their own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    yield
