"""The GitHub Action (`action.yml`, #26 §3), its steps run as a runner runs them: each `run:`
step of action.yml, its `${{ … }}` expressions filled in, in `bash --noprofile --norc -eo
pipefail` (GitHub's `shell: bash`) with a fake `GITHUB_*` environment, its `$GITHUB_OUTPUT`
read back for the next steps, its `if:` obeyed; the `uses:` steps (setup-python,
upload-artifact) are recorded with their inputs, not run. The pull-request comment goes to a
fake GitHub REST API on 127.0.0.1 (list a PR's comments, paginated with a Link header as
GitHub does; create; update), which checks the token.

The exit codes come from the data, reasoned by hand (as in test_cli_compare.py, whose builders
these are): a task is "What is a plus b?", answered right or "No idea." by the offline judge.
- ALL_RIGHT (12 tasks, 3 of 3 right each) against an ALL_RIGHT baseline: every gate met, no
  difference at all, so the verdict is inconclusive: 0, and 4 under `--require-conclusive`.
- ONE_IN_THREE: each task right once in 3, so no task passes 3 of 3: per-task pass^3 is 0/12,
  whose lower bound 0 is below 0.5: `--fail-if-lower-bound 'pass_pow_k<0.5'` exits 1.
- ONE_IN_THREE against the ALL_RIGHT baseline, no gate: evaluate 0, compare regressed: 1.
- 5 tasks all wrong against 5 all right, gated by the task-level tests (`--population tasks`):
  the exact sign-flip test's smallest p-value over 5 tasks is 2/2^5 = 0.0625 > 0.05, so
  nothing can be significant: not tested, 5. (The attempt-level test, the default, calls it
  regressed: 2/20^5.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from fair_forge_core import __version__
from fair_forge_testing.builders import conversation, turn
from tests.cli.test_cli import ROOT, run_cli
from tests.cli.test_cli_compare import ALL_RIGHT, ONE_IN_THREE, REFERENCE_JUDGE, attempts, request_file
from tests.gfm import EVIL

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
SCRIPT = ROOT / "action" / "fair_forge_action.py"
TOKEN = "ghs_fakeTokenForTheTests0123456789abcd"
REPOSITORY = "octo/agents"
PR = 7
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
GATES = "--fail-if-lower-bound 'pass_pow_k<0.5' --max-flaky-tasks 0"
ARTIFACT_URL = "https://github.com/octo/agents/actions/runs/42/artifacts/9"


# --------------------------------------------------------------------------- the fake GitHub API


@dataclass
class FakeGitHub:
    """Issue comments of one repository, as the REST API serves them; every request recorded."""

    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    refuse: int | None = None  # answer every request with this status (403: a read-only token)
    next_id: int = 1
    url: str = ""
    link_base: str = ""  # where the Link headers point (default: this server, as GitHub's do)

    def add(self, issue: int, body: str, login: str) -> dict[str, Any]:
        comment = {"id": self.next_id, "body": body, "user": {"login": login}}
        self.next_id += 1
        self.comments.setdefault(issue, []).append(comment)
        return comment

    def bodies(self, issue: int = PR) -> list[str]:
        return [comment["body"] for comment in self.comments.get(issue, [])]


def handler_for(api: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    prefix = f"/repos/{REPOSITORY}/issues"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            url = urllib.parse.urlsplit(self.path)
            api.requests.append({"method": self.command, "path": url.path, "headers": dict(self.headers), "body": body})
            if api.refuse:
                return self._reply(api.refuse, {"message": "Resource not accessible by integration"})
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._reply(401, {"message": "Bad credentials"})
            listing = re.fullmatch(rf"{prefix}/(\d+)/comments", url.path)
            single = re.fullmatch(rf"{prefix}/comments/(\d+)", url.path)
            if listing and self.command == "GET":
                query = urllib.parse.parse_qs(url.query)
                per_page = min(int(query.get("per_page", ["30"])[0]), 100)
                page = int(query.get("page", ["1"])[0])
                everything = api.comments.get(int(listing.group(1)), [])
                chunk = everything[(page - 1) * per_page : page * per_page]
                headers = {}
                if page * per_page < len(everything):
                    following = f"{api.link_base or api.url}{url.path}?per_page={per_page}&page={page + 1}"
                    headers["Link"] = f'<{following}>; rel="next", <{following}>; rel="last"'
                return self._reply(200, chunk, headers)
            if listing and self.command == "POST" and isinstance(body, dict):
                return self._reply(201, api.add(int(listing.group(1)), body["body"], "github-actions[bot]"))
            if single and self.command == "PATCH" and isinstance(body, dict):
                for comment in (c for comments in api.comments.values() for c in comments):
                    if comment["id"] == int(single.group(1)):
                        if comment["user"]["login"] != "github-actions[bot]":  # the token's own comments only
                            return self._reply(403, {"message": "Resource not accessible by integration"})
                        comment["body"] = body["body"]
                        return self._reply(200, comment)
            return self._reply(404, {"message": "Not Found"})

        do_GET = do_POST = do_PATCH = _handle

    return Handler


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    api = FakeGitHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(api))
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield api
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


# --------------------------------------------------------------------------- running action.yml


@dataclass
class Step:
    id: str
    ran: bool
    code: int = 0
    stdout: str = ""
    stderr: str = ""
    uses: str = ""
    with_: dict[str, str] = field(default_factory=dict)


@dataclass
class Job:
    steps: dict[str, Step]
    outputs: dict[str, dict[str, str]]
    summary: str
    failed: bool

    @property
    def code(self) -> int:
        """The exit code of the last step, the one the job's result follows."""
        return self.steps["finish"].code

    def log(self) -> str:
        return "".join(step.stdout + step.stderr for step in self.steps.values())


