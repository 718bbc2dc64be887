"""`fair-forge pull langfuse|phoenix|langsmith`, run as a user runs it (the `fair-forge` script, in
a subprocess) against the fake stores of `fair_forge_testing.fake_stores` on 127.0.0.1, whose
routes, checks and answers come from each store's vendored API excerpt: every test also asserts
the fake recorded no request the spec does not allow."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from fair_forge_testing.fake_stores import FakeStore, langfuse_observations, load_spec, phoenix_spans, schema_errors

ROOT = Path(__file__).resolve().parents[2]
FAIR_FORGE = Path(sys.executable).parent / "fair-forge"
LANGSMITH_RUNS = ROOT / "examples" / "traces" / "langsmith_runs.json"
LANGSMITH_REFERENCES = ROOT / "examples" / "traces" / "langsmith_runs.references.jsonl"
PROJECT_ID = "0195a001-4e2a-7b1c-8d3e-0000000000ff"
TIMEOUT = 60  # seconds: a pull here takes about 1 s (3 with a retry); 20 times that, on a shared machine

CREDENTIALS: dict[str, dict[str, str]] = {
    "langfuse": {"LANGFUSE_PUBLIC_KEY": "pk-lf-test-4a3b2c1d", "LANGFUSE_SECRET_KEY": "sk-lf-test-9f8e7d6c5b4a"},
    "phoenix": {"PHOENIX_API_KEY": "px-test-key-1a2b3c4d5e6f"},
    "langsmith": {"LANGSMITH_API_KEY": "lsv2_pt_test_0f1e2d3c4b5a"},
}
ENDPOINT = {"langfuse": "LANGFUSE_HOST", "phoenix": "PHOENIX_BASE_URL", "langsmith": "LANGSMITH_ENDPOINT"}
STORE_FLAGS = {"langfuse": [], "phoenix": ["--project", "default"], "langsmith": ["--project", PROJECT_ID]}
STORES = tuple(CREDENTIALS)
TASK_KEY = ("--task-key", "metadata.task")


def items(store: str, count: int = 7) -> list[dict[str, Any]]:
    if store == "langfuse":
        return langfuse_observations(count)
    if store == "phoenix":
        return phoenix_spans(count)
    runs: list[dict[str, Any]] = json.loads(LANGSMITH_RUNS.read_text(encoding="utf-8"))
    return runs[:count]


def secrets(store: str) -> list[str]:
    """The values no output may carry: the keys, and Langfuse's basic-auth token."""
    values = [v for k, v in CREDENTIALS[store].items() if k.endswith("SECRET_KEY") or k.endswith("API_KEY")]
    if store == "langfuse":
        pair = f"{CREDENTIALS[store]['LANGFUSE_PUBLIC_KEY']}:{CREDENTIALS[store]['LANGFUSE_SECRET_KEY']}"
        values.append(base64.b64encode(pair.encode()).decode())
    return values


def environment(store: str, fake: FakeStore | None, **extra: str) -> dict[str, str]:
    """This process's environment without any store's variables, with `store`'s credentials and the
    fake's URL; no proxy for 127.0.0.1 (a proxy variable in the environment must not route it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "PHOENIX_", "LANGSMITH_"))}
    env |= CREDENTIALS[store] | {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    if fake is not None:
        env[ENDPOINT[store]] = fake.base_url
    return env | extra


def pull(store: str, env: Mapping[str, str], *flags: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FAIR_FORGE), "pull", store, *map(str, flags)],
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def page_schema_errors(store: str, page: Any) -> list[str]:
    """Where `page` breaks the 200 answer's schema of `store`'s spec."""
    spec = load_spec(store)
    (operation,) = [op for item in spec["paths"].values() for op in item.values()]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    return schema_errors(spec, schema, page, "page")


def written_items(store: str, written: Any) -> list[Any]:
    """The items of what `pull` wrote: the pages' data (langfuse, phoenix) or the runs (langsmith)."""
    if store == "langsmith":
        assert isinstance(written, list)
        return written
    assert isinstance(written, list)
    assert all(page_schema_errors(store, page) == [] for page in written)
    return [item for page in written for item in page["data"]]


# --------------------------------------------------------------------------- pages, retries, bounds


