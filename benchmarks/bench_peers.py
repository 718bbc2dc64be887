"""The peers side by side (issue #38): Fair-Forge, promptfoo, deepeval, Inspect AI, the original, one stub.

The same 100 cases (query, answer, reference: `fair_forge_testing.workloads.distinct_conversations`,
20 × 5) are graded against their reference by an LLM judge, concurrency 16, the judge being one
stub on 127.0.0.1 that sleeps 100 ms a request. Each tool runs as a fresh process and its wall time
is measured from start to exit (imports, start-up and the report it writes included):

- Fair-Forge: `fair-forge evaluate REQUEST` (`langchain_openai.ChatOpenAI`, `base_url` the stub,
  `max_concurrency` 16);
- promptfoo: `promptfoo eval` on a `promptfooconfig.yaml`: the `echo` provider returns the answer,
  an `llm-rubric` assertion graded by `openai:chat:ff-promptfoo` with `apiBaseUrl` the stub,
  `--max-concurrency 16 --no-cache`;
- deepeval: `benchmarks/peers/deepeval_driver.py`: `GEval` (evaluation steps given) over a custom
  `DeepEvalBaseLLM` (the openai client to the stub), `AsyncConfig(max_concurrent=16)`;
- Inspect AI: `inspect eval benchmarks/peers/inspect_task.py`: the answer set by a solver without
  a model call, `model_graded_fact()`, `--model openai/ff-inspect --max-connections 16`;
- the original library (alquimia-fair-forge): `benchmarks/peers/original_driver.py`: `Agentic.run`
  with `ChatOpenAI(model="ff-original", base_url=the stub)`; it judges one turn at a time (no
  concurrency option), so its row is at concurrency 1.

The stub (this file's `serve`, a `FakeLLMServer` in a child process as `JudgeServerProcess`)
answers each tool in the format it parses, told apart by the model each one asks for: Fair-Forge's
verdict JSON, promptfoo's `{"reason", "pass", "score"}`, deepeval's `{"score", "reason"}`, Inspect's
`GRADE: C`, the original's `{"correctness_score", "reasoning"}`. Rounds alternate the tools (the order rotates every round); every run asks new questions
(a round tag), and the stub's request count for each run is checked (≈ 100 judge calls, else flagged).
Nothing reaches a real provider: keys are dummies, base URLs the stub, the peers' telemetry off.

    python -m benchmarks.bench_peers --install     # the peers into .bench-peers/ (gitignored)
    python -m benchmarks.bench_peers [--rounds 5]  # or: make bench-peers (both)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, header, openai_params
from fair_forge_testing.judge_server import JudgeServerProcess
from fair_forge_testing.workloads import OPENAI, distinct_conversations, request

PEERS_DIR = ROOT / ".bench-peers"
DRIVERS = Path(__file__).resolve().parent / "peers"
CASES, CONVERSATIONS, TURNS, LATENCY_S, CONCURRENCY = 100, 20, 5, 0.1, 16
TIMEOUT_S = 300.0

# The environment every peer runs in: dummy keys, the stub as base URL, no telemetry or update checks.
QUIET_ENV = {
    "OPENAI_API_KEY": "sk-bench-local",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "NO",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "ERROR_REPORTING": "NO",
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_SELF_HOSTED": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "true",
    "PROMPTFOO_CACHE_ENABLED": "false",
    "INSPECT_DISPLAY": "none",
    "NO_COLOR": "1",
}


# --------------------------------------------------------------------------- the stub


def stub_reply(body: dict[str, Any]) -> str | dict[str, Any]:
    """The judge's answer in the format of the tool that asked (told apart by the model it names)."""
    from fair_forge_testing.fake_llm_server import judge_responder

    model = str(body.get("model", ""))
    if model == "ff-promptfoo":
        return json.dumps({"reason": "The output agrees with the reference.", "pass": True, "score": 1.0})
    if model == "ff-deepeval":
        return json.dumps({"score": 10, "reason": "The actual output agrees with the expected output."})
    if model == "ff-original":
        return {"correctness_score": 1.0, "reasoning": "The answer states the ground truth."}
    if model == "ff-inspect":
        return "The submission states the expert answer.\n\nGRADE: C"
    return judge_responder(body)


