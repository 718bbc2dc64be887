"""Deterministic tool-call scoring of one turn (DESIGN.md §5). No I/O, no LLM.

`score_tool_calls` compares the calls an agent made (`AgenticTrace`) with the calls
it should have made (`GroundTruthAgentic`) and returns a `ToolCorrectnessScore`:

- **Pairing.** Each expected call is paired with at most one used call of the same
  name, and every name pairs ``min(#expected, #used)`` calls, even when their
  parameters disagree entirely. The pairing maximises the total parameter agreement
  exactly (agreements are compared as integers over a common denominator, never with
  an epsilon; a turn whose key counts have a common denominator beyond 2**53 / its
  calls² falls back to float precision), so repeated
  calls of one tool are compared with the right partner. Among pairings of equal
  total agreement, the one that keeps the most calls in order wins: the longest
  common subsequence of the expected order and the used order of the paired calls
  (see *Sequence*), then the first in call order. Expected ``[a, b, c]`` and used
  ``[c, b, a, b, c]`` pair with the used ``a, b, c`` in that order. This tie-break is
  searched exhaustively where the sequence is scored and the search is small
  (`_EXACT_SEARCH_LIMIT`, `_SEARCH_BUDGET`: every turn with at most five calls on each
  side); otherwise ties go to the pairs of one in-order alignment of the two call lists
  (`_in_order_alignment`), which keeps the work bounded but may miss the longest run.
- **Selection.** Multiset Jaccard of tool names, ``|E ∩ U| / |E ∪ U|``; 1.0 when
  both are empty. Expected ``[a, a, b]`` vs used ``[a, b, c]`` gives 2/4.
- **Parameters.** Per expected call, the share of keys (the union of both sides'
  keys) whose values agree; an unpaired expected call scores 0, and two empty
  parameter sets score 1. The dimension is the mean over expected calls. With no
  expected calls it is 1.0 if no call was used and 0.0 otherwise.
- **Sequence.** 1.0 unless ``tool_sequence_matters``. Otherwise the length of the
  longest common subsequence of the expected order and the used order of the
  *paired* calls, divided by the number of expected calls (1.0 with none). Unpaired
  used calls are ignored, so an extra leading call does not zero the score; two
  swapped calls score 0.5.
- **Order.** On each side separately: by ``step`` when every call has one (equal
  steps keep list order), otherwise list order.
- **Utilization.** Using no tool at all scores 0.0 when tools were expected
  (whatever the trace claims) and 1.0 when none were, as there is nothing to use.
  Otherwise the reported ``final_answer_uses_tools`` (1.0 or 0.0); where the agent
  did not report it, ``result_in_answer`` decides (true → 1.0, false or None → 0.0).
- **result_in_answer** says whether a tool result appears in the answer: None when
  no used call has a non-None result. A structured result appears when one of its
  leaf values does (``{"temp_c": 18, "condition": "cloudy"}`` in "18°C and
  cloudy"); numbers match a number token of the answer (8 matches "The result is
  8.", 8.0 matches "8", "1,000" reads as 1000; equal within a relative 1e-9); strings
  of two characters or more match as whole words, case and whitespace aside ("ok" is
  not in "booked"); shorter strings, bools and None are no evidence (None when nothing
  else was returned); the first 256 leaves of a turn's results are looked at.
- **Overall.** The weighted sum with the normalised weights (capped at 1.0 against
  float rounding). Correct ⇔ overall ≥ ``tool_threshold`` and no dimension of
  positive weight is below ``dimension_floor`` (config ``tool_dimension_floor``,
  default 0.5), both with a 1e-9 tolerance. So a call of the right tool with every
  argument wrong (parameters 0, overall 0.75) fails by default; a floor of 0 gives
  the sources' rule (overall alone).
- **Tool-call F1** (seed 004, multisets rather than Ragas' sets): a used call
  matches an expected call when the names are equal and every parameter agrees
  (the parameter share is 1); matches are one-to-one, found by an optimal
  assignment. For plain values this is exactly the multiset intersection of
  ``(name, canonical arguments)``. precision = matches / #used, recall = matches /
  #expected, F1 their harmonic mean. Both sides empty → 1.0 for all three; an
  empty side makes its undefined ratio 0.0 (and F1 0.0).

Value agreement (`values_agree`): dict key order is irrelevant; numbers compare by
value (5 == 5.0); bools are not numbers (True ≠ 1); strings never equal numbers
("5" ≠ 5); dicts and lists are compared recursively; lists are ordered.

Rules. A ground-truth parameter value (or any value nested inside one) may be a
rule instead of a plain value. A rule is a dict of exactly one of these shapes:

- ``{"$any_of": [v1, v2, ...]}`` agrees with any listed value (each compared with
  `values_agree`, so options may be rules themselves);
- ``{"$approx": 3.14, "tol": 0.01}`` agrees with a number u when
  ``|u − x| ≤ max(tol, rel·max(|u|, |x|))`` (``tol`` and ``rel`` optional, ≥ 0, default
  0); bounds are inclusive up to a few units in the last place of the numbers
  compared (so 1000000.01 is on the bound of 1000000 ± 0.01, 1e15 + 100 is not within
  0.01 of 1e15, and 1e-13 is not 0 ± 0); bools never match;
- ``{"$text": "New York"}`` agrees with a string equal after case folding,
  collapsing runs of whitespace and stripping;
- ``{"$any": true}`` agrees with any value, but the key must be present on the
  used side (a missing key never agrees).

A dict whose keys or value types do not fit one of these shapes exactly (say
``{"$text": 5}`` or ``{"$any": true, "x": 1}``) is a plain dict value. Rules only
mean something on the expected side; on the used side such a dict is plain data.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any, cast

from pydantic import BaseModel

from fair_forge_core.schemas import (
    AgenticTrace,
    Batch,
    EvaluationConfig,
    ExpectedToolCall,
    GroundTruthAgentic,
    ToolCall,
    ToolCorrectnessScore,
    ToolWeights,
)
from fair_forge_core.tools.evidence import MAX_RESULT_LEAVES, find_result_in_answer
from fair_forge_core.tools.pairing import (
    _best_assignment,
    _in_order,
    _longest_common_subsequence,
    _name_tables,
    _NameTable,
    _Pair,
    _pair_calls,
)
from fair_forge_core.tools.rules import parameter_agreement, values_agree

__all__ = [
    "MAX_RESULT_LEAVES",
    "THRESHOLD_TOLERANCE",
    "ToolScorer",
    "find_result_in_answer",
    "parameter_agreement",
    "score_tool_calls",
    "tool_call_f1",
    "values_agree",
]

THRESHOLD_TOLERANCE = 1e-9
"""Slack of the ``overall ≥ tool_threshold`` comparison (float sums of weights)."""


# --------------------------------------------------------------------------- dimensions


def _selection(expected_names: Counter[str], used_names: Counter[str]) -> float:
    """Multiset Jaccard |E ∩ U| / |E ∪ U|; 1.0 when both are empty."""
    union = sum((expected_names | used_names).values())
    if union == 0:
        return 1.0
    return sum((expected_names & used_names).values()) / union


def _parameters(expected_count: int, used_count: int, pairs: Sequence[_Pair]) -> float:
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
    pairs: Sequence[_Pair],
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
    used_order = [partner[index] for index in _in_order(used) if index in partner]
    common = _longest_common_subsequence(_in_order(expected), used_order)
    return len(common) / len(expected), set(used_order) - set(common)


def _utilization(
    used: AgenticTrace | None, expects_tools: bool, result_in_answer: bool | None
) -> tuple[float, str | None]:
    """The utilization score and, below 1.0, a note saying why.

    No tool used: 0.0 when tools were expected (there is no result to use), 1.0 when
    none were (nothing to use, nothing missed). Otherwise the reported
    `final_answer_uses_tools`; where the agent did not report it, `result_in_answer`
    decides (no result to look for counts as not shown).
    """
    if used is None or not used.tools_used:
        return (0.0, "no tool was used, so no tool result could be used") if expects_tools else (1.0, None)
    if used.final_answer_uses_tools is not None:
        return (1.0, None) if used.final_answer_uses_tools else (0.0, "final answer does not use tool results")
    if result_in_answer:
        return 1.0, None
    if result_in_answer is False:
        return 0.0, "final_answer_uses_tools not reported, and no tool result appears in the answer"
    return 0.0, "final_answer_uses_tools not reported, and no tool returned a result to look for in the answer"


def tool_call_f1(expected: Sequence[ExpectedToolCall], used: Sequence[ToolCall]) -> tuple[float, float, float]:
    """Precision, recall and F1 of the used calls against the expected ones.

    A used call matches an expected call when the names are equal and every
    parameter agrees (`parameter_agreement` is 1, rules included); matching is
    one-to-one and maximal. Both sides empty → (1, 1, 1); an empty side makes its
    undefined ratio 0.0, and F1 is 0.0 whenever precision + recall is 0.
    """
    return _tool_call_f1(len(expected), len(used), _name_tables(expected, used))


def _tool_call_f1(expected_count: int, used_count: int, tables: Sequence[_NameTable]) -> tuple[float, float, float]:
    """`tool_call_f1` from the agreement tables of the turn."""
    if not expected_count and not used_count:
        return 1.0, 1.0, 1.0
    matches = 0
    for table in tables:
        weights = [[int(weight == table.scale) for weight in row] for row in table.weights]
        matches += sum(weights[row][column] for row, column in _best_assignment(weights))
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
    pairs: Sequence[_Pair],
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
    """Score the tools of one turn against its ground truth (rules in the module docstring).

    Correct ⇔ overall ≥ `tool_threshold` and no dimension of positive weight is below
    `dimension_floor` (both with a 1e-9 tolerance for float sums). `used` None (no
    trace) is scored like a trace with no calls: expected tools and none used give a
    real score with selection 0, never None.
    """
    expected_calls = expected.expected_tools
    used_calls = used.tools_used if used is not None else []
    expected_names = Counter(call.tool_name for call in expected_calls)
    used_names = Counter(call.tool_name for call in used_calls)

    tables = _name_tables(expected_calls, used_calls)
    pairs = _pair_calls(expected_calls, used_calls, tables, expected.tool_sequence_matters)
    result_in_answer = find_result_in_answer(used_calls, answer)
    dimensions = {
        "selection": _selection(expected_names, used_names),
        "parameters": _parameters(len(expected_calls), len(used_calls), pairs),
    }
    dimensions["sequence"], out_of_order = _sequence(expected_calls, used_calls, pairs, expected.tool_sequence_matters)
    dimensions["utilization"], utilization_note = _utilization(used, bool(expected_calls), result_in_answer)
    precision, recall, f1 = _tool_call_f1(len(expected_calls), len(used_calls), tables)

    shares = weights.normalised()
    overall = min(1.0, sum(getattr(shares, name) * value for name, value in dimensions.items()))
    below_floor = [
        (name, value)
        for name, value in dimensions.items()
        if getattr(weights, name) > 0 and value < dimension_floor - THRESHOLD_TOLERANCE
    ]
    claims_use = used is not None and used.final_answer_uses_tools is True
    return ToolCorrectnessScore(
        tool_selection_correct=dimensions["selection"],
        parameter_accuracy=dimensions["parameters"],
        sequence_correct=dimensions["sequence"],
        result_utilization=dimensions["utilization"],
        overall_correctness=overall,
        is_correct=overall >= tool_threshold - THRESHOLD_TOLERANCE and not below_floor,
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


class ToolScorer:
    """`score_tool_calls` under one config, scoring each distinct turn once.

    Turns often repeat (attempts of one task, a shared test set), and scoring is a
    pure function of the trace, the ground truth and the answer, so equal inputs
    share one `ToolCorrectnessScore` (treat it as read-only). Inputs are compared
    exactly: by type as well as value (True ≠ 1, 5 ≠ 5.0, dict key order counts),
    including which fields were set. A turn holding a value that is not plain JSON
    data (str, int, float, bool, None, dict, list, tuple) is scored without the memo.
    The same objects asked for again (an evaluation scores tools before judging, then
    reads the scores back per conversation) are found by identity first, without
    building the key; the scorer keeps them alive, so an identity is never reused.
    """

    def __init__(self, weights: ToolWeights, tool_threshold: float, dimension_floor: float) -> None:
        self.weights = weights
        self.tool_threshold = tool_threshold
        self.dimension_floor = dimension_floor
        self._scores: dict[Hashable, ToolCorrectnessScore] = {}
        self._seen: dict[tuple[int, int, str], tuple[Any, Any, ToolCorrectnessScore]] = {}

    @classmethod
    def for_config(cls, config: EvaluationConfig) -> ToolScorer:
        """The scorer of an evaluation's `tool_weights`, `tool_threshold` and `tool_dimension_floor`."""
        return cls(config.tool_weights, config.tool_threshold, config.tool_dimension_floor)

    def score_batch(self, batch: Batch) -> ToolCorrectnessScore | None:
        """The tool score of one turn, or None when its tools are not evaluated (no
        `ground_truth_agentic`: expected tools and none used is a real, failing score)."""
        if batch.ground_truth_agentic is None:
            return None
        return self.score(batch.agentic, batch.ground_truth_agentic, batch.assistant)

    def score(self, used: AgenticTrace | None, expected: GroundTruthAgentic, answer: str) -> ToolCorrectnessScore:
        """The same as `score_tool_calls(used, expected, answer=answer, ...)` with this scorer's config."""
        identity = (id(used), id(expected), answer)
        if (seen := self._seen.get(identity)) is not None:
            return seen[2]
        score = self._score(used, expected, answer)
        self._seen[identity] = (used, expected, score)  # holding them keeps their ids from being reused
        return score

    def _score(self, used: AgenticTrace | None, expected: GroundTruthAgentic, answer: str) -> ToolCorrectnessScore:
        try:
            key: Hashable = (answer, _frozen(used), _frozen(expected))
        except _NotPlainData:
            key = None
        if key is not None and (known := self._scores.get(key)) is not None:
            return known
        score = score_tool_calls(
            used,
            expected,
            answer=answer,
            weights=self.weights,
            tool_threshold=self.tool_threshold,
            dimension_floor=self.dimension_floor,
        )
        if key is not None:
            self._scores[key] = score
        return score


