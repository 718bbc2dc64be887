"""The judge protocol (`fair_forge_core.judges.base`, docs/reference/judges.md): a `Judge` passed
straight to `evaluate` decides the verdict and is recorded by its spec; the registry is keyed by
judge name; the panel and the cascade are `Judge`s, so they nest."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest

from fair_forge_core.evaluate import evaluate_sync, run_sync
from fair_forge_core.judges.base import (
    JudgeAbstained,
    JudgeCallError,
    JudgeSpec,
    judge_named,
    judge_turn,
    registration_for,
)
from fair_forge_core.judges.cascade import FAIL_AT, PASS_AT, CascadeJudge
from fair_forge_core.judges.goal import JudgeQuestion
from fair_forge_core.judges.judgement import TurnJudgement
from fair_forge_core.judges.panel import JudgePanel, Member
from fair_forge_core.judges.prompt import JudgeRequest
from fair_forge_core.judges.verdict import Verdict
from fair_forge_core.schemas import EvaluationConfig, JudgeVote
from fair_forge_testing.builders import conversation, datasets, turn


@dataclass
class SameWords:
    """A plug-in judge (no chat model anywhere): 1.0 when the answer holds every word of the
    ground truth (case folded), else the share of them it holds. Counts the judgements it gave."""

    calls: int = 0

    def spec(self) -> JudgeSpec:
        return JudgeSpec(kind="same-words", model="same-words-v1", offline=True, settings={"fold_case": True})

    async def judge(self, request: JudgeQuestion, sample: int = 0) -> Verdict:
        assert isinstance(request, JudgeRequest)
        self.calls += 1
        expected = set(request.ground_truth.lower().split())
        held = expected & set(request.answer.lower().split())
        return Verdict(score=len(held) / len(expected), reasoning=f"{len(held)} of {len(expected)} words")


def same_words_score(answer: str, ground_truth: str) -> float:
    """The test's own statement of `SameWords`'s rule, to compute the expected verdicts from."""
    expected = set(ground_truth.lower().split())
    return len(expected & set(answer.lower().split())) / len(expected)


def test_a_plug_in_judge_passed_to_evaluate_decides_and_is_recorded_by_its_spec() -> None:
    turns = {
        "right": ("What is the capital of France?", "The capital is Paris", "capital Paris"),
        "wrong": ("What is the capital of Spain?", "It is Lisbon", "capital Madrid"),
    }
    data = datasets(*(conversation(name, [turn(name, q, a, g)]) for name, (q, a, g) in turns.items()))
    judge = SameWords()
    config = EvaluationConfig(k=1, threshold=0.7)

    result = evaluate_sync(data, judge, config)

    expected = {name: same_words_score(a, g) >= config.threshold for name, (_, a, g) in turns.items()}
    assert expected == {"right": True, "wrong": False}  # the rule gives one of each
    assert {m.session_id: m.is_fully_correct for m in result.per_conversation_metrics} == expected
    assert judge.calls == 2  # asked itself, once a distinct turn: not a chat model's judge
    spec = judge.spec()
    class_path = f"{SameWords.__module__}.{SameWords.__qualname__}"
    identity_json = json.dumps(
        {
            "class_path": class_path,
            "kind": "same-words",
            "model": "same-words-v1",
            "offline": True,
            "reads": [],
            "settings": {"fold_case": True},
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    recorded = json.loads(result.model_dump_json())
    assert recorded["provenance"]["judges"] == [
        {
            "class_path": class_path,
            "model": spec.model,
            "identity": hashlib.sha256(identity_json.encode()).hexdigest(),
        }
    ]
    assert [m["is_fully_correct"] for m in recorded["per_conversation_metrics"]] == [True, False]
    assert recorded["aggregated_metrics"]["judge_usage"] is None  # no ledger: a Judge brings its own


@dataclass
class Declines:
    """A plug-in judge that abstains on every turn, in words of its own."""

    def spec(self) -> JudgeSpec:
        return JudgeSpec(kind="declines", model="declines")

    async def judge(self, request: JudgeQuestion, sample: int = 0) -> Verdict:
        raise JudgeAbstained("in its own words")


def test_a_plug_in_judge_that_abstains_gives_insufficient_evidence_not_an_error() -> None:
    data = datasets(conversation("a", [turn("q", "What is 2 + 2?", "4", "4")]))
    result = evaluate_sync(data, Declines(), EvaluationConfig(k=1))
    (metrics,) = result.per_conversation_metrics
    assert metrics.is_fully_correct is None
    (check,) = [c for c in metrics.checks or [] if c.name == "answer_correctness"]
    assert (check.outcome, check.cause) == ("unscored", "abstained")
    assert result.aggregated_metrics.readiness is not None
    assert result.aggregated_metrics.readiness.status == "insufficient_evidence"


def test_a_judge_passed_as_it_is_that_costs_money_cannot_be_capped_without_a_ledger() -> None:
    data = datasets(conversation("a", [turn("q", "What is 2 + 2?", "4", "4")]))
    with pytest.raises(ValueError, match="cannot cap the declines judge"):
        evaluate_sync(data, Declines(), EvaluationConfig(k=1, max_cost_usd=1.0))
    # An offline judge costs nothing: the cap holds without a ledger.
    capped = evaluate_sync(data, SameWords(), EvaluationConfig(k=1, max_cost_usd=1.0))
    assert capped.aggregated_metrics.total_conversations == 1


@dataclass
class Table:
    """A toy judge: the score its table gives the answer; an abstention for an answer not in it,
    and a judge error for an answer mapped to None."""

    name: str
    scores: dict[str, float | None]
    offline: bool = False
    asked: list[int] = field(default_factory=list)

    def spec(self) -> JudgeSpec:
        return JudgeSpec(kind="table", model=self.name, offline=self.offline)

    async def judge(self, request: JudgeQuestion, sample: int = 0) -> Verdict:
        assert isinstance(request, JudgeRequest)
        self.asked.append(sample)
        if request.answer not in self.scores:
            raise JudgeAbstained(f"{self.name} has no score for it")
        score = self.scores[request.answer]
        if score is None:
            raise JudgeCallError(f"{self.name} failed")
        return Verdict(score=score, reasoning=f"{self.name} says {score}")


def judged(judge: Any, answer: str) -> TurnJudgement:
    return run_sync(judge_turn(judge, JudgeRequest("q", answer, "g")))


def cascade_rule(offline: float | None, llm: float) -> tuple[float, str]:
    """judges/cascade.py's rule: the offline score when it scored and is decisive, else the LLM's."""
    if offline is not None and (offline >= PASS_AT or offline <= FAIL_AT):
        return offline, "offline"
    return llm, "llm"


OFFLINE = {"sure": 0.95, "wrong": 0.1, "hedge": 0.5}  # "unknown": it abstains
LLM = {"sure": 0.6, "wrong": 0.8, "hedge": 0.75, "unknown": 0.3}
OTHER = {"sure": 0.9, "wrong": 0.4, "hedge": 0.8, "unknown": 1.0}


@pytest.mark.parametrize("answer", ["sure", "wrong", "hedge", "unknown"])
def test_a_cascade_in_a_panel_is_one_member_with_one_vote(answer: str) -> None:
    cascade = CascadeJudge(offline=Table("rules", OFFLINE, offline=True), llm=Table("llm", LLM))
    panel = JudgePanel(
        members=[Member(cascade, "cascade"), Member(Table("other", OTHER), "other")],
        samples=1,
        vote="majority",
        threshold=0.7,
    )
    cascaded, _ = cascade_rule(OFFLINE.get(answer), LLM[answer])
    # panel.py: under "majority" the lower median of the members' scores, sorted(s)[(N - 1) // 2].
    scores = sorted([cascaded, OTHER[answer]])
    score = scores[(len(scores) - 1) // 2]
    agreeing = sum((s >= 0.7) == (score >= 0.7) for s in (cascaded, OTHER[answer]))
    judgement = judged(panel, answer)
    assert judgement.score == score
    assert judgement.votes == (
        JudgeVote(model="cascade", scores=[cascaded], score=cascaded, error=None),
        JudgeVote(model="other", scores=[OTHER[answer]], score=OTHER[answer], error=None),
    )
    assert judgement.agreement == agreeing / 2
    assert judgement.judged_by is None  # the panel decided; the cascade was one of its members
    nearest = "cascade" if abs(cascaded - score) <= abs(OTHER[answer] - score) else "other"
    assert judgement.reasoning is not None and judgement.reasoning.startswith(f"[{nearest}] ")


@pytest.mark.parametrize("answer", ["sure", "wrong", "hedge", "unknown"])
def test_a_panel_in_a_cascade_is_the_llm_stage_with_its_votes(answer: str) -> None:
    llm, other = Table("llm", LLM), Table("other", OTHER)
    panel = JudgePanel(members=[Member(llm, "llm"), Member(other, "other")], samples=3, vote="mean", threshold=0.7)
    cascade = CascadeJudge(offline=Table("rules", OFFLINE, offline=True), llm=panel)
    # panel.py under "mean": the exact mean of every judgement (3 samples of each member).
    panel_score = float((3 * Fraction(LLM[answer]) + 3 * Fraction(OTHER[answer])) / 6)
    score, stage = cascade_rule(OFFLINE.get(answer), panel_score)
    judgement = judged(cascade, answer)
    assert (judgement.score, judgement.judged_by) == (score, stage)
    if stage == "offline":
        assert judgement.votes is None and llm.asked == []  # settled: the panel is never asked
        assert (cascade.settled_offline, cascade.sent_to_llm) == (1, 0)
    else:
        assert judgement.votes == (
            JudgeVote(model="llm", scores=[LLM[answer]] * 3, score=LLM[answer], error=None),
            JudgeVote(model="other", scores=[OTHER[answer]] * 3, score=OTHER[answer], error=None),
        )
        assert sorted(llm.asked) == [0, 1, 2]  # each sample its own: a judge cache keeps them apart
        assert (cascade.settled_offline, cascade.sent_to_llm) == (0, 1)


def test_a_panel_that_fails_inside_a_cascade_is_unscored_with_its_cause_and_votes() -> None:
    # "unknown": the offline stage abstains, so the panel decides; one member fails, one abstains.
    panel = JudgePanel(
        members=[Member(Table("broken", {"unknown": None}), "broken"), Member(Table("shy", {}), "shy")],
        samples=1,
        vote="majority",
        threshold=0.7,
    )
    cascade = CascadeJudge(offline=Table("rules", OFFLINE, offline=True), llm=panel)
    judgement = judged(cascade, "unknown")
    assert (judgement.score, judgement.judged_by) == (None, "llm")
    # judgement.py: the first cause in CAUSE_PRECEDENCE (deadline, cost_cap, abstained, judge_error).
    assert judgement.cause == "abstained"
    assert judgement.error == (
        "a judgement of the panel failed: connector[0] (broken): broken failed; connector[1] (shy): shy has no score for it"
    )
    assert judgement.votes == (
        JudgeVote(model="broken", scores=[None], score=None, error="broken failed"),
        JudgeVote(model="shy", scores=[None], score=None, error="shy has no score for it"),
    )


def test_a_panel_asked_for_sample_s_asks_its_members_for_their_own_samples() -> None:
    # panel.py: asked for sample s, it asks members for samples s·N … s·N + N − 1.
    member = Table("m", {"a": 1.0})
    inner = JudgePanel(members=[Member(member, "m")], samples=2, vote="mean", threshold=0.7)
    outer = JudgePanel(members=[Member(inner, "inner")], samples=3, vote="mean", threshold=0.7)
    assert judged(outer, "a").score == 1.0
    assert sorted(member.asked) == [0, 1, 2, 3, 4, 5]


def test_the_registry_is_keyed_by_judge_name() -> None:
    import fair_forge_testing.length_judge as length
    from fair_forge_core.judges.kinds import judge_names
    from fair_forge_core.judges.reference import ReferenceJudge

    assert {"llm", "reference", "length"} <= set(judge_names())
    assert judge_named("length").factory is length.length_judge
    # The model class is one judge's argument: its class names the kind, the kind the factory.
    assert registration_for(length.LengthModel()) is judge_named("length")
    assert registration_for(ReferenceJudge()) is judge_named("reference")
    with pytest.raises(LookupError, match=r"no judge is registered as 'nope'; registered: .*length"):
        judge_named("nope")
