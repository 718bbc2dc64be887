"""`fair_forge_core.run_info`: labels parsed and refused, the CI's labels read from an allowlist
(never a secret), the tasks' hash (computed here again from its rule), the run put together."""

from __future__ import annotations

import argparse
import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from fair_forge_core.run_info import (
    CI_VARIABLES,
    ci_labels,
    parse_label,
    run_info,
    tasks_hash,
    utc_timestamp,
    without_userinfo,
)
from fair_forge_core.schemas import Dataset, RunInfo

GITHUB_PR = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
    "GITHUB_REF": "refs/pull/17/merge",
    "GITHUB_REF_NAME": "17/merge",
    "GITHUB_HEAD_REF": "feature/labels",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "acme/agent",
    "GITHUB_RUN_ID": "123456",
    "GITHUB_RUN_ATTEMPT": "2",
}
GITLAB_MR = {
    "GITLAB_CI": "true",
    "CI_COMMIT_SHA": "fedcba9876543210fedcba9876543210fedcba98",
    "CI_COMMIT_REF_NAME": "feature/labels",
    "CI_MERGE_REQUEST_IID": "8",
    "CI_PIPELINE_URL": "https://gitlab.example.com/acme/agent/-/pipelines/555",
    "CI_JOB_URL": "https://gitlab.example.com/acme/agent/-/jobs/999",
    "CI_PROJECT_PATH": "acme/agent",
}
SECRETS = {
    "GITHUB_TOKEN": "ghs_0123456789abcdefghijklmnopqrstuvwxyz",
    "OPENAI_API_KEY": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "LLM_API_KEY": "gsk_abcdefghijklmnopqrstuvwxyz0123456789",
    "CI_JOB_TOKEN": "glcbt-64_abcdefghijklmnop",
    "ACTIONS_RUNTIME_TOKEN": "eyJhbGciOiJSUzI1NiJ9.payload.signature",
}


