"""Several judgements of one turn: self-consistency (`config.judge_samples`) and ensembles
(`connector` as a list of up to three connectors).

Rule, per distinct judge request, with N = `config.judge_samples` and the connectors in
request order (the members):

- Each member judges the turn N times, concurrently (sample i > 0 has a judge cache entry
  of its own: `AnswerJudge.judge`).
- A member's score combines its N scores by `config.judge_vote`: "majority" takes the lower
  median, `sorted(scores)[(N - 1) // 2]`, which is ≥ the threshold exactly when a strict
  majority of the scores are (a tie fails); "mean" takes their mean, computed exactly (the
  mean of three 0.7s is 0.7, not 0.6999…, so it passes a threshold of 0.7).
- The turn's score: under "majority", the lower median of the members' scores, so each member
  has one vote however many samples it drew, and two members that disagree fail the turn;
  under "mean", the exact mean of every judgement of every member.
- Unscored stays unscored: when any judgement of any member fails (an error, an abstention
  of the offline judge, the deadline, the cost cap), the turn is unscored. Its error names
  each member that failed and the first reason; its votes still show every score that was
  given. No judgement is left out to reach a verdict.
- Agreement: the share of the turn's judgements (members × samples) that pass when the
  turn's score passes, or fail when it fails (None when the turn is unscored).
- Reasoning: that of the first judgement (member order, then sample order) whose score is
  nearest the turn's, prefixed with its model's name when there are several members.

The panel is a `Judge` (`judges.base`): its `judge(request, sample)` returns the turn's score
and reasoning as a `CombinedVerdict` whose detail holds the votes and the agreement, or, when
the turn is unscored, raises the `JudgeCallError` of its cause (`judges.base.unscored`: the
first of the failed judgements' causes in `judgement.CAUSE_PRECEDENCE`) with the votes as its
detail. So a panel can be another panel's member or a cascade's stage, and a member can be any
`Judge` (a cascade, another panel). Asked for sample s (as a member of a panel that samples),
it asks its members for samples s·N to s·N + N − 1, so that each of its judgements keeps a
judge cache entry of its own; asked once (s = 0), samples 0 to N − 1. A goal is passed on to
every member (its spec says it `reads` every kind), each of which `judges.base.ask` lets judge it
or makes its judgement an abstention.

At most `config.max_concurrency` turns are judged by the panel at once (each member's calls
are capped by its own limiter too), so that a large evaluation does not start every turn's
judgements together. `check_panel` refuses the panels that cannot judge as asked.
`consensus` summarises the votes of a whole result (`aggregated_metrics.judge_consensus`).
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from langchain_core.language_models.chat_models import BaseChatModel

from fair_forge_core.judges.base import (
    CombinedVerdict,
    Judge,
    JudgeCallError,
    JudgementDetail,
    JudgeProviderRefused,
    JudgeSpec,
    ask,
    unscored,
)
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import JudgementCause, first_cause
from fair_forge_core.judges.kinds import is_offline
from fair_forge_core.judges.question import EVERY_KIND
from fair_forge_core.judges.usage import judge_identity
from fair_forge_core.judges.verdict import Verdict
from fair_forge_core.schemas import (
    ConversationMetrics,
    EvaluationConfig,
    InteractionResult,
    JudgeConsensus,
    JudgeVote,
)

Vote = Literal["majority", "mean"]
Sample = tuple[float | None, str, JudgementCause | None]
"""One judgement of a panel's member: (score, reasoning, None), or (None, why it failed, its cause)."""


