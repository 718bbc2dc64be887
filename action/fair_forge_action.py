"""The steps of the GitHub Action (`action.yml` at the repository's root), one subcommand each:

    python fair_forge_action.py install|evaluate|view|comment|finish

`action.yml` runs each step as `python "$GITHUB_ACTION_PATH/action/fair_forge_action.py" STEP`
and hands it the action's inputs as `INPUT_*` environment variables (never spliced into the
script: an input is data, not shell). Only the standard library, and `fair_forge_core.safe_text`
(itself standard library only) from the action's own checkout: the script runs before the
package is installed (`install`), and beside whichever `fair-forge` the `package` input chose.

Text from the data stays text: printed lines go through `safe_text.log_line`, Markdown values
through `safe_text.markdown_text`, the CLI runs between `::stop-commands::` and its token.

- `install`: `pip install` the action's own checkout (`$GITHUB_ACTION_PATH`, with the `extras`),
  or the `package` input's pip requirement when it is given.
- `evaluate`: an output directory that is, lies under or holds a symbolic link, or is outside
  `$GITHUB_WORKSPACE`, is refused (exit 2, `action/output_directory.py`) before anything is
  written, the `directory` output left empty (no upload). Then `fair-forge convert` (when `traces`
  is given; with `--allow-unjoined` when the `allow-unjoined` input is true; its exit 6, attempts
  left unjoined, still writes the request, which is then evaluated), `fair-forge evaluate` writing
  result.json, report.html, junit.xml and summary.md into the output directory with the
  `gates` as extra flags, then `fair-forge compare BASELINE result.json` (comparison.json,
  compare.xml, compare.md, with `compare-flags`) when a `baseline` is given and evaluate wrote
  its result (exit 0 or 1: the outputs are written before the gates). The CLI appends its
  Markdown to `$GITHUB_STEP_SUMMARY` itself. The step always exits 0 and writes the codes to
  `$GITHUB_OUTPUT`: `exit-code` is the first non-zero code of convert, evaluate and compare
  (in that order), else 0; a bad input of the action itself is 2, as the CLI's bad input is.
- `view` (when the `view` input is true and evaluate wrote its result): the viewer's site of this
  run and the earlier runs of the `report-name`, in `site/` of the output directory (`action/history.py`).
- `comment`: create, or update in place, one pull-request comment per `report-name`, found by
  its first line `<!-- fair-forge: REPORT-NAME -->` among the PR's comments (every page). It
  needs `comment: true`, a `github-token` and a pull_request (or pull_request_target, or a PR's
  issue_comment) event; otherwise it says why it did nothing. The token goes only to
  `$GITHUB_API_URL`, as `Authorization: Bearer`, never into a redirect or a log line. An API
  error is a warning: the comment never changes the job's result.
- `finish`: exit with `exit-code`, so that the job fails as the CLI would, after the summary,
  the comment and the artifact were done (those steps run `if: always()`).
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# The checkout's own `fair_forge_core.safe_text` (standard library only), importable before
# `install` and whichever package the `package` input installs.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from action import history, output_directory
from fair_forge_core.safe_text import log_line, markdown_text, without_mentions

MARKER = "<!-- fair-forge: {name} -->"
"""The hidden first line that makes a comment the sticky one of a report."""
MAX_COMMENT = 65_536
"""GitHub refuses an issue comment body longer than this (characters)."""
PER_PAGE = 100
"""Comments per page when listing (the API's maximum)."""
ARTIFACT_NAME = re.compile(r'^[^"\\/:<>|*?\r\n]{1,200}$')
"""upload-artifact refuses these characters in a name; the name is also a directory here."""
EXTRAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(,[A-Za-z0-9][A-Za-z0-9._-]*)*$")
BAD_INPUT = 2
"""The CLI's exit code for bad input, used for the action's own inputs too."""
NOT_RUN = 3
"""`finish` without an exit code: the evaluate step did not run or did not finish."""
UNJOINED = 6
"""convert's exit code when trace attempts were left unjoined: the request is written (they are in
it, unscored), so evaluate still runs, and the job keeps this code (the first non-zero)."""

EVALUATE_MEANINGS = {
    0: "every gate met",
    1: "a gate failed (readiness insufficient_evidence included)",
    2: "bad input",
    3: "the evaluation could not run",
    6: "trace attempts could not be joined to the references (kept unscored; input allow-unjoined accepts them)",
}
COMPARE_MEANINGS = {
    0: "improved, or no significant change",
    1: "regressed",
    2: "bad input, or the two sides judged differently",
    3: "an evaluation could not run",
    4: "inconclusive, under --require-conclusive",
    5: "not tested: too few shared tasks for any test to reach significance",
}

# The files `evaluate` writes into the output directory (removed first: a stale file of an
# earlier run on a self-hosted runner must not reach the comment or the artifact).
REQUEST, RESULT, REPORT, JUNIT, SUMMARY = "request.json", "result.json", "report.html", "junit.xml", "summary.md"
COMPARISON, COMPARE_JUNIT, COMPARE_SUMMARY = "comparison.json", "compare.xml", "compare.md"
FILES = (REQUEST, RESULT, REPORT, JUNIT, SUMMARY, COMPARISON, COMPARE_JUNIT, COMPARE_SUMMARY)


class InputError(Exception):
    """An input of the action is wrong; the message names it."""


def _say(line: str) -> None:
    """Print `line`, with values of the inputs or the data in it, as one log line that runs no
    workflow command (`safe_text.log_line`)."""
    print(log_line(line), flush=True)


def _command(kind: str, message: str) -> None:
    """Issue the runner command `::kind title=fair-forge::message` (an annotation): `message`
    on one line (`safe_text.log_line`) with `%` escaped as the runner unescapes it (`%25`)."""
    print(f"::{kind} title=fair-forge::{log_line(message).replace('%', '%25')}", flush=True)


def _input(name: str) -> str:
    """The action's input `name` (as action.yml passes it: `INPUT_` + upper case, `-` → `_`), stripped."""
    return os.environ.get("INPUT_" + name.upper().replace("-", "_"), "").strip()


def _set_outputs(outputs: Mapping[str, str]) -> None:
    """Append `outputs` to `$GITHUB_OUTPUT` (a value with a newline in GitHub's delimiter form)."""
    path = os.environ.get("GITHUB_OUTPUT", "")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as file:
        for name, value in outputs.items():
            if "\n" in value:
                delimiter = f"ghadelimiter_{uuid.uuid4()}"
                file.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
            else:
                file.write(f"{name}={value}\n")


def _append_summary(text: str) -> None:
    """Append `text` to `$GITHUB_STEP_SUMMARY` when it is set (the CLI appends its own Markdown)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY", "")
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(text)


def _flags(name: str) -> list[str]:
    """The input `name` split as a shell would split it (quotes kept together), never run by one."""
    try:
        return shlex.split(_input(name))
    except ValueError as exc:
        raise InputError(f"input {name}: cannot split it into flags: {exc}") from None


def _report_name() -> str:
    name = _input("report-name") or "fair-forge-report"
    if not ARTIFACT_NAME.match(name) or name.strip() in (".", ".."):
        raise InputError(f'input report-name: {name!r} is not an artifact name (no " : < > | * ? \\ / or line breaks)')
    return name


# --------------------------------------------------------------------------- install


def install() -> int:
    """pip install the `package` input, else the action's checkout with the `extras`; pip's exit code."""
    package = _input("package")
    extras = _input("extras").replace(" ", "")
    if package:
        spec = package
    else:
        if extras and not EXTRAS.match(extras):
            _command("error", f"input extras: expected names separated by commas, got {extras!r}")
            return BAD_INPUT
        checkout = os.environ.get("GITHUB_ACTION_PATH", "")
        if not checkout:
            _command("error", "GITHUB_ACTION_PATH is not set: run this step from action.yml")
            return BAD_INPUT
        spec = f"{checkout}[{extras}]" if extras else checkout
    _say(f"pip install {spec}")
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", spec]
    return subprocess.run(command, check=False).returncode


# --------------------------------------------------------------------------- evaluate


def _fair_forge(args: Sequence[str]) -> int:
    """Run the CLI of the Python running this script (the one `install` installed into); its
    exit code. Its output runs between `::stop-commands::TOKEN` and `::TOKEN::` (TOKEN random,
    so no text of the data can resume commands early): whatever the data holds, and whichever
    `fair-forge` the `package` input installed, the runner reads no command from it."""
    _say(f"$ fair-forge {shlex.join(args)}")
    token = f"fair-forge-{uuid.uuid4().hex}"
    print(f"::stop-commands::{token}", flush=True)
    try:
        return subprocess.run([sys.executable, "-m", "fair_forge_core", *args], check=False).returncode
    finally:
        print(f"::{token}::", flush=True)


def _output_directory(value: str) -> Path:
    """The output directory `value`, or `InputError` naming what is wrong with it
    (`output_directory.problem`: a symbolic link, or outside the workspace)."""
    workspace = Path(os.environ.get("GITHUB_WORKSPACE", "") or os.getcwd())
    if (problem := output_directory.problem(value, workspace)) is not None:
        raise InputError(f"input output-directory: {problem}")
    return Path(value)


def _request(directory: Path) -> tuple[str | None, int]:
    """The request file to evaluate (converted from the traces when they are the input) and
    convert's code (0, or `UNJOINED`: written all the same), or (None, the failing code)."""
    request, traces = _input("request"), _input("traces")
    if bool(request) == bool(traces):
        raise InputError("give exactly one of the inputs request and traces")
    if request:
        return request, 0
    source, references = _input("format"), _input("references")
    if not source or not references:
        missing = " and ".join(name for name, value in (("format", source), ("references", references)) if not value)
        raise InputError(f"input traces needs the input {missing}")
    args = ["convert", traces, "--from", source, "--references", references, "-o", str(directory / REQUEST)]
    if task_key := _input("task-key"):
        args += ["--task-key", task_key]
    if _input("allow-unjoined").lower() == "true":
        args.append("--allow-unjoined")
    code = _fair_forge(args)
    return (str(directory / REQUEST), code) if code in (0, UNJOINED) else (None, code)


def _status(step: str, code: int) -> str:
    meanings = COMPARE_MEANINGS if step == "compare" else EVALUATE_MEANINGS
    return f"exit {code}: fair-forge {step}: {meanings.get(code, 'unexpected exit code')}"


def evaluate() -> int:
    """convert → evaluate → compare as the inputs say; the codes and paths to `$GITHUB_OUTPUT`; 0."""
    outputs = {"exit-code": str(BAD_INPUT), "evaluate-exit-code": "", "compare-exit-code": ""}
    outputs.update({"directory": "", "result": "", "report": "", "comparison": "", "status": "", "view": ""})
    try:
        name = _report_name()
        directory = _output_directory(_input("output-directory") or f"fair-forge-results/{name}")
        gates, compare_flags = _flags("gates"), _flags("compare-flags")
        baseline = _input("baseline")
        if problem := history.problem(_input("view"), _input("view-history")):
            raise InputError(problem)
        for input_name in ("request", "traces", "references", "baseline"):
            if clash := output_directory.written_input(input_name, _input(input_name), directory, FILES):
                raise InputError(clash)
        directory.mkdir(parents=True, exist_ok=True)
        outputs.update({"directory": str(directory), "view": _input("view").lower() or "false"})
        for file in FILES:
            (directory / file).unlink(missing_ok=True)
        request, code = _request(directory)
    except (InputError, OSError) as exc:
        reason = str(exc) if isinstance(exc, InputError) else f"cannot create the output directory: {exc.strerror}"
        outputs["status"] = log_line(f"exit {BAD_INPUT}: {reason}")
        _command("error", reason)
        _append_summary(f"**Fair-Forge**: {markdown_text(outputs['status'])}\n")
        _set_outputs(outputs)
        return 0

    if request is None:
        outputs.update({"exit-code": str(code), "status": _status("convert", code)})
    else:
        converted = code
        result, report = directory / RESULT, directory / REPORT
        code = _fair_forge(
            [
                *("evaluate", request, "--out", str(result), "--html", str(report)),
                *("--junit", str(directory / JUNIT), "--markdown", str(directory / SUMMARY)),
                *gates,
            ]
        )
        outputs.update({"exit-code": str(code), "evaluate-exit-code": str(code), "status": _status("evaluate", code)})
        if converted:  # attempts left unjoined: convert's code comes first, both are said
            both = f"{_status('convert', converted)}; {outputs['status']}"
            outputs.update({"exit-code": str(converted), "status": both})
        if result.exists():
            outputs["result"] = str(result)
        if report.exists():
            outputs["report"] = str(report)
        if baseline and code in (0, 1) and result.exists():
            comparison = directory / COMPARISON
            compared = _fair_forge(
                [
                    *("compare", baseline, str(result), "--out", str(comparison)),
                    *("--junit", str(directory / COMPARE_JUNIT), "--markdown", str(directory / COMPARE_SUMMARY)),
                    *compare_flags,
                ]
            )
            outputs["compare-exit-code"] = str(compared)
            if comparison.exists():
                outputs["comparison"] = str(comparison)
            if code == 0 and not converted:
                outputs.update({"exit-code": str(compared), "status": _status("compare", compared)})
    _say(outputs["status"])
    failed_step_silent = outputs["exit-code"] != "0" and outputs["compare-exit-code"] not in ("", "0", "1")
    if not (directory / SUMMARY).exists() or (failed_step_silent and not (directory / COMPARE_SUMMARY).exists()):
        # The job fails on a step whose Markdown is missing (compare refused its inputs): say so.
        _append_summary(f"**Fair-Forge**: {markdown_text(outputs['status'])} (see the job's log)\n")
    _set_outputs(outputs)
    return 0


def view() -> int:
    """The viewer's site (`action/history.py`), its path as `site-path`; always 0. The token leaves
    the environment first: it is the API's, not `fair-forge view`'s."""
    token = os.environ.pop("INPUT_GITHUB_TOKEN", "").strip()
    site = history.view(os.environ.get("FF_RESULT", ""), _report_name(), token, _input("view-history"), _fair_forge)
    _set_outputs({"site-path": site})
    return 0


# --------------------------------------------------------------------------- comment


def _pull_request_number() -> int | None:
    """The PR of the event (`$GITHUB_EVENT_PATH`): pull_request(_target), or an issue_comment on a PR."""
    path = os.environ.get("GITHUB_EVENT_PATH", "")
    if not path:
        return None
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(event, dict):
        return None
    for key, needs in (("pull_request", None), ("issue", "pull_request")):
        item = event.get(key)
        if isinstance(item, dict) and (needs is None or needs in item) and isinstance(item.get("number"), int):
            return int(item["number"])
    return None


def comment_body(name: str, directory: Path | None, status: str, artifact_url: str, run_url: str) -> str:
    """The comment: the marker, the status line, evaluate's then compare's Markdown, the links;
    cut to fit `MAX_COMMENT` (saying so) when the summaries are longer. The name and the status
    are escaped (`safe_text.markdown_text`); the summaries were escaped cell by cell when the CLI
    wrote them, and `safe_text.without_mentions` runs over them once more (a summary written by
    another `fair-forge` version still mentions no one)."""
    label = markdown_text(name)
    parts = [
        MARKER.format(name=name),
        f"**Fair-Forge** {label}: {markdown_text(status or 'the evaluation did not run')}",
        "",
    ]
    for file in (SUMMARY, COMPARE_SUMMARY):
        path = directory / file if directory else None
        if path is not None and path.is_file():
            parts += [without_mentions(path.read_text(encoding="utf-8").strip()), ""]
    links = []
    if artifact_url:
        links.append(f"[HTML report and results (artifact {label})]({artifact_url})")
    if run_url:
        links.append(f"[workflow run]({run_url})")
    if links:
        parts.append(" · ".join(links))
    body = "\n".join(parts).strip() + "\n"
    if len(body) > MAX_COMMENT:
        note = "\n\n… cut to fit a comment: the whole summary is in the job's step summary.\n"
        body = body[: MAX_COMMENT - len(note)] + note
    return body


class GitHub:
    """The few REST calls of the sticky comment, against `api` (`$GITHUB_API_URL`) with `token`."""

    def __init__(self, api: str, repository: str, token: str) -> None:
        self.api = api.rstrip("/")
        self.origin = urllib.parse.urlsplit(self.api)[:2]
        self.repository = repository
        self.token = token

    def _call(self, method: str, url: str, payload: Mapping[str, Any] | None = None) -> tuple[Any, str]:
        """(the JSON reply, its Link header). The token is an unredirected header: it never
        follows a redirect to another host."""
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_unredirected_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        request.add_header("User-Agent", "fair-forge-action")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null"), response.headers.get("Link", "")

    def find(self, number: int, marker: str) -> list[int]:
        """The ids of the comments of PR `number` whose body starts with `marker`, oldest first,
        reading every page."""
        found = []
        url: str | None = f"{self.api}/repos/{self.repository}/issues/{number}/comments?per_page={PER_PAGE}"
        while url:
            comments, link = self._call("GET", url)
            for comment in comments if isinstance(comments, list) else []:
                if isinstance(comment, dict) and str(comment.get("body", "")).startswith(marker):
                    found.append(int(comment["id"]))
            url = history.next_page(link, self.origin)
        return found

    def upsert(self, number: int, marker: str, body: str) -> str:
        """Update the sticky comment, or create it; what was done. A comment with the marker that
        the token may not edit (someone else wrote it: 403, or it is gone: 404) is passed over, so
        that a copied marker cannot stop the sticky comment."""
        for existing in self.find(number, marker):
            try:
                self._call("PATCH", f"{self.api}/repos/{self.repository}/issues/comments/{existing}", {"body": body})
            except urllib.error.HTTPError as exc:
                if exc.code not in (403, 404):
                    raise
                continue
            return f"updated comment {existing} on pull request #{number}"
        self._call("POST", f"{self.api}/repos/{self.repository}/issues/{number}/comments", {"body": body})
        return f"created the comment on pull request #{number}"


def _api_error(exc: urllib.error.HTTPError) -> str:
    """`HTTP 403: <GitHub's message>`, the message cut short (never the request's headers)."""
    text = history.api_reason(exc)
    if exc.code in (401, 403, 404):
        text += " (the token needs `pull-requests: write`; a fork's pull request gets a read-only token)"
    return text


def comment() -> int:
    """Post or update the sticky comment when asked and possible; always 0."""
    wish = _input("comment").lower() or "true"
    if wish != "true":
        if wish != "false":
            _command("warning", f"input comment: expected true or false, got {wish!r}: no comment")
        else:
            print("comment: false: no pull-request comment")
        return 0
    token = _input("github-token")
    if not token:
        print("no github-token: no pull-request comment")
        return 0
    number = _pull_request_number()
    repository = os.environ.get("GITHUB_REPOSITORY", "")
    if number is None or not repository:
        event = os.environ.get("GITHUB_EVENT_NAME", "") or "unknown"
        _say(f"not a pull request (event {event}): no comment")
        return 0
    try:
        name = _report_name()
    except InputError as exc:
        _command("warning", f"no comment: {exc}")
        return 0
    directory = os.environ.get("FF_DIRECTORY", "")
    server, run_id = os.environ.get("GITHUB_SERVER_URL", "https://github.com"), os.environ.get("GITHUB_RUN_ID", "")
    run_url = f"{server}/{repository}/actions/runs/{run_id}" if run_id else ""
    body = comment_body(
        name,
        Path(directory) if directory else None,
        os.environ.get("FF_STATUS", ""),
        os.environ.get("FF_ARTIFACT_URL", ""),
        run_url,
    )
    github = GitHub(os.environ.get("GITHUB_API_URL", "") or "https://api.github.com", repository, token)
    try:
        _say(github.upsert(number, MARKER.format(name=name), body))
    except urllib.error.HTTPError as exc:
        _command("warning", f"could not post the pull-request comment: {_api_error(exc)}")
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException, KeyError, TypeError) as exc:
        # Whatever the API answered (or failed to), the comment never decides the job's result.
        reason = getattr(exc, "reason", None) or exc.__class__.__name__
        _command("warning", f"could not reach the GitHub API for the comment: {reason}")
    return 0


# --------------------------------------------------------------------------- finish


def finish() -> int:
    """The CLI's exit code that the evaluate step recorded (3 when it recorded none)."""
    text, status = os.environ.get("FF_EXIT_CODE", "").strip(), os.environ.get("FF_STATUS", "")
    if not text.isdigit():
        _command("error", "the evaluate step did not run or did not finish: no exit code")
        return NOT_RUN
    code = int(text)
    if code:
        _command("error", status or f"exit {code}")
    else:
        _say(status or "exit 0")
    return code


STEPS = {"install": install, "evaluate": evaluate, "view": view, "comment": comment, "finish": finish}


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1 or argv[0] not in STEPS:
        print(f"usage: fair_forge_action.py {{{','.join(STEPS)}}}", file=sys.stderr)
        return BAD_INPUT
    return STEPS[argv[0]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
