"""`fair-forge evaluate`'s result knows its run (`run`: when, the tasks' hash, the labels of
`--label` and of the CI's environment, never a secret), and results without it still load."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.cli import build_parser
from fair_forge_core.schemas import EvaluationResult
from tests.cli.test_cli import CALCULATOR, ROOT, run_cli_in_process

COMPARE = ROOT / "examples" / "compare"

SECRETS = {
    "GITHUB_TOKEN": "ghs_0123456789abcdefghijklmnopqrstuvwxyz",
    "OPENAI_API_KEY": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "LLM_API_KEY": "gsk_abcdefghijklmnopqrstuvwxyz0123456789",
}
KEY_SHAPED_BRANCH = "fix/sk-abcdefghijklmnopqrstuv"


def evaluate(request: Path, *flags: str) -> dict[str, Any]:
    process = run_cli_in_process("evaluate", request, "--quiet", *flags)
    assert process.returncode == 0, process.stderr
    result: dict[str, Any] = json.loads(process.stdout)
    return result


def write(path: Path, body: dict[str, Any]) -> Path:
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def expected_tasks_hash(request: dict[str, Any]) -> str:
    """The rule of `run.tasks_hash` (docs/response.md `run`), written out from the request file: per
    conversation [task, turns] with a turn's expected tools as its third item, and the goal,
    rubric and expected state, when given, as the entry's third; distinct, sorted, compact JSON."""
    from fair_forge_core.schemas import Dataset

    entries = set()
    for raw in request["datasets"]:
        dataset = Dataset.model_validate(raw)  # the expectation as the request's model holds it
        turns = []
        for turn, raw_turn in zip(dataset.conversation, raw["conversation"], strict=True):
            item: list[Any] = [raw_turn["query"], raw_turn["ground_truth_assistant"]]
            if turn.ground_truth_agentic is not None:
                item.append(turn.ground_truth_agentic.model_dump(mode="json", exclude_none=True))
            turns.append(item)
        extras = {k: raw[k] for k in ("goal", "goal_rubric", "expected_state") if raw.get(k) is not None}
        entry = [raw.get("task_id") or raw["session_id"], turns, *([extras] if extras else [])]
        entries.add(json.dumps(entry, ensure_ascii=False, separators=(",", ":"), sort_keys=True))
    return hashlib.sha256(("[" + ",".join(sorted(entries)) + "]").encode()).hexdigest()


