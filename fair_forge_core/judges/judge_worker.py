"""A judge worker process (`judges.processes`): provider calls on an event loop of its own.

`python -m fair_forge_core.judges.judge_worker`, started by `judges.processes.Worker` with
pipes on its stdin and stdout. It says `("ready",)` once LangChain is imported, then reads
messages (`processes.write_frame`) until its stdin ends:

- `("model", key, recipe)`: build the chat model of `recipe` (`connectors.build.instantiate`);
- `("call", call_id, key, structured, messages, timeout)`: call that model (bound for structured
  output as `judges.llm.asked_runnable` binds it) with `messages`, within `timeout` seconds, and
  answer `("reply", call_id, WorkerReply)`: the raw reply and its usage, or the failure as
  `RemoteProviderError.of` reads it;
- `("cancel", call_id)`: cancel that call (no reply).

Anything a library prints goes to stderr, which the parent discards: stdout carries messages only.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import sys
import threading
from collections import OrderedDict
from typing import IO, Any

MODELS_KEPT = 16
"""Models kept by recipe (each request builds its own; its connections are the process's)."""


class Answerer:
    """The worker's models and the calls running on its loop."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._models: OrderedDict[int, Any] = OrderedDict()
        self._runnables: dict[tuple[int, str], Any] = {}
        self._calls: dict[int, asyncio.Task[None]] = {}
        self.stopped = asyncio.get_running_loop().create_future()

    def on_messages(self, messages: list[tuple[Any, ...]] | None) -> None:
        """Messages from the parent, in order (None: its end)."""
        if messages is None:
            if not self.stopped.done():
                self.stopped.set_result(None)
            return
        for message in messages:
            self._on_message(message)

    def _on_message(self, message: tuple[Any, ...]) -> None:
        if message[0] == "model":
            self._remember(message[1], message[2])
        elif message[0] == "call":
            call_id = message[1]
            self._calls[call_id] = asyncio.get_running_loop().create_task(self._answer(*message[1:]))
        elif message[0] == "cancel" and (task := self._calls.get(message[1])) is not None:
            task.cancel()

    def _remember(self, key: int, recipe: Any) -> None:
        from fair_forge_core.connectors.build import instantiate

        try:
            self._models[key] = instantiate(recipe)
        except Exception as exc:  # every call of it then fails with this, as a build error would
            self._models[key] = exc
        while len(self._models) > MODELS_KEPT:
            old, _ = self._models.popitem(last=False)
            self._runnables = {k: v for k, v in self._runnables.items() if k[0] != old}

    def _runnable(self, key: int, structured: Any) -> Any:
        model = self._models[key]
        if isinstance(model, Exception):
            raise model
        if structured is None:
            return model
        if (key, structured.kind) not in self._runnables:
            from fair_forge_core.judges.llm import asked_runnable

            self._runnables[key, structured.kind] = asked_runnable(model, structured.schema, structured.method)
        return self._runnables[key, structured.kind]

    async def _answer(self, call_id: int, key: int, structured: Any, messages: list[Any], timeout: float) -> None:
        from fair_forge_core.judges.errors import RemoteProviderError
        from fair_forge_core.judges.processes import WorkerReply, write_frame
        from fair_forge_core.judges.tokens import UsageCapture

        capture = UsageCapture(None)
        try:
            runnable = self._runnable(key, structured)
            raw = await asyncio.wait_for(runnable.ainvoke(messages, config={"callbacks": [capture]}), timeout)
            reply = WorkerReply(capture.replied, capture.usage, raw=raw)
        except asyncio.CancelledError:
            self._calls.pop(call_id, None)
            return
        except Exception as exc:
            reply = WorkerReply(capture.replied, capture.usage, error=RemoteProviderError.of(exc))
        self._calls.pop(call_id, None)
        try:
            write_frame(self._out, ("reply", call_id, reply))
        except Exception as exc:  # a reply that does not pickle: that call fails, the worker goes on
            failed = WorkerReply(capture.replied, capture.usage, error=RemoteProviderError.of(exc))
            write_frame(self._out, ("reply", call_id, failed))


def _read_messages(stdin: IO[bytes], loop: asyncio.AbstractEventLoop, answerer: Answerer) -> None:
    from fair_forge_core.judges.processes import read_frames

    try:
        for messages in read_frames(stdin.fileno()):
            loop.call_soon_threadsafe(answerer.on_messages, messages)
    finally:
        loop.call_soon_threadsafe(answerer.on_messages, None)


async def serve(stdin: IO[bytes], out: IO[bytes]) -> None:
    """Answer the parent's messages (module docstring) until its end."""
    # Imported before "ready", so that no call waits on them (most judges are OpenAI's).
    import langchain_core.language_models.chat_models  # noqa: F401

    with contextlib.suppress(ImportError):  # an optional provider package (the `openai` extra)
        importlib.import_module("langchain_openai")

    from fair_forge_core.judges.processes import write_frame

    answerer = Answerer(out)
    threading.Thread(target=_read_messages, args=(stdin, asyncio.get_running_loop(), answerer), daemon=True).start()
    write_frame(out, ("ready",))
    await answerer.stopped


def main() -> None:
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # what libraries print must not mix with the messages
    asyncio.run(serve(sys.stdin.buffer, out))


if __name__ == "__main__":
    main()
