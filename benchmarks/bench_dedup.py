"""Target 5 — dedup: a request whose every turn repeats one (query, answer, ground truth).

200 conversations × 5 turns, all the same turn (distinct qa_ids and session_ids, the
same context and language — the judge sees those too, so they are part of what must
repeat), `ChatOpenAI` against the benchmark judge server (100 ms a call), through
`lambda_handler`. Target: exactly one judge call per request, every turn scored with
that one verdict.

    python -m benchmarks.bench_dedup [--runs 5]
"""

from __future__ import annotations

import argparse

from benchmarks.common import call_handler, header, line, openai_params, unscored_turns, verdict
from fair_forge_testing.judge_server import JudgeServerProcess
from fair_forge_testing.workloads import OPENAI, request

CONVERSATIONS, TURNS = 200, 5


def repeated(tag: str) -> list[dict]:
    turn = {"query": f"{tag}What is 5 + 3?", "assistant": "The result is 8.", "ground_truth_assistant": "8"}
    return [
        {
            "session_id": f"s{c}",
            "assistant_id": "agent_v1",
            "conversation": [{"qa_id": f"q{c}-{t}", **turn} for t in range(TURNS)],
        }
        for c in range(CONVERSATIONS)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    header(f"dedup: {CONVERSATIONS} conversations × {TURNS} turns repeating one turn, ChatOpenAI, judge 100 ms")
    seconds, calls = [], []
    with JudgeServerProcess(latency_s=0.1) as server:
        call_handler(request(OPENAI, repeated("warm-up "), params=openai_params(server.base_url)))
        for i in range(args.runs):
            server.reset()
            call = call_handler(request(OPENAI, repeated(f"run {i}: "), params=openai_params(server.base_url)))
            scores = {s for m in call.body.get("per_conversation_metrics", []) for s in m["correctness_scores"]}
            if call.status != 200 or unscored_turns(call.body) or len(scores) != 1:
                raise SystemExit(f"run {i} failed: {call.status} {str(call.body)[:300]}")
            seconds.append(call.seconds)
            calls.append(server.stats()["call_count"])
    print(f"   judge calls per request: {calls} (for {CONVERSATIONS * TURNS} turns each)")
    print("   " + line("wall", seconds))
    print("   " + verdict(all(c == 1 for c in calls), "exactly one judge call per request"))


if __name__ == "__main__":
    main()
