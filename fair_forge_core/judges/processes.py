"""Judge calls on every core: worker processes, each with its own event loop and HTTP pool.

CPython runs one thread's Python at a time, and one judge call costs about 2.5 ms of CPU in
LangChain, the provider's SDK and its HTTP stack (benchmarks/RESULTS.md, "The LLM-judge path"),
so one event loop tops out at a few hundred calls a second however many are in flight.
`JudgeProcesses` spreads an evaluation's provider calls over worker processes
(`judges.judge_worker`, one per further CPU), each of which builds the judge's chat model
from the recipe `connectors.build_chat_model` built it from (`connectors.build.ModelRecipe`:
the same class, params and reply-limited client, so the same requests on the wire).

What moves to a worker is the provider call only: `runnable.ainvoke(messages)` → the raw reply
(an `AIMessage`, or the structured-output object) and its token usage, or the failure as the
worker read it (`judges.errors.RemoteProviderError`: kind, status, Retry-After, description).
Everything else stays in the evaluation's process, on its loop: the one concurrency limit and
adaptive limiter, the cost cap's reservation, the ledger, the cache, the retries and the
parsing (`judges.llm.AnswerJudge`). So the verdicts, their order, the usage and the errors are
those of one loop.

Where a call goes (`JudgeWorkers.pick`): to this loop or a ready worker, whichever has the fewest
of this process's calls in flight, a worker on a tie (this loop also carries the workers'
messages). A loop that CPU slows keeps its calls longer, so work moves off it. A worker keeps a
model by its recipe's unique token (the recipe travels with every call, so a worker that dropped
the model builds it again), and drops it, keys and all, when the judge's model is gone here.

When: workers start the first time an evaluation has `START_AT` calls in flight on this loop
(a small evaluation never pays for them: each imports LangChain, about a second of CPU), and
calls keep running here until each says it is ready; then they live as long as this process
(a warm Lambda keeps them). A worker that ends, sends anything but frames, or misses a call's end
by `GRACE_S` is stopped: its calls in flight fail as connection errors (the judge retries them,
elsewhere), and it is replaced the next time workers are needed. How many: `FAIR_FORGE_JUDGE_PROCESSES`
(0: none), else the CPUs this process may run on, less one; on Lambda, where CPU comes in
proportion to memory (1,769 MB is one vCPU's worth), at most memory / 1,769 MB, less one.
Only models built by `connectors.build_chat_model` go to workers (another has no recipe).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from fair_forge_core.connectors.build import ModelRecipe, recipe_of
from fair_forge_core.judges.errors import RemoteProviderError
from fair_forge_core.judges.tokens import TokenUsage

PROCESSES_VARIABLE = "FAIR_FORGE_JUDGE_PROCESSES"
START_AT = 32
"""Calls in flight on this loop that start the workers (module docstring)."""
LAMBDA_MB_PER_VCPU = 1769
GRACE_S = 2.0
"""How long past a call's own end (which the worker enforces, on the same monotonic clock) this
process waits for its reply; a worker that misses it is stopped (it is hung or starved)."""

_HEADER = struct.Struct(">4sI")
_MAGIC = b"FFJW"
MAX_FRAME_BYTES = 64 << 20
"""A frame larger than this is a broken stream (a judge reply is at most 1 MB: `judges.reply_limit`)."""


class BrokenFrames(Exception):
    """The pipe carried something that is not a frame of `write_frame`'s."""


