"""The four dimensions, the tool-call F1, the reasoning and `score_tool_calls` (rules in
`fair_forge_core.tools`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from fair_forge_core.schemas import (
    AgenticTrace,
    ExpectedToolCall,
    GroundTruthAgentic,
    ToolCall,
    ToolCorrectnessScore,
    ToolWeights,
)
from fair_forge_core.tools.evidence import find_result_in_answer
from fair_forge_core.tools.pairing import (
    CallPair,
    NameTable,
    best_assignment,
    call_order,
    longest_common_subsequence,
    name_tables,
    pair_calls,
)
from fair_forge_core.tools.rules import Agreement

THRESHOLD_TOLERANCE = 1e-9
"""Slack of the ``overall ≥ tool_threshold`` comparison (float sums of weights)."""


# --------------------------------------------------------------------------- dimensions


def _selection(expected_names: Counter[str], used_names: Counter[str]) -> float:
    """Multiset Jaccard |E ∩ U| / |E ∪ U|; 1.0 when both are empty."""
    union = sum((expected_names | used_names).values())
    if union == 0:
        return 1.0
    return sum((expected_names & used_names).values()) / union


def _parameters(expected_count: int, used_count: int, pairs: Sequence[CallPair]) -> float:
    """Mean agreement over expected calls (unpaired → 0).

    No expected calls: 1.0 if no call was used either, else 0.0 (every used call is
    then unwanted, so none of its parameters can be right).
    """
    if expected_count == 0:
        return 1.0 if used_count == 0 else 0.0
    return sum(pair.agreement for pair in pairs) / expected_count


def _sequence(
    expected: Sequence[ExpectedToolCall],
    used: Sequence[ToolCall],
    pairs: Sequence[CallPair],
    sequence_matters: bool,
) -> tuple[float, set[int]]:
    """The sequence score and the expected calls (indices) found out of order.

    1.0 if the order does not matter or nothing is expected. Otherwise
    LCS(expected order, used order of the paired calls) / #expected, where a used
    call is identified by the expected call it is paired with.
    """
    if not sequence_matters or not expected:
        return 1.0, set()
    partner = {pair.used: pair.expected for pair in pairs}
    used_order = [partner[index] for index in call_order(used) if index in partner]
    common = longest_common_subsequence(call_order(expected), used_order)
    return len(common) / len(expected), set(used_order) - set(common)


UTILIZATION_NOT_MEASURED = (
    "utilization not measured: final_answer_uses_tools not reported, and no tool returned a result "
    "to look for in the answer (left out of overall, the weights renormalised over the other dimensions)"
)
"""The reasoning's note on a turn whose utilization has no evidence (docs/tool-rubric.md#utilization)."""


def _utilization(
    used: AgenticTrace | None, expects_tools: bool, result_in_answer: bool | None
) -> tuple[float | None, str | None]:
    """The utilization score (None: not measured) and, below 1.0, a note saying why.

    No tool used: 0.0 when tools were expected (there is no result to use), 1.0 when
    none were (nothing to use, nothing missed). Otherwise the reported
    `final_answer_uses_tools`; where the agent did not report it, `result_in_answer`
    decides (false → 0.0). Neither reported nor any result to look for (`result_in_answer`
    None): there is no evidence either way, so utilization is not measured (None), never 0.
    """
    if used is None or not used.tools_used:
        return (0.0, "no tool was used, so no tool result could be used") if expects_tools else (1.0, None)
    if used.final_answer_uses_tools is not None:
        return (1.0, None) if used.final_answer_uses_tools else (0.0, "final answer does not use tool results")
    if result_in_answer:
        return 1.0, None
    if result_in_answer is False:
        return 0.0, "final_answer_uses_tools not reported, and no tool result appears in the answer"
    return None, UTILIZATION_NOT_MEASURED


def _overall(dimensions: dict[str, float | None], weights: ToolWeights) -> float | None:
    """The weighted sum of the measured dimensions, the weights renormalised over them (capped
    at 1.0 against float rounding); None when no measured dimension has a positive weight.
    With every dimension measured this is the sum with `weights.normalised()`."""
    if all(value is not None for value in dimensions.values()):
        shares = weights.normalised()
        return min(1.0, sum(float(getattr(shares, name)) * (value or 0.0) for name, value in dimensions.items()))
    measured = {name: value for name, value in dimensions.items() if value is not None}
    total = sum(float(getattr(weights, name)) for name in measured)
    if total <= 0:
        return None
    return min(1.0, sum(float(getattr(weights, name)) / total * value for name, value in measured.items()))


def tool_call_f1(expected: Sequence[ExpectedToolCall], used: Sequence[ToolCall]) -> tuple[float, float, float]:
    """Precision, recall and F1 of the used calls against the expected ones.

    A used call matches an expected call when the names are equal and every
    parameter agrees (`parameter_agreement` is 1, rules included); matching is
    one-to-one and maximal. Both sides empty → (1, 1, 1); an empty side makes its
    undefined ratio 0.0, and F1 is 0.0 whenever precision + recall is 0.
    """
    return _tool_call_f1(len(expected), len(used), name_tables(expected, used))


