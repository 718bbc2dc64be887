"""The browser fixtures of conftest.py work, and each can fail: on small static pages of this file's own.

A click changes the DOM and a local link navigates, quietly; requests that would leave the page (fetch, an
image, a WebSocket, a file outside the site) are aborted and recorded; axe-core reports serious and critical
violations, and none on a clean page; uncaught exceptions and console errors are recorded; the phone page is a
phone. And two facts of Chromium on file:// that the static site is built around: fetch() of a sibling JSON file
is blocked (data comes in a <script>), and a CSP does not keep axe out.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import (
    NewPage,
    PageLog,
    axe_violations,
    expect,
    fail_on_outside_requests,
    log_of,
    missing,
    wait_until,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

VIEWPORT_META = '<meta name="viewport" content="width=device-width, initial-scale=1">'
HEAD = '<!doctype html><html lang="en"><head><meta charset="utf-8">{extra}<title>{title}</title></head>'


def write_page(directory: Path, name: str, body: str, *, title: str = "Smoke test", extra: str = "") -> Path:
    """A static page `name` in `directory`: a valid head (language, title), then `body`."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(HEAD.format(title=title, extra=extra) + f"<body>{body}</body></html>", encoding="utf-8")
    return path


CLEAN_BODY = """<main>
  <h1>Results</h1>
  <p id="status">Nothing shown yet.</p>
  <button type="button" id="show">Show the details</button>
  <p><a href="other.html">The other page</a></p>
  <label for="filter">Filter</label> <input id="filter" type="search">
  <img src="dot.svg" alt="A blue dot">
</main>
<script src="app.js"></script>"""
APP_JS = """document.getElementById("show").addEventListener("click", () => {
  const item = document.createElement("li");
  item.textContent = "3 passed, 1 failed";
  const list = document.createElement("ul");
  list.id = "details";
  list.append(item);
  document.querySelector("main").append(list);
  document.getElementById("status").textContent = "Details shown.";
});"""
DOT_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><circle cx="4" cy="4" r="4" fill="blue"/></svg>'


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A clean two-page site in tmp_path/site: index.html (a button, a link, a form field, an image, a script)."""
    root = tmp_path / "site"
    index = write_page(root, "index.html", CLEAN_BODY)
    write_page(root, "other.html", "<main><h1>Other</h1><p><a href='index.html'>Back</a></p></main>", title="Other")
    (root / "app.js").write_text(APP_JS, encoding="utf-8")
    (root / "dot.svg").write_text(DOT_SVG, encoding="utf-8")
    return index


def test_a_click_changes_the_dom_and_a_local_link_navigates_quietly(page: Page, page_log: PageLog, site: Path) -> None:
    page.goto(site.as_uri())
    expect(page.locator("#details")).to_have_count(0)
    page.get_by_role("button", name="Show the details").click()
    expect(page.locator("#details li")).to_have_text("3 passed, 1 failed")
    expect(page.locator("#status")).to_have_text("Details shown.")
    assert page.evaluate("document.querySelector('img').naturalWidth") == 8  # the local image loaded
    page.get_by_role("link", name="The other page").click()
    expect(page).to_have_title("Other")
    assert page.url == (site.parent / "other.html").as_uri()
    assert not page_log.problems(), page_log.problems()


def test_the_desktop_page_is_1280_by_800(page: Page, site: Path) -> None:
    page.goto(site.as_uri())
    assert page.evaluate("[innerWidth, innerHeight, matchMedia('(pointer: coarse)').matches]") == [1280, 800, False]


def test_the_phone_page_is_a_phone(phone_page: Page, site: Path) -> None:
    write_page(site.parent, "phone.html", "<main><h1>Phone</h1></main>", extra=VIEWPORT_META)
    phone_page.goto((site.parent / "phone.html").as_uri())
    size = phone_page.evaluate("[innerWidth, devicePixelRatio, matchMedia('(pointer: coarse)').matches]")
    assert size == [390, 3, True]
    assert not log_of(phone_page).problems(), log_of(phone_page).problems()


LEAKY_BODY = """<main>
  <h1>Leaky</h1>
  <img src="http://127.0.0.1:9/x.png" alt="a remote image">
  <p id="fetch">pending</p>
  <p id="socket">pending</p>
