"""A fake of Groq's Batch API (files and batches) and of its chat completions, for tests.

`FakeGroqBatchServer` is a `FakeBatchServer` (the same batches, statuses, files, knobs and
inspection) on Groq's routes, as `AsyncGroq(base_url=server.groq_base_url)` (the client of
`ChatGroq`) calls them; `specs/groq_batch.json` says where each rule comes from:

* `POST /openai/v1/files`, `GET /openai/v1/files/{id}`, `GET /openai/v1/files/{id}/content`,
  `DELETE /openai/v1/files/{id}`, `POST /openai/v1/batches`, `GET /openai/v1/batches`,
  `GET /openai/v1/batches/{id}`, `POST /openai/v1/batches/{id}/cancel`, each with
  `Authorization: Bearer <key>` (any key, or `api_key` when set; else a 401);
* `POST /openai/v1/chat/completions`, the online call, answered by `FakeLLMServer`.

The lines are OpenAI's (`url` "/v1/chat/completions", the batch's `endpoint` the same). What
differs from `FakeBatchServer`: an input file is at most 100 MB (`GROQ_MAX_FILE_BYTES`); a
`completion_window` may be any whole number of hours or days from "24h" to "7d" (`expires_at`
that far on); and `GET /openai/v1/batches` answers every batch at once, `{"object": "list",
"data": [...]}`, with no cursor (`limit` and `after` are not read), newest first (the reference
gives no order; the reader sorts by `created_at`). OpenAI's routes (`/v1/files`, ...) are
not served.
"""

from __future__ import annotations

import re
from typing import Any

from fair_forge_testing.fake_batch_api import FakeBatchServer
from fair_forge_testing.fake_batch_input import ApiError

__all__ = ["GROQ_COMPLETION_WINDOW_S", "GROQ_MAX_FILE_BYTES", "FakeGroqBatchServer"]

GROQ_MAX_FILE_BYTES = 100 * 1024 * 1024
GROQ_COMPLETION_WINDOW_S = (24 * 3600, 7 * 24 * 3600)
"""The shortest and the longest `completion_window` Groq takes ("24h" to "7d"), in seconds."""
_WINDOW = re.compile(r"(?P<count>[1-9][0-9]*)(?P<unit>[hd])")


class FakeGroqBatchServer(FakeBatchServer):
    """`FakeBatchServer` on Groq's routes (the module docstring); keyword arguments go to
    `FakeBatchServer` and `FakeLLMServer`."""

    api_prefix = "/openai/v1"
    max_file_bytes = GROQ_MAX_FILE_BYTES

    def __enter__(self) -> FakeGroqBatchServer:
        return self

    def _window_seconds(self, window: object) -> int:
        """The seconds of a window from "24h" to "7d" (hours or days), else a 400."""
        match = _WINDOW.fullmatch(window) if isinstance(window, str) else None
        seconds = int(match["count"]) * (3600 if match["unit"] == "h" else 86400) if match else 0
        shortest, longest = GROQ_COMPLETION_WINDOW_S
        if not shortest <= seconds <= longest:
            message = f"`completion_window` must be a duration from '24h' to '7d', got {window!r}."
            raise ApiError(400, message, param="completion_window")
        return seconds

    def _list_batches(self, path_id: str, raw: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """Every batch in one answer, newest first (Groq's reference gives no order: the reader must
        sort), with no cursor."""
        return 200, {"object": "list", "data": [record.as_object() for record in reversed(self._batches.values())]}
