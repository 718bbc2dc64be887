"""The GitHub Action's `view: true` (issue #39 item 4; `action/history.py`): the viewer's site of
this run beside the earlier runs of the same report-name, whose `result.json` comes out of their
artifacts. action.yml's steps run as in test_github_action.py (its runner, its fake GITHUB_*
environment); its fake GitHub API also serves the artifacts (the listing, paginated as GitHub
does, and a download's 302), and a second server on another port of 127.0.0.1, another origin,
plays the storage host the 302 points to, so that the token can be seen not to follow it.

The artifacts are real zips built here, around results `fair-forge evaluate` wrote for
examples/calculator.json: a good one, a nested one (`fair-forge-report/result.json`), a hostile
one (`../x.json`, `../result.json`, an absolute `/tmp/result.json`), an oversized one (a
`result.json` of 20 MB and one byte, deflated to a few KB), an expired one and the current run's.
"""

from __future__ import annotations

import io
import json
import re
import struct
import subprocess
import sys
import threading
import urllib.parse
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import ROOT, run_cli
from tests.cli.test_github_action import (
    REPOSITORY,
    SCRIPT,
    TOKEN,
    FakeGitHub,
    Job,
    assert_no_token,
    environment,
    handler_for,
    run_action,
)

CALCULATOR = ROOT / "examples" / "calculator.json"
NAME = "fair-forge-report"
PUSH = {"ref": "refs/heads/main"}  # no pull request: the comment step calls no API
LISTING = f"/repos/{REPOSITORY}/actions/artifacts"
OVER_20_MB = 20 * 1024 * 1024 + 1


@dataclass
class FakeArtifacts(FakeGitHub):
    """FakeGitHub, with a repository's artifacts (newest first) and their zips on a storage host."""

    artifacts: list[dict[str, Any]] = field(default_factory=list)
    zips: dict[int, bytes] = field(default_factory=dict)
    storage_url: str = ""
    storage_requests: list[dict[str, Any]] = field(default_factory=list)

    def artifact(self, artifact_id: int, run_id: int, data: bytes | None, *, expired: bool = False) -> None:
        self.artifacts.append(
            {
                "id": artifact_id,
                "name": NAME,
                "expired": expired,
                "archive_download_url": f"{self.url}{LISTING}/{artifact_id}/zip",
                "workflow_run": {"id": run_id, "head_branch": "main"},
            }
        )
        if data is not None:
            self.zips[artifact_id] = data

    def downloads(self) -> list[int]:
        """The artifacts whose zip was asked of the API, in order."""
        return [int(m.group(1)) for r in self.requests if (m := re.fullmatch(rf"{LISTING}/(\d+)/zip", r["path"]))]


