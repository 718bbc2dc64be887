"""Fixtures for tests in a real browser: Playwright driving Debian's `chromium`, on file:// pages, offline.

Why these and not pytest-playwright: the browser is the system's `chromium` (.ci/run installs Debian's package),
launched by its executable path, so nothing is downloaded (`playwright install` is never run); and every page is
watched, because the static site (`fair-forge view … --out site/`) must work from file:// alone:

- `browser`: headless Chromium, launched by `chromium_path()`, once per process (each pytest-xdist worker its
  own) for the tests of this package. Package-scoped, not session-scoped: while Playwright's sync API is
  started its event loop counts as running in the thread, so `asyncio.run()` in a later test of the same
  worker (tests/unit run many) would fail; pytest tears it down before the worker's first test elsewhere.
- `page` (a 1280×800 desktop page), `phone_page` (390×844, mobile, touch), `new_page(**context_options)` (any
  other: `new_page(**PHONE, color_scheme="dark")`): each page in a context of its own, closed after the test.
  Every request is routed: file:// loads of files under the site root (`site_root=`, by default the test's
  `tmp_path`) go on; anything else (http, https, ws, a file outside the site) is aborted and recorded.
- `log_of(page)` (or the fixture `page_log`, for `page`): what the page did wrong: `outside_requests`,
  `console_errors`, `page_errors` (uncaught exceptions), `failed_files` (file:// loads that failed: a missing
  file, or a fetch() that file:// forbids). `problems()` is all of them. A test that still has outside requests
  at its end fails (a teardown error), whether or not it asserted on them: one that provokes them clears the list.
- `wait_until(page, condition)`: for the log's entries, which arrive while Playwright waits.
- `axe_violations(page)`: axe-core (node_modules/axe-core, which .ci/run installs) run in the page; its
  violations of impact "serious" or "critical" (`impacts=` for others).

Missing Chromium, Playwright or axe-core: the tests are skipped on a developer's machine but fail in CI
(`CI=true`), as tests/service/test_report_screenshot.py does, so a broken install cannot pass by skipping.

Two things Chromium does on file:// that a static site must design around (tests/browser/test_browser_fixtures.py
shows both): fetch() or XMLHttpRequest of a sibling file is blocked (origin "null", CORS), so data comes in
`<script src="data.js">`, not fetch("data.json"); and a Content-Security-Policy blocks inline scripts, which is
why axe is injected with `page.evaluate` (not subject to the page's CSP) rather than `page.add_script_tag`.
"""

from __future__ import annotations

import os
import shutil
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol
from urllib.parse import unquote, urlsplit

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import (
        Browser,
        BrowserContext,
        ConsoleMessage,
        Page,
        Request,
        Route,
        WebError,
        WebSocketRoute,
    )

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError as error:  # the fixtures skip (or fail, in CI) with this
    PLAYWRIGHT_MISSING = f"the playwright package is not installed ({error}): `make venv` installs it"
    expect = sync_playwright = None  # type: ignore[assignment]
else:
    PLAYWRIGHT_MISSING = ""

ROOT = Path(__file__).resolve().parents[2]
AXE_SCRIPT = ROOT / "node_modules" / "axe-core" / "axe.min.js"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # no name resolves: what could ever get past the routing below (a preconnect, a DNS prefetch) goes nowhere
    "--host-resolver-rules=MAP * ~NOTFOUND",
)
# Timeouts, in milliseconds: a quiet run takes a few ms per action, 0.5 s to launch; these are 100× that and more,
# for a loaded CI machine running one browser per CPU.
LAUNCH_TIMEOUT_MS = 120_000
ACTION_TIMEOUT_MS = 30_000
NAVIGATION_TIMEOUT_MS = 60_000
# Context options (Browser.new_context) of `page` and `phone_page`; `new_page(**options)` overrides DESKTOP's.
DESKTOP: dict[str, Any] = {
    "viewport": {"width": 1280, "height": 800},
    "locale": "en-US",
    "timezone_id": "UTC",
    "color_scheme": "light",
    "service_workers": "block",
}
PHONE: dict[str, Any] = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "is_mobile": True,
    "has_touch": True,
}
LOCAL_SCHEMES = ("data", "blob", "about")  # never a request that leaves the page
IMPACTS = ("minor", "moderate", "serious", "critical")  # axe-core's, least first

if expect is not None:
    expect.set_options(timeout=ACTION_TIMEOUT_MS)


