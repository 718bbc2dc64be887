"""Judge cascade (`config.judge_cascade`, issue #16 item 3): LLM calls saved, and agreement with the LLM alone.

The 287 hand-labelled pairs of `tests/data/judge_labels/pairs.jsonl`, one single-turn
conversation each, through `lambda_handler` with `ChatOpenAI` against the fake
OpenAI-compatible server, whose responder returns each pair's human label as its score
(1.0 for "pass", 0.0 for "fail"): a perfect stand-in for an LLM judge. Run twice, the
cascade off (every turn to the "LLM") and on. Figures: the share of LLM calls the
cascade saves, and the share of turns whose verdict (score ≥ 0.7) is the same in both
runs, i.e. the cascade's agreement with the LLM-only run; also for the held-out split
alone. Every disagreement is an offline-settled turn where the offline judge was wrong.
Target (on the held-out split, the pairs the offline judge was not tuned to): at least half
the calls saved at 90 % agreement or more.

    python -m benchmarks.bench_cascade
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.common import ROOT, call_handler, header, openai_params, unscored_turns, verdict
from fair_forge_core.judges.prompt import parse_judge_request
from fair_forge_testing.fake_llm_server import FakeLLMServer, last_user_text
from fair_forge_testing.workloads import OPENAI

LABELS = ROOT / "tests" / "data" / "judge_labels" / "pairs.jsonl"


def load_pairs() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]


def labelling_responder(pairs: list[dict[str, Any]]) -> Any:
    """A responder scoring each judge request with its pair's human label."""
    labels = {(p["query"], p["answer"], p["ground_truth"]): p["label"] for p in pairs}

    def respond(request: dict[str, Any]) -> dict[str, Any]:
        judged = parse_judge_request(last_user_text(request))
        if judged is None:
            raise ValueError("no judge request")
        label = labels[(judged.query, judged.answer, judged.ground_truth)]
        return {"score": 1.0 if label == "pass" else 0.0, "reasoning": f"human label: {label}"}

    return respond


def body(pairs: list[dict[str, Any]], base_url: str, cascade: bool) -> dict[str, Any]:
    return {
        "connector": {"class_path": OPENAI, "params": openai_params(base_url)},
        "datasets": [
            {
                "session_id": f"pair-{i}",
                "assistant_id": "agent",
                "conversation": [
                    {
                        "qa_id": f"q{i}",
                        "query": p["query"],
                        "assistant": p["answer"],
                        "ground_truth_assistant": p["ground_truth"],
                    }
                ],
            }
            for i, p in enumerate(pairs)
        ],
        "config": {"judge_cascade": cascade, "max_concurrency": 16},
    }


def verdicts(result: dict[str, Any]) -> dict[str, tuple[bool | None, str | None]]:
    """qa_id -> (answer correct, which judge decided it)."""
    return {
        i["qa_id"]: (i["answer_correct"], i["judged_by"])
        for m in result["per_conversation_metrics"]
        for i in m["interactions"]
    }


def main() -> None:
    pairs = load_pairs()
    header(f"judge cascade: {len(pairs)} labelled pairs, ChatOpenAI against a fake LLM answering the human label")
    runs: dict[bool, tuple[int, dict[str, tuple[bool | None, str | None]], dict[str, Any]]] = {}
    with FakeLLMServer(labelling_responder(pairs)) as server:
        for cascade in (False, True):
            server.reset_stats()
            call = call_handler(body(pairs, server.base_url, cascade))
            if call.status != 200 or unscored_turns(call.body):
                raise SystemExit(f"cascade={cascade} failed: {call.status} {str(call.body)[:300]}")
            runs[cascade] = (server.call_count, verdicts(call.body), call.body["aggregated_metrics"]["judge_usage"])
    (calls_off, llm_only, _), (calls_on, cascaded, usage) = runs[False], runs[True]
    saved = 1 - calls_on / calls_off
    print(f"   LLM calls: {calls_off} without the cascade, {calls_on} with it: {saved:.1%} saved")
    print(
        f"   judge_usage: cascade_settled_offline {usage['cascade_settled_offline']}, "
        f"cascade_sent_to_llm {usage['cascade_sent_to_llm']}"
    )
    agreement = 0.0
    for name, keep in (("all pairs", lambda p: True), ("held-out", lambda p: p["split"] == "heldout")):
        ids = [f"q{i}" for i, p in enumerate(pairs) if keep(p)]
        same = sum(cascaded[q][0] == llm_only[q][0] for q in ids)
        offline = [q for q in ids if cascaded[q][1] == "offline"]
        wrong_pass = sum(cascaded[q][0] is True and llm_only[q][0] is False for q in offline)
        wrong_fail = sum(cascaded[q][0] is False and llm_only[q][0] is True for q in offline)
        print(
            f"   {name}: verdicts equal to the LLM-only run {same} / {len(ids)} = {same / len(ids):.1%}; "
            f"settled offline {len(offline)} / {len(ids)} ({len(offline) / len(ids):.1%}), of which "
            f"{wrong_pass} false pass(es), {wrong_fail} false fail(s)"
        )
        agreement = same / len(ids)  # the held-out split's, the last one
    print("   " + verdict(saved >= 0.5 and agreement >= 0.9, "≥ 50 % of LLM calls saved at ≥ 90 % held-out agreement"))


if __name__ == "__main__":
    main()
