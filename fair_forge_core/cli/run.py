"""`fair-forge run`: run an agent on a TASKS file and record every attempt as a request
(docs/agent-contract.md; docs/how-to/ci.md "Run your agent and gate it").

    fair-forge run TASKS (--agent SPEC | --agent-url URL [--assistant-id ID])
        (--attempts K | --until-decided 'p>=X' [--max-attempts N] [--round-size R])
        [--agent-concurrency N] [--agent-timeout S] [--max-agent-cost-usd X] [--max-total-attempts N]
        [--agent-errors failed|unscored] [-o recorded.json] [--evaluate [--result FILE] [evaluate's flags]]

**TASKS** is a TASKS file (`agents.TasksFile`: `{"tasks": [...], "connector"?, "config"?}`;
`schemas/tasks.schema.json`). The recording is judged by its `connector`, else by the offline judge
(`fair_forge_core.judges.ReferenceJudge`, as `convert` writes); its `config` is carried as it is.

**SPEC** is the agent spec (`agents.AgentSpec`: `kind` http, command or python, `assistant_id`,
`url` / `argv` / `callable`, `headers_from_env`, `timeout_s`, `retries`...), as a JSON file or as
inline JSON (an argument that starts with `{`). `--agent-url URL` is the shorthand for `{"kind":
"http", "url": URL, "assistant_id": ID}` (`--assistant-id`, default `agent`). `--agent-timeout S`
overrides the spec's `timeout_s`. Header values come from the environment and are never printed.

**Attempts.** `--attempts K`: K of every task. `--until-decided Q` (`pass_pow_k>=T` with the
config's k, or `p>=T`; `<=` too): adaptive attempts (`agents.adaptive_run`): rounds of
`--round-size` attempts (default 1; `--futility`, default 0.01, as `adaptive.next_round`), each judged as `evaluate` would judge it (with `--judge-cache`
when given, without a cost cap), a task stopping once its anytime-valid confidence sequence is
above or below the boundary, or after `--max-attempts` attempts (default 20); the recording's
`attempts` says what the run decided. Bounds of either: `--agent-concurrency` attempts in flight
(default 8, the agent's own, not the judge's), `--max-total-attempts` started in all,
`--max-agent-cost-usd` (the agent's reported cost; no attempt starts once it is reached). A failed
attempt is recorded with its cause, and the run goes on; `--agent-errors unscored` makes such
attempts unscored instead of failed.

**Outputs.** The recording is written to `-o/--out` (else to stdout, unless `--evaluate`); on
stderr, unless `--quiet`, a line per round of adaptive attempts, then the summary: `run: 12
attempt(s) of 3 task(s), 1 failed (agent_timeout 1), agent cost $0.024000`. `--evaluate` then
evaluates the recording exactly as `evaluate` evaluates a request file (`cli.evaluate.evaluate_body`:
its flags apply, the result JSON going to `--result`, else stdout), and the exit code is
evaluate's. Every output is checked before the agent is called.

Exit codes: 0 done; 2 bad input (the file, the field or the flag named; the agent spec refused);
3 no attempt could be run or judged (a round of adaptive attempts whose judge refused);
`--evaluate`'s own as `evaluate` (1 a gate failed).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from fair_forge_core.cli.common import (
    EXIT_EVALUATION_FAILED,
    EXIT_OK,
    CliError,
    display_name,
    json_dump,
    read_json,
    say,
    write_output,
)

if TYPE_CHECKING:
    from fair_forge_core.adaptive import Question
    from fair_forge_core.agents import Agent, AgentSpec, RunRecording, RunSummary, TasksFile
    from fair_forge_core.schemas import AdaptiveTask, Dataset

OFFLINE_CONNECTOR = {"class_path": "fair_forge_core.judges.ReferenceJudge", "params": {}}
"""The judge of a recording whose TASKS file names none: the offline judge, as `convert` writes."""
RUN_OUTPUTS = {"--out": "recording", "--result": "out"}
"""`run`'s own outputs (flag → the `args` attribute); with `--evaluate`, evaluate's others too."""


def cmd_run(args: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    from fair_forge_core.agents import AgentNotAllowed, build_agent
    from fair_forge_core.cli.evaluate import check_evaluation_outputs, evaluate_body
    from fair_forge_core.cli.outputs import EVALUATE_OUTPUTS
    from fair_forge_core.evaluate import run_sync

    spec = agent_spec(args, stdin)
    tasks = read_tasks(args.tasks, stdin)
    connector = tasks.connector if tasks.connector is not None else OFFLINE_CONNECTOR
    question = _question(args, tasks)
    outputs = {**{f: a for f, a in EVALUATE_OUTPUTS.items() if f != "--out"}, **RUN_OUTPUTS}
    if args.evaluate:
        check_evaluation_outputs(args, outputs)
    else:
        check_evaluation_outputs(args, {"--out": "recording"})  # the evaluation's flags do nothing
    try:
        agent = build_agent(spec, concurrency=args.agent_concurrency)
    except AgentNotAllowed as exc:
        raise CliError(f"--agent: {exc}") from None
    recording = run_sync(_run(args, tasks, agent, question, connector, stderr))
    body = recording.request(connector, tasks.config)
    if args.recording is not None or not args.evaluate:
        write_output(json_dump(body), args.recording, stdout)
    if not args.quiet:
        say(stderr, summary_line(recording.summary, len(tasks.tasks)))
        if args.recording is not None:
            say(stderr, f"wrote {args.recording}")
    if not recording.datasets:
        raise CliError("no attempt was run: nothing recorded", EXIT_EVALUATION_FAILED)
    if args.evaluate:
        return evaluate_body(args, body, args.recording or Path("the recording"), stdout, stderr)
    return EXIT_OK


def agent_spec(args: argparse.Namespace, stdin: TextIO) -> AgentSpec:
    """The agent spec of `--agent` (a JSON file, or inline JSON when it starts with `{`) or of
    `--agent-url`, with `--agent-timeout` applied; exit 2 naming the flag and the field."""
    from pydantic import ValidationError

    from fair_forge_core.agents import AgentSpec
    from fair_forge_core.cli.common import validation_message
    from fair_forge_core.schemas import describe_json_error, loads_json

    if args.agent_url is not None:
        data: dict[str, Any] = {"kind": "http", "url": args.agent_url, "assistant_id": args.assistant_id}
        where = Path("--agent-url")
    elif args.agent.lstrip().startswith("{"):
        where = Path("--agent")
        try:
            data = loads_json(args.agent)
        except ValueError as exc:
            raise CliError(f"--agent is not valid JSON: {describe_json_error(exc)}") from None
        if not isinstance(data, dict):
            raise CliError("--agent must hold a JSON object")
    else:
        where = Path(args.agent)
        data = read_json(where, "agent spec", stdin)
    if args.agent_timeout is not None:
        data = {**data, "timeout_s": args.agent_timeout}
    try:
        return AgentSpec.model_validate(data)
    except ValidationError as exc:
        raise CliError(validation_message(where, "agent spec", exc, AgentSpec), multiline=True) from None


def read_tasks(path: Path, stdin: TextIO) -> TasksFile:
    """The TASKS file at `path` (`-`: stdin); exit 2 naming the file and the field."""
    from pydantic import ValidationError

    import fair_forge_core.checks  # noqa: F401  (loads the checks that validate config.checks)
    from fair_forge_core.agents import TasksFile
    from fair_forge_core.cli.common import validation_message

    body = read_json(path, "tasks file", stdin)
    try:
        return TasksFile.model_validate(body)
    except ValidationError as exc:
        raise CliError(validation_message(path, "tasks file", exc, TasksFile), multiline=True) from None


def _question(args: argparse.Namespace, tasks: TasksFile) -> Question | None:
    """The question of `--until-decided`, read with the config's k; None for `--attempts`."""
    from fair_forge_core.adaptive import parse_question
    from fair_forge_core.schemas import EvaluationConfig

    if args.until_decided is None:
        if args.max_attempts is not None or args.round_size is not None or args.futility is not None:
            raise CliError("--max-attempts, --round-size and --futility go with --until-decided")
        return None
    config = tasks.config or EvaluationConfig()
    if getattr(args, "max_cost_usd", None) is not None or config.max_cost_usd is not None:
        # Each round is judged as an evaluation of its own: a cap would hold per round, not for the run.
        raise CliError(
            "--until-decided: a judge cost cap (--max-cost-usd, config.max_cost_usd) is not applied across "
            "adaptive rounds yet; leave it out, or use --attempts K"
        )
    try:
        return parse_question(args.until_decided, config.k)
    except ValueError as exc:
        raise CliError(f"--until-decided: {exc}") from None