def write_frame(stream: IO[bytes], message: object) -> None:
    """Send `message` (pickled, after a magic number and its length) on `stream`, a pipe between
    this process and a child of its own: both ends run this code, and nothing else writes on it."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(_MAGIC, len(data)) + data)
    stream.flush()


def read_frames(fd: int) -> Iterator[list[Any]]:
    """The messages `write_frame` sent on the pipe `fd`, as lists of those that arrived together,
    until its end; `BrokenFrames` for bytes that are not a frame. One read takes all that is
    there: the thread reading waits for the GIL after each read (up to the interpreter's switch
    interval while a busy loop holds it), so reading one message at a time would cap the
    messages at a few hundred a second."""
    buffer = bytearray()
    while chunk := os.read(fd, 1 << 20):
        buffer += chunk
        messages, start = [], 0
        while len(buffer) - start >= _HEADER.size:
            magic, size = _HEADER.unpack_from(buffer, start)
            if magic != _MAGIC or size > MAX_FRAME_BYTES:
                raise BrokenFrames("not a judge worker frame")
            end = start + _HEADER.size + size
            if end > len(buffer):
                break
            messages.append(pickle.loads(buffer[start + _HEADER.size : end]))
            start = end
        del buffer[:start]
        if messages:
            yield messages


@dataclass(frozen=True)
class Structured:
    """How a worker binds the model for structured output: the verdict's schema (its kind names
    it, so the worker binds it once) and `config.structured_output_method`."""

    kind: str
    schema: dict[str, Any]
    method: str | None


@dataclass(frozen=True)
class WorkerReply:
    """What came back from one provider call in a worker: whether the provider replied, the usage
    it reported, and the raw reply or the failure. `unbuildable`: the worker could not build the
    model (its class does not import there, say): the call was not made, make it here."""

    replied: bool
    usage: TokenUsage | None
    raw: Any = None
    error: RemoteProviderError | None = None
    unbuildable: bool = False


class Worker:
    """One worker process and the calls this process has in flight on it.

    Messages go to it on its stdin and come back on a pipe of their own (its stdout and stderr
    go nowhere: a library's output must not mix with the messages, and a provider library's
    warning could quote a request, and with it a key). A reader thread hands replies to their
    calls' loops. It is started with `-P` (no working directory on its path: the process holds
    keys) and in a session of its own (a Ctrl-C to the CLI or the local API is theirs to handle;
    a worker ends when its stdin does)."""

    def __init__(self) -> None:
        replies_read, replies_write = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-P", "-m", "fair_forge_core.judges.judge_worker", str(replies_write)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                pass_fds=(replies_write,),
                start_new_session=True,
            )
        finally:
            os.close(replies_write)
        self._replies = replies_read
        self.ready = False
        self.alive = True
        self.in_flight = 0
        self.calls = 0
        """Calls sent to this worker, for telemetry and tests."""
        self._ids = itertools.count()
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[WorkerReply]]] = {}
        self._forgotten: deque[int] = deque()
        self._lock = threading.Lock()
        threading.Thread(target=self._read_replies, name="judge-worker-replies", daemon=True).start()

    async def call(
        self, recipe: ModelRecipe, structured: Structured | None, messages: list[Any], timeout: float
    ) -> WorkerReply:
        """The provider call of `messages` on this worker's model of `recipe`, within `timeout`
        seconds (the worker's own limit; this process waits `GRACE_S` longer, then stops it)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[WorkerReply] = loop.create_future()
        call_id = next(self._ids)
        ends_at = time.monotonic() + timeout  # CLOCK_MONOTONIC: one clock for every process of the machine
        with self._lock:
            if not self.alive:
                raise ConnectionError("the judge worker process ended")
            self._pending[call_id] = (loop, future)
            self.in_flight += 1
            self.calls += 1
        try:
            self._send(("call", call_id, recipe, structured, messages, ends_at))
            try:
                async with asyncio.timeout_at(loop.time() + timeout + GRACE_S):
                    return await future
            except TimeoutError:
                self.stop()  # past its own limit and the grace: hung or starved
                raise
        finally:
            with self._lock:
                if self._pending.pop(call_id, None) is not None:
                    self.in_flight -= 1
            if not future.done():  # cancelled, or timed out: the worker may still be calling
                self._send_quietly(("cancel", call_id))

    def forget(self, token: int) -> None:
        """Tell the worker the model of recipe `token` is gone (it drops it, and its keys), with
        the next message: this runs from a finalizer, which may interrupt a message being sent."""
        self._forgotten.append(token)

    @property
    def pid(self) -> int:
        return self._process.pid

    def _send(self, message: object) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            with self._lock:
                if self._forgotten:
                    tokens = [self._forgotten.popleft() for _ in range(len(self._forgotten))]
                    write_frame(stdin, ("forget", tokens))
                write_frame(stdin, message)
        except (OSError, ValueError):  # the pipe broke (the worker ended), or it was closed
            self.stop()
            raise ConnectionError("the judge worker process ended") from None

    def _send_quietly(self, message: object) -> None:
        with contextlib.suppress(ConnectionError):
            self._send(message)

    def _read_replies(self) -> None:
        """The reader thread: hand each reply to its call's loop; when the pipe ends or carries
        anything but frames, stop the worker and fail the calls left."""
        try:
            for messages in read_frames(self._replies):
                by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[WorkerReply], WorkerReply]]] = {}
                for message in messages:
                    if message[0] == "ready":
                        self.ready = True
                        continue
                    _, call_id, reply = message
                    with self._lock:
                        entry = self._pending.get(call_id)
                    if entry is not None:
                        by_loop.setdefault(entry[0], []).append((entry[1], reply))
                for loop, replies in by_loop.items():
                    _on_loop(loop, _resolve, replies)
        except Exception:
            pass
        finally:
            os.close(self._replies)
            self.stop()

    def stop(self) -> None:
        """End the worker: no new call, the calls in flight fail as connection errors (which the
        judge retries), the process is killed and reaped."""
        with self._lock:
            was_alive, self.alive = self.alive, False
            pending = list(self._pending.values())
        for loop, future in pending:
            _on_loop(loop, _fail, [(future, ConnectionError("the judge worker process ended"))])
        if was_alive:
            threading.Thread(target=self._reap, name="judge-worker-reap", daemon=True).start()

    def _reap(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self._process.stdin is not None
            self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _on_loop(loop: asyncio.AbstractEventLoop, callback: Any, items: list[Any]) -> None:
    """Run `callback(items)` on `loop`, unless the loop is closed (its calls are gone with it)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback, items)


def _resolve(replies: list[tuple[asyncio.Future[WorkerReply], WorkerReply]]) -> None:
    for future, reply in replies:
        if not future.done():
            future.set_result(reply)


def _fail(failures: list[tuple[asyncio.Future[WorkerReply], BaseException]]) -> None:
    for future, error in failures:
        if not future.done():
            future.set_exception(error)


class JudgeProcesses:
    """This process's judge workers: `count` of them, started on first need (module docstring).
    A worker that ended is replaced the next time they are needed, `RESTARTS` times at most
    per worker (a worker that cannot start is not started forever)."""

    RESTARTS = 3

    def __init__(self, count: int) -> None:
        self.count = count
        self.workers: list[Worker] = []
        self._starts_left = count * (1 + self.RESTARTS)
        self._lock = threading.Lock()

    def pick(self, local_in_flight: int) -> Worker | None:
        """The ready worker with the fewest calls in flight if it has no more than `local_in_flight`
        (this loop's), else None (call here). Starts the workers when this loop has `START_AT`."""
        best, fewest, alive = None, local_in_flight, 0
        for worker in self.workers:
            if worker.alive:
                alive += 1
                if worker.ready and worker.in_flight <= fewest:
                    best, fewest = worker, worker.in_flight
        if alive < self.count and local_in_flight >= START_AT:
            self.start()
        return best

    def start(self) -> None:
        """Start the workers that are not running (module docstring), within the restarts left."""
        with self._lock:
            self.workers = [worker for worker in self.workers if worker.alive]
            while len(self.workers) < self.count and self._starts_left > 0:
                self._starts_left -= 1
                self.workers.append(Worker())

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait (blocking, polling) until every running worker is ready; whether they were in time."""
        deadline = time.monotonic() + timeout_s
        while not all(worker.ready or not worker.alive for worker in self.workers):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def forget(self, token: int) -> None:
        """Every worker drops the model of recipe `token` (its judge's model is gone)."""
        for worker in self.workers:
            if worker.alive:
                worker.forget(token)

    def close(self) -> None:
        """Stop every worker (the next need starts new ones)."""
        with self._lock:
            workers, self.workers = self.workers, []
        for worker in workers:
            worker.stop()


@dataclass(frozen=True)
class JudgeWorkers:
    """The workers a judge of the model built from `recipe` sends its calls to."""

    processes: JudgeProcesses
    recipe: ModelRecipe

    def pick(self, local_in_flight: int) -> Worker | None:
        return self.processes.pick(local_in_flight)


_processes: JudgeProcesses | None = None
_processes_lock = threading.Lock()


_forgotten_when_gone: set[int] = set()


def workers_for(model: Any) -> JudgeWorkers | None:
    """The workers for a judge of `model`: None when it has no recipe or no worker is configured.
    When `model` is garbage, the workers are told to drop their model of it."""
    recipe = recipe_of(model)
    processes = this_process_workers() if recipe is not None else None
    if processes is None or recipe is None:
        return None
    with _processes_lock:
        if recipe.token not in _forgotten_when_gone:
            _forgotten_when_gone.add(recipe.token)
            weakref.finalize(model, _forget, recipe.token)
    return JudgeWorkers(processes, recipe)


def _forget(token: int) -> None:
    _forgotten_when_gone.discard(token)
    if _processes is not None:
        _processes.forget(token)


def this_process_workers() -> JudgeProcesses | None:
    """This process's `JudgeProcesses` (not started until needed, or `start()`); None when
    `worker_count()` is 0."""
    count = worker_count()
    if count == 0:
        return None
    global _processes
    with _processes_lock:
        if _processes is None or _processes.count != count:
            if _processes is not None:
                _processes.close()
            _processes = JudgeProcesses(count)
        return _processes


def stop_this_process_workers() -> None:
    """Stop this process's workers, if any; the next need starts a new set (restarts anew)."""
    global _processes
    with _processes_lock:
        stopped, _processes = _processes, None
    if stopped is not None:
        stopped.close()


def worker_count() -> int:
    """How many workers this process may have (module docstring); `ValueError` for a bad variable."""
    configured = os.environ.get(PROCESSES_VARIABLE, "").strip()
    if configured:
        count = int(configured)
        if count < 0:
            raise ValueError(f"{PROCESSES_VARIABLE} must be 0 or more, got {count}")
        return count
    cpus = available_cpus()
    memory = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "")
    if memory.isdigit():
        cpus = min(cpus, int(memory) // LAMBDA_MB_PER_VCPU)
    return max(0, cpus - 1)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
