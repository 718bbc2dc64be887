"""`make run`: start the local API, POST every offline example to it, print the results.

Examples whose connector needs a provider key (groq.json, openai.json) are listed
but not sent; fill in a key and POST them yourself with curl. Each trace file in
`traces/` is sent as traces with its references (`TRACE_EXAMPLES`: its format and
what matches a trace to its task; `TRACE_CONFIGS`: its config, if any). Full responses are written to
`out/<example>.response.json`. Then one small adaptive run of `fair-forge run` against the stub
agent (`adaptive_example`), its recording and result in `out/agent.*.json`. Last, `fair-forge view`
of those results (`site_example`): the static site of the runs side by side, in `out/site/`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parent
OFFLINE_JUDGE = "fair_forge_core.judges.ReferenceJudge"

TRACE_EXAMPLES = {  # file in traces/ → (its format, the task key)
    "openai_chat.json": ("openai", "metadata.task"),
    "langchain_messages.json": ("langchain", "metadata.task"),
    "otel_genai.json": ("otel", "metadata.app.task"),
    "openai_agents.json": ("openai-agents", "metadata.task"),
    "langsmith_runs.json": ("langsmith", "metadata.task"),
    "openinference_spans.json": ("openinference", "metadata.task"),
    "langfuse_traces.json": ("langfuse", "metadata.task"),
    "support_tasks.json": ("openai", "metadata.task"),
}
TRACE_CONFIGS = {  # file in traces/ → its request's config, when it has one
    # The offline judge abstains on goals: the goal is reported, not required; k = its 2 attempts.
    "support_tasks.json": {"require_goal": False, "k": 2},
    # Two traces each: k = 2, so no "k exceeds the scored conversations" warning.
    "openinference_spans.json": {"k": 2},
    "langfuse_traces.json": {"k": 2},
}


def trace_requests() -> list[tuple[str, dict[str, Any]]]:
    """`(name, body)` of a traces request for each file of `TRACE_EXAMPLES`, judged offline."""
    requests = []
    for name, (trace_format, task_key) in TRACE_EXAMPLES.items():
        traces = EXAMPLES / "traces" / name
        references = traces.with_suffix(".references.jsonl").read_text(encoding="utf-8").splitlines()
        items = json.loads(traces.read_text(encoding="utf-8"))
        body = {
            "connector": {"class_path": OFFLINE_JUDGE, "params": {}},
            "traces": {"format": trace_format, "items": items if isinstance(items, list) else [items]},
            "references": [json.loads(line) for line in references if line.strip()],
            "task_key": task_key,
        }
        if name in TRACE_CONFIGS:
            body["config"] = TRACE_CONFIGS[name]
        requests.append((f"traces/{name} ({trace_format})", body))
    return requests


def http_json(url: str, body: bytes | None = None, timeout: float = 60.0) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def wait_until_healthy(base_url: str, server: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the local API exited with code {server.returncode}")
        try:
            if http_json(f"{base_url}/health", timeout=2.0)[0] == 200:
                return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    raise SystemExit(f"the local API did not answer on {base_url} within {timeout_s:.0f} s")


def summarise(name: str, status: int, result: dict[str, Any]) -> str:
    """One example's response in a few lines: the readiness headline first (what the evidence
    supports and its figures, each under its one name, credible intervals included in Bayesian
    mode: `fair_forge_core.headline`, as `fair-forge evaluate` prints it), per-assistant readiness
    when there are several, the comparison, each conversation, the warnings."""
    if status != 200:
        return f"{name}: HTTP {status} — {result.get('error')}"
    from fair_forge_core.headline import headline_lines
    from fair_forge_core.schemas import AggregatedMetrics

    agg = result["aggregated_metrics"]
    lines = [name + ":", *(f"  {line}" for line in headline_lines(AggregatedMetrics.model_validate(agg)))]
    for assistant, sub in (agg.get("by_assistant") or {}).items():
        lines.append(f"  {assistant}: {sub['readiness']['summary']}")
    if agg.get("comparison"):
        lines += compared(agg["comparison"])
    if agg.get("task_stability"):
        from fair_forge_core.flakiness import summary
        from fair_forge_core.schemas import TaskStability

        lines.append(f"  {summary(TaskStability.model_validate(agg['task_stability']))}")
    if agg.get("efficiency"):
        from fair_forge_core.efficiency import efficiency_line
        from fair_forge_core.schemas import EfficiencyAggregate

        lines.append(f"  {efficiency_line(EfficiencyAggregate.model_validate(agg['efficiency']))}")
    for conversation in result["per_conversation_metrics"]:
        mark = {True: "PASS", False: "FAIL", None: "UNSCORED"}[conversation["is_fully_correct"]]
        scores = ", ".join("–" if s is None else f"{s:.2f}" for s in conversation["correctness_scores"])
        notes = "".join(f"; {note}" for note in conversation_notes(conversation))
        lines.append(f"  [{mark}] {conversation['session_id']}: answer scores [{scores}]{notes}")
        lines.extend(f"    {line}" for line in policy_lines(conversation))
    lines.extend(f"  warning: {w}" for w in result.get("warnings", []))
    return "\n".join(lines)


def conversation_notes(conversation: dict[str, Any]) -> list[str]:
    """What a conversation's line says besides its answer scores: its end state and its goal."""
    notes = []
    state = conversation.get("state_check")
    if state is not None:
        differ = f"end state: {state['mismatched']} of {state['checked']} key(s) differ"
        notes.append("end state matches" if state["matches"] else differ)
    goal = conversation.get("goal_check")
    if goal is not None:
        verdict = {True: "achieved", False: "NOT achieved", None: f"not judged ({goal['error']})"}
        notes.append(f"goal {verdict[goal['goal_achieved']]}{'' if goal['required'] else ' (not required)'}")
    return notes


