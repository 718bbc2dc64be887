"""`evaluate()` end to end on the offline judge, and the original library's `Agentic.run` facade."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from fair_forge_core.compat import Agentic
from fair_forge_core.evaluate import evaluate, evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.schemas import Dataset, EvaluationConfig, EvaluationResult
from fair_forge_core.stats import pass_at_k, pass_pow_k

ROOT = Path(__file__).resolve().parents[2]


def example(name: str) -> tuple[list[Dataset], EvaluationConfig]:
    body = json.loads((ROOT / "examples" / name).read_text())
    return [Dataset.model_validate(d) for d in body["datasets"]], EvaluationConfig.model_validate(body["config"])


def test_calculator_example_on_the_reference_judge() -> None:
    datasets, config = example("calculator.json")
    result = evaluate_sync(datasets, ReferenceJudge(), config)
    assert isinstance(result, EvaluationResult)
    agg = result.aggregated_metrics
    assert (agg.total_conversations, agg.fully_correct_conversations) == (2, 2)
    assert agg.pass_at_k == 1.0 and agg.interpretation == "reliable"
    first = result.per_conversation_metrics[0]
    assert first.tool_correctness_scores[0].overall_correctness == 1.0
    assert all(score >= 0.7 for score in first.correctness_scores)


def test_support_agents_example_is_consistent_with_its_own_conversations() -> None:
    datasets, config = example("support_agents.json")
    result = evaluate_sync(datasets, ReferenceJudge(), config)
    conversations = result.per_conversation_metrics
    agg = result.aggregated_metrics
    n, c = len(conversations), sum(1 for m in conversations if m.is_fully_correct)
    assert (agg.total_conversations, agg.fully_correct_conversations) == (n, c)
    assert 0 < c < n  # the example has failures as well as passes
    assert agg.statistical_mode == "bayesian" and agg.ci_level == 0.9
    assert agg.per_task is not None and agg.per_task.tasks == 4
    assert set(agg.by_assistant) == {"support_agent_v1", "support_agent_v2"}
    # Every failing conversation says why, turn by turn.
    for m in conversations:
        if not m.is_fully_correct:
            assert any(i.is_correct is False for i in m.interactions)


def test_async_and_sync_entry_points_agree() -> None:
    datasets, config = example("calculator.json")
    assert asyncio.run(evaluate(datasets, ReferenceJudge(), config)) == evaluate_sync(
        datasets, ReferenceJudge(), config
    )


class CalculatorRetriever:
    """A retriever in the original library's shape: a class with `load_dataset()`."""

    def load_dataset(self) -> list[Dataset]:
        return example("calculator.json")[0]


def test_agentic_run_facade_returns_per_conversation_metrics() -> None:
    metrics = Agentic.run(CalculatorRetriever, model=ReferenceJudge(), k=3, threshold=0.7)
    assert [m.session_id for m in metrics] == ["conversation_001", "conversation_002"]
    first = metrics[0]
    n, c = first.total_interactions, first.correct_interactions
    assert first.pass_at_k == pytest.approx(pass_at_k(n, c, 3))
    assert first.pass_pow_k == pytest.approx(pass_pow_k(n, c, 3))


def test_agentic_run_accepts_plain_dicts() -> None:
    body = json.loads((ROOT / "examples" / "calculator.json").read_text())
    metrics = Agentic.run(body["datasets"], model=ReferenceJudge(), k=1, statistical_mode="bayesian")
    assert metrics[0].pass_at_k_ci_low is not None


def test_the_original_entry_points_are_importable_from_the_package() -> None:
    from fair_forge_core import Agentic as PackageAgentic
    from fair_forge_core import pass_at_k as package_pass_at_k

    assert PackageAgentic is Agentic
    assert package_pass_at_k(3, 2, 3) == pass_at_k(3, 2, 3)
