"""Target 4 — cold start: `python -c "import handler.app"`, and the first requests after it.

- Import: the wall time of a fresh `python -c "import handler.app"` (interpreter start
  included), and which heavy modules that import loaded: provider modules
  (langchain_openai, langchain_groq, openai, groq) and scipy must not be among them.
  Target: median ≤ 0.6 s.
- First request with `ChatOpenAI` (reported separately, no target): in a fresh process
  that has imported handler.app, the first `/run` of one turn against the benchmark
  judge server (no latency) — importing langchain_openai and building the client
  included — then a second, warm, identical-shape request for comparison. The same
  for the built-in ReferenceJudge.

    python -m benchmarks.bench_cold_start [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from benchmarks.common import ROOT, header, line, verdict

HEAVY = ("langchain_openai", "langchain_groq", "openai", "groq", "scipy", "scipy.stats", "langchain_core", "numpy")


def import_once() -> tuple[float, list[str]]:
    """Wall seconds of a fresh `python -c "import handler.app"`, and the heavy modules it loaded."""
    probe = f"import sys, handler.app; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import handler.app"], cwd=ROOT, check=True)
    seconds = time.perf_counter() - started
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True)
    return seconds, [m for m in loaded.stdout.strip().split(",") if m]


def first_requests(class_path: str, base_url: str | None) -> dict[str, float]:
    """In a fresh process: seconds of the import, the first and the second request."""
    code = f"""
import json, time
t0 = time.perf_counter()
import handler.app
t1 = time.perf_counter()
from benchmarks.common import call_handler, openai_params
from fair_forge_testing.workloads import request
from fair_forge_testing.workloads import distinct_conversations
params = openai_params({base_url!r}) if {base_url!r} else {{}}
seconds = []
for tag in ("first ", "second "):
    call = call_handler(request({class_path!r}, distinct_conversations(1, 1, tag=tag), params=params))
    assert call.status == 200, call.body
    seconds.append(call.seconds)
print(json.dumps({{"import": t1 - t0, "first": seconds[0], "second": seconds[1]}}))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    from fair_forge_testing.judge_server import JudgeServerProcess

    header('cold start: python -c "import handler.app", then the first requests')
    imports, loaded = [], set()
    for _ in range(args.runs):
        seconds, modules = import_once()
        imports.append(seconds)
        loaded.update(modules)
    print("   " + line('python -c "import handler.app"', imports))
    print(
        f"   heavy modules loaded by that import: {', '.join(sorted(loaded)) or 'none'} (checked: {', '.join(HEAVY)})"
    )

    runs = max(1, (args.runs + 1) // 2)
    with JudgeServerProcess(latency_s=0.0) as server:
        openai = [first_requests("langchain_openai.chat_models.ChatOpenAI", server.base_url) for _ in range(runs)]
    reference = [first_requests("fair_forge_core.judges.ReferenceJudge", None) for _ in range(runs)]
    print("   " + line("first request, ChatOpenAI (1 turn; imports langchain_openai)", [r["first"] for r in openai]))
    print("   " + line("second request, ChatOpenAI (warm)", [r["second"] for r in openai]))
    print(
        "   " + line("first request, ReferenceJudge (1 turn; imports langchain_core)", [r["first"] for r in reference])
    )
    print("   " + line("second request, ReferenceJudge (warm)", [r["second"] for r in reference]))
    print("   " + verdict(statistics.median(imports) <= 0.6, "import median ≤ 0.6 s"))
    providers = {"langchain_openai", "langchain_groq", "openai", "groq", "scipy", "scipy.stats"}
    print("   " + verdict(not loaded & providers, "no provider module and no scipy loaded by the import"))


if __name__ == "__main__":
    main()