def read_outputs(path: Path) -> dict[str, str]:
    """A `$GITHUB_OUTPUT` file: `name=value` lines and `name<<DELIMITER` blocks."""
    outputs: dict[str, str] = {}
    lines = iter(path.read_text().splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            for inner in lines:
                if inner == delimiter:
                    break
                value.append(inner)
            outputs[name] = "\n".join(value)
        elif "=" in line:
            name, value_ = line.split("=", 1)
            outputs[name] = value_
    return outputs


class Runner:
    """Runs action.yml's steps as a runner does, for one invocation with `inputs`."""

    def __init__(self, workspace: Path, env: dict[str, str], inputs: dict[str, str]) -> None:
        declared = ACTION["inputs"]
        unknown = set(inputs) - set(declared)
        assert not unknown, f"not inputs of action.yml: {unknown}"
        self.inputs = {name: str(spec.get("default", "")) for name, spec in declared.items()} | inputs
        self.workspace, self.env = workspace, env
        self.outputs: dict[str, dict[str, str]] = {}

    def value(self, expression: str) -> str:
        if match := re.fullmatch(r"inputs\.([\w-]+)", expression):
            return self.inputs[match.group(1)]  # KeyError: an input action.yml does not declare
        if match := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expression):
            return self.outputs.get(match.group(1), {}).get(match.group(2), "")
        raise AssertionError(f"the test's runner does not know the expression {expression!r}")

    def render(self, text: str) -> str:
        return EXPRESSION.sub(lambda match: self.value(match.group(1)), text)

    def condition(self, text: str | None, failed: bool) -> bool:
        """`if:` as GitHub reads the forms action.yml uses: terms joined by `&&`, each `always()`,
        `success()` or `X == 'literal'` / `X != 'literal'`; without always(), success() is implied."""
        terms = [term.strip() for term in (text or "success()").split("&&")]
        result = "always()" in terms or not failed
        for term in terms:
            if term == "success()":
                result = result and not failed
            elif match := re.fullmatch(r"(\S+) (==|!=) '(.*)'", term):
                equal = self.value(match.group(1)) == match.group(3)
                result = result and (equal if match.group(2) == "==" else not equal)
            elif term != "always()":
                raise AssertionError(f"the test's runner does not know the condition {term!r}")
        return result

    def run(
        self, *, skip: tuple[str, ...] = ("install",), uses_outputs: dict[str, dict[str, str]] | None = None
    ) -> Job:
        steps: dict[str, Step] = {}
        failed = False
        summary = self.workspace.parent / "step_summary.md"
        summary.touch()
        for index, spec in enumerate(ACTION["runs"]["steps"]):
            step_id = spec.get("id", f"step{index}")
            if step_id in skip or not self.condition(spec.get("if"), failed):
                steps[step_id] = Step(step_id, ran=False)
                continue
            if "uses" in spec:
                with_ = {name: self.render(str(value)) for name, value in spec.get("with", {}).items()}
                steps[step_id] = Step(step_id, ran=True, uses=spec["uses"], with_=with_)
                self.outputs[step_id] = (uses_outputs or {}).get(step_id, {})
                continue
            output = self.workspace.parent / f"output_{step_id}"
            output.write_text("")
            script = self.workspace.parent / f"script_{step_id}.sh"
            script.write_text(self.render(spec["run"]))
            env = {name: self.render(str(value)) for name, value in spec.get("env", {}).items()}
            env |= self.env | {"GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary)}
            assert spec["shell"] == "bash"
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=self.workspace,
                env=env,
                capture_output=True,
                text=True,
                timeout=240,
            )
            steps[step_id] = Step(step_id, ran=True, code=done.returncode, stdout=done.stdout, stderr=done.stderr)
            self.outputs[step_id] = read_outputs(output)
            failed = failed or done.returncode != 0
        return Job(steps, self.outputs, summary.read_text(), failed)


