"""The benchmarks' own parts: the judge server they measure against, and their workloads.

`fair_forge_testing.judge_server` runs `fair_forge_testing.fake_llm_server.FakeLLMServer` in a child
process; these tests check what the benchmarks rely on — the configured latency is
slept per admitted request, a request beyond the rate limit gets a 429 with
Retry-After headers, the counters and reset — and that the benchmark requests are
what RESULTS.md says they are. Behaviour only, no timing assertions.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from fair_forge_core.judges.prompt import JudgeRequest, build_judge_messages
from fair_forge_testing.fake_llm_server import FakeLLMServer
from fair_forge_testing.judge_server import JudgeServerProcess
from fair_forge_testing.workloads import REFERENCE, distinct_conversations, pooled_conversations, request, turn_pool
from handler.settings import Settings
from handler.validation import parse_run_request


def chat_body(text: str = "What is 2 + 2?") -> bytes:
    messages = build_judge_messages(JudgeRequest(query=text, answer="4", ground_truth="4"), structured=False)
    roles = {"system": "system", "human": "user"}
    return json.dumps(
        {"model": "judge", "messages": [{"role": roles[m.type], "content": m.content} for m in messages]}
    ).encode()


def post(base_url: str, body: bytes) -> tuple[int, dict[str, str]]:
    """POST a chat completion; (status, lower-case headers)."""
    call = urllib.request.Request(
        f"{base_url}/chat/completions", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(call, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}


@pytest.fixture(scope="module")
def limited() -> Iterator[JudgeServerProcess]:
    with JudgeServerProcess(latency_s=0.01, rate_limit_rps=2) as server:
        yield server


def test_the_child_server_reports_its_settings_and_counts(limited: JudgeServerProcess) -> None:
    limited.reset()
    stats = limited.stats()
    assert stats["latency_s"] == 0.01 and stats["rate_limit_rps"] == 2.0
    assert stats["call_count"] == 0 and stats["status_counts"] == {}


def test_beyond_the_rate_limit_the_answer_is_429_with_retry_after(limited: JudgeServerProcess) -> None:
    limited.reset()
    answers = [post(limited.base_url, chat_body(f"question {i}")) for i in range(4)]
    statuses = [status for status, _ in answers]
    assert statuses[:2] == [200, 200] and 429 in statuses[2:]
    headers = next(h for status, h in answers if status == 429)
    assert int(headers["retry-after-ms"]) >= 1
    assert 0 < float(headers["retry-after"]) <= 1.0
    stats = limited.stats()
    assert stats["call_count"] == 4
    assert stats["status_counts"]["200"] == 2 and stats["status_counts"]["429"] == statuses.count(429)
    limited.reset()
    assert limited.stats()["call_count"] == 0


def test_close_stops_the_child() -> None:
    server = JudgeServerProcess()
    assert post(server.base_url, chat_body())[0] == 200
    server.close()
    server.close()  # idempotent
    assert server._process.poll() is not None


def test_latency_is_slept_once_per_admitted_request_and_not_for_a_429(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    real_sleep = FakeLLMServer._sleep

    def record(self: FakeLLMServer, seconds: float) -> None:
        if seconds > 0:
            slept.append(seconds)
        real_sleep(self, 0.0)

    monkeypatch.setattr(FakeLLMServer, "_sleep", record)
    with FakeLLMServer(latency_s=0.1, rate_limit_rps=1) as server:
        first = post(server.base_url, chat_body("one"))[0]
        second = post(server.base_url, chat_body("two"))[0]
    assert (first, second) == (200, 429)
    assert slept == [0.1]


# --------------------------------------------------------------------------- workloads


def test_the_pool_has_300_distinct_turns_40_percent_with_tools() -> None:
    pool = turn_pool(300)
    assert len(pool) == 300
    assert len({(t["query"], t["assistant"], t["ground_truth_assistant"]) for t in pool}) == 300
    assert sum("ground_truth_agentic" in t for t in pool) == 120
    assert turn_pool(300) == pool  # seeded: the same request every time


def test_the_benchmark_requests_are_valid_run_requests() -> None:
    pooled = request(REFERENCE, pooled_conversations(30, 5, turn_pool(300)), k=3)
    parsed = parse_run_request(json.loads(json.dumps(pooled)), Settings())
    assert len(parsed.datasets) == 30 and {d.assistant_id for d in parsed.datasets} == {"agent_a", "agent_b"}
    assert len({d.task_id for d in parsed.datasets}) == 10  # tasks of three attempts
    distinct = request(REFERENCE, distinct_conversations(20, 5, tag="t "))
    turns = [b for d in parse_run_request(distinct, Settings()).datasets for b in d.conversation]
    assert len({(b.query, b.assistant, b.ground_truth_assistant) for b in turns}) == 100
