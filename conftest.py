"""Suite-wide settings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def loopback_judges_allowed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The tests' judge is a fake OpenAI-compatible server on 127.0.0.1, an endpoint a deployment
    refuses unless its operator allows it: allowed here as an operator would, through the
    environment (subprocesses inherit it). Tests of that refusal delete the variable."""
    monkeypatch.setenv("FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS", "127.0.0.0/8,::1/128")
    yield
