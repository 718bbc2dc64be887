"""`fair-forge evaluate --otel-events FILE`: the verdicts as OTLP JSON `gen_ai.evaluation.result`
events, from OpenTelemetry traces through `convert` as a user runs it (the event's rules and
names are tested in tests/unit/test_otel_events.py)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from tests.cli.test_cli import CALCULATOR, ROOT, run_cli_in_process

TRACES = ROOT / "examples" / "traces"


def converted_request(tmp_path: Path) -> Path:
    """The OTel trace example converted by `fair-forge convert`, as a user runs it."""
    request = tmp_path / "request.json"
    done = run_cli_in_process(
        "convert",
        TRACES / "otel_genai.json",
        "--from",
        "otel",
        "--references",
        TRACES / "otel_genai.references.jsonl",
        "--task-key",
        "metadata.app.task",
        "--out",
        request,
    )
    assert done.returncode == 0, done.stderr
    return request


def test_convert_then_evaluate_writes_events_linked_to_the_evaluated_spans(tmp_path: Path) -> None:
    request = converted_request(tmp_path)
    before = time.time_ns()
    done = run_cli_in_process(
        "evaluate", request, "--out", tmp_path / "result.json", "--otel-events", tmp_path / "events.json"
    )
    after = time.time_ns()
    assert done.returncode == 0, done.stderr
    assert f"wrote {tmp_path / 'events.json'}" in done.stderr
    result = json.loads((tmp_path / "result.json").read_text())
    (resource_logs,) = json.loads((tmp_path / "events.json").read_text())["resourceLogs"]
    (scope_logs,) = resource_logs["scopeLogs"]
    answers = [
        r for r in scope_logs["logRecords"] if r["attributes"][0]["value"]["stringValue"] == "answer_correctness"
    ]
    # one answer event per turn of the result, in its order, with the turn's score
    turns = [(m["session_id"], i) for m in result["per_conversation_metrics"] for i in m["interactions"]]
    assert len(answers) == len(turns) == 5  # the example's references: 1 + 1 + 1 + 2 turns
    for record, (_, interaction) in zip(answers, turns, strict=True):
        values = {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}
        assert values["gen_ai.evaluation.score.value"] == interaction["answer_score"]
        assert values["fair_forge.qa_id"] == interaction["qa_id"]
        assert before <= int(record["timeUnixNano"]) <= after
    # the answers' spans, read by hand from examples/traces/otel_genai.json (the last chat span of each turn)
    assert [(r["traceId"], r["spanId"]) for r in answers] == [
        ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902ba"),
        ("4bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902ba"),
        ("4bf92f3577b34da6a3ce929d0e0e4738", "20f067aa0ba902bb"),
        ("4bf92f3577b34da6a3ce929d0e0e4739", "30f067aa0ba902ba"),
        ("4bf92f3577b34da6a3ce929d0e0e473a", "40f067aa0ba902ba"),
    ]


def test_without_the_flag_nothing_is_written_and_the_result_is_unchanged(tmp_path: Path) -> None:
    plain = run_cli_in_process("evaluate", CALCULATOR, "--out", tmp_path / "plain.json", "--quiet")
    with_events = run_cli_in_process(
        "evaluate", CALCULATOR, "--out", tmp_path / "with.json", "--otel-events", tmp_path / "e.json", "--quiet"
    )
    assert plain.returncode == with_events.returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.json", "plain.json", "with.json"]

    def verdicts(name: str) -> object:
        result = json.loads((tmp_path / name).read_text())
        return result["per_conversation_metrics"], result["aggregated_metrics"]["pass_at_k"]

    assert verdicts("plain.json") == verdicts("with.json")


def test_an_unwritable_events_file_exits_2_naming_the_flag_before_judging(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "events.json"
    done = run_cli_in_process("evaluate", CALCULATOR, "--otel-events", missing)
    assert done.returncode == 2
    assert done.stderr == f"error: --otel-events {missing}: the directory {missing.parent} does not exist\n"
    same = tmp_path / "x.json"
    done = run_cli_in_process("evaluate", CALCULATOR, "--out", same, "--otel-events", same)
    assert (done.returncode, done.stderr) == (2, f"error: --out and --otel-events name the same file: {same}\n")
    assert not same.exists()


PROPOSED_PREFIXES = ("gen_ai.evaluation.evaluator.", "gen_ai.evaluation.reference_set.", "test.")


def record_attributes(path: Path) -> list[dict[str, object]]:
    (resource_logs,) = json.loads(path.read_text())["resourceLogs"]
    return [
        {a["key"]: next(iter(a["value"].values())) for a in record["attributes"]}
        for record in resource_logs["scopeLogs"][0]["logRecords"]
    ]


def test_otel_proposed_adds_the_proposals_attributes_with_a_new_run_id_each_run(tmp_path: Path) -> None:
    """The values by the rules of docs/how-to/otel-events.md, from the request (examples/calculator.json:
    the offline ReferenceJudge, no task ids) and its result; the names from semantic-conventions-genai
    PR #359, issue #79 and core `model/test/registry.yaml`."""
    from fair_forge_core.judges import ReferenceJudge
    from fair_forge_core.provenance import judge_provenance
    from fair_forge_core.schemas import EvaluationConfig

    request = json.loads(CALCULATOR.read_text())
    identity = judge_provenance(ReferenceJudge(), EvaluationConfig.model_validate(request["config"])).identity
    runs = []
    for name in ("a", "b"):
        done = run_cli_in_process(
            "evaluate",
            CALCULATOR,
            "--out",
            tmp_path / f"{name}.json",
            "--otel-events",
            tmp_path / f"{name}.events",
            "--otel-proposed",
            "--quiet",
        )
        assert done.returncode == 0, done.stderr
        runs.append(record_attributes(tmp_path / f"{name}.events"))
    plain = run_cli_in_process("evaluate", CALCULATOR, "--otel-events", tmp_path / "plain.events", "--quiet")
    assert plain.returncode == 0, plain.stderr
    result = json.loads((tmp_path / "a.json").read_text())
    conversations = {m["session_id"]: m for m in result["per_conversation_metrics"]}
    events = runs[0]
    (run_id,) = {e["test.suite.run.id"] for e in events}  # one run id on every event
    assert uuid.UUID(str(run_id)).version == 4
    assert {e["test.suite.run.id"] for e in runs[1]} != {run_id}  # another run, another id
    for event in events:
        conversation = conversations[str(event["gen_ai.conversation.id"])]
        judged = event["gen_ai.evaluation.name"] == "answer_correctness"  # the calculator's only judged check
        assert event["gen_ai.evaluation.evaluator.id"] == (identity if judged else event["gen_ai.evaluation.name"])
        assert event["gen_ai.evaluation.evaluator.type"] == "deterministic"  # the offline judge, and rules
        assert event["gen_ai.evaluation.evaluator.version"] == result["provenance"]["version"]
        assert event["gen_ai.evaluation.reference_set.id"] == result["provenance"]["datasets_hash"]
        assert event["test.suite.name"] == conversation["assistant_id"]
        assert event["test.case.id"] == conversation["session_id"]  # no task ids in the calculator
        assert event["test.case.result.status"] == ("pass" if conversation["is_fully_correct"] else "fail")
    # without the switch: the same events without those attributes
    stripped = [{k: v for k, v in e.items() if not k.startswith(PROPOSED_PREFIXES)} for e in events]
    assert stripped == record_attributes(tmp_path / "plain.events")
    assert not any(k.startswith(PROPOSED_PREFIXES) for e in record_attributes(tmp_path / "plain.events") for k in e)


def test_otel_proposed_without_events_exits_2_before_judging(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    done = run_cli_in_process("evaluate", CALCULATOR, "--out", out, "--otel-proposed")
    assert (done.returncode, done.stderr) == (
        2,
        "error: --otel-proposed adds attributes to the OpenTelemetry events: give --otel-events or --otel-export\n",
    )
    assert not out.exists()
