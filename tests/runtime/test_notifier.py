"""The webhook notifier in the runtime: hosted by ``stopline run``, safe with two hosts."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from helpers import stop_in_exception
from proc import wait_for
from stopline.runtime.notifier import (
    DEFAULT_BASE_URL,
    Notifier,
    NotifierFailed,
    NotifierThread,
    NotifySettings,
    NotifySettingsError,
    Summary,
    notify_pending,
)
from stopline.runtime.notify_settings import DEFAULT_SCHEDULE, RetrySchedule
from stopline.store import Store, open_store
from stopline.store.outbox import DELIVERED
from webhook_receiver import SECRET, Receiver

CLI = [sys.executable, "-m", "stopline.cli.main"]
STOPS_APP = str(Path(__file__).parent / "apps" / "stops.py") + ":app"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def settings(url: str, **options: Any) -> NotifySettings:
    """Notifier settings sending every stop to ``url``, signed with the test secret."""
    return NotifySettings(
        webhooks={"*": (url,)}, secret=SECRET, base_url="https://inbox.example", **options
    )


def run_once(db: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``stopline run STOPS_APP --once --json`` in a subprocess, to its end."""
    return subprocess.run(
        [*CLI, "run", STOPS_APP, "--once", "--linger", "0.2", "--json", "--db", db],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_stopline_run_once_delivers_the_stops_of_its_run(
    store_url: str, receiver: Receiver, tmp_path: Path
) -> None:
    """With webhooks configured and no server at all, ``stopline run --once`` sends one
    signed message per item that stopped in its run, and a second run sends nothing again."""
    env = {
        "STOPLINE_WEBHOOKS": json.dumps({"desk": [receiver.url]}),
        "STOPLINE_WEBHOOK_SECRET": SECRET,
        "STOPLINE_BASE_URL": "https://inbox.example/",
        "STOPLINE_TEST_STOP_KEYS": "alpha,beta",
    }
    done = run_once(store_url, env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["discovered"] == 2
    messages = receiver.messages()  # every signature verified
    assert sorted(m["data"]["key"] for m in messages) == ["alpha", "beta"]
    for m in messages:
        assert m["type"] == "item.stopped"
        assert (m["data"]["automation"], m["data"]["state"]) == ("desk", "exception")
        assert m["data"]["url"] == f"https://inbox.example/items/{m['data']['item']}"
    store = open_store(store_url)
    try:
        sent = store.outbox.notifications()
        assert [n.status for n in sent] == [DELIVERED, DELIVERED]
        assert sorted(receiver.ids()) == sorted(n.id for n in sent)
    finally:
        store.close()
    again = run_once(store_url, env, tmp_path)
    assert again.returncode == 0, again.stderr
    assert receiver.count() == 2


def test_stopline_run_refuses_webhooks_it_cannot_sign(tmp_path: Path) -> None:
    """``STOPLINE_WEBHOOKS`` without a usable secret is a usage error (exit 2) that names the
    variable, and nothing runs."""
    db = f"sqlite:///{tmp_path / 'stopline.db'}"
    hooks = json.dumps({"*": ["http://127.0.0.1:9/hook"]})
    for secret, named in (("", "STOPLINE_WEBHOOK_SECRET"), ("whsec_%%%", "not base64")):
        env = {
            "STOPLINE_WEBHOOKS": hooks,
            "STOPLINE_WEBHOOK_SECRET": secret,
            "STOPLINE_TEST_STOP_KEYS": "alpha",
        }
        done = run_once(db, env, tmp_path)
        assert done.returncode == 2 and named in done.stderr, done.stderr
    store = open_store(db)
    try:
        assert store.list_items() == []
    finally:
        store.close()


def test_two_notifiers_on_one_database_never_send_a_message_twice(store_url: str) -> None:
    """While one notifier holds a message (its receiver has not answered yet), a second
    notifier on its own connection sends every other message and leaves that one alone; in
    the end each message was sent once and recorded once."""
    receiver = Receiver(hold_first=True)
    first_store, second_store = open_store(store_url), open_store(store_url)
    try:
        now = datetime.now(UTC)
        for key in ("a", "b", "c"):
            stop_in_exception(first_store, key, now - timedelta(seconds=5))
        options = settings(receiver.url, backfill=60.0)
        first, second = Notifier(first_store, options), Notifier(second_store, options)
        assert first.enqueue(first.clock()) == 3
        held: list[Summary] = []
        sender = threading.Thread(target=lambda: held.append(first.deliver(first.clock)))
        sender.start()
        wait_for(lambda: receiver.count() == 1, 30, "the first notifier's request")
        meanwhile = second.round()
        assert (meanwhile.enqueued, meanwhile.delivered, meanwhile.lost) == (0, 2, 0)
        assert receiver.count() == 3
        receiver.release()
        sender.join(60)
        assert [(s.delivered, s.lost) for s in held] == [(1, 0)]
        ids = receiver.ids()
        assert len(ids) == len(set(ids)) == 3
        assert len(receiver.messages()) == 3
        sent = first_store.outbox.notifications()
        assert sorted(n.id for n in sent) == sorted(ids)
        assert all(n.status == DELIVERED and n.attempts == 1 for n in sent)
        assert all(len(first_store.outbox.attempts(n.id)) == 1 for n in sent)
    finally:
        receiver.close()
        first_store.close()
        second_store.close()


def test_a_hosted_notifier_sends_stops_made_after_it_started(
    store: Store, store_url: str, receiver: Receiver
) -> None:
    """A notifier thread sends stops made after ``start()`` returned (and none from before
    notifications were switched on); ``stop(flush=True)`` waits for the last round."""
    stop_in_exception(store, "before", datetime.now(UTC))
    host = NotifierThread(store_url, settings(receiver.url, interval=3600.0))
    host.start()
    try:
        stopped = stop_in_exception(store, "after", datetime.now(UTC))
    finally:
        host.stop(flush=True)
    [message] = receiver.messages()
    assert (message["data"]["item"], message["data"]["key"]) == (stopped.id, "after")


def test_a_redirect_is_a_failed_attempt_and_never_followed(store: Store, store_url: str) -> None:
    """A 3xx answer is recorded as a failed attempt to retry; the redirect is not followed."""
    target = Receiver()
    redirecting = Receiver(status=302, location=target.url)
    try:
        stop_in_exception(store, "k", datetime.now(UTC) - timedelta(seconds=5))
        summary = notify_pending(store_url, settings(redirecting.url, backfill=60.0))
        assert (summary.enqueued, summary.retrying, summary.delivered) == (1, 1, 0)
        assert (redirecting.count(), target.count()) == (1, 0)
        [message] = store.outbox.notifications()
        assert (message.status, message.last_error) == ("pending", "HTTP 302")
    finally:
        target.close()
        redirecting.close()


def test_a_notifier_that_cannot_open_its_store_fails_at_start(blank_store_url: str) -> None:
    """A notifier on a database without the schema refuses to start instead of idling."""
    host = NotifierThread(blank_store_url, settings("http://127.0.0.1:9/hook"))
    with pytest.raises(NotifierFailed, match="could not start"):
        host.start()


def test_settings_come_from_the_environment() -> None:
    """The notification variables give the settings; no endpoint means no notifier; a secret
    that is not a Standard Webhooks secret of at least 24 bytes, a bad endpoint map, schedule
    or interval is refused with the variable named."""
    assert NotifySettings.from_env({}) is None
    assert NotifySettings.from_env({"STOPLINE_WEBHOOK_SECRET": SECRET}) is None
    own = "whsec_" + base64.b64encode(b"another secret of 32 bytes, ok!!").decode()
    found = NotifySettings.from_env(
        {
            "STOPLINE_WEBHOOKS": json.dumps(
                {
                    "a": "https://h.example/x",
                    "*": [
                        "http://all.example/",
                        {"url": "https://chat.example/hook", "format": "slack"},
                        {"url": "https://own.example/", "secret": own},
                    ],
                }
            ),
            "STOPLINE_WEBHOOK_SECRET": SECRET,
            "STOPLINE_NOTIFY_INTERVAL": "2",
            "STOPLINE_WEBHOOK_RETRY": "1s, 2m, 3h",
            "STOPLINE_WEBHOOK_JITTER": "0",
        }
    )
    assert found is not None
    assert [(e.url, e.format, e.secret) for e in found.endpoints_for("a")] == [
        ("https://h.example/x", "standard", SECRET),
        ("http://all.example/", "standard", SECRET),
        ("https://chat.example/hook", "slack", None),
        ("https://own.example/", "standard", own),
    ]
    assert (found.base_url, found.interval) == (DEFAULT_BASE_URL, 2.0)
    assert found.retry.delays == (1.0, 120.0, 10800.0) and found.retry.max_attempts == 4
    assert found.retry.delay(3) == timedelta(hours=3)
    base = {
        "STOPLINE_WEBHOOKS": '{"a": ["https://h.example/x"]}',
        "STOPLINE_WEBHOOK_SECRET": SECRET,
    }
    defaulted = NotifySettings.from_env(base, base_url="http://here:1")
    assert defaulted is not None and defaulted.base_url == "http://here:1"
    assert defaulted.retry == RetrySchedule(DEFAULT_SCHEDULE, 0.2)
    hooks = "STOPLINE_WEBHOOKS"
    short = "whsec_" + base64.b64encode(b"x" * 23).decode()
    refused = [
        ("STOPLINE_WEBHOOK_SECRET", {"STOPLINE_WEBHOOK_SECRET": ""}),
        ("whsec_ followed by base64", {"STOPLINE_WEBHOOK_SECRET": "a plain password"}),
        ("not base64", {"STOPLINE_WEBHOOK_SECRET": "whsec_!!"}),
        ("no key", {"STOPLINE_WEBHOOK_SECRET": "whsec_"}),
        ("23 bytes; it must be 24 to 64", {"STOPLINE_WEBHOOK_SECRET": short}),
        (
            "\\.secret: the key is 23 bytes",
            {hooks: json.dumps({"a": [{"url": "http://h/", "secret": short}]})},
        ),
        (
            "format must be one of",
            {hooks: json.dumps({"a": [{"url": "http://h/", "format": "x"}]})},
        ),
        ("STOPLINE_SMTP_URL", {hooks: '{"a": ["mailto:ops@example.com"]}'}),
        ("mailto:ADDRESS", {hooks: '{"a": ["mailto:not an address"]}'}),
        ("http\\(s\\) URLs", {hooks: '{"a": ["ftp://x"]}'}),
        ("http\\(s\\) URLs", {hooks: '{"a": ["http://[::1/hook"]}'}),
        ("http\\(s\\) URLs", {hooks: '{"a": ["http:///no-host"]}'}),
        ("valid JSON", {hooks: "{"}),
        ("STOPLINE_WEBHOOK_RETRY", {"STOPLINE_WEBHOOK_RETRY": "5s,soon"}),
        ("STOPLINE_WEBHOOK_RETRY", {"STOPLINE_WEBHOOK_RETRY": "0s"}),
        ("STOPLINE_WEBHOOK_JITTER", {"STOPLINE_WEBHOOK_JITTER": "1"}),
        ("STOPLINE_SMTP_URL", {"STOPLINE_SMTP_URL": "http://mail"}),
        ("STOPLINE_NOTIFY_INTERVAL", {"STOPLINE_NOTIFY_INTERVAL": "0"}),
        ("STOPLINE_NOTIFY_INTERVAL", {"STOPLINE_NOTIFY_INTERVAL": "nan"}),
        ("STOPLINE_NOTIFY_INTERVAL", {"STOPLINE_NOTIFY_INTERVAL": "soon"}),
        ("STOPLINE_BASE_URL", {"STOPLINE_BASE_URL": "inbox.example"}),
    ]
    for named, change in refused:
        with pytest.raises(NotifySettingsError, match=named):
            NotifySettings.from_env({**base, **change})


def test_the_retry_schedule_spreads_its_waits_with_jitter() -> None:
    """Each wait is the schedule's, moved by at most the jitter fraction either way; the
    default schedule retries for more than a day; the last wait repeats past its end."""
    low = RetrySchedule((10.0, 100.0), 0.2, rng=lambda: 0.0)
    high = RetrySchedule((10.0, 100.0), 0.2, rng=lambda: 0.999999)
    assert low.delay(1) == timedelta(seconds=8) and low.delay(2) == timedelta(seconds=80)
    assert timedelta(seconds=119) < high.delay(2) <= timedelta(seconds=120)
    assert low.delay(9) == low.delay(2) and low.max_attempts == 3
    assert sum(DEFAULT_SCHEDULE) > 24 * 3600 and RetrySchedule().max_attempts == 8
