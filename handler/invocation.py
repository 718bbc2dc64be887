"""What lasts one Lambda invocation: when it started (the sync deadline counts from there)
and the pause of cyclic garbage collection. Shared by the API's `lambda_handler` and the
jobs' reduce Lambda, so it lives apart from both."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from handler.settings import Settings

_invocation_started: ContextVar[float | None] = ContextVar("invocation_started", default=None)


@contextmanager
def invocation_clock() -> Iterator[None]:
    """Mark the start of the invocation for `deadline` (API Gateway's 29 s run from here)."""
    token = _invocation_started.set(time.monotonic())
    try:
        yield
    finally:
        _invocation_started.reset(token)


def deadline(settings: Settings, context: Any) -> float:
    """When no new judge call may start: the sync budget counted from the start of the
    invocation (API Gateway's 29 s run from there, whatever validation and imports cost),
    or the Lambda's own deadline less a margin, whichever comes first."""
    now = time.monotonic()
    started = _invocation_started.get()
    limit = (started if started is not None else now) + settings.sync_budget_s
    if context is not None and hasattr(context, "get_remaining_time_in_millis"):
        limit = min(limit, now + context.get_remaining_time_in_millis() / 1000.0 - settings.deadline_margin_s)
    return max(limit, now)


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection during one invocation.

    A large request allocates millions of small containers (the parsed body, the
    models, the results), and each burst of allocations triggers collections that
    walk every live object: for 50,000 turns they cost more than the work itself
    (benchmarks/RESULTS.md). What a request allocates is freed by reference counting
    when it ends (it makes almost no reference cycles: about 0.15 objects per judge
    call), and collection resumes then.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def api_key_id(event: Any) -> str | None:
    """The id of the API Gateway API key that made the request (`requestContext.identity.apiKeyId`,
    which API Gateway sets when the method requires a key), or None: a caller's identity for
    what must stay apart between callers (the judge cache's scope)."""
    identity = ((getattr(event, "raw_event", None) or {}).get("requestContext") or {}).get("identity") or {}
    value = identity.get("apiKeyId")
    return value if isinstance(value, str) and value else None
