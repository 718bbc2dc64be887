"""Issue #33 item 4 through the real CLI: a first dataset whose tool calls carry no `result` and
no `final_answer_uses_tools` (both optional, docs/request.md) is not failed by a utilization it
never reported (docs/tool-rubric.md#what-was-not-reported-is-not-measured).

Before, utilization scored 0 on every such turn, below the 0.5 floor: 0 of 9 turns with correct
tools, `needs_improvement`, and no terminal line said why. The expected overall scores are
computed here with fractions from the request's weights.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

from tests.cli.test_cli import run_cli

WEIGHTS = {"selection": 1, "parameters": 2, "sequence": 1, "utilization": 4}


def no_result_request() -> dict[str, Any]:
    """3 tasks × 3 attempts, one turn each: the right calculator call and the right answer, no
    `result`, no `final_answer_uses_tools`. Task add-2's calls pass one extra argument (`c`), so
    its parameters score 2/3 and its overall is not 1."""
    datasets = []
    for task in range(3):
        a, b = task + 2, task + 5
        used = {"a": a, "b": b, **({"c": 1} if task == 2 else {})}
        for attempt in range(3):
            datasets.append(
                {
                    "session_id": f"add-{task}-{attempt}",
                    "assistant_id": "agent",
                    "task_id": f"add-{task}",
                    "conversation": [
                        {
                            "qa_id": f"add-{task}-{attempt}-q",
                            "query": f"What is {a} + {b}?",
                            "assistant": f"{a} + {b} is {a + b}.",
                            "ground_truth_assistant": f"{a + b}",
                            "agentic": {"tools_used": [{"tool_name": "calculator", "parameters": used}]},
                            "ground_truth_agentic": {
                                "expected_tools": [{"tool_name": "calculator", "parameters": {"a": a, "b": b}}]
                            },
                        }
                    ],
                }
            )
    return {
        "connector": {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}},
        "config": {"k": 3, "tool_weights": WEIGHTS},
        "datasets": datasets,
    }


def overall_without_utilization(parameters: Fraction) -> Fraction:
    measured = {"selection": Fraction(1), "parameters": parameters, "sequence": Fraction(1)}
    return sum((WEIGHTS[name] * value for name, value in measured.items()), Fraction(0)) / sum(
        WEIGHTS[name] for name in measured
    )


def test_the_no_result_dataset_passes_and_the_terminal_says_utilization_was_not_measured(tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(no_result_request()))
    out = tmp_path / "result.json"
    process = run_cli("evaluate", request, "--out", out, "--fail-under-pass-pow-k", "0.9")
    assert process.returncode == 0, process.stderr
    assert (
        "warning: tool utilization not measured on 9 turn(s): no tool `result` and no `final_answer_uses_tools`"
        in process.stderr
    )
    result = json.loads(out.read_text())
    aggregated = result["aggregated_metrics"]
    assert aggregated["tool_utilization_unmeasured"] == 9
    assert (aggregated["fully_correct_conversations"], aggregated["readiness"]["tier"]) == (9, "reliable")
    for conversation in result["per_conversation_metrics"]:
        (tools,) = conversation["tool_correctness_scores"]
        assert tools["result_utilization"] is None
        assert tools["is_correct"] is True
        assert "utilization not measured: final_answer_uses_tools not reported" in tools["reasoning"]
        parameters = Fraction(2, 3) if conversation["task_id"] == "add-2" else Fraction(1)
        expected = overall_without_utilization(parameters)
        assert abs(tools["overall_correctness"] - float(expected)) < 1e-12
        # a 0 for utilization would have given Σ w·v / 8: 4/8 or 10/3/8, both below 0.75
        assert float(sum(WEIGHTS[k] for k in ("selection", "sequence")) + 2 * parameters) / 8 < 0.75
