"""Hostile bodies: the most deterministic work a request within the limits can ask for.

Each case runs in a fresh process, through `lambda_handler`, on the ReferenceJudge
(every turn distinct, so nothing is shared), and reports the CPU time and the peak
RSS the request added. The work is bounded by the service's limits (docs/limits.md:
tool calls per turn and per request, distinct assistants, k), so these are the worst
cases we know of at the default limits:

- `pairing`: turns of 64 expected × 64 used calls of one tool (the per-turn limit),
  every call with different arguments, `tool_sequence_matters`, up to the 20,000 tool
  calls of a request;
- `alignment`: the same with 64 distinct tool names per turn, in reverse order (the
  in-order alignment and the LCS at their largest);
- `ties`: turns of six identical calls of one tool among 58 distinct ones, order scored
  (the review's case: every pairing of the six is equally good, so the in-order
  tie-break is searched; 150 turns);
- `result_in_answer`: 64 calls per turn each returning 200 numbers and 200 strings,
  against an answer of 60,000 characters holding 10,000 numbers;
- `assistants`: 50 distinct assistants (the limit), Bayesian mode, 2,000 conversations,
  and the largest k the curve limit allows (51 curves × max(k, 10) ≤ 10,000 points: k =
  196), so 51 aggregates with credible bounds at every point;
- `k = 1000`: the same 2,000 conversations with one assistant at the largest k;
- `distinct rates`: a conversation for every (n, c) with n ≤ 30, Bayesian, k = 1000 (the
  per-conversation estimates are memoised, so distinct ones are the costly ones);
- `judge reply`: a 1.3 KB request (examples/calculator.json) whose judge, on a loopback
  endpoint the operator allows, answers every call with 100 MB of text (the judge
  server runs in a process of its own, so its memory is not counted);
- `langfuse chain` (issue #32): one Langfuse trace through `POST /run`'s traces form whose
  observations (about 46,000) form one `parentObservationId` chain, to the body limit;
- `mcp chain` (issue #32): OTLP spans through the traces form, about 5,900 MCP `tools/call`
  spans under the bottom of a chain of as many plain spans, to the body limit; the import is
  the work, then 413 (too many tool calls in one turn);
- `over the limits`: the audit's original bodies (3,000 × 3,000 calls in one turn,
  200 assistants with k = 1000), which must be refused with 413 before any work.

Target (issue #12): no body under the limits costs more than 5 s of CPU or 500 MB
beyond what the judge itself needs. "After the judge" (`after_judge_ms` of the handler's
log) is the aggregation and the response, the work the judge's deadline does not stop:
it must fit in the 2 s between the 27 s budget and API Gateway's 29 s.

    python -m benchmarks.bench_hostile
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

from benchmarks.common import ROOT, header, openai_params, verdict
from fair_forge_testing.judge_server import JudgeServerProcess
from fair_forge_testing.workloads import OPENAI, REFERENCE, request

PER_TURN, PER_REQUEST, ASSISTANTS, LARGEST_K = 64, 20_000, 50, 10_000 // 51
JUDGE_REPLY_BYTES = 100_000_000
CPU_TARGET_S, RSS_TARGET_MB = 5.0, 500.0


def _turn(index: int, answer: str, used: list[dict[str, Any]], expected: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "qa_id": f"q{index}",
        "query": f"Task {index}?",
        "assistant": answer,
        "ground_truth_assistant": f"Answer {index}",
        "agentic": {"tools_used": used, "final_answer_uses_tools": True},
        "ground_truth_agentic": {"expected_tools": expected, "tool_sequence_matters": True},
    }


def _conversations(turns: list[dict[str, Any]], assistants: int = 1) -> list[dict[str, Any]]:
    return [
        {"session_id": f"s{i}", "assistant_id": f"agent-{i % assistants}", "conversation": [turn]}
        for i, turn in enumerate(turns)
    ]


def pairing_case(distinct_names: bool) -> dict[str, Any]:
    turns = []
    for t in range(PER_REQUEST // (2 * PER_TURN)):

        def name(i: int) -> str:
            return f"tool{i}" if distinct_names else "tool"

        expected = [
            {"tool_name": name(i), "parameters": {"a": i, "b": t, "c": i % 7, "d": f"x{i}"}, "step": i}
            for i in range(PER_TURN)
        ]
        used = [
            {"tool_name": name(PER_TURN - 1 - i), "parameters": {"a": i, "b": t, "c": i % 5}, "step": i}
            for i in range(PER_TURN)
        ]
        turns.append(_turn(t, f"Answer {t}", used, expected))
    return request(REFERENCE, _conversations(turns), k=3)


def ties_case() -> dict[str, Any]:
    calls = [{"tool_name": "t"}] * 6 + [{"tool_name": f"n{i}"} for i in range(58)]
    turns = [_turn(t, f"Answer {t}", calls, calls) for t in range(150)]
    for t, turn in enumerate(turns):
        turn["agentic"]["tools_used"] = [{**call, "parameters": {"turn": t}} for call in calls]  # distinct turns
    return request(REFERENCE, _conversations(turns), k=3)


def result_in_answer_case() -> dict[str, Any]:
    answer = " ".join(f"v{i} {i * 7919 % 100_003}" for i in range(10_000))[:60_000]
    turns = []
    for t in range(8):
        used = [
            {
                "tool_name": "lookup",
                "parameters": {"i": i},
                "result": {
                    "numbers": [t * 1e6 + i * 1000 + j + 0.5 for j in range(200)],
                    "names": [f"n{t}-{i}-{j}" for j in range(200)],
                },
            }
            for i in range(PER_TURN)
        ]
        expected = [{"tool_name": "lookup", "parameters": {"i": i}} for i in range(PER_TURN)]
        turns.append(_turn(t, answer + f" turn {t}", used, expected))
    return request(REFERENCE, _conversations(turns), k=3)


def assistants_case(assistants: int, k: int) -> dict[str, Any]:
    turns = [
        {
            "qa_id": f"q{i}",
            "query": f"What is {i} plus 1?",
            "assistant": f"It is {i + 1}.",
            "ground_truth_assistant": str(i + 1),
        }
        for i in range(2_000)
    ]
    return request(REFERENCE, _conversations(turns, assistants), k=k, statistical_mode="bayesian")


def distinct_rates_case() -> dict[str, Any]:
    """One conversation for every (n, c) with n ≤ 30 (9,920 turns), Bayesian, k = 1000:
    as many distinct per-conversation estimates as the turn limit allows, each O(k)."""
    conversations = []
    for n in range(1, 31):
        for c in range(n + 1):
            turns = [
                {
                    "qa_id": f"q{i}",
                    "query": f"What is {i} plus 1?",
                    "assistant": f"It is {i + 1 if i < c else i + 2}.",
                    "ground_truth_assistant": str(i + 1),
                }
                for i in range(n)
            ]
            conversations.append({"session_id": f"s{n}-{c}", "assistant_id": "agent", "conversation": turns})
    return request(REFERENCE, conversations, k=1000, statistical_mode="bayesian")


def over_the_limits_cases() -> dict[str, dict[str, Any]]:
    many = [{"tool_name": "tool", "parameters": {"a": i}} for i in range(3_000)]
    return {
        "3,000 × 3,000 calls in one turn": request(REFERENCE, _conversations([_turn(0, "x", many, many)]), k=3),
        "200 assistants, k = 1000, Bayesian": assistants_case(200, 1000),
    }


MAX_BODY_BYTES = 3_000_000  # the request body limit (docs/limits.md)
TRACE_ID = "ab" * 16


def _traces_body(fmt: str, items: list[Any], task_id: str) -> dict[str, Any]:
    """`POST /run`'s traces form: `items` in format `fmt`, one reference for the task `task_id`."""
    return {
        "connector": {"class_path": REFERENCE},
        "traces": {"format": fmt, "items": items},
        "references": [{"task_id": task_id, "ground_truth_assistant": "a"}],
        "config": {"k": 1},
    }


