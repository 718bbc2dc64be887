"""The judge's counters that are not in the response reach the operator: `POST /run`'s
"evaluation finished" log line carries `judge_cache_errors` (the judge cache's failed reads
and writes, `JudgeLedger.total_cache_errors`) and `judge_parse_failures` (replies that did not
parse, `JudgeTelemetry.parse_failures`), which is also the EMF metric `JudgeParseFailures`.

The handler runs in a fresh interpreter (`run_in_subprocess`: its log lines and EMF documents
are everything it printed) against the fake OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fair_forge_testing.builders import conversation, datasets, turn
from fair_forge_testing.fake_llm_server import FakeLLMServer, Reply
from fair_forge_testing.handler_client import run_in_subprocess

SECRET = "sk-counters-secret-0123456789abcdefXYZ"
TURNS = 3


def body(server: FakeLLMServer, **config: Any) -> dict[str, Any]:
    data = datasets(
        conversation("a", [turn("q1", "What is 5 + 3?", "The result is 8.", "8")]),
        conversation("b", [turn("q2", "What is 10 * 2?", "It is 12.", "20")]),
        conversation("c", [turn("q3", "Capital of France?", "Paris, of course.", "Paris")]),
    )
    assert sum(len(d.conversation) for d in data) == TURNS
    return {
        "connector": {
            "class_path": "langchain_openai.chat_models.ChatOpenAI",
            "params": {"model": "judge", "base_url": server.base_url, "api_key": SECRET},
        },
        "datasets": [d.model_dump(mode="json", exclude_none=True) for d in data],
        "config": config,
    }


def finished_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if '"evaluation finished"' in line]


def emf_values(out: str, name: str) -> list[Any]:
    return [
        doc[name]
        for doc in (json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"'))
        if name in doc
    ]


def test_cache_errors_and_parse_failures_are_logged_and_measured(tmp_path: Path) -> None:
    # The cache's directory lies under a regular file: every read and every write of it fails.
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with FakeLLMServer() as server:
        server.enqueue(Reply(content="I think it is fine."))  # one reply that does not parse, then good ones
        requests = [body(server, judge_cache=True), body(server)]
        responses, out = run_in_subprocess(requests, env={"FAIR_FORGE_JUDGE_CACHE": str(blocker / "cache")})
        calls = server.call_count
    assert [r["status"] for r in responses] == [200, 200], responses[0]["body"]
    # By hand: the first request judges 3 turns, one of them twice (the unparseable reply, retried);
    # the second, 3 turns once each.
    assert calls == TURNS + 1 + TURNS
    first, second = finished_lines(out)
    # Each turn of the first request: one failed read before its call, one failed write of its verdict.
    assert (first["judge_cache_errors"], first["judge_parse_failures"]) == (2 * TURNS, 1)
    assert (first["judge_cache_hits"], first["judge_cache_misses"]) == (0, TURNS)
    # The second did not opt in to the cache and every reply parsed.
    assert (second["judge_cache_errors"], second["judge_parse_failures"]) == (0, 0)
    assert emf_values(out, "JudgeParseFailures") == [[1], [0]]
    # The response's judge_usage is unchanged by the counters: neither is a field of it.
    usage = responses[0]["body"]["aggregated_metrics"]["judge_usage"]
    assert not {"cache_errors", "parse_failures"} & set(usage)
    assert usage["cache_enabled"] is True and usage["calls"] == TURNS + 1
    assert SECRET not in out and all(SECRET not in r["raw"] for r in responses)