def serve(latency_s: float) -> None:
    """`fair_forge_testing.judge_server.serve`'s protocol (port line; `stats`, `reset`, `quit`), `stub_reply`."""
    from fair_forge_testing.fake_llm_server import FakeLLMServer
    from fair_forge_testing.judge_server import answer_commands

    with FakeLLMServer(stub_reply, latency_s=latency_s) as server:
        answer_commands(server)


class PeersJudgeServer(JudgeServerProcess):
    """`JudgeServerProcess` running this file's `serve` (per-peer replies) instead of the plain judge."""

    def __init__(self, *, latency_s: float) -> None:
        self._start([sys.executable, "-m", "benchmarks.bench_peers", "--serve", "--latency-s", str(latency_s)])


# --------------------------------------------------------------------------- installing the peers


def install() -> None:
    """deepeval and Inspect AI in venvs of their own, promptfoo with npm, under .bench-peers/."""
    PEERS_DIR.mkdir(exist_ok=True)
    steps: dict[str, list[list[str]]] = {
        "deepeval": [
            [sys.executable, "-m", "venv", str(PEERS_DIR / "deepeval")],
            [str(PEERS_DIR / "deepeval/bin/pip"), "install", "--quiet", "deepeval"],
        ],
        "inspect": [
            [sys.executable, "-m", "venv", str(PEERS_DIR / "inspect")],
            [str(PEERS_DIR / "inspect/bin/pip"), "install", "--quiet", "inspect-ai", "openai"],
        ],
        "fairforge": [
            [sys.executable, "-m", "venv", str(PEERS_DIR / "fairforge")],
            [str(PEERS_DIR / "fairforge/bin/pip"), "install", "--quiet", "alquimia-fair-forge", "langchain-openai"],
        ],
        "promptfoo": [["npm", "init", "-y"], ["npm", "install", "--silent", "promptfoo"]],
    }
    for name, commands in steps.items():
        cwd = PEERS_DIR / "promptfoo" if name == "promptfoo" else PEERS_DIR
        cwd.mkdir(exist_ok=True)
        for command in commands:
            done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"   {name}: `{' '.join(command)}` failed ({done.returncode}): {done.stderr[-500:]}")
                break
        else:
            print(f"   {name}: installed")


