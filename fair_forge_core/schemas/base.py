"""The base of every result model: unknown fields refused, so a result read back (a shard, a
baseline file) is exactly what this version writes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")
