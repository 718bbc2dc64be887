"""The agent contract, `fair-forge-agent/1` (docs/agent-contract.md): what the runner sends an agent
for each turn (`AgentTurnRequest`) and what it reads back (`AgentReply`). Pure: no I/O.

A reply is either the turn's outcome in the request's own field shapes (`answer`, `tools_used` as
`AgenticTrace.tools_used`, `final_state`, `usage` as `AgentUsage`) or the agent's own trace of the
turn (`trace` and its `format`, any format `fair-forge convert` reads), which `read_reply` turns
into the same outcome. A reply outside the contract (not JSON, a wrong shape, over
`MAX_REPLY_BYTES`) is `AgentCallFailed` with cause `agent_malformed`: the attempt fails, the run
goes on.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from fair_forge_core.schemas import AgentErrorCause, AgentUsage, ToolCall
from fair_forge_core.schemas.agent_error import MAX_AGENT_ERROR_DETAIL
from fair_forge_core.schemas.base import RequestModel
from fair_forge_core.trace_formats import TraceFormat

CONTRACT: Literal["fair-forge-agent/1"] = "fair-forge-agent/1"
"""The contract's name and version, sent in every request: a later, incompatible contract is
`fair-forge-agent/2`, so an agent can refuse one it does not speak."""

MAX_REPLY_BYTES = 1_000_000
"""The largest reply read (1 MB of JSON): a longer one is `agent_malformed` ("over the size cap"),
so a runaway agent cannot fill the recording or the runner's memory."""


class AgentCallFailed(Exception):
    """An agent call that failed, as a value: its typed `cause` and a `detail` for a person (set
    where the failure is caught, never parsed back from a message; never a credential)."""

    def __init__(self, cause: AgentErrorCause, detail: str) -> None:
        super().__init__(f"{cause}: {detail}")
        self.cause: AgentErrorCause = cause
        self.detail = detail[:MAX_AGENT_ERROR_DETAIL] or cause


class AgentMessage(RequestModel):
    """One message of the conversation so far: a user's query or the agent's earlier answer."""

    role: Literal["user", "assistant"]
    content: str


class AgentTurnRequest(RequestModel):
    """What the runner sends for one turn: the task, the attempt (0-based) and its fresh
    `session_id` (the agent may keep its own state by it), the turn (0-based), every message so far
    ending with this turn's query, and the task's `initial_state` and `context` (null / "" when
    it gives none)."""

    contract: Literal["fair-forge-agent/1"] = CONTRACT
    task_id: str
    attempt: int = Field(ge=0)
    session_id: str
    turn: int = Field(ge=0)
    messages: list[AgentMessage] = Field(min_length=1)
    initial_state: Any = None
    context: str = ""


class AgentReply(RequestModel):
    """What an agent replies for one turn: `answer` (with `tools_used`, `final_state`, `usage`:
    the request's shapes), or `trace` with its `format` — one of the two, never both."""

    answer: str | None = None
    tools_used: list[ToolCall] = Field(default_factory=list)
    final_state: Any = None
    usage: AgentUsage | None = None
    trace: Any = None
    format: TraceFormat | None = None

    @model_validator(mode="after")
    def _an_answer_or_a_trace(self) -> AgentReply:
        if self.trace is None and self.format is None:
            if self.answer is None:
                raise ValueError("a reply holds an answer, or a trace with its format")
            return self
        if self.trace is None or self.format is None:
            raise ValueError("a trace comes with its format, and a format with its trace")
        if self.answer is not None or self.tools_used or self.final_state is not None or self.usage is not None:
            raise ValueError("a reply holds an answer or a trace, not both")
        return self


def malformed(detail: str) -> AgentCallFailed:
    return AgentCallFailed("agent_malformed", detail)


def parse_reply(body: bytes, *, max_bytes: int = MAX_REPLY_BYTES) -> AgentReply:
    """The reply in `body` (JSON text), read by the contract (`read_reply`); `agent_malformed`
    when it is over `max_bytes`, not JSON, or not a reply."""
    if len(body) > max_bytes:
        raise malformed(f"the reply is over the size cap ({len(body):,} bytes > {max_bytes:,})")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise malformed("the reply is not JSON") from None
    return read_reply(data)


def read_reply(data: Any) -> AgentReply:
    """A parsed reply (a dict, or an `AgentReply` as a `python` agent may return) checked by the
    contract; a trace reply becomes its answer (`from_trace`). `agent_malformed` naming the
    first field that is wrong (its location and pydantic's message, never the value: it could
    be anything the agent wrote)."""
    if isinstance(data, AgentReply):
        data = data.model_dump(exclude_unset=True)
    if not isinstance(data, dict):
        raise malformed(f"the reply is a JSON {type(data).__name__}, not an object")
    try:
        reply = AgentReply.model_validate(data)
    except ValidationError as error:
        first = error.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "the reply"
        raise malformed(f"the reply is outside the contract: {where}: {first['msg']}") from None
    return reply if reply.format is None else from_trace(reply.format, reply.trace)


def from_trace(trace_format: str, trace: Any) -> AgentReply:
    """The turn's outcome from the agent's own trace of it: read by the `trace_format` importer
    (`importers.IMPORTERS`, reading it as a trace file's content), which must give exactly one trace; the answer, tools and usage of its last turn, the `final_state` of its
    metadata. `agent_malformed` when the importer cannot read it."""
    from fair_forge_core.importers import IMPORTERS, TraceError
    from fair_forge_core.importers.trace import FINAL_STATE

    try:
        traces = IMPORTERS[trace_format](trace)
    except TraceError as error:
        raise malformed(f"the reply's {trace_format} trace cannot be read: {error}") from None
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as error:
        raise malformed(f"the reply's {trace_format} trace cannot be read ({type(error).__name__})") from None
    if len(traces) != 1 or not traces[0].turns:
        raise malformed(f"the reply's {trace_format} trace holds {len(traces)} traces; one, with a turn, is expected")
    last = traces[0].turns[-1]
    try:
        return AgentReply.model_validate(
            {
                "answer": last.answer,
                "tools_used": last.tools_used,
                "final_state": traces[0].metadata.get(FINAL_STATE),
                "usage": last.agent_usage,
            }
        )
    except ValidationError:
        raise malformed(f"the reply's {trace_format} trace gives no answer in the contract's shape") from None
