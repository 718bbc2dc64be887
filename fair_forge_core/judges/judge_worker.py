"""A judge worker process (`judges.processes`): provider calls on an event loop of its own.

`python -P -m fair_forge_core.judges.judge_worker FD`, started by `judges.processes.Worker`: it
reads messages (`processes.write_frame`) on its stdin until it ends, and writes its own on the
pipe `FD` (its stdout and stderr go nowhere). It says `("ready",)` once LangChain is imported,
then:

- `("call", call_id, recipe, structured, messages, ends_at)`: call the chat model of `recipe`
  (built once by `connectors.build.instantiate`, kept by the recipe's token; bound for structured
  output as `judges.llm.asked_runnable` binds it) with `messages`, until the `time.monotonic()`
  instant `ends_at`, and answer `("reply", call_id, WorkerReply)`: the raw reply and its usage,
  or the failure as `RemoteProviderError.of` reads it, or `unbuildable` when the model cannot be
  built here (the call was not made);
- `("cancel", call_id)`: cancel that call (no reply);
- `("forget", tokens)`: drop the models of those recipes (their judges are gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import sys
import threading
import time
from collections import OrderedDict
from typing import IO, Any

MODELS_KEPT = 16
"""Models kept at most (each request builds its own; the connections are the process's)."""


class Answerer:
    """The worker's models and the calls running on its loop."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._models: OrderedDict[int, Any] = OrderedDict()
        self._runnables: dict[tuple[int, str, str | None], Any] = {}
        self._calls: dict[int, asyncio.Task[None]] = {}
        self.stopped = asyncio.get_running_loop().create_future()

    def on_messages(self, messages: list[tuple[Any, ...]] | None) -> None:
        """Messages from the parent, in order (None: its end)."""
        if messages is None:
            if not self.stopped.done():
                self.stopped.set_result(None)
            return
        for message in messages:
            if message[0] == "call":
                call_id = message[1]
                self._calls[call_id] = asyncio.get_running_loop().create_task(self._answer(*message[1:]))
            elif message[0] == "cancel" and (task := self._calls.get(message[1])) is not None:
                task.cancel()
            elif message[0] == "forget":
                for token in message[1]:
                    self._drop(token)

    def _model(self, recipe: Any) -> Any:
        """The model of `recipe`, built on first use (the least recently used dropped past `MODELS_KEPT`)."""
        from fair_forge_core.connectors.build import instantiate

        if recipe.token in self._models:
            self._models.move_to_end(recipe.token)
            return self._models[recipe.token]
        model = instantiate(recipe)
        self._models[recipe.token] = model
        while len(self._models) > MODELS_KEPT:
            self._drop(next(iter(self._models)))
        return model

    def _drop(self, token: int) -> None:
        self._models.pop(token, None)
        self._runnables = {key: value for key, value in self._runnables.items() if key[0] != token}

    def _runnable(self, model: Any, token: int, structured: Any) -> Any:
        if structured is None:
            return model
        key = (token, structured.kind, structured.method)
        if key not in self._runnables:
            from fair_forge_core.judges.llm import asked_runnable

            self._runnables[key] = asked_runnable(model, structured.schema, structured.method)
        return self._runnables[key]

    async def _answer(self, call_id: int, recipe: Any, structured: Any, messages: list[Any], ends_at: float) -> None:
        from fair_forge_core.judges.errors import RemoteProviderError
        from fair_forge_core.judges.processes import WorkerReply, write_frame
        from fair_forge_core.judges.tokens import UsageCapture

        capture = UsageCapture(None)
        try:
            try:
                runnable = self._runnable(self._model(recipe), recipe.token, structured)
            except Exception as exc:
                reply = WorkerReply(False, None, error=RemoteProviderError.of(exc), unbuildable=True)
            else:
                call = runnable.ainvoke(messages, config={"callbacks": [capture]})
                raw = await asyncio.wait_for(call, max(0.0, ends_at - time.monotonic()))
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
    with os.fdopen(int(sys.argv[1]), "wb") as out:
        asyncio.run(serve(sys.stdin.buffer, out))


if __name__ == "__main__":
    main()