def versions() -> dict[str, str | None]:
    """Each peer's installed version (None: not installed)."""
    found: dict[str, str | None] = {}
    for name, python, dist in (
        ("deepeval", "deepeval", "deepeval"),
        ("Inspect AI", "inspect", "inspect-ai"),
        ("alquimia-fair-forge", "fairforge", "alquimia-fair-forge"),
    ):
        exe = PEERS_DIR / python / "bin/python"
        done = (
            subprocess.run(
                [str(exe), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
                capture_output=True,
                text=True,
                check=False,
            )
            if exe.exists()
            else None
        )
        found[name] = done.stdout.strip() if done is not None and done.returncode == 0 else None
    package = PEERS_DIR / "promptfoo/node_modules/promptfoo/package.json"
    found["promptfoo"] = json.loads(package.read_text())["version"] if package.exists() else None
    return found


# --------------------------------------------------------------------------- the tools


def cases(tag: str) -> list[dict[str, str]]:
    """The 100 cases of one run: `distinct_conversations`' turns as query, answer, reference."""
    return [
        {"query": t["query"], "answer": t["assistant"], "reference": t["ground_truth_assistant"]}
        for c in distinct_conversations(CONVERSATIONS, TURNS, tag=tag)
        for t in c["conversation"]
    ]


def write_jsonl(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def fair_forge(work: Path, base_url: str, tag: str) -> list[str]:
    body = request(
        OPENAI,
        distinct_conversations(CONVERSATIONS, TURNS, tag=tag),
        params=openai_params(base_url),
        max_concurrency=CONCURRENCY,
    )
    (work / "request.json").write_text(json.dumps(body))
    return [
        str(ROOT / ".venv/bin/fair-forge"),
        "evaluate",
        str(work / "request.json"),
        "--out",
        str(work / "result.json"),
        "--quiet",
        "--allow-unscored",
    ]


def promptfoo(work: Path, base_url: str, tag: str) -> list[str]:
    tests = [
        {
            "vars": case,
            "assert": [{"type": "llm-rubric", "value": "The answer agrees with the reference answer: {{reference}}"}],
        }
        for case in cases(tag)
    ]
    config = {
        "description": "bench_peers",
        "prompts": ["{{answer}}"],
        "providers": ["echo"],
        "defaultTest": {
            "options": {
                "provider": {
                    "id": "openai:chat:ff-promptfoo",
                    "config": {"apiBaseUrl": base_url, "apiKey": "sk-bench-local"},
                }
            }
        },
        "tests": tests,
    }
    (work / "promptfooconfig.json").write_text(json.dumps(config))  # JSON is YAML
    (work / "promptfooconfig.yaml").write_text(json.dumps(config))
    return [
        str(PEERS_DIR / "promptfoo/node_modules/.bin/promptfoo"),
        "eval",
        "-c",
        str(work / "promptfooconfig.yaml"),
        "--max-concurrency",
        str(CONCURRENCY),
        "--no-cache",
        "--no-progress-bar",
        "--no-table",
        "-o",
        str(work / "promptfoo.json"),
    ]


def deepeval(work: Path, base_url: str, tag: str) -> list[str]:
    path = write_jsonl(work / "cases.jsonl", cases(tag))
    return [str(PEERS_DIR / "deepeval/bin/python"), str(DRIVERS / "deepeval_driver.py"), str(path), base_url]


def original(work: Path, base_url: str, tag: str) -> list[str]:
    (work / "datasets.json").write_text(json.dumps(distinct_conversations(CONVERSATIONS, TURNS, tag=tag)))
    return [
        str(PEERS_DIR / "fairforge/bin/python"),
        str(DRIVERS / "original_driver.py"),
        str(work / "datasets.json"),
        base_url,
    ]


def inspect(work: Path, base_url: str, tag: str) -> list[str]:
    write_jsonl(work / "cases.jsonl", cases(tag))
    shutil.copy(DRIVERS / "inspect_task.py", work / "inspect_task.py")  # inspect takes a relative task path
    return [
        str(PEERS_DIR / "inspect/bin/inspect"),
        "eval",
        "inspect_task.py",
        "--model",
        "openai/ff-inspect",
        "-M",
        "responses_api=false",
        "--max-connections",
        str(CONCURRENCY),
        "--log-dir",
        str(work / "logs"),
        "--display",
        "none",
    ]


@dataclass
class Tool:
    name: str
    command: Callable[[Path, str, str], list[str]]
    needs: Path
    seconds: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    in_flight: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


TOOLS = [
    Tool("Fair-Forge (`fair-forge evaluate`)", fair_forge, ROOT / ".venv/bin/fair-forge"),
    Tool("promptfoo", promptfoo, PEERS_DIR / "promptfoo/node_modules/.bin/promptfoo"),
    Tool("deepeval", deepeval, PEERS_DIR / "deepeval/bin/python"),
    Tool("Inspect AI", inspect, PEERS_DIR / "inspect/bin/inspect"),
    Tool("alquimia-fair-forge (the original library)", original, PEERS_DIR / "fairforge/bin/python"),
]


def run_once(tool: Tool, server: JudgeServerProcess, tag: str) -> None:
    """One run of `tool` as a fresh process: its wall seconds and the stub's request count."""
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as name:
        work = Path(name)
        command = tool.command(work, server.base_url, tag)
        env = {
            **os.environ,
            **QUIET_ENV,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_BASE": server.base_url,
            "PEERS_CASES": str(work / "cases.jsonl"),
            "HOME": str(work),
            "PROMPTFOO_CONFIG_DIR": str(work / ".pf"),
        }
        server.reset()
        started = time.perf_counter()
        try:
            done = subprocess.run(
                command, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
            )
            seconds = time.perf_counter() - started
            failed = f"exit {done.returncode}: {done.stderr[-800:] or done.stdout[-800:]}" if done.returncode else ""
        except subprocess.TimeoutExpired:
            seconds, failed = time.perf_counter() - started, f"timed out after {TIMEOUT_S:.0f} s"
        stats = server.stats()
        calls = int(stats["call_count"])
    tool.in_flight.append(int(stats["max_in_flight"]))
    tool.seconds.append(seconds)
    tool.calls.append(calls)
    if failed:
        tool.failures.append(failed)
    print(f"   {tool.name}: {seconds:.2f} s, {calls} judge calls{' FAILED ' + failed if failed else ''}", flush=True)


def table(tools: list[Tool], missing: list[Tool], found: dict[str, str | None]) -> str:
    base = statistics.median(tools[0].seconds) if tools and tools[0].seconds else None
    rows = [
        "| tool | version | median s | min s | max s | judge calls / run | peak in flight | × Fair-Forge | note |",
        "|---|---|---:|---:|---:|---|---|---:|---|",
    ]
    for tool in tools:
        median = statistics.median(tool.seconds)
        ok = all(abs(c - CASES) <= CASES // 20 for c in tool.calls) and not tool.failures
        note = "" if ok else f"FLAGGED: calls {tool.calls}, {len(tool.failures)} failed run(s)"
        version = next((v for k, v in found.items() if tool.name.startswith(k)), None) or "this checkout"
        ratio = f"{median / base:.2f}" if base else "—"
        rows.append(
            f"| {tool.name} | {version} | {median:.2f} | {min(tool.seconds):.2f} | {max(tool.seconds):.2f} "
            f"| {min(tool.calls)}–{max(tool.calls)} | {min(tool.in_flight)}–{max(tool.in_flight)} | {ratio} | {note} |"
        )
    for tool in missing:
        rows.append(f"| {tool.name} | — | — | — | — | — | — | — | not measured: not installed (`--install`) |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="install the peers into .bench-peers/ first")
    parser.add_argument("--only-install", action="store_true", help="install the peers, measure nothing")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; each tool once a round, order rotated")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--latency-s", type=float, default=LATENCY_S, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.latency_s)
        return
    header("bench_peers: Fair-Forge, promptfoo, deepeval, Inspect AI, alquimia-fair-forge on one 100 ms judge stub")
    if args.install or args.only_install:
        install()
        if args.only_install:
            return
    found = versions()
    print(
        f"   versions: {found}; node {shutil.which('node') and subprocess.run(['node', '--version'], capture_output=True, text=True, check=False).stdout.strip()}"
    )
    tools = [tool for tool in TOOLS if tool.needs.exists()]
    missing = [tool for tool in TOOLS if not tool.needs.exists()]
    with PeersJudgeServer(latency_s=LATENCY_S) as server:
        for round_ in range(args.rounds):
            order = tools[round_ % len(tools) :] + tools[: round_ % len(tools)]
            print(f"   round {round_ + 1}: {', '.join(tool.name for tool in order)}", flush=True)
            for tool in order:
                run_once(tool, server, tag=f"round {round_} {tool.name}: ")
    print()
    print(table(tools, missing, found))
    for tool in tools:
        for failure in tool.failures[:1]:
            print(f"\n{tool.name} failed: {failure}")


if __name__ == "__main__":
    main()
