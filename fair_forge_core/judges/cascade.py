"""The judge cascade (`config.judge_cascade`): the offline judge settles the turns it is sure of,
the request's LLM judge scores the rest.

Rule, per distinct judge request: the offline judge (`judges.offline.RulesJudge`, the judge of a
`ReferenceJudge` connector, so its verdict is exactly the one it gives as a connector) scores
the turn first.
The turn is **settled offline** when that judge scored it (did not abstain, no other
`JudgeCallError`) and the score is decisive: ≥ `PASS_AT` (0.9) or ≤ `FAIL_AT` (0.2). Every
other turn (an abstention, a score strictly between 0.2 and 0.9) is **sent to the LLM** judge,
whose verdict or error is the turn's. The bounds: on the held-out labelled pairs
(`tests/data/judge_labels`) the offline judge's scores ≥ 0.9 agree with the human label on
46 of 47 turns (one false pass), its scores ≤ 0.2 on 39 of 46 (seven false fails), while its
scores in between are the partial-credit bands and caps (typos, hedges, missing facts), where it
is least reliable, and an abstention is no verdict at all.

When the request's only judge is itself offline (`JudgeSpec.offline`) the cascade is not built
(`evaluate`): both stages would be the same judge. The LLM stage may be a panel (`judges.panel`: samples,
an ensemble); the offline stage judges once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from fair_forge_core.judges.base import Judge, TurnJudge, ask
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.judges.llm import JudgeCallError
from fair_forge_core.judges.verdict import Verdict

PASS_AT = 0.9
"""An offline score ≥ this is a decisive pass."""
FAIL_AT = 0.2
"""An offline score ≤ this is a decisive fail."""


def is_decisive(score: float) -> bool:
    """Whether an offline score settles the turn: ≥ `PASS_AT` or ≤ `FAIL_AT`."""
    return score >= PASS_AT or score <= FAIL_AT


@dataclass
class CascadeJudge:
    """`offline` first, `llm` for every turn `offline` does not settle (module docstring).

    `settled_offline` and `sent_to_llm` count distinct judge requests; each judgement says
    which judge decided it (`TurnJudgement.judged_by`).
    """

    offline: Judge
    llm: TurnJudge
    settled_offline: int = 0
    sent_to_llm: int = 0

    async def judge_turn(self, request: JudgeQuestion) -> TurnJudgement:
        """The offline verdict when decisive, else the LLM judge's judgement (scored or not)."""
        try:
            verdict: Verdict | None = await ask(self.offline, request)
        except JudgeCallError:
            verdict = None
        if verdict is not None and is_decisive(verdict.score):
            self.settled_offline += 1
            return TurnJudgement(score=verdict.score, reasoning=verdict.reasoning, judged_by="offline")
        self.sent_to_llm += 1
        return dataclasses.replace(await self.llm.judge_turn(request), judged_by="llm")
