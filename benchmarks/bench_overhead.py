"""Target 3 — our own overhead: 10,000 conversations × 5 turns on the ReferenceJudge.

The request (built once, ~17.5 MB of JSON): every turn is drawn (seeded) from a pool
of 300 distinct turns — 105 labelled (query, answer, ground truth) pairs
(`benchmarks/data/answer_pairs.jsonl`, a frozen copy of the judge agreement set), 120
generated tool turns (calculator, unit conversion with argument rules and
`tool_sequence_matters`, weather with an extra search call; 1 in 5 calculator calls
with a wrong argument) and 75 rewordings of labelled pairs — so 40 % of turns carry
tools and the judge has 300 distinct requests to answer, as a test set reused across
attempts would give. Two assistants, tasks of three attempts (so `by_assistant` and
`per_task` are computed), k = 3, per-turn detail on.

Each run is a fresh process: it makes one small warm-up request (imports), reads the
body from a file and times one `lambda_handler` call; peak RSS is that process's
`ru_maxrss`. The service's request limits are raised in that process, since the
request is far above them (and above what API Gateway carries):
FAIR_FORGE_MAX_BODY_BYTES, FAIR_FORGE_MAX_CONVERSATIONS, FAIR_FORGE_MAX_TURNS and
FAIR_FORGE_MAX_RESPONSE_BYTES (the full ~23 MB response is built and measured).
Target: median ≤ 2.5 s and peak RSS ≤ 500 MB (issue #27 target 2: ≤ 1.5 s and ≤ 350 MB).

With `--baseline DIR` (a checkout of other code, e.g. `git archive main | tar -x -C DIR`),
each run is a pair of fresh processes, this code and DIR's, in alternating order; both are
measured by this file's `child` (run from DIR with DIR first on the path: DIR's handler,
workloads and `benchmarks.common`), and their responses must be the same JSON (sha256 of
the body without its request id).

    python -m benchmarks.bench_overhead [--runs 5] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, header, line, verdict
from fair_forge_testing.workloads import REFERENCE, pooled_conversations, request, turn_pool

CONVERSATIONS, TURNS, POOL = 10_000, 5, 300
LIMITS = {
    "FAIR_FORGE_MAX_BODY_BYTES": "100000000",
    "FAIR_FORGE_MAX_CONVERSATIONS": "100000",
    "FAIR_FORGE_MAX_TURNS": "1000000",
    "FAIR_FORGE_MAX_TOOL_CALLS": "1000000",
    "FAIR_FORGE_MAX_RESPONSE_BYTES": "100000000",
}


def child(path: str) -> None:
    """One measured request in this (fresh) process; prints one JSON line."""
    from benchmarks.common import call_handler

    warm = request(REFERENCE, pooled_conversations(4, 5, turn_pool(POOL), seed=1), k=3)
    assert call_handler(warm).status == 200
    raw = Path(path).read_text(encoding="utf-8")
    before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    call = call_handler(raw)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    body = call.body
    metrics = body.get("per_conversation_metrics") or []
    print(
        json.dumps(
            {
                "status": call.status,
                "seconds": call.seconds,
                "peak_rss_mb": peak_mb,
                "rss_before_mb": before_mb,
                "conversations": len(metrics),
                "turns": sum(m["total_interactions"] for m in metrics),
                "unscored": sum(s is None for m in metrics for s in m["correctness_scores"]),
                "tool_scores": sum(s is not None for m in metrics for s in m["tool_correctness_scores"]),
                "response_mb": len(json.dumps(body)) / 1e6,
                "error": body.get("error"),
                "sha256": hashlib.sha256(json.dumps({**body, "request_id": None}).encode()).hexdigest(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", help="a checkout of other code, measured alternately with this one")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return

    header(f"overhead: {CONVERSATIONS:,} conversations × {TURNS} turns, ReferenceJudge, through lambda_handler")
    pool = turn_pool(POOL)
    conversations = pooled_conversations(CONVERSATIONS, TURNS, pool)
    raw = json.dumps(request(REFERENCE, conversations, k=3))
    turns = [t for c in conversations for t in c["conversation"]]
    distinct = {(t["query"], t["assistant"], t["ground_truth_assistant"]) for t in turns}
    with_tools = sum("ground_truth_agentic" in t for t in turns)
    print(
        f"   request: {len(raw) / 1e6:.1f} MB, {len(turns):,} turns drawn from a pool of {len(pool)} distinct turns; "
        f"{len(distinct)} distinct judge requests; {with_tools:,} turns ({with_tools / len(turns):.0%}) with tools"
    )
    print("   limits raised in the measured process: " + ", ".join(f"{k}={v}" for k, v in LIMITS.items()))
    del conversations, turns

    baseline = Path(args.baseline).resolve() if args.baseline else None
    results: list[dict[str, Any]] = []
    before: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "request.json"
        path.write_text(raw, encoding="utf-8")
        del raw
        order = [(ROOT, results), *([(baseline, before)] if baseline is not None else [])]
        for index in range(args.runs):
            for tree, into in order if index % 2 == 0 else order[::-1]:
                into.append(measure(tree, path))
    first = results[0]
    print(
        f"   response: {first['response_mb']:.1f} MB, {first['conversations']:,} conversations, "
        f"{first['turns']:,} turns, {first['tool_scores']:,} tool scores, {first['unscored']} unscored"
    )
    print("   " + line("wall", [r["seconds"] for r in results]))
    print("   " + line("peak RSS", [r["peak_rss_mb"] for r in results], unit="MB", digits=0))
    print(f"   (RSS after import and warm-up, before the request: {first['rss_before_mb']:.0f} MB)")
    if before:
        print(f"   baseline {baseline}, alternating with this code:")
        print("   " + line("baseline wall", [r["seconds"] for r in before]))
        print("   " + line("baseline peak RSS", [r["peak_rss_mb"] for r in before], unit="MB", digits=0))
        for name, key in (("wall", "seconds"), ("peak RSS", "peak_rss_mb")):
            ratio = statistics.median(r[key] for r in results) / statistics.median(r[key] for r in before)
            print(f"   {name} ratio (median this / median baseline): {ratio:.2f}")
        same = {r["sha256"] for r in results + before}
        print(f"   responses the same JSON in every run of both: {'yes' if len(same) == 1 else 'NO'}")
    wall = statistics.median(r["seconds"] for r in results)
    rss = statistics.median(r["peak_rss_mb"] for r in results)
    print("   " + verdict(wall <= 2.5, "median ≤ 2.5 s"))
    print("   " + verdict(rss <= 500, "peak RSS ≤ 500 MB"))
    print("   " + verdict(wall <= 1.5, "median ≤ 1.5 s (#27 target 2)"))
    print("   " + verdict(rss <= 350, "peak RSS ≤ 350 MB (#27 target 2)"))


def measure(tree: Path, path: Path) -> dict[str, Any]:
    """One fresh process running `child` on the code of `tree` (this checkout or a baseline)."""
    # Here, not at the top: the child runs this file on a baseline's packages, which may predate it.
    from benchmarks.common import run_child

    result = run_child(tree, __file__, [str(path)], LIMITS)
    if result["status"] != 200 or result["turns"] != CONVERSATIONS * TURNS:
        raise SystemExit(f"unexpected response ({tree}): {result}")
    return result


if __name__ == "__main__":
    main()
