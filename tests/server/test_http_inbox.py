"""The inbox at scale against a real server: keyset pages, search, "needs me", severity,
bulk acknowledge and close, the stuck-work view, and what a form or a query that is wrong
does (nothing)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from helpers import T0, discover, stop_in_exception
from stopline.controller import Controller
from stopline.store import open_store, raw
from stopline.store.insights import StopQuery
from stopline.web import forms

from .conftest import Demo, add_tokens
from .httphelp import Server, bulk, csrf_of, nothing_written, sign_in

CHECKOUT = "service-health/checkout-api"
ROW = re.compile(r'data-testid="inbox-row" data-item="([^"]+)" data-severity="([a-z]+)"')
NEXT = re.compile(r'href="(/inbox\?[^"]*after=[^"]+)" data-testid="page-next"')


def rows(html: str) -> list[str]:
    return [m.group(1) for m in ROW.finditer(html)]


def total(html: str) -> int:
    found = re.search(r'data-testid="inbox-total">(\d+)<', html)
    assert found
    return int(found.group(1))


def pages_of(browser: httpx.Client, url: str) -> list[list[str]]:
    """The row ids of every page from ``url`` on (a page shows its rows grouped by state)."""
    found: list[list[str]] = []
    next_url: str | None = url
    while next_url:
        page = browser.get(next_url.replace("&amp;", "&"))
        assert page.status_code == 200, page.text
        found.append(rows(page.text))
        more = NEXT.search(page.text)
        next_url = more.group(1) if more else None
    return found


def walk(browser: httpx.Client, url: str) -> tuple[list[str], int]:
    """Every page from ``url`` on: the row ids, and the number of pages."""
    found = pages_of(browser, url)
    return [i for page in found for i in page], len(found)


def test_pages_cover_every_item_once_and_counts_stay_whole(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["alice"])
    everything = rows(browser.get("/inbox").text)
    assert len(everything) == 7
    first = browser.get("/inbox", params={"size": "3"}).text
    assert len(rows(first)) == 3 and total(first) == 7
    assert 'data-testid="page-next"' in first and 'data-testid="page-first"' not in first
    seen, pages = walk(browser, "/inbox?size=3")
    assert pages == 3 and sorted(seen) == sorted(everything) and len(set(seen)) == 7
    store = open_store(demo.url)
    try:
        for sort in ("oldest", "newest", "severity"):
            order = [r.item.id for r in store.insights.stop_page(StopQuery(sort=sort))]
            found = pages_of(browser, f"/inbox?sort={sort}&size=2")
            assert [set(p) for p in found] == [set(order[n : n + 2]) for n in range(0, 7, 2)]
    finally:
        store.close()


def test_severity_is_shown_and_sorted_on(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get("/inbox", params={"sort": "severity"}).text
    found = [m.group(2) for m in ROW.finditer(page)]
    # The demo's restart proposals say "high"; within a group the page keeps its order.
    assert "high" in found
    assert browser.get(f"/items/{demo.item(CHECKOUT).id}").text.count(
        'data-testid="item-severity">high<'
    )
    ranks = {"info": 0, "low": 1, "normal": 2, "high": 3, "critical": 4}
    store = open_store(demo.url)
    try:
        in_order = store.insights.stop_page(StopQuery(sort="severity"))
    finally:
        store.close()
    severities = [ranks[r.severity] for r in in_order]
    assert severities == sorted(severities, reverse=True) and severities[0] == ranks["high"]
    assert in_order[0].item.id == rows(page)[0]


def test_search_by_key_automation_and_reason(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["alice"])
    by_key = browser.get("/inbox", params={"q": "MSG-1043"}).text
    assert rows(by_key) == [demo.item("support-triage/msg-1043").id]
    by_automation = browser.get("/inbox", params={"q": "service-health/"}).text
    assert total(by_automation) == len(rows(by_automation)) >= 2
    assert all(demo.item(i).automation == "service-health" for i in rows(by_automation))
    why = demo.item("support-triage/msg-1043").doc("exception")["why"]
    by_reason = browser.get("/inbox", params={"q": why[:12].upper()}).text
    assert demo.item("support-triage/msg-1043").id in rows(by_reason)
    nothing = browser.get("/inbox", params={"q": "no such words anywhere"}).text
    assert total(nothing) == 0 and 'data-testid="inbox-empty"' in nothing


def test_needs_me_keeps_what_the_rights_allow(demo: Demo, live: Server, tmp_path: Path) -> None:
    store = open_store(demo.url)
    try:
        controller = Controller(store)
        controller.add_actor("ed", ["approver"])
        token = controller.new_token("ed")
        assert token is not None
        ed = store.actors()["ed"]
        now = datetime.now(UTC)
        expected = sorted(
            i.id
            for i in store.list_items(state_class="stop")
            if forms.needs(i, ed, store.policy(i.automation), now)
        )
    finally:
        store.close()
    assert 0 < len(expected) < 7
    browser = sign_in(live, token)
    page = browser.get("/inbox", params={"mine": "1"}).text
    assert sorted(rows(page)) == expected and total(page) == len(expected)
    seen, _ = walk(browser, "/inbox?mine=1&size=1")
    assert sorted(seen) == expected
    viewer = sign_in(live, demo.tokens["dana"]).get("/inbox", params={"mine": "1"}).text
    assert rows(viewer) == [] and total(viewer) == 0


def test_a_partial_approval_hides_approve_and_keeps_the_age(demo: Demo, live: Server) -> None:
    item = demo.item(CHECKOUT)
    store = open_store(demo.url)
    try:
        stopped = store.insights.stopped_since(item.id)
    finally:
        store.close()
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get(f"/items/{item.id}").text
    assert 'data-testid="approve-effect"' in page and "1 of 2" in page
    assert re.search(r'class="approve" data-testid="approve-submit"', page)
    assert re.search(r'class="danger" data-testid="close-submit"', page)
    digest = item.doc("proposal")["digest"]
    browser.post(f"/items/{item.id}/approve", data={"csrf": csrf_of(page), "proposal": digest})
    after = browser.get(f"/items/{item.id}").text
    assert 'data-testid="approvals-count">1 of 2<' in after
    assert 'data-testid="action-approve"' not in after
    assert 'data-testid="approved-by-me"' in after
    assert 'data-testid="action-close"' in after  # other actions stay
    bob = sign_in(live, demo.tokens["bob"]).get(f"/items/{item.id}").text
    assert 'data-testid="action-approve"' in bob and "2 of 2" in bob
    store = open_store(demo.url)
    try:
        assert store.insights.stopped_since(item.id) == stopped
        assert store.get(item.id).updated_at > stopped  # type: ignore[union-attr]
    finally:
        store.close()


def test_the_proposal_is_shown_against_the_one_it_replaced(demo: Demo, live: Server) -> None:
    item = demo.item("support-triage/msg-1041")
    browser = sign_in(live, demo.tokens["alice"])
    page = browser.get(f"/items/{item.id}").text
    edited = browser.post(
        f"/items/{item.id}/edit",
        data={"csrf": csrf_of(page), "params": '{"draft": "Hello Ana, refunded."}'},
    )
    assert edited.status_code == 303, edited.text
    after = browser.get(f"/items/{item.id}").text
    assert 'data-testid="proposal-diff"' in after
    assert 'data-testid="proposal-diff-field">params.draft<' in after
    assert "Hello Ana, refunded." in after


def test_bulk_close_and_acknowledge_decide_each_item_alone(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["carol"])
    ready = [demo.item(i) for i in rows(browser.get("/inbox?state=ready_for_review").text)]
    waiting = demo.item("support-triage/msg-1044")
    assert len(ready) == 2
    done = bulk(browser, command="acknowledge", reason="read", item=[ready[0].id, waiting.id])
    assert done.status_code == 200, done.text
    outcomes = dict(
        re.findall(
            r'data-testid="bulk-result" data-item="([^"]+)" data-outcome="([a-z_]+)"', done.text
        )
    )
    assert outcomes == {ready[0].id: "applied", waiting.id: "refused"}
    assert "illegal_transition" in done.text
    assert demo.item(ready[0].id).state.value == "closed"
    assert demo.item(waiting.id).state.value == "awaiting_approval"
    closed = bulk(browser, command="close", reason="duplicates", item=[ready[1].id, waiting.id])
    outcomes = dict(
        re.findall(
            r'data-testid="bulk-result" data-item="([^"]+)" data-outcome="([a-z_]+)"', closed.text
        )
    )
    assert outcomes == {ready[1].id: "applied", waiting.id: "applied"}
    assert 'data-testid="bulk-summary">2 of 2 done' in closed.text
    assert demo.item(waiting.id).doc("closure")["reason"] == "duplicates"


def test_a_bulk_form_that_is_wrong_writes_nothing(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["carol"])
    some = rows(browser.get("/inbox").text)[:2]
    with nothing_written(demo.url):
        assert bulk(browser, command="close", item=some).status_code == 422  # no reason
        assert bulk(browser, command="delete", reason="x", item=some).status_code == 422
        assert bulk(browser, command="close", reason="x").status_code == 422  # no items
        assert bulk(browser, command="close", reason="x", item=["../x"]).status_code == 422
        assert (
            bulk(
                browser, command="close", reason="x", item=[f"id-{n}" for n in range(201)]
            ).status_code
            == 422
        )
        forged = browser.post(
            "/inbox/bulk", data={"csrf": "no", "command": "close", "reason": "x", "item": some}
        )
        assert forged.status_code == 403
        viewer = sign_in(live, demo.tokens["dana"])
        assert bulk(viewer, command="close", reason="x", item=some).status_code == 403
        assert 'data-testid="bulk-form"' not in viewer.get("/inbox").text


def test_bad_queries_are_refused_with_the_reason(demo: Demo, live: Server) -> None:
    browser = sign_in(live, demo.tokens["alice"])
    for params, says in (
        ({"sort": "random"}, "sort is one of"),
        ({"size": "0"}, "size is a whole number"),
        ({"size": "100000"}, "size is a whole number"),
        ({"mine": "yes"}, "mine is 1 or empty"),
        ({"after": "not-a-cursor"}, "after is not a page cursor"),
        ({"q": "x" * 201}, "q must be at most"),
    ):
        page = browser.get("/inbox", params=params)
        assert page.status_code == 422 and says in page.text, params
    assert browser.get("/stuck", params={"minutes": "0"}).status_code == 422
    assert browser.get("/stuck", params={"after": "zz"}).status_code == 422


def test_stuck_work_shows_work_items_that_have_not_moved(demo: Demo, live: Server) -> None:
    store = open_store(demo.url)
    try:
        # Far in the past: not moved for far longer than any threshold.
        old = discover(store, "stalled", at=T0 - timedelta(days=30), automation="support-triage")
    finally:
        store.close()
    browser = sign_in(live, demo.tokens["dana"])  # a viewer may look
    page = browser.get("/stuck").text
    assert f'data-testid="stuck-row" data-item="{old.id}"' in page
    assert "no worker holds it" in page
    assert 'data-testid="stuck-total">' in page
    inbox = browser.get("/inbox").text
    assert f'data-item="{old.id}"' not in inbox  # work, not stopped
    assert re.search(r'data-testid="stuck-count">[1-9]', inbox)


def test_page_size_is_bounded_with_six_hundred_items(
    tmp_path: Path, start_server: Callable[..., Server]
) -> None:
    url = f"sqlite:///{tmp_path / 'many.db'}"
    store = open_store(url)
    try:
        for n in range(600):
            stop_in_exception(store, f"k{n:04d}", T0 + timedelta(seconds=n))
        controller = Controller(store)
        controller.add_actor("olga", ["operator"])
        token = controller.new_token("olga")
        assert token is not None
    finally:
        store.close()
    server = start_server(url)
    browser = sign_in(server, token)
    page = browser.get("/inbox").text
    assert total(page) == 600 and len(rows(page)) == 50
    biggest = browser.get("/inbox", params={"size": "200"}).text
    assert len(rows(biggest)) == 200
    seen, pages = walk(browser, "/inbox?size=200&sort=oldest")
    assert pages == 3 and len(set(seen)) == 600


def test_next_item_walks_the_inbox_order_and_wraps(demo: Demo, live: Server) -> None:
    store = open_store(demo.url)
    try:
        order = [r.item.id for r in store.insights.stop_page(StopQuery(sort="oldest"))]
    finally:
        store.close()
    browser = sign_in(live, demo.tokens["alice"])
    visited = []
    location = browser.get("/inbox/next", params={"sort": "oldest"}).headers["location"]
    for _ in range(len(order) + 1):
        item_id = location.split("?", 1)[0].removeprefix("/items/")
        visited.append(item_id)
        location = browser.get("/inbox/next", params={"sort": "oldest", "after": item_id}).headers[
            "location"
        ]
    assert visited == [*order, order[0]]
    searched = browser.get("/inbox/next", params={"q": "msg-1043"}).headers["location"]
    assert searched.startswith(f"/items/{demo.item('support-triage/msg-1043').id}?")
    assert "q=msg-1043" in searched


def test_the_inbox_on_each_store(demo_url: str, start_server: Callable[..., Server]) -> None:
    """Pages, search, severity order and needs-me through the web on SQLite and PostgreSQL."""
    found = add_tokens(Demo(demo_url))
    server = start_server(demo_url)
    browser = sign_in(server, found.tokens["alice"])
    page = browser.get("/inbox").text
    assert total(page) == 7 and len(rows(page)) == 7
    seen, pages = walk(browser, "/inbox?size=2&sort=newest")
    assert pages == 4 and sorted(seen) == sorted(rows(page))
    first = [m.group(2) for m in ROW.finditer(browser.get("/inbox?size=1").text)]
    assert first == ["high"]
    assert rows(browser.get("/inbox", params={"q": "MSG-1043"}).text) == [
        found.item("support-triage/msg-1043").id
    ]
    assert total(browser.get("/inbox", params={"mine": "1"}).text) == 7
    viewer = sign_in(server, found.tokens["dana"])
    assert total(viewer.get("/inbox", params={"mine": "1"}).text) == 0


def test_the_inbox_says_whether_any_worker_is_live(demo: Demo, live: Server) -> None:
    """With no heartbeat the inbox says that approved work waits for nobody; a fresh heartbeat
    is a live worker, an old one a stale worker (the same rule as `stopline workers`)."""
    store = open_store(demo.url)
    try:
        token = Controller(store).new_token("alice")
        with raw.writing(store) as cur:  # the demo's own workers have ended: forget them
            cur.execute("DELETE FROM worker_heartbeats")
    finally:
        store.close()
    assert token is not None
    browser = sign_in(live, token)
    page = browser.get("/inbox").text
    assert 'data-testid="workers-none"' in page and "stopline run" in page
    now = datetime.now(UTC)
    store = open_store(demo.url)
    try:
        store.heartbeats.beat("w-live", "host", 1, ["demo"], now, now, {})
        old = now - timedelta(hours=1)
        store.heartbeats.beat("w-gone", "host", 2, ["demo"], old, old, {})
    finally:
        store.close()
    page = browser.get("/inbox").text
    assert 'data-testid="workers-none"' not in page
    assert re.search(r'data-testid="workers-live">1<', page), page[:2000]
    assert re.search(r'data-testid="workers-stale">1<', page)
