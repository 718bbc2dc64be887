"""Deterministic tool-call scoring of one turn (docs/tool-rubric.md). No I/O, no LLM.

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
  (`pairing._EXACT_SEARCH_LIMIT`, `pairing._SEARCH_BUDGET`: every turn with at most
  five calls on each side); otherwise ties go to the pairs of one in-order alignment
  of the two call lists (`pairing._in_order_alignment`), which keeps the work bounded
  but may miss the longest run.
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
- ``{"$literal": v}`` agrees with a value equal to v as plain data (v's own "$" keys are
  never read as rules: the escape for expected values that hold such keys);
- ``{"$any": true}`` agrees with any value, but the key must be present on the
  used side (a missing key never agrees).

A request never holds a dict with a "$" key that fits none of these shapes (say
``{"$text": 5}`` or ``{"$any": true, "x": 1}``): the schemas refuse it, naming the field
(`fair_forge_core.rule_shapes`). Called directly on unvalidated values, the matching here
compares such a dict as a plain dict value. Rules only mean something on the expected side;
on the used side such a dict is plain data.

The code, one concept a module, each importing only the ones before it: `rules`
(value agreement and the rules above), `pairing` (pairing and its tie-break, the
longest common subsequence), `evidence` (result_in_answer), `score` (the dimensions,
overall, F1, the reasoning: `score_tool_calls`) and `scorer` (`ToolScorer`, which
scores each distinct turn once). The names of `__all__` are importable from here.
`policy` (tool policies and agentevals' trajectory match, docs/how-to/task-checks.md "Tool policies") stands
beside the rubric: it reads `rules` and `pairing`, and `metrics` imports it by its own name.
"""

from __future__ import annotations

from fair_forge_core.tools.evidence import MAX_RESULT_LEAVES, find_result_in_answer
from fair_forge_core.tools.rules import parameter_agreement, values_agree
from fair_forge_core.tools.score import THRESHOLD_TOLERANCE, score_tool_calls, tool_call_f1
from fair_forge_core.tools.scorer import ToolScorer

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
