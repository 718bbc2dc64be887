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

The cascade is a `Judge` (`judges.base`), so it can be a panel's member and a panel its stage:
`judge(request, sample)` asks the offline stage for that sample and, unless its verdict is
decisive, the LLM stage for the same sample. Its verdict is the deciding stage's, as a
`CombinedVerdict` whose detail keeps the stage's own (a panel's votes) and says which stage
decided (`judged_by`: "offline" or "llm"); an LLM stage that leaves the turn unscored raises
its `JudgeCallError` on, its detail saying `judged_by` "llm" too. A goal is passed on to
the stages (the cascade's spec says it `reads` every kind), each of which `judges.base.ask` lets judge
it or makes its judgement an abstention: the offline judge's sends it on, the LLM stage's is the
goal's judgement.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from fair_forge_core.judges.base import CombinedVerdict, Judge, JudgeCallError, JudgeSpec, ask, detail_of
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.question import EVERY_KIND
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

    `settled_offline` and `sent_to_llm` count the judgements it gave (the distinct judge
    requests, when it is the evaluation's judge, asked once per request); each judgement says
    which judge decided it (`TurnJudgement.judged_by`).
    """

    offline: Judge
    llm: Judge
    settled_offline: int = 0
    sent_to_llm: int = 0

    def spec(self) -> JudgeSpec:
        """Kind "cascade", named by its LLM stage's model; offline when both stages are; it
        `reads` every kind (it passes each question on: module docstring); its settings are its bounds and
        both stages' specs."""
        offline, llm = self.offline.spec(), self.llm.spec()
        return JudgeSpec(
            kind="cascade",
            model=llm.model,
            offline=offline.offline and llm.offline,
            reads=frozenset({EVERY_KIND}),
            settings={"pass_at": PASS_AT, "fail_at": FAIL_AT, "offline": offline.as_json(), "llm": llm.as_json()},
        )

    async def judge(self, request: JudgeQuestion, sample: int = 0) -> Verdict:
        """The offline verdict when decisive, else the LLM stage's verdict or error (module docstring)."""
        try:
            verdict: Verdict | None = await ask(self.offline, request, sample)
        except JudgeCallError:
            verdict = None
        if verdict is not None and is_decisive(verdict.score):
            self.settled_offline += 1
            return _decided_by(verdict, "offline")
        self.sent_to_llm += 1
        try:
            return _decided_by(await ask(self.llm, request, sample), "llm")
        except JudgeCallError as exc:
            exc.detail = dataclasses.replace(detail_of(exc), judged_by="llm")
            raise


def _decided_by(verdict: Verdict, stage: Literal["offline", "llm"]) -> CombinedVerdict:
    """`verdict` as the cascade's: its score, reasoning and detail, and the `stage` that decided."""
    detail = dataclasses.replace(detail_of(verdict), judged_by=stage)
    return CombinedVerdict(score=verdict.score, reasoning=verdict.reasoning, detail=detail)