def environment(workspace: Path, api: FakeGitHub | None, event: dict[str, Any] | None) -> dict[str, str]:
    """What a runner sets for a step, faked: the workspace, the repository, the event, the API."""
    event_path = workspace.parent / "event.json"
    event_path.write_text(json.dumps(event or {}))
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(workspace.parent),
        "GITHUB_ACTIONS": "true",
        "GITHUB_ACTION_PATH": str(ROOT),
        # The install step is skipped: the CLI the steps run is this checkout's, as install would make it.
        "PYTHONPATH": str(ROOT),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_EVENT_NAME": "pull_request" if event and "pull_request" in event else "push",
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_API_URL": api.url if api else "http://127.0.0.1:9",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "42",
        "RUNNER_TEMP": str(workspace.parent),
        # The package the test runs (a worktree's, under PYTHONPATH), not the one installed.
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
    }


PULL_REQUEST = {"action": "synchronize", "number": PR, "pull_request": {"number": PR, "head": {"sha": "abc"}}}


def run_action(
    tmp_path: Path,
    inputs: dict[str, str],
    api: FakeGitHub | None = None,
    event: dict[str, Any] | None = PULL_REQUEST,
    workspace: Path | None = None,
) -> Job:
    workspace = workspace or tmp_path / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    runner = Runner(workspace, environment(workspace, api, event), inputs)
    return runner.run(uses_outputs={"upload": {"artifact-url": ARTIFACT_URL}})


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The request files of the scenarios, and the baseline's result as evaluate wrote it."""
    folder = tmp_path_factory.mktemp("action_data")
    files = {
        "baseline_request": request_file(folder / "baseline.json", attempts("v1", ALL_RIGHT)),
        "all_right": request_file(folder / "all_right.json", attempts("v2", ALL_RIGHT)),
        "one_in_three": request_file(folder / "one_in_three.json", attempts("v2", ONE_IN_THREE)),
        "five_right": request_file(folder / "five_right.json", attempts("v1", [(True,) * 3] * 5)),
        "five_wrong": request_file(folder / "five_wrong.json", attempts("v2", [(False,) * 3] * 5)),
    }
    for name, request in (("baseline", "baseline_request"), ("five_baseline", "five_right")):
        files[name] = folder / f"{name}.result.json"
        done = run_cli("evaluate", files[request], "--out", files[name], "--quiet")
        assert done.returncode == 0, done.stderr
    return files


def assert_no_token(job: Job, *files: Path) -> None:
    assert TOKEN not in job.log()
    assert TOKEN not in job.summary
    for path in files:
        if path.is_file():
            assert TOKEN not in path.read_text(errors="replace")


# --------------------------------------------------------------------------- the tests


def test_a_pull_request_gets_one_comment_created_then_updated_never_a_second(
    tmp_path: Path, github: FakeGitHub, data: dict[str, Path]
) -> None:
    # 130 comments of others first: the listing has 2 pages of 100, and the sticky one lands on
    # the second, so a client that read only the first page would post a second comment.
    for n in range(130):
        github.add(PR, f"comment {n} <!-- fair-forge: another-report -->", "someone")
    inputs = {
        "request": str(data["all_right"]),
        "baseline": str(data["baseline"]),
        "gates": GATES,
        "github-token": TOKEN,
        "report-name": "agent-eval",
    }
    first = run_action(tmp_path / "first", inputs, github)
    assert first.code == 0 and not first.failed, first.log()
    outputs = first.outputs["evaluate"]
    assert (outputs["exit-code"], outputs["evaluate-exit-code"], outputs["compare-exit-code"]) == ("0", "0", "0")
    directory = tmp_path / "first" / "workspace" / outputs["directory"]
    assert outputs["directory"] == "fair-forge-results/agent-eval"
    for name in ("result.json", "report.html", "junit.xml", "summary.md", "comparison.json", "compare.md"):
        assert (directory / name).is_file(), name
    assert json.loads((directory / "result.json").read_text())["success"] is True
    assert json.loads((directory / "comparison.json").read_text())["verdict"] == "inconclusive"
    # the artifact: the whole directory, under the report's name
    upload = first.steps["upload"]
    assert upload.uses.startswith("actions/upload-artifact@")
    assert upload.with_["name"] == "agent-eval" and upload.with_["path"] == outputs["directory"]
    # the step summary: what the CLI appended, evaluate's and compare's
    assert "## Fair-Forge evaluation" in first.summary and "## Fair-Forge comparison:" in first.summary

    mine = [body for body in github.bodies() if body.startswith("<!-- fair-forge: agent-eval -->\n")]
    assert len(mine) == 1 and len(github.bodies()) == 131
    body = mine[0]
    assert (directory / "summary.md").read_text().strip() in body
    assert (directory / "compare.md").read_text().strip() in body
    assert "exit 0: fair-forge compare" in body
    assert f"]({ARTIFACT_URL})" in body and "](https://github.com/octo/agents/actions/runs/42)" in body
    assert [(r["method"], r["path"]) for r in github.requests] == [
        ("GET", f"/repos/{REPOSITORY}/issues/{PR}/comments"),
        ("GET", f"/repos/{REPOSITORY}/issues/{PR}/comments"),
        ("POST", f"/repos/{REPOSITORY}/issues/{PR}/comments"),
    ]
    created_id = github.comments[PR][-1]["id"]

    # the second run, now failing its gates: the same comment, updated
    github.requests.clear()
    second = run_action(tmp_path / "second", inputs | {"request": str(data["one_in_three"])}, github)
    assert second.code == 1 and second.failed
    assert second.steps["comment"].ran and second.steps["upload"].ran
    assert len(github.bodies()) == 131
    mine = [c for c in github.comments[PR] if c["body"].startswith("<!-- fair-forge: agent-eval -->\n")]
    assert [c["id"] for c in mine] == [created_id]
    assert "exit 1: fair-forge evaluate: a gate failed" in mine[0]["body"]
    assert [r["method"] for r in github.requests] == ["GET", "GET", "PATCH"]
    assert github.requests[-1]["path"] == f"/repos/{REPOSITORY}/issues/comments/{created_id}"
    for request in github.requests:
        assert request["headers"]["Authorization"] == f"Bearer {TOKEN}"
        assert request["headers"]["Accept"] == "application/vnd.github+json"
    for job, root in ((first, tmp_path / "first"), (second, tmp_path / "second")):
        assert_no_token(job, *root.rglob("*"))


