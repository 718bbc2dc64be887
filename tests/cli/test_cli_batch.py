"""`fair-forge evaluate --batch` and `--batch-id` (issue #38 item 3): the judge calls through the
provider's batch API, waited for, interrupted and resumed by id, with the real `ChatOpenAI` and
openai SDK against `FakeBatchServer` on 127.0.0.1."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.cli import main
from fair_forge_testing.builders import distinct_conversations
from fair_forge_testing.fake_batch_api import FakeBatchServer
from fair_forge_testing.fake_llm_server import openai_usage

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-cli-batch-secret-0123456789abcdef"
PRICES = {"judge": {"input": 2.0, "output": 8.0}}


@pytest.fixture
def server() -> Any:
    with FakeBatchServer(usage=lambda request: openai_usage(600, 50)) as running:
        yield running


@pytest.fixture(autouse=True)
def prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIR_FORGE_JUDGE_PRICES", json.dumps(PRICES))


def request_file(tmp_path: Path, server: FakeBatchServer, class_path: str = "langchain_openai.ChatOpenAI") -> Path:
    params = {"model": "judge", "base_url": server.base_url, "api_key": KEY, "max_retries": 0}
    body = {
        "connector": {"class_path": class_path, "params": params},
        "datasets": distinct_conversations(6, 2),
    }
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body))
    return path


def evaluate(*args: str | Path) -> tuple[int, dict[str, Any] | None, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["evaluate", *map(str, args)], stdout, stderr)
    text = stdout.getvalue()
    return code, json.loads(text) if text.strip() else None, stderr.getvalue()


def figures(result: dict[str, Any]) -> dict[str, Any]:
    """The result without what batch judging changes on purpose: the price (judge_usage) and the
    config it records (provenance); and without when it ran (`run.started_at`)."""
    aggregated = {k: v for k, v in result["aggregated_metrics"].items() if k != "judge_usage"}
    kept = {k: v for k, v in result.items() if k != "provenance"}
    run = {k: v for k, v in kept.pop("run").items() if k != "started_at"}
    return kept | {"aggregated_metrics": aggregated, "run": run}


def online_then_in_batch(
    request: Path, server: FakeBatchServer, state_dir: Path
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The result of `request` judged online, then in batch (`state_dir` its state), checking that
    the batch run sent nothing online; and the batch run's stderr."""
    code, online, _ = evaluate(request)
    assert code == 0 and online is not None
    calls = server.call_count
    code, result, stderr = evaluate(request, "--batch", "--batch-poll-s", "0", "--batch-dir", state_dir)
    assert code == 0, stderr
    assert result is not None and server.call_count == calls  # nothing went online
    return online, result, stderr


def test_batch_gives_the_online_result_at_half_the_price(server: FakeBatchServer, tmp_path: Path) -> None:
    online, result, stderr = online_then_in_batch(request_file(tmp_path, server), server, tmp_path / "b")
    assert figures(result) == figures(online)
    usage, online_usage = result["aggregated_metrics"]["judge_usage"], online["aggregated_metrics"]["judge_usage"]
    assert usage["calls"] == online_usage["calls"] == sum(len(r.lines) for r in server.batches.values())
    assert usage["cost_usd"] == pytest.approx(online_usage["cost_usd"] / 2, rel=1e-12)
    [state] = (tmp_path / "b").iterdir()
    assert f"--batch-id {state.stem}" in stderr and KEY not in state.read_text() and KEY not in stderr
    # Once collected, the conversations are not left in the provider's account.
    [record] = server.batches.values()
    assert not {record.input_file_id, record.output_file_id} & set(server.files)


def test_an_interrupted_batch_resumes_by_id_without_sending_again(server: FakeBatchServer, tmp_path: Path) -> None:
    request = request_file(tmp_path, server)
    directory = tmp_path / "batches"
    server.polls_until_done = 10**9  # runs until the test says otherwise
    env = {**os.environ, "FAIR_FORGE_JUDGE_PRICES": json.dumps(PRICES)}
    command = [
        sys.executable,
        "-m",
        "fair_forge_core",
        "evaluate",
        str(request),
        "--batch",
        "--batch-dir",
        str(directory),
    ]
    log = (tmp_path / "stderr.txt").open("wb")
    process = subprocess.Popen([*command, "--batch-poll-s", "0.05"], cwd=ROOT, env=env, stderr=log)
    try:
        deadline = time.monotonic() + 120
        while not (directory.exists() and any(directory.iterdir())):
            assert process.poll() is None, (tmp_path / "stderr.txt").read_text()
            assert time.monotonic() < deadline, "no batch state written"
            time.sleep(0.05)
        while not server.batches or next(iter(server.batches.values())).retrieves < 2:  # it is waiting
            assert time.monotonic() < deadline, "the batch was never polled"
            time.sleep(0.05)
    finally:
        process.kill()  # a CI job's time limit
        process.wait(timeout=60)
        log.close()
    [state] = directory.iterdir()
    server.polls_until_done = 0

    code, result, stderr = evaluate(request, "--batch-id", state.stem, "--batch-dir", directory, "--batch-poll-s", "0")
    assert code == 0, stderr
    assert result is not None and all(c["is_scored"] for c in result["per_conversation_metrics"])
    assert len(server.batches) == 1 and server.call_count == 0  # submitted once, never online