def policy_lines(conversation: dict[str, Any]) -> list[str]:
    """One line per turn that broke its tool policy or missed its trajectory match."""
    lines = []
    for interaction in conversation.get("interactions") or []:
        policy = interaction.get("tool_policy")
        if policy is None or (policy["passed"] and policy["trajectory_matches"] is not False):
            continue
        broken = [v["message"] for v in policy["violations"]]
        if policy["trajectory_matches"] is False:
            broken.append(f"the calls do not match the expected ones ({policy['trajectory_match']})")
        lines.append(f"{interaction['qa_id']}: tool policy: {'; '.join(broken)}")
    return lines


def compared(comparison: dict[str, Any]) -> list[str]:
    """`config.compare`: the verdict, the tasks that changed, then one line per metric of the
    task-level tests (difference and its interval), named as every face names them."""
    from fair_forge_core.compare.labels import counts, metric_label

    lines = [f"  comparison: {comparison['verdict_explanation']}"]
    changed = comparison.get("changed_tasks") or []
    if changed:
        shown = ", ".join(
            f"{t['task']} {counts(t['baseline_successes'], t['baseline_attempts'])} → "
            f"{counts(t['candidate_successes'], t['candidate_attempts'])}"
            for t in changed[:5]
        )
        lines.append(
            f"    tasks that changed ({len(changed)}, worst first): {shown}{', …' if len(changed) > 5 else ''}"
        )
    if comparison.get("task_level_explanation"):
        lines.append(f"    task-level: {comparison['task_level_explanation']}")
    for metric in comparison["metrics"]:
        if metric["difference"] is None:
            continue
        interval = "" if metric["ci_low"] is None else f" [{metric['ci_low']:+.3f}, {metric['ci_high']:+.3f}]"
        lines.append(
            f"    {metric_label(metric['metric'], metric['k'])}: {metric['baseline']:.3f} → {metric['candidate']:.3f}, "
            f"difference {metric['difference']:+.3f}{interval}"
        )
    if comparison.get("probability_candidate_better") is not None:
        lines.append(f"    P(candidate better) = {comparison['probability_candidate_better']:.3f}")
    return lines


