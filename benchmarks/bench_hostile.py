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
- `… (10,000 × 100,000)`: issue #32's attacks as filed — one `expected_state` leaf
  ``{"$any_of": [10,000 × {}]}`` against a `final_state` of 100,000 keys (item 1), and one
  expected call whose parameter is that `$any_of` against a used call of 100,000 keys, scored by
  the rubric and under ``trajectory_match: "unordered"`` (item 2): now refused with 413 (more
  than `FAIR_FORGE_MAX_ANY_OF_OPTIONS` options) before any work;
- `end state any_of × keys, at the bound`: as many leaves ``{"$any_of": [1,000 × {}]}`` as the
  body holds beside a final state whose every such key is a wide object;
- `rubric any_of × keys, at the bound` (and `trajectory …`): 64 expected calls, each parameter
  an `$any_of` of 1,000 options, against 64 used calls whose parameter is as wide as the body
  lets it: every pair compared;
- `rubric rule options × 64`: expected calls whose parameter is an `$any_of` of `$text` rules,
  64 × 64 pairs a turn, turns until the rule work is at its bound (`FAIR_FORGE_MAX_RULE_WORK`);
- `end state, deep`: a final state 26 objects deep with as many leaves as the body holds, every
  one of them expected (the walk down to the leaves and the per-leaf paths);
- `rubric 64 × 64 wide`: turns of 64 expected × 64 used calls of one tool, each parameter a
  wide object, and the same with nested lists (`64 × 64 deep`): every pair compared;