</main>
<script>
  fetch("https://example.com/x")
    .then(() => { document.getElementById("fetch").textContent = "reached"; })
    .catch(() => { document.getElementById("fetch").textContent = "blocked"; });
  const socket = new WebSocket("wss://example.com/socket");
  socket.onclose = () => { document.getElementById("socket").textContent = "closed"; };
</script>"""


def test_requests_that_would_leave_the_page_are_aborted_and_recorded(
    page: Page, page_log: PageLog, tmp_path: Path
) -> None:
    page.goto(write_page(tmp_path, "leaky.html", LEAKY_BODY).as_uri())
    expect(page.locator("#fetch")).to_have_text("blocked")
    expect(page.locator("#socket")).to_have_text("closed")
    page.wait_for_function("document.querySelector('img').complete")
    wait_until(page, lambda: len(page_log.outside_requests) >= 3)
    assert sorted(page_log.outside_requests) == [
        "http://127.0.0.1:9/x.png",
        "https://example.com/x",
        "wss://example.com/socket",
    ]
    assert page.evaluate("document.querySelector('img').naturalWidth") == 0  # aborted, not loaded
    page_log.outside_requests.clear()  # provoked: the fixture's teardown would fail the test otherwise


def test_a_page_blocked_by_its_own_csp_still_has_its_attempts_recorded(
    page: Page, page_log: PageLog, tmp_path: Path
) -> None:
    csp = '<meta http-equiv="Content-Security-Policy" content="default-src \'self\'">'
    body = '<main><h1>CSP</h1><img src="https://example.com/pixel.png" alt="a remote image"></main>'
    page.goto(write_page(tmp_path, "csp.html", body, extra=csp).as_uri())
    page.wait_for_function("document.querySelector('img').complete")
    wait_until(page, lambda: bool(page_log.outside_requests and page_log.console_errors))
    assert page_log.outside_requests == ["https://example.com/pixel.png"]
    assert any("Content Security Policy" in error for error in page_log.console_errors), page_log.console_errors
    page_log.outside_requests.clear()


def test_a_file_outside_the_site_is_an_outside_request(new_page: NewPage, tmp_path: Path) -> None:
    (tmp_path / "secret.js").write_text("document.title = 'leaked';", encoding="utf-8")
    index = write_page(
        tmp_path / "site", "index.html", '<main><h1>Site</h1></main><script src="../secret.js"></script>'
    )
    page = new_page(site_root=index.parent)
    page.goto(index.as_uri())
    expect(page).to_have_title("Smoke test")  # the script outside the site did not run
    assert log_of(page).outside_requests == [(tmp_path / "secret.js").resolve().as_uri()]
    log_of(page).outside_requests.clear()


def test_outside_requests_left_at_the_end_fail_the_test(tmp_path: Path) -> None:
    log = PageLog(site_root=tmp_path)
    fail_on_outside_requests(log)  # none: passes
    log.outside_requests.append("https://example.com/x")
    with pytest.raises(pytest.fail.Exception, match=r"requests left the page.*https://example\.com/x"):
        fail_on_outside_requests(log)


def test_page_errors_console_errors_and_missing_files_are_recorded(
    page: Page, page_log: PageLog, tmp_path: Path
) -> None:
    body = """<main><h1>Errors</h1><img src="missing.png" alt="missing"></main>