@pytest.mark.parametrize(
    ("scenario", "expected", "status"),
    [
        ("gate fails", 1, "exit 1: fair-forge evaluate: a gate failed"),
        ("regression", 1, "exit 1: fair-forge compare: regressed"),
        ("regression against a request", 1, "exit 1: fair-forge compare: regressed"),
        ("not tested", 5, "exit 5: fair-forge compare: not tested"),
        ("conclusion required", 4, "exit 4: fair-forge compare: inconclusive, under --require-conclusive"),
    ],
)
def test_the_job_fails_with_the_clis_exit_code_after_the_comment_and_the_upload(
    tmp_path: Path, github: FakeGitHub, data: dict[str, Path], scenario: str, expected: int, status: str
) -> None:
    inputs = {
        "gate fails": {"request": str(data["one_in_three"]), "gates": GATES},
        "regression": {"request": str(data["one_in_three"]), "baseline": str(data["baseline"])},
        # both sides evaluated: compare evaluates a baseline given as a request file
        "regression against a request": {
            "request": str(data["one_in_three"]),
            "baseline": str(data["baseline_request"]),
        },
        "not tested": {
            "request": str(data["five_wrong"]),
            "baseline": str(data["five_baseline"]),
            "compare-flags": "--population tasks",
        },
        "conclusion required": {
            "request": str(data["all_right"]),
            "baseline": str(data["baseline"]),
            "compare-flags": "--require-same-judge --require-conclusive",
        },
    }[scenario]
    job = run_action(tmp_path, inputs | {"github-token": TOKEN}, github)
    assert job.code == expected, job.log()
    assert job.outputs["evaluate"]["exit-code"] == str(expected)
    assert job.outputs["evaluate"]["status"].startswith(status)
    assert f"::error title=fair-forge::{status}" in job.steps["finish"].stdout
    assert job.steps["upload"].ran and job.steps["comment"].ran
    assert len(github.bodies()) == 1 and status in github.bodies()[0]
    if scenario != "gate fails":  # compare ran on evaluate's result, and wrote its files
        assert job.outputs["evaluate"]["evaluate-exit-code"] == "0"
        comparison = json.loads(Path(tmp_path / "workspace" / job.outputs["evaluate"]["comparison"]).read_text())
        verdicts = {"not tested": "not_tested", "conclusion required": "inconclusive"}
        assert comparison["verdict"] == verdicts.get(scenario, "regressed")


def test_a_failing_gate_still_compares_and_the_job_keeps_evaluates_code(tmp_path: Path, data: dict[str, Path]) -> None:
    # evaluate exits 1 (gates) and compare 1 (regressed): the first non-zero code is evaluate's
    inputs = {"request": str(data["one_in_three"]), "baseline": str(data["baseline"]), "gates": GATES}
    job = run_action(tmp_path, inputs)
    outputs = job.outputs["evaluate"]
    assert (outputs["evaluate-exit-code"], outputs["compare-exit-code"], job.code) == ("1", "1", 1)
    assert outputs["status"].startswith("exit 1: fair-forge evaluate")
    assert "## Fair-Forge comparison: " in job.summary


