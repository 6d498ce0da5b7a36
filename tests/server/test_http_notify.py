"""Webhooks, checked by a receiver written from docs/webhooks.md alone; and metrics on each
store."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from helpers import dump
from proc import wait_for
from stopline.http import metrics
from stopline.runtime.notifier import NotifySettings, notify_pending
from stopline.runtime.notify_settings import RetrySchedule
from stopline.store import open_store, raw
from webhook_receiver import SECRET, Receiver, verify

from .conftest import Demo, prepare_demo
from .httphelp import Server


def hooks(urls: dict[str, list[str]], base: str = "http://x", **options: Any) -> NotifySettings:
    """Notifier settings signing with the test secret."""
    return NotifySettings(
        webhooks={k: tuple(v) for k, v in urls.items()}, secret=SECRET, base_url=base, **options
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _items_and_events(url: str) -> dict[str, Any]:
    store = open_store(url)
    try:
        d = dump(store)
        return {"items": d["items"], "events": d["events"]}
    finally:
        store.close()


def test_stops_are_delivered_signed_once(demo_url: str, receiver: Receiver) -> None:
    before = _items_and_events(demo_url)
    summary = notify_pending(
        demo_url, hooks({"*": [receiver.url]}, "https://inbox.example", backfill=3600)
    )
    assert (summary.enqueued, summary.delivered, summary.failed) == (7, 7, 0)
    messages = receiver.messages()
    states = sorted(m["data"]["state"] for m in messages)
    assert states == sorted(
        ["awaiting_approval"] * 3 + ["ready_for_review"] * 2 + ["exception", "exhausted"]
    )
    assert {m["type"] for m in messages} == {"item.stopped"}
    for m in messages:
        assert m["data"]["url"] == f"https://inbox.example/items/{m['data']['item']}"
    ids = [h["webhook-id"] for h, _ in receiver.received]
    assert len(set(ids)) == 7
    again = notify_pending(demo_url, hooks({"*": [receiver.url]}, "https://inbox.example"))
    assert (again.enqueued, again.delivered) == (0, 0)
    assert len(receiver.received) == 7
    assert _items_and_events(demo_url) == before
    headers, body = receiver.received[0]
    assert not verify(SECRET, headers, body.replace(b"stopped", b"started"))
    assert not verify("whsec_" + base64.b64encode(b"another secret").decode(), headers, body)


def test_only_configured_automations(demo_url: str, receiver: Receiver) -> None:
    summary = notify_pending(demo_url, hooks({"service-health": [receiver.url]}, backfill=3600))
    assert summary.delivered == 3
    assert {m["data"]["automation"] for m in receiver.messages()} == {"service-health"}


def test_failed_deliveries_retry_with_a_bound_and_never_touch_items(demo_url: str) -> None:
    failing = Receiver(status=500)
    try:
        before = _items_and_events(demo_url)
        urls = {
            "support-triage": ["http://127.0.0.1:9/closed"],
            "service-health": [failing.url],
        }
        three = RetrySchedule((10.0, 20.0), jitter=0.0)
        settings = hooks(urls, retry=three, backfill=3600)
        t0 = datetime.now(UTC)
        first = notify_pending(demo_url, settings, now=t0)
        assert (first.enqueued, first.retrying) == (7, 7)
        second = notify_pending(demo_url, settings, now=t0 + timedelta(seconds=5))
        assert (second.delivered, second.retrying, second.failed) == (0, 0, 0)  # not due yet
        third = notify_pending(demo_url, settings, now=t0 + timedelta(seconds=11))
        assert third.retrying == 7
        last = notify_pending(demo_url, settings, now=t0 + timedelta(seconds=40))
        assert last.failed == 7
        assert len(failing.received) == 9
        store = open_store(demo_url)
        try:
            d = dump(store)
        finally:
            store.close()
        assert len(d["notification_attempts"]) == 21
        assert {dict(r)["status"] for r in d["notifications"]} == {"failed"}
        errors = {dict(r)["url"]: dict(r)["last_error"] for r in d["notifications"]}
        assert errors[failing.url] == "HTTP 500"
        assert errors["http://127.0.0.1:9/closed"].startswith("ConnectionRefusedError")
        assert _items_and_events(demo_url) == before
        quiet = notify_pending(demo_url, settings, now=t0 + timedelta(hours=1))
        assert (quiet.delivered, quiet.retrying, quiet.failed) == (0, 0, 0)
    finally:
        failing.close()


def test_metrics_on_each_store(demo_url: str, receiver: Receiver) -> None:
    notify_pending(demo_url, hooks({"*": [receiver.url]}, backfill=3600))
    store = open_store(demo_url)
    try:
        text = metrics.render(store.insights, datetime.now(UTC))
    finally:
        store.close()
    assert 'stopline_items{state="awaiting_approval",state_class="stop"} 3' in text
    assert 'stopline_attempts_total{outcome="retry"} 2' in text
    assert 'stopline_notifications{status="delivered"} 7' in text
    assert "itm_" not in text


def notify_rows(url: str, table: str) -> int:
    """The number of rows in one of the notifier's tables."""
    store = open_store(url)
    try:
        with raw.reading(store) as cur:
            cur.execute(f"SELECT COUNT(*) AS n FROM {table}")
            return int(cur.fetchone()["n"])
    finally:
        store.close()


def test_the_server_notifies_new_stops(
    demo: Demo, start_server: Callable[..., Server], receiver: Receiver, tmp_path: Path
) -> None:
    server = start_server(
        demo.url,
        STOPLINE_WEBHOOKS=json.dumps({"support-triage": [receiver.url]}),
        STOPLINE_WEBHOOK_SECRET=SECRET,
        STOPLINE_NOTIFY_INTERVAL="0.2",
        STOPLINE_BASE_URL="https://inbox.example",
    )
    # stops from before webhooks were switched on are not sent: once the notifier's first pass
    # has set its cursor, nothing is queued and nothing was received
    wait_for(lambda: notify_rows(demo.url, "notify_cursor") == 2, 60, "the notifier's first pass")
    assert notify_rows(demo.url, "notifications") == 0
    assert receiver.received == []
    item = demo.item("support-triage/msg-1044")
    with server.client(demo.tokens["carol"]) as carol:
        done = carol.post(f"/api/items/{item.id}/reinspect", json={"reason": "check again"})
        assert done.json()["state"] == "observing"
    prepare_demo(demo.url, tmp_path / "drafts")  # the workers propose again: a new stop
    wait_for(lambda: receiver.received, 60, "the webhook to arrive")
    [message] = receiver.messages()
    assert message["data"]["item"] == item.id
    assert message["data"]["state"] == "awaiting_approval"
    assert message["data"]["url"] == f"https://inbox.example/items/{item.id}"
    # the receiver has the message before the server records its answer: wait for the record
    wait_for(
        lambda: (
            'stopline_notifications{status="delivered"} 1'
            in httpx.get(f"{server.base}/metrics").text
        ),
        60,
        "the delivery to be recorded",
    )
