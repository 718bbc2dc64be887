"""`config.judge_error` through the real handler (API Gateway proxy events): calibrate a judge with
`POST /calibrate`, hand its identity and counts to `POST /run`, and read
`aggregated_metrics.judge_corrected` beside today's figures; a calibration of another judge, at
another threshold, of an ensemble, or one that cannot tell the judge from chance is a 400 naming
the field, before any judging; with `judge_samples` 3, `aggregated_metrics.judge_noise`. The judge is the real `ChatOpenAI` against the fake
OpenAI-compatible server, scripted so that every verdict is known in advance."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from fair_forge_core.judge_error import JudgedAttempt, correct_suite
from fair_forge_core.judge_noise import SampledAttempt, noise_decomposition
from fair_forge_core.judges.prompt import parse_judge_request
from fair_forge_core.schemas import JudgeErrorInput
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply, last_user_text
from fair_forge_testing.handler_client import call_handler

OPENAI = "langchain_openai.chat_models.ChatOpenAI"
OFFLINE = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}
THRESHOLD = 0.7


def scripted(request: dict[str, Any]) -> Reply | dict[str, Any]:
    """The judge's score is the query's text after "score=" (the rest names the turn)."""
    judged = parse_judge_request(last_user_text(request))
    assert judged is not None
    return {"score": float(judged.query.split("score=")[1].split()[0]), "reasoning": "scripted"}


def connector(server: FakeLLMServer, model: str = "judge") -> dict[str, Any]:
    return {
        "class_path": OPENAI,
        "params": {"model": model, "base_url": server.base_url, "api_key": "sk-test-judge-err"},
    }


# Labels: 24 answers a human passed, of which the judge passes 21; 18 a human failed, of which it fails 15.
PAIRS = [
    {"query": f"label {i} score={score}", "answer": "a", "ground_truth": "t", "label": label}
    for i, (score, label) in enumerate(
        ([(0.9, "pass")] * 7 + [(0.2, "pass")] + [(0.1, "fail")] * 5 + [(0.8, "fail")]) * 3
    )
]

# Each task's attempts, each attempt's turn scores (≥ 0.7: judged correct).
TASKS: dict[str, list[list[float]]] = {
    "refund": [[0.9, 0.9], [0.9, 0.9], [0.9, 0.3]],
    "lookup": [[0.9, 0.9], [0.2, 0.9], [0.1, 0.2]],
    "hours": [[0.95, 0.9], [0.9, 0.9], [0.9, 0.9]],
}


def datasets(tasks: Mapping[str, Sequence[Sequence[object]]] = TASKS, key: str = "score") -> list[dict[str, Any]]:
    """One conversation an attempt, one turn a value: the turn's query ends with "<key>=<value>"."""
    return [
        {
            "session_id": f"{task}-{a}",
            "assistant_id": "agent",
            "task_id": task,
            "conversation": [
                {
                    "qa_id": f"q{t}",
                    "query": f"{task} {a} {t} {key}={value}",
                    "assistant": "x",
                    "ground_truth_assistant": "y",
                }
                for t, value in enumerate(values)
            ],
        }
        for task, attempts in tasks.items()
        for a, values in enumerate(attempts)
    ]


def calibrated(server: FakeLLMServer) -> dict[str, Any]:
    response = call_handler({"connector": connector(server), "pairs": PAIRS}, path="/calibrate")
    assert response.status == 200, response.body
    return response.body


