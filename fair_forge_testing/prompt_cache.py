"""A provider prompt cache simulated from the request bodies the fake OpenAI server receives.

`PrefixCache.usage` is a `FakeLLMServer(usage=...)` function: it reports the cached tokens
the way OpenAI describes its automatic prompt caching - a prompt prefix is served from the
cache when it is at least `MIN_CACHED` tokens long and identical to the prefix of an earlier
request, counted in increments of `INCREMENT` tokens - in `usage.prompt_tokens_details.cached_tokens`
(`openai_usage`), which LangChain reads as `input_token_details.cache_read`.

Tokens are **approximated as 4 bytes each** (`BYTES_PER_TOKEN`): the prompt is the UTF-8 bytes
of the request's `messages` serialised as JSON in the order they were sent (with its
`response_format` and `tools`, when present, first: OpenAI counts the schema as part of the
prefix), and token *i* is bytes 4i to 4i + 3. No tokenizer is used: tiktoken is installed,
but its encodings are downloaded on first use and this runs offline. Nothing expires (OpenAI
evicts a prefix after minutes of inactivity) and every request reaches the same cache (OpenAI
routes by a hash of the first tokens, so a prefix is not guaranteed a hit).
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from fair_forge_testing.fake_llm_server import openai_usage

MIN_CACHED = 1024
INCREMENT = 128
BYTES_PER_TOKEN = 4
COMPLETION_TOKENS = 20
"""The completion tokens reported for every reply (a verdict of a score and a sentence)."""


def prompt_bytes(request: dict[str, Any]) -> bytes:
    """What the simulated provider tokenises: the schema (`response_format`, `tools`) when sent,
    then the messages, as compact JSON in the order received."""
    parts = [request[key] for key in ("response_format", "tools") if key in request]
    parts.append(request.get("messages") or [])
    return b"".join(json.dumps(part, ensure_ascii=False, separators=(",", ":")).encode() for part in parts)


def prompt_tokens(data: bytes) -> int:
    """`data`'s tokens at `BYTES_PER_TOKEN` bytes a token (a started token counts)."""
    return -(-len(data) // BYTES_PER_TOKEN)


class PrefixCache:
    """The prefixes seen so far, at every `INCREMENT`-token boundary from `MIN_CACHED` on.

    `enabled` false reports no cached tokens (a provider without caching) with the same
    prompt counts. Thread-safe: the fake server answers requests on several threads.
    """

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()

    def cached_tokens(self, data: bytes) -> int:
        """The tokens of `data`'s longest prefix already seen (0 below `MIN_CACHED`), then
        remembers every prefix of `data` at the boundaries."""
        total = len(data) // BYTES_PER_TOKEN  # whole tokens only: a prefix ends on a boundary
        boundaries = range(MIN_CACHED, total + 1, INCREMENT)
        digests = [hashlib.sha256(data[: n * BYTES_PER_TOKEN]).digest() for n in boundaries]
        with self._lock:
            hit = max((n for n, digest in zip(boundaries, digests, strict=True) if digest in self._seen), default=0)
            self._seen.update(digests)
        return hit if self.enabled else 0

    def usage(self, request: dict[str, Any]) -> dict[str, Any]:
        """The `usage` object of the completion answering `request` (`FakeLLMServer(usage=...)`)."""
        data = prompt_bytes(request)
        return openai_usage(prompt_tokens(data), COMPLETION_TOKENS, cached_tokens=self.cached_tokens(data))
