"""Issue #38 item 2 — a faster first command: `fair-forge evaluate` of 100 turns, a whole process.

`python -m fair_forge_core evaluate REQUEST --out FILE --quiet` in a fresh process (interpreter
start, imports, judging, writing the result: the process's wall time, as a user or a CI step
sees it), for a request of 100 distinct turns (20 conversations × 5) with `ChatOpenAI` against
the benchmark judge server on 127.0.0.1 (another process, 100 ms sleep per request),
`max_concurrency` 16. Target: median ≤ 1.5 s (the judging's floor is ceil(100/16) × 0.1 = 0.7 s).

Also, in the same runs: the process's import time (the sum of the top-level cumulative times
that `-X importtime` prints in another run of the same command: what importing cost in it, with
importtime's own overhead), and the offline example `examples/calculator.json` (ReferenceJudge)
through the same command. With `--baseline DIR` (e.g. `git worktree add /tmp/ff-base main`) every
measurement is made on this checkout and on DIR in alternation (the order swapped every run), the
result files compared (the same JSON but for `request_id` and timings), and the ratios printed.
Both trees' modules are compiled first (`compile_tree`), as an installed package's are.

    python -m benchmarks.bench_first_command [--runs 7] [--baseline DIR] [--top 15]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, header, line, openai_params, verdict
from fair_forge_testing.workloads import OPENAI, distinct_conversations, request

CONVERSATIONS, TURNS, LATENCY_S, CONCURRENCY = 20, 5, 0.1, 16
TARGET_S = 1.5
OFFLINE_EXAMPLE = ROOT / "examples" / "calculator.json"
_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")


def command(tree: Path, request_file: Path, out: Path, *, importtime: bool = False) -> list[str]:
    """`fair-forge evaluate` as `python -m fair_forge_core` on the code of `tree`."""
    flags = ["-X", "importtime"] if importtime else []
    return [
        sys.executable,
        *flags,
        "-m",
        "fair_forge_core",
        "evaluate",
        str(request_file),
        "--out",
        str(out),
        "--quiet",
    ]


def env_of(tree: Path) -> dict[str, str]:
    """The environment of a measured process: `tree` first on the path (its packages are imported)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}


def evaluate_once(tree: Path, request_file: Path, out: Path) -> float:
    """Wall seconds of one `fair-forge evaluate` process; stops the benchmark if it fails."""
    started = time.perf_counter()
    done = subprocess.run(
        command(tree, request_file, out), cwd=tree, env=env_of(tree), capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"fair-forge evaluate failed on {tree} (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return seconds


def import_profile(tree: Path, request_file: Path, out: Path) -> tuple[float, dict[str, float]]:
    """One run under `-X importtime`: the seconds of all imports (the top-level entries' cumulative
    times), and each top-level package's cumulative seconds (its first import's, whatever imported it)."""
    done = subprocess.run(
        command(tree, request_file, out, importtime=True),
        cwd=tree,
        env=env_of(tree),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"fair-forge evaluate -X importtime failed on {tree}:\n{done.stderr[-3000:]}")
    total, packages = 0.0, {}
    for text in done.stderr.splitlines():
        match = _IMPORTTIME.match(text)
        if match is None:
            continue
        cumulative, indent, name = int(match.group(2)) / 1e6, len(match.group(3)), match.group(4)
        if indent == 1:  # a top-level import: its cumulative time includes everything it imported
            total += cumulative
            root = name.split(".")[0]
            packages[root] = packages.get(root, 0.0) + cumulative
    return total, packages


def compile_tree(tree: Path) -> None:
    """Write the compiled modules of `tree`'s packages, as an installed wheel has them: where
    `PYTHONDONTWRITEBYTECODE` is set (this machine) a checkout without them (a `git archive`
    baseline) would compile every module from source in every measured process."""
    packages = [str(tree / name) for name in ("fair_forge_core", "fair_forge_testing") if (tree / name).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], check=True, capture_output=True)


def check_tree(tree: Path) -> None:
    """Stop unless a process started as `evaluate_once` starts it imports `tree`'s fair_forge_core."""
    code = "import fair_forge_core; print(fair_forge_core.__file__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env_of(tree), capture_output=True, text=True)
    if not done.stdout.strip().startswith(str(tree)):
        raise SystemExit(f"a process on {tree} imported {done.stdout.strip() or done.stderr[-500:]}")