def _tool_call_f1(expected_count: int, used_count: int, tables: Sequence[NameTable]) -> tuple[float, float, float]:
    """`tool_call_f1` from the agreement tables of the turn."""
    if not expected_count and not used_count:
        return 1.0, 1.0, 1.0
    matches = 0
    for table in tables:
        weights = [[int(weight == table.scale) for weight in row] for row in table.weights]
        matches += sum(weights[row][column] for row, column in best_assignment(weights))
    precision = matches / used_count if used_count else 0.0
    recall = matches / expected_count if expected_count else 0.0
    if precision + recall == 0:
        return precision, recall, 0.0
    return precision, recall, 2 * precision * recall / (precision + recall)


# --------------------------------------------------------------------------- reasoning


def _names(counts: Counter[str]) -> str:
    """Sorted names, with a count where above one: "lookup, search ×2"."""
    return ", ".join(name if count == 1 else f"{name} ×{count}" for name, count in sorted(counts.items()))


def _reasoning(
    expected: Sequence[ExpectedToolCall],
    pairs: Sequence[CallPair],
    expected_names: Counter[str],
    used_names: Counter[str],
    out_of_order: set[int],
    utilization_note: str | None,
    below_floor: Sequence[tuple[str, float]],
    dimension_floor: float,
    claimed_but_not_shown: bool,
) -> str:
    """Deterministic explanation: missing, extra, wrong parameters, out of order,
    utilization, then any dimension under the floor."""
    issues: list[str] = []
    if missing := expected_names - used_names:
        issues.append(f"missing: {_names(missing)}")
    if extra := used_names - expected_names:
        issues.append(f"extra: {_names(extra)}")
    wrong: dict[str, set[str]] = {}
    for pair in pairs:
        if pair.wrong_keys:
            wrong.setdefault(expected[pair.expected].tool_name, set()).update(pair.wrong_keys)
    if wrong:
        details = ", ".join(f"{name} ({', '.join(sorted(keys))})" for name, keys in sorted(wrong.items()))
        issues.append(f"wrong parameters: {details}")
    if out_of_order:
        names = sorted({expected[index].tool_name for index in out_of_order})
        issues.append(f"out of order: {', '.join(names)}")
    if utilization_note:
        issues.append(utilization_note)
    if below_floor:
        scores = ", ".join(f"{name} {value:.2f}" for name, value in below_floor)
        issues.append(f"below tool_dimension_floor {dimension_floor:g}: {scores}")
    text = "; ".join(issues) + "." if issues else "All tools used correctly."
    if claimed_but_not_shown:
        text += " Note: no tool result appears in the answer."
    return text


# --------------------------------------------------------------------------- entry point


def score_tool_calls(
    used: AgenticTrace | None,
    expected: GroundTruthAgentic,
    *,
    answer: str,
    weights: ToolWeights,
    tool_threshold: float,
    dimension_floor: float,
) -> ToolCorrectnessScore:
    """Score the tools of one turn against its ground truth (rules in `fair_forge_core.tools`).

    Correct ⇔ overall ≥ `tool_threshold` and no measured dimension of positive weight is
    below `dimension_floor` (both with a 1e-9 tolerance for float sums). A dimension without
    evidence (utilization: `_utilization`) is None, left out of overall (the weights
    renormalised over the measured ones) and of the floor; when no measured dimension has a
    positive weight, overall and `is_correct` are None (the tools decide nothing). `used` None
    (no trace) is scored like a trace with no calls: expected tools and none used give a
    real score with selection 0, never None.
    """
    expected_calls = expected.expected_tools or []
    used_calls = used.tools_used if used is not None else []
    expected_names = Counter(call.tool_name for call in expected_calls)
    used_names = Counter(call.tool_name for call in used_calls)

    agreement = Agreement()  # one turn: each value's canonical form computed once for every pair
    tables = name_tables(expected_calls, used_calls, agreement)
    pairs = pair_calls(expected_calls, used_calls, tables, expected.tool_sequence_matters, agreement)
    result_in_answer = find_result_in_answer(used_calls, answer)
    selection = _selection(expected_names, used_names)
    parameters = _parameters(len(expected_calls), len(used_calls), pairs)
    sequence, out_of_order = _sequence(expected_calls, used_calls, pairs, expected.tool_sequence_matters)
    utilization, utilization_note = _utilization(used, bool(expected_calls), result_in_answer)
    dimensions = {"selection": selection, "parameters": parameters, "sequence": sequence, "utilization": utilization}
    precision, recall, f1 = _tool_call_f1(len(expected_calls), len(used_calls), tables)

    overall = _overall(dimensions, weights)
    below_floor = [  # a floor applies to measured dimensions only: an unmeasured one is not below anything
        (name, value)
        for name, value in dimensions.items()
        if value is not None and getattr(weights, name) > 0 and value < dimension_floor - THRESHOLD_TOLERANCE
    ]
    claims_use = used is not None and used.final_answer_uses_tools is True
    return ToolCorrectnessScore(
        tool_selection_correct=selection,
        parameter_accuracy=parameters,
        sequence_correct=sequence,
        result_utilization=utilization,
        overall_correctness=overall,
        is_correct=None if overall is None else overall >= tool_threshold - THRESHOLD_TOLERANCE and not below_floor,
        reasoning=_reasoning(
            expected_calls,
            pairs,
            expected_names,
            used_names,
            out_of_order,
            utilization_note,
            below_floor,
            dimension_floor,
            claimed_but_not_shown=claims_use and result_in_answer is False,
        ),
        precision=precision,
        recall=recall,
        f1=f1,
        result_in_answer=result_in_answer,
    )