def missing(what: str) -> NoReturn:
    """Skip the test for lack of `what` on a developer's machine; fail it in CI (CI=true), which must have it."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{what}. CI must have it (.ci/run installs it)", pytrace=False)
    pytest.skip(what)


def chromium_path() -> str:
    """The Chromium executable (Debian's `chromium` first); skips or fails (CI) the test when there is none."""
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        missing("chromium is not installed (apt-get install chromium fonts-dejavu-core)")
    return found


def axe_script() -> Path:
    """axe-core's script, node_modules/axe-core/axe.min.js; skips or fails (CI) the test when it is missing."""
    if not AXE_SCRIPT.is_file():
        missing(f"{AXE_SCRIPT.relative_to(ROOT)} is missing (npm install --no-save axe-core@4, as .ci/run does)")
    return AXE_SCRIPT


@dataclass
class PageLog:
    """What a page (its context: popups too) did that a static site must not: each entry a readable line."""

    site_root: Path
    outside_requests: list[str] = field(default_factory=list)  # URLs, aborted
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)  # uncaught exceptions, unhandled rejections
    failed_files: list[str] = field(default_factory=list)  # "URL (net::ERR_…)"

    def problems(self) -> list[str]:
        """Every entry, each prefixed by its kind: `assert not log.problems(), log.problems()`."""
        return [
            *(f"outside request: {entry}" for entry in self.outside_requests),
            *(f"console error: {entry}" for entry in self.console_errors),
            *(f"page error: {entry}" for entry in self.page_errors),
            *(f"failed file: {entry}" for entry in self.failed_files),
        ]

    def is_site_file(self, url: str) -> bool:
        """Whether `url` is a file:// URL of a file under the site root."""
        parts = urlsplit(url)
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            return False
        return Path(unquote(parts.path)).resolve().is_relative_to(self.site_root)

    def watch(self, context: BrowserContext) -> None:
        """Routes every request of `context` (file:// of the site on, the rest aborted) and records the rest."""
        context.route("**/*", self._route)
        context.route_web_socket("**/*", self._websocket)  # not routed by route(), and would connect
        context.on("request", self._request)
        context.on("requestfailed", self._request_failed)
        context.on("console", self._console)
        context.on("weberror", self._page_error)

    def _route(self, route: Route) -> None:
        url = route.request.url
        if self.is_site_file(url):
            route.continue_()
            return
        if url.startswith("file:"):  # the other schemes are recorded by _request, which sees them all
            self.outside_requests.append(url)
        route.abort()

    def _websocket(self, websocket: WebSocketRoute) -> None:
        self.outside_requests.append(websocket.url)
        websocket.close()

    def _request(self, request: Request) -> None:
        # every request, blocked by the page's own CSP too (those never reach _route)
        scheme = urlsplit(request.url).scheme
        if scheme != "file" and scheme not in LOCAL_SCHEMES:
            self.outside_requests.append(request.url)

    def _request_failed(self, request: Request) -> None:
        if request.url.startswith("file:") and self.is_site_file(request.url):
            self.failed_files.append(f"{request.url} ({request.failure})")

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            where = message.location
            self.console_errors.append(f"{message.text} ({where.get('url', '')}:{where.get('lineNumber', '')})")

    def _page_error(self, web_error: WebError) -> None:
        error = web_error.error
        self.page_errors.append(f"{error.name}: {error.message}" if error.name else error.message)


_LOGS: weakref.WeakKeyDictionary[Page, PageLog] = weakref.WeakKeyDictionary()


def log_of(page: Page) -> PageLog:
    """The log of a page opened by the fixtures (`page`, `phone_page`, `new_page`)."""
    return _LOGS[page]