def canonical(path: Path) -> Any:
    """A result file without what changes between two runs of one request (its id, when it ran)."""
    data = json.loads(path.read_text())
    data.pop("request_id", None)
    data.get("run", {}).pop("started_at", None)  # issue #39: a result knows when it ran
    return json.dumps(data, sort_keys=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", type=Path, help="another checkout, measured alternately with this one")
    parser.add_argument("--top", type=int, default=15, help="packages listed by import time")
    args = parser.parse_args()
    from fair_forge_testing.judge_server import JudgeServerProcess

    header("first command: fair-forge evaluate of 100 turns (20 × 5), judge 100 ms, 16 in flight, a whole process")
    trees = {"this code": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    walls: dict[tuple[str, str], list[float]] = {}
    imports: dict[str, list[float]] = {}
    packages: dict[str, dict[str, list[float]]] = {}
    same = True
    for tree in trees.values():
        check_tree(tree)
        compile_tree(tree)
    with JudgeServerProcess(latency_s=LATENCY_S) as server, tempfile.TemporaryDirectory() as tmp:
        for index in range(args.runs):
            # New questions every run (nothing cached anywhere), the same for both checkouts of a run.
            body = request(
                OPENAI,
                distinct_conversations(CONVERSATIONS, TURNS, tag=f"run {index} {time.time_ns()}: "),
                params=openai_params(server.base_url),
                max_concurrency=CONCURRENCY,
            )
            request_file = Path(tmp, f"request{index}.json")
            request_file.write_text(json.dumps(body))
            order = list(trees.items())
            outputs: dict[str, list[Any]] = {}
            for label, tree in order if index % 2 == 0 else order[::-1]:
                out = Path(tmp, f"{label}.json")
                server.reset()
                walls.setdefault((label, "openai"), []).append(evaluate_once(tree, request_file, out))
                stats = server.stats()
                if stats["call_count"] != CONVERSATIONS * TURNS or stats["max_in_flight"] > CONCURRENCY:
                    raise SystemExit(f"{label}: judge server stats {stats}")
                outputs.setdefault(label, []).append(canonical(out))
                walls.setdefault((label, "offline"), []).append(evaluate_once(tree, OFFLINE_EXAMPLE, out))
                outputs[label].append(canonical(out))
                total, by_package = import_profile(tree, request_file, out)
                imports.setdefault(label, []).append(total)
                for name, seconds in by_package.items():
                    packages.setdefault(label, {}).setdefault(name, []).append(seconds)
            if args.baseline is not None:
                same = same and outputs["this code"] == outputs["baseline"]
    for label in trees:
        print(f"   {label} ({trees[label]}):")
        print("     " + line("evaluate, ChatOpenAI, 100 turns, process wall", walls[(label, "openai")]))
        print("     " + line("evaluate, offline example (calculator.json), process wall", walls[(label, "offline")]))
        print("     " + line("imports in the ChatOpenAI run (-X importtime, top-level cumulative)", imports[label]))
        ranked = sorted(packages[label].items(), key=lambda item: -statistics.median(item[1]))
        top = ", ".join(f"{name} {statistics.median(values):.3f}" for name, values in ranked[: args.top])
        print(f"     top-level packages by import seconds (median): {top}")
    if args.baseline is not None:
        for what, key in (("ChatOpenAI wall", "openai"), ("offline wall", "offline")):
            ratio = statistics.median(walls[("this code", key)]) / statistics.median(walls[("baseline", key)])
            print(f"   {what} ratio (median this / median baseline): {ratio:.2f}")
        ratio = statistics.median(imports["this code"]) / statistics.median(imports["baseline"])
        print(f"   import time ratio (median this / median baseline): {ratio:.2f}")
        print(f"   result files the same JSON in every run (without request_id): {'yes' if same else 'NO'}")
        if not same:
            raise SystemExit("the two checkouts wrote different results: the comparison is void")
    median = statistics.median(walls[("this code", "openai")])
    print("   " + verdict(median <= TARGET_S, f"median ≤ {TARGET_S} s of process wall (#38 item 2)"))


if __name__ == "__main__":
    main()