def adaptive_example(out: Path) -> int:
    """`fair-forge run` with adaptive attempts against the stub agent (`agent/`: three tasks, one
    always right, one never, one right 60 % of the time; docs/tutorial.md "7. Run your agent k
    times"), evaluated, gated on the confidence sequences' bound; its summary printed, its exit code
    returned (0: the gate is met)."""
    from fair_forge_core.cli import main as fair_forge
    from fair_forge_testing.stub_agent import StubAgentServer, StubScript

    script = StubScript.from_json((EXAMPLES / "agent" / "stub_script.json").read_text(encoding="utf-8"))
    print("agent/tasks.json: fair-forge run --until-decided 'p>=0.5' against the stub agent")
    with StubAgentServer(script) as server:
        code = fair_forge(
            [
                "run",
                str(EXAMPLES / "agent" / "tasks.json"),
                "--agent-url",
                server.url,
                "--assistant-id",
                "stub-agent",
                "--until-decided",
                "p>=0.5",
                "--max-attempts",
                "20",
                "--round-size",
                "2",
                "-o",
                str(out / "agent.recorded.json"),
                "--evaluate",
                "--result",
                str(out / "agent.result.json"),
                "--fail-if-lower-bound",
                "pass_pow_k<0.05",
            ],
            stdout=sys.stdout,
            stderr=sys.stdout,
        )
    print(f"fair-forge run exited {code}\n")
    return code


def site_example(out: Path) -> int:
    """`fair-forge view` of every result written above (the responses and the agent run's result;
    the recording is not a result, and is skipped): the static site, its path printed; its exit code."""
    from fair_forge_core.cli import main as fair_forge

    results = [*sorted(out.glob("*.response.json")), out / "agent.result.json"]
    with open(os.devnull, "w") as quiet:  # its "wrote …" line: the path is printed below
        code = fair_forge(["view", *map(str, results), "--out", str(out / "site")], stdout=sys.stdout, stderr=quiet)
    print(f"fair-forge view: the {len(results)} results side by side: open {(out / 'site' / 'index.html').resolve()}\n")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=3000)
    parser.add_argument("--out", type=Path, default=Path("out"))
    args = parser.parse_args(argv)
    base_url = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "handler.local", "--port", str(args.port)], stdout=subprocess.DEVNULL
    )
    failures = 0
    try:
        wait_until_healthy(base_url, server)
        print(f"Local API up on {base_url}\n")
        args.out.mkdir(exist_ok=True)
        for path in sorted(EXAMPLES.glob("*.json")):
            request = json.loads(path.read_text())
            if request["connector"]["class_path"] != OFFLINE_JUDGE:
                print(
                    f"{path.name}: needs a provider key, not sent. Put your key in the file, start the local API "
                    f"with `make serve`, then in another shell: curl -d @examples/{path.name} {base_url}/run\n"
                )
                continue
            status, result = http_json(f"{base_url}/run", path.read_bytes())
            (args.out / f"{path.stem}.response.json").write_text(json.dumps(result, indent=2) + "\n")
            print(summarise(path.name, status, result) + "\n")
            failures += status != 200
        for name, body in trace_requests():
            status, result = http_json(f"{base_url}/run", json.dumps(body).encode("utf-8"))
            stem = name.split(" ")[0].replace("/", "_").removesuffix(".json")
            (args.out / f"{stem}.response.json").write_text(json.dumps(result, indent=2) + "\n")
            print(summarise(name, status, result) + "\n")
            failures += status != 200
        failures += adaptive_example(args.out) != 0
        failures += site_example(args.out) != 0
        print(f"Full responses are in {args.out}/.")
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