def combine(scores: Sequence[float], vote: Vote) -> float:
    """`scores` (at least one) as one score: their lower median ("majority"), or their mean
    ("mean") computed exactly and rounded once, so equal scores give that score."""
    if vote == "mean":
        return float(sum(map(Fraction, scores)) / len(scores))
    return sorted(scores)[(len(scores) - 1) // 2]


class PanelError(ValueError):
    """A panel that cannot judge as asked; `field` names the request field at fault."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def check_panel(models: Sequence[BaseChatModel | Judge], config: EvaluationConfig) -> None:
    """`PanelError` for an ensemble that is not what it says: two connectors that are the same
    judge (for chat models, the same `judge_identity`: class, model, sampling parameters,
    endpoint, a key not making another judge; for `Judge`s passed as they are, the same object,
    since a spec need not say everything that decides a verdict), or an offline judge (the
    registry's say for a chat model, its `JudgeSpec.offline` for a `Judge`) in an ensemble under
    `config.judge_cascade` (the cascade sends the panel exactly the turns the offline judge could
    not settle, on which it would abstain or hedge again, leaving them unscored or half-judged)."""
    if len(models) < 2:
        return
    identities: list[object] = [
        judge_identity(model, config) if isinstance(model, BaseChatModel) else id(model) for model in models
    ]
    for i, identity in enumerate(identities):
        if identity in identities[:i]:
            j = identities.index(identity)
            raise PanelError(
                f"connector[{i}] is the same judge as connector[{j}] (class, model, sampling parameters and "
                "endpoint): to judge each turn several times with one judge, set config.judge_samples",
                "connector",
            )
    offline = [is_offline(model) if isinstance(model, BaseChatModel) else model.spec().offline for model in models]
    if config.judge_cascade and any(offline):
        raise PanelError(
            "config.judge_cascade asks the offline judge first and sends the connectors only the turns it "
            "cannot settle: leave the offline judge out of the connectors, or set config.judge_cascade to false",
            "config.judge_cascade",
        )


@dataclass(frozen=True)
class Member:
    """One connector of the panel: its judge (any `Judge`) and the model name its votes carry."""

    judge: Judge
    model: str


@dataclass
class JudgePanel:
    """Judges each turn `samples` times with each of `members` (module docstring)."""

    members: Sequence[Member]
    samples: int
    vote: Vote
    threshold: float
    turns_at_once: int = 8
    _turns: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self._turns = asyncio.Semaphore(self.turns_at_once)

    @classmethod
    def for_config(cls, members: Sequence[Member], config: EvaluationConfig) -> JudgePanel:
        return cls(
            members=members,
            samples=config.judge_samples,
            vote=config.judge_vote,
            threshold=config.threshold,
            turns_at_once=config.max_concurrency,
        )

    def spec(self) -> JudgeSpec:
        """Kind "panel", named by its members' models joined by " + "; offline when every member
        is; it `reads` every kind (it passes each question on: module docstring); its settings are its
        samples, vote and threshold and its members' specs, in order."""
        specs = [member.judge.spec() for member in self.members]
        return JudgeSpec(
            kind="panel",
            model=" + ".join(member.model for member in self.members),
            offline=all(spec.offline for spec in specs),
            reads=frozenset({EVERY_KIND}),
            settings={
                "samples": self.samples,
                "vote": self.vote,
                "threshold": self.threshold,
                "members": [spec.as_json() for spec in specs],
            },
        )

    async def judge(self, request: JudgeQuestion, sample: int = 0) -> Verdict:
        """The turn's combined verdict, with every member's vote (module docstring), or the
        `JudgeCallError` of the first cause when any judgement failed, the votes its detail.
        `JudgeProviderRefused` from any call propagates (the evaluation stops), as itself, not
        in an exception group."""
        first = sample * self.samples
        async with self._turns:
            try:
                async with asyncio.TaskGroup() as group:
                    tasks = [
                        [group.create_task(self._sample(member, request, first + i)) for i in range(self.samples)]
                        for member in self.members
                    ]
            except* JudgeProviderRefused as refused:
                raise refused.exceptions[0] from None
        outcomes = [[task.result() for task in member_tasks] for member_tasks in tasks]
        votes = tuple(
            self._member_vote(member, results) for member, results in zip(self.members, outcomes, strict=True)
        )
        failed = [(i, vote) for i, vote in enumerate(votes) if vote.score is None]
        if failed:
            where = "; ".join(f"connector[{i}] ({vote.model}): {vote.error}" for i, vote in failed)
            causes = [cause for results in outcomes for score, _, cause in results if cause is not None]
            raise unscored(
                first_cause(causes), f"a judgement of the panel failed: {where}", JudgementDetail(votes=votes)
            )
        judgements = [
            (i, s, reasoning) for i, results in enumerate(outcomes) for s, reasoning, _ in results if s is not None
        ]
        if self.vote == "mean":
            score = combine([s for _, s, _ in judgements], "mean")
        else:
            score = combine([vote.score for vote in votes if vote.score is not None], "majority")
        # A judgement's side is the question's: a turn's, of the threshold; a goal's, achieved or not.
        passed = request.passes(score, self.threshold)
        agreeing = sum(1 for _, s, _ in judgements if request.passes(s, self.threshold) == passed)
        nearest, _, reasoning = min(judgements, key=lambda j: abs(j[1] - score))
        if len(self.members) > 1:
            reasoning = f"[{self.members[nearest].model}] {reasoning}"
        detail = JudgementDetail(votes=votes, agreement=agreeing / len(judgements))
        return CombinedVerdict(score=score, reasoning=reasoning, detail=detail)

    async def _sample(self, member: Member, request: JudgeQuestion, sample: int) -> Sample:
        """One judgement: (score, reasoning, None), or (None, the reason it failed, its cause)."""
        try:
            verdict = await ask(member.judge, request, sample)
        except JudgeCallError as exc:
            return None, str(exc), exc.cause
        return verdict.score, verdict.reasoning, None

    def _member_vote(self, member: Member, results: list[Sample]) -> JudgeVote:
        scores = [score for score, _, _ in results]
        error = next((text for score, text, _ in results if score is None), None)
        combined = None if error is not None else combine([s for s in scores if s is not None], self.vote)
        return JudgeVote(model=member.model, scores=scores, score=combined, error=error)


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def _unanimous(scores: Sequence[float | None], threshold: float) -> bool:
    """Whether `scores` all pass or all fail (a missing score counts as failing)."""
    return len({score is not None and score >= threshold for score in scores}) == 1


def _member_consistency(turns: Sequence[InteractionResult], members: int, threshold: float) -> list[float | None]:
    """Per member, the share of the turns it scored where its samples were unanimous."""
    rates: list[float | None] = []
    for i in range(members):
        scored = [t.judge_votes[i] for t in turns if t.judge_votes and t.judge_votes[i].score is not None]
        rates.append(_share(sum(_unanimous(v.scores, threshold) for v in scored), len(scored)))
    return rates


def _unscored_by_member(turns: Sequence[InteractionResult], members: int) -> list[int]:
    """Per member, the turns where one of its judgements failed."""
    return [sum(1 for t in turns if t.judge_votes and t.judge_votes[i].score is None) for i in range(members)]


def consensus(conversations: Sequence[ConversationMetrics], config: EvaluationConfig) -> JudgeConsensus | None:
    """`aggregated_metrics.judge_consensus` of a result: its turns' `judge_votes` summarised
    (`JudgeConsensus` states every count). None when no turn carries votes."""
    turns = [
        turn
        for conversation in conversations
        for turn in conversation.interactions or []
        if turn.judge_votes is not None
    ]
    if not turns:
        return None
    threshold = config.threshold
    members = [vote.model for vote in turns[0].judge_votes or []]
    scored = [turn for turn in turns if turn.answer_score is not None]
    several_samples = config.judge_samples > 1
    every_sample_agrees = sum(
        all(_unanimous(vote.scores, threshold) for vote in turn.judge_votes or []) for turn in scored
    )
    members_agree = sum(_unanimous([vote.score for vote in turn.judge_votes or []], threshold) for turn in scored)
    agreements = [turn.judge_agreement for turn in scored if turn.judge_agreement is not None]
    return JudgeConsensus(
        members=members,
        samples=config.judge_samples,
        vote=config.judge_vote,
        turns=len(turns),
        scored_turns=len(scored),
        unscored_turns=len(turns) - len(scored),
        unscored_by_member=_unscored_by_member(turns, len(members)),
        consistency_rate=_share(every_sample_agrees, len(scored)) if several_samples else None,
        member_consistency=_member_consistency(turns, len(members), threshold) if several_samples else None,
        agreement_rate=_share(members_agree, len(scored)) if len(members) > 1 else None,
        mean_agreement=statistics.fmean(agreements) if agreements else None,
    )
