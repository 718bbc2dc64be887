"""alquimia-fair-forge's side of `benchmarks/bench_peers.py` (the original library): `Agentic.run`.

    python original_driver.py CASES.json BASE_URL

The datasets are the same 20 conversations × 5 turns as Fair-Forge's request; the judge is
`ChatOpenAI` (model `ff-original`) with `base_url` the stub. The original judges one turn after
another: it has no concurrency option. Prints one JSON line.
"""

from __future__ import annotations

import json
import sys

from fair_forge.core.retriever import Retriever
from fair_forge.metrics.agentic import Agentic
from fair_forge.schemas.common import Dataset
from langchain_openai import ChatOpenAI

DATASETS: list[Dataset] = []


class GivenDatasets(Retriever):
    """The datasets read from the command line's file."""

    def load_dataset(self) -> list[Dataset]:
        return DATASETS


def main() -> None:
    path, base_url = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as handle:
        DATASETS.extend(
            Dataset.model_validate({"language": "english", "context": "", **data}) for data in json.load(handle)
        )
    judge = ChatOpenAI(model="ff-original", api_key="sk-bench-local", base_url=base_url, timeout=10)
    metrics = Agentic.run(GivenDatasets, model=judge, k=1, threshold=0.7)
    correct = sum(int(getattr(metric, "correct_interactions", 0)) for metric in metrics)
    print(json.dumps({"conversations": len(metrics), "correct_turns": correct}))


if __name__ == "__main__":
    main()