def test_traces_are_converted_then_evaluated(tmp_path: Path) -> None:
    traces = ROOT / "examples" / "traces"
    inputs = {
        "traces": str(traces / "openai_chat.json"),
        "format": "openai",
        "references": str(traces / "openai_chat.references.jsonl"),
        "task-key": "metadata.task",
        "output-directory": "out",
    }
    job = run_action(tmp_path, inputs)
    assert job.code == 0, job.log()
    directory = tmp_path / "workspace" / "out"
    request = json.loads((directory / "request.json").read_text())
    # the three traces and their tasks, as test_cli.py's convert test reads them from the fixture
    assert [d["task_id"] for d in request["datasets"]] == ["weather-paris", "compare-cities", "budget"]
    result = json.loads((directory / "result.json").read_text())
    assert len(result["per_conversation_metrics"]) == 3
    assert "$ fair-forge convert" in job.steps["evaluate"].stdout


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({}, "give exactly one of the inputs request and traces"),
        ({"request": "a.json", "traces": "t.json"}, "give exactly one of the inputs request and traces"),
        ({"traces": "t.json", "format": "openai"}, "input traces needs the input references"),
        ({"request": "a.json", "gates": "--max-flaky-tasks '0"}, "input gates: cannot split it into flags"),
        ({"request": "a.json", "report-name": "a/b"}, "input report-name: 'a/b' is not an artifact name"),
        ({"request": "a.json", "report-name": ".."}, "input report-name: '..' is not an artifact name"),
        (
            {"request": "out/result.json", "output-directory": "out"},
            "input request: out/result.json is a file this action writes in its output-directory",
        ),
        (
            {"request": "a.json", "baseline": "out/result.json", "output-directory": "out"},
            "input baseline: out/result.json is a file this action writes in its output-directory",
        ),
    ],
)
def test_a_bad_input_of_the_action_exits_2_naming_it(tmp_path: Path, inputs: dict[str, str], message: str) -> None:
    job = run_action(tmp_path, inputs)
    assert job.code == 2
    assert f"::error title=fair-forge::{message}" in job.steps["evaluate"].stdout
    assert job.outputs["evaluate"]["status"].startswith(f"exit 2: {message}")
    assert f"**Fair-Forge**: exit 2: {message}" in job.summary


def test_an_input_kept_in_the_output_directory_is_not_removed(tmp_path: Path) -> None:
    baseline = tmp_path / "workspace" / "out" / "result.json"
    baseline.parent.mkdir(parents=True)
    baseline.write_text('{"kept": true}')
    job = run_action(tmp_path, {"request": "a.json", "baseline": "out/result.json", "output-directory": "out"})
    assert job.code == 2 and baseline.read_text() == '{"kept": true}'


def test_a_compare_that_refuses_its_inputs_says_so_in_the_summary(tmp_path: Path, data: dict[str, Path]) -> None:
    job = run_action(tmp_path, {"request": str(data["all_right"]), "baseline": str(tmp_path / "nowhere.json")})
    assert job.code == 2 and job.outputs["evaluate"]["compare-exit-code"] == "2"
    assert job.summary.endswith(
        "**Fair-Forge**: exit 2: fair-forge compare: bad input, or the two sides judged differently (see the job's log)\n"
    )


def test_a_bad_input_of_the_cli_exits_2_as_the_cli_does(tmp_path: Path) -> None:
    job = run_action(tmp_path, {"request": "missing.json"})
    assert job.code == 2 and job.outputs["evaluate"]["evaluate-exit-code"] == "2"
    assert "missing.json" in job.steps["evaluate"].stderr
    assert job.outputs["evaluate"]["result"] == ""
    assert job.summary == "**Fair-Forge**: exit 2: fair-forge evaluate: bad input (see the job's log)\n"


@pytest.mark.parametrize(
    ("inputs", "event", "said"),
    [
        ({"github-token": ""}, PULL_REQUEST, "no github-token: no pull-request comment"),
        ({"github-token": TOKEN, "comment": "false"}, PULL_REQUEST, "comment: false: no pull-request comment"),
        ({"github-token": TOKEN}, {"ref": "refs/heads/main"}, "not a pull request (event push): no comment"),
    ],
)
def test_no_comment_without_a_token_a_pull_request_or_the_wish(
    tmp_path: Path, github: FakeGitHub, data: dict[str, Path], inputs: dict[str, str], event: dict[str, Any], said: str
) -> None:
    job = run_action(tmp_path, {"request": str(data["all_right"])} | inputs, github, event)
    assert job.code == 0
    assert said in job.steps["comment"].stdout
    assert github.requests == []


def test_a_refused_comment_is_a_warning_and_the_job_follows_the_cli(
    tmp_path: Path, github: FakeGitHub, data: dict[str, Path]
) -> None:
    github.refuse = 403
    job = run_action(tmp_path, {"request": str(data["all_right"]), "github-token": TOKEN}, github)
    assert job.steps["comment"].code == 0 and job.code == 0 and not job.failed
    assert (
        "::warning title=fair-forge::could not post the pull-request comment: "
        "HTTP 403: Resource not accessible by integration (the token needs `pull-requests: write`"
    ) in job.steps["comment"].stdout
    assert len(github.requests) == 1
    assert_no_token(job)


def test_an_unreachable_api_is_a_warning(tmp_path: Path, data: dict[str, Path]) -> None:
    job = run_action(tmp_path, {"request": str(data["all_right"]), "github-token": TOKEN})  # the API at port 9
    assert job.code == 0
    assert "::warning title=fair-forge::could not reach the GitHub API for the comment" in job.steps["comment"].stdout
    assert_no_token(job)


