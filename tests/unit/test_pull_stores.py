"""`fair_forge_core.pull_stores`: the rules `fair-forge pull` applies without I/O (the waits
before a retry, the redaction, the environment, the pages); the CLI end to end against the fake
stores is tests/cli/test_cli_pull.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from fair_forge_core.pull_stores import (
    MAX_RETRY_WAIT,
    PullInputError,
    Query,
    connection,
    iso_utc,
    output,
    page_request,
    parse_instant,
    read_page,
    redact,
    retry_wait,
)

NOW = datetime(2026, 12, 3, 2, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "attempt", "wait"),
    [
        ("1", 0, 1.0),
        ("0.5", 3, 0.5),
        ("Thu, 03 Dec 2026 02:00:07 GMT", 0, 7.0),  # an HTTP date: its distance from now
        ("Thu, 03 Dec 2026 01:00:00 GMT", 0, 0.0),  # in the past: no wait, never a negative one
        ("3600", 0, MAX_RETRY_WAIT),  # bounded, whatever the store asks
        ("-5", 0, 0.0),
        ("nan", 0, 1.0),
        (None, 0, 1.0),  # none: 1, 2, 4, ... s
        ("soon", 2, 4.0),
        (None, 10, MAX_RETRY_WAIT),
    ],
)
def test_retry_wait(header: str | None, attempt: int, wait: float) -> None:
    assert retry_wait(header, attempt, NOW) == wait


def test_redact_hides_every_secret_longest_first_and_a_urls_password() -> None:
    text = "key sk-1234 and sk-1234567 at https://me:pw@host/x and https://host/y"
    assert redact(text, ["sk-1234", "sk-1234567", ""]) == "key *** and *** at https://***@host/x and https://host/y"


def test_instants_need_their_offset_and_are_sent_in_utc() -> None:
    assert iso_utc(parse_instant("2026-12-03T01:30:00+01:00")) == "2026-12-03T00:30:00Z"
    with pytest.raises(PullInputError, match="no UTC offset"):
        parse_instant("2026-12-03T01:30:00")
    with pytest.raises(PullInputError, match="not an ISO 8601"):
        parse_instant("last night")


def test_the_environment_gives_the_base_url_and_the_auth() -> None:
    phoenix = connection("phoenix", {"PHOENIX_COLLECTOR_ENDPOINT": "http://px:6006/v1/traces"})
    assert (phoenix.base_url, dict(phoenix.headers)) == ("http://px:6006", {})
    assert (
        connection("phoenix", {"PHOENIX_BASE_URL": "http://a/", "PHOENIX_COLLECTOR_ENDPOINT": "http://b"}).base_url
        == "http://a"
    )
    langsmith = connection("langsmith", {"LANGSMITH_API_KEY": "k", "LANGSMITH_ENDPOINT": "https://eu.smith/api/v1/"})
    assert (langsmith.base_url, dict(langsmith.headers), langsmith.secrets) == (
        "https://eu.smith",
        {"x-api-key": "k"},
        ("k",),
    )
    langfuse = connection("langfuse", {"LANGFUSE_PUBLIC_KEY": "pk", "LANGFUSE_SECRET_KEY": "sk"})
    assert langfuse.base_url == "https://cloud.langfuse.com"
    assert dict(langfuse.headers) == {"Authorization": "Basic cGs6c2s="}
    with pytest.raises(PullInputError, match="must be an http:// or https:// URL"):
        connection("langsmith", {"LANGSMITH_API_KEY": "k", "LANGSMITH_ENDPOINT": "file:///etc/passwd"})


def test_the_cursor_of_each_store() -> None:
    assert read_page("langfuse", {"data": [{}, {}], "meta": {"cursor": "c2"}}) == (2, "c2")
    assert read_page("langfuse", {"data": [], "meta": {}}) == (0, None)
    assert read_page("phoenix", {"data": [{}], "next_cursor": None}) == (1, None)
    assert read_page("langsmith", {"runs": [{}], "cursors": {"next": "n"}}) == (1, "n")
    assert read_page("langsmith", {"runs": [], "cursors": {"next": "n"}}) == (0, None)  # no runs: the last page
    with pytest.raises(ValueError, match="not a phoenix page: next_cursor: Field required"):
        read_page("phoenix", {"data": []})
    assert output("langsmith", [{"runs": [1, 2]}, {"runs": [3]}]) == [1, 2, 3]


def test_the_next_page_keeps_the_filters() -> None:
    query = Query("phoenix", project="a/b", filters=("k:v",), page_size=5)
    conn = connection("phoenix", {"PHOENIX_BASE_URL": "http://px"})
    request = page_request(query, conn, "c/2")
    assert request.url == "http://px/v1/projects/a%2Fb/spans/otlpv1?limit=5&attribute=k%3Av&cursor=c%2F2"