def wait_until(page: Page, condition: Callable[[], bool], timeout_ms: int = ACTION_TIMEOUT_MS) -> None:
    """Waits until `condition()` holds (`lambda: log.page_errors`): the page's events reach the log while
    Playwright waits, not while Python runs, so a log read right after a DOM wait may not have them all yet."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not within {timeout_ms} ms: {condition}")
        page.wait_for_timeout(20)


def fail_on_outside_requests(log: PageLog) -> None:
    """Fails the test when its page still has outside requests (run at the fixture's teardown)."""
    if log.outside_requests:
        pytest.fail(
            "requests left the page (clear log.outside_requests if the test provoked them): "
            + ", ".join(log.outside_requests),
            pytrace=False,
        )


class NewPage(Protocol):
    """`new_page(site_root=None, **context_options)`: a watched page; see the module's docstring."""

    def __call__(self, site_root: Path | None = None, **context_options: Any) -> Page: ...


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Headless Chromium (the system's, by its path), one per process for this package's tests (not the session:
    asyncio.run() cannot run while Playwright's sync API is started, and other tests of the worker use it)."""
    if sync_playwright is None:
        missing(PLAYWRIGHT_MISSING)
    executable = chromium_path()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, headless=True, args=list(CHROMIUM_ARGS), timeout=LAUNCH_TIMEOUT_MS
        )
        yield launched
        launched.close()


@pytest.fixture
def new_page(browser: Browser, tmp_path: Path) -> Iterator[NewPage]:
    """A factory of watched pages, each in a new context (DESKTOP's options, updated by the call's); all closed
    after the test, which fails if any of them still has outside requests."""
    opened: list[tuple[BrowserContext, PageLog]] = []

    def open_page(site_root: Path | None = None, **context_options: Any) -> Page:
        context = browser.new_context(**{**DESKTOP, **context_options})
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
        log = PageLog(site_root=(site_root or tmp_path).resolve())
        log.watch(context)
        opened.append((context, log))
        page = context.new_page()
        _LOGS[page] = log
        return page

    yield open_page
    for context, _ in opened:
        context.close()
    for _, log in opened:
        fail_on_outside_requests(log)


@pytest.fixture
def page(new_page: NewPage) -> Page:
    """A watched 1280×800 desktop page (`log_of(page)`, or the fixture `page_log`)."""
    return new_page()


@pytest.fixture
def page_log(page: Page) -> PageLog:
    """The log of the fixture `page`."""
    return log_of(page)


@pytest.fixture
def phone_page(new_page: NewPage) -> Page:
    """A watched phone page: 390×844 CSS pixels, 3× density, mobile (meta viewport honoured), touch."""
    return new_page(**PHONE)


@dataclass(frozen=True)
class AxeViolation:
    """One axe-core rule that fails, with a few of the elements it fails on."""

    id: str
    impact: str
    help: str
    targets: tuple[str, ...]  # CSS selectors, at most 5
    count: int  # elements in all
    help_url: str

    def __str__(self) -> str:
        more = f" (+{self.count - len(self.targets)} more)" if self.count > len(self.targets) else ""
        return f"{self.id} [{self.impact}] {self.help}: {', '.join(self.targets)}{more} — {self.help_url}"


_AXE_RUN = """async ([disabled]) => {
    const rules = Object.fromEntries(disabled.map((id) => [id, {enabled: false}]));
    // preload: false: axe would re-fetch every stylesheet by XHR, which file:// forbids (console errors); only
    // the experimental css-orientation-lock rule, not run by default, needs it
    const results = await axe.run(document, {resultTypes: ["violations"], preload: false, rules});
    return results.violations.map((v) => ({
        id: v.id, impact: v.impact || "", help: v.help, help_url: v.helpUrl, count: v.nodes.length,
        targets: v.nodes.slice(0, 5).map((node) => node.target.map(String).join(" >>> ")),
    }));
}"""


def axe_violations(
    page: Page, impacts: Sequence[str] = ("serious", "critical"), disable: Sequence[str] = ()
) -> list[AxeViolation]:
    """axe-core's violations on the page as it is now, of the given impacts (axe's default rules, minus the rule
    ids in `disable`): `assert not (found := axe_violations(page)), "\\n".join(map(str, found))`."""
    unknown = set(impacts) - set(IMPACTS)
    if unknown:
        raise ValueError(f"unknown axe impacts {sorted(unknown)}: axe's are {IMPACTS}")
    script = axe_script()
    if not page.evaluate("typeof window.axe === 'object'"):  # once per document
        page.evaluate(_axe_source(script))
    found = page.evaluate(_AXE_RUN, [list(disable)])
    return [
        AxeViolation(**{**violation, "targets": tuple(violation["targets"])})
        for violation in found
        if violation["impact"] in impacts
    ]


_AXE_SOURCES: dict[Path, str] = {}


def _axe_source(script: Path) -> str:
    if script not in _AXE_SOURCES:
        # run as a script in the page's main world (window.axe); its completion value is not sent back
        _AXE_SOURCES[script] = script.read_text(encoding="utf-8") + "\n;void 0;"
    return _AXE_SOURCES[script]


__all__ = [
    "DESKTOP",
    "PHONE",
    "AxeViolation",
    "NewPage",
    "PageLog",
    "axe_violations",
    "chromium_path",
    "expect",
    "fail_on_outside_requests",
    "log_of",
    "missing",
    "wait_until",
]