def artifacts_handler(api: FakeArtifacts) -> type[BaseHTTPRequestHandler]:
    base = handler_for(api)

    class Handler(base):  # type: ignore[valid-type,misc]
        def _artifacts(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            if not url.path.startswith(LISTING):
                return base._handle(self)  # the comments, as FakeGitHub serves them
            query = urllib.parse.parse_qs(url.query)
            api.requests.append(
                {"method": self.command, "path": url.path, "query": query, "headers": dict(self.headers)}
            )
            if api.refuse:
                return self._reply(api.refuse, {"message": "Resource not accessible by integration"})
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._reply(401, {"message": "Bad credentials"})
            if url.path == LISTING and self.command == "GET":
                named = [a for a in api.artifacts if "name" not in query or a["name"] == query["name"][0]]
                per_page = min(int(query.get("per_page", ["30"])[0]), 100)
                page = int(query.get("page", ["1"])[0])
                chunk = named[(page - 1) * per_page : page * per_page]
                headers = {}
                if page * per_page < len(named):
                    following = f"{api.url}{LISTING}?name={NAME}&per_page={per_page}&page={page + 1}"
                    headers["Link"] = f'<{following}>; rel="next"'
                return self._reply(200, {"total_count": len(named), "artifacts": chunk}, headers)
            download = re.fullmatch(rf"{LISTING}/(\d+)/zip", url.path)
            if download and int(download.group(1)) in {a["id"] for a in api.artifacts}:
                self.send_response(302)  # GitHub's answer: a short-lived URL on its storage host
                self.send_header("Location", f"{api.storage_url}/blob/{download.group(1)}?sig=signed")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            return self._reply(404, {"message": "Not Found"})

        do_GET = do_POST = do_PATCH = _artifacts

    return Handler


def storage_handler(api: FakeArtifacts) -> type[BaseHTTPRequestHandler]:
    class Storage(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            api.storage_requests.append({"path": url.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
            found = re.fullmatch(r"/blob/(\d+)", url.path)
            data = api.zips.get(int(found.group(1))) if found else None
            self.send_response(200 if data is not None else 404)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", str(len(data or b"")))
            self.end_headers()
            self.wfile.write(data or b"")

    return Storage


@pytest.fixture
def api() -> Iterator[FakeArtifacts]:
    fake = FakeArtifacts()
    servers = [
        ThreadingHTTPServer(("127.0.0.1", 0), artifacts_handler(fake)),
        ThreadingHTTPServer(("127.0.0.1", 0), storage_handler(fake)),
    ]
    fake.url, fake.storage_url = (f"http://127.0.0.1:{server.server_address[1]}" for server in servers)
    assert fake.url != fake.storage_url  # another port: another origin
    threads = [threading.Thread(target=server.serve_forever, daemon=True) for server in servers]
    for thread in threads:
        thread.start()
    yield fake
    for server, thread in zip(servers, threads, strict=True):
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def earlier(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Two results of examples/calculator.json, as `fair-forge evaluate` wrote them."""
    folder = tmp_path_factory.mktemp("earlier")
    results = {}
    for label in ("older", "newer"):
        path = folder / f"{label}.json"
        done = run_cli("evaluate", CALCULATOR, "--out", path, "--quiet", "--label", f"run={label}")
        assert done.returncode in (0, 1), done.stderr
        results[label] = path.read_bytes()
    return results


def zip_of(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    assert zipfile.ZipFile(io.BytesIO(buffer.getvalue())).namelist() == list(entries)  # the names kept as given
    return buffer.getvalue()


def lying_zip(data: bytes) -> bytes:
    """A zip of `result.json` whose local header and central directory say it holds 2 bytes."""
    archive = bytearray(zip_of({"result.json": data}))
    for offset in (22, archive.index(b"PK\x01\x02") + 24):  # the uncompressed size of each record
        assert struct.unpack("<I", archive[offset : offset + 4]) == (len(data),)
        archive[offset : offset + 4] = struct.pack("<I", 2)
    return bytes(archive)


def index_of(site: Path) -> dict[str, Any]:
    """The site's `data/index.js` as its JSON: `FF.put("index", {...});`, or the value given as a
    JSON string, `FF.put("index", JSON.parse("{...}"));`."""
    match = re.fullmatch(r'FF\.put\("index",(.*)\);\s*', (site / "data" / "index.js").read_text(), re.DOTALL)
    assert match is not None
    payload = match.group(1)
    if parsed := re.fullmatch(r"JSON\.parse\((.*)\)", payload, re.DOTALL):
        payload = json.loads(parsed.group(1))
    data: dict[str, Any] = json.loads(payload)
    return data


def run_view(tmp_path: Path, api: FakeArtifacts | None, **inputs: str) -> tuple[Job, Path]:
    """The action on examples/calculator.json with `view: true` and `inputs`; the job and its output directory."""
    job = run_action(tmp_path, {"request": str(CALCULATOR), "view": "true"} | inputs, api, PUSH)
    return job, tmp_path / "workspace" / "fair-forge-results" / NAME


def test_the_site_shows_the_earlier_artifacts_results_beside_this_run(
    tmp_path: Path, api: FakeArtifacts, earlier: dict[str, bytes]
) -> None:
    report = b"<html>the report</html>"
    api.artifact(101, 42, zip_of({"result.json": earlier["newer"]}))  # this run's (GITHUB_RUN_ID 42): passed over
    api.artifact(100, 41, zip_of({"result.json": earlier["newer"]}), expired=True)
    api.artifact(99, 41, zip_of({"result.json": earlier["newer"], "report.html": report, "history/5.json": b"{}"}))
    api.artifact(
        98, 40, zip_of({"../x.json": b"{}", "../result.json": earlier["newer"], "/tmp/result.json": earlier["newer"]})
    )
    api.artifact(97, 39, zip_of({"result.json": b" " * OVER_20_MB}))
    api.artifact(96, 38, zip_of({f"{NAME}/result.json": earlier["older"], f"{NAME}/report.html": report}))

    job, directory = run_view(tmp_path, api, **{"github-token": TOKEN})
    assert job.code == 0 and not job.failed, job.log()
    view = job.steps["view"]
    assert view.ran and view.code == 0
    site = directory / "site"
    assert job.outputs["view"]["site-path"] == "fair-forge-results/fair-forge-report/site"
    assert (site / "index.html").is_file()
    # the site is inside the output directory, which the upload step publishes
    assert job.steps["upload"].with_["path"] == job.outputs["evaluate"]["directory"] == "fair-forge-results/" + NAME
    # only the result.json of each artifact was extracted, under its artifact's id
    assert sorted(p.name for p in (directory / "history").iterdir()) == ["96.json", "99.json"]
    assert (directory / "history" / "96.json").read_bytes() == earlier["older"]
    assert (directory / "history" / "99.json").read_bytes() == earlier["newer"]
    assert not list(tmp_path.rglob("x.json")) and not (directory.parent / "result.json").exists()
    assert not (directory / "history" / "5.json").exists() and not list((directory / "history").glob("*.html"))
    runs = index_of(site)["runs"]
    assert [run["source"] for run in runs] == ["96.json", "99.json", "result.json"]
    assert [run["labels"].get("run") for run in runs[:2]] == ["older", "newer"]
    # the hostile and the oversized entries were refused, saying so
    assert "::warning title=fair-forge::artifact 98: refused the entry '../result.json'" in view.stdout
    assert "artifact 98: refused the entry '/tmp/result.json'" in view.stdout
    assert f"::warning title=fair-forge::artifact 97: refused the entry 'result.json': over {OVER_20_MB - 1} bytes" in (
        view.stdout
    )
    assert "history: 2 earlier result(s) of fair-forge-report" in view.stdout
    # expired artifacts and this run's are not downloaded; the listing asked for the report's name
    assert api.downloads() == [99, 98, 97, 96]
    (listing,) = [r for r in api.requests if r["path"] == LISTING]
    assert listing["query"] == {"name": [NAME], "per_page": ["100"]}
    # the token goes to the API, never to the storage host the 302 points to
    assert all(r["headers"]["Authorization"] == f"Bearer {TOKEN}" for r in api.requests)
    assert sorted(r["path"] for r in api.storage_requests) == [f"/blob/{n}" for n in (96, 97, 98, 99)]
    for request in api.storage_requests:
        assert "authorization" not in request["headers"]
        assert TOKEN not in json.dumps(request["headers"])
    assert_no_token(job, *tmp_path.rglob("*"))


def test_view_history_bounds_the_count_across_the_listings_pages(
    tmp_path: Path, api: FakeArtifacts, earlier: dict[str, bytes]
) -> None:
    # the first page (100) is all expired: the two usable ones are on the second page
    for n in range(100):
        api.artifact(1000 - n, 500 - n, None, expired=True)
    api.artifact(20, 30, zip_of({"result.json": earlier["newer"]}))
    api.artifact(19, 29, zip_of({"result.json": earlier["older"]}))
    job, directory = run_view(tmp_path, api, **{"github-token": TOKEN, "view-history": "1"})
    assert job.code == 0, job.log()
    assert api.downloads() == [20]
    assert [r["query"].get("page") for r in api.requests if r["path"] == LISTING] == [None, ["2"]]
    assert [run["source"] for run in index_of(directory / "site")["runs"]] == ["20.json", "result.json"]

    # view-history 0: no call at all
    api.requests.clear()
    job, directory = run_view(tmp_path / "zero", api, **{"github-token": TOKEN, "view-history": "0"})
    assert job.code == 0 and api.requests == []
    assert "no history: view-history is 0" in job.steps["view"].stdout
    assert [run["source"] for run in index_of(directory / "site")["runs"]] == ["result.json"]


def test_without_a_token_the_site_shows_this_run_alone(tmp_path: Path, api: FakeArtifacts) -> None:
    api.artifact(99, 41, zip_of({"result.json": b"{}"}))
    job, directory = run_view(tmp_path, api)
    assert job.code == 0, job.log()
    assert "no history: no github-token" in job.steps["view"].stdout
    assert api.requests == [] and not (directory / "history").exists()
    assert [run["source"] for run in index_of(directory / "site")["runs"]] == ["result.json"]


def test_an_api_error_is_a_warning_and_the_site_is_built_from_this_run(tmp_path: Path, api: FakeArtifacts) -> None:
    api.artifact(99, 41, zip_of({"result.json": b"{}"}))
    api.refuse = 403
    job, directory = run_view(tmp_path, api, **{"github-token": TOKEN})
    assert job.code == 0 and not job.failed, job.log()
    assert (
        "::warning title=fair-forge::no history: could not list the artifacts named fair-forge-report: "
        "HTTP 403: Resource not accessible by integration (the token needs `actions: read`)"
    ) in job.steps["view"].stdout
    assert [run["source"] for run in index_of(directory / "site")["runs"]] == ["result.json"]
    assert job.outputs["view"]["site-path"].endswith("/site")
    assert_no_token(job)


def test_a_failed_download_is_a_warning_and_the_others_are_still_taken(
    tmp_path: Path, api: FakeArtifacts, earlier: dict[str, bytes]
) -> None:
    api.artifact(99, 41, None)  # the storage host answers 404
    api.artifact(98, 40, b"not a zip")
    api.artifact(97, 39, zip_of({"result.json": b"[1, 2]"}))
    api.artifact(96, 38, zip_of({"result.json": earlier["older"]}))
    api.artifact(95, 37, lying_zip(earlier["newer"]))
    job, directory = run_view(tmp_path, api, **{"github-token": TOKEN})
    assert job.code == 0 and not job.failed, job.log()
    view = job.steps["view"].stdout
    # a size in the zip below the entry's: zipfile reads no more than it says, and the CRC fails
    assert "::warning title=fair-forge::artifact 95: could not read its result.json: BadZipFile" in view
    assert "::warning title=fair-forge::artifact 99: could not read its result.json: HTTP 404" in view
    assert "::warning title=fair-forge::artifact 98: could not read its result.json: BadZipFile" in view
    assert "::warning title=fair-forge::artifact 97: its result.json is not a JSON object: skipped" in view
    assert [run["source"] for run in index_of(directory / "site")["runs"]] == ["96.json", "result.json"]


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"view": "yes"}, "input view: expected true or false, got 'yes'"),
        ({"view-history": "201"}, "input view-history: expected a whole number from 0 to 200, got '201'"),
        ({"view-history": "-1"}, "input view-history: expected a whole number from 0 to 200, got '-1'"),
        ({"view-history": "ten"}, "input view-history: expected a whole number from 0 to 200, got 'ten'"),
    ],
)
def test_a_bad_view_input_exits_2_naming_it(tmp_path: Path, inputs: dict[str, str], message: str) -> None:
    job = run_action(tmp_path, {"request": str(CALCULATOR), "view": "true"} | inputs, None, PUSH)
    assert job.code == 2, job.log()
    assert f"::error title=fair-forge::{message}" in job.steps["evaluate"].stdout
    assert job.outputs["evaluate"]["status"] == f"exit 2: {message}"
    assert not job.steps["view"].ran


def test_view_false_the_default_builds_no_site(tmp_path: Path, api: FakeArtifacts) -> None:
    job = run_action(tmp_path, {"request": str(CALCULATOR), "github-token": TOKEN}, api, PUSH)
    assert job.code == 0, job.log()
    assert job.outputs["evaluate"]["view"] == "false" and not job.steps["view"].ran
    directory = tmp_path / "workspace" / "fair-forge-results" / NAME
    assert (directory / "result.json").is_file() and not (directory / "site").exists()
    assert api.requests == []


def test_a_failing_view_is_a_warning(tmp_path: Path) -> None:
    """The view step alone on a result.json that is not a result: `fair-forge view` exits 2, the
    step says so as a warning, writes an empty `site-path`, and exits 0."""
    workspace = tmp_path / "workspace"
    (workspace / "out").mkdir(parents=True)
    (workspace / "out" / "result.json").write_text('{"not": "a result"}')
    (workspace / "out" / "site").mkdir()
    (workspace / "out" / "site" / "stale.html").write_text("an earlier job's")
    output = tmp_path / "output"
    env = environment(workspace, None, PUSH) | {"FF_RESULT": "out/result.json", "GITHUB_OUTPUT": str(output)}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "view"], cwd=workspace, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "no history: no github-token" in done.stdout
    assert "::warning title=fair-forge::no site: fair-forge view exited 2" in done.stdout
    assert output.read_text() == "site-path=\n"
    assert not (workspace / "out" / "site" / "stale.html").exists()