async def _run(
    args: argparse.Namespace,
    tasks: TasksFile,
    agent: Agent,
    question: Question | None,
    connector: Any,
    stderr: TextIO,
) -> RunRecording:
    """The run (`run_attempts`, or `run_adaptive` judging each round), the agent closed after it."""
    from fair_forge_core.adaptive import DEFAULT_FUTILITY
    from fair_forge_core.agents import run_adaptive, run_attempts

    bounds: dict[str, Any] = {
        "concurrency": args.agent_concurrency,
        "max_cost_usd": args.max_agent_cost_usd,
        "agent_errors": args.agent_errors,
    }
    try:
        if question is None:
            return await run_attempts(
                tasks.tasks, agent, attempts=args.attempts, max_attempts=args.max_total_attempts, **bounds
            )

        def on_round(number: int, outcomes: list[Any], reports: dict[str, AdaptiveTask]) -> None:
            if not args.quiet:
                say(stderr, round_line(number, len(outcomes), reports))

        return await run_adaptive(
            tasks.tasks,
            agent,
            question=question,
            judge=_round_judge(args, connector, tasks),
            max_attempts=args.max_attempts or 20,
            round_size=args.round_size or 1,
            futility=DEFAULT_FUTILITY if args.futility is None else args.futility,
            max_total_attempts=args.max_total_attempts,
            on_round=on_round,
            **bounds,
        )
    finally:
        await agent.aclose()


