"""Judges of agent answers. `ReferenceJudge` (the offline judge) is imported on first use only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fair_forge_core.judges.reference import ReferenceJudge

__all__ = ["ReferenceJudge"]


def __getattr__(name: str) -> Any:
    if name == "ReferenceJudge":
        from fair_forge_core.judges.reference import ReferenceJudge

        return ReferenceJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