@pytest.mark.parametrize("store", STORES)
def test_reads_a_window_of_several_pages_after_a_429(store: str, tmp_path: Path) -> None:
    """Seven items, three a page: three pages, the first request answered 429 with Retry-After 1;
    the retry comes at least 1 s later, and the file holds every item in order, in the shape
    `convert` reads (the spec's page schema for langfuse and phoenix, the runs for langsmith)."""
    out = tmp_path / "pulled.json"
    served = items(store)
    with FakeStore(store, served, credentials=CREDENTIALS[store], throttle={0: 1}) as fake:
        window = ["--since", "2026-12-02T20:00:00Z", "--until", "2026-12-03T06:00:00+01:00", "--page-size", "3"]
        done = pull(store, environment(store, fake), *STORE_FLAGS[store], *window, "-o", out)
    assert done.returncode == 0, done.stderr
    assert fake.violations == []
    assert [r.status for r in fake.requests] == [429, 200, 200, 200]
    assert fake.requests[1].at - fake.requests[0].at >= 1.0
    assert "HTTP 429; retry 1 of 5 in 1 s" in done.stderr
    assert f"{store}: 3 page(s), 7 item(s) written" in done.stderr
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written_items(store, written) == served
    if store != "langsmith":
        assert len(written) == 3
    first = fake.requests[1]
    sent = first.query if store != "langsmith" else json.loads(first.body)
    expected_window = {
        "langfuse": {"fromStartTime": ["2026-12-02T20:00:00Z"], "toStartTime": ["2026-12-03T05:00:00Z"]},
        "phoenix": {"start_time": ["2026-12-02T20:00:00Z"], "end_time": ["2026-12-03T05:00:00Z"]},
        "langsmith": {"start_time": "2026-12-02T20:00:00Z", "filter": 'lt(start_time, "2026-12-03T05:00:00Z")'},
    }[store]
    assert {key: sent[key] for key in expected_window} == expected_window


@pytest.mark.parametrize("store", STORES)
def test_stops_at_max_pages_with_what_it_fetched(store: str, tmp_path: Path) -> None:
    out = tmp_path / "pulled.json"
    served = items(store)
    with FakeStore(store, served, credentials=CREDENTIALS[store]) as fake:
        done = pull(
            store, environment(store, fake), *STORE_FLAGS[store], "--page-size", "3", "--max-pages", "2", "-o", out
        )
    assert done.returncode == 7, done.stderr
    assert "stopped at the bound --max-pages 2: the store has more pages" in done.stderr
    assert len(fake.requests) == 2
    assert fake.violations == []
    assert written_items(store, json.loads(out.read_text(encoding="utf-8"))) == served[:6]


def test_a_pull_whose_last_page_is_the_max_pages_th_is_complete(tmp_path: Path) -> None:
    with FakeStore("phoenix", items("phoenix", 6), credentials=CREDENTIALS["phoenix"]) as fake:
        done = pull("phoenix", environment("phoenix", fake), "--project", "p", "--page-size", "3", "--max-pages", "2")
    assert done.returncode == 0, done.stderr
    assert "stopped" not in done.stderr
    assert len(json.loads(done.stdout)) == 2


def test_stops_at_max_bytes_without_keeping_the_page_that_passes_it(tmp_path: Path) -> None:
    with FakeStore("langfuse", items("langfuse"), credentials=CREDENTIALS["langfuse"]) as fake:
        env = environment("langfuse", fake)
        first = pull("langfuse", env, "--page-size", "3", "--max-pages", "1")
        page_bytes = len(json.dumps(json.loads(first.stdout)[0]))
        # Room for the first page (the fake's bytes are json.dumps's) and less than a second one.
        done = pull("langfuse", env, "--page-size", "3", "--max-bytes", str(page_bytes + 100))
    assert done.returncode == 7, done.stderr
    assert f"stopped at the bound --max-bytes {page_bytes + 100}: the next page would pass it" in done.stderr
    assert len(json.loads(done.stdout)) == 1
    assert fake.violations == []


def test_a_503_is_retried_after_its_retry_after_too() -> None:
    served = items("langfuse")
    with FakeStore(
        "langfuse", served, credentials=CREDENTIALS["langfuse"], throttle={1: 1}, throttle_status=503
    ) as fake:
        done = pull("langfuse", environment("langfuse", fake), "--page-size", "4")
    assert done.returncode == 0, done.stderr
    assert [r.status for r in fake.requests] == [200, 503, 200]
    assert fake.requests[2].at - fake.requests[1].at >= 1.0
    assert fake.requests[2].query == fake.requests[1].query  # the same page asked again
    assert written_items("langfuse", json.loads(done.stdout)) == served
    assert fake.violations == []


