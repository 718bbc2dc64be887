"""The trace formats `fair_forge_core.importers` reads, named once (pydantic-free, so that
`fair-forge --help` can list them without importing the request models)."""

from typing import Literal, get_args

TraceFormat = Literal["openai", "langchain", "otel", "openai-agents", "langsmith"]
"""`TraceSource.format` in a request, `fair-forge convert --from` on the command line."""

TRACE_FORMATS: tuple[str, ...] = get_args(TraceFormat)
