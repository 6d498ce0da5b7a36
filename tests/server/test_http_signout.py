"""Signing out ends the session everywhere: a copy of the cookie taken before is a new,
signed-out session in every server process on the database, before and after a restart, and a
form posted with it (and its CSRF token) is refused and writes nothing. A sign-out the store
cannot record says so and ends nothing; a store that cannot be read signs nobody in."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from fuzz.kit import asgi_client
from stopline.server.app import create_app
from stopline.store import open_store, raw

from .conftest import Demo, add_tokens
from .httphelp import Server, csrf_of, nothing_written, sign_in

CHECKOUT = "service-health/checkout-api"
SECRET = "the secret every server of this test shares"


def signed_in_copy(server: Server, token: str) -> tuple[httpx.Client, str, str]:
    """A browser signed in on ``server``, a copy of its session cookie, and the CSRF token of
    that session (as whoever copied the cookie would have it from a page)."""
    browser = sign_in(server, token)
    page = browser.get("/inbox")
    assert page.status_code == 200 and 'data-testid="whoami-name">alice<' in page.text
    cookie = browser.cookies.get("stopline_session")
    assert cookie
    return browser, cookie, csrf_of(page.text)


def refused(server: Server, url: str, cookie: str, csrf: str, item_id: str) -> None:
    """The copied cookie is a signed-out session on ``server``: the inbox sends it to sign in,
    and a command posted with it and its CSRF token is refused, writing nothing."""
    with server.client(cookies={"stopline_session": cookie}) as copy:
        page = copy.get("/inbox")
        assert page.status_code == 303 and page.headers["location"] == "/signin"
        with nothing_written(url):
            form = {"csrf": csrf, "reason": "with a copy of a signed-out cookie"}
            response = copy.post(f"/items/{item_id}/close", data=form)
            assert response.status_code == 403 and "Nothing was done" in response.text
            assert copy.post("/inbox/bulk", data={"csrf": csrf}).status_code == 403


def test_a_copy_of_a_signed_out_cookie_is_signed_out_in_every_server(
    demo_url: str, start_server: Callable[..., Server]
) -> None:
    """On SQLite and PostgreSQL: two servers on one database (one secret). A cookie copied
    while signed in works on both; once its browser signs out on the first, the copy is
    signed out on both, and on a server started after the sign-out (a restart)."""
    demo = add_tokens(Demo(demo_url))
    first = start_server(demo_url, STOPLINE_SECRET=SECRET)
    second = start_server(demo_url, STOPLINE_SECRET=SECRET)
    item = demo.item(CHECKOUT)
    browser, cookie, csrf = signed_in_copy(first, demo.tokens["alice"])
    with second.client(cookies={"stopline_session": cookie}) as copy:
        assert 'data-testid="whoami-name">alice<' in copy.get("/inbox").text
    out = browser.post("/signout", data={"csrf": csrf})
    assert out.status_code == 303 and out.headers["location"] == "/signin"
    assert browser.get("/inbox").status_code == 303
    for server in (first, second):
        refused(server, demo_url, cookie, csrf, item.id)
    first.stop()
    second.stop()
    restarted = start_server(demo_url, STOPLINE_SECRET=SECRET)
    refused(restarted, demo_url, cookie, csrf, item.id)
    again = sign_in(restarted, demo.tokens["alice"])  # signing in again is a new session
    assert 'data-testid="whoami-name">alice<' in again.get("/inbox").text


def test_a_read_only_server_signs_out_for_good(
    demo: Demo, start_server: Callable[..., Server]
) -> None:
    """A read-only server (commands refused) still records a sign-out: it is the session's
    record, not a change to any item, and a copy of the cookie is signed out there too."""
    server = start_server(demo.url, STOPLINE_SECRET=SECRET, STOPLINE_READ_ONLY="1")
    browser, cookie, csrf = signed_in_copy(server, demo.tokens["alice"])
    assert browser.post("/signout", data={"csrf": csrf}).status_code == 303
    refused(server, demo.url, cookie, csrf, demo.item(CHECKOUT).id)


def run_sql(url: str, statement: str) -> None:
    """One statement on the database behind ``url``, as a database writer would run it."""
    store = open_store(url)
    try:
        with raw.writing(store) as cur:
            cur.execute(statement)
    finally:
        store.close()


def test_a_sign_out_the_store_cannot_record_ends_nothing_and_says_so(demo: Demo) -> None:
    """When the sign-out cannot be written, the answer says the session still works (503), and
    it does; once it can be written, signing out again ends it."""
    run_sql(
        demo.url,
        "CREATE TRIGGER no_signouts BEFORE INSERT ON ended_sessions"
        " BEGIN SELECT RAISE(ABORT, 'read-only'); END",
    )
    with asgi_client(create_app(demo.url, secret=SECRET)) as browser:
        page = browser.get("/signin")
        signed = browser.post(
            "/signin", data={"csrf": csrf_of(page.text), "token": demo.tokens["alice"]}
        )
        assert signed.status_code == 303
        csrf = csrf_of(browser.get("/inbox").text)
        out = browser.post("/signout", data={"csrf": csrf})
        assert out.status_code == 503 and "still works" in out.text
        assert 'data-testid="whoami-name">alice<' in browser.get("/inbox").text
        run_sql(demo.url, "DROP TRIGGER no_signouts")
        assert browser.post("/signout", data={"csrf": csrf}).status_code == 303
        assert browser.get("/inbox").status_code == 303


def test_a_store_that_cannot_say_whether_a_session_ended_signs_nobody_in(demo: Demo) -> None:
    """Fail closed: when the table of signed-out sessions cannot be read, a signed-in cookie
    reads no inbox (an error, not the page) and its forms do nothing."""
    app = create_app(demo.url, secret=SECRET)
    with asgi_client(app) as browser:
        page = browser.get("/signin")
        form = {"csrf": csrf_of(page.text), "token": demo.tokens["alice"]}
        assert browser.post("/signin", data=form).status_code == 303
        inbox = browser.get("/inbox")
        csrf = csrf_of(inbox.text)
        run_sql(demo.url, "ALTER TABLE ended_sessions RENAME TO ended_sessions_away")
        item = demo.item(CHECKOUT)
        with nothing_written(demo.url):
            answer = browser.get("/inbox")
            assert answer.status_code == 500 and "alice" not in answer.text
            form = {"csrf": csrf, "reason": "with the store unreadable"}
            assert browser.post(f"/items/{item.id}/close", data=form).status_code == 500
