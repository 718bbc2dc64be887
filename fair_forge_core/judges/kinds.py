"""The registry of judges with its built-in kinds registered: the LLM judge (`judges.llm`, the
default) and the offline rules judge (`judges.offline`, for `ReferenceJudge`). Import the
registry's functions from here (`judges.base` defines them, and imports no judge)."""

from fair_forge_core.judges import llm as _llm  # noqa: F401  (registers "llm")
from fair_forge_core.judges import offline as _offline  # noqa: F401  (registers "reference")
from fair_forge_core.judges.base import is_offline, judge_for, register_judge, registration_for

__all__ = ["is_offline", "judge_for", "register_judge", "registration_for"]
