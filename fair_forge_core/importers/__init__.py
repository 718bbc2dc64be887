"""Turning the traces users have into the conversations `/run` evaluates.

Each source format has a module with one pure function from its parsed JSON to
`ImportedTrace`s (the agent's side of a conversation: turns with queries, answers and
the tools used), built the same way for every format by `trace.TurnBuilder`;
`references.join_references` adds the ground truth from a references file, and
`formats.datasets_from_traces` does both for a format named by the user (the CLI's
`convert`, and `POST /run` with `traces`). Nothing here reads files or the network.
A trace attempt the references cannot be joined to is kept, as a conversation unscored with
its cause (`Dataset.unscored`), never left out.

Every problem is a `TraceError` naming the trace and the field (`traces[2].messages[5]
.tool_calls[0].function`), never a silent drop; every choice made is in the trace's
`warnings`.
"""

from fair_forge_core.importers.formats import IMPORTERS, datasets_from_traces, request_field
from fair_forge_core.importers.langchain_messages import traces_from_langchain
from fair_forge_core.importers.langfuse import traces_from_langfuse
from fair_forge_core.importers.langsmith_runs import traces_from_langsmith
from fair_forge_core.importers.openai_agents import traces_from_openai_agents
from fair_forge_core.importers.openai_chat import traces_from_openai
from fair_forge_core.importers.openinference import traces_from_openinference
from fair_forge_core.importers.otel_genai import traces_from_otel
from fair_forge_core.importers.references import JoinReport, Unjoined, join_references, unjoined_causes
from fair_forge_core.importers.trace import ImportedTrace, ImportedTurn, TraceError

__all__ = [
    "IMPORTERS",
    "ImportedTrace",
    "ImportedTurn",
    "JoinReport",
    "TraceError",
    "Unjoined",
    "datasets_from_traces",
    "join_references",
    "request_field",
    "traces_from_langchain",
    "traces_from_langfuse",
    "traces_from_langsmith",
    "traces_from_openai",
    "traces_from_openai_agents",
    "traces_from_openinference",
    "traces_from_otel",
    "unjoined_causes",
]