def _fill(build: Any, size_of_one: int) -> dict[str, Any]:
    """`build(n)` with the largest n (from a first estimate of the bytes one unit adds) whose body
    stays under the body limit."""
    n = MAX_BODY_BYTES // size_of_one
    while len(json.dumps(build(n))) > MAX_BODY_BYTES:
        n = n * 99 // 100
    return build(n)


def langfuse_chain_case(observations: int | None = None) -> dict[str, Any]:
    """Issue #32, item 3: one Langfuse trace whose observations form one `parentObservationId`
    chain (no TOOL in it, so every walk up went to the root), as long as the body limit allows."""

    def build(n: int) -> dict[str, Any]:
        chain = [{"id": f"o{i}", "type": "SPAN", "parentObservationId": f"o{i - 1}"} for i in range(n)]
        chain[0].pop("parentObservationId")
        trace = {"id": "t", "input": "q", "output": "a", "observations": chain}
        return _traces_body("langfuse", [trace], "t")

    return build(observations) if observations else _fill(build, 60)


def mcp_chain_case(spans: int | None = None) -> dict[str, Any]:
    """Issue #32, item 4: MCP `tools/call` spans, all under the bottom of one chain of as many
    plain spans (each MCP span's walk up went through the whole chain), sized to the body limit;
    refused with 413 (too many tool calls in one turn) once imported."""

    def attrs(**values: str) -> list[dict[str, Any]]:
        return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]

    def one(number: int, parent: int | None, **values: str) -> dict[str, Any]:
        span = {"traceId": TRACE_ID, "spanId": f"{number:016x}", "startTimeUnixNano": str(number)}
        span |= {"endTimeUnixNano": str(number), "attributes": attrs(**values)}
        return span | ({"parentSpanId": f"{parent:016x}"} if parent is not None else {})

    def build(n: int) -> dict[str, Any]:
        chat = attrs(**{"gen_ai.operation.name": "chat"})
        chat += attrs(
            **{"gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "q"}]}])}
        )
        chat += attrs(
            **{
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "a"}]}]
                )
            }
        )
        root = {
            "traceId": TRACE_ID,
            "spanId": f"{1:016x}",
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "1",
            "attributes": chat,
        }
        chain = [one(2 + i, 1 + i) for i in range(n)]
        calls = [one(2 + n + j, 1 + n, **{"mcp.method.name": "tools/call", "gen_ai.tool.name": "f"}) for j in range(n)]
        request = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [root, *chain, *calls]}]}]}
        return _traces_body("otel", [request], TRACE_ID)

    return build(spans) if spans else _fill(build, 330)


