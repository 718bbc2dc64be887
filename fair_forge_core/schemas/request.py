"""The request side: conversations, their turns and tool calls, the evaluation's options (see the package docstring)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from fair_forge_core.rule_shapes import checked_rules
from fair_forge_core.schemas.adaptive import AdaptiveAttempts
from fair_forge_core.schemas.agent_error import AgentError, AgentErrorCause
from fair_forge_core.schemas.base import RequestModel
from fair_forge_core.schemas.config import MAX_CONNECTORS, EvaluationConfig
from fair_forge_core.schemas.json_input import (
    CONNECTOR_LIST,
    EVERY_TOOL_LIMIT,
    ONE_CONNECTOR,
    PER_TOOL_LIMITS,
    omitted_when_none,
)
from fair_forge_core.trace_formats import TraceFormat

MayHoldRules = Annotated[Any, AfterValidator(checked_rules)]
"""An expected value, which may hold argument rules: a mistyped rule is refused, naming the field
(`fair_forge_core.rule_shapes`)."""

# --------------------------------------------------------------------------- request


class ToolCall(RequestModel):
    """One call the agent made.

    `unparsed_arguments` holds arguments a trace had that were not a JSON object (kept
    as text by the importers); `parameters` is then `{}`, so such a call agrees with an
    expected call's parameters only when that call expects none. `is_error` says the
    trace marked the call as failed; `result` then holds the error. Neither changes a
    score: whether the agent chose and called the right tool is the same question.
    """

    tool_name: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    step: int | None = None
    unparsed_arguments: str | None = None
    is_error: bool = False


class ExpectedToolCall(RequestModel):
    """One call the agent should have made.

    A parameter value may be a plain value (the common case) or a rule object, see
    `fair_forge_core.tools` (``{"$any_of": [...]}``, ``{"$approx": x, "tol": t}``,
    ``{"$text": s}``, ``{"$any": true}``, ``{"$literal": v}``); an object with a "$" key that
    is no well-formed rule is refused (`fair_forge_core.rule_shapes`).
    """

    tool_name: str = Field(min_length=1)
    parameters: dict[str, MayHoldRules] = Field(default_factory=dict)
    step: int | None = None


class AgenticTrace(RequestModel):
    """The tools the agent actually used in one turn.

    `final_answer_uses_tools` None means "not reported": the tool rubric then reads
    utilization from whether a tool result appears in the answer.
    """

    tools_used: list[ToolCall] = Field(default_factory=list)
    final_answer_uses_tools: bool | None = None


TrajectoryMatch = Literal["strict", "unordered", "subset", "superset"]
"""How `ToolPolicy.trajectory_match` compares a turn's calls with its expected ones
(agentevals' modes: `fair_forge_core.tools.policy`)."""

ToolName = Annotated[str, Field(min_length=1)]
CallCount = Annotated[int, Field(ge=0)]


def _limit_shape(value: Any) -> str:
    return PER_TOOL_LIMITS if isinstance(value, dict) else EVERY_TOOL_LIMIT


PerToolLimit = Annotated[
    Annotated[CallCount, Tag(EVERY_TOOL_LIMIT)] | Annotated[dict[str, CallCount], Tag(PER_TOOL_LIMITS)],
    Discriminator(_limit_shape),
]
"""`max_calls_per_tool`: one limit for every tool, or limits by tool name (tagged, so that an
error names the field, not the union's arms)."""


class ToolPolicy(RequestModel):
    """Rules on the tools of a turn (`fair_forge_core.tools.policy`; docs/how-to/task-checks.md "Tool policies").

    Given on a conversation (`Dataset.tool_policy`: every turn) and/or on a turn
    (`GroundTruthAgentic.tool_policy`): each field the turn gives replaces the conversation's.
    `forbidden_tools`: never to be called. `allowed_tools`: the only tools that may be called
    (None: any). `max_tool_calls`: the most calls in one turn. `max_calls_per_tool`: the most
    calls of one tool in one turn (an int for every tool, or per tool name). `ignore_parameters`:
    tool name → parameter names left out of every comparison of that tool's calls (the
    trajectory match and the rubric). `trajectory_match`: compare the turn's calls with its
    expected ones in this mode instead of the weighted rubric (None: the rubric decides).
    A tool both forbidden and allowed is refused."""

    forbidden_tools: list[ToolName] = Field(default_factory=list)
    allowed_tools: list[ToolName] | None = None
    max_tool_calls: CallCount | None = None
    max_calls_per_tool: PerToolLimit | None = None
    ignore_parameters: dict[str, list[str]] = Field(default_factory=dict)
    trajectory_match: TrajectoryMatch | None = None

    @model_validator(mode="after")
    def _nothing_both_forbidden_and_allowed(self) -> ToolPolicy:
        both = sorted(set(self.forbidden_tools) & set(self.allowed_tools or ()))
        if both:
            raise ValueError(
                f"forbidden_tools and allowed_tools both name {', '.join(both)}: a tool is either forbidden or allowed"
            )
        return self

    def overridden_by(self, turn: ToolPolicy) -> ToolPolicy:
        """This (a conversation's) policy with every field `turn` gives replacing its own;
        refused like any policy when the result forbids and allows one tool."""
        given = {name: getattr(turn, name) for name in turn.model_fields_set}
        return ToolPolicy.model_validate({**self.model_dump(), **given})


class GroundTruthAgentic(RequestModel):
    """The tools the agent should have used in one turn, and the turn's `tool_policy`.

    A `ground_truth_agentic` that gives a `tool_policy` and no `expected_tools` expects no
    particular calls: the rubric does not score the turn (as without `ground_truth_agentic`);
    only the policy's rules apply (`has_expected_tools`)."""

    expected_tools: list[ExpectedToolCall] | None = Field(default_factory=list)
    """The calls expected (`[]`: none); null: not compared (a `tool_policy` given alone)."""
    tool_sequence_matters: bool = False
    tool_policy: ToolPolicy | None = omitted_when_none()

    @model_validator(mode="before")
    @classmethod
    def _policy_alone_compares_no_calls(cls, value: Any) -> Any:
        # Written into the data, not read from which keys were given, so that a dump read back
        # (`Dataset.model_dump()`, a shard) means the same.
        if isinstance(value, dict) and "tool_policy" in value and "expected_tools" not in value:
            return {**value, "expected_tools": None}
        return value

    @property
    def has_expected_tools(self) -> bool:
        """Whether the turn's calls are compared with expected ones: `expected_tools` is a list
        (even `[]`: no call expected), not null (a `tool_policy` given without it)."""
        return self.expected_tools is not None


def none_without_expected_tools(value: Any) -> Any:
    """`ground_truth_agentic` of `{}` (the original library's default) is None: no expectation
    was written, so there is nothing to score against. Only an explicit `expected_tools`
    (even `[]`) is one; a dict with any other key is left to validation, so a typo
    (`expected_tool`) is a 400."""
    if isinstance(value, dict) and "expected_tools" not in value and set(value) <= {"tool_sequence_matters"}:
        return None
    return value


MAX_USAGE_TOKENS = 10**12
"""The most `input_tokens` or `output_tokens` one turn may report (a trillion)."""
MAX_USAGE_LATENCY_S = 1_000_000.0
"""The most `latency_s` one turn may report (about 11.6 days)."""
MAX_USAGE_COST_USD = 1_000_000.0
"""The most `cost_usd` one turn may report (a million dollars)."""
AGENT_USAGE_MAXIMA: dict[str, int | float] = {
    "input_tokens": MAX_USAGE_TOKENS,
    "output_tokens": MAX_USAGE_TOKENS,
    "latency_s": MAX_USAGE_LATENCY_S,
    "cost_usd": MAX_USAGE_COST_USD,
}
"""Each `AgentUsage` field's bound, by name (the importers leave out a turn's total over it)."""


class AgentUsage(RequestModel):
    """What the agent itself spent on one turn (not the judge): tokens in and out, wall-clock
    seconds, USD. Each is optional and ≥ 0; a measure a turn does not report is unknown, not 0
    (`fair_forge_core.efficiency`). It decides no verdict.

    Each is bounded above (`MAX_USAGE_TOKENS`, `MAX_USAGE_LATENCY_S`, `MAX_USAGE_COST_USD`;
    the bound itself is allowed), far beyond what an honest agent spends on one turn, so that
    every sum the service forms stays finite and exact enough: over the largest job (1,000,000
    turns) at most 10¹⁸ tokens (an exact int, below 2⁶³) and 10¹² seconds or USD (a float sum
    with 2⁻⁵³ relative error). A value over its bound is a 400 naming the field."""

    input_tokens: int | None = Field(None, ge=0, le=MAX_USAGE_TOKENS)
    output_tokens: int | None = Field(None, ge=0, le=MAX_USAGE_TOKENS)
    latency_s: float | None = Field(None, ge=0, le=MAX_USAGE_LATENCY_S)
    cost_usd: float | None = Field(None, ge=0, le=MAX_USAGE_COST_USD)


class TraceSpan(RequestModel):
    """The OpenTelemetry span a turn's answer came from: its trace id (32 hex digits) and span
    id (16 hex digits), as OTLP JSON writes them. The `otel` importer sets it on the turns it
    reads; `fair_forge_core.otel_events` links the turn's evaluation events to it. It decides no
    verdict."""

    trace_id: str = Field(pattern=r"^[0-9a-fA-F]{32}$")
    span_id: str = Field(pattern=r"^[0-9a-fA-F]{16}$")


MAX_CRITERIA = 20
"""The most criteria of one scope (a turn, a conversation, a default of `config.checks.criteria`)."""
MAX_CRITERION_RULE_CHARS = 2_000
"""The longest criterion rule: a rule is a sentence or a short paragraph, sent with every question."""


class Criterion(RequestModel):
    """A named rule the judge decides pass / fail without a reference (docs/checks.md "criteria"):
    `name` (1 to 64 letters, digits, `_` or `-`, unique in its scope: the result is exported as
    `criteria.<name>`), `rule` (the words the judge reads, 1 to `MAX_CRITERION_RULE_CHARS`
    characters), `required` (false: reported, decides nothing)."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    rule: str = Field(min_length=1, max_length=MAX_CRITERION_RULE_CHARS)
    required: bool = True


def unique_names(criteria: list[Criterion] | None) -> list[Criterion] | None:
    """`criteria` when no two share a name, else `ValueError` naming the first repeated one."""
    seen: dict[str, int] = {}
    for index, criterion in enumerate(criteria or ()):
        if criterion.name in seen:
            raise ValueError(
                f"{criterion.name!r} names criteria [{seen[criterion.name]}] and [{index}]: "
                "a criterion's name is unique in its scope"
            )
        seen[criterion.name] = index
    return criteria


Criteria = Annotated[list[Criterion], Field(max_length=MAX_CRITERIA), AfterValidator(unique_names)]
"""The criteria of one scope: at most `MAX_CRITERIA`, names unique."""

ORIGINAL_TURN_FIELDS = ("logprobs", "weight")
"""Per-turn fields of alquimia-fair-forge's `Batch` that this service reads and ignores."""


class Batch(RequestModel):
    """One turn of a conversation.

    `observation` is what the agent saw (a tool output, a retrieved document): the
    judge gets it as data, and the report shows it. `logprobs` and `weight` exist
    only so that the original library's serialised datasets are accepted; they
    play no part in any score.
    """

    qa_id: str
    query: str
    assistant: str
    ground_truth_assistant: str
    observation: str | None = None
    agentic: AgenticTrace | None = None
    ground_truth_agentic: GroundTruthAgentic | None = None
    logprobs: Any = Field(None, exclude=True)
    weight: Any = Field(None, exclude=True)
    agent_usage: AgentUsage | None = omitted_when_none()
    """What the agent spent on this turn, for `config.efficiency` (`fair_forge_core.efficiency`)."""
    trace_span: TraceSpan | None = omitted_when_none()
    """The OpenTelemetry span of the turn's answer (`TraceSpan`), for `fair-forge evaluate --otel-events`."""
    criteria: Criteria | None = omitted_when_none()
    """Rules the judge decides on this turn's query and answer (`checks.criteria`); absent: the
    default turn criteria of `config.checks.criteria`, [] none."""

    @field_validator("ground_truth_agentic", mode="before")
    @classmethod
    def _tools_not_evaluated_without_expected_tools(cls, value: Any) -> Any:
        return none_without_expected_tools(value)

    def tool_call_count(self) -> int:
        """The tool calls of both lists of this turn (what the tool rubric works through)."""
        used = len(self.agentic.tools_used) if self.agentic is not None else 0
        expected = len(self.ground_truth_agentic.expected_tools or ()) if self.ground_truth_agentic is not None else 0
        return used + expected


UnscoredCause = Literal["not_joined", "state_not_reported", "turns_differ", AgentErrorCause]
"""Why a conversation is unscored before any judging (`Unscored`). A trace attempt the
references could not be joined to (`importers.references`): `not_joined`, its task is none of
the references'; `turns_differ`, its turns are not the turns its task's references give (one
more, one missing); `state_not_reported`, its task expects an end state and it reports none.
Or an agent run's failed attempt kept unscored (`agents.runner`, `agent_errors="unscored"`):
its `AgentErrorCause`."""


class Unscored(RequestModel):
    """A conversation that is unscored, and why, decided before it reaches a judge: no judge call
    is made and no check runs for it; it counts in `total` and the unscored share (readiness),
    never in n or c. `cause` is typed (`UnscoredCause`), `detail` says it for a person."""

    cause: UnscoredCause
    detail: str = Field(min_length=1)


class Dataset(RequestModel):
    """One conversation. Conversations sharing a `task_id` are attempts at one task."""

    session_id: str
    assistant_id: str
    language: str = "english"
    context: str = ""
    task_id: str | None = None
    conversation: list[Batch] = Field(min_length=1)
    expected_state: MayHoldRules = omitted_when_none()
    """The end state the conversation should leave behind (any JSON; objects are compared key by
    key, values may be argument rules: `fair_forge_core.state`). Absent or null: not checked."""
    agent_error: AgentError | None = omitted_when_none()
    """Set by the agent runner on an attempt whose agent failed (`AgentError`): the `agent_run`
    check fails it; absent for every other conversation. Declared before `final_state`, which it
    lets be null under an `expected_state` (a failed attempt has no state to report)."""
    final_state: Any = Field(None, validate_default=True)
    """The end state the agent left behind, as the caller observed it; required with `expected_state`
    (absent or null there is a 400 naming this field: a state not observed cannot pass), unless
    the attempt failed (`agent_error`: the end-state check then fails it)."""
    goal: str | None = omitted_when_none(min_length=1)
    """What success means for the user, in words: the judge decides from the whole conversation
    whether the agent achieved it (`judges.goal`). Absent: no goal is judged."""
    goal_rubric: list[Annotated[str, Field(min_length=1)]] | None = omitted_when_none(min_length=1)
    """The criteria of the goal, each of which must be met (needs `goal`)."""
    tool_policy: ToolPolicy | None = omitted_when_none()
    """Rules on the tools of every turn (`ToolPolicy`); a turn's own `tool_policy` fields replace these."""
    criteria: Criteria | None = omitted_when_none()
    """Rules the judge decides on the whole conversation (`checks.criteria`); absent: the default
    conversation criteria of `config.checks.criteria`, [] none."""
    unscored: Unscored | None = omitted_when_none()
    """Set when the conversation is unscored before judging (`Unscored`: e.g. a trace attempt that
    could not be joined to its references); absent for a conversation to judge."""

    @field_validator("language", mode="before")
    @classmethod
    def _null_language_is_english(cls, value: Any) -> Any:
        return "english" if value is None else value

    @field_validator("final_state")
    @classmethod
    def _final_state_with_an_expected_one(cls, final_state: Any, info: ValidationInfo) -> Any:
        # `expected_state` is validated first (declared first); null is no state, as absent is.
        failed = info.data.get("agent_error") is not None
        if final_state is None and info.data.get("expected_state") is not None and not failed:
            raise ValueError("is required (not null) when expected_state is given: report the state the agent left")
        return final_state

    @field_validator("goal_rubric")
    @classmethod
    def _criteria_of_a_goal(cls, rubric: list[str] | None, info: ValidationInfo) -> list[str] | None:
        # `goal` is validated first (declared first): a rubric without it names its own field.
        if rubric is not None and info.data.get("goal") is None:
            raise ValueError("needs a goal: the criteria are of the goal the judge reads")
        return rubric

    @model_validator(mode="after")
    def _turn_policies_agree_with_the_conversation(self) -> Dataset:
        if self.tool_policy is None:
            return self
        for index, batch in enumerate(self.conversation):
            own = batch.ground_truth_agentic.tool_policy if batch.ground_truth_agentic is not None else None
            if own is None:
                continue
            try:
                self.tool_policy.overridden_by(own)
            except ValidationError as error:
                reason = error.errors()[0]["msg"].removeprefix("Value error, ")
                raise ValueError(
                    f"conversation[{index}].ground_truth_agentic.tool_policy with the conversation's tool_policy: {reason}"
                ) from None
        return self

    @property
    def checks_state(self) -> bool:
        """Whether the conversation's end state is checked: it has an `expected_state` (null is
        none: read from the value, so that a dump read back means the same)."""
        return self.expected_state is not None


def input_warnings(datasets: list[Dataset]) -> list[str]:
    """What the result must say about the input itself: today, one warning when any turn
    carries the original library's `logprobs` / `weight` (accepted, ignored)."""
    present = sorted(
        {name for d in datasets for b in d.conversation for name in ORIGINAL_TURN_FIELDS if name in b.model_fields_set}
    )
    if not present:
        return []
    return [
        f"per-turn {' and '.join(present)} (alquimia-fair-forge fields) accepted and ignored: they play no part in any score"
    ]


class ConnectorSpec(RequestModel):
    """Which chat model judges the answers: an allowed class path and its constructor arguments."""

    class_path: str
    params: dict[str, Any] = Field(default_factory=dict)


def _connector_shape(value: Any) -> str:
    return CONNECTOR_LIST if isinstance(value, list) else ONE_CONNECTOR


Connectors = Annotated[
    Annotated[ConnectorSpec, Tag(ONE_CONNECTOR)]
    | Annotated[list[ConnectorSpec], Tag(CONNECTOR_LIST), Field(min_length=1, max_length=MAX_CONNECTORS)],
    Discriminator(_connector_shape),
]
"""`connector`: one judge, or an ensemble of up to `MAX_CONNECTORS` (`fair_forge_core.judges.panel`)."""


class _Judged(RequestModel):
    """A request whose `connector` is one judge or a list of them (an ensemble; two that are the
    same judge are refused once built: `judges.panel.check_panel`)."""

    connector: Connectors

    @property
    def connectors(self) -> list[ConnectorSpec]:
        """The judges, in request order: one, or the ensemble's."""
        return self.connector if isinstance(self.connector, list) else [self.connector]


class RunRequest(_Judged):
    """A whole evaluation request: the body of `POST /run`, and the file `python -m fair_forge_core evaluate` reads."""

    datasets: list[Dataset] = Field(min_length=1)
    config: EvaluationConfig = Field(default_factory=EvaluationConfig)
    attempts: AdaptiveAttempts | None = omitted_when_none()
    """How the attempts were spent when `fair-forge run --until-decided` chose them (docs/request.md);
    absent for a fixed number of attempts, so such requests serialise as before."""


class Reference(RequestModel):
    """The truth of one turn of one task, as a references file holds it: turn `turn`
    (0, the first, when absent) of every trace matched to `task_id`. `qa_id` names the
    turn in the result (default `<task_id>-<turn>`). `goal`, `goal_rubric`, `expected_state`
    and `tool_policy` are the task's (`Dataset`'s fields), given on any one reference of it, for
    every trace of it (each trace's `final_state` is its metadata's: `importers.references`)."""

    task_id: str = Field(min_length=1)
    turn: int = Field(0, ge=0)
    qa_id: str | None = None
    ground_truth_assistant: str
    ground_truth_agentic: GroundTruthAgentic | None = None
    goal: str | None = omitted_when_none(min_length=1)
    goal_rubric: list[Annotated[str, Field(min_length=1)]] | None = omitted_when_none(min_length=1)
    expected_state: MayHoldRules = omitted_when_none()
    tool_policy: ToolPolicy | None = omitted_when_none()

    @field_validator("ground_truth_agentic", mode="before")
    @classmethod
    def _tools_not_evaluated_without_expected_tools(cls, value: Any) -> Any:
        return none_without_expected_tools(value)


class TraceSource(RequestModel):
    """Traces in one of `TRACE_FORMATS`: `items` is what a trace file holds (a list of
    traces, spans or runs; see each importer)."""

    format: TraceFormat
    items: list[Any] = Field(min_length=1)


class TracesRunRequest(_Judged):
    """`POST /run` with traces in place of `datasets`: the traces are imported, joined
    with `references` (matched by `task_key`: none for the trace id, `metadata.<name>`,
    or `first_user_message`), and evaluated as the datasets they give."""

    traces: TraceSource
    references: list[Reference] = Field(min_length=1)
    task_key: str | None = None
    config: EvaluationConfig = Field(default_factory=EvaluationConfig)
