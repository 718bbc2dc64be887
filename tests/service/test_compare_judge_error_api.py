"""`config.compare` under `config.judge_error` through the real handler (`POST /calibrate`, then
`POST /run`; issue #36 item 5): both assistants of one evaluation are corrected with one
calibration, so `aggregated_metrics.comparison.judge_corrected` shares the judge's draws, and its
figures are each side's own correction's (the baseline's exactly: stream 1 at seed 0). The judge
is the offline `ReferenceJudge`, calibrated on the starter set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.judge_error import correct_suite
from fair_forge_core.judge_error_input import judged_tasks
from fair_forge_core.schemas import ConversationMetrics, JudgeErrorInput
from fair_forge_testing.handler_client import call_handler

ROOT = Path(__file__).resolve().parents[2]
OFFLINE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}


def starter_pairs() -> list[dict[str, Any]]:
    lines = (ROOT / "examples" / "calibration" / "starter.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def both_sides() -> list[dict[str, Any]]:
    sides = [json.loads((ROOT / "examples" / "compare" / f"{s}.json").read_text()) for s in ("baseline", "candidate")]
    return [d for side in sides for d in side["datasets"]]


def test_config_compare_is_corrected_with_the_runs_calibration() -> None:
    report = call_handler({"connector": OFFLINE, "pairs": starter_pairs()}, path="/calibrate")
    assert report.status == 200, report.body
    error = {
        "judge": report.body["judge"]["identity"],
        "tpr": {"successes": report.body["tpr"]["successes"], "n": report.body["tpr"]["n"]},
        "tnr": {"successes": report.body["tnr"]["successes"], "n": report.body["tnr"]["n"]},
        "threshold": report.body["threshold"],
    }
    config = {"k": 3, "judge_error": error, "compare": {"baseline": "support-bot-v1", "candidate": "support-bot-v2"}}
    response = call_handler({"connector": OFFLINE, "datasets": both_sides(), "config": config})
    assert response.status == 200, response.body
    corrected = response.body["aggregated_metrics"]["comparison"]["judge_corrected"]
    assert corrected["measured"] and corrected["shared_judge_draws"] and corrected["notes"] == []
    assert corrected["tasks"] == 12 and corrected["observed_verdict"] == "improved"
    conversations = [ConversationMetrics.model_validate(c) for c in response.body["per_conversation_metrics"]]
    baseline = [c for c in conversations if c.assistant_id == "support-bot-v1"]
    own = correct_suite(judged_tasks(baseline), 3, JudgeErrorInput.model_validate(error))
    assert corrected["pass_pow_k"]["baseline"] == pytest.approx(own.pass_pow_k, rel=1e-12)
    difference = corrected["pass_pow_k"]
    assert difference["ci_low"] <= difference["difference"] <= difference["ci_high"]
    assert corrected["within_judge_error"] is (corrected["verdict"] != "improved")
