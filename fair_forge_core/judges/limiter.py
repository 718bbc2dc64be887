"""`AdaptiveLimiter`: how many judge calls of one evaluation may be in flight at once."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Literal


class AdaptiveLimiter:
    """How many judge calls may be in flight: one limiter shared by all calls of an evaluation.

    - Slots: at most `limit` calls hold one; the others wait, first come first served.
    - AIMD: a 429 halves `limit` (down to 1), a success adds one (up to `ceiling`).
      Only outcomes of calls started since the last halving count: calls already in
      flight when the provider pushed back say nothing about the new limit, so one
      burst of 429s halves once, not once per call.
    - Pause: a 429 also holds every slot back until `now + pause_s` (the provider's
      Retry-After), the shared "not before" instant. Calls in flight finish; no new
      one starts before it.

    `acquire()` returns a ticket to hand back to `release()`. Not thread-safe: one
    event loop, like the evaluation that owns it.
    """

    def __init__(self, ceiling: int) -> None:
        if ceiling < 1:
            raise ValueError(f"ceiling must be at least 1, got {ceiling}")
        self.ceiling = ceiling
        self.limit = ceiling
        self.in_flight = 0
        self.not_before = 0.0  # a time.monotonic() instant, the event loop's clock
        self._epoch = 0  # bumped by each halving
        self._waiters: deque[asyncio.Future[int]] = deque()
        self._wakeup: asyncio.TimerHandle | None = None

    async def acquire(self) -> int:
        """Wait for a slot; returns the ticket for `release`. Cancelling a wait gives nothing up."""
        if not self._waiters and self._can_start():
            self.in_flight += 1
            return self._epoch
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._dispatch()
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # granted, then cancelled: hand the slot on
                self.in_flight -= 1
                self._dispatch()
            raise

    def release(self, ticket: int, outcome: Literal["ok", "rate_limited", "error"], pause_s: float = 0.0) -> None:
        """Give a slot back, telling how its call went; a 429 pauses everyone for `pause_s`."""
        self.in_flight -= 1
        current = ticket == self._epoch
        if outcome == "ok" and current:
            self.limit = min(self.ceiling, self.limit + 1)
        elif outcome == "rate_limited":
            self.not_before = max(self.not_before, time.monotonic() + pause_s)
            if current:
                self.limit = max(1, self.limit // 2)
                self._epoch += 1
        self._dispatch()

    def _can_start(self) -> bool:
        return self.in_flight < self.limit and time.monotonic() >= self.not_before

    def _dispatch(self) -> None:
        """Hand free slots to waiters in order; while paused, come back when the pause ends."""
        while self._waiters and self._can_start():
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled wait is skipped
                self.in_flight += 1
                waiter.set_result(self._epoch)
        if self._waiters and self.in_flight < self.limit and self._wakeup is None:
            delay = max(0.0, self.not_before - time.monotonic())
            self._wakeup = asyncio.get_running_loop().call_later(delay, self._wake)

    def _wake(self) -> None:
        self._wakeup = None
        self._dispatch()
