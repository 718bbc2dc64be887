"""Batch judging (issue #38 item 3): what 1,000 judged turns cost online and through the batch
API, and what the two passes of batch judging cost in CPU beside one online pass.

1,000 one-turn conversations, every turn distinct (`fair_forge_testing.builders`), judged by the
real `ChatOpenAI` against `FakeBatchServer` on 127.0.0.1: once online (`evaluate_conversations`),
once in batch (`batch_run`: submit, wait, collect). Tokens are what the fake reports, **4
characters a token** (no tokenizer offline): read the cost as the prompts' size at the example
price. The online pass has no latency here (the fake answers at once), so its wall time is its
CPU; a real batch takes minutes to hours, spent in a Wait state that runs nothing. The CPU
figures are this process's, the fake server's threads included (it answers in this process).

    python -m benchmarks.bench_batch
"""

from __future__ import annotations

import json
import time

from langchain_openai import ChatOpenAI

from benchmarks.common import header, verdict
from fair_forge_core.batch_run import collect_evaluation, submit_evaluation, wait_for_batches
from fair_forge_core.evaluate import evaluate_conversations, run_sync
from fair_forge_core.judges.base import RunContext
from fair_forge_core.judges.ledger import JudgeLedger
from fair_forge_core.judges.prices import at_batch_price, read_price_table
from fair_forge_core.schemas import Dataset, EvaluationConfig
from fair_forge_testing.builders import distinct_conversations
from fair_forge_testing.fake_batch_api import FakeBatchServer

TURNS = 1000
PRICE = {"input": 0.15, "output": 0.60}
"""An example price, USD per million tokens (a small hosted model's order of magnitude)."""


def conversations() -> list[Dataset]:
    return [Dataset.model_validate(c) for c in distinct_conversations(TURNS, 1)]


def main() -> None:
    header(f"Batch judging: {TURNS} distinct turns, online vs the batch API")
    datasets = conversations()
    prices = read_price_table(json.dumps({"judge": PRICE}))
    config = EvaluationConfig()
    with FakeBatchServer() as server:
        model = ChatOpenAI(model="judge", base_url=server.base_url, api_key="sk-bench-local", max_retries=0)

        online_ledger = JudgeLedger.for_model(model, config, prices=prices)
        cpu = time.process_time()
        online = run_sync(evaluate_conversations(datasets, model, config, RunContext(ledger=online_ledger)))
        online_cpu = time.process_time() - cpu

        batch_prices = at_batch_price(prices)
        cpu = time.process_time()
        submit_ledger = JudgeLedger.for_model(model, config, prices=batch_prices)
        submission = run_sync(submit_evaluation(datasets, model, config, RunContext(ledger=submit_ledger)))
        submit_cpu = time.process_time() - cpu
        run_sync(wait_for_batches(model, submission, poll_s=0, max_poll_s=0, deadline=None))
        cpu = time.process_time()
        ledger = JudgeLedger.for_model(model, config, prices=batch_prices)
        collected = run_sync(collect_evaluation(datasets, model, config, RunContext(ledger=ledger), submission))
        collect_cpu = time.process_time() - cpu
        [record] = server.batches.values()
        input_bytes = len(server.files[record.input_file_id].content)
        output_bytes = len(server.files[record.output_file_id].content) if record.output_file_id else 0

    same = [c.model_dump() for c in online] == [c.model_dump() for c in collected]
    online_usage, batch_usage = online_ledger.summary(), ledger.summary()
    assert online_usage.cost_usd is not None and batch_usage.cost_usd is not None
    calls = batch_usage.calls
    print(f"  turns                       {len(datasets)} ({calls} judge calls, {len(record.lines)} batch lines)")
    print(f"  online cost                 ${online_usage.cost_usd:.5f}")
    print(
        f"  batch cost                  ${batch_usage.cost_usd:.5f}  ({batch_usage.cost_usd / online_usage.cost_usd:.3f}×)"
    )
    print(f"  input file / output file    {input_bytes / 1e6:.2f} MB / {output_bytes / 1e6:.2f} MB")
    print(f"  CPU online pass             {online_cpu:.2f} s ({online_cpu / calls * 1000:.2f} ms a call)")
    print(f"  CPU submit pass             {submit_cpu:.2f} s ({submit_cpu / calls * 1000:.2f} ms a call)")
    print(f"  CPU collect pass            {collect_cpu:.2f} s ({collect_cpu / calls * 1000:.2f} ms a call)")
    print(verdict(same, "the collected per-conversation metrics equal the online ones"))
    print(verdict(abs(batch_usage.cost_usd / online_usage.cost_usd - 0.5) < 1e-9, "the batch costs half"))


if __name__ == "__main__":
    main()
