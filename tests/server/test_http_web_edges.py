"""The web inbox at its edges: a visitor nobody signed in, a link that claims a command
happened, a form posted to what cannot be an item or to an item that does not exist, and the
bulk form (its commands, repeated ids, its reason, what each result says). Each refusal
writes nothing."""

from __future__ import annotations

import re

from .conftest import Demo
from .httphelp import Server, bulk, csrf_of, nothing_written, sign_in

CHECKOUT = "service-health/checkout-api"
MSG_1044 = "support-triage/msg-1044"
RESULT = re.compile(
    r'data-testid="bulk-result" data-item="([^"]+)" data-outcome="([a-z_]+)">\s*'
    r'<a href="/items/[^"]+" class="ref">([^<]+)</a>(.*?)</li>',
    re.S,
)


def test_an_item_page_shows_nothing_to_a_visitor_nobody_signed_in(demo: Demo, live: Server) -> None:
    item = demo.item(CHECKOUT)
    with live.client() as anonymous:
        page = anonymous.get(f"/items/{item.id}")
        assert page.status_code == 303 and page.headers["location"] == "/signin"
        assert item.id not in page.text and "checkout" not in page.text


def test_a_form_posted_by_a_visitor_nobody_signed_in_is_401(demo: Demo, live: Server) -> None:
    """With a sound form token (the sign-in page's own), a visitor who has not signed in acts
    on nothing, one item or many."""
    item = demo.item(CHECKOUT)
    with live.client() as anonymous, nothing_written(demo.url):
        token = csrf_of(anonymous.get("/signin").text)
        one = anonymous.post(f"/items/{item.id}/close", data={"csrf": token, "reason": "x"})
        assert one.status_code == 401 and "Nothing was done" in one.text
        many = anonymous.post(
            "/inbox/bulk", data={"csrf": token, "command": "close", "reason": "x", "item": item.id}
        )
        assert many.status_code == 401 and "Nothing was done" in many.text


def test_a_link_cannot_make_a_page_claim_a_command_that_did_not_happen(
    demo: Demo, live: Server
) -> None:
    """The line after a command comes from the redirect's query string, so a crafted link
    could carry ``?done=approve&outcome=applied``: it is shown only when the history bears
    it out, and never for an outcome other than applied or zero_write."""
    item = demo.item(CHECKOUT)
    bob = sign_in(live, demo.tokens["bob"])
    crafted = [
        {"done": "approve", "outcome": "applied"},
        {"done": "close", "outcome": "zero_write"},
        {"done": "approve", "outcome": "refused"},
        {"done": "reject", "outcome": "<b>applied</b>"},
    ]
    with nothing_written(demo.url):
        for query in crafted:
            page = bob.get(f"/items/{item.id}", params=query)
            assert page.status_code == 200 and 'data-testid="flash"' not in page.text, query
    html = bob.get(f"/items/{item.id}").text
    digest = re.search(r'name="proposal" value="([0-9a-f]{64})"', html)
    assert digest is not None
    done = bob.post(
        f"/items/{item.id}/approve", data={"csrf": csrf_of(html), "proposal": digest.group(1)}
    )
    assert done.status_code == 303
    after = bob.get(done.headers["location"]).text
    assert 'data-testid="flash-command">approve<' in after
    assert 'data-testid="flash-outcome">applied<' in after
    # alice's page with bob's redirect: bob approved, alice did not
    alice = sign_in(live, demo.tokens["alice"])
    assert 'data-testid="flash"' not in alice.get(done.headers["location"]).text
    for outcome in ("refused", "<b>applied</b>", ""):
        query = {"done": "approve", "outcome": outcome}
        page = bob.get(f"/items/{item.id}", params=query)
        assert 'data-testid="flash"' not in page.text, outcome


def test_a_form_posted_to_what_cannot_be_an_item_or_to_no_item(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["carol"])
    token = csrf_of(browser.get("/inbox").text)
    with nothing_written(demo.url):
        malformed = browser.post("/items/bad%20id/close", data={"csrf": token, "reason": "x"})
        assert malformed.status_code == 404 and "This page has no such action" in malformed.text
        missing = browser.post("/items/itm_nope/close", data={"csrf": token, "reason": "x"})
        assert missing.status_code == 409
        assert "Nothing was done (unknown_item)" in missing.text


def test_the_bulk_form_takes_only_its_commands_and_each_item_once(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["alice"])
    waiting = demo.item(MSG_1044)
    with nothing_written(demo.url):
        for command in ("approve", "reject", "edit", ""):
            refused = bulk(browser, command=command, reason="x", item=[waiting.id])
            assert refused.status_code == 422, command
            assert "command is one of acknowledge, close" in refused.text, command
    closed = bulk(browser, command="close", reason="  duplicate  ", item=[waiting.id] * 3)
    assert closed.status_code == 200
    results = RESULT.findall(closed.text)
    assert [(r[0], r[1], r[2]) for r in results] == [(waiting.id, "applied", MSG_1044)]
    assert demo.item(waiting.id).doc("closure")["reason"] == "duplicate"


def test_a_refused_bulk_result_says_why_in_words(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["carol"])
    waiting = demo.item(MSG_1044)
    with nothing_written(demo.url):
        done = bulk(browser, command="acknowledge", reason="read", item=[waiting.id])
    [(item, outcome, ref, rest)] = RESULT.findall(done.text)
    assert (item, outcome, ref) == (waiting.id, "refused", MSG_1044)
    why = re.search(
        r'<code data-testid="bulk-reasons">illegal_transition</code>(.*?)</span>', rest, re.S
    )
    assert why is not None and len(why.group(1).strip()) > 20, rest


HOSTILE_NUMBERS = ("²", "٣", "\uff11", "9" * 5000, "0" * 5000 + "999999999", "-1", "+5", "5 ")


def test_a_number_in_a_query_is_ascii_digits_within_its_bounds_or_422(
    demo: Demo, live: Server
) -> None:
    """``int()`` reads ``٣`` as 3 and raises on ``²`` and on 5,000 digits: each page size, age
    and limit a query holds is ASCII digits within its bounds (leading zeros allowed), or the
    page says what it must be (a 500 before for ``²`` and for 5,000 digits)."""
    browser = sign_in(live, demo.tokens["alice"])
    with nothing_written(demo.url):
        for value in HOSTILE_NUMBERS:
            page = browser.get("/inbox", params={"size": value})
            assert page.status_code == 422, value[:20]
            assert "size is a whole number from 1 to 200" in page.text, value[:20]
            stuck = browser.get("/stuck", params={"minutes": value})
            assert stuck.status_code == 422, value[:20]
            assert "minutes is a whole number" in stuck.text, value[:20]
        with live.client(demo.tokens["dana"]) as api:
            for value in HOSTILE_NUMBERS:
                refused = api.get("/api/items", params={"limit": value})
                assert refused.status_code == 422, value[:20]
        assert browser.get("/inbox", params={"size": "007"}).status_code == 200
        assert browser.get("/stuck", params={"minutes": "0060"}).status_code == 200
        with live.client(demo.tokens["dana"]) as api:
            assert len(api.get("/api/items", params={"limit": "002"}).json()["items"]) == 2