CASES = {
    "pairing": lambda: pairing_case(distinct_names=False),
    "alignment": lambda: pairing_case(distinct_names=True),
    "ties": ties_case,
    "result_in_answer": result_in_answer_case,
    "assistants": lambda: assistants_case(ASSISTANTS, LARGEST_K),
    "k = 1000": lambda: assistants_case(1, 1000),
    "distinct rates": distinct_rates_case,
    "langfuse chain": langfuse_chain_case,
    "mcp chain": mcp_chain_case,
}
STATUS = {"mcp chain": 413}
"""Cases answered with another status than 200 once their work is done (default 200)."""


def child(name: str) -> None:
    """One case in this fresh process; prints one JSON line per body."""
    os.environ["POWERTOOLS_LOG_LEVEL"] = "INFO"  # for the judge phase's time in "evaluation finished"
    with contextlib.ExitStack() as stack:
        if name == "over":
            bodies = over_the_limits_cases()
        elif name == "judge reply":
            judge = stack.enter_context(JudgeServerProcess(reply_bytes=JUDGE_REPLY_BYTES))
            calculator = json.loads((ROOT / "examples" / "calculator.json").read_text())
            bodies = {name: calculator | {"connector": {"class_path": OPENAI, "params": openai_params(judge.base_url)}}}
        else:
            bodies = {name: CASES[name]()}
        _measure(bodies)


def _measure(bodies: dict[str, dict[str, Any]]) -> None:
    """Run each body through `lambda_handler` after a warm-up; print one JSON line each."""
    from benchmarks.common import call_handler

    assert call_handler(request(REFERENCE, _conversations([_turn(0, "8", [], [])]), k=3)).status == 200  # warm-up
    for label, body in bodies.items():
        raw = json.dumps(body)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cpu_before = time.process_time()
        call = call_handler(raw)
        cpu = time.process_time() - cpu_before
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            json.dumps(
                {
                    "case": label,
                    "status": call.status,
                    "body_kb": len(raw) / 1000,
                    "cpu_s": cpu,
                    "wall_s": call.seconds,
                    "rss_added_mb": rss_after - rss_before,
                    "after_judge_s": call.after_judge_s,
                    "error": call.body.get("error"),
                }
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    header("hostile bodies: deterministic work at the default limits, ReferenceJudge, through lambda_handler")
    for name in [*CASES, "judge reply", "over"]:
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_hostile", "--child", name],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for row in (json.loads(line) for line in out.splitlines() if line.startswith('{"case"')):
            print(
                f"   {row['case']}: HTTP {row['status']}, body {row['body_kb']:,.0f} KB, "
                f"CPU {row['cpu_s']:.2f} s, wall {row['wall_s']:.2f} s, +{row['rss_added_mb']:.0f} MB peak RSS"
                + (f", {row['after_judge_s']:.2f} s after the judge" if row["after_judge_s"] is not None else "")
                + (f" — {row['error']}" if row["status"] != 200 else "")
            )
            if name == "over":
                print(f"   {verdict(row['status'] == 413, 'refused with 413')}")
            elif name == "judge reply":
                print(f"   {verdict(row['rss_added_mb'] <= RSS_TARGET_MB, f'added RSS ≤ {RSS_TARGET_MB:g} MB')}")
            else:
                print(
                    f"   {verdict(row['status'] == STATUS.get(name, 200) and row['cpu_s'] <= CPU_TARGET_S, f'CPU ≤ {CPU_TARGET_S:g} s')}"
                )
                print(f"   {verdict(row['rss_added_mb'] <= RSS_TARGET_MB, f'added RSS ≤ {RSS_TARGET_MB:g} MB')}")


if __name__ == "__main__":
    main()
