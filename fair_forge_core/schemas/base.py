"""The bases of the models: a request model refuses unknown fields, coerces nothing and takes no
NaN or infinity (`_Request`); a result model refuses unknown fields, so a result read back (a
shard, a baseline file) is exactly what this version writes (`_Result`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")
