"""What every importer produces: the agent's side of one conversation, format aside."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class TraceError(ValueError):
    """A trace that cannot be read; `field` is where (``traces[0].messages[3].content``)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


@dataclass
class ImportedTurn:
    """One user query and what the agent did about it: its tool calls (each with `step`,
    shared by calls made in parallel) and its final answer."""

    query: str
    answer: str
    tools_used: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ImportedTrace:
    """One conversation of a trace file: its id (what references are matched on, unless the
    caller names another key), the agent that ran it, its turns, and its raw metadata."""

    trace_id: str
    assistant_id: str
    turns: list[ImportedTurn]
    metadata: dict[str, Any] = field(default_factory=dict)
