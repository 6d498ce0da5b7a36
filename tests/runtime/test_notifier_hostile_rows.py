"""What a notifier sends holds up against hostile text: an outbox row whose id is not the one
derived from its item, event and URL, an item key holding a line separator, an endpoint URL no
request can carry.

Each of these used to raise out of the round (a header value ``http.client`` or the email
package refuses, a URL ``http.client`` cannot encode), which ended the notifier's thread for
every endpoint, and again after every restart once the message's lease ran out; a row given
another id was sent again under that id, so a receiver dropping ids it had seen got it twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email import message_from_bytes
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from helpers import stop_in_exception
from integrity.attacker import Attacker
from proc import free_port
from stopline.core.canonical import format_time
from stopline.runtime.notifier import Notifier, NotifySettings, NotifySettingsError
from stopline.runtime.notify_settings import SMTPSettings
from stopline.runtime.scheduler import accepted
from stopline.store import Store
from stopline.store.outbox import DELIVERED, FAILED, message_id
from webhook_receiver import SECRET, Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def settings(url: str, **options: Any) -> NotifySettings:
    return NotifySettings(webhooks={"*": (url,)}, secret=SECRET, backfill=60.0, **options)


def _forge_row(url: str, msg_id: str, item_id: str, seq: int, to: str) -> None:
    """A pending outbox row written by SQL alone, due now."""
    attacker = Attacker(url)
    try:
        attacker.sql(
            "INSERT INTO notifications (id, item_id, seq, url, type, payload, status, attempts,"
            " next_attempt_at, created_at) VALUES (:id, :item, :seq, :url, 'item.stopped',"
            " '{}', 'pending', 0, :at, :at)",
            {
                "id": msg_id,
                "item": item_id,
                "seq": seq,
                "url": to,
                "at": format_time(datetime.now(UTC) - timedelta(seconds=10)),
            },
        )
    finally:
        attacker.close()


def test_a_row_whose_id_carries_a_header_is_never_sent(
    store: Store, store_url: str, receiver: Receiver
) -> None:
    """A row about a real stop, to a configured endpoint, written before the notifier saw the
    stop, with an id that would end the ``webhook-id`` header: refused before sending, failed
    for good; the round ends normally."""
    item = stop_in_exception(store, "k", datetime.now(UTC) - timedelta(seconds=5))
    seq = store.history(item.id)[-1].seq
    _forge_row(store_url, "msg_x\r\nx-injected: yes", item.id, seq, receiver.url)
    summary = Notifier(store, settings(receiver.url)).round()
    assert (summary.delivered, summary.failed, receiver.count()) == (0, 1, 0)
    [row] = store.outbox.notifications()
    assert row.status == FAILED and "id" in (row.last_error or ""), row.last_error


def test_a_delivered_row_given_another_id_is_not_sent_again(
    store: Store, store_url: str, receiver: Receiver
) -> None:
    """A delivered message made pending again under a new id by SQL would reach the receiver
    a second time with a ``webhook-id`` it never saw: it is refused before sending."""
    item = stop_in_exception(store, "k", datetime.now(UTC) - timedelta(seconds=5))
    notifier = Notifier(store, settings(receiver.url))
    assert notifier.round().delivered == 1
    [sent] = store.outbox.notifications()
    assert sent.id == message_id(item.id, sent.seq, receiver.url)
    attacker = Attacker(store_url)
    try:
        changed = attacker.sql(
            "UPDATE notifications SET id = 'msg_again', status = 'pending', attempts = 0,"
            " delivered_at = NULL, next_attempt_at = :at WHERE id = :id",
            {"id": sent.id, "at": format_time(datetime.now(UTC) - timedelta(seconds=10))},
        )
        assert changed == 1
    finally:
        attacker.close()
    summary = notifier.round()
    assert (summary.delivered, summary.failed) == (0, 1)
    assert receiver.ids() == [sent.id]


class Inbox:
    def __init__(self) -> None:
        self.mails: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.mails.append(message_from_bytes(envelope.content))
        return "250 OK"


def test_an_email_about_a_key_with_line_separators_is_sent(store: Store) -> None:
    """Discovery accepts a key holding characters Python takes for line breaks (U+2028, a
    vertical tab, NEL, a file separator); the email about its stop goes out with them made
    spaces in the subject, where they used to raise out of the round."""
    key = "one\u2028two\x0bthree\x85four\x1cfive"
    found = accepted(key)
    assert found is not None and found.key == key
    stop_in_exception(store, key, datetime.now(UTC) - timedelta(seconds=5))
    inbox = Inbox()
    server = Controller(inbox, hostname="127.0.0.1", port=free_port())
    server.start()
    try:
        smtp = SMTPSettings("127.0.0.1", server.port, "stopline@ops.example")
        summary = Notifier(store, settings("mailto:ops@ops.example", smtp=smtp)).round()
    finally:
        server.stop()
    assert (summary.delivered, summary.failed) == (1, 0)
    [mail] = inbox.mails
    assert mail["Subject"] == "[stopline] auto/one two three four five stopped in exception"
    assert [n.status for n in store.outbox.notifications()] == [DELIVERED]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/caf\u00e9",  # no request line carries it (not ASCII)
        "http://127.0.0.1:9/a hook",  # a space: refused by http.client on every attempt
        "http://" + "a" * 64 + "\u00e9.example/hook",  # a host no IDNA encoding takes
        "http://127.0.0.1:99999/hook",  # a port no socket takes
        "http://hooks..example/hook",  # an empty label: the lookup raises
        "http://" + "a" * 64 + ".example/hook",  # a label past 63 characters: the same
        "http://user:secret@127.0.0.1:9/hook",  # never sent as credentials: a host not found
    ],
)
def test_an_endpoint_no_request_can_carry_is_refused_by_the_settings(url: str) -> None:
    """A URL with text outside printable ASCII (an international name is written in its
    ``xn--`` form) is refused before anything runs, like any other unusable setting."""
    with pytest.raises(NotifySettingsError, match="http\\(s\\) URLs"):
        settings(url)
