"""Who a request is, at the edges: how a bearer header may be written, a session cookie at
its length limit or holding fields of the wrong type, a session that is not sent again, a
token or proxy name with spaces around it, an actor no longer active, and a form token of a
session that was never sent. Each refusal writes nothing."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request

from stopline.controller import Controller
from stopline.core.records import Actor
from stopline.registrar import hash_token
from stopline.server.access import bearer_token, can_command, command_roles
from stopline.server.settings import Settings
from stopline.server.state import Shared
from stopline.store import open_store
from stopline.web.forms import action_forms, approve_effect, tone
from stopline.web.session import MAX_COOKIE, Session, csrf_ok, csrf_token, proxy_actor

from .conftest import Demo
from .httphelp import Server, csrf_of, nothing_written, sign_in, signed_session

CHECKOUT = "service-health/checkout-api"  # restart_service: two approvals
MSG_1041 = "support-triage/msg-1041"  # send_reply: one approval
SECRET = "a secret of this test alone"
SIGNED_IN_AS_ALICE = 'data-testid="whoami-name">alice<'


def _signed(doc: Any) -> str:
    return signed_session(SECRET, doc)


def _cookie_of_length(lengths: range, token: str) -> str:
    """A sound session cookie of ``token``'s holder with one of ``lengths`` characters (an
    extra field of random text pads it; the server reads only ``sid`` and ``th``). Its text
    is base64, which has no length of the form 4k + 1, so a range may be needed."""
    for size in range(lengths.start // 2, lengths.start):
        for _ in range(8):  # compression makes the length of one size vary by a few
            pad = secrets.token_urlsafe(size)[:size]
            doc = {"sid": secrets.token_urlsafe(24), "th": hash_token(token), "pad": pad}
            cookie = _signed(doc)
            if len(cookie) in lengths:
                return cookie
            if len(cookie) < lengths.start - 8:
                break
    raise AssertionError(f"no padding made a cookie of {lengths} characters")


def test_the_bearer_scheme_is_read_in_any_case_and_spaces_around_the_token_do_not_count(
    demo: Demo, live: Server
) -> None:
    token = demo.tokens["alice"]
    assert bearer_token(f"bearer {token}") == token
    assert bearer_token(f"Bearer   {token}  ") == token
    for header in ("Bearer", f"Basic {token}", f"Bearer{token}", "Bearer    "):
        assert bearer_token(header) is None, header
    with nothing_written(demo.url):
        for header in (f"bearer {token}", f"BEARER {token}", f"Bearer  {token}"):
            me = live.client().get("/api/me", headers={"Authorization": header})
            assert me.status_code == 200 and me.json()["actor"] == "alice", header
        refused = live.client().get("/api/me", headers={"Authorization": f"Basic {token}"})
        assert refused.status_code == 401


def test_an_actor_no_longer_active_commands_nothing_and_is_offered_no_form(demo: Demo) -> None:
    """Whatever its roles, an inactive actor may not command and sees no action form, though
    the same actor active would (the core refuses it as well: this is the shell's own check)."""
    store = open_store(demo.url)
    try:
        item = Controller(store).item(CHECKOUT)
        assert item is not None
        policy = store.policy(item.automation)
        roles = command_roles(store)
        active = Actor("alice", frozenset({"approver", "operator"}))
        gone = Actor("alice", frozenset({"approver", "operator"}), active=False)
        now = datetime.now(UTC)
        assert can_command(active, roles) and not can_command(gone, roles)
        assert not can_command(Actor("bot", frozenset({"agent", "approver"})), roles)
        assert [f.name for f in action_forms(item, active, policy, now)]
        assert action_forms(item, gone, policy, now) == []
    finally:
        store.close()


def test_a_session_cookie_is_read_up_to_its_length_limit_and_not_a_character_more(
    demo: Demo, start_server: Callable[..., Server]
) -> None:
    server = start_server(demo.url, STOPLINE_SECRET=SECRET)
    at_limit = _cookie_of_length(range(MAX_COOKIE, MAX_COOKIE + 1), demo.tokens["alice"])
    with server.client(cookies={"stopline_session": at_limit}) as client:
        page = client.get("/inbox")
        assert page.status_code == 200 and SIGNED_IN_AS_ALICE in page.text
    over = _cookie_of_length(range(MAX_COOKIE + 1, MAX_COOKIE + 4), demo.tokens["alice"])
    with nothing_written(demo.url), server.client(cookies={"stopline_session": over}) as client:
        response = client.get("/inbox")
        assert response.status_code == 303 and response.headers["location"] == "/signin"


def test_a_signed_cookie_whose_fields_have_the_wrong_type_is_a_new_signed_out_session(
    demo: Demo, start_server: Callable[..., Server]
) -> None:
    """A cookie with the server's own signature (a secret leaked, or an older format) whose
    session id or token hash is not text signs nobody in and breaks nothing."""
    server = start_server(demo.url, STOPLINE_SECRET=SECRET)
    th = hash_token(demo.tokens["alice"])
    odd = [
        {"sid": 12345, "th": th},
        {"sid": ["a", "list"], "th": th},
        {"th": th},
        {"sid": secrets.token_urlsafe(24), "th": [th]},
        {"sid": secrets.token_urlsafe(24), "th": {"hash": th}},
        ["not", "a", "mapping"],
    ]
    with nothing_written(demo.url):
        for doc in odd:
            with server.client(cookies={"stopline_session": _signed(doc)}) as client:
                response = client.get("/inbox")
                assert response.status_code == 303, (doc, response.status_code)
                assert response.headers["location"] == "/signin"
                assert client.get("/signin").status_code == 200
    sound = _signed({"sid": secrets.token_urlsafe(24), "th": th})
    with server.client(cookies={"stopline_session": sound}) as client:
        assert SIGNED_IN_AS_ALICE in client.get("/inbox").text


def test_a_session_is_sent_once_and_its_age_runs_from_sign_in(demo: Demo, live: Server) -> None:
    """The cookie is set when a session starts (the first visit, signing in, signing out),
    never again on later requests: a session is not kept alive by use, it ends 12 hours
    after it began."""
    browser = live.client()
    first = browser.get("/signin")
    assert "stopline_session=" in first.headers.get("set-cookie", "")
    signed = browser.post(
        "/signin", data={"csrf": csrf_of(first.text), "token": demo.tokens["alice"]}
    )
    assert signed.status_code == 303 and "stopline_session=" in signed.headers["set-cookie"]
    for path in ("/inbox", f"/items/{demo.item(CHECKOUT).id}", "/signin", "/stuck"):
        response = browser.get(path)
        assert response.status_code == 200, path
        assert "set-cookie" not in response.headers, path


def test_a_token_pasted_with_spaces_around_it_signs_in(demo: Demo, live: Server) -> None:
    browser = live.client()
    page = browser.get("/signin")
    token = f"  {demo.tokens['alice']}\n"
    signed = browser.post("/signin", data={"csrf": csrf_of(page.text), "token": token})
    assert signed.status_code == 303 and signed.headers["location"] == "/inbox"
    assert SIGNED_IN_AS_ALICE in browser.get("/inbox").text


def test_a_proxy_header_naming_an_actor_with_spaces_around_the_name_is_that_actor(
    demo: Demo,
) -> None:
    """HTTP/1.1 parsers drop spaces around a header's value, but an ASGI server behind a
    proxy may pass them on: the name is read without them, and a name the registry does not
    know is nobody."""
    store = open_store(demo.url)
    try:
        shared = Shared(store, Settings(trust_proxy_header="X-Remote-User"))

        def named(value: bytes) -> Actor | None:
            scope = {
                "type": "http",
                "method": "GET",
                "path": "/inbox",
                "headers": [(b"x-remote-user", value)],
            }
            return proxy_actor(Request(scope), shared)

        found = named(b"  alice \t")
        assert found is not None and found.name == "alice"
        assert named(b"nobody") is None and named(b"") is None
        unset = Shared(store, Settings())
        scope = {
            "type": "http",
            "method": "GET",
            "path": "/",
            "headers": [(b"x-remote-user", b"alice")],
        }
        assert proxy_actor(Request(scope), unset) is None
    finally:
        store.close()


def test_a_form_token_of_a_session_never_sent_to_the_browser_is_refused(demo: Demo) -> None:
    """A fresh session (made for this very request) has sent no form yet, so no form token
    can be its own, even one that matches its id; once sent, the same token is good."""
    store = open_store(demo.url)
    try:
        shared = Shared(store, Settings(secret=SECRET))
        fresh = Session.new()
        token = csrf_token(shared, fresh)
        assert not csrf_ok(shared, fresh, token)
        assert csrf_ok(shared, Session(fresh.sid), token)
        assert not csrf_ok(shared, Session(fresh.sid), token + "A")
        assert not csrf_ok(shared, Session(fresh.sid), "é" + token[1:])
        assert not csrf_ok(shared, Session(secrets.token_urlsafe(24)), token)
    finally:
        store.close()


def test_approving_says_whether_this_approval_is_the_last_one_needed(demo: Demo) -> None:
    """The approve form's sentence counts this approval with those already given: the last
    one needed moves the item to approved, any other waits for the rest."""
    one_needed = approve_effect(demo.item(MSG_1041))
    assert one_needed.startswith("Your approval is 1 of 1: the item moves to approved")
    two_needed = demo.item(CHECKOUT)
    assert approve_effect(two_needed).startswith("Your approval is 1 of 2: ")
    assert "waits for 1 more approver(s); nothing runs yet" in approve_effect(two_needed)
    store = open_store(demo.url)
    try:
        digest = two_needed.doc("proposal")["digest"]
        Controller(store).approve(CHECKOUT, proposal=digest, actor="bob")
    finally:
        store.close()
    after_one = approve_effect(demo.item(CHECKOUT))
    assert after_one.startswith("Your approval is 2 of 2: the item moves to approved")


def test_reject_and_close_are_red_and_apart_from_approve(demo: Demo, live: Server) -> None:
    assert (tone("approve"), tone("reject"), tone("close"), tone("note")) == (
        "approve",
        "danger",
        "danger",
        "neutral",
    )
    page = sign_in(live, demo.tokens["alice"]).get(f"/items/{demo.item(CHECKOUT).id}").text
    zone = re.search(r'data-testid="danger-zone">(.*?)</div>', page, re.S)
    assert zone is not None
    assert 'class="action tone-danger" data-testid="action-reject"' in zone.group(1)
    assert 'data-testid="action-approve"' not in zone.group(1)