- `caller text, …` (issue #32): answers as long as a text field may be, as many as the body
  holds, whose text the judge's reply is searched against for a verdict the caller wrote: JSON
  built to make the search restart deep inside itself, and verdict-shaped objects (the offline
  judge's own time on such long answers is part of the figure);
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
COMPARISON_TARGET_S = 3.0
"""Issue #32's target for every comparison of values (end states, argument rules, trajectories)."""


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


BODY_LIMIT = 3_000_000
"""The default request body limit (`FAIR_FORGE_BODY_LIMIT`): the comparison cases fill it."""


def _keys(count: int) -> dict[str, int]:
    return {f"k{i}": 0 for i in range(count)}  # `"k12345": 0, `: 13 bytes a key


MAX_OPTIONS, MAX_RULE_WORK = 1_000, 1_000_000
"""The default `FAIR_FORGE_MAX_ANY_OF_OPTIONS` and `FAIR_FORGE_MAX_RULE_WORK` (docs/limits.md)."""


def state_any_of_case(options: int, keys: int) -> dict[str, Any]:
    """One `expected_state` leaf {"$any_of": [options × {}]} against a final state of `keys` keys."""
    turn = {"qa_id": "q0", "query": "Book it?", "assistant": "Booked.", "ground_truth_assistant": "Booked."}
    conversation = {
        "session_id": "s0",
        "assistant_id": "agent",
        "conversation": [turn],
        "expected_state": {"$any_of": [{}] * options},
        "final_state": _keys(keys),
    }
    return request(REFERENCE, [conversation], k=3)


def rubric_any_of_case(options: int, keys: int, trajectory: bool) -> dict[str, Any]:
    """One expected call {"p": {"$any_of": [options × {}]}} against one used call whose "p" has `keys` keys."""
    expected = [{"tool_name": "t", "parameters": {"p": {"$any_of": [{}] * options}}}]
    used = [{"tool_name": "t", "parameters": {"p": _keys(keys)}}]
    conversations = _conversations([_turn(0, "Done.", used, expected)])
    if trajectory:
        conversations[0]["tool_policy"] = {"trajectory_match": "unordered"}
    return request(REFERENCE, conversations, k=3)


def state_any_of_bounded_case() -> dict[str, Any]:
    """Leaves {"$any_of": [1,000 × {}]} (4 KB each) in half the body, each against a final-state
    object of as many keys as the other half holds."""
    leaves = (BODY_LIMIT // 2) // (4 * MAX_OPTIONS)
    keys = (BODY_LIMIT // 2 - 40_000) // (13 * leaves)
    turn = {"qa_id": "q0", "query": "Book it?", "assistant": "Booked.", "ground_truth_assistant": "Booked."}
    conversation = {
        "session_id": "s0",
        "assistant_id": "agent",
        "conversation": [turn],
        "expected_state": {f"s{i}": {"$any_of": [{}] * MAX_OPTIONS} for i in range(leaves)},
        "final_state": {f"s{i}": _keys(keys) for i in range(leaves)},
    }
    return request(REFERENCE, [conversation], k=3)


def rubric_any_of_bounded_case(trajectory: bool) -> dict[str, Any]:
    """64 expected calls {"p": {"$any_of": [1,000 × {}]}} against 64 used calls whose "p" has as
    many keys as the rest of the body holds; under `trajectory` also an unordered trajectory match."""
    keys = (BODY_LIMIT - PER_TURN * 4 * MAX_OPTIONS - 60_000) // (13 * PER_TURN)
    expected = [{"tool_name": "t", "parameters": {"p": {"$any_of": [{}] * MAX_OPTIONS}}} for _ in range(PER_TURN)]
    used = [{"tool_name": "t", "parameters": {"p": {**_keys(keys), "n": i}}} for i in range(PER_TURN)]
    conversations = _conversations([_turn(0, "Done.", used, expected)])
    if trajectory:
        conversations[0]["tool_policy"] = {"trajectory_match": "unordered"}
    return request(REFERENCE, conversations, k=3)


def rule_options_case() -> dict[str, Any]:
    """Turns of 64 expected calls whose "p" is an `$any_of` of `$text` rules (none matching) and
    64 used calls of the same tool with a long text, as many turns as the rule work allows."""
    options = 59  # rule work per expected call: 1 (its parameters) + 1 (the $any_of) + 59, times 64 used calls
    per_turn = PER_TURN * PER_TURN * (2 + options)
    rules = {"$any_of": [{"$text": f"Option {i}"} for i in range(options)]}
    text = "a long used value " * 50
    turns = [
        _turn(
            t,
            "Done.",
            [{"tool_name": "t", "parameters": {"p": f"{text}{t}-{i}"}} for i in range(PER_TURN)],
            [{"tool_name": "t", "parameters": {"p": rules}} for _ in range(PER_TURN)],
        )
        for t in range(MAX_RULE_WORK // per_turn)
    ]
    return request(REFERENCE, _conversations(turns), k=3)


def state_deep_case() -> dict[str, Any]:
    """A final state nested as deep as the nesting limit lets it, its bottom object as wide as
    the body lets it, and the same expected: every leaf walked down to and compared."""
    depth, width = 26, (BODY_LIMIT - 20_000) // 26

    def nested(leaf: dict[str, Any]) -> dict[str, Any]:
        for level in range(depth):
            leaf = {f"n{level}": leaf}
        return leaf

    turn = {"qa_id": "q0", "query": "Book it?", "assistant": "Booked.", "ground_truth_assistant": "Booked."}
    conversation = {
        "session_id": "s0",
        "assistant_id": "agent",
        "conversation": [turn],
        "expected_state": nested(_keys(width)),
        "final_state": nested(_keys(width)),
    }
    return request(REFERENCE, [conversation], k=3)


def wide_pairs_case(deep: bool) -> dict[str, Any]:
    """One turn of 64 expected × 64 used calls of one tool, each parameter as large as the body
    lets 128 of them be: wide objects (2,300 keys, all agreeing but the last) or, `deep`, one list nested 21
    levels holding 3,800 numbers (the last one differs), so every pair compares everything."""
    if deep:
        length = (BODY_LIMIT - 40_000) // (2 * PER_TURN * 6)

        def parameter(last: int) -> dict[str, Any]:
            value: Any = [*range(length - 1), last]
            for _ in range(21):
                value = [value]
            return {"p": value}
    else:
        width = (BODY_LIMIT - 40_000) // (2 * PER_TURN * 13)

        def parameter(last: int) -> dict[str, Any]:
            return {**_keys(width - 1), "last": last}

    expected = [{"tool_name": "t", "parameters": parameter(-1)} for _ in range(PER_TURN)]
    used = [{"tool_name": "t", "parameters": parameter(i)} for i in range(PER_TURN)]
    return request(REFERENCE, _conversations([_turn(0, "Done.", used, expected)]), k=3)


def caller_text_case(unit: str) -> dict[str, Any]:
    """Answers of 90,000 characters (under the 100,000 a text field may hold) repeating `unit`, as
    many turns as the body holds: the caller's text the judge's reply is checked against for a
    verdict it wrote (`judges.verdict.CallerText`). `{"a":[` makes every object restart deep inside
    itself (the search stops at its budget); a verdict-shaped object gives as many objects as fit."""
    answer = (unit * (90_000 // len(unit) + 1))[:90_000]
    escaped = len(json.dumps(answer))
    turns = [_turn(i, f"{answer[:-6]}{i:06d}", [], []) for i in range((BODY_LIMIT - 20_000) // escaped)]
    return request(REFERENCE, _conversations(turns), k=3)


def over_the_limits_cases() -> dict[str, dict[str, Any]]:
    many = [{"tool_name": "tool", "parameters": {"a": i}} for i in range(3_000)]
    return {
        "3,000 × 3,000 calls in one turn": request(REFERENCE, _conversations([_turn(0, "x", many, many)]), k=3),
        "200 assistants, k = 1000, Bayesian": assistants_case(200, 1000),
    }


TRACE_ID = "ab" * 16


def _traces_body(fmt: str, items: list[Any], task_id: str) -> dict[str, Any]:
    """`POST /run`'s traces form: `items` in format `fmt`, one reference for the task `task_id`."""
    return {
        "connector": {"class_path": REFERENCE},
        "traces": {"format": fmt, "items": items},
        "references": [{"task_id": task_id, "ground_truth_assistant": "a"}],
        "config": {"k": 1},
    }


def _fill_traces(build: Any, size_of_one: int) -> dict[str, Any]:
    """`build(n)` with the largest n (from a first estimate of the bytes one unit adds) whose body
    stays under the body limit."""
    n = BODY_LIMIT // size_of_one
    while len(json.dumps(build(n))) > BODY_LIMIT:
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

    return build(observations) if observations else _fill_traces(build, 60)


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

    return build(spans) if spans else _fill_traces(build, 330)


CASES = {
    "pairing": lambda: pairing_case(distinct_names=False),
    "alignment": lambda: pairing_case(distinct_names=True),
    "ties": ties_case,
    "result_in_answer": result_in_answer_case,
    "assistants": lambda: assistants_case(ASSISTANTS, LARGEST_K),
    "k = 1000": lambda: assistants_case(1, 1000),
    "distinct rates": distinct_rates_case,
    # Issue #32's comparisons: the attacks as filed (refused now), then the worst within the bounds.
    "end state any_of × keys (10,000 × 100,000)": lambda: state_any_of_case(10_000, 100_000),
    "rubric any_of × keys (10,000 × 100,000)": lambda: rubric_any_of_case(10_000, 100_000, trajectory=False),
    "trajectory any_of × keys (10,000 × 100,000)": lambda: rubric_any_of_case(10_000, 100_000, trajectory=True),
    "end state any_of × keys, at the bound": state_any_of_bounded_case,
    "rubric any_of × keys, at the bound": lambda: rubric_any_of_bounded_case(trajectory=False),
    "trajectory any_of × keys, at the bound": lambda: rubric_any_of_bounded_case(trajectory=True),
    "rubric rule options × 64": rule_options_case,
    "end state, deep": state_deep_case,
    "rubric 64 × 64 wide": lambda: wide_pairs_case(deep=False),
    "rubric 64 × 64 deep": lambda: wide_pairs_case(deep=True),
    "langfuse chain": langfuse_chain_case,
    "mcp chain": mcp_chain_case,
    "caller text, objects restarting deep": lambda: caller_text_case('{"a":['),
    "caller text, verdict-shaped objects": lambda: caller_text_case('{"score": 1.0, "reasoning": "x"} '),
}
COMPARISON_CASES = frozenset(
    name for name in CASES if "any_of" in name or "64 ×" in name or "× 64" in name or "end state" in name
)
STATUS = {"mcp chain": 413, "end state, deep": 413} | {name: 413 for name in CASES if "(10,000 × 100,000)" in name}
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
    parser.add_argument("--only", help="run only the cases whose name contains this text")
    parser.add_argument("--timeout", type=float, help="stop a case after this many seconds (reported, not failed)")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    header("hostile bodies: deterministic work at the default limits, ReferenceJudge, through lambda_handler")
    for name in [*CASES, "judge reply", "over"]:
        if args.only and args.only not in name:
            continue
        try:
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_hostile", "--child", name],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
                timeout=args.timeout,
            ).stdout
        except subprocess.TimeoutExpired:
            print(f"   {name}: stopped after {args.timeout:g} s of wall time")
            continue
        target = COMPARISON_TARGET_S if name in COMPARISON_CASES else CPU_TARGET_S
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
                ok = row["status"] == STATUS.get(name, 200) and row["cpu_s"] <= target
                print(f"   {verdict(ok, f'CPU ≤ {target:g} s')}")
                print(f"   {verdict(row['rss_added_mb'] <= RSS_TARGET_MB, f'added RSS ≤ {RSS_TARGET_MB:g} MB')}")


if __name__ == "__main__":
    main()
