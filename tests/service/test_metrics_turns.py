"""Invocations in threads of one process (the local API, the tests' in-process Lambda runtime)
share the handler's metric set: their flushes take turns (`handler.observability.TurnTakingEMF`)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from handler.observability import TurnTakingEMF


def test_a_flush_waits_for_the_one_in_progress_instead_of_emptying_its_metrics(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    provider = TurnTakingEMF(namespace="Test", service="test")
    inside, release = threading.Event(), threading.Event()
    serialize = TurnTakingEMF.serialize_metric_set
    finished: list[str] = []
    errors: list[BaseException] = []

    def paused_serialize(self: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "first":
            inside.set()
            release.wait(60)
        return serialize(self, *args, **kwargs)

    monkeypatch.setattr(TurnTakingEMF, "serialize_metric_set", paused_serialize)

    def invocation(name: str) -> None:
        try:
            provider.add_metric(name="Requests", unit="Count", value=1)
            provider.flush_metrics()
            finished.append(name)
        except BaseException as exc:  # what a handler would have raised
            errors.append(exc)

    first = threading.Thread(target=invocation, args=("first",), name="first")
    first.start()
    assert inside.wait(60)  # the first is serializing its metrics
    second = threading.Thread(target=invocation, args=("second",), name="second")
    second.start()
    second.join(0.5)  # it waits for its turn: it cannot empty the set under the first
    release.set()
    first.join(60)
    second.join(60)
    assert errors == []
    assert finished == ["first", "second"]
    printed = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(printed) == 2  # each flush wrote its metric
