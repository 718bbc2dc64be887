"""The offline judge without the LLM judge's path (issue #24): time per turn of the rules judge
(`judges.offline.RulesJudge`, what an evaluation now uses for `ReferenceJudge`) against
`ReferenceJudge` asked as a chat model through `judges.llm.AnswerJudge` (a prompt written, read
back, a JSON verdict written and parsed, the limiter and the LangChain run), side by side in one
run, on the same distinct turns: every labelled pair of the repository, each judged once.

    python -m benchmarks.bench_judge_path
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from pathlib import Path

from benchmarks.common import header, verdict
from fair_forge_core.evaluate import judge_all
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.judges.base import JudgeTelemetry, RetryPolicy, RunContext
from fair_forge_core.judges.llm import AnswerJudge
from fair_forge_core.judges.offline import RulesJudge
from fair_forge_core.judges.prompt import JudgeRequest
from fair_forge_core.schemas import EvaluationConfig

ROOT = Path(__file__).resolve().parents[1]
SETS = (
    "tests/data/judge_labels/pairs.jsonl",
    "tests/data/judge_labels/fresh.jsonl",
    "tests/data/judge_agreement.jsonl",
)
RUNS = 5


def requests() -> list[JudgeRequest]:
    pairs = [json.loads(line) for name in SETS for line in (ROOT / name).read_text().splitlines() if line.strip()]
    return list(dict.fromkeys(JudgeRequest(p["query"], p["answer"], p["ground_truth"]) for p in pairs))


def seconds(make_judge: object, turns: list[JudgeRequest]) -> float:
    judge = make_judge()  # type: ignore[operator]
    started = time.perf_counter()
    asyncio.run(judge_all(turns, judge))
    return time.perf_counter() - started


def main() -> None:
    header("offline judge: the rules judge against ReferenceJudge through the LLM judge's path")
    turns = requests()
    config = EvaluationConfig()

    def through_prompt() -> AnswerJudge:
        return AnswerJudge(model=ReferenceJudge(), config=config)

    def rules() -> RulesJudge:
        return RulesJudge(config=config, context=RunContext(retry=RetryPolicy(), telemetry=JudgeTelemetry()))

    old, new = [], []
    for _ in range(RUNS):  # interleaved, so that both see the same machine
        old.append(seconds(through_prompt, turns))
        new.append(seconds(rules, turns))
    old_ms = statistics.median(old) / len(turns) * 1000
    new_ms = statistics.median(new) / len(turns) * 1000
    print(f"   {len(turns)} distinct turns, median of {RUNS} runs each")
    print(f"   through the chat model's path: {old_ms:.3f} ms a turn")
    print(f"   rules judge:                   {new_ms:.3f} ms a turn ({new_ms / old_ms:.2f}x the time)")
    print(verdict(old_ms >= 2 * new_ms, f"at least 2x faster per turn ({old_ms / new_ms:.1f}x)"))


if __name__ == "__main__":
    main()