@pytest.mark.parametrize("change", ["datasets", "model", "temperature"])
def test_resuming_with_another_request_is_refused(server: FakeBatchServer, tmp_path: Path, change: str) -> None:
    request = request_file(tmp_path, server)
    code, _, _ = evaluate(request, "--batch", "--batch-poll-s", "0", "--batch-dir", tmp_path / "b")
    assert code == 0
    [state] = (tmp_path / "b").iterdir()
    body = json.loads(request.read_text())
    if change == "datasets":
        body["datasets"] = body["datasets"][:-1]
    elif change == "model":
        body["connector"]["params"]["model"] = "judge-2"
    else:
        body["connector"]["params"]["temperature"] = 0.5  # every call's body would differ
    request.write_text(json.dumps(body))
    code, result, stderr = evaluate(request, "--batch-id", state.stem, "--batch-dir", tmp_path / "b")
    assert code == 2 and result is None and "not the one submitted" in stderr


def test_batch_with_a_connector_without_a_batch_api_exits_2(server: FakeBatchServer, tmp_path: Path) -> None:
    request = request_file(tmp_path, server, class_path="langchain_anthropic.ChatAnthropic")
    code, result, stderr = evaluate(request, "--batch", "--batch-dir", tmp_path / "b")
    assert code == 2 and result is None
    assert "connector.class_path" in stderr and "batch API" in stderr
    assert not server.batches and not (tmp_path / "b").exists()


def test_an_output_file_larger_than_any_judge_reply_is_read(server: FakeBatchServer, tmp_path: Path) -> None:
    # One judge reply may be at most 1 MB (`MAX_JUDGE_REPLY_BYTES`); a batch's output file holds
    # every reply of the batch, here some 1,500 of about 700 bytes each.
    from fair_forge_core.judges.reply_limit import MAX_JUDGE_REPLY_BYTES

    request = request_file(tmp_path, server)
    body = json.loads(request.read_text())
    body["datasets"] = distinct_conversations(1500, 1)
    request.write_text(json.dumps(body))
    code, result, stderr = evaluate(request, "--batch", "--batch-poll-s", "0", "--batch-dir", tmp_path / "b")
    assert code == 0, stderr
    [record] = server.batches.values()
    output = b"".join(line for r in record.results if r for line in [json.dumps(r).encode() + b"\n"])
    assert len(output) > MAX_JUDGE_REPLY_BYTES  # the output file as written (deleted once read)
    assert result is not None and all(c["is_scored"] for c in result["per_conversation_metrics"])


def test_batch_on_azure_openai_gives_the_online_result_at_half_the_price(tmp_path: Path) -> None:
    from fair_forge_testing.fake_azure_batch_api import FakeAzureBatchServer

    with FakeAzureBatchServer(usage=lambda request: openai_usage(600, 50)) as azure:
        params = {
            "azure_endpoint": azure.azure_endpoint,
            "azure_deployment": "judge",
            "api_version": "2024-10-21",
            "api_key": KEY,
            "max_retries": 0,
        }
        body = {
            "connector": {"class_path": "langchain_openai.AzureChatOpenAI", "params": params},
            "datasets": distinct_conversations(6, 2),
        }
        request = tmp_path / "request.json"
        request.write_text(json.dumps(body))
        online, result, stderr = online_then_in_batch(request, azure, tmp_path / "b")
        [record] = azure.batches.values()
        assert record.endpoint == "/chat/completions" and {line["body"]["model"] for line in record.lines} == {"judge"}
    assert figures(result) == figures(online)
    usage, online_usage = result["aggregated_metrics"]["judge_usage"], online["aggregated_metrics"]["judge_usage"]
    assert usage["calls"] == online_usage["calls"] == len(record.lines)
    assert usage["cost_usd"] == pytest.approx(online_usage["cost_usd"] / 2, rel=1e-12)
    assert KEY not in stderr


