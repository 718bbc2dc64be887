"""The judge's progress on stderr, for `evaluate`, `compare` (a request side) and `calibrate`:
a bar redrawn in place on a terminal; otherwise one plain line such as `judging 120/400`
every few seconds, and the last."""

from __future__ import annotations

import time
from typing import TextIO


class ProgressBar:
    """Progress of the judge on a stream, called as `on_progress(done, total)`.

    Interactive (a terminal): a one-line text bar redrawn in place with a carriage return,
    redraws throttled to `min_interval_s` except the last, and `finish()` ends the line.
    Not interactive (a log, a pipe): no carriage return; one plain line `<label> done/total`
    at the first call, then at most one every `plain_interval_s` seconds, and always the
    line of `done == total`.
    """

    def __init__(
        self,
        stream: TextIO,
        label: str = "judging",
        width: int = 28,
        min_interval_s: float = 0.1,
        *,
        interactive: bool = True,
        plain_interval_s: float = 5.0,
    ) -> None:
        from fair_forge_core.safe_text import log_line

        # The label names a file: one log line that runs no workflow command (`safe_text.log_line`).
        self.stream, self.label, self.width, self.min_interval_s = stream, log_line(label), width, min_interval_s
        self.interactive, self.plain_interval_s = interactive, plain_interval_s
        self._last_draw: float | None = None
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        interval = self.min_interval_s if self.interactive else self.plain_interval_s
        if done < total and self._last_draw is not None and now - self._last_draw < interval:
            return
        self._last_draw = now
        if not self.interactive:
            self.stream.write(f"{self.label} {done}/{total}\n")
            self.stream.flush()
            return
        share = done / total if total else 1.0
        filled = round(share * self.width)
        bar = "█" * filled + "░" * (self.width - filled)
        self.stream.write(f"\r{self.label} {bar} {done}/{total} ({share:4.0%})")
        self.stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal (False for a closed stream or one without `isatty`)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def progress_bar(stderr: TextIO, quiet: bool, label: str = "judging") -> ProgressBar | None:
    """The progress bar of a command on `stderr`, interactive when it is a terminal; None under
    `--quiet` (`quiet`), when nothing is shown."""
    return None if quiet else ProgressBar(stderr, label, interactive=is_terminal(stderr))