def judge_error_of(report: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """The `config.judge_error` a user writes from a calibration report."""
    error = {
        "judge": report["judge"]["identity"],
        "tpr": {"successes": report["tpr"]["successes"], "n": report["tpr"]["n"]},
        "tnr": {"successes": report["tnr"]["successes"], "n": report["tnr"]["n"]},
        "threshold": report["threshold"],
        "source": "calibration.json",
    }
    return error | changes


def run(server: FakeLLMServer, judge_error: dict[str, Any], model: str = "judge", **config: Any) -> Any:
    body = {
        "connector": connector(server, model),
        "datasets": datasets(),
        "config": {"k": 2, "judge_error": judge_error, **config},
    }
    return call_handler(body)


@pytest.fixture
def server():
    with FakeLLMServer(responder=scripted) as fake:
        yield fake


def test_a_calibrated_judge_corrects_the_run_beside_todays_figures(server: FakeLLMServer) -> None:
    report = calibrated(server)
    assert (report["tpr"]["successes"], report["tpr"]["n"], report["tnr"]["successes"], report["tnr"]["n"]) == (
        21,
        24,
        15,
        18,
    )
    response = run(server, judge_error_of(report))
    assert response.status == 200, response.body
    aggregated = response.body["aggregated_metrics"]
    corrected = aggregated["judge_corrected"]
    assert response.body["provenance"]["judges"][0]["identity"] == report["judge"]["identity"] == corrected["judge"]
    assert aggregated["per_task"]["pass_pow_k"] is not None  # today's figure stays
    assert (corrected["tpr"], corrected["tnr"], corrected["source"]) == (
        {"successes": 21, "n": 24},
        {"successes": 15, "n": 18},
        "calibration.json",
    )
    # The same figures from the attempts read here from the scripted scores, independently of the result.
    attempts = {
        task: [JudgedAttempt(True, sum(score >= THRESHOLD for score in turns), len(turns)) for turns in runs]
        for task, runs in TASKS.items()
    }
    expected = correct_suite(attempts, 2, JudgeErrorInput.model_validate(judge_error_of(report)))
    assert corrected == expected.model_dump(mode="json")


def test_a_perfectly_calibrated_judge_gives_todays_per_task_figures(server: FakeLLMServer) -> None:
    report = calibrated(server)
    perfect = judge_error_of(report, tpr={"successes": 40, "n": 40}, tnr={"successes": 40, "n": 40})
    response = run(server, perfect)
    assert response.status == 200, response.body
    per_task, corrected = (
        response.body["aggregated_metrics"]["per_task"],
        response.body["aggregated_metrics"]["judge_corrected"],
    )
    assert corrected["method"] == "identity"
    for name in ("pass_at_k", "pass_pow_k", "pass_pow_k_ci_low", "pass_pow_k_ci_high", "pass_at_k_ci_low"):
        assert corrected[name] == per_task[name], name


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"model": "judge-2"}, "config.judge_error.judge", "calibrate this judge"),
        ({"threshold": 0.5}, "config.judge_error.threshold", "threshold 0.5"),
        ({"tpr": {"successes": 2, "n": 5}}, "config.judge_error", "tell the judge from chance"),
        ({"tpr": {"successes": 2, "n": 5}, "tnr": {"successes": 2, "n": 5}}, "config.judge_error", "TPR + TNR"),
    ],
)
def test_a_calibration_that_cannot_correct_the_run_is_a_400_before_any_judging(
    server: FakeLLMServer, change: dict[str, Any], field: str, words: str
) -> None:
    report = calibrated(server)
    calls = server.call_count
    model = change.pop("model", "judge")
    response = run(server, judge_error_of(report, **change), model=model)
    assert response.status == 400, response.body
    assert words in response.body["error"]
    assert [d["field"] for d in response.body.get("details", [])] == [field]
    assert server.call_count == calls  # refused before the judge was asked anything
    if model != "judge":  # both identities named, neither a key
        assert report["judge"]["identity"][:16] in response.body["error"]
        assert "sk-test" not in response.body["error"]


def test_an_ensemble_or_a_cascade_is_refused(server: FakeLLMServer) -> None:
    report = calibrated(server)
    body = {
        "connector": [connector(server), connector(server, "judge-2")],
        "datasets": datasets(),
        "config": {"judge_error": judge_error_of(report)},
    }
    ensemble = call_handler(body)
    assert ensemble.status == 400 and "ensemble of 2" in ensemble.body["error"], ensemble.body
    cascade = run(server, judge_error_of(report), judge_cascade=True)
    assert cascade.status == 400 and "judge_cascade" in cascade.body["error"], cascade.body


