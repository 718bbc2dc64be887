"""The judge cache: a content-addressed store of verdicts, explicit and opt-in.

A verdict is stored under a key that is the sha256 (64 lowercase hex digits) of
everything that decides it (`usage.JudgeLedger.cache_key`): the connector's class path,
the model name, the sampling parameters (`usage.SAMPLING_FIELDS` only: never an API key or
a header), the endpoint, deployment and API version when set, the output mode, the prompt
hash (rubric version and template), the exact messages sent, and the caller's scope
(`cache_scope`). So an identical judge request of the same caller is answered from the
store with no call, and a change of any of these is a miss. A request whose connector has
a parameter that could change what the provider receives unseen by the key (`extra_body`,
headers, proxies: `connectors.rules.cache_unsafe_params`) does not use the cache at all.

Only scored verdicts are stored (a turn left unscored, by an error, the deadline or the
cost cap, never is). An entry is `{"format": 1, "score": <0..1>, "reasoning": "..."}` in
UTF-8 JSON: no key material, so no secret can reach a store. An entry that does not read
back as a verdict (truncated, edited, another format) is a miss, logged, never an error.

`JudgeCache` is what a store provides; `DirectoryCache` is the local one. The service's
S3 store is `handler.judge_cache.S3JudgeCache` (the core imports no AWS library).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import ValidationError

from fair_forge_core.connectors.rules import KEY_PARAMS, cache_unsafe_params
from fair_forge_core.judges.verdict import Verdict
from fair_forge_core.schemas import ConnectorSpec

logger = logging.getLogger(__name__)

ENTRY_FORMAT = 1
KEY_PATTERN = re.compile(r"[0-9a-f]{64}")


def cache_scope(*, api_key_id: str | None = None, caller_keys: list[str] | None = None) -> str:
    """Whose entries a request reads and writes: each caller has a scope of its own, so no caller
    reads an entry another wrote, nor learns from a hit that one exists.

    - `api_key_id` (API Gateway's id of the API key that made the request): `api-key:<id>`,
      whichever provider key pays;
    - else the provider key(s) the caller brought: `caller-key:<sha256>` of them (never the key
      itself; the scope is hashed into every cache key and stored nowhere);
    - else `operator`: the server's own key, without an API key to tell callers apart (the
      local API and the CLI, one user's machine).
    """
    if api_key_id:
        return f"api-key:{api_key_id}"
    if caller_keys:
        digest = hashlib.sha256("\x00".join(["fair-forge judge cache scope", *sorted(caller_keys)]).encode())
        return f"caller-key:{digest.hexdigest()}"
    return "operator"


def cache_use(connectors: Sequence[ConnectorSpec], *, api_key_id: str | None = None) -> tuple[str | None, str | None]:
    """Whether a request judged by `connectors` may use the judge cache: `(scope, None)` with its
    `cache_scope` (its caller keys read from the connectors' parameters), or `(None, warning)`
    when a connector has a parameter that could change what the judge receives unseen by the
    cache key (`connectors.rules.cache_unsafe_params`: the first is named, as
    `connector.params.<name>`, or `connector[i]…` in an ensemble)."""
    many = len(connectors) > 1
    for i, spec in enumerate(connectors):
        unsafe = cache_unsafe_params(spec.params)
        if unsafe:
            field = f"{f'connector[{i}]' if many else 'connector'}.params.{unsafe[0]}"
            return None, (
                f"config.judge_cache: not used, because {field} can change what the judge receives unseen by the "
                "cache key (only model, sampling, endpoint and key parameters share cached verdicts): every turn was judged"
            )
    keys = [spec.params[name] for spec in connectors for name in KEY_PARAMS if isinstance(spec.params.get(name), str)]
    return cache_scope(api_key_id=api_key_id, caller_keys=keys), None


class CacheError(Exception):
    """A store could not be read or written; the message is safe to log."""


@runtime_checkable
class JudgeCache(Protocol):
    """A store of cache entries by key. `get` returns the bytes stored under `key`, or None
    when there are none; both methods raise `CacheError` (or any exception, which the judge
    treats alike) when the store fails: the judge then counts a miss, or skips the write."""

    def get(self, key: str) -> bytes | None: ...

    def put(self, key: str, entry: bytes) -> None: ...

    def describe(self) -> str:
        """Where the store is, for logs (no secret)."""
        ...


def check_key(key: str) -> str:
    """`key` if it is 64 lowercase hex digits, else `ValueError` (a key never names a path)."""
    if not KEY_PATTERN.fullmatch(key):
        raise ValueError("a judge cache key is 64 lowercase hex digits")
    return key


def encode_entry(verdict: Verdict) -> bytes:
    """The stored form of a scored verdict."""
    entry = {"format": ENTRY_FORMAT, "score": verdict.score, "reasoning": verdict.reasoning}
    return json.dumps(entry, ensure_ascii=False, sort_keys=True).encode("utf-8")


def decode_entry(data: bytes) -> Verdict | None:
    """The verdict of a stored entry, or None when it is not one `encode_entry` writes."""
    try:
        entry = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if (
        not isinstance(entry, dict)
        or entry.get("format") != ENTRY_FORMAT
        or set(entry)
        != {
            "format",
            "score",
            "reasoning",
        }
    ):
        return None
    if not isinstance(entry["reasoning"], str):
        return None
    try:
        return Verdict(score=entry["score"], reasoning=entry["reasoning"])
    except ValidationError:
        return None


class DirectoryCache:
    """Entries as files `<root>/<key[:2]>/<key>.json`.

    A write goes to a temporary file in the same directory, then `os.replace` puts it in
    place: a reader sees the old entry, the new one, or none, never half of one, even with
    several processes writing the same key. The directories are created on the first write.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser()

    def path_of(self, key: str) -> Path:
        check_key(key)
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> bytes | None:
        try:
            return self.path_of(key).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CacheError(f"cannot read the judge cache entry {key[:12]}…: {exc.strerror or exc}") from None

    def put(self, key: str, entry: bytes) -> None:
        path = self.path_of(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=f".{key[:12]}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(entry)
                    file.flush()
                    os.fsync(file.fileno())
                os.replace(temporary, path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise CacheError(f"cannot write the judge cache entry {key[:12]}…: {exc.strerror or exc}") from None

    def describe(self) -> str:
        return f"directory {self.root}"


def open_local_cache(location: str) -> DirectoryCache:
    """The store of a local `FAIR_FORGE_JUDGE_CACHE` or `--judge-cache`: a directory path.
    `ValueError` for an `s3://` location (only the service reads those: `handler.judge_cache`)."""
    if location.startswith("s3://"):
        raise ValueError(f"{location}: an S3 judge cache is read by the service only; give a directory here")
    return DirectoryCache(location)