def test_the_token_never_follows_a_link_to_another_origin(tmp_path: Path, github: FakeGitHub) -> None:
    # the API's Link header names another server: the listing stops there, and the token stays home
    other = FakeGitHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(other))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        for n in range(101):
            github.add(PR, f"comment {n}", "someone")
        github.link_base = f"http://127.0.0.1:{server.server_address[1]}"
        env = environment(tmp_path / "workspace", github, PULL_REQUEST)
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "comment"],
            env=env | {"INPUT_GITHUB_TOKEN": TOKEN, "FF_STATUS": "exit 0"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert done.returncode == 0, done.stderr
    assert "created the comment on pull request #7" in done.stdout
    assert other.requests == []
    assert [r["method"] for r in github.requests] == ["GET", "POST"]


def test_install_resolves_the_actions_own_checkout_with_its_extras(tmp_path: Path) -> None:
    # pip's dry run, offline: what the step would install is this checkout's package at its version
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = environment(workspace, None, None)
    env |= {"PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1", "PIP_DRY_RUN": "1", "PIP_NO_BUILD_ISOLATION": "0"}
    runner = Runner(workspace, env, {"extras": "openai", "request": "x.json"})
    job = runner.run(skip=("evaluate", "upload", "comment", "finish"))
    install = job.steps["install"]
    assert install.code == 0, install.stdout + install.stderr
    assert f"pip install {ROOT}[openai]" in install.stdout
    assert f"Would install fair-forge-agentic-{__version__}" in install.stdout

    refused = Runner(workspace, env, {"extras": "openai; rm -rf /"}).run(skip=("evaluate", "upload", "comment"))
    assert refused.steps["install"].code == 2
    assert "input extras: expected names separated by commas" in refused.steps["install"].stdout
    assert refused.code == 3  # finish: the evaluate step never ran


# --------------------------------------------------------------------------- action.yml itself


def test_action_yml_is_a_composite_action_whose_steps_use_only_what_it_declares() -> None:
    assert ACTION["runs"]["using"] == "composite"
    inputs, steps = ACTION["inputs"], ACTION["runs"]["steps"]
    text = (ROOT / "action.yml").read_text()
    used = set(re.findall(r"inputs\.([\w-]+)", text))
    assert used == set(inputs), "an input used but not declared, or declared but never used"
    ids = [step.get("id") for step in steps]
    for index, step in enumerate(steps):
        assert ("run" in step) != ("uses" in step)
        if "run" in step:
            assert step["shell"] == "bash"
            # an input is data: it reaches a script through env, never spliced into the script
            assert "${{" not in step["run"], step["run"]
        for expression in EXPRESSION.findall(json.dumps(step)):
            if match := re.fullmatch(r"steps\.([\w-]+)\.outputs\.[\w-]+", expression):
                assert match.group(1) in ids[:index], f"step {step.get('id')} reads a later step"
    for output in ACTION["outputs"].values():
        step_id = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.[\w-]+ \}\}", output["value"])
        assert step_id and step_id.group(1) in ids
    # the report, the comment and the last step run whatever happened before them; the last one exits
    by_id = {step.get("id"): step for step in steps}
    assert ids[-1] == "finish"
    for step_id in ("upload", "comment", "finish"):
        assert by_id[step_id]["if"].startswith("always()")
    # every INPUT_* the script reads is handed to it by some step
    read = {
        "INPUT_" + name.upper().replace("-", "_") for name in re.findall(r'_input\("([\w-]+)"\)', SCRIPT.read_text())
    }
    given = {name for step in steps for name in step.get("env", {})}
    assert read <= given, read - given


# --------------------------------------------------------------------------- the comment step alone


def comment_step(
    tmp_path: Path, github: FakeGitHub, event: dict[str, Any], **env: str
) -> subprocess.CompletedProcess[str]:
    """The comment step's script run on its own, as action.yml runs it, with `env` added."""
    base = environment(tmp_path / "workspace", github, event)
    return subprocess.run(
        [sys.executable, str(SCRIPT), "comment"],
        env=base | {"INPUT_GITHUB_TOKEN": TOKEN, "FF_STATUS": "exit 0: fair-forge evaluate: every gate met"} | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("event", "issue"),
    [
        ({"issue": {"number": 12, "pull_request": {"url": "…"}}, "comment": {"body": "rerun"}}, 12),
        ({"pull_request": {"number": 13}, "number": 13}, 13),
        ({"issue": {"number": 14}, "comment": {"body": "an issue, not a PR"}}, None),
    ],
)
def test_the_pull_request_comes_from_the_event(
    tmp_path: Path, github: FakeGitHub, event: dict[str, Any], issue: int | None
) -> None:
    done = comment_step(tmp_path, github, event)
    assert done.returncode == 0, done.stderr
    if issue is None:
        assert "not a pull request" in done.stdout and github.requests == []
    else:
        assert [(r["method"], r["path"]) for r in github.requests][-1] == (
            "POST",
            f"/repos/{REPOSITORY}/issues/{issue}/comments",
        )