class _NotPlainData(Exception):
    """A value `_frozen` does not know how to compare exactly."""


def _frozen(value: Any) -> Hashable:
    """A hashable equal to another's exactly when the two values are the same data.

    Numbers and bools carry their type ((int, 1) ≠ (bool, True) ≠ (float, 1.0));
    strings and None stand for themselves (they equal nothing else); containers
    carry their kind and items in order; models their class, the fields set, every
    field and any extra. Anything else raises `_NotPlainData`.
    """
    kind = type(value)
    if kind is str or value is None:
        return cast(Hashable, value)
    if kind is float:
        return kind, value, math.copysign(1.0, value)  # -0.0 == 0.0, but their JSON text differs
    if kind is int or kind is bool:
        return kind, value
    if kind is dict:
        return dict, tuple(
            [
                (key if type(key) is str else _frozen(key), item if type(item) is str else _frozen(item))
                for key, item in value.items()
            ]
        )
    if kind is list or kind is tuple:
        return kind, tuple([item if type(item) is str else _frozen(item) for item in value])
    if isinstance(value, BaseModel):  # a model's fields are its __dict__
        extra = value.__pydantic_extra__
        return (
            kind,
            frozenset(value.model_fields_set),
            _frozen(value.__dict__),
            None if extra is None else _frozen(extra),
        )
    raise _NotPlainData(kind.__name__)
