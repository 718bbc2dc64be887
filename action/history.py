"""The GitHub Action's `view: true` (`fair_forge_action.py view`, the step after evaluate): the
viewer's site (`fair-forge view`, docs/how-to/reports.md "The viewer: runs side by side") of this
run and of the earlier runs of the same `report-name`, written to `<output-directory>/site`, which
the upload step publishes with the rest of the directory. Standard library only, like the script.

History, with a `github-token` (the token needs `actions: read`):
- "List artifacts for a repository",
  https://docs.github.com/en/rest/actions/artifacts#list-artifacts-for-a-repository:
  `GET {GITHUB_API_URL}/repos/{GITHUB_REPOSITORY}/actions/artifacts?name=NAME&per_page=100`
  (100 is the most a page holds; newest first), each artifact with `id`, `name`, `expired` and
  `workflow_run: {id, head_branch, …}`; further pages through the Link header's `rel="next"`,
  followed only on the API's own origin. The name is the key: a report-name that two workflows
  share mixes their runs.
- "Download an artifact",
  https://docs.github.com/en/rest/actions/artifacts#download-an-artifact:
  `GET …/actions/artifacts/{id}/zip` (built from the id, on the API's origin) answers 302 with a
  storage URL in `Location` that expires after a minute. The token is an unredirected header
  (as `fair_forge_action.GitHub._call` sends it): urllib drops it when following the redirect, so
  the storage host never sees it.

At most `view-history` (default `DEFAULT_HISTORY`, 0 to `MAX_HISTORY`) artifacts are taken, the
newest first, expired ones and the current run's (`GITHUB_RUN_ID`) passed over. Of each zip only
one entry is read, `result.json` or else the shallowest `*/result.json`; an entry with a `..` part,
an absolute path (or a drive), or more than `MAX_RESULT` bytes (the size the zip's directory
gives: zipfile reads no more than that, and a size that lies fails the entry's CRC check) is
refused, and nothing else is ever extracted. Its JSON object is written to
`<output-directory>/history/<artifact-id>.json`. Any API or download error is a warning
(`::warning::`), never the job's failure: the site is then built from what was found, this run's
result at least. Without a token the log says "no history: no github-token".
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fair_forge_core.safe_text import log_line

DEFAULT_HISTORY = 30
MAX_HISTORY = 200
MAX_RESULT = 20 * 1024 * 1024
"""The most bytes of a `result.json` read out of an artifact."""
MAX_ARCHIVE = 512 * 1024 * 1024
"""The most bytes of an artifact's zip downloaded (the whole output directory of a run)."""
MAX_PAGES = 20
"""Pages of the artifacts' listing read at most (2,000 artifacts, expired ones included)."""
RESULT, HISTORY, SITE = "result.json", "history", "site"
ERRORS = (
    urllib.error.URLError,  # HTTPError included
    OSError,
    ValueError,
    http.client.HTTPException,
    zipfile.BadZipFile,
    KeyError,
    TypeError,
)
"""What an API call or a download may raise: a warning, never the job's failure."""


def _say(line: str) -> None:
    print(log_line(line), flush=True)


def _warn(message: str) -> None:
    """`::warning title=fair-forge::message`, on one line, `%` escaped as the runner unescapes it."""
    print(f"::warning title=fair-forge::{log_line(message).replace('%', '%25')}", flush=True)


def problem(view: str, history: str) -> str | None:
    """What is wrong with the inputs `view` (true or false) and `view-history` (a whole number
    from 0 to `MAX_HISTORY`), or None; both empty are the defaults."""
    if view.lower() not in ("", "true", "false"):
        return f"input view: expected true or false, got {view!r}"
    if history and not (re.fullmatch(r"[0-9]{1,3}", history) and int(history) <= MAX_HISTORY):
        return f"input view-history: expected a whole number from 0 to {MAX_HISTORY}, got {history!r}"
    return None


def next_page(link: str, origin: tuple[str, ...]) -> str | None:
    """The `rel="next"` URL of a Link header when it is on `origin` (scheme, host and port), else
    None: a link elsewhere is not followed with the token (the comment's listing uses it too)."""
    for part in link.split(","):
        match = re.match(r'\s*<([^>]+)>\s*;\s*rel="next"', part)
        if match and urllib.parse.urlsplit(match.group(1))[:2] == origin:
            return match.group(1)
    return None


def api_reason(exc: BaseException) -> str:
    """`HTTP 404: <GitHub's message>` (cut short), or the error's reason: never a header (the
    comment's warnings use it too)."""
    if isinstance(exc, urllib.error.HTTPError):
        try:
            message = str(json.loads(exc.read()).get("message", ""))
        except (ValueError, AttributeError, OSError):
            message = ""
        return f"HTTP {exc.code}" + (f": {message[:200]}" if message else "")
    return str(getattr(exc, "reason", None) or exc.__class__.__name__)