def test_without_task_ids_there_is_nothing_to_correct() -> None:
    labels = [
        {"query": "2+2?", "answer": a, "ground_truth": "4", "label": verdict}
        for a, verdict in [("4", "pass"), ("5", "fail")]
    ]
    report = call_handler({"connector": OFFLINE, "pairs": labels * 20}, path="/calibrate").body
    turn = {"qa_id": "q", "query": "2+2?", "assistant": "4", "ground_truth_assistant": "4"}
    body = {
        "connector": OFFLINE,
        "datasets": [{"session_id": f"s{i}", "assistant_id": "agent", "conversation": [turn]} for i in range(3)],
        "config": {"judge_error": judge_error_of(report)},
    }
    response = call_handler(body)
    assert response.status == 200, response.body
    assert "judge_corrected" not in response.body["aggregated_metrics"]
    with_tasks = call_handler(body | {"datasets": [d | {"task_id": "t"} for d in body["datasets"]]})
    assert with_tasks.body["aggregated_metrics"]["judge_corrected"]["tasks"] == 1


# Each task's attempts, each attempt's turns, each turn's three sampled scores (≥ 0.7: judged correct).
SAMPLED: dict[str, list[list[tuple[float, float, float]]]] = {
    "refund": [  # every attempt alike, its samples apart: mostly the judge's
        [(0.9, 0.2, 0.2), (0.9, 0.9, 0.9)],
        [(0.9, 0.9, 0.9), (0.9, 0.9, 0.9)],
        [(0.9, 0.9, 0.9), (0.2, 0.9, 0.9)],
        [(0.9, 0.9, 0.2), (0.9, 0.9, 0.9)],
    ],
    "lookup": [[(0.2, 0.2, 0.2), (0.9, 0.9, 0.1)], [(0.9, 0.8, 0.9), (0.9, 0.9, 0.9)]],
    "hours": [
        [(0.9, 0.9, 0.9), (0.9, 0.9, 0.9)],
        [(0.9, 0.3, 0.9), (0.1, 0.1, 0.1)],
        [(0.9, 0.9, 0.9), (0.8, 0.9, 0.9)],
    ],
}


def test_judge_samples_split_the_variance_into_the_judges_and_the_agents() -> None:
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def sampled(request: dict[str, Any]) -> dict[str, Any]:
        """The n-th judgement of a turn gets its n-th scripted score (the order is irrelevant to
        the latent-class estimate, which reads each turn's count of "correct")."""
        judged = parse_judge_request(last_user_text(request))
        assert judged is not None
        with lock:
            index = seen.get(judged.query, 0)
            seen[judged.query] = index + 1
        scores = [float(s) for s in judged.query.split("scores=")[1].split()[0].split(",")]
        return {"score": scores[index % len(scores)], "reasoning": "scripted"}

    joined = {
        task: [[",".join(map(str, scores)) for scores in turns] for turns in runs] for task, runs in SAMPLED.items()
    }
    with FakeLLMServer(responder=sampled) as fake:
        response = call_handler(
            {
                "connector": connector(fake),
                "datasets": datasets(joined, key="scores"),
                "config": {"k": 2, "judge_samples": 3, "task_stability": True},
            }
        )
    assert response.status == 200, response.body
    noise = response.body["aggregated_metrics"]["judge_noise"]
    # The same split from the scripted verdicts, read here without the result.
    expected = noise_decomposition(
        {
            task: [
                SampledAttempt(True, tuple(tuple(s >= THRESHOLD for s in scores) for scores in turns))
                for turns in attempts
            ]
            for task, attempts in SAMPLED.items()
        },
        3,
    )
    assert noise == expected.model_dump(mode="json")
    assert noise["estimator"] == "latent_class" and 0.0 < noise["judge_share"] < 1.0
    assert {t["task"] for t in noise["per_task"]} == set(SAMPLED)
    # A flaky task says so when most of its variance is the judge's, and only then.
    shares = {t["task"]: t["judge_share"] for t in noise["per_task"]}
    labels = {
        t["task_id"]: (t["label"], t.get("reason"))
        for t in response.body["aggregated_metrics"]["task_stability"]["tasks"]
    }
    for task, (label, reason) in labels.items():
        mostly_judge = label == "flaky" and shares[task] > 0.5
        assert (reason is not None) == mostly_judge, task
        if reason is not None:
            assert reason.startswith(f"mostly the judge's: {shares[task]:.0%} of the variance")
    assert sorted(reason is not None for _, reason in labels.values()) == [False, False, True]
