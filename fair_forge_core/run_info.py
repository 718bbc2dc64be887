"""The run a result came from (`schemas.RunInfo`, the result's `run`): when it started, which tasks it
evaluated (`tasks_hash`), and its labels, set by `fair-forge evaluate` and `fair-forge run --evaluate`
(never by the service: `POST /run` responses do not carry it).

Labels come from `--label KEY=VALUE` (`parse_label`: KEY 1 to 64 characters of letters, digits,
`_`, `.` and `-`; VALUE at most 256 characters, no control character, nothing shaped like a key)
and, in CI, from the CI's environment (`ci_labels`), which is read through an allowlist of
variables and nothing else, so no secret (`GITHUB_TOKEN`, `LLM_API_KEY`, ...) is ever read:

- GitHub Actions (`GITHUB_ACTIONS=true`): `commit` = `GITHUB_SHA`; `branch` = `GITHUB_HEAD_REF`
  (set on pull requests) or else `GITHUB_REF_NAME`; `pr` = N of `GITHUB_REF` `refs/pull/N/merge`
  (or `/head`); `run_url` = `GITHUB_SERVER_URL/GITHUB_REPOSITORY/actions/runs/GITHUB_RUN_ID`, with
  `/attempts/GITHUB_RUN_ATTEMPT` when that is set (a re-run is a run of its own); `repository` =
  `GITHUB_REPOSITORY`.
- GitLab CI (`GITLAB_CI=true`): `commit` = `CI_COMMIT_SHA`; `branch` = `CI_COMMIT_REF_NAME`; `mr` =
  `CI_MERGE_REQUEST_IID`; `run_url` = `CI_PIPELINE_URL` or else `CI_JOB_URL`; `repository` =
  `CI_PROJECT_PATH`.

A CI value that holds anything shaped like a key or a token (`looks_secret`: what `redact.redact`
masks, and GitHub's, GitLab's, Slack's, Google's and JSON Web Tokens) is left out whole, a URL loses
its userinfo (`user:password@`), and a value that is empty, longer than 256 characters or holds a
control character is left out. A `--label` overrides a CI label of its key; of two
`--label`s of one key, the last wins.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from fair_forge_core.redact import redact

if TYPE_CHECKING:  # the parser imports `parse_label`: no pydantic for `--help`
    from fair_forge_core.schemas import CiSystem, Dataset, RunInfo

MAX_LABEL_KEY = 64
MAX_LABEL_VALUE = 256
LABEL_KEY = re.compile(rf"[A-Za-z0-9_.-]{{1,{MAX_LABEL_KEY}}}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_PULL_REF = re.compile(r"refs/pull/([0-9]+)/(?:merge|head)")
SECRET_SHAPES = re.compile(
    r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{30,}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
)
"""Tokens of the CI systems and chat services a label could carry, beyond what `redact` masks:
GitHub's (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), GitLab's (`glpat-`), Slack's
(`xoxb-` …), Google's API keys (`AIza`) and JSON Web Tokens (`eyJ….eyJ….`)."""


def looks_secret(value: str) -> bool:
    """Whether `value` holds something shaped like a key or a token: what `redact` masks, or a
    `SECRET_SHAPES` token."""
    return redact(value) != value or SECRET_SHAPES.search(value) is not None


def label_value_problem(value: str) -> str | None:
    """Why `value` cannot be a label's value (too long, a control character), or None when it can."""
    if len(value) > MAX_LABEL_VALUE:
        return f"the value is {len(value)} characters long, above {MAX_LABEL_VALUE}"
    if _CONTROL.search(value):
        return "the value holds a control character (a newline, a tab, ...)"
    return None


def parse_label(text: str) -> tuple[str, str]:
    """`--label`'s type: `KEY=VALUE` as (KEY, VALUE), split at the first `=` (VALUE may hold more,
    and may be empty). KEY: 1 to 64 characters of letters, digits, `_`, `.` and `-`; VALUE: at most
    256 characters, no control character, and nothing shaped like a key or a token (`looks_secret`:
    a label is written into the result, where a key would leak). `argparse.ArgumentTypeError` otherwise, which names the
    flag (exit 2); the message never quotes the value."""
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError("expected KEY=VALUE (the = is missing)")
    if not LABEL_KEY.fullmatch(key):
        shown = redact(key[:MAX_LABEL_KEY]) + ("…" if len(key) > MAX_LABEL_KEY else "")
        raise argparse.ArgumentTypeError(
            f"the key {shown!r} must be 1 to {MAX_LABEL_KEY} letters, digits, '_', '.' or '-'"
        )
    problem = label_value_problem(value)
    if problem is None and looks_secret(value):
        problem = "the value looks like a secret (a key or a token), and labels are written into the result"
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{key}: {problem}")
    return key, value


