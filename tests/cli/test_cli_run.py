"""`fair-forge run` against the stub agent (`fair_forge_testing/stub_agent.py`): over real HTTP on
127.0.0.1 and as the `python` kind. The recording is what the stub did; `--evaluate` gives the
figures the stub's script implies (counted here from the script, not from our output); faults are
failed attempts with their causes and the run goes on; adaptive attempts stop the tasks the
confidence sequence decides (their bounds solved here from the closed form of the uniform mixture,
docs/statistics.md "Adaptive attempts"), the gates read those bounds, every face says which figures
adaptive stopping biases; and a secret header never leaves the agent's side."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.cli import main
from fair_forge_testing.stub_agent import StubAgent, StubAgentServer, StubScript, StubTask, install

SECRET = "sk-agent-secret-7f3a91"
REFUND = "The refund of 40 EUR is issued."
REFUND_CALL = {"tool_name": "issue_refund", "parameters": {"amount": 40}}
LEVEL = 0.05


def tasks_file(path: Path, tasks: list[dict[str, Any]], k: int = 3) -> Path:
    path.write_text(json.dumps({"tasks": tasks, "config": {"k": k}}), encoding="utf-8")
    return path


def one_turn(task_id: str, answer: str) -> dict[str, Any]:
    return {"task_id": task_id, "turns": [{"query": f"question of {task_id}", "ground_truth_assistant": answer}]}


FIXED_TASKS = [
    {
        "task_id": "refund",
        "turns": [
            {
                "query": "Refund order 7",
                "ground_truth_assistant": REFUND,
                "ground_truth_agentic": {"expected_tools": [REFUND_CALL]},
            }
        ],
        "expected_state": {"refunded": 40},
        "initial_state": {"order": 7},
    },
    {
        "task_id": "hours",
        "turns": [
            {"query": "When do you open?", "ground_truth_assistant": "We open at 9."},
            {"query": "And close?", "ground_truth_assistant": "We close at 17."},
        ],
    },
]


def fixed_script(**faults: dict[str, Any]) -> StubScript:
    return StubScript(
        tasks={
            "refund": StubTask(
                "refund",
                answers=(REFUND,),
                success_p=0.6,
                tools=((REFUND_CALL,),),
                end_state={"refunded": 40},
                wrong_state={"refunded": 0},
                faults=faults.get("refund", {}),
            ),
            "hours": StubTask(
                "hours", answers=("We open at 9.", "We close at 17."), success_p=0.5, faults=faults.get("hours", {})
            ),
        },
        seed=11,
    )


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(argv, stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture
def agent_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("STUB_AGENT_TOKEN", SECRET)
    yield


def http_spec(url: str) -> str:
    return json.dumps(
        {
            "kind": "http",
            "assistant_id": "stub-v1",
            "url": url,
            "headers_from_env": {"Authorization": "STUB_AGENT_TOKEN"},
            "retries": 0,
        }
    )


def test_the_recording_is_what_the_stub_did(tmp_path: Path, agent_env: None) -> None:
    script = fixed_script()
    tasks = tasks_file(tmp_path / "tasks.json", FIXED_TASKS)
    recorded = tmp_path / "recorded.json"
    with StubAgentServer(script) as server:
        code, out, err = run_cli(
            ["run", str(tasks), "--agent", http_spec(server.url), "--attempts", "3", "-o", str(recorded)]
        )
    assert code == 0, err
    body = json.loads(recorded.read_text())
    assert "attempts" not in body  # fixed attempts: the request serialises as before
    assert body["connector"]["class_path"] == "fair_forge_core.judges.ReferenceJudge"
    datasets = body["datasets"]
    assert [(d["task_id"]) for d in datasets] == ["refund"] * 3 + ["hours"] * 3
    assert {d["assistant_id"] for d in datasets} == {"stub-v1"}
    assert len({d["session_id"] for d in datasets}) == 6  # a fresh session each
    calls = {(c.task_id, c.attempt, c.turn): c for c in script.calls}
    assert len(calls) == len(script.calls) == 3 * 1 + 3 * 2  # every turn asked once
    for index, dataset in enumerate(datasets):
        task = script.tasks[dataset["task_id"]]
        attempt = index % 3
        right = script.succeeds(task.task_id, attempt)
        for turn, batch in enumerate(dataset["conversation"]):
            call = calls[(task.task_id, attempt, turn)]
            assert call.session_id == dataset["session_id"]
            assert call.headers["Authorization"] == SECRET  # the agent side sees its credential
            assert batch["assistant"] == (task.answers[turn] if right else task.wrong_answer)
            expected_tools = list(task.tools[turn]) if right and turn < len(task.tools) else []
            assert [
                {"tool_name": t["tool_name"], "parameters": t["parameters"]} for t in batch["agentic"]["tools_used"]
            ] == expected_tools
            usage = batch["agent_usage"]
            assert (usage["input_tokens"], usage["output_tokens"], usage["cost_usd"]) == (120, 30, 0.002)
            assert usage["latency_s"] >= 0
        assert dataset["final_state"] == (task.end_state if right else task.wrong_state)
        assert "agent_error" not in dataset
    assert f"run: 6 attempt(s) of 2 task(s), 0 failed, agent cost ${9 * 0.002:.6f}" in err
    for text in (out, err, recorded.read_text()):
        assert SECRET not in text


def test_evaluate_gives_the_figures_of_the_script(tmp_path: Path) -> None:
    script = fixed_script()
    tasks = tasks_file(tmp_path / "tasks.json", FIXED_TASKS)
    result_path = tmp_path / "result.json"
    install(StubAgent(script))
    spec = {"kind": "python", "assistant_id": "stub-py", "callable": "fair_forge_testing.stub_agent:python_agent"}
    code, out, err = run_cli(
        ["run", str(tasks), "--agent", json.dumps(spec), "--attempts", "3", "--evaluate", "--result", str(result_path)]
    )
    assert code == 0, err
    assert out == ""  # with --evaluate and no -o, the recording is not written; the result is in --result
    result = json.loads(result_path.read_text())
    passes = {t: sum(script.succeeds(t, a) for a in range(3)) for t in ("refund", "hours")}
    agg = result["aggregated_metrics"]
    assert agg["fully_correct_conversations"] == sum(passes.values())
    # k = 3 = n: per task pass^3 = C(c, 3)/C(3, 3) is 1 only when all passed, pass@3 1 when any did.
    assert agg["per_task"]["pass_pow_k"] == pytest.approx(sum(math.comb(c, 3) for c in passes.values()) / 2)
    assert agg["per_task"]["pass_at_k"] == pytest.approx(sum(1 - math.comb(3 - c, 3) for c in passes.values()) / 2)
    assert "adaptive" not in agg
    assert "readiness:" in err


def test_faults_are_failed_attempts_with_their_causes_and_the_run_goes_on(tmp_path: Path) -> None:
    script = fixed_script(refund={"1/0": "http_500"}, hours={"0/1": "malformed", "2/0": "drop"})
    tasks = tasks_file(tmp_path / "tasks.json", FIXED_TASKS)
    recorded = tmp_path / "recorded.json"
    with StubAgentServer(script) as server:
        spec = json.dumps({"kind": "http", "assistant_id": "stub", "url": server.url, "retries": 0})
        code, _, err = run_cli(["run", str(tasks), "--agent", spec, "--attempts", "3", "-o", str(recorded)])
    assert code == 0, err
    datasets = json.loads(recorded.read_text())["datasets"]
    assert len(datasets) == 6  # none dropped
    errors = [(d["task_id"], (d.get("agent_error") or {}).get("cause")) for d in datasets]
    assert errors == [
        ("refund", None),
        ("refund", "agent_error"),
        ("refund", None),
        ("hours", "agent_malformed"),
        ("hours", None),
        ("hours", "agent_error"),
    ]
    malformed = datasets[3]
    assert len(malformed["conversation"]) == 2 and malformed["conversation"][1]["assistant"] == ""  # turn 1 failed
    assert "run: 6 attempt(s) of 2 task(s), 3 failed (agent_error 2, agent_malformed 1)" in err


def test_agent_errors_unscored_makes_failed_attempts_unscored(tmp_path: Path) -> None:
    script = fixed_script(refund={"0/0": "http_500"})
    tasks = tasks_file(tmp_path / "tasks.json", FIXED_TASKS)
    result_path, recorded = tmp_path / "result.json", tmp_path / "recorded.json"
    install(StubAgent(script))
    spec = {"kind": "python", "assistant_id": "stub-py", "callable": "fair_forge_testing.stub_agent:python_agent"}
    argv = ["run", str(tasks), "--agent", json.dumps(spec), "--attempts", "2", "--agent-errors", "unscored"]
    code, _, err = run_cli([*argv, "-o", str(recorded), "--evaluate", "--result", str(result_path), "--allow-unscored"])
    assert code == 0, err
    first = json.loads(recorded.read_text())["datasets"][0]
    assert first["unscored"]["cause"] == first["agent_error"]["cause"] == "agent_error"
    assert json.loads(result_path.read_text())["aggregated_metrics"]["unscored_conversations"] == 1


# Adaptive attempts: the bounds solved from the closed form, independently of fair_forge_core.adaptive.


def mixture(p: float, successes: int, failures: int) -> float:
    """M_n(p) of the uniform prior: 1 / ((n + 1)·C(n, S)·p^S·(1 − p)^F)."""
    n = successes + failures
    return 1 / ((n + 1) * math.comb(n, successes) * p**successes * (1 - p) ** failures)


def cs_lower(successes: int, failures: int) -> float:
    """The lower end of {p : M_n(p) < 1/α}, by bisection on the closed form (0 without a success)."""
    if successes == 0:
        return 0.0
    low, high = 0.0, successes / (successes + failures)
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if mixture(middle, successes, failures) >= 1 / LEVEL else (low, middle)
    return low


ADAPTIVE_TASKS = [
    one_turn("easy", "We open at 9."),
    one_turn("never", "We close at 17."),
    one_turn("coin", "It is 5 EUR."),
]


def adaptive_script() -> StubScript:
    return StubScript(
        tasks={
            "easy": StubTask("easy", answers=("We open at 9.",), success_p=1.0),
            "never": StubTask("never", answers=("We close at 17.",), success_p=0.0),
            "coin": StubTask("coin", answers=("It is 5 EUR.",), success_p=0.5),
        },
        seed=3,
    )


def first_all_success_decision() -> int:
    """The fewest attempts, all passed, that put the lower bound above p* = 0.5: (α/(n+1))^(1/n) > 0.5."""
    return next(n for n in range(1, 100) if (LEVEL / (n + 1)) ** (1 / n) > 0.5)


def run_adaptive_cli(tmp_path: Path, tasks: list[dict[str, Any]], *extra: str) -> tuple[int, str, Path, Path]:
    script = adaptive_script()
    path = tasks_file(tmp_path / "tasks.json", tasks, k=2)
    recorded, result = tmp_path / "recorded.json", tmp_path / "result.json"
    with StubAgentServer(script) as server:
        code, _, err = run_cli(
            [
                "run",
                str(path),
                "--agent-url",
                server.url,
                "--until-decided",
                "p>=0.5",
                "--max-attempts",
                "20",
                "--round-size",
                "2",
                "-o",
                str(recorded),
                "--evaluate",
                "--result",
                str(result),
                *extra,
            ]
        )
    return code, err, recorded, result


def test_adaptive_attempts_stop_the_decided_tasks_early(tmp_path: Path) -> None:
    code, err, recorded, result_path = run_adaptive_cli(
        tmp_path,
        ADAPTIVE_TASKS,
        "--markdown",
        str(tmp_path / "s.md"),
        "--junit",
        str(tmp_path / "j.xml"),
        "--html",
        str(tmp_path / "r.html"),
    )
    assert code == 0, err
    body = json.loads(recorded.read_text())
    attempts = body["attempts"]
    assert (attempts["policy"], attempts["question"], attempts["boundary"]) == ("adaptive", "p>=0.5", 0.5)
    counts = {t: sum(d["task_id"] == t for d in body["datasets"]) for t in ("easy", "never", "coin")}
    decisive = first_all_success_decision()  # 8: rounds of 2 reach it exactly
    assert decisive == 8
    assert counts["easy"] == counts["never"] == decisive < 20
    tasks = attempts["tasks"]
    assert (tasks["easy"]["decided"], tasks["never"]["decided"], tasks["coin"]["decided"]) == (
        "above",
        "below",
        "undecided",
    )
    assert tasks["easy"]["lower"] == pytest.approx(cs_lower(8, 0), abs=1e-9)
    assert tasks["easy"]["lower"] == pytest.approx((LEVEL / 9) ** (1 / 8), abs=1e-9)
    coin = tasks["coin"]
    assert coin["attempts"] == counts["coin"] > decisive and counts["coin"] <= 20
    # It stopped undecided only when (futility) no outcome of its remaining attempts could decide it,
    # or at the budget: at every later count the extreme outcomes keep p* = 0.5 inside.
    s, f = coin["successes"], coin["attempts"] - coin["successes"]
    left = 20 - coin["attempts"]
    for more in range(1, left + 1):
        for wins in range(more + 1):
            assert mixture(0.5, s + wins, f + more - wins) < 1 / LEVEL

    result = json.loads(result_path.read_text())
    adaptive = result["aggregated_metrics"]["adaptive"]
    assert {t: v["decided"] for t, v in adaptive["tasks"].items()} == {t: v["decided"] for t, v in tasks.items()}
    lowers = [cs_lower(v["successes"], v["attempts"] - v["successes"]) for v in tasks.values()]
    assert adaptive["pass_pow_k_lower"] == pytest.approx(sum(low**2 for low in lowers) / 3, abs=1e-9)
    assert "aggregated_metrics.per_task.pass_pow_k" in adaptive["biased"]
    # The biased label on every face.
    assert "pass^2 (per task, adaptive stopping: biased)" in err
    assert "  above: easy, 8 of 8 scored attempts passed" in err
    assert "pass^2 (per task, adaptive stopping: biased)" in (tmp_path / "s.md").read_text()
    assert (
        'name="adaptive.biased" value="adaptive stopping: biased: per_task.pass_at_k'
        in (tmp_path / "j.xml").read_text()
    )
    html = (tmp_path / "r.html").read_text()
    assert "pass^2 (per task, adaptive stopping: biased)" in html and 'id="adaptive"' in html


def test_the_lower_bound_gate_reads_the_confidence_sequences(tmp_path: Path) -> None:
    code, err, recorded, _ = run_adaptive_cli(tmp_path, ADAPTIVE_TASKS, "--quiet")
    assert code == 0, err
    tasks = json.loads(recorded.read_text())["attempts"]["tasks"]
    bound = sum(cs_lower(v["successes"], v["attempts"] - v["successes"]) ** 2 for v in tasks.values()) / 3
    request = str(recorded)
    passing = f"pass_pow_k<{bound - 0.01:.4f}"
    failing = f"pass_pow_k<{bound + 0.01:.4f}"
    code, _, err = run_cli(["evaluate", request, "--out", str(tmp_path / "r.json"), "--fail-if-lower-bound", passing])
    assert code == 0, err
    assert f"gate met: lower bound of pass^2 (per task, adaptive confidence sequences) = {bound:.4f}" in err
    code, _, err = run_cli(["evaluate", request, "--out", str(tmp_path / "r.json"), "--fail-if-lower-bound", failing])
    assert code == 1
    assert f"FAILED: lower bound of pass^2 (per task, adaptive confidence sequences) = {bound:.4f}" in err


def test_the_task_pass_rate_gate_reads_the_lower_bounds(tmp_path: Path) -> None:
    code, err, _, _ = run_adaptive_cli(tmp_path, ADAPTIVE_TASKS, "--min-task-pass-rate", "0.5")
    assert code == 1
    assert "FAILED: 2 of 3 task(s) not shown to pass at least --min-task-pass-rate 0.5" in err
    assert "never 0/8 (lower bound 0.000)" in err and "coin " in err
    only_easy = tmp_path / "easy"
    only_easy.mkdir()
    code, err, _, _ = run_adaptive_cli(only_easy, ADAPTIVE_TASKS[:1], "--min-task-pass-rate", "0.5")
    assert code == 0, err
    lower = (LEVEL / 9) ** (1 / 8)
    assert f"(lowest: easy {lower:.3f}, α = 0.05)" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--agent-url", "http://127.0.0.1:9/turn", "--until-decided", "p>1.5"],
            "--until-decided: cannot read the question",
        ),
        (["--agent", '{"kind": "http", "assistant_id": "a"}', "--attempts", "2"], "invalid agent spec"),
        (["--agent", "{not json", "--attempts", "2"], "--agent is not valid JSON"),
        (
            ["--agent-url", "http://127.0.0.1:9/turn", "--attempts", "2", "--max-attempts", "3"],
            "go with --until-decided",
        ),
        (
            [
                "--agent-url",
                "http://127.0.0.1:9/turn",
                "--until-decided",
                "p>=0.5",
                "--evaluate",
                "--max-cost-usd",
                "1",
            ],
            "is not applied across adaptive rounds yet",
        ),
    ],
)
def test_bad_input_is_exit_2_naming_the_flag(tmp_path: Path, argv: list[str], message: str) -> None:
    tasks = tasks_file(tmp_path / "tasks.json", FIXED_TASKS)
    code, out, err = run_cli(["run", str(tasks), *argv])
    assert code == 2
    assert message in err and out == ""


def test_a_bad_tasks_file_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    tasks = tasks_file(tmp_path / "tasks.json", [{"task_id": "t", "turns": []}])
    code, _, err = run_cli(["run", str(tasks), "--agent-url", "http://127.0.0.1:9/turn", "--attempts", "1"])
    assert code == 2
    assert "tasks.json: invalid tasks file: tasks[0].turns" in err


def test_evaluate_recomputes_the_bounds_and_names_a_task_the_run_decided_otherwise(tmp_path: Path) -> None:
    code, err, recorded, _ = run_adaptive_cli(tmp_path, ADAPTIVE_TASKS, "--quiet")
    assert code == 0, err
    body = json.loads(recorded.read_text())
    body["attempts"]["tasks"]["easy"]["decided"] = "below"  # as if the run's judge had said otherwise
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(body))
    code, out, err = run_cli(["evaluate", str(edited)])
    assert code == 0, err
    result = json.loads(out)
    assert result["aggregated_metrics"]["adaptive"]["tasks"]["easy"]["decided"] == "above"  # from the verdicts here
    assert "1 task(s) decided otherwise here than when the run stopped" in err
    assert "easy (run: below, here: above)" in err
