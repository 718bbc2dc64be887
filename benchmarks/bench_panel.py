"""Self-consistency (`config.judge_samples`, issue #16 item 2): what majority voting buys against
a noisy judge, and whether the consistency rate shows the noise.

A stand-in LLM judge (the fake OpenAI-compatible server, reached through `lambda_handler` and
the real `ChatOpenAI`) knows the right verdict of every turn and flips it with probability p,
independently per call (a seeded hash of the turn and the call's number: the same run gives
the same figures). 400 single-turn conversations, half right answers. For p in {0.1, 0.2,
0.3} and N in {1, 3, 5} samples ("majority"), the figures are the share of turns whose verdict
is wrong and `judge_consensus.consistency_rate`, beside what the binomial formulas give:

    P(wrong verdict) = sum_{k > N/2} C(N, k) p^k (1 - p)^(N - k)      (a strict majority flipped)
    P(samples unanimous) = p^N + (1 - p)^N

The measured figures are sample proportions of 400 turns: within about ±2.5 points (1.96
standard errors at p = 0.1) of the formulas when the panel does what it says.

    python -m benchmarks.bench_panel
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from math import comb
from typing import Any

from benchmarks.common import call_handler, header, openai_params, verdict
from fair_forge_core.judges.prompt import parse_judge_request
from fair_forge_testing.fake_llm_server import FakeLLMServer, last_user_text
from fair_forge_testing.workloads import OPENAI

TURNS = 400
FLIPS = (0.1, 0.2, 0.3)
SAMPLES = (1, 3, 5)
THRESHOLD = 0.7


def wrong_verdict_rate(samples: int, p: float) -> float:
    """The probability that a strict majority of `samples` independent judgements is flipped."""
    return sum(comb(samples, k) * p**k * (1 - p) ** (samples - k) for k in range(samples // 2 + 1, samples + 1))


def unanimity_rate(samples: int, p: float) -> float:
    """The probability that `samples` independent judgements all agree."""
    return p**samples + (1 - p) ** samples


class NoisyJudge:
    """A responder: the turn's right verdict (1.0 when the answer is "right-…"), flipped when
    a seeded hash of (p, answer, the call's number for that answer) falls below p."""

    def __init__(self, p: float) -> None:
        self.p = p
        self._lock = threading.Lock()
        self._calls: Counter[str] = Counter()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        judged = parse_judge_request(last_user_text(request))
        assert judged is not None
        with self._lock:
            call = self._calls[judged.answer]
            self._calls[judged.answer] += 1
        digest = hashlib.sha256(f"{self.p}|{judged.answer}|{call}".encode()).digest()
        flipped = int.from_bytes(digest[:8], "big") / 2**64 < self.p
        right = judged.answer.startswith("right-")
        return {"score": float(right != flipped), "reasoning": "flipped" if flipped else "as labelled"}


def body(base_url: str, samples: int) -> dict[str, Any]:
    conversations = [
        {
            "session_id": f"s{i}",
            "assistant_id": "agent",
            "conversation": [
                {
                    "qa_id": f"q{i}",
                    "query": f"Question {i}?",
                    "assistant": f"{'right' if i % 2 == 0 else 'wrong'}-{i}",
                    "ground_truth_assistant": f"truth {i}",
                }
            ],
        }
        for i in range(TURNS)
    ]
    config = {"judge_samples": samples, "threshold": THRESHOLD, "max_concurrency": 16, "k": 1}
    return {
        "connector": {"class_path": OPENAI, "params": openai_params(base_url)},
        "datasets": conversations,
        "config": config,
    }


def main() -> None:
    header(f"panel: majority of N samples against a judge flipping each verdict with probability p ({TURNS} turns)")
    print(f"   {'p':>4} {'N':>2}  {'wrong verdicts':>26}  {'samples unanimous':>29}  calls")
    worst = 0.0
    for p in FLIPS:
        for samples in SAMPLES:
            with FakeLLMServer(NoisyJudge(p)) as server:
                call = call_handler(body(server.base_url, samples))
                calls = server.call_count
            assert call.status == 200, call.body
            turns = [m["interactions"][0] for m in call.body["per_conversation_metrics"]]
            wrong = sum(
                (t["answer_score"] >= THRESHOLD) != (i % 2 == 0)
                for i, t in enumerate(turns)
                if t["answer_score"] is not None
            )
            measured = wrong / TURNS
            expected = wrong_verdict_rate(samples, p)
            consensus = call.body["aggregated_metrics"]["judge_consensus"]
            unanimous = consensus["consistency_rate"] if consensus else None
            line = f"   {p:>4} {samples:>2}  {measured:>7.1%} (formula {expected:>5.1%})"
            if unanimous is None:
                line += f"  {'— (one sample)':>31}"
            else:
                line += f"  {unanimous:>9.1%} (formula {unanimity_rate(samples, p):>5.1%})"
                worst = max(worst, abs(unanimous - unanimity_rate(samples, p)))
            worst = max(worst, abs(measured - expected))
            print(f"{line}  {calls}")
    print(f"   largest gap to the formulas: {worst:.1%}")
    print(verdict(worst <= 0.05, "every measured rate within 5 points of its formula (400 turns)"))


if __name__ == "__main__":
    main()