def without_userinfo(url: str) -> str:
    """`url` without the `user:password@` of its authority (kept as it is when it has none, or is
    not a URL)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _clean(value: str | None, *, url: bool = False) -> str | None:
    """A CI variable's value as a label: a URL without userinfo; None when it is absent, empty, out
    of a label value's bounds (`label_value_problem`), or holds anything shaped like a key or a
    token (`looks_secret`: left out whole, not masked)."""
    if not value:
        return None
    value = without_userinfo(value) if url else value
    return None if label_value_problem(value) is not None or looks_secret(value) else value


def _github_run_url(environ: Mapping[str, str]) -> str | None:
    """The run's page: `GITHUB_SERVER_URL/GITHUB_REPOSITORY/actions/runs/GITHUB_RUN_ID`, and
    `/attempts/GITHUB_RUN_ATTEMPT` when set; None without any of the first three."""
    server, repository, run_id = (
        environ.get(name) for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    )
    if not (server and repository and run_id):
        return None
    attempt = environ.get("GITHUB_RUN_ATTEMPT")
    return f"{server.rstrip('/')}/{repository}/actions/runs/{run_id}" + (f"/attempts/{attempt}" if attempt else "")


def _github(environ: Mapping[str, str]) -> dict[str, str | None]:
    pull = _PULL_REF.fullmatch(environ.get("GITHUB_REF", ""))
    return {
        "commit": _clean(environ.get("GITHUB_SHA")),
        "branch": _clean(environ.get("GITHUB_HEAD_REF") or environ.get("GITHUB_REF_NAME")),
        "pr": pull.group(1) if pull else None,
        "run_url": _clean(_github_run_url(environ), url=True),
        "repository": _clean(environ.get("GITHUB_REPOSITORY")),
    }


def _gitlab(environ: Mapping[str, str]) -> dict[str, str | None]:
    return {
        "commit": _clean(environ.get("CI_COMMIT_SHA")),
        "branch": _clean(environ.get("CI_COMMIT_REF_NAME")),
        "mr": _clean(environ.get("CI_MERGE_REQUEST_IID")),
        "run_url": _clean(environ.get("CI_PIPELINE_URL") or environ.get("CI_JOB_URL"), url=True),
        "repository": _clean(environ.get("CI_PROJECT_PATH")),
    }


CI_VARIABLES = (
    "GITHUB_ACTIONS",
    "GITHUB_SHA",
    "GITHUB_HEAD_REF",
    "GITHUB_REF_NAME",
    "GITHUB_REF",
    "GITHUB_SERVER_URL",
    "GITHUB_REPOSITORY",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_ATTEMPT",
    "GITLAB_CI",
    "CI_COMMIT_SHA",
    "CI_COMMIT_REF_NAME",
    "CI_MERGE_REQUEST_IID",
    "CI_PIPELINE_URL",
    "CI_JOB_URL",
    "CI_PROJECT_PATH",
)
"""Every environment variable `ci_labels` reads: the allowlist (module docstring)."""


def ci_labels(environ: Mapping[str, str]) -> tuple[CiSystem | None, dict[str, str]]:
    """The CI system `environ` is in and the labels it gives (module docstring), reading only
    `CI_VARIABLES`: ("github", ...) when `GITHUB_ACTIONS` is `true`, else ("gitlab", ...) when
    `GITLAB_CI` is `true`, else (None, {}). A label whose variables are absent, or whose value is
    left out (empty, out of bounds), is not in the dict."""
    allowed = {name: environ[name] for name in CI_VARIABLES if name in environ}
    ci: CiSystem
    if allowed.get("GITHUB_ACTIONS") == "true":
        ci, labels = "github", _github(allowed)
    elif allowed.get("GITLAB_CI") == "true":
        ci, labels = "gitlab", _gitlab(allowed)
    else:
        return None, {}
    return ci, {key: value for key, value in labels.items() if value is not None}


def tasks_hash(datasets: Sequence[Dataset]) -> str:
    """The sha256 (hex) of the suite's tasks, not of the answers: for each conversation, the entry
    `[task, [[query, ground_truth_assistant], ...]]` (its task: its `task_id`, or its `session_id`
    when it has none; its turns in order), where a turn with `ground_truth_agentic` (the tools it
    expects, its policy) has it as a third item, and a conversation with a `goal`, `goal_rubric` or
    `expected_state` has them as a third item `{name: value}` (so a suite without them hashes as
    it always has); the distinct entries, sorted, as JSON (UTF-8, no ASCII escaping, separators
    `,` and `:`, keys sorted). Attempts of one task with the same turns are one entry, so the hash
    depends neither on the answers nor on how many attempts ran; a task added, removed or renamed,
    or a query, ground truth, expected tool, goal or expected state changed, changes it. An empty
    suite hashes `[]`."""
    entries = {
        json.dumps(_task_entry(dataset), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        for dataset in datasets
    }
    text = "[" + ",".join(sorted(entries)) + "]"
    return hashlib.sha256(text.encode()).hexdigest()


def _task_entry(dataset: Dataset) -> list[object]:
    """One conversation's entry of `tasks_hash` (its rule)."""
    turns: list[object] = []
    for turn in dataset.conversation:
        expected = turn.ground_truth_agentic
        item: list[object] = [turn.query, turn.ground_truth_assistant]
        if expected is not None:
            item.append(expected.model_dump(mode="json", exclude_none=True))
        turns.append(item)
    extras = {
        name: getattr(dataset, name)
        for name in ("goal", "goal_rubric", "expected_state")
        if getattr(dataset, name, None) is not None
    }
    return [dataset.task_id or dataset.session_id, turns, *([extras] if extras else [])]


def utc_timestamp(moment: datetime) -> str:
    """`moment` as ISO 8601 in UTC to the millisecond, `Z` for the zone ("2026-12-04T18:50:00.000Z":
    runs started in one second still sort in order); a naive `moment` is taken to be UTC already."""
    aware = (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).astimezone(UTC)
    return aware.strftime("%Y-%m-%dT%H:%M:%S.") + f"{aware.microsecond // 1000:03d}Z"


def run_info(
    datasets: Sequence[Dataset], labels: Iterable[tuple[str, str]], environ: Mapping[str, str], now: datetime
) -> RunInfo:
    """The run of an evaluation of `datasets` started at `now`: its `tasks_hash`, the CI system
    and labels of `environ` (`ci_labels`) overridden by the explicit `labels` (`parse_label`'s, in
    command-line order: the last of one key wins)."""
    from fair_forge_core.schemas import RunInfo

    ci, found = ci_labels(environ)
    return RunInfo(
        started_at=utc_timestamp(now),
        tasks_hash=tasks_hash(datasets),
        labels={**found, **dict(labels)},
        ci=ci,
    )
