"""The built-in offline judge: a LangChain chat model that grades by rules, not by a model.

`ReferenceJudge` (`model.py`) is a genuine `BaseChatModel`, so the judge path (prompt,
structured output or markers, parsing, retries) is the same for it as for Groq or OpenAI.
It reads the turn from the last human message with `prompt.read_judge_prompt` and
grades it with `score_answer` (`rules.py`), a pure, deterministic function of (query,
answer, ground truth): standard library only, no model files, no network, about a
millisecond or two per turn (bounded for long texts: see "Bounded work" below).

Reply formats
-------------
- Tools bound (`bind_tools`, which the base `with_structured_output` uses; the base
  class ignores its `method` argument, so "json_mode" and "json_schema" take the same
  path): an `AIMessage` with one tool call named after the bound tool (the tool whose
  parameters have a `score` field, else the one `tool_choice` names, else the first),
  args `{"score": float, "reasoning": str}`.
- No tools: marker mode, the text `<bos>{json}<eos>`, with the markers the prompt asked for
  (`prompt.read_judge_prompt`), else the defaults ```` ```json ```` and ```` ``` ````.
- No judge data in the last human message: a reply *without* a score (plain text,
  no tool call) that says so. The caller's parser then records a parse failure,
  exactly as for a model that answers off-format; nothing is scored 0.0 by mistake.

Scoring rules (`rules.py`), in order
------------------------------------
Decisive rules (`RULES`): the first that applies is the score; a score of None is an
abstention (the turn is then unscored: see "Abstention").

1. `empty_answer` - nothing to grade -> 0.0.
2. `empty_ground_truth` - nothing to grade against -> 0.0.
3. `normalised_match` - same words once normalised -> 1.0.
4. `expected_refusal` - the ground truth itself refuses or says it cannot be known (not a
   "not available" after a leading yes/no): a refusal -> 0.9, an answer -> 0.1.
5. `refusal` - a refusal that does not state the ground truth -> 0.1.
6. `wrong_identifier` - an identifier of the ground truth missing, another one given -> 0.1.
7. `wrong_number` - a required number replaced by a comparable other one (or, when the
   answer is a number the question also has, the answer ending with another) -> 0.15.
8. `yes_no_contradiction` - the answer opens with the opposite yes/no -> 0.1.
9. `negation` - a shared term negated in one text only -> 0.1.
10. `antonym` - the antonym of a ground-truth term, neither negated -> 0.1.
11. `reversed_comparison` - a key term on the wrong side of the question's comparative
    ("The Earth is larger than the Sun." for "Which is larger?" - "The Sun") -> 0.1.
12. `denied_claim` - no key fact, no leading yes/no, and a denying participle ("cancelled",
    "avoided", "failed") next to the question's claim: reads as "no" -> 0.8 or 0.3.
13. `polarity_contradiction` - no key fact, and the answer's stance is the other polarity -> 0.1.
14. `swapped_claim` - no key fact, stance undecided, and the answer restates the copular
    question's claim with one part swapped ("Whales are mammals." for "Are whales fish?"):
    reads as "no" -> 0.8 or 0.3 (pass or fail, not decisive: the cascade asks its LLM).
15. `undecided_verdict` - no key fact, and the answer neither says yes/no nor affirms,
    denies or swaps the question's claim -> abstain.
16. `nothing_found` - none of the key facts, no matching yes/no -> 0.1.

Bands (`BANDS`): else the first that applies gives the score before caps.

17. `same_verdict` - no key fact, same leading yes/no -> 0.95.
18. `restated_claim` - no key fact, shared terms restated with the same polarity -> 0.9.
19. `same_polarity` - no key fact, same stance -> 0.9.
20. `verdict_with_missing_facts` - same yes/no or stance, supporting facts missing -> 0.8 + 0.15 x coverage.
21. `minor_flaw` - every number and name present, a few plain words missing -> 0.7-0.9.
22. `partial` - some key facts missing -> 0.3 + 0.3 x coverage.
23. `complete` - every key fact found -> 0.95.

Caps (`CAPS`, `caps.py`): each may lower the band's score, in this order.

24. `typo_cap` - one misspelt key term caps at 0.7, two or more at 0.5.
25. `hedge_cap` - a hedge ("maybe", "not sure", "could also be", ...) the ground truth lacks caps at 0.6.
26. `number_hedge_cap` - alternatives around a required number ("41 or 42") cap at 0.6.
27. `refusal_hedge_cap` - a hard refusal phrase next to all the facts caps at 0.5.

Checks (`CHECKS`, `caps.py`): may turn a pass into an abstention.

28. `extra_claim` - a passing answer adds a number, a name or a superlative/"also" claim
    the question and the ground truth cannot confirm -> abstain (not: the numbers of a true
    equation, "21 = 3 × 7"; the unit of a matching number, "212 degrees Fahrenheit"; "last
    month").

Abstention
----------
`score_answer` returns (None, reason) when a rule abstains; `ReferenceJudge` then raises
`JudgeAbstained("the offline judge cannot decide this turn")` (a `JudgeCallError`, with the
rule's reason as its `reasoning`), which `AnswerJudge` re-raises at once: the turn is
reported unscored with that error, never retried, left out of n and c, and counted in the
result's warnings. A wrong confident pass is the worst outcome for an offline judge.

Each rule's docstring states it exactly. The modules: `rules.py` (the decisive rules and
bands, the four lists in order, `score_answer`), `caps.py` (the caps and the extra-claim
check), `grade.py` (the scores, `Grade`, the refusal and rival-number reads rules and caps
share). Reading the texts: `text.py` (normalisation), `numbers.py` (numbers and when they
match) with `quantities.py` (units, number words, `Num`), `dates.py` (dates, times of
day, fractions) and `foreign_numbers.py` (French, Spanish, German and Portuguese number
words), `lexicon.py` (finding a term, typos), `names.py` (proper names), `parsed.py` (one
text read: numbers, words, clauses, identifiers), `claims.py` (what an answer says of a
claim: affirmed, denied, swapped), `turn.py` (key facts and coverage).

Known limits: no real paraphrase understanding (synonyms beyond the small list are
missed: "how hot or cold" for "temperature" fails), a wrong extra claim next to the
right fact is only caught (by abstaining) when it brings a number, a name or a
superlative ("roughly the speed of sound" passes), a one-word surname one letter away
passes as a typo ("Johnston" for "Johnson"), a reversed comparison is detected only
against a key term of the ground truth ("Is the Earth larger than the Sun?" - "The Sun is
larger than the Earth." - "No" reads as "yes"), a swap for a hyponym reads as "no" ("A
tomato is a berry." for "Is a tomato a fruit?"), and a wrong entity one
letter away from the right one ("Venus"/"Venue") passes as a typo. Terms of four letters or fewer get no
typo tolerance, so "Iran"/"Iraq" is a wrong fact, not a typo (and "Marrs" is not found
for "Mars"); a dropped final "s" reads as a singular ("Pari" for "Paris" passes). A hedge
listed with commas only ("41, 42" without "or") is not seen.

Bounded work
------------
Scoring is linear in the length of the texts: every step is a single pass, a set or
dict look-up, or bounded by these caps (each text field may hold 100,000 characters):
- numbers: the first `MAX_NUMBERS` (200) distinct numbers of each text are compared
  (at most 200 x 200 pairs); a ground-truth number first stated after that is ignored,
  an answer number after that is not seen. `MAX_ALTERNATIVES` (50) alternative pairs.
- key terms: the first `MAX_TERMS` (200) of the ground truth are looked for.
- typos: only among the first `MAX_TYPO_WORDS` (1,000) distinct answer words of 4 to
  `MAX_TYPO_LEN` (30) letters; longer terms get no typo tolerance. Candidates come from
  indexes (symmetric deletion of one or two letters; three-letter pieces by position
  for terms of 15+ letters), never from comparing every term with every word.
Measured: about 0.3 s for a 100,000-character answer and ground truth (up to 0.6 s
with a 100,000-character query too, for adversarial texts), against 50 s before the
caps; at most about 10 ms (number-dense texts; typically well under 1 ms) for a judge
message of up to `INLINE_MAX_CHARS` (1,000) characters. `_agenerate` scores such short
turns inline and longer ones with `asyncio.to_thread` (about 0.1 ms extra), so the event
loop is never blocked for long and a caller's `asyncio.wait_for` timeout can fire.
"""

from __future__ import annotations

from fair_forge_core.judges.reference.model import ReferenceJudge
from fair_forge_core.judges.reference.rules import BANDS, CAPS, RULES, score_answer

__all__ = ["BANDS", "CAPS", "RULES", "ReferenceJudge", "score_answer"]
