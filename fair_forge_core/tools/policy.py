"""Tool policies (`ToolPolicy`): rules on the calls of one turn, and agentevals' trajectory match
as an alternative to the weighted rubric. Pure: no I/O. Docs: docs/how-to/task-checks.md "Tool policies".

Which policy. A conversation's `tool_policy` applies to each of its turns; a turn's own
(`ground_truth_agentic.tool_policy`) replaces it field by field: each field the turn gives
replaces the conversation's, the others stay the conversation's (`effective_policy`). A turn
with neither has no policy and no `tool_policy` in its result.

Rules, on the turn's `agentic.tools_used` (no `agentic`: no calls); each broken one is a
`ToolPolicyViolation`, calls numbered from 1 in list order:

- `forbidden_tools`: one violation per call of a forbidden tool;
- `allowed_tools` (None: any tool): one violation per call of a tool it does not name (a
  forbidden tool's calls are violations of `forbidden_tools` only);
- `max_tool_calls`: one violation when the turn made more calls (`tool_name` null);
- `max_calls_per_tool`: one violation per tool called more often than its limit (an int is
  every tool's limit; a dict limits the tools it names, others are unlimited).

The check `passed` when no rule is broken. A violation fails the turn (`metrics.score_turn`).

Trajectory match (`trajectory_match`): the four modes of agentevals
(github.com/langchain-ai/agentevals, `create_trajectory_match_evaluator` in
python/agentevals/trajectory/match.py; the scorers of strict.py, unordered.py, subset.py,
superset.py and `_is_trajectory_superset` of utils.py). It compares the turn's used calls
with its `ground_truth_agentic.expected_tools`, and applies only when the turn has expected
tools (`GroundTruthAgentic.has_expected_tools`; `[]` expects no call); otherwise
`trajectory_matches` is None.

- Two calls match when their tool names are equal and their parameters agree by the rubric's
  `values_agree` (the same keys, every value agreeing: 5 == 5.0, True ≠ 1, argument rules
  such as ``$approx`` and ``$any_of`` on the expected side) once the parameters that
  `ignore_parameters` names for that tool are dropped from both: agentevals' default
  ``tool_args_match_mode="exact"`` (argument objects equal) with the rubric's value rules.
- Steps. When every call of a side has a `step`, its calls sharing a step number are one step
  (one model response, its calls made in parallel: agentevals' assistant message), steps in
  number order; otherwise each call is a step of its own, in list order.
- **strict**: as many steps on both sides, and the i-th steps hold the same calls, in any
  order within the step (agentevals compares message by message, the tool calls of one message
  in any order). Used ``[a, b]`` against expected ``[b, a]`` without steps fails.
- **unordered**: the same calls, as multisets, in any order: every used call paired with a
  different expected call and every expected call with a different used call.
- **subset**: every used call paired with a different expected call: the agent called nothing
  beyond the reference (it may have left some out; no call at all is a subset).
- **superset**: every expected call paired with a different used call: the agent made every
  reference call, extra calls allowed (``expected_tools: []`` is matched by anything).

Pairings are one-to-one and of maximum size (a maximum bipartite matching), so repeated calls
count: expected ``[a, a]`` against used ``[a]`` is a subset, not a superset. agentevals pairs
greedily, first fit; under exact equality (its default) that is a maximum matching too, so the
verdicts agree; with argument rules one call may match several, and a maximum matching keeps
the verdict from depending on the order the calls are listed in.

`ignore_parameters` applies to the weighted rubric as well: with it, the rubric scores the turn
with those parameters dropped from both sides (`without_ignored_parameters`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, TypeVar

from fair_forge_core.schemas import (
    AgenticTrace,
    Batch,
    ExpectedToolCall,
    GroundTruthAgentic,
    ToolCall,
    ToolPolicy,
    ToolPolicyCheck,
    ToolPolicyViolation,
)
from fair_forge_core.schemas.request import TrajectoryMatch
from fair_forge_core.tools.pairing import best_assignment
from fair_forge_core.tools.rules import Agreement

IgnoredParameters = Mapping[str, Sequence[str]]
Call = TypeVar("Call", ToolCall, ExpectedToolCall)


def effective_policy(conversation_policy: ToolPolicy | None, turn_policy: ToolPolicy | None) -> ToolPolicy | None:
    """The policy of a turn: the conversation's with every field the turn's gives replacing its own;
    either alone when the other is None; None when neither is given."""
    if conversation_policy is None or turn_policy is None:
        return turn_policy or conversation_policy
    return conversation_policy.overridden_by(turn_policy)


def policy_of_turn(batch: Batch, conversation_policy: ToolPolicy | None) -> ToolPolicy | None:
    """`effective_policy` of the conversation's policy and `batch`'s own."""
    own = batch.ground_truth_agentic.tool_policy if batch.ground_truth_agentic is not None else None
    return effective_policy(conversation_policy, own)


def check_tool_policy(batch: Batch, policy: ToolPolicy) -> ToolPolicyCheck:
    """The turn's calls under `policy`: its violations and its trajectory verdict (module docstring)."""
    used = batch.agentic.tools_used if batch.agentic is not None else []
    violations = _violations([call.tool_name for call in used], policy)
    matches = None
    expected = batch.ground_truth_agentic
    if policy.trajectory_match is not None and expected is not None and expected.has_expected_tools:
        matches = trajectory_matches(
            policy.trajectory_match, used, expected.expected_tools or [], policy.ignore_parameters
        )
    return ToolPolicyCheck(
        passed=not violations,
        violations=violations,
        trajectory_match=policy.trajectory_match,
        trajectory_matches=matches,
    )


