"""The judge as a concept of its own: the registry, the offline rules judge, and a new judge added in
one file (`fair_forge_testing/length_judge.py`) used from `POST /run` and the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.judges.base import JudgeTelemetry, RetryPolicy, RunContext, model_class_path
from fair_forge_core.judges.kinds import REFERENCE_JUDGE_CLASS, is_offline, judge_for, registration_for
from fair_forge_core.judges.llm import AnswerJudge, JudgeCallError
from fair_forge_core.judges.offline import RulesJudge
from fair_forge_core.judges.prompt import JudgeRequest
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.builders import conversation, turn
from fair_forge_testing.handler_client import call_handler
from fair_forge_testing.jobs_support import GarblingJudge
from tests.cli.test_cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
LABELLED = [
    ROOT / "tests/data/judge_labels/pairs.jsonl",
    ROOT / "tests/data/judge_labels/fresh.jsonl",
    ROOT / "tests/data/judge_agreement.jsonl",
    ROOT / "examples/calibration/starter.jsonl",
]


def context() -> RunContext:
    return RunContext(retry=RetryPolicy(), telemetry=JudgeTelemetry())


def test_the_registry_gives_each_chat_model_its_judge() -> None:
    config = EvaluationConfig()
    assert isinstance(judge_for(ReferenceJudge(), config, context()), RulesJudge)
    assert registration_for(ReferenceJudge()).kind == "reference" and is_offline(ReferenceJudge())
    # A subclass is another chat model: judged through the LLM path, as its own replies say.
    garbling = judge_for(GarblingJudge(), config, context())
    assert isinstance(garbling, AnswerJudge) and not is_offline(GarblingJudge())
    assert garbling.spec().kind == "llm" and judge_for(ReferenceJudge(), config, context()).spec().offline


def outcome(judge: Any, request: JudgeRequest) -> tuple[float | None, str]:
    try:
        verdict = asyncio.run(judge.judge(request))
    except JudgeCallError as exc:
        return None, str(exc)
    return verdict.score, verdict.reasoning


def test_the_offline_judge_is_registered_under_the_reference_judges_own_class_path() -> None:
    # `judges.kinds` registers it by path, so that `judges.offline` loads only when used (#27):
    # a moved or renamed class must fail here, not fall through to the LLM judge.
    assert model_class_path(ReferenceJudge) == REFERENCE_JUDGE_CLASS


@pytest.mark.parametrize("path", LABELLED, ids=lambda p: p.name)
@pytest.mark.parametrize("structured", [False, True])
def test_the_rules_judge_gives_the_chat_models_verdicts_on_every_labelled_pair(path: Path, structured: bool) -> None:
    # The old path: ReferenceJudge asked as a chat model (prompt written, read back, JSON parsed).
    config = EvaluationConfig(use_structured_output=structured)
    through_prompt = AnswerJudge(model=ReferenceJudge(), config=config)
    rules = RulesJudge(config=config, context=context())
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(pairs) >= 50
    for pair in pairs:
        request = JudgeRequest(pair["query"], pair["answer"], pair["ground_truth"])
        assert outcome(rules, request) == outcome(through_prompt, request), pair


def test_a_judge_in_one_file_is_used_from_the_service_and_the_cli(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The operator admits the model class; nothing else in the project knows of the new judge.
    monkeypatch.setenv("FAIR_FORGE_EXTRA_CONNECTORS", "fair_forge_testing.length_judge.LengthModel")
    body = {
        "connector": {"class_path": "fair_forge_testing.length_judge.LengthModel"},
        "datasets": [
            conversation("a", [turn("q1", "Name a colour.", "Red", "Tan")]),  # same length: 1.0
            conversation("b", [turn("q2", "Name a colour.", "Turquoise", "Blue")]),  # 4 vs 9 letters
        ],
        "config": {"k": 1},
    }
    response = call_handler(body)
    assert response.status == 200, response.body
    scores = [m["correctness_scores"][0] for m in response.body["per_conversation_metrics"]]
    assert scores == [1.0, pytest.approx(4 / 9)]
    assert response.body["provenance"]["judges"][0]["model"] == "length"
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    process = run_cli("evaluate", request, "--out", tmp_path / "out.json", "--allow-unscored")
    assert process.returncode == 0, process.stderr
    cli_scores = [
        m["correctness_scores"][0] for m in json.loads((tmp_path / "out.json").read_text())["per_conversation_metrics"]
    ]
    assert cli_scores == scores


def test_a_judge_of_turns_abstains_on_goals_in_every_combination(monkeypatch: pytest.MonkeyPatch) -> None:
    # A plug-in judge written for turns (its spec says nothing of goals) is never sent a goal:
    # alone, in an ensemble and as the cascade's offline stage, the goal is an abstention.
    monkeypatch.setenv("FAIR_FORGE_EXTRA_CONNECTORS", "fair_forge_testing.length_judge.LengthModel")
    length = {"class_path": "fair_forge_testing.length_judge.LengthModel"}
    reference = {"class_path": "fair_forge_core.judges.ReferenceJudge"}
    goal = {**conversation("a", [turn("q1", "Name a colour.", "Red", "Tan")]), "goal": "a colour is named"}
    expected = {
        "length": "the judge length cannot decide a conversation's goal",
        "ensemble": "a judgement of the panel failed: connector[0] (length): the judge length cannot decide",
    }
    for name, connector in (("length", length), ("ensemble", [length, reference])):
        response = call_handler({"connector": connector, "datasets": [goal], "config": {"k": 1}})
        assert response.status == 200, response.body
        check = response.body["per_conversation_metrics"][0]["goal_check"]
        assert check["goal_achieved"] is None and check["error"].startswith(expected[name])
        assert "abstained" in response.body["aggregated_metrics"]["readiness"]["summary"]


def test_the_public_api_evaluates_renders_and_compares() -> None:
    import fair_forge_core as ff
    from fair_forge_core.schemas import Dataset

    datasets = [Dataset.model_validate(conversation("a", [turn("q1", "What is 2 + 2?", "4", "4")], task_id="t"))]
    result = ff.evaluate_sync(datasets, ff.ReferenceJudge(), ff.EvaluationConfig(k=1))
    assert isinstance(result, ff.EvaluationResult) and result.aggregated_metrics.pass_at_k == 1.0
    assert "<html" in ff.render_html(result)
    comparison = ff.compare([("t", True)], [("t", False)], k=1)
    assert comparison.metrics[0].difference == -1.0
    from fair_forge_core import compare  # the same callable, whether the subpackage was imported first or not

    assert compare([("t", False)], [("t", True)], k=1).metrics[0].difference == 1.0
    assert compare.holm_adjust([0.01, 0.04]) == [0.02, 0.04]
    assert set(ff.__all__) >= {"evaluate", "EvaluationConfig", "datasets_from_traces", "render_html", "Judge"}
    assert callable(ff.register_judge) and ff.JudgeSpec(kind="x", model="y").offline is False


def test_a_plug_in_judge_that_abstains_in_its_own_words_gives_insufficient_evidence_not_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Issue #34: abstention was recognised by the offline judge's wording; a plug-in judge raising
    # JudgeAbstained in other words made the service answer 502 and the CLI exit 3.
    from fair_forge_testing.declining_judge import DECLINED

    monkeypatch.setenv("FAIR_FORGE_EXTRA_CONNECTORS", "fair_forge_testing.declining_judge.DecliningModel")
    body = {
        "connector": {"class_path": "fair_forge_testing.declining_judge.DecliningModel"},
        "datasets": [
            conversation("a", [turn("q1", "What dose of ibuprofen is safe?", "400 mg", "200-400 mg")]),
            conversation("b", [turn("q2", "What is the maximum daily dose?", "1200 mg", "1200 mg")]),
        ],
        "config": {"k": 1},
    }
    response = call_handler(body)
    assert response.status == 200, response.body
    readiness = response.body["aggregated_metrics"]["readiness"]
    assert readiness["status"] == "insufficient_evidence", readiness
    for metrics in response.body["per_conversation_metrics"]:
        assert metrics["is_scored"] is False
        [answer] = [r for r in metrics["checks"] if r["name"] == "answer_correctness"]
        assert (answer["outcome"], answer["cause"]) == ("unscored", "abstained")
        assert DECLINED in answer["reason"]
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    process = run_cli("evaluate", request, "--out", tmp_path / "out.json", "--allow-unscored")
    assert process.returncode == 0, process.stderr
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["aggregated_metrics"]["readiness"]["status"] == "insufficient_evidence"