def test_retries_are_bounded(tmp_path: Path) -> None:
    """Six 429s in a row (Retry-After 0): five retries, then exit 8, nothing written."""
    out = tmp_path / "pulled.json"
    with FakeStore(
        "langsmith", items("langsmith"), credentials=CREDENTIALS["langsmith"], throttle=dict.fromkeys(range(6), 0)
    ) as fake:
        done = pull("langsmith", environment("langsmith", fake), "-o", out)
    assert done.returncode == 8, done.stderr
    assert [r.status for r in fake.requests] == [429] * 6
    assert "HTTP 429 Too Many Requests" in done.stderr
    assert not out.exists()


# --------------------------------------------------------------------------- credentials


@pytest.mark.parametrize("store", STORES)
def test_never_prints_nor_writes_a_credential(store: str, tmp_path: Path) -> None:
    """Neither on success (stdout, stderr, the file) nor when the store refuses with a body that
    echoes the credential headers, nor with a user:password in the base URL."""
    out = tmp_path / "pulled.json"
    with FakeStore(store, items(store), credentials=CREDENTIALS[store], throttle={0: 0}) as fake:
        done = pull(store, environment(store, fake), *STORE_FLAGS[store], "-o", out)
    with FakeStore(store, items(store), credentials=CREDENTIALS[store], fail_status=401) as refusing:
        refused = pull(store, environment(store, refusing), *STORE_FLAGS[store])
        url = refusing.base_url.replace("http://", "http://user:hunter2-password@")
        with_password = pull(store, environment(store, refusing, **{ENDPOINT[store]: url}), *STORE_FLAGS[store])
    assert done.returncode == 0, done.stderr
    assert refused.returncode == 8, refused.stderr
    assert with_password.returncode == 2 and "must not carry a user:password" in with_password.stderr
    assert "HTTP 401" in refused.stderr and "check the credentials' variables" in refused.stderr
    assert "***" in refused.stderr  # the echoed header is there, hidden
    assert len(refusing.requests) == 1  # the refused one; the URL with a password was refused before any
    printed = done.stdout + done.stderr + out.read_text(encoding="utf-8") + refused.stdout + refused.stderr
    printed += with_password.stdout + with_password.stderr
    for secret in [*secrets(store), "hunter2-password"]:
        assert secret not in printed
    assert fake.violations == [] and refusing.violations == []


def test_a_redirect_is_not_followed_with_the_credentials() -> None:
    with (
        FakeStore("langsmith", items("langsmith"), credentials=CREDENTIALS["langsmith"]) as elsewhere,
        FakeStore(
            "langsmith", items("langsmith"), credentials=CREDENTIALS["langsmith"], redirect_to=elsewhere.base_url
        ) as fake,
    ):
        done = pull("langsmith", environment("langsmith", fake))
    assert done.returncode == 8, done.stderr
    assert "HTTP 302" in done.stderr
    assert len(fake.requests) == 1 and elsewhere.requests == []


