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
- #27 target 3, the CPU of the first request (`time.process_time()` of this process, so the
  judge server's work, in its own process, is not counted): in a fresh process that has
  imported handler.app (and the benchmark's harness: `handler.local`), the first `/run` —
  one answer turn and one tool turn, so the tool rubric runs — through `lambda_handler`,
  then a second of the same shape; the heavy modules in `sys.modules` after the import and
  after each request. Once with the built-in ReferenceJudge (offline) and once with
  `ChatOpenAI` against the local judge server. `--baseline DIR` runs the same probe on
  another checkout (e.g. `git worktree add /tmp/base main`), alternating with this one,
  so that old and new are measured side by side under the same load.
  Target: first request ≤ 0.8 s of CPU beyond the import, offline.

    python -m benchmarks.bench_cold_start [--runs 7] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, header, line, verdict

HEAVY = ("langchain_openai", "langchain_groq", "openai", "groq", "scipy", "scipy.stats", "langchain_core", "numpy")
FIRST_REQUEST_HEAVY = ("langchain_core", "langsmith", "langchain_openai", "openai", "httpx", "numpy", "scipy")


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


_CPU_PROBE = """
import json, sys, time
heavy = {heavy!r}
def loaded():
    return [m for m in heavy if m in sys.modules]
t0 = time.process_time()
import handler.app
t1 = time.process_time()
import handler.local  # the harness's own import (events, context), not the request's
from benchmarks.common import call_handler, openai_params
from fair_forge_testing.workloads import distinct_conversations, request, turn_pool
tools = [turn for turn in turn_pool() if "agentic" in turn]
base_url = {base_url!r}
modules = {{"import": loaded()}}
seconds = []
for n, tag in enumerate(("first ", "second ")):
    conversations = distinct_conversations(1, 1, tag=tag)
    conversations[0]["conversation"].append({{"qa_id": "tool", **tools[n]}})
    body = request({class_path!r}, conversations, params=openai_params(base_url) if base_url else {{}})
    started = time.process_time()
    call = call_handler(body)
    seconds.append(time.process_time() - started)
    assert call.status == 200, call.body
    modules[tag.strip()] = loaded()
import fair_forge_core
print(json.dumps({{"import": t1 - t0, "first": seconds[0], "second": seconds[1], "modules": modules,
                  "code": fair_forge_core.__file__}}))
"""


def first_request_cpu(tree: Path, class_path: str, base_url: str | None) -> dict[str, Any]:
    """In a fresh process on the checkout `tree`: CPU seconds of the import, of the first and
    the second request, and the heavy modules loaded after each (`_CPU_PROBE`)."""
    code = _CPU_PROBE.format(heavy=FIRST_REQUEST_HEAVY, base_url=base_url, class_path=class_path)
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if not result["code"].startswith(str(tree.resolve())):
        raise RuntimeError(f"the probe on {tree} imported {result['code']}")
    return result


def first_request_cpu_report(runs: int, baseline: Path | None, base_url: str) -> None:
    """#27 target 3: first-request CPU, this checkout and `baseline` alternating."""
    trees = {"new": ROOT} | ({"old": baseline} if baseline else {})
    connectors = {"offline (ReferenceJudge)": None, "ChatOpenAI (local judge server)": base_url}
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _ in range(runs):
        for connector, url in connectors.items():
            class_path = "langchain_openai.chat_models.ChatOpenAI" if url else "fair_forge_core.judges.ReferenceJudge"
            for label, tree in trees.items():
                results.setdefault((connector, label), []).append(first_request_cpu(tree, class_path, url))
    print("   #27 target 3: CPU (process_time) of the first /run after `import handler.app`, and of the second")
    for (connector, label), samples in results.items():
        print(f"   {connector}, {label}:")
        for key in ("import", "first", "second"):
            print("     " + line(f"{key} CPU", [sample[key] for sample in samples]))
        for key, modules in samples[-1]["modules"].items():
            print(f"     heavy modules after {key}: {', '.join(modules) or 'none'}")
    for connector in connectors:
        first = statistics.median(sample["first"] for sample in results[(connector, "new")])
        print("   " + verdict(first <= 0.8, f"first request, {connector}: ≤ 0.8 s of CPU beyond the import"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", type=Path, help="another checkout to measure alongside (#27 target 3)")
    parser.add_argument("--only-first-request-cpu", action="store_true", help="#27 target 3 alone")
    args = parser.parse_args()
    from fair_forge_testing.judge_server import JudgeServerProcess

    header('cold start: python -c "import handler.app", then the first requests')
    if args.only_first_request_cpu:
        with JudgeServerProcess(latency_s=0.0) as server:
            first_request_cpu_report(args.runs, args.baseline, server.base_url)
        return
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
    with JudgeServerProcess(latency_s=0.0) as server:
        first_request_cpu_report(runs, args.baseline, server.base_url)


if __name__ == "__main__":
    main()
