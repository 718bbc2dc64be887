"""The checks unit (docs/checks.md): a plug-in check decides `is_fully_correct` and is recorded in
provenance; a judge's abstention is its type, not its words; a repeated turn gets the
result a check of its own gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fair_forge_core.checks import turn_verdict
from fair_forge_core.checks.answer import AnswerCheck
from fair_forge_core.checks.tools import ToolsCheck
from fair_forge_core.evaluate import run_sync
from fair_forge_core.judges.base import JudgeAbstained, JudgeCallError, judge_turn
from fair_forge_core.judges.judgement import TurnJudgement, first_cause
from fair_forge_core.judges.prompt import JudgeRequest
from fair_forge_core.schemas import CheckResult, Dataset, EvaluationConfig
from fair_forge_testing.builders import conversation, turn

ROOT = Path(__file__).resolve().parents[2]


def _result(outcome: str, required: bool) -> CheckResult:
    return CheckResult.model_validate(
        {
            "name": "x",
            "scope": "turn",
            "turn": 0,
            "outcome": outcome,
            "required": required,
            "score": None,
            "reason": "r",
            "cause": None,
            "detail": None,
        }
    )


def test_the_verdict_is_every_required_result_passed_and_none_unscored() -> None:
    assert turn_verdict([_result("passed", True), _result("failed", False)]) is True
    assert turn_verdict([_result("passed", True), _result("failed", True)]) is False
    assert turn_verdict([_result("failed", True), _result("unscored", True)]) is None
    assert turn_verdict([_result("passed", True), _result("unscored", False)]) is True


class _Declines:
    """A plug-in judge that abstains in words of its own."""

    def spec(self):  # type: ignore[no-untyped-def]
        raise AssertionError("not asked")

    async def judge(self, request, sample=0):  # type: ignore[no-untyped-def]
        raise JudgeAbstained("I will not grade medical advice")


def test_an_abstention_in_any_words_is_abstained_and_a_call_error_is_a_judge_error() -> None:
    request = JudgeRequest("q", "a", "g")
    judged = run_sync(judge_turn(_Declines(), request))  # type: ignore[arg-type]
    assert (judged.score, judged.cause) == (None, "abstained")
    assert JudgeCallError("boom").cause == "judge_error"
    assert first_cause(["judge_error", "abstained", "deadline"]) == "deadline"


def test_a_plug_in_check_in_one_file_decides_and_is_recorded() -> None:
    """fair_forge_testing/max_tool_calls_check.py, loaded by FAIR_FORGE_EXTRA_CHECKS in a fresh
    interpreter: at most 0 calls fails the calculator example's conversation that calls a tool."""
    script = """
import json, sys
from fair_forge_core.schemas import RunRequest
from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
request = json.load(open("examples/calculator.json"))
out = {}
for limit in (0, 99):
    request["config"] = {**request.get("config", {}), "checks": {"max_tool_calls": {"max_calls": limit}}}
    run = RunRequest.model_validate(request)
    result = evaluate_sync(run.datasets, ReferenceJudge(), run.config)
    m = result.per_conversation_metrics[0]
    own = [c.outcome for c in m.checks if c.name == "max_tool_calls"]
    out[limit] = [m.is_fully_correct, own, result.provenance.checks]
print(json.dumps(out))
"""
    env = {"FAIR_FORGE_EXTRA_CHECKS": "fair_forge_testing.max_tool_calls_check", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300, check=True
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["0"] == [False, ["failed"], {"max_tool_calls": {"max_calls": 0}}]
    assert out["99"] == [True, ["passed"], {"max_tool_calls": {"max_calls": 99}}]


def _attempts(answers: list[str]) -> list[Dataset]:
    """Attempts of one tool turn whose tool data are one object (as `sharing` makes them in a
    request), each with its answer; the calculator's result, 8, is in the first answer only."""
    first = Dataset.model_validate(
        conversation(
            "s0",
            [
                turn(
                    "t",
                    "What is 5 + 3?",
                    answers[0],
                    "8",
                    agentic={"tools_used": [{"tool_name": "calculator", "parameters": {"a": 5, "b": 3}, "result": 8}]},
                    ground_truth_agentic={
                        "expected_tools": [{"tool_name": "calculator", "parameters": {"a": 5, "b": 3}}]
                    },
                )
            ],
        )
    )
    batch = first.conversation[0]
    return [
        first.model_copy(
            update={"session_id": f"s{n}", "conversation": [batch.model_copy(update={"assistant": answer})]}
        )
        for n, answer in enumerate(answers)
    ]


def test_a_repeated_turn_gets_the_result_a_check_of_its_own_gives() -> None:
    # Once per evaluation (one check object): a repeat gets the first one's result, the same
    # object; a turn differing only in its answer (which the tool rubric's utilization reads)
    # gets its own. Every result is what a check that never saw the others gives.
    config = EvaluationConfig()
    eight = "8"
    attempts = _attempts([eight, eight, "I could not say"])
    judgement = TurnJudgement(score=0.9, reasoning="right")
    answer, tools = AnswerCheck.for_config(config), ToolsCheck.for_config(config)
    answered = [answer.check(d, [judgement]) for d in attempts]
    tooled = [tools.check(d, ()) for d in attempts]
    assert answered[0][0] is answered[1][0] is answered[2][0]
    assert tooled[0][0] is tooled[1][0] and tooled[0][0] != tooled[2][0]
    for d, a, t in zip(attempts, answered, tooled, strict=True):
        assert a == AnswerCheck.for_config(config).check(d, [judgement])
        assert t == ToolsCheck.for_config(config).check(d, ())
    assert answer.questions(attempts[0])[0] is answer.questions(attempts[1])[0]  # the same texts: one request
    assert answer.questions(attempts[0]) == AnswerCheck.for_config(config).questions(attempts[0])
    assert answer.questions(attempts[2]) != answer.questions(attempts[0])
    assert answer.check(attempts[0], [TurnJudgement(score=0.1, reasoning="wrong")])[0].outcome == "failed"