@pytest.mark.parametrize(
    ("store", "unset", "named"),
    [
        ("langfuse", "LANGFUSE_SECRET_KEY", "LANGFUSE_SECRET_KEY"),
        ("langfuse", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_PUBLIC_KEY"),
        ("phoenix", "PHOENIX_BASE_URL", "PHOENIX_BASE_URL (or PHOENIX_COLLECTOR_ENDPOINT)"),
        ("langsmith", "LANGSMITH_API_KEY", "LANGSMITH_API_KEY"),
    ],
)
def test_missing_credentials_is_exit_2_naming_the_variable(store: str, unset: str, named: str) -> None:
    with FakeStore(store, items(store), credentials=CREDENTIALS[store]) as fake:
        env = environment(store, fake)
        del env[unset]
        done = pull(store, env, *STORE_FLAGS[store])
    assert done.returncode == 2
    assert f"error: set {named}" in done.stderr
    assert fake.requests == []  # refused before any request
    assert not any(secret in done.stderr for secret in secrets(store))


@pytest.mark.parametrize(
    ("store", "flags", "message"),
    [
        ("phoenix", ["--project", "p", "--tag", "x"], "cannot match tags"),
        ("phoenix", [], "phoenix needs --project"),
        ("langsmith", ["--session", "s"], "its `session` is the tracing project"),
        ("langfuse", ["--project", "p"], "--project is for phoenix and langsmith"),
        ("langfuse", ["--since", "2026-12-02"], "--since: '2026-12-02' has no UTC offset"),
        ("langfuse", ["--filter", "not json"], "--filter for langfuse must be JSON"),
        ("phoenix", ["--project", "p", "--filter", "nocolon"], "--filter for phoenix is KEY:VALUE"),
        ("langsmith", ["--page-size", "101"], "--page-size for langsmith is 1 to 100"),
        ("langfuse", ["--session", "a", "--session", "b"], "one --session at a time"),
    ],
)
def test_what_an_api_cannot_express_is_exit_2_before_any_request(store: str, flags: list[str], message: str) -> None:
    with FakeStore(store, items(store), credentials=CREDENTIALS[store]) as fake:
        done = pull(store, environment(store, fake), *flags)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert fake.requests == []


# --------------------------------------------------------------------------- filters as each API takes them


def test_tags_filters_and_session_in_each_api(tmp_path: Path) -> None:
    """Langfuse: with --tag, the window and the session move into its `filter` (which takes
    precedence over the query parameters); Phoenix: `attribute` KEY:VALUE, the session JSON-quoted
    (a numeric-looking id stays a string); LangSmith: one `and(...)` filter expression."""
    since = ["--since", "2026-12-02T20:00:00Z"]
    with FakeStore("langfuse", items("langfuse"), credentials=CREDENTIALS["langfuse"]) as langfuse:
        condition = '{"type": "string", "column": "environment", "operator": "=", "value": "prod"}'
        lf = pull(
            "langfuse",
            environment("langfuse", langfuse),
            *since,
            "--session",
            "s1",
            "--tag",
            "nightly",
            "--filter",
            condition,
        )
    with FakeStore("phoenix", items("phoenix"), credentials=CREDENTIALS["phoenix"]) as phoenix:
        px = pull(
            "phoenix",
            environment("phoenix", phoenix),
            "--project",
            "my project",
            "--session",
            "12345",
            "--filter",
            "user.id:u-1",
        )
    with FakeStore("langsmith", items("langsmith"), credentials=CREDENTIALS["langsmith"]) as langsmith:
        ls = pull(
            "langsmith",
            environment("langsmith", langsmith),
            "--project",
            PROJECT_ID,
            "--tag",
            "nightly",
            "--filter",
            'eq(run_type, "chain")',
        )
    assert (lf.returncode, px.returncode, ls.returncode) == (0, 0, 0), lf.stderr + px.stderr + ls.stderr
    assert langfuse.violations == phoenix.violations == langsmith.violations == []
    sent = langfuse.requests[0].query
    assert "fromStartTime" not in sent and "sessionId" not in sent
    assert json.loads(sent["filter"][0]) == [
        {"type": "string", "column": "environment", "operator": "=", "value": "prod"},
        {"type": "datetime", "column": "startTime", "operator": ">=", "value": "2026-12-02T20:00:00Z"},
        {"type": "string", "column": "sessionId", "operator": "=", "value": "s1"},
        {"type": "arrayOptions", "column": "tags", "operator": "all of", "value": ["nightly"]},
    ]
    assert phoenix.requests[0].path == "/v1/projects/my project/spans/otlpv1"
    assert phoenix.requests[0].query["attribute"] == ["user.id:u-1", 'session.id:"12345"']
    body = json.loads(langsmith.requests[0].body)
    assert body["session"] == [PROJECT_ID]
    assert body["filter"] == 'and(eq(run_type, "chain"), has(tags, "nightly"))'


# --------------------------------------------------------------------------- what convert reads


def test_langsmith_pull_is_what_convert_reads(tmp_path: Path) -> None:
    """The runs pulled over four pages convert to the very request the same runs exported give."""
    pulled = tmp_path / "pulled.json"
    served = items("langsmith", 40)
    with FakeStore("langsmith", served, credentials=CREDENTIALS["langsmith"]) as fake:
        done = pull(
            "langsmith", environment("langsmith", fake), "--project", PROJECT_ID, "--page-size", "12", "-o", pulled
        )
    assert done.returncode == 0, done.stderr
    assert len(fake.requests) == 4 and fake.violations == []
    convert = [str(FAIR_FORGE), "convert", "--from", "langsmith", "--references", str(LANGSMITH_REFERENCES)]
    convert += ["--task-key", "metadata.task"]
    from_pull = subprocess.run(
        [*convert[:2], str(pulled), *convert[2:]], capture_output=True, text=True, timeout=TIMEOUT
    )
    from_export = subprocess.run(
        [*convert[:2], str(LANGSMITH_RUNS), *convert[2:]], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert from_pull.returncode == 0, from_pull.stderr
    assert json.loads(from_pull.stdout) == json.loads(from_export.stdout)
    assert json.loads(from_pull.stdout)["datasets"]


def test_langfuse_pull_is_what_convert_reads(tmp_path: Path) -> None:
    """The observations pulled over three pages convert to one conversation per trace, each the
    question and answer the fake served."""
    pulled, references = tmp_path / "pulled.json", tmp_path / "references.jsonl"
    served = items("langfuse", 7)
    truths = [{"task_id": f"task-{n}", "ground_truth_assistant": f"answer {n}"} for n in range(7)]
    references.write_text("".join(json.dumps(truth) + "\n" for truth in truths))
    with FakeStore("langfuse", served, credentials=CREDENTIALS["langfuse"]) as fake:
        done = pull("langfuse", environment("langfuse", fake), "--page-size", "3", "-o", pulled)
    assert done.returncode == 0, done.stderr
    assert len(fake.requests) == 3 and fake.violations == []
    converted = subprocess.run(
        [str(FAIR_FORGE), "convert", str(pulled), "--from", "langfuse", "--references", str(references), *TASK_KEY],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert converted.returncode == 0, converted.stderr
    conversations = {
        dataset["task_id"]: [(turn["query"], turn["assistant"]) for turn in dataset["conversation"]]
        for dataset in json.loads(converted.stdout)["datasets"]
    }
    assert conversations == {f"task-{n}": [(f"question {n}", f"answer {n}")] for n in range(7)}


def test_phoenix_pull_is_what_convert_reads(tmp_path: Path) -> None:
    """The OpenInference example's spans, served by the fake as Phoenix's `OtlpSpan`s over three
    pages, convert with `--from openinference` to the very request the example itself gives."""
    from tests.fixtures.make_otlp_shapes import _phoenix_otlpv1

    example = ROOT / "examples" / "traces" / "openinference_spans.json"
    references = ROOT / "examples" / "traces" / "openinference_spans.references.jsonl"
    served = _phoenix_otlpv1(json.loads(example.read_text(encoding="utf-8")))["data"]
    pulled = tmp_path / "pulled.json"
    page_size = str(-(-len(served) // 3))  # three pages
    with FakeStore("phoenix", served, credentials=CREDENTIALS["phoenix"]) as fake:
        done = pull(
            "phoenix", environment("phoenix", fake), *STORE_FLAGS["phoenix"], "--page-size", page_size, "-o", pulled
        )
    assert done.returncode == 0, done.stderr
    assert len(fake.requests) == 3 and fake.violations == []
    convert = ["--from", "openinference", "--references", str(references), *TASK_KEY]
    from_pull, from_example = (
        subprocess.run(
            [str(FAIR_FORGE), "convert", str(path), *convert], capture_output=True, text=True, timeout=TIMEOUT
        )
        for path in (pulled, example)
    )
    assert from_pull.returncode == 0, from_pull.stderr
    request, wanted = json.loads(from_pull.stdout), json.loads(from_example.stdout)
    # Phoenix keeps no OTLP resource, so the example's resource attributes are not in the pulled
    # spans' metadata; the conversations themselves are the same
    strip = [{k: v for k, v in dataset.items() if k != "metadata"} for dataset in request["datasets"]]
    assert strip == [{k: v for k, v in dataset.items() if k != "metadata"} for dataset in wanted["datasets"]]
    assert request["datasets"]


@pytest.mark.parametrize("unjoined", [False, True])
def test_pull_with_references_writes_the_request_convert_would(unjoined: bool, tmp_path: Path) -> None:
    """`pull langsmith --references R` writes the request `convert --from langsmith` writes of the
    pulled file, with convert's exit code: 6 for an attempt the references do not join, 0 with
    --allow-unjoined."""
    references = tmp_path / "references.jsonl"
    lines = LANGSMITH_REFERENCES.read_text(encoding="utf-8").splitlines(keepends=True)
    references.write_text("".join(lines[1:] if unjoined else lines))
    served = items("langsmith", 40)
    flags = ("--project", PROJECT_ID, "--page-size", "12", *TASK_KEY)
    with FakeStore("langsmith", served, credentials=CREDENTIALS["langsmith"]) as fake:
        env = environment("langsmith", fake)
        traces = tmp_path / "traces.json"
        assert pull("langsmith", env, *flags[:4], "-o", traces).returncode == 0
        direct = pull("langsmith", env, *flags, "--references", references, "-o", tmp_path / "request.json")
        allowed = pull("langsmith", env, *flags, "--references", references, "--allow-unjoined")
    convert = [str(FAIR_FORGE), "convert", str(traces), "--from", "langsmith", "--references", str(references)]
    converted = subprocess.run([*convert, *TASK_KEY], capture_output=True, text=True, timeout=TIMEOUT)
    assert (direct.returncode, converted.returncode) == ((6, 6) if unjoined else (0, 0)), direct.stderr
    assert json.loads((tmp_path / "request.json").read_text()) == json.loads(converted.stdout)
    assert allowed.returncode == 0 and json.loads(allowed.stdout) == json.loads(converted.stdout)


# --------------------------------------------------------------------------- the fakes' checks can fail


def _send(fake: FakeStore, method: str, path: str, headers: Mapping[str, str], body: bytes | None = None) -> int:
    request = urllib.request.Request(fake.base_url + path, data=body, method=method, headers=dict(headers))
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            status: int = answer.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    return status


def test_the_fakes_record_what_their_spec_does_not_allow() -> None:
    token = base64.b64encode(b"pk-lf-test-4a3b2c1d:sk-lf-test-9f8e7d6c5b4a").decode()
    basic = {"Authorization": f"Basic {token}"}
    with FakeStore("langfuse", items("langfuse"), credentials=CREDENTIALS["langfuse"]) as fake:
        assert _send(fake, "GET", "/api/public/v2/observations?limit=2", basic) == 200
        assert fake.violations == []
        assert _send(fake, "GET", "/api/public/traces", basic) == 404
        assert _send(fake, "POST", "/api/public/v2/observations", basic, b"{}") == 405
        assert _send(fake, "GET", "/api/public/v2/observations?page=2", basic) == 400
        assert _send(fake, "GET", "/api/public/v2/observations?limit=many", basic) == 400
        assert _send(fake, "GET", "/api/public/v2/observations?fromStartTime=yesterday", basic) == 400
        assert _send(fake, "GET", "/api/public/v2/observations", {}) == 401
        assert _send(fake, "GET", "/api/public/v2/observations", {"Authorization": "Basic d3Jvbmc6a2V5"}) == 401
    assert len(fake.violations) == 6  # the wrong key is the spec's own 401, not a violation
    assert "page is not in the spec" in fake.violations[2] and "limit" in fake.violations[3]
    with FakeStore("langsmith", items("langsmith"), credentials=CREDENTIALS["langsmith"]) as runs:
        key = {"x-api-key": CREDENTIALS["langsmith"]["LANGSMITH_API_KEY"]}
        assert _send(runs, "POST", "/api/v1/runs/query", key, b'{"session": ["a"], "limit": 5}') == 200
        assert _send(runs, "POST", "/api/v1/runs/query", key, b'{"sessions": ["a"]}') == 400
        assert _send(runs, "POST", "/api/v1/runs/query", key, b'{"limit": "5"}') == 400
        assert _send(runs, "POST", "/api/v1/runs/query", {}, b"{}") == 401
    assert len(runs.violations) == 3
    with FakeStore("phoenix", items("phoenix"), credentials=CREDENTIALS["phoenix"]) as spans:
        bearer = {"Authorization": f"Bearer {CREDENTIALS['phoenix']['PHOENIX_API_KEY']}"}
        assert _send(spans, "GET", "/v1/projects/p/spans/otlpv1?limit=1&limit=2", bearer) == 400
        assert _send(spans, "GET", "/v1/projects/p/spans/otlpv1?attribute=a:1&attribute=b:2", bearer) == 200
        assert _send(spans, "GET", "/v1/projects/p/spans", bearer) == 404
    assert len(spans.violations) == 2