def _round_judge(args: argparse.Namespace, connector: Any, tasks: TasksFile) -> Any:
    """Judges a round's datasets as `evaluate` would judge the recording (its connector and
    config, `--judge-cache`): each dataset's verdict, True fully correct, None unscored."""
    from fair_forge_core.cli.common import evaluation_plan, request_of
    from fair_forge_core.evaluate import NoConversationScored
    from fair_forge_core.judges.llm import JudgeProviderRefused
    from fair_forge_core.plan import execute

    config = tasks.config.model_dump(mode="json", exclude_unset=True) if tasks.config is not None else None
    connector_json = connector if isinstance(connector, dict) else _json_of(connector)
    where = Path(display_name(args.tasks))

    async def judge(datasets: list[Dataset]) -> list[bool | None]:
        body: dict[str, Any] = {"connector": connector_json, "datasets": [d.model_dump(mode="json") for d in datasets]}
        if config is not None:
            body["config"] = config
        request, _ = request_of(body, where)
        try:
            result = await execute(evaluation_plan(request, where, judge_cache=args.judge_cache))
        except NoConversationScored:
            return [None] * len(datasets)  # a round with nothing scored decides nothing
        except JudgeProviderRefused as exc:
            raise CliError(f"judging a round of attempts failed: {exc}", EXIT_EVALUATION_FAILED) from None
        verdicts = {
            m.session_id: (m.is_fully_correct if m.is_scored else None) for m in result.per_conversation_metrics
        }
        return [verdicts.get(d.session_id) for d in datasets]

    return judge


def _json_of(connector: Any) -> Any:
    if isinstance(connector, list):
        return [_json_of(item) for item in connector]
    return connector.model_dump(mode="json", exclude_unset=True)


def round_line(number: int, attempts: int, reports: dict[str, AdaptiveTask]) -> str:
    """`round 2: 4 attempt(s); 3 task(s): 1 above, 1 below, 1 undecided`."""
    from collections import Counter

    decided = Counter(task.decided for task in reports.values())
    return (
        f"round {number}: {attempts} attempt(s); {len(reports)} task(s): {decided['above']} above, "
        f"{decided['below']} below, {decided['undecided']} undecided"
    )


def summary_line(summary: RunSummary, tasks: int) -> str:
    """`run: 12 attempt(s) of 3 task(s), 1 failed (agent_timeout 1), agent cost $0.024000`, and the
    attempts a bound kept from starting (`; 4 not started (max_cost_usd)`)."""
    failed = sum(summary.failed.values())
    causes = ", ".join(f"{cause} {count}" for cause, count in summary.failed.items())
    line = f"run: {summary.attempts} attempt(s) of {tasks} task(s), {failed} failed"
    line += f" ({causes})" if causes else ""
    line += f", agent cost ${summary.agent_cost_usd:.6f}"
    if summary.not_started:
        line += f"; {summary.not_started} not started ({summary.stopped})"
    return line