# --- --label ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("team=search", ("team", "search")),
        ("model.version=gpt-4o=2024", ("model.version", "gpt-4o=2024")),  # split at the first =
        ("empty=", ("empty", "")),
        ("k" * 64 + "=v", ("k" * 64, "v")),
        ("note=" + "x" * 256, ("note", "x" * 256)),
        ("unicode=café ☕", ("unicode", "café ☕")),
    ],
)
def test_a_label_is_key_equals_value(text: str, expected: tuple[str, str]) -> None:
    assert parse_label(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("no-equals", "KEY=VALUE"),
        ("=value", "the key ''"),
        ("k" * 65 + "=v", "1 to 64"),
        ("white space=v", "letters, digits"),
        ("slash/key=v", "letters, digits"),
        ("note=" + "x" * 257, "above 256"),
        ("note=two\nlines", "control character"),
        ("note=tab\there", "control character"),
        ("key=sk-abcdefghijklmnop", "looks like a secret"),
        ("auth=token=abcdef", "looks like a secret"),
    ],
)
def test_a_bad_label_is_refused_with_a_reason(text: str, says: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse_label(text)
    assert says in str(refused.value)


def test_a_refused_label_does_not_quote_its_value() -> None:
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        parse_label("key=sk-abcdefghijklmnop")
    assert "sk-abcdefghijklmnop" not in str(refused.value)


# --- the CI's labels -------------------------------------------------------------------------


def test_outside_ci_there_are_no_labels() -> None:
    assert ci_labels({}) == (None, {})
    assert ci_labels({"GITHUB_ACTIONS": "false", "GITLAB_CI": "", "GITHUB_SHA": "abc"}) == (None, {})


def test_github_pull_request() -> None:
    assert ci_labels(GITHUB_PR) == (
        "github",
        {
            "commit": GITHUB_PR["GITHUB_SHA"],
            "branch": "feature/labels",
            "pr": "17",
            "run_url": "https://github.com/acme/agent/actions/runs/123456/attempts/2",
            "repository": "acme/agent",
        },
    )


def test_github_push_takes_the_ref_name_and_has_no_pr() -> None:
    push = {**GITHUB_PR, "GITHUB_REF": "refs/heads/main", "GITHUB_REF_NAME": "main", "GITHUB_HEAD_REF": ""}
    del push["GITHUB_RUN_ATTEMPT"]
    ci, labels = ci_labels(push)
    assert ci == "github"
    assert labels["branch"] == "main"
    assert "pr" not in labels
    assert labels["run_url"] == "https://github.com/acme/agent/actions/runs/123456"


def test_github_without_the_run_url_parts_has_no_run_url() -> None:
    _, labels = ci_labels({"GITHUB_ACTIONS": "true", "GITHUB_SHA": "abc"})
    assert labels == {"commit": "abc"}


def test_gitlab_merge_request() -> None:
    assert ci_labels(GITLAB_MR) == (
        "gitlab",
        {
            "commit": GITLAB_MR["CI_COMMIT_SHA"],
            "branch": "feature/labels",
            "mr": "8",
            "run_url": "https://gitlab.example.com/acme/agent/-/pipelines/555",
            "repository": "acme/agent",
        },
    )


def test_gitlab_falls_back_on_the_job_url() -> None:
    environ = {k: v for k, v in GITLAB_MR.items() if k != "CI_PIPELINE_URL"}
    assert ci_labels(environ)[1]["run_url"] == GITLAB_MR["CI_JOB_URL"]


@pytest.mark.parametrize("environ", [GITHUB_PR, GITLAB_MR])
def test_no_secret_of_the_environment_reaches_the_labels(environ: dict[str, str]) -> None:
    _, labels = ci_labels({**environ, **SECRETS})
    text = json.dumps(labels)
    for secret in SECRETS.values():
        assert secret not in text


def test_only_the_allowlist_is_read() -> None:
    class Spy(dict[str, str]):
        def __init__(self, values: dict[str, str]) -> None:
            super().__init__(values)
            self.read: set[str] = set()

        def __getitem__(self, name: str) -> str:
            self.read.add(name)
            return super().__getitem__(name)

        def get(self, name: str, default: Any = None) -> Any:
            self.read.add(name)
            return super().get(name, default)

    spy = Spy({**GITHUB_PR, **GITLAB_MR, **SECRETS})
    ci_labels(spy)
    assert spy.read <= set(CI_VARIABLES)


@pytest.mark.parametrize(
    "token",
    [
        "sk-abcdefghijklmnopqrst",
        "ghp_" + "a1B2" * 9,
        "github_pat_" + "x" * 30,
        "glpat-" + "y" * 20,
        "xoxb-1234567890-abcdefghij",
        "AIza" + "z" * 35,
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
    ],
)
def test_a_token_shaped_value_is_never_a_label(token: str) -> None:
    _, labels = ci_labels({**GITHUB_PR, "GITHUB_HEAD_REF": f"fix/{token}"})
    assert "branch" not in labels and token not in json.dumps(labels)  # left out whole, not masked
    with pytest.raises(argparse.ArgumentTypeError, match="looks like a secret"):
        parse_label(f"note=see {token}")


def test_a_url_loses_its_userinfo() -> None:
    _, github = ci_labels({**GITHUB_PR, "GITHUB_SERVER_URL": "https://bot:hunter22@ghe.example.com"})
    assert github["run_url"] == "https://ghe.example.com/acme/agent/actions/runs/123456/attempts/2"
    _, gitlab = ci_labels({**GITLAB_MR, "CI_PIPELINE_URL": "https://gitlab-ci-token:s3cret@gitlab.example.com/p/1"})
    assert gitlab["run_url"] == "https://gitlab.example.com/p/1"
    assert without_userinfo("not a url") == "not a url"
    assert without_userinfo("https://example.com:8443/x?q=1") == "https://example.com:8443/x?q=1"


def test_a_ci_value_out_of_bounds_is_left_out() -> None:
    _, labels = ci_labels({**GITHUB_PR, "GITHUB_HEAD_REF": "b" * 257, "GITHUB_SHA": "abc\ndef"})
    assert "branch" not in labels
    assert "commit" not in labels


# --- the tasks' hash -------------------------------------------------------------------------


def conversation(session: str, task: str | None, answer: str, truth: str = "4") -> Dataset:
    return Dataset.model_validate(
        {
            "session_id": session,
            "assistant_id": "agent",
            "task_id": task,
            "conversation": [
                {"qa_id": "q1", "query": "2+2?", "assistant": answer, "ground_truth_assistant": truth},
                {"qa_id": "q2", "query": "and 3+3?", "assistant": answer, "ground_truth_assistant": "6"},
            ],
        }
    )


def expected_hash(entries: list[tuple[str, list[tuple[str, str]]]]) -> str:
    """The rule, written out: distinct [task, [[query, ground truth], ...]], sorted, compact JSON."""
    distinct = sorted({(task, tuple(turns)) for task, turns in entries})
    text = json.dumps([[task, [list(t) for t in turns]] for task, turns in distinct], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


TURNS = [("2+2?", "4"), ("and 3+3?", "6")]


def test_the_tasks_hash_follows_its_rule() -> None:
    suite = [conversation("s1", "math", "4"), conversation("s2", "math", "5"), conversation("s3", None, "4")]
    assert tasks_hash(suite) == expected_hash([("math", TURNS), ("s3", TURNS)])


@pytest.mark.parametrize(
    "change",
    [
        {"ground_truth_agentic": {"expected_tools": [{"tool_name": "calculator", "parameters": {"a": 2}}]}},
        {"goal": "the user learns the sum"},
        {"expected_state": {"balance": 4}},
    ],
)
def test_the_tasks_hash_follows_what_the_task_expects(change: dict[str, Any]) -> None:
    plain = conversation("s1", "math", "4")
    turn_change = "ground_truth_agentic" in change
    raw = plain.model_dump(mode="json", exclude_none=True)
    if turn_change:
        raw["conversation"][0].update(change)
    else:
        raw.update(change, final_state={"balance": 4} if "expected_state" in change else None)
        raw = {k: v for k, v in raw.items() if v is not None}
    changed = Dataset.model_validate(raw)
    assert tasks_hash([changed]) != tasks_hash([plain])
    assert tasks_hash([changed, changed]) == tasks_hash([changed])


def test_the_tasks_hash_ignores_the_answers_and_the_attempts_count() -> None:
    one = [conversation("a1", "math", "4"), conversation("a2", "math", "4")]
    other = [conversation("b1", "math", "wrong"), conversation("b2", "math", "5"), conversation("b3", "math", "4")]
    assert tasks_hash(one) == tasks_hash(other)
    assert tasks_hash(list(reversed(one))) == tasks_hash(one)


def test_the_tasks_hash_changes_with_a_ground_truth() -> None:
    before = [conversation("s1", "math", "4")]
    after = [conversation("s1", "math", "4", truth="four")]
    assert tasks_hash(before) != tasks_hash(after)
    assert tasks_hash(after) == expected_hash([("math", [("2+2?", "four"), ("and 3+3?", "6")])])


def test_an_empty_suite_hashes_the_empty_list() -> None:
    assert tasks_hash([]) == hashlib.sha256(b"[]").hexdigest()


# --- the run -----------------------------------------------------------------------------------


def test_utc_timestamp() -> None:
    assert utc_timestamp(datetime(2026, 12, 4, 18, 50, 0, 123456, tzinfo=UTC)) == "2026-12-04T18:50:00.123Z"
    assert (
        utc_timestamp(datetime(2026, 12, 4, 19, 50, tzinfo=timezone(timedelta(hours=1)))) == "2026-12-04T18:50:00.000Z"
    )
    assert utc_timestamp(datetime(2026, 12, 4, 18, 50)) == "2026-12-04T18:50:00.000Z"


def test_explicit_labels_override_the_ci_ones() -> None:
    run = run_info(
        [conversation("s1", "math", "4")],
        [("commit", "mine"), ("team", "a"), ("team", "b")],
        GITHUB_PR,
        datetime(2026, 12, 4, 18, 50, 0, 123456, tzinfo=UTC),
    )
    assert run.ci == "github"
    assert run.labels["commit"] == "mine"
    assert run.labels["team"] == "b"  # the last of one key
    assert run.labels["pr"] == "17"
    assert run.started_at == "2026-12-04T18:50:00.123Z"  # to the millisecond
    assert run.tasks_hash == expected_hash([("math", TURNS)])


def test_run_info_round_trips_and_refuses_an_unknown_key() -> None:
    for malformed in ("2026-12-04 18:50:00", "2026-12-04T18:50:00+01:00", "yesterday"):
        with pytest.raises(ValueError):
            RunInfo(started_at=malformed, tasks_hash="0" * 64, labels={}, ci=None)
    run = RunInfo(started_at="2026-12-04T18:50:00Z", tasks_hash="0" * 64, labels={}, ci=None)
    dumped = RunInfo.model_validate(run.model_dump()).model_dump()
    assert dumped == {"started_at": "2026-12-04T18:50:00Z", "tasks_hash": "0" * 64, "labels": {}, "ci": None}
    with pytest.raises(ValueError, match="extra"):
        RunInfo.model_validate({**dumped, "token": "x"})
