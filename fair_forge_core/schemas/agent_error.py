"""A recorded attempt whose agent failed (`Dataset.agent_error`): the runner's failure causes
(`fair_forge_core.agents`; docs/agent-contract.md "Failures and their causes")."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fair_forge_core.schemas.base import RequestModel

AgentErrorCause = Literal["agent_error", "agent_malformed", "agent_timeout"]
"""Why an attempt's agent call failed: `agent_timeout`, no reply within the call's timeout;
`agent_malformed`, a reply outside the contract (not JSON, a wrong shape, over the size cap);
`agent_error`, any other failure (the agent unreachable after the retries, an HTTP error status,
a command that exits non-zero, a callable that raises)."""

MAX_AGENT_ERROR_DETAIL = 2_000
"""The longest `AgentError.detail`: one or two sentences, never the agent's whole reply."""


class AgentError(RequestModel):
    """An attempt whose agent failed on some turn (docs/agent-contract.md): `cause` typed
    (`AgentErrorCause`), `detail` for a person (never a credential: the runner writes it from the
    failure's kind and status, not from the request's headers). The `agent_run` check fails such a
    conversation with `detail` as its reason; the turns are those the agent answered, then the
    failed turn with an empty answer."""

    cause: AgentErrorCause
    detail: str = Field(min_length=1, max_length=MAX_AGENT_ERROR_DETAIL)