def test_a_summary_too_long_for_a_comment_is_cut_to_githubs_limit(tmp_path: Path, github: FakeGitHub) -> None:
    directory = tmp_path / "results"
    directory.mkdir()
    (directory / "summary.md").write_text(
        "## Fair-Forge evaluation\n\n" + "| a long row |\n" * 8000
    )  # 120,026 characters
    done = comment_step(tmp_path, github, PULL_REQUEST, FF_DIRECTORY=str(directory))
    assert done.returncode == 0, done.stderr
    (body,) = github.bodies()
    assert len(body) <= 65_536 < len((directory / "summary.md").read_text())  # GitHub's limit on a comment body
    assert body.startswith("<!-- fair-forge: fair-forge-report -->\n")
    assert body.endswith("… cut to fit a comment: the whole summary is in the job's step summary.\n")


def test_a_comment_input_other_than_true_or_false_is_named(tmp_path: Path, github: FakeGitHub) -> None:
    done = comment_step(tmp_path, github, PULL_REQUEST, INPUT_COMMENT="yes please")
    assert "::warning title=fair-forge::input comment: expected true or false, got 'yes please'" in done.stdout
    assert github.requests == []


def test_a_copied_marker_in_someone_elses_comment_does_not_stop_the_sticky_comment(
    tmp_path: Path, github: FakeGitHub
) -> None:
    github.add(PR, "<!-- fair-forge: fair-forge-report -->\nnot the bot's", "mallory")  # the API refuses its edit
    first = comment_step(tmp_path, github, PULL_REQUEST)
    second = comment_step(tmp_path, github, PULL_REQUEST, FF_STATUS="exit 1: fair-forge evaluate: a gate failed")
    assert first.returncode == second.returncode == 0
    assert [r["method"] for r in github.requests] == ["GET", "PATCH", "POST", "GET", "PATCH", "PATCH"]
    forged, mine = github.comments[PR]
    assert forged["body"].endswith("not the bot's") and mine["user"]["login"] == "github-actions[bot]"
    assert "exit 1: fair-forge evaluate: a gate failed" in mine["body"]
    assert f"updated comment {mine['id']} on pull request #7" in second.stdout


def test_the_docs_workflow_uses_only_declared_inputs_and_its_table_lists_them_all() -> None:
    page = (ROOT / "docs" / "how-to" / "ci.md").read_text()  # docs/how-to/ci.md "GitHub Action"
    section = page[page.index("\n## GitHub Action\n") :]
    section = section[: section.index("\n## ", 1)]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    workflow = yaml.safe_load(block.group(1))
    (step,) = [step for step in workflow["jobs"]["evaluate"]["steps"] if step["uses"] == "OWNER/REPO@REF"]
    assert set(step["with"]) <= set(ACTION["inputs"])
    table = set(re.findall(r"^\| (.+?) \|", section, re.MULTILINE)) - {"input", "---"}
    listed = {name.strip("` ") for row in table for name in row.split(",")}
    assert listed == set(ACTION["inputs"])


def test_a_mention_in_the_summaries_notifies_no_one(tmp_path: Path) -> None:
    from action.fair_forge_action import SUMMARY, comment_body

    (tmp_path / SUMMARY).write_text("ask @octocat (pass@3, a@b.org) _@a_ @@b .@c é@d\n", encoding="utf-8")
    body = comment_body("report", tmp_path, "passed", "", "")
    zws = "\u200b"
    # `a@b.org` is broken too: cmark-gfm would link it as `mailto:`.
    assert f"ask @{zws}octocat (pass@3, a@{zws}b.org) _@{zws}a_ @@{zws}b .@{zws}c é@{zws}d" in body


# --------------------------------------------------------------------------- #32: text stays text, the output directory


@pytest.mark.parametrize(
    ("link", "inputs"),
    [
        ("fair-forge-results", {}),  # the default fair-forge-results/<report-name>, under a link
        ("out", {"output-directory": "out"}),  # the directory itself a link
        ("out", {"output-directory": "out/inner"}),
    ],
)
def test_a_symlinked_output_directory_is_refused_before_anything_is_written(
    tmp_path: Path, data: dict[str, Path], link: str, inputs: dict[str, str]
) -> None:
    """A pull request commits the output directory as a link to a directory outside the
    workspace: the step refuses it (exit 2, naming it), removes and writes nothing there, and
    the upload step, which publishes the `directory` output, does not run."""
    outside = tmp_path / "outside"
    (outside / "fair-forge-report").mkdir(parents=True)
    (outside / "inner").mkdir()
    kept = {path: path.name for path in (outside / "result.json", outside / "fair-forge-report" / "summary.md")}
    for path, text in kept.items():
        path.write_text(text)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / link).symlink_to(outside, target_is_directory=True)
    job = run_action(tmp_path, {"request": str(data["all_right"])} | inputs, workspace=workspace)
    assert job.code == 2, job.log()
    assert "is a symbolic link" in job.outputs["evaluate"]["status"]
    assert "::error title=fair-forge::input output-directory: " in job.steps["evaluate"].stdout
    assert job.outputs["evaluate"]["directory"] == "" and not job.steps["upload"].ran
    assert {path: path.read_text() for path in kept} == kept
    assert sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*")) == [
        "fair-forge-report",
        "fair-forge-report/summary.md",
        "inner",
        "result.json",
    ]


