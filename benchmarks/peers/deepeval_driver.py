"""deepeval's side of `benchmarks/bench_peers.py`: `GEval` over a custom `DeepEvalBaseLLM` to the stub.

    python deepeval_driver.py CASES.jsonl BASE_URL

Every case (`query`, `answer`, `reference`) is one `LLMTestCase`; the metric is one `GEval`
with its evaluation steps given (so deepeval asks the judge once a case, not once more for
steps), run by `evaluate(..., async_config=AsyncConfig(max_concurrent=16))`. Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from deepeval import evaluate
from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig
from deepeval.metrics import GEval
from deepeval.models import DeepEvalBaseLLM
from deepeval.test_case import LLMTestCase, LLMTestCaseParams
from openai import AsyncOpenAI, OpenAI


class StubModel(DeepEvalBaseLLM):
    """The judge: the openai client to the stub, model `ff-deepeval` (the stub's reply for deepeval)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.client = OpenAI(base_url=base_url, api_key="sk-bench-local")
        self.async_client = AsyncOpenAI(base_url=base_url, api_key="sk-bench-local")
        super().__init__("ff-deepeval")

    def load_model(self) -> Any:
        return self.client

    def generate(self, prompt: str) -> str:
        reply = self.client.chat.completions.create(model="ff-deepeval", messages=[{"role": "user", "content": prompt}])
        return reply.choices[0].message.content or ""

    async def a_generate(self, prompt: str) -> str:
        reply = await self.async_client.chat.completions.create(
            model="ff-deepeval", messages=[{"role": "user", "content": prompt}]
        )
        return reply.choices[0].message.content or ""

    def get_model_name(self) -> str:
        return "ff-deepeval"


def main() -> None:
    cases_path, base_url = sys.argv[1], sys.argv[2]
    with open(cases_path, encoding="utf-8") as handle:
        cases = [json.loads(text) for text in handle if text.strip()]
    metric = GEval(
        name="Correctness",
        evaluation_steps=["Check whether the actual output agrees with the expected output."],
        evaluation_params=[LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT, LLMTestCaseParams.EXPECTED_OUTPUT],
        model=StubModel(base_url),
        async_mode=True,
    )
    test_cases = [
        LLMTestCase(input=case["query"], actual_output=case["answer"], expected_output=case["reference"])
        for case in cases
    ]
    result = evaluate(
        test_cases,
        [metric],
        async_config=AsyncConfig(run_async=True, max_concurrent=16),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
        cache_config=CacheConfig(write_cache=False, use_cache=False),
    )
    scored = sum(1 for test in result.test_results for data in (test.metrics_data or []) if data.score is not None)
    print(json.dumps({"cases": len(test_cases), "scored": scored}))


if __name__ == "__main__":
    main()
