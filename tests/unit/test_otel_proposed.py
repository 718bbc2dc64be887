"""`otel_events.evaluation_events(..., proposed=...)`: the proposed attributes, and the default
events unchanged by them.

The golden files in tests/data/otel_events/ were produced by commit 9b0db4d, before the switch
existed: for each of `goal`, `tool_policy` (examples/*.json) and `otel_traces` (the OpenTelemetry
trace example through the `otel` importer), the result of `evaluate_sync` with the offline
`ReferenceJudge` (`<name>.result.json`), its datasets (`<name>.datasets.json`), and the OTLP JSON
of `otlp_logs_json(evaluation_events(result, datasets), NOW)` as the CLI serialises it
(`cli.common.json_dump`, `<name>.events.json`). The default path must still give those bytes.

The proposed attributes' names are copied from the proposals, not from the module:
open-telemetry/semantic-conventions-genai PR #359 (its changelog fragment `changelog.d/79.enhancement.md`:
`evaluator.id`, `evaluator.version`, `evaluator.type`, `reference_set.id` under `gen_ai.evaluation.`;
`evaluator.type` values `llm_judge`, `deterministic`), issue #79 / #422 (`test.suite.run.id`,
`test.case.id`), and core semantic-conventions `model/test/registry.yaml` (`test.suite.name`,
`test.case.result.status` with the members `pass` and `fail`). Their values are derived here from
the request and the result by the rules of docs/how-to/otel-events.md, not read from the events.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core import __version__
from fair_forge_core.cli.common import json_dump
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.otel_events import evaluation_events, otlp_logs_json, proposed_run
from fair_forge_core.provenance import datasets_hash, judge_provenance
from fair_forge_core.schemas import Dataset, EvaluationConfig, EvaluationResult, JudgeProvenance

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "otel_events"
NAMES = ["goal", "tool_policy", "otel_traces"]
NOW = 1_764_126_000_123_456_789  # the time the golden files were written with
GOLDEN_VERSION = "0.1.0"  # the package version in their resource and scope

EVALUATOR = {
    "gen_ai.evaluation.evaluator.id",
    "gen_ai.evaluation.evaluator.version",
    "gen_ai.evaluation.evaluator.type",
    "gen_ai.evaluation.reference_set.id",
}
GROUPING = {"test.suite.run.id", "test.suite.name", "test.case.id", "test.case.result.status"}
PROPOSED = EVALUATOR | GROUPING
# the checks that ask the judge a question (docs/checks.md): the others decide by rules
JUDGED = {"answer_correctness", "goal", "criteria"}
AN_LLM = "langchain_openai.chat_models.base.ChatOpenAI"  # a chat model class no registration names


def stored(name: str) -> tuple[EvaluationResult, list[Dataset]]:
    result = EvaluationResult.model_validate_json((GOLDEN / f"{name}.result.json").read_text())
    datasets = [Dataset.model_validate(d) for d in json.loads((GOLDEN / f"{name}.datasets.json").read_text())]
    return result, datasets


def config_of(name: str) -> EvaluationConfig:
    """The request's config: the example's own, the default for the trace import (as `convert` writes)."""
    if name == "otel_traces":
        return EvaluationConfig()
    return EvaluationConfig.model_validate(json.loads((ROOT / "examples" / f"{name}.json").read_text())["config"])


def golden_bytes(name: str) -> str:
    # the package version is the only thing of the file that is not the events' own
    return (GOLDEN / f"{name}.events.json").read_text().replace(f'"{GOLDEN_VERSION}"', json.dumps(__version__))


@pytest.mark.parametrize("name", NAMES)
def test_without_the_switch_the_events_are_the_bytes_9b0db4d_wrote(name: str) -> None:
    result, datasets = stored(name)
    assert json_dump(otlp_logs_json(evaluation_events(result, datasets), NOW)) == golden_bytes(name)
    assert json_dump(otlp_logs_json(evaluation_events(result, datasets, proposed=None), NOW)) == golden_bytes(name)


@pytest.mark.parametrize("name", NAMES)
def test_the_switch_adds_only_the_proposed_attributes_after_the_others(name: str) -> None:
    result, datasets = stored(name)
    plain = evaluation_events(result, datasets)
    proposed = evaluation_events(result, datasets, proposed=proposed_run("r", config_of(name), datasets))
    assert len(plain) == len(proposed) > 0
    for before, after in zip(plain, proposed, strict=True):
        keys = list(after.attributes)
        assert keys[: len(before.attributes)] == list(before.attributes)  # the others first, in their order
        assert set(keys[len(before.attributes) :]) <= PROPOSED
        assert {k: after.attributes[k] for k in before.attributes} == before.attributes
        assert (after.name, after.trace_id, after.span_id) == (before.name, before.trace_id, before.span_id)


def expected_proposed(
    result: EvaluationResult, datasets: list[Dataset], run_id: str, judge_id: str, judge_type: str
) -> list[dict[str, Any]]:
    """The proposed attributes of each event, in the events' order (turn results, then the
    conversation's), by the documented rules, from the result's conversations and the request."""
    expected = []
    for metrics in result.per_conversation_metrics:
        for check in metrics.checks:
            judged = check.name in JUDGED
            attributes: dict[str, Any] = {
                "gen_ai.evaluation.evaluator.id": judge_id if judged else check.name,
                "gen_ai.evaluation.evaluator.type": judge_type if judged else "deterministic",
                "gen_ai.evaluation.evaluator.version": __version__,
                "gen_ai.evaluation.reference_set.id": datasets_hash(datasets),
                "test.suite.run.id": run_id,
                "test.suite.name": metrics.assistant_id,
                "test.case.id": metrics.task_id or metrics.session_id,
            }
            if metrics.is_scored:
                attributes["test.case.result.status"] = "pass" if metrics.is_fully_correct else "fail"
            expected.append(attributes)
    return expected


def proposed_part(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The proposed attributes of each record of an OTLP JSON payload, as plain values."""
    records = [r for rl in payload["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]
    parts = []
    for record in records:
        values = {a["key"]: a["value"] for a in record["attributes"] if a["key"] in PROPOSED}
        assert all(set(v) == {"stringValue"} for v in values.values())  # every proposed attribute is a string
        parts.append({k: v["stringValue"] for k, v in values.items()})
    return parts


@pytest.mark.parametrize("name", NAMES)
def test_the_offline_judge_is_a_deterministic_evaluator_named_by_its_identity(name: str) -> None:
    result, datasets = stored(name)
    identity = judge_provenance(ReferenceJudge(), config_of(name)).identity
    run = proposed_run("run-7", config_of(name), datasets)
    payload = otlp_logs_json(evaluation_events(result, datasets, proposed=run), NOW)
    assert proposed_part(payload) == expected_proposed(result, datasets, "run-7", identity, "deterministic")


def test_an_llm_judge_is_an_llm_judge_and_an_ensemble_is_named_by_its_identities() -> None:
    result, datasets = stored("goal")
    assert result.provenance is not None
    run = proposed_run("run-8", config_of("goal"), datasets)
    one = JudgeProvenance(class_path=AN_LLM, model="gpt-x", identity="a" * 64)
    single = result.model_copy(update={"provenance": result.provenance.model_copy(update={"judges": [one]})})
    payload = otlp_logs_json(evaluation_events(single, datasets, proposed=run), NOW)
    assert proposed_part(payload) == expected_proposed(single, datasets, "run-8", "a" * 64, "llm_judge")

    # an ensemble of the offline judge and an LLM: one evaluator, an LLM judge among its members
    offline = result.provenance.judges[0]
    members = [offline, one]
    ensemble = result.model_copy(update={"provenance": result.provenance.model_copy(update={"judges": members})})
    hashed = hashlib.sha256(json.dumps([offline.identity, "a" * 64]).replace(", ", ",").encode()).hexdigest()
    payload = otlp_logs_json(evaluation_events(ensemble, datasets, proposed=run), NOW)
    assert proposed_part(payload) == expected_proposed(ensemble, datasets, "run-8", hashed, "llm_judge")


def test_the_checks_that_ask_the_judge_are_those_with_questions() -> None:
    _, datasets = stored("goal")
    assert proposed_run("x", config_of("goal"), datasets).judge_checks == {"answer_correctness", "goal"}
    _, datasets = stored("tool_policy")  # tools and the policy are checked by rules: no question
    assert proposed_run("x", config_of("tool_policy"), datasets).judge_checks == {"answer_correctness"}


def test_an_unscored_conversation_has_no_case_status_and_a_failed_one_fails() -> None:
    result, datasets = stored("tool_policy")
    first = result.per_conversation_metrics[0]
    unscored = first.model_copy(update={"is_scored": False, "is_fully_correct": None})
    failed = first.model_copy(update={"is_fully_correct": False})
    for metrics, status in ((unscored, None), (failed, "fail"), (first, "pass")):
        changed = result.model_copy(update={"per_conversation_metrics": [metrics]})
        events = evaluation_events(changed, datasets[:1], proposed=proposed_run("x", EvaluationConfig(), datasets))
        assert {e.attributes.get("test.case.result.status") for e in events} == {status}


def test_a_result_without_provenance_names_no_judge_and_no_reference_set() -> None:
    result, datasets = stored("tool_policy")
    bare = result.model_copy(update={"provenance": None})
    events = evaluation_events(bare, datasets, proposed=proposed_run("x", config_of("tool_policy"), datasets))
    for event in events:
        names = set(event.attributes)
        assert "gen_ai.evaluation.reference_set.id" not in names
        assert event.attributes["gen_ai.evaluation.evaluator.version"] == __version__
        if event.attributes["gen_ai.evaluation.name"] in JUDGED:
            assert not names & {"gen_ai.evaluation.evaluator.id", "gen_ai.evaluation.evaluator.type"}
        else:
            assert event.attributes["gen_ai.evaluation.evaluator.id"] == event.attributes["gen_ai.evaluation.name"]