def test_an_output_directory_holding_a_symbolic_link_is_refused(tmp_path: Path, data: dict[str, Path]) -> None:
    """A real output directory, committed with a link inside to a file of the runner: the upload
    step would publish what the link points to, so the step refuses it."""
    secret = tmp_path / "credentials"
    secret.write_text("secret")
    inside = tmp_path / "workspace" / "out" / "deep"
    inside.mkdir(parents=True)
    (inside / "notes.txt").symlink_to(secret)
    job = run_action(tmp_path, {"request": str(data["all_right"]), "output-directory": "out"})
    assert job.code == 2, job.log()
    assert "input output-directory: out holds a symbolic link" in job.outputs["evaluate"]["status"]
    assert job.outputs["evaluate"]["directory"] == "" and not job.steps["upload"].ran
    assert secret.read_text() == "secret" and not (tmp_path / "workspace" / "out" / "result.json").exists()


@pytest.mark.parametrize("absolute", [False, True])
def test_an_output_directory_outside_the_workspace_is_refused(tmp_path: Path, absolute: bool) -> None:
    directory = str(tmp_path / "elsewhere") if absolute else "../elsewhere"
    job = run_action(tmp_path, {"request": "a.json", "output-directory": directory})
    assert job.code == 2
    assert "input output-directory: " in job.outputs["evaluate"]["status"]
    assert "is outside the workspace" in job.outputs["evaluate"]["status"]
    assert not (tmp_path / "elsewhere").exists()
    assert not job.steps["upload"].ran


HOSTILE_TASK = "</td></tr></table><details><summary>all gates met</summary>\n::error title=x::pwned\n::add-mask::FAILED"
HOSTILE_ASSISTANT = '<img src="https://evil.example/p.png"> [docs](https://evil.example) &#64;octocat'


def test_hostile_ids_are_text_in_the_comment_the_summary_and_the_log(tmp_path: Path, github: FakeGitHub) -> None:
    """A task id that closes the summary's table, opens a `<details>` and carries workflow
    commands after line breaks, and an assistant id with an image, a link and an entity-encoded
    mention: the comment and the step summary, rendered as GitHub renders them, show them as
    text, and no line of the job's log but the action's own is a workflow command."""
    from tests.gfm import MENTION, Page, render

    conversations = [
        conversation(
            f"s{i}",
            [turn(f"q{i}", "What is 1 plus 7?", "It is 8." if i else "No idea.", "8")],
            assistant_id=HOSTILE_ASSISTANT,
            task_id=HOSTILE_TASK,
        )
        for i in range(3)
    ]
    request = tmp_path / "hostile.json"
    request.write_text(json.dumps({"connector": REFERENCE_JUDGE, "datasets": conversations, "config": {"k": 3}}))
    job = run_action(
        tmp_path, {"request": str(request), "gates": "--min-task-pass-rate 0.9", "github-token": TOKEN}, github
    )
    assert job.code == 1, job.log()
    for markdown in (github.bodies()[0], job.summary):
        page = Page(render(markdown))
        assert not {"details", "summary", "img"} & set(page.tags), page.tags
        assert all(EVIL not in href for href in page.hrefs), page.hrefs
        assert not MENTION.search("".join(page.text))
        plain = page.plain()
        assert " ".join(HOSTILE_TASK.split()) in plain and HOSTILE_ASSISTANT in plain
    own = re.compile(
        r"::(stop-commands::fair-forge-[0-9a-f]{32}|fair-forge-[0-9a-f]{32}::|(error|warning) title=fair-forge::)"
    )
    commands = [
        line
        for line in re.split(r"\r\n|\r|\n", job.log())
        if (line.lstrip().startswith("::") and not own.match(line.lstrip())) or "##[" in line
    ]
    assert commands == []
    assert "FAILED: 1 of 1 task(s) pass less often than --min-task-pass-rate 0.9" in job.log()


def test_attempts_left_unjoined_fail_the_job_and_the_comment_says_how_many(tmp_path: Path, github: FakeGitHub) -> None:
    from tests.cli.test_cli_unjoined import UNJOINED, scenario_files

    traces, references = scenario_files(tmp_path)
    inputs = {"traces": str(traces), "format": "openai", "references": str(references), "task-key": "metadata.task"}
    job = run_action(tmp_path, inputs | {"gates": "--min-task-pass-rate 0.9", "github-token": TOKEN}, github)
    outputs = job.outputs["evaluate"]
    assert (job.code, outputs["exit-code"], outputs["evaluate-exit-code"]) == (6, "6", "1"), job.log()
    assert outputs["status"].startswith("exit 6: fair-forge convert: trace attempts could not be joined")
    assert "exit 1: fair-forge evaluate" in outputs["status"]  # the request was evaluated, and its gate failed
    (body,) = github.bodies()
    assert f"**{UNJOINED}**: kept as unscored conversations." in body
    assert f"**{UNJOINED}**" in job.summary
