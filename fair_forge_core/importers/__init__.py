"""Turning the traces users have into the conversations `/run` evaluates.

Each source format has a module with one pure function from its parsed JSON to
`ImportedTrace`s (the agent's side of a conversation: turns with queries, answers and
the tools used); `references.join` adds the ground truth from a references file and
gives the `datasets` of a request. Nothing here reads files or the network.

Formats so far: OpenAI chat-completions messages (`openai_chat`). Every problem is a
`TraceError` naming the trace and the field (`traces[2].messages[5].tool_calls[0]
.function.arguments: not valid JSON`), never a silent drop.
"""

from fair_forge_core.importers.openai_chat import traces_from_openai
from fair_forge_core.importers.references import JoinReport, join_references
from fair_forge_core.importers.trace import ImportedTrace, ImportedTurn, TraceError

__all__ = ["ImportedTrace", "ImportedTurn", "JoinReport", "TraceError", "join_references", "traces_from_openai"]