class Artifacts:
    """The two REST calls of the history, against `api` (`$GITHUB_API_URL`) with `token`."""

    def __init__(self, api: str, repository: str, token: str) -> None:
        self.api = api.rstrip("/")
        self.origin = urllib.parse.urlsplit(self.api)[:2]
        self.repository = repository
        self.token = token

    def _open(self, url: str) -> Any:
        """The response to GET `url`; the token goes only to `url`, never into a redirect."""
        if urllib.parse.urlsplit(url)[:2] != self.origin:
            raise ValueError(f"not the API's origin: {url}")
        request = urllib.request.Request(url)
        request.add_unredirected_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        request.add_header("User-Agent", "fair-forge-action")
        return urllib.request.urlopen(request, timeout=60)

    def earlier(self, name: str, run_id: str, count: int) -> list[int]:
        """The ids of at most `count` artifacts named `name`, newest first, neither expired nor
        of the run `run_id`."""
        query = urllib.parse.urlencode({"name": name, "per_page": 100})
        url: str | None = f"{self.api}/repos/{self.repository}/actions/artifacts?{query}"
        found: list[int] = []
        for _ in range(MAX_PAGES):
            if url is None or len(found) >= count:
                break
            with self._open(url) as response:
                listing, link = json.loads(response.read() or b"null"), response.headers.get("Link", "")
            artifacts = listing.get("artifacts") if isinstance(listing, dict) else None
            for artifact in artifacts if isinstance(artifacts, list) else []:
                if (
                    not isinstance(artifact, dict)
                    or artifact.get("name") != name
                    or artifact.get("expired") is not False
                ):
                    continue
                run = artifact.get("workflow_run")
                identifier = artifact.get("id")
                if (isinstance(run, dict) and str(run.get("id")) == run_id) or type(identifier) is not int:
                    continue
                if identifier not in found and len(found) < count:
                    found.append(identifier)
            url = next_page(link, self.origin)
        return found

    def result(self, artifact: int) -> bytes | None:
        """The `result.json` of the artifact `artifact` (its zip downloaded to a temporary file),
        or None, with a warning saying why."""
        with tempfile.TemporaryFile() as file:
            with self._open(f"{self.api}/repos/{self.repository}/actions/artifacts/{artifact}/zip") as response:
                copied = 0
                while chunk := response.read(1 << 20):
                    copied += len(chunk)
                    if copied > MAX_ARCHIVE:
                        _warn(f"artifact {artifact}: its zip is over {MAX_ARCHIVE} bytes: skipped")
                        return None
                    file.write(chunk)
            file.seek(0)
            with zipfile.ZipFile(file) as archive:
                return result_entry(archive, f"artifact {artifact}")


def result_entry(archive: zipfile.ZipFile, label: str) -> bytes | None:
    """The bytes of `archive`'s `result.json` (or else its shallowest `*/result.json`), or None
    with a warning: an entry with a `..` part, an absolute path or over `MAX_RESULT` bytes is refused."""
    chosen: tuple[int, zipfile.ZipInfo] | None = None
    for info in archive.infolist():
        name = info.filename.replace("\\", "/")
        if info.is_dir() or (name != RESULT and not name.endswith("/" + RESULT)):
            continue
        parts = name.split("/")
        if name.startswith("/") or re.match(r"[A-Za-z]:", name) or ".." in parts:
            _warn(f"{label}: refused the entry {name!r}: not a relative path inside the archive")
        elif info.file_size > MAX_RESULT:
            _warn(f"{label}: refused the entry {name!r}: over {MAX_RESULT} bytes")
        elif chosen is None or len(parts) < chosen[0]:
            chosen = (len(parts), info)
    if chosen is None:
        _warn(f"{label}: no {RESULT} to take")
        return None
    with archive.open(chosen[1]) as entry:  # reads the entry's size at most, and checks its CRC
        return entry.read()


def fetch_history(directory: Path, name: str, token: str, count: int) -> int:
    """Write the earlier results into `directory` (created when one is found); how many."""
    api = os.environ.get("GITHUB_API_URL", "") or "https://api.github.com"
    artifacts = Artifacts(api, os.environ.get("GITHUB_REPOSITORY", ""), token)
    try:
        earlier = artifacts.earlier(name, os.environ.get("GITHUB_RUN_ID", ""), count)
    except ERRORS as exc:
        refused = isinstance(exc, urllib.error.HTTPError) and exc.code in (401, 403, 404)
        hint = " (the token needs `actions: read`)" if refused else ""
        _warn(f"no history: could not list the artifacts named {name}: {api_reason(exc)}{hint}")
        return 0
    written = 0
    for artifact in earlier:
        try:
            data = artifacts.result(artifact)
            if data is None:
                continue
            if not isinstance(json.loads(data), dict):
                _warn(f"artifact {artifact}: its {RESULT} is not a JSON object: skipped")
                continue
        except ERRORS as exc:
            _warn(f"artifact {artifact}: could not read its {RESULT}: {api_reason(exc)}")
            continue
        directory.mkdir(exist_ok=True)
        (directory / f"{artifact}.json").write_bytes(data)
        written += 1
    return written


def _remove(path: Path) -> None:
    """Remove what an earlier job left at `path` (a self-hosted runner's workspace persists)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def view(result_path: str, name: str, token: str, count: str, fair_forge: Callable[[Sequence[str]], int]) -> str:
    """Beside evaluate's `result_path` (its output directory's result.json): the history (as the
    module docstring says), then `fair-forge view [HISTORY] RESULT --out SITE` run by `fair_forge`
    (the script's runner of the CLI). The site's path, or "" with a warning when it could not be
    built; an error of the API or a download never stops it."""
    if not result_path or not Path(result_path).is_file():
        _say(f"no site: evaluate wrote no {RESULT}")
        return ""
    result = Path(result_path)
    history, site = result.parent / HISTORY, result.parent / SITE
    try:
        _remove(history)
        _remove(site)
    except OSError as exc:
        _warn(f"no site: cannot remove the earlier {history} or {site}: {exc.strerror}")
        return ""
    wanted = int(count) if count else DEFAULT_HISTORY
    if not token:
        _say("no history: no github-token")
    elif wanted == 0:
        _say("no history: view-history is 0")
    else:
        _say(f"history: {fetch_history(history, name, token, wanted)} earlier result(s) of {name}")
    code = fair_forge(["view", *([str(history)] if history.is_dir() else []), str(result), "--out", str(site)])
    if code != 0 or not (site / "index.html").is_file():
        _warn(f"no site: fair-forge view exited {code} (the job's result is evaluate's)")
        return ""
    return str(site)