<script>console.error("something is off");</script>
<script>throw new TypeError("boom");</script>
<script>Promise.reject(new Error("rejected"));</script>"""
    page.goto(write_page(tmp_path, "errors.html", body).as_uri())
    page.wait_for_function("document.querySelector('img').complete")
    wait_until(page, lambda: len(page_log.page_errors) >= 2 and len(page_log.failed_files) >= 1)
    assert page_log.page_errors == ["TypeError: boom", "Error: rejected"]
    assert any(error.startswith("something is off") for error in page_log.console_errors), page_log.console_errors
    assert page_log.failed_files == [f"{(tmp_path / 'missing.png').as_uri()} (net::ERR_FILE_NOT_FOUND)"]
    assert not page_log.outside_requests


def test_file_urls_cannot_fetch_sibling_files_so_data_comes_in_a_script(
    page: Page, page_log: PageLog, tmp_path: Path
) -> None:
    (tmp_path / "data.json").write_text('{"runs": 2}', encoding="utf-8")
    (tmp_path / "data.js").write_text("window.DATA = {runs: 2};", encoding="utf-8")
    body = """<main><h1>Data</h1><p id="json">pending</p></main><script src="data.js"></script>
<script>fetch("data.json").then(() => { json.textContent = "fetched"; }).catch(() => { json.textContent = "blocked"; });</script>"""
    page.goto(write_page(tmp_path, "data.html", body).as_uri())
    expect(page.locator("#json")).to_have_text("blocked")  # Chromium: origin "null", CORS
    wait_until(page, lambda: bool(page_log.failed_files))
    assert page.evaluate("window.DATA.runs") == 2  # a <script src> of the same directory loads
    assert page_log.failed_files == [f"{(tmp_path / 'data.json').as_uri()} (net::ERR_FAILED)"]
    assert not page_log.outside_requests


def test_axe_finds_nothing_on_a_clean_page(page: Page, site: Path) -> None:
    page.goto(site.as_uri())
    page.get_by_role("button", name="Show the details").click()
    found = axe_violations(page, impacts=("minor", "moderate", "serious", "critical"))
    assert not found, "\n".join(map(str, found))
    assert not log_of(page).problems(), log_of(page).problems()


INACCESSIBLE_BODY = """<main>
  <h1>Inaccessible</h1>
  <img src="dot.svg">
  <input type="text" id="unlabelled">
  <p style="color: #bbb; background: #fff">Grey on white</p>
</main>"""


def test_axe_reports_serious_and_critical_violations(page: Page, tmp_path: Path) -> None:
    (tmp_path / "dot.svg").write_text(DOT_SVG, encoding="utf-8")
    page.goto(write_page(tmp_path, "bad.html", INACCESSIBLE_BODY).as_uri())
    found = {violation.id: violation for violation in axe_violations(page)}
    assert set(found) == {"image-alt", "label", "color-contrast"}, "\n".join(map(str, found.values()))
    assert (found["image-alt"].impact, found["label"].impact, found["color-contrast"].impact) == (
        "critical",
        "critical",
        "serious",
    )
    assert found["label"].targets == ("#unlabelled",)
    assert "image-alt [critical]" in str(found["image-alt"])
    critical = {violation.id for violation in axe_violations(page, impacts=("critical",))}
    assert critical == {"image-alt", "label"}
    assert {v.id for v in axe_violations(page, disable=["color-contrast"])} == {"image-alt", "label"}
    assert not log_of(page).problems(), log_of(page).problems()  # axe itself made no request


def test_axe_runs_on_a_page_whose_csp_forbids_inline_scripts(page: Page, tmp_path: Path) -> None:
    csp = '<meta http-equiv="Content-Security-Policy" content="default-src \'self\'">'
    page.goto(write_page(tmp_path, "strict.html", "<main><h1>Strict</h1><img src='x.svg'></main>", extra=csp).as_uri())
    assert [violation.id for violation in axe_violations(page)] == ["image-alt"]


def test_axe_rejects_an_unknown_impact(page: Page) -> None:
    with pytest.raises(ValueError, match="unknown axe impacts"):
        axe_violations(page, impacts=("severe",))


def test_a_missing_tool_skips_locally_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is not installed"):
        missing("chromium is not installed")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must have it"):
        missing("chromium is not installed")