def test_a_submission_that_died_before_its_state_was_written_resumes_without_sending_again(
    server: FakeBatchServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fair_forge_core.cli.batch as cli_batch

    request, directory = request_file(tmp_path, server), tmp_path / "b"
    writes: list[str] = []

    def replace_but_the_submitted_state(source: Any, target: Any) -> None:
        writes.append(str(target))
        if len(writes) == 2:  # the state with the submission: the process dies before it is written
            raise KeyboardInterrupt
        os.rename(source, target)

    monkeypatch.setattr(cli_batch.os, "replace", replace_but_the_submitted_state)
    with pytest.raises(KeyboardInterrupt):
        evaluate(request, "--batch", "--batch-poll-s", "0", "--batch-dir", directory)
    [created] = server.batches.values()  # it had created its batch
    [state] = directory.glob("*.json")
    assert "submission" not in json.loads(state.read_text())

    code, result, stderr = evaluate(request, "--batch-id", state.stem, "--batch-dir", directory, "--batch-poll-s", "0")
    assert code == 0, stderr
    assert list(server.batches) == [created.id] and server.call_count == 0  # taken, not sent again
    assert result is not None and all(c["is_scored"] for c in result["per_conversation_metrics"])
    assert "submission" in json.loads(state.read_text())


def groq_request(tmp_path: Path, groq: Any) -> Path:
    params = {"model": "judge", "base_url": groq.groq_base_url, "api_key": KEY, "max_retries": 0}
    body = {
        "connector": {"class_path": "langchain_groq.ChatGroq", "params": params},
        "datasets": distinct_conversations(6, 2),
    }
    request = tmp_path / "request.json"
    request.write_text(json.dumps(body))
    return request


def test_batch_on_groq_gives_the_online_result_at_groqs_batch_price(tmp_path: Path) -> None:
    from fair_forge_testing.fake_groq_batch_api import FakeGroqBatchServer

    with FakeGroqBatchServer(usage=lambda request: openai_usage(600, 50)) as groq:
        online, result, stderr = online_then_in_batch(groq_request(tmp_path, groq), groq, tmp_path / "b")
        [record] = groq.batches.values()
        assert record.endpoint == "/v1/chat/completions" and {line["url"] for line in record.lines} == {record.endpoint}
        assert not {record.input_file_id, record.output_file_id} & set(groq.files)  # deleted once read
    assert figures(result) == figures(online)
    usage, online_usage = result["aggregated_metrics"]["judge_usage"], online["aggregated_metrics"]["judge_usage"]
    assert usage["calls"] == online_usage["calls"] == len(record.lines)
    # Groq's batch price: "a 25% cost discount" (https://console.groq.com/docs/batch).
    assert usage["cost_usd"] == pytest.approx(online_usage["cost_usd"] * 0.75, rel=1e-12)
    assert KEY not in stderr


def test_a_groq_submission_that_died_before_its_state_was_written_resumes_without_sending_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Groq lists its batches in one answer, with no cursor: the resume finds its batch there.
    import fair_forge_core.cli.batch as cli_batch
    from fair_forge_testing.fake_groq_batch_api import FakeGroqBatchServer

    directory = tmp_path / "b"
    writes: list[str] = []

    def replace_but_the_submitted_state(source: Any, target: Any) -> None:
        writes.append(str(target))
        if len(writes) == 2:
            raise KeyboardInterrupt
        os.rename(source, target)

    with FakeGroqBatchServer(usage=lambda request: openai_usage(600, 50)) as groq:
        request = groq_request(tmp_path, groq)
        monkeypatch.setattr(cli_batch.os, "replace", replace_but_the_submitted_state)
        with pytest.raises(KeyboardInterrupt):
            evaluate(request, "--batch", "--batch-poll-s", "0", "--batch-dir", directory)
        [created] = groq.batches.values()
        [state] = directory.glob("*.json")
        code, result, stderr = evaluate(
            request, "--batch-id", state.stem, "--batch-dir", directory, "--batch-poll-s", "0"
        )
        assert code == 0, stderr
        assert list(groq.batches) == [created.id] and groq.call_count == 0  # taken, not sent again
    assert result is not None and all(c["is_scored"] for c in result["per_conversation_metrics"])
