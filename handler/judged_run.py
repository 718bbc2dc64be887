"""The judged run: what `POST /run`, `POST /calibrate` and a job's worker wrap around their
judging, written once (a middleware, as Powertools' route middlewares are).

`judged_run(what, counts, ledger)` is a context manager; inside it the face builds its judging
coroutine with the run's `telemetry` and runs it with `JudgedRun.run` (the process's one event
loop, `fair_forge_core.evaluate.run_sync`). On the way out, whatever happened:

- the EMF metrics: the face's `counts` (`Conversations` and `Turns`, or `CalibrationPairs`), then
  `JudgeCalls` and `JudgeErrors` from the telemetry, and for an evaluation (a `ledger` given)
  `JudgeParseFailures`, `JudgeInputTokens`, `JudgeOutputTokens`, `CascadeSettledOffline` and
  `CascadeSentToLLM` under a judge cascade, and `EvaluationDuration` (milliseconds);
- a judging that could not give a result — the provider refused (`JudgeProviderRefused`), or
  nothing could be scored (`NoConversationScored`, `NoPairScored`) — leaves as
  `JudgedRunFailed`, whose message is the face's words (`Agentic evaluation failed: …`,
  `Calibration failed: …`). The API maps it to a 502 (`handler.app`), a job's worker fails the
  job with it (`handler.job_lambdas`). Any other exception passes through unchanged.

Imports of the core happen when a run starts, not at import (cold start).
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from aws_lambda_powertools.metrics import MetricUnit

from handler.observability import metrics

if TYPE_CHECKING:
    from fair_forge_core.judges.base import JudgeTelemetry
    from fair_forge_core.judges.usage import JudgeLedger

T = TypeVar("T")

RunKind = Literal["evaluation", "calibration"]

FAILED: dict[RunKind, str] = {"evaluation": "Agentic evaluation failed", "calibration": "Calibration failed"}
"""The first words of a failed run's message, by kind: what the service has always answered."""


class JudgedRunFailed(Exception):
    """A judged run that could not give a result. `what` is the kind of run, `cause` the core's
    exception (its message is safe to show: the core redacts it), and the message
    `<FAILED[what]>: <cause>`."""

    def __init__(self, what: RunKind, cause: Exception) -> None:
        super().__init__(f"{FAILED[what]}: {cause}")
        self.what, self.cause = what, cause


@dataclass
class JudgedRun:
    """A judged run in progress: the telemetry its judges report to, when it started
    (`time.perf_counter()`), and once the block has ended its duration in seconds."""

    telemetry: JudgeTelemetry
    started: float
    elapsed_s: float = 0.0

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """`coroutine` run to completion on the process's one event loop (not `asyncio.run`:
        `fair_forge_core.evaluate.run_sync` says why the providers' HTTP pools need it)."""
        from fair_forge_core.evaluate import run_sync

        return run_sync(coroutine)


def _failures() -> tuple[type[Exception], ...]:
    """The core's exceptions of a judging that gave no result (module docstring)."""
    from fair_forge_core.calibration import NoPairScored
    from fair_forge_core.evaluate import NoConversationScored
    from fair_forge_core.judges.base import JudgeProviderRefused

    return (JudgeProviderRefused, NoConversationScored, NoPairScored)


@contextmanager
def judged_run(what: RunKind, counts: Mapping[str, int], ledger: JudgeLedger | None = None) -> Iterator[JudgedRun]:
    """Wrap a face's judging: the metrics and the failure mapping of the module docstring. `counts`
    are the face's own metrics (name → count), emitted first; `ledger`, an evaluation's, adds
    its tokens and cascade to them."""
    from fair_forge_core.judges.base import JudgeTelemetry

    judged = JudgedRun(JudgeTelemetry(), time.perf_counter())
    try:
        yield judged
    except _failures() as exc:  # evaluated only when the judging raised: calibration is imported then
        raise JudgedRunFailed(what, exc) from None
    finally:
        judged.elapsed_s = time.perf_counter() - judged.started
        _emit(judged, counts, ledger)


def _emit(judged: JudgedRun, counts: Mapping[str, int], ledger: JudgeLedger | None) -> None:
    """The run's EMF metrics (module docstring), in that order."""
    for name, value in counts.items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    telemetry = judged.telemetry
    metrics.add_metric(name="JudgeCalls", unit=MetricUnit.Count, value=telemetry.calls)
    metrics.add_metric(name="JudgeErrors", unit=MetricUnit.Count, value=telemetry.errors)
    if ledger is None:
        return
    metrics.add_metric(name="JudgeParseFailures", unit=MetricUnit.Count, value=telemetry.parse_failures)
    usage = ledger.summary()
    metrics.add_metric(name="JudgeInputTokens", unit=MetricUnit.Count, value=usage.input_tokens)
    metrics.add_metric(name="JudgeOutputTokens", unit=MetricUnit.Count, value=usage.output_tokens)
    if usage.cascade_settled_offline is not None:
        metrics.add_metric(name="CascadeSettledOffline", unit=MetricUnit.Count, value=usage.cascade_settled_offline)
        metrics.add_metric(name="CascadeSentToLLM", unit=MetricUnit.Count, value=usage.cascade_sent_to_llm or 0)
    metrics.add_metric(name="EvaluationDuration", unit=MetricUnit.Milliseconds, value=judged.elapsed_s * 1000)
