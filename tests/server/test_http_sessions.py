"""Who a request is: the session a cookie holds (its age, a new one at each sign-in, its
flags), and an actor whose roles mix the agent's with a person's. Each refusal writes nothing."""

from __future__ import annotations

import secrets
from collections.abc import Callable

from fuzz.kit import asgi_client
from stopline.registrar import hash_token
from stopline.server.app import create_app

from .conftest import Demo
from .httphelp import (
    Server,
    actor_with_token,
    csrf_of,
    nothing_written,
    sign_in,
    signed_session,
)

CHECKOUT = "service-health/checkout-api"


SECRET = "a secret of this test alone"


def _cookie_signed(hours_ago: float, token: str) -> str:
    """A session cookie of ``token``'s holder as the server with :data:`SECRET` signs one,
    dated ``hours_ago``."""
    doc = {"sid": secrets.token_urlsafe(24), "th": hash_token(token)}
    return signed_session(SECRET, doc, hours_ago)


def test_a_session_cookie_older_than_its_age_signs_nobody_in(
    demo: Demo, start_server: Callable[..., Server]
) -> None:
    """A cookie the server itself signed lasts 12 hours: one signed 13 hours ago is a new,
    signed-out session, though its signature is the server's (the same cookie dated 11 hours
    ago signs its holder in)."""
    server = start_server(demo.url, STOPLINE_SECRET=SECRET)
    recent = _cookie_signed(11, demo.tokens["alice"])
    with server.client(cookies={"stopline_session": recent}) as client:
        page = client.get("/inbox")
        assert page.status_code == 200 and 'data-testid="whoami-name">alice<' in page.text
    stale = _cookie_signed(13, demo.tokens["alice"])
    with nothing_written(demo.url), server.client(cookies={"stopline_session": stale}) as client:
        response = client.get("/inbox")
        assert response.status_code == 303 and response.headers["location"] == "/signin"


def test_signing_in_starts_a_new_session(demo: Demo, live: Server) -> None:
    """The session a visitor had before signing in ends there (a new id: no fixation), so a
    form token taken from the sign-in page, by whoever saw it, is void once they are in."""
    browser = live.client()
    before = csrf_of(browser.get("/signin").text)
    signed = browser.post("/signin", data={"csrf": before, "token": demo.tokens["alice"]})
    assert signed.status_code == 303
    item = demo.item(CHECKOUT)
    with nothing_written(demo.url):
        form = {"csrf": before, "reason": "a token from before signing in"}
        response = browser.post(f"/items/{item.id}/close", data=form)
        assert response.status_code == 403 and "Nothing was done" in response.text
    page = browser.get(f"/items/{item.id}")
    assert page.status_code == 200 and csrf_of(page.text) != before


def test_a_session_cookie_over_https_is_secure(demo: Demo) -> None:
    """Served over HTTPS (the application in process, addressed as https://), the session
    cookie carries Secure even without STOPLINE_COOKIE_SECURE; over plain HTTP it cannot."""
    with asgi_client(create_app(demo.url)) as client:
        secure = client.get("https://testserver/signin").headers["set-cookie"].lower()
        plain = client.get("http://testserver/signin").headers["set-cookie"].lower()
    assert "; secure" in secure and "httponly" in secure
    assert "; secure" not in plain


def test_an_actor_holding_the_agent_role_commands_nothing_over_http(
    demo: Demo, live: Server
) -> None:
    """An actor registered with the agent role beside a person's role (approver) is an agent
    to the operator API and the inbox: 403 for every command, no forms (an agent acts
    through ``stopline mcp``)."""
    token = actor_with_token(demo.url, "mixed", ["agent", "approver"])
    item = demo.item(CHECKOUT)
    digest = item.doc("proposal")["digest"]
    with nothing_written(demo.url):
        with live.client(token) as api:
            response = api.post(f"/api/items/{item.id}/approve", json={"proposal": digest})
            assert response.status_code == 403 and response.json()["error"] == "forbidden"
        page = sign_in(live, token).get(f"/items/{item.id}")
        assert page.status_code == 200 and 'data-testid="action-' not in page.text