def test_outside_ci_without_labels_the_run_has_no_labels() -> None:
    before = datetime.now(UTC).replace(microsecond=datetime.now(UTC).microsecond // 1000 * 1000)
    run = evaluate(CALCULATOR)["run"]
    after = datetime.now(UTC)
    assert set(run) == {"started_at", "tasks_hash", "labels", "ci"}
    assert run["labels"] == {}
    assert run["ci"] is None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", run["started_at"])
    started = datetime.strptime(run["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert before - timedelta(milliseconds=1) <= started <= after
    assert run["tasks_hash"] == expected_tasks_hash(json.loads(CALCULATOR.read_text()))


def test_labels_are_recorded() -> None:
    run = evaluate(CALCULATOR, "--label", "team=search", "--label", "model=gpt-4o=2024", "--label", "team=ranking")[
        "run"
    ]
    assert run["labels"] == {"team": "ranking", "model": "gpt-4o=2024"}


@pytest.mark.parametrize(
    "label",
    ["no-equals", "bad key=v", "=v", "note=" + "x" * 257, "note=a\nb", "key=sk-abcdefghijklmnop"],
)
def test_a_bad_label_is_exit_2_naming_the_flag(label: str) -> None:
    process = run_cli_in_process("evaluate", CALCULATOR, "--label", label)
    assert process.returncode == 2
    assert "--label" in process.stderr
    assert process.stdout == ""
    assert "sk-abcdefghijklmnop" not in process.stderr


def test_run_evaluate_takes_labels() -> None:
    args = build_parser().parse_args(
        ["run", "tasks.json", "--agent-url", "http://localhost:1", "--attempts", "1", "--evaluate", "--label", "a=b"]
    )
    assert args.label == [("a", "b")]


def test_github_actions_labels_and_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
        "GITHUB_REF": "refs/pull/42/merge",
        "GITHUB_REF_NAME": "42/merge",
        "GITHUB_HEAD_REF": KEY_SHAPED_BRANCH,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/agent",
        "GITHUB_RUN_ID": "987654321",
        "GITHUB_RUN_ATTEMPT": "1",
        **SECRETS,
    }
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    process = run_cli_in_process("evaluate", CALCULATOR, "--label", "commit=local")
    assert process.returncode == 0, process.stderr
    run = json.loads(process.stdout)["run"]
    assert run["ci"] == "github"
    assert run["labels"] == {
        "commit": "local",  # --label overrides the CI's
        "pr": "42",  # no branch: a key-shaped one is left out whole
        "run_url": "https://github.com/acme/agent/actions/runs/987654321/attempts/1",
        "repository": "acme/agent",
    }
    for secret in [*SECRETS.values(), KEY_SHAPED_BRANCH]:
        assert secret not in process.stdout
        assert secret not in process.stderr


def test_gitlab_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {
        "GITLAB_CI": "true",
        "CI_COMMIT_SHA": "fedcba9876543210fedcba9876543210fedcba98",
        "CI_COMMIT_REF_NAME": "feature/run-info",
        "CI_MERGE_REQUEST_IID": "12",
        "CI_PIPELINE_URL": "https://gitlab-ci-token:glcbt-secret123@gitlab.example.com/acme/agent/-/pipelines/77",
        "CI_PROJECT_PATH": "acme/agent",
        "CI_JOB_TOKEN": "glcbt-secret123",
        **SECRETS,
    }
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    process = run_cli_in_process("evaluate", CALCULATOR, "--quiet")
    assert process.returncode == 0, process.stderr
    run = json.loads(process.stdout)["run"]
    assert run["ci"] == "gitlab"
    assert run["labels"] == {
        "commit": "fedcba9876543210fedcba9876543210fedcba98",
        "branch": "feature/run-info",
        "mr": "12",
        "run_url": "https://gitlab.example.com/acme/agent/-/pipelines/77",
        "repository": "acme/agent",
    }
    for secret in [*SECRETS.values(), "glcbt-secret123"]:
        assert secret not in process.stdout


def test_the_tasks_hash_ignores_the_answers_but_not_the_ground_truth(tmp_path: Path) -> None:
    request = json.loads(CALCULATOR.read_text())
    answered = copy.deepcopy(request)
    for dataset in answered["datasets"]:
        for turn in dataset["conversation"]:
            turn["assistant"] = "I do not know."
    truth = copy.deepcopy(request)
    truth["datasets"][0]["conversation"][0]["ground_truth_assistant"] += " (changed)"

    original = evaluate(CALCULATOR)
    other_answers = evaluate(write(tmp_path / "answers.json", answered))
    other_truth = evaluate(write(tmp_path / "truth.json", truth))
    assert other_answers["aggregated_metrics"] != original["aggregated_metrics"]  # the answers did change
    assert other_answers["run"]["tasks_hash"] == original["run"]["tasks_hash"] == expected_tasks_hash(request)
    assert other_truth["run"]["tasks_hash"] != original["run"]["tasks_hash"]
    assert other_truth["run"]["tasks_hash"] == expected_tasks_hash(truth)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The compare example's baseline and candidate evaluated by this version (`new`: with `run`)
    and as written before `run` existed (`old`: the same without it)."""
    directory = tmp_path_factory.mktemp("results")
    written = {}
    for side in ("baseline", "candidate"):
        process = run_cli_in_process("evaluate", COMPARE / f"{side}.json", "--quiet", "--label", f"side={side}")
        assert process.returncode == 0, process.stderr
        new = json.loads(process.stdout)
        assert new["run"]["labels"] == {"side": side}
        old = {key: value for key, value in new.items() if key != "run"}
        written[f"new {side}"] = write(directory / f"new-{side}.json", new)
        written[f"old {side}"] = write(directory / f"old-{side}.json", old)
    return written


def test_a_result_without_run_loads_and_writes_as_before(results: dict[str, Path]) -> None:
    text = results["old baseline"].read_text()
    loaded = EvaluationResult.model_validate_json(text)
    assert loaded.run is None
    assert loaded.model_dump(mode="json") == json.loads(text)  # no `run` key added
    assert '"run"' not in loaded.model_dump_json()


@pytest.mark.parametrize(("baseline", "candidate"), [("old", "new"), ("new", "old"), ("old", "old"), ("new", "new")])
def test_compare_reads_results_with_and_without_run(
    results: dict[str, Path], tmp_path: Path, baseline: str, candidate: str
) -> None:
    out = tmp_path / "comparison.json"
    process = run_cli_in_process(
        "compare", results[f"{baseline} baseline"], results[f"{candidate} candidate"], "--out", out, "--quiet"
    )
    assert process.returncode != 2, process.stderr  # not refused: a verdict, whatever it is
    reference = tmp_path / "from-requests.json"
    from_requests = run_cli_in_process(
        "compare", COMPARE / "baseline.json", COMPARE / "candidate.json", "--out", reference, "--quiet"
    )
    assert process.returncode == from_requests.returncode
    assert json.loads(out.read_text()) == json.loads(reference.read_text())


@pytest.mark.parametrize("which", ["old baseline", "new baseline"])
def test_report_reads_results_with_and_without_run(results: dict[str, Path], tmp_path: Path, which: str) -> None:
    process = run_cli_in_process("report", results[which], "--out", tmp_path / "report.html")
    assert process.returncode == 0, process.stderr
    assert "<html" in (tmp_path / "report.html").read_text().lower()


@pytest.mark.parametrize("which", ["old baseline", "new baseline"])
def test_the_pytest_plugin_reads_results_with_and_without_run(results: dict[str, Path], which: str) -> None:
    from fair_forge_core.pytest_plugin import assert_pass_pow_k

    assert_pass_pow_k(results[which], at_least=0.0)  # read, and the figure measured
    assert_pass_pow_k(json.loads(results[which].read_text()), at_least=0.0)
