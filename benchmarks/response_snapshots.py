"""Snapshots of every response, to show that a change altered nothing but the fields it adds.

`python -m benchmarks.response_snapshots record OUT_DIR [--workers N]` writes JSON Lines records
(`fair_forge_testing.handler_client` gives their keys: test, method, path, query, accept,
request, status, base64, response) into OUT_DIR, which must be empty or absent:

- `examples.jsonl`: each example judged offline (the top-level `examples/*.json` whose
  connector is the offline judge, `examples/compare/*.json` and the trace requests of
  `examples/run_local.py`) through `POST /run` (`call_handler`) and through
  `fair-forge evaluate - --quiet` (its stdout, the result JSON; `status` is the exit code);
  `fair-forge compare` of the two compare examples (its `--out` JSON) and `fair-forge calibrate`
  of the calibration examples (its `--out` JSON) and the same pairs through `POST /calibrate`;
  and the labelled sets (`LABELLED_SETS`) through `POST /run` and `POST /calibrate`.
  The handler's log lines go to `examples.log`.
- `pytest/responses-<pid>.jsonl`: every `lambda_handler` call made in-process by
  `pytest tests/service` (and by the interpreters of `run_in_subprocess`), run with
  `FAIR_FORGE_RECORD_RESPONSES` set and the recorder loaded as a plugin; `pytest.log` its output.
  Not recorded: tests that call `evaluate_sync` without the handler, the handler in a process
  that does not import the recorder (`python -m handler.local`, `awslambdaric`), and the CLI's
  other outputs (`--html`, `--jsonl`, `--csv`, `--junit`, `--markdown`).

`compare BASE_DIR NEW_DIR [--show N]` pairs the records by (test, method, path, query, accept,
request, occurrence), all after normalisation, the occurrence counting identical keys within one
test; and for each pair compares the status, the base64 flag and the response: a JSON body value
by value in order (keys in their order, `1` unlike `1.0`), so equal means equal once
re-serialised (whitespace is not compared); any other body (HTML) as text. Ignored, in NEW only:

- `checks` in an object that is an item of a `per_conversation_metrics` list, at any depth
  (a job's result too), when BASE has no `checks` there and NEW's is a list;
- `format_version` in an object that has `per_conversation_metrics` (an evaluation result, at
  any depth), when BASE has none there.

Both sides are first normalised (each rule says why it varies from run to run; all found by
recording twice and comparing): the values of `VOLATILE_KEYS`, and of `VOLATILE_IN_TESTS`' keys
in that test's records, and the substrings matching `VOLATILE_PATTERNS` become placeholders; the
polls of `POLLING_TESTS` that saw a job running are dropped. It prints the counts (compared,
identical, differing, unmatched on either side) and the first differences, and exits 1 on any
difference or unmatched record.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
RECORD_ENV = "FAIR_FORGE_RECORD_RESPONSES"

VOLATILE_KEYS = {
    "request_id": "a fresh uuid4 per invocation (the Lambda context's request id)",
    "job_id": "a fresh uuid4 hex per job (POST /jobs, a large POST /run)",
    "submitted_at": "a job's wall-clock start",
    "finished_at": "a job's wall-clock end",
    "result_url": "a presigned S3 URL: its X-Amz-Date and signature follow the clock",
    "identity": "a judge's sha256 over its endpoint, whose port the OS picks for the tests' fake judge server",
}
"""Keys whose values vary between two runs of the same request (found by recording twice), with why."""

VOLATILE_PATTERNS = {
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}": "request ids inside text: the HTML report's facts line ('request <id>')",
    r"\b[0-9a-f]{32}\b": "job ids inside text: `status_url` and the paths of GET /jobs/{id}",
    r"(?<=127\.0\.0\.1:)\d+|(?<=localhost:)\d+": "ports the OS picks for the tests' fake judge servers",
}
"""Regular expressions of substrings that vary between runs (found by recording twice), with why."""

VOLATILE_IN_TESTS = {
    "tests/service/test_run_log_counters.py::test_cache_errors_and_parse_failures_are_logged_and_measured": (
        {"input_tokens"},
        "the one unparseable reply goes to whichever concurrent turn calls first: its retry's prompt length varies",
    ),
}
"""Keys volatile in the records of one test only (its id's prefix), with why."""

POLLING_TESTS = {
    "tests/service/test_jobs_e2e.py": "polls jobs run by real threads: how many polls see one running, how far, is a race",
}
"""Tests whose `GET /jobs/{id}` responses with status "running" are dropped (the terminal ones are kept), with why."""

# --------------------------------------------------------------------------- record


def _record_line(test: str, method: str, path: str, request: Any, status: int, response: str) -> dict[str, Any]:
    """A record as the recorder in `fair_forge_testing.handler_client` writes one."""
    text = request if isinstance(request, str) else json.dumps(request)
    fields = {"test": test, "method": method, "path": path, "query": None, "accept": None, "request": text}
    return {**fields, "status": status, "base64": False, "response": response}


def example_requests() -> list[tuple[str, dict[str, Any]]]:
    """`(name, body)` of every example judged offline, as `examples/run_local.py` sends them."""
    from examples.run_local import OFFLINE_JUDGE, trace_requests

    files = sorted(EXAMPLES.glob("*.json")) + sorted((EXAMPLES / "compare").glob("*.json"))
    requests = [(str(path.relative_to(ROOT)), json.loads(path.read_text(encoding="utf-8"))) for path in files]
    offline = [(name, body) for name, body in requests if body["connector"]["class_path"] == OFFLINE_JUDGE]
    return offline + [(f"examples/{name}", body) for name, body in trace_requests()]


def _cli(argv: list[str], stdin: str = "") -> tuple[int, str]:
    """`fair-forge ARGV` in this process: its exit code and stdout."""
    from fair_forge_core.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.suppress(SystemExit):
        return main(argv, stdout=stdout, stderr=stderr, stdin=io.StringIO(stdin)), stdout.getvalue()
    return 2, stdout.getvalue()


def _cli_out(argv: list[str]) -> tuple[int, str]:
    """`fair-forge ARGV --out FILE --quiet`: its exit code and the file written."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        code, _ = _cli([*argv, "--out", str(out), "--quiet"])
        return code, out.read_text(encoding="utf-8") if out.exists() else ""


LABELLED_SETS = (
    "tests/data/judge_labels/pairs.jsonl",
    "tests/data/judge_labels/fresh.jsonl",
    "tests/data/judge_agreement.jsonl",
    "benchmarks/data/answer_pairs.jsonl",
)
"""The labelled (query, answer, ground truth) sets: each is judged offline as one conversation per
pair through `POST /run`, and, where it has labels, calibrated through `POST /calibrate`, so a
change that alters a verdict on any of them differs."""


CALIBRATION_KEYS = ("query", "answer", "ground_truth", "label", "category")


def labelled_requests() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """`(name, path, body)` of the requests of `LABELLED_SETS` (their docstring)."""
    from examples.run_local import OFFLINE_JUDGE

    connector = {"class_path": OFFLINE_JUDGE, "params": {}}
    for name in LABELLED_SETS:
        pairs = [json.loads(line) for line in (ROOT / name).read_text(encoding="utf-8").splitlines() if line.strip()]
        datasets = [
            {
                "session_id": f"pair_{index}",
                "assistant_id": "labelled",
                "language": "english",
                "context": "",
                "conversation": [
                    {
                        "qa_id": f"q{index}",
                        "query": pair["query"],
                        "assistant": pair["answer"],
                        "ground_truth_assistant": pair["ground_truth"],
                    }
                ],
            }
            for index, pair in enumerate(pairs)
        ]
        yield name, "/run", {"connector": connector, "datasets": datasets, "config": {"k": 1}}
        if all("label" in pair for pair in pairs):
            # The sets' bookkeeping keys (`language`, `split`) are no part of a calibration pair.
            calibrated = [{key: pair[key] for key in CALIBRATION_KEYS if key in pair} for pair in pairs]
            yield name, "/calibrate", {"connector": connector, "pairs": calibrated}


def record_examples() -> Iterator[dict[str, Any]]:
    """The records of `examples.jsonl` (module docstring)."""
    from examples.run_local import OFFLINE_JUDGE
    from fair_forge_testing.handler_client import call_handler

    for name, body in example_requests():
        response = call_handler(body)
        yield _record_line(f"{name} via POST /run", "POST", "/run", body, response.status, response.raw)
        code, stdout = _cli(["evaluate", "-", "--quiet"], json.dumps(body))
        yield _record_line(f"{name} via fair-forge evaluate", "CLI", "evaluate", body, code, stdout)
    sides = [f"examples/compare/{side}.json" for side in ("baseline", "candidate")]  # relative: any checkout matches
    code, out = _cli_out(["compare", *(str(ROOT / side) for side in sides)])
    yield _record_line("examples/compare via fair-forge compare", "CLI", "compare", sides, code, out)
    for path in sorted((EXAMPLES / "calibration").glob("*.jsonl")):
        name = str(path.relative_to(ROOT))
        code, out = _cli_out(["calibrate", str(path)])
        yield _record_line(f"{name} via fair-forge calibrate", "CLI", "calibrate", name, code, out)
        pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        body = {"connector": {"class_path": OFFLINE_JUDGE, "params": {}}, "pairs": pairs}
        response = call_handler(body, path="/calibrate")
        yield _record_line(f"{name} via POST /calibrate", "POST", "/calibrate", body, response.status, response.raw)
    for name, path, body in labelled_requests():
        response = call_handler(body, path=path)
        yield _record_line(f"{name} via POST {path}", "POST", path, body, response.status, response.raw)


@contextlib.contextmanager
def _stdout_to(path: Path) -> Iterator[None]:
    """File descriptor 1 into `path`: the handler's log lines, written to the stdout its loggers hold."""
    sys.stdout.flush()
    saved = os.dup(1)
    with path.open("w", encoding="utf-8") as log:
        os.dup2(log.fileno(), 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)


def record(out_dir: Path, workers: int) -> int:
    """Write the snapshots of the module docstring into `out_dir`; pytest's exit code."""
    if out_dir.exists() and any(out_dir.iterdir()):
        raise SystemExit(f"{out_dir} is not empty: records would mix")
    (out_dir / "pytest").mkdir(parents=True)
    with (out_dir / "examples.jsonl").open("w", encoding="utf-8") as file, _stdout_to(out_dir / "examples.log"):
        for line in record_examples():
            file.write(json.dumps(line) + "\n")
    command = [sys.executable, "-m", "pytest", "tests/service", "-p", "no:cacheprovider", "-q"]
    # The recorder must wrap `lambda_handler` before the test modules import it: a plugin loads first.
    command += ["-p", "fair_forge_testing.handler_client", *(["-n", str(workers)] if workers > 1 else [])]
    env = {**os.environ, RECORD_ENV: str((out_dir / "pytest").resolve()), "PYTHONPATH": str(ROOT)}
    with (out_dir / "pytest.log").open("w", encoding="utf-8") as log:
        code = subprocess.run(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    counts = {path.name: sum(1 for _ in path.open()) for path in sorted(out_dir.rglob("*.jsonl"))}
    print(f"{sum(counts.values())} records in {len(counts)} file(s) under {out_dir}; pytest exit {code.returncode}")
    return code.returncode


# --------------------------------------------------------------------------- compare


def normalise(value: Any, keys: frozenset[str] = frozenset(VOLATILE_KEYS), key: str | None = None) -> Any:
    """`value` with the values of `keys` and `VOLATILE_PATTERNS`' matches replaced by placeholders."""
    if key in keys and value is not None:
        return f"<{key}>"
    if isinstance(value, dict):
        return {k: normalise(v, keys, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(item, keys) for item in value]
    if isinstance(value, str):
        for pattern in VOLATILE_PATTERNS:
            value = re.sub(pattern, "<volatile>", value)
    return value


def _body(text: str | None, test: str | None = None) -> Any:
    """A body parsed as JSON, else its text, normalised (with `VOLATILE_IN_TESTS`' keys for `test`)."""
    keys = set(VOLATILE_KEYS)
    for prefix, (extra, _why) in VOLATILE_IN_TESTS.items():
        keys |= extra if (test or "").startswith(prefix) else set()
    try:
        return normalise(json.loads(text), frozenset(keys)) if text else text
    except (ValueError, RecursionError):  # not JSON, or nested deeper than Python parses (an attack's body)
        return normalise(text, frozenset(keys))


def _is_race(record: dict[str, Any]) -> bool:
    """A `GET /jobs/{id}` of `POLLING_TESTS` that saw its job still running."""
    test, path = record["test"] or "", record["path"] or ""
    if record["method"] != "GET" or not path.startswith("/jobs/") or not test.startswith(tuple(POLLING_TESTS)):
        return False
    body = _body(record["response"])
    return isinstance(body, dict) and body.get("status") == "running"


def strip_added(new: Any, base: Any, in_metrics: bool = False) -> Any:
    """`new` without the `checks` and `format_version` that the module docstring ignores, judged against `base`."""
    if isinstance(new, dict):
        base_dict = base if isinstance(base, dict) else {}
        kept = {}
        for k, v in new.items():
            if k not in base_dict and (
                (k == "checks" and in_metrics and isinstance(v, list))
                or (k == "format_version" and "per_conversation_metrics" in new)
            ):
                continue
            kept[k] = strip_added(v, base_dict.get(k), k == "per_conversation_metrics")
        return kept
    if isinstance(new, list):
        base_list = base if isinstance(base, list) else []
        return [strip_added(v, base_list[i] if i < len(base_list) else None, in_metrics) for i, v in enumerate(new)]
    return new


def differences(base: Any, new: Any, where: str = "$") -> Iterator[str]:
    """Where `base` and `new` differ: keys (and their order), lengths, types or values."""
    if isinstance(base, dict) and isinstance(new, dict):
        if list(base) != list(new):
            yield f"{where}: keys {list(base)} != {list(new)}"
        for k in base.keys() & new.keys():
            yield from differences(base[k], new[k], f"{where}.{k}")
    elif isinstance(base, list) and isinstance(new, list):
        if len(base) != len(new):
            yield f"{where}: length {len(base)} != {len(new)}"
        for i, (a, b) in enumerate(zip(base, new, strict=False)):
            yield from differences(a, b, f"{where}[{i}]")
    elif json.dumps(base) != json.dumps(new):
        yield f"{where}: {json.dumps(base)[:200]} != {json.dumps(new)[:200]}"


def load(directory: Path) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The records under `directory` by their key (module docstring)."""
    records: dict[tuple[Any, ...], dict[str, Any]] = {}
    seen: Counter[tuple[Any, ...]] = Counter()
    for path in sorted(directory.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if _is_race(record):
                continue
            request = json.dumps(_body(record["request"]), sort_keys=True)
            where = [normalise(record[k]) for k in ("test", "method", "path")]
            key = (*where, json.dumps(normalise(record["query"]), sort_keys=True), record["accept"], request)
            seen[key] += 1
            records[(*key, seen[key])] = record
    return records


def compare(base_dir: Path, new_dir: Path, show: int) -> int:
    """Print the counts and the first `show` differences; 1 when anything differs or is unmatched."""
    base, new = load(base_dir), load(new_dir)
    shared = [key for key in base if key in new]
    differing = []
    for key in shared:
        a, b = base[key], new[key]
        base_body = _body(a["response"], a["test"])
        new_body = strip_added(_body(b["response"], b["test"]), base_body)
        found = [f"$status: {a['status']} != {b['status']}"] if a["status"] != b["status"] else []
        found += [f"$base64: {a['base64']} != {b['base64']}"] if a["base64"] != b["base64"] else []
        found += list(differences(base_body, new_body))
        if found:
            differing.append((key, found))
    only_base, only_new = [k for k in base if k not in new], [k for k in new if k not in base]
    print(
        f"compared {len(shared)}, identical {len(shared) - len(differing)}, differing {len(differing)}, "
        f"unmatched {len(only_base)} in {base_dir} only and {len(only_new)} in {new_dir} only"
    )
    for key, found in differing[:show]:
        print(f"\n{key[0]} {key[1]} {key[2]} (occurrence {key[-1]}): {len(found)} difference(s)")
        print("".join(f"  {line}\n" for line in found[:10]), end="")
    for label, keys in ((base_dir, only_base), (new_dir, only_new)):
        for key in keys[:show]:
            print(f"\nonly in {label}: {key[0]} {key[1]} {key[2]} (occurrence {key[-1]}): {key[5][:200]}")
    return 1 if differing or only_base or only_new else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    recording = commands.add_parser("record", help="record the snapshots into OUT_DIR")
    recording.add_argument("out_dir", type=Path)
    recording.add_argument("--workers", type=int, default=1, help="pytest-xdist workers (default: 1, no xdist)")
    comparing = commands.add_parser("compare", help="compare two recordings")
    comparing.add_argument("base_dir", type=Path)
    comparing.add_argument("new_dir", type=Path)
    comparing.add_argument("--show", type=int, default=10, help="differences shown in detail (default: 10)")
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.out_dir, args.workers)
    return compare(args.base_dir, args.new_dir, args.show)


if __name__ == "__main__":
    raise SystemExit(main())
