"""`evaluate()` end to end on the offline judge, and the original library's `Agentic.run` facade."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from fair_forge_core.compat import Agentic, BayesianMode, FrequentistMode
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
    assert agg.per_task is not None and agg.per_task.tasks == 8  # 4 task_ids, each attempted by both assistants
    assert all(m.per_task is not None and m.per_task.tasks == 4 for m in (agg.by_assistant or {}).values())
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


# --------------------------------------------------------------------------- migration from alquimia-fair-forge


def original_dump(datasets: list[dict]) -> list[dict]:
    """Datasets as the original's `Dataset.model_dump()` writes them: every turn carries its
    defaults `logprobs: {}`, `weight: None`, `observation: None`, `agentic: {}` and
    `ground_truth_agentic: {}` unless set, and `language` may be None."""
    dumped = []
    for dataset in datasets:
        turns = [
            {"logprobs": {}, "weight": None, "observation": None, "agentic": {}, "ground_truth_agentic": {}, **t}
            for t in dataset["conversation"]
        ]
        dumped.append({"language": None, "context": "", **dataset, "conversation": turns})
    return dumped


class PayloadRetriever:
    """The original Lambda example's retriever: takes the payload, no `super().__init__`."""

    def __init__(self, payload: dict) -> None:
        self.payload = payload

    def load_dataset(self) -> list[Dataset]:
        return [Dataset.model_validate(d) for d in self.payload.get("datasets", [])]


def test_datasets_serialised_by_the_original_are_accepted_with_one_warning() -> None:
    body = json.loads((ROOT / "examples" / "calculator.json").read_text())
    datasets = [Dataset.model_validate(d) for d in original_dump(body["datasets"])]
    assert all(d.language == "english" for d in datasets)
    result = evaluate_sync(datasets, ReferenceJudge(), EvaluationConfig())
    migration = [w for w in result.warnings if "alquimia-fair-forge" in w]
    assert migration == [
        "per-turn logprobs and weight (alquimia-fair-forge fields) accepted and ignored: they play no part in any score"
    ]
    # `ground_truth_agentic: {}` on the turns that had none is "not evaluated", not "no tool expected".
    plain = evaluate_sync([Dataset.model_validate(d) for d in body["datasets"]], ReferenceJudge(), EvaluationConfig())
    assert result.aggregated_metrics == plain.aggregated_metrics


def test_agentic_run_takes_the_original_lambda_call_shape() -> None:
    # Word for word the call of alquimia-fair-forge's examples/agentic/aws-lambda/run.py.
    payload = {"datasets": original_dump(json.loads((ROOT / "examples" / "calculator.json").read_text())["datasets"])}
    config: dict = {}
    with pytest.warns(UserWarning, match=r"per-turn logprobs and weight \(alquimia-fair-forge fields\)"):
        metrics = Agentic.run(
            lambda: PayloadRetriever(payload),
            model=ReferenceJudge(),
            k=3,
            threshold=config.get("threshold", 0.7),
            tool_threshold=config.get("tool_threshold", 1.0),
            tool_weights=config.get("tool_weights"),
            use_structured_output=config.get("use_structured_output", True),
            verbose=config.get("verbose", False),
        )
    assert [m.session_id for m in metrics] == ["conversation_001", "conversation_002"]
    assert all(m.pass_at_k_ci_low is None for m in metrics)


def test_agentic_run_passes_other_keyword_arguments_to_the_retriever() -> None:
    body = json.loads((ROOT / "examples" / "calculator.json").read_text())
    metrics = Agentic.run(PayloadRetriever, 1, model=ReferenceJudge(), payload=body, strict=True)
    assert len(metrics) == 2


def test_agentic_run_takes_the_originals_statistical_mode_objects() -> None:
    from scipy.stats import beta

    body = json.loads((ROOT / "examples" / "calculator.json").read_text())
    bayesian = BayesianMode(mc_samples=100, ci_level=0.9, beta_prior_a=2.0, beta_prior_b=3.0, rng_seed=None)
    metrics = Agentic.run(body["datasets"], model=ReferenceJudge(), k=2, statistical_mode=bayesian)
    for m in metrics:
        n, c = m.total_interactions, m.correct_interactions
        low = beta.ppf(0.05, 2.0 + c, 3.0 + n - c)  # independent of our betaincinv path
        assert m.pass_pow_k_ci_low == pytest.approx(low**2, rel=1e-9)
    frequentist = Agentic.run(body["datasets"], model=ReferenceJudge(), k=2, statistical_mode=FrequentistMode())
    assert all(m.pass_at_k_ci_low is None for m in frequentist)