def _violations(names: list[str], policy: ToolPolicy) -> list[ToolPolicyViolation]:
    """The rules `names` (the tools called, in order) break, in rule order, then call order."""
    violations = []
    forbidden = set(policy.forbidden_tools)
    for number, name in enumerate(names, start=1):
        if name in forbidden:
            message = f"call {number} uses {name}, which forbidden_tools forbids"
            violations.append(ToolPolicyViolation(rule="forbidden_tools", tool_name=name, message=message))
    if policy.allowed_tools is not None:
        allowed = ", ".join(policy.allowed_tools) or "no tool"
        for number, name in enumerate(names, start=1):
            if name not in forbidden and name not in policy.allowed_tools:
                message = f"call {number} uses {name}, which is not in allowed_tools ({allowed})"
                violations.append(ToolPolicyViolation(rule="allowed_tools", tool_name=name, message=message))
    if policy.max_tool_calls is not None and len(names) > policy.max_tool_calls:
        message = f"the turn made {len(names)} tool calls, more than max_tool_calls {policy.max_tool_calls}"
        violations.append(ToolPolicyViolation(rule="max_tool_calls", tool_name=None, message=message))
    limits = policy.max_calls_per_tool
    for name, count in Counter(names).items():
        limit = limits.get(name) if isinstance(limits, dict) else limits
        if limit is not None and count > limit:
            message = f"{name} was called {count} times, more than its max_calls_per_tool {limit}"
            violations.append(ToolPolicyViolation(rule="max_calls_per_tool", tool_name=name, message=message))
    return violations


def trajectory_matches(
    mode: TrajectoryMatch,
    used: Sequence[ToolCall],
    expected: Sequence[ExpectedToolCall],
    ignore_parameters: IgnoredParameters,
) -> bool:
    """Whether the used calls match the expected ones in `mode` (module docstring).

    Each call's parameters are stripped once and one `Agreement` compares every pair, so each
    value's canonical form is computed once for the turn, not once per pair."""
    calls: list[ToolCall | ExpectedToolCall] = [*used, *expected]
    parameters = {id(call): _without(call.parameters, ignore_parameters.get(call.tool_name, ())) for call in calls}
    compared = _Compared(parameters, Agreement())
    if mode == "strict":
        used_steps, expected_steps = _steps(used), _steps(expected)
        return len(used_steps) == len(expected_steps) and all(
            len(u) == len(e) == _paired(u, e, compared) for u, e in zip(used_steps, expected_steps, strict=True)
        )
    paired = _paired(used, expected, compared)
    if mode == "unordered":
        return paired == len(used) == len(expected)
    if mode == "subset":
        return paired == len(used)
    return paired == len(expected)  # superset


def _steps(calls: Sequence[Call]) -> list[list[Call]]:
    """The calls grouped by `step` in step order when every call has one, else one call a step."""
    if calls and all(call.step is not None for call in calls):
        ordered = sorted(calls, key=lambda call: call.step or 0)
        return [list(group) for _, group in groupby(ordered, key=lambda call: call.step)]
    return [[call] for call in calls]


@dataclass(frozen=True)
class _Compared:
    """What a turn's calls are compared by: each call's parameters without the ignored ones
    (by the call's `id`, made once per call), and one `Agreement` for every pair."""

    parameters: dict[int, dict[str, Any]]
    agreement: Agreement


def _paired(used: Sequence[ToolCall], expected: Sequence[ExpectedToolCall], compared: _Compared) -> int:
    """The size of a maximum one-to-one pairing of matching used and expected calls."""
    table = [[int(_call_matches(u, e, compared)) for e in expected] for u in used]
    return sum(table[row][column] for row, column in best_assignment(table))


def _call_matches(used: ToolCall, expected: ExpectedToolCall, compared: _Compared) -> bool:
    if used.tool_name != expected.tool_name:
        return False
    return compared.agreement.agrees(compared.parameters[id(expected)], compared.parameters[id(used)])


def _without(parameters: dict[str, Any], dropped: Sequence[str]) -> dict[str, Any]:
    return {key: value for key, value in parameters.items() if key not in dropped} if dropped else parameters


def without_ignored_parameters(batch: Batch, ignore_parameters: IgnoredParameters) -> Batch:
    """`batch` with the parameters `ignore_parameters` names dropped from its used and expected
    calls of each named tool (what the rubric scores); `batch` itself when that changes nothing."""
    if not any(
        ignore_parameters.get(call.tool_name) and set(call.parameters) & set(ignore_parameters[call.tool_name])
        for call in _calls(batch)
    ):
        return batch
    update: dict[str, Any] = {}
    if batch.agentic is not None:
        tools_used = [_stripped(call, ignore_parameters) for call in batch.agentic.tools_used]
        update["agentic"] = batch.agentic.model_copy(update={"tools_used": tools_used})
    if batch.ground_truth_agentic is not None and batch.ground_truth_agentic.expected_tools:
        expected = [_stripped(call, ignore_parameters) for call in batch.ground_truth_agentic.expected_tools]
        update["ground_truth_agentic"] = batch.ground_truth_agentic.model_copy(update={"expected_tools": expected})
    return batch.model_copy(update=update)


def _calls(batch: Batch) -> list[ToolCall | ExpectedToolCall]:
    used: AgenticTrace | None = batch.agentic
    expected: GroundTruthAgentic | None = batch.ground_truth_agentic
    return [*(used.tools_used if used else []), *((expected.expected_tools or []) if expected else [])]


def _stripped(call: Call, ignore_parameters: IgnoredParameters) -> Call:
    dropped = ignore_parameters.get(call.tool_name, ())
    if not dropped:
        return call
    return call.model_copy(update={"parameters": _without(call.parameters, dropped)})
