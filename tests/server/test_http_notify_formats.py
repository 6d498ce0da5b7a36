"""What a notification says and who gets it: the facts a person acts on, signatures checked
with the official Standard Webhooks library, per-endpoint secrets, a receiver that is gone
(410), the Slack-compatible format, email through a real SMTP server, outbox rows that no
notifier made, and stops of items that do not verify."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email import message_from_bytes
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from standardwebhooks.webhooks import Webhook

from integrity.attacker import Attacker
from proc import free_port
from stopline.controller import Controller as Commands
from stopline.core.canonical import format_time
from stopline.runtime.notifier import NotifySettings, notify_pending
from stopline.runtime.notify_settings import SMTPSettings
from stopline.store import open_store
from stopline.store.outbox import FAILED, PENDING
from stopline.verification import verify_store
from webhook_receiver import SECRET, Receiver

from .conftest import prepare_demo

OWN = "whsec_" + base64.b64encode(b"the chat endpoint's own 32 bytes").decode()


def settings(endpoints: dict[str, list[Any]], **options: Any) -> NotifySettings:
    return NotifySettings(
        webhooks=endpoints,
        secret=SECRET,
        base_url="https://inbox.example",
        backfill=3600,
        **options,
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def test_messages_carry_what_a_person_acts_on_signed_per_endpoint(
    demo_url: str, receiver: Receiver
) -> None:
    """Each message verifies with the official library under its endpoint's own secret, and
    carries action, target, why, roles needed, approvals x of y, evidence expiry and the link."""
    second = Receiver()
    try:
        endpoints = {"*": [receiver.url, {"url": second.url, "secret": OWN}]}
        summary = notify_pending(demo_url, settings(endpoints))
        assert (summary.enqueued, summary.delivered) == (14, 14)
        for target, secret in ((receiver, SECRET), (second, OWN)):
            hook = Webhook(secret)
            bodies = [hook.verify(body, headers) for headers, body in target.received]
            assert len(bodies) == 7
        with pytest.raises(Exception):  # noqa: B017 - the library's own verification error
            headers, body = second.received[0]
            Webhook(SECRET).verify(body, headers)
        waiting = [b["data"] for b in bodies if b["data"]["state"] == "awaiting_approval"]
        assert len(waiting) == 3
        for data in waiting:
            assert data["action"] and data["why"].startswith(data["action"])
            assert data["roles_needed"] and data["approvals"]["text"].endswith(
                f"of {data['approvals']['required']}"
            )
            assert data["evidence_expires_at"] > data["at"]
            assert data["url"] == f"https://inbox.example/items/{data['item']}"
        exception = next(b["data"] for b in bodies if b["data"]["state"] == "exception")
        assert exception["why"].startswith("needs eyes") and exception["roles_needed"]
    finally:
        second.close()


def test_a_receiver_that_answers_410_is_disabled(demo_url: str) -> None:
    """``410 Gone`` fails the message and disables the endpoint: nothing more is sent to it
    (its other messages fail with it) until it is enabled again; other endpoints go on."""
    gone, fine = Receiver(status=410), Receiver()
    try:
        hooks = settings({"*": [gone.url, fine.url]})
        summary = notify_pending(demo_url, hooks)
        assert (summary.delivered, summary.failed, gone.count(), fine.count()) == (7, 1, 1, 7)
        store = open_store(demo_url)
        try:
            [disabled] = store.outbox.disabled_endpoints()
            assert disabled.url == gone.url and "410" in disabled.reason
            to_gone = [n for n in store.outbox.notifications() if n.url == gone.url]
            assert {n.status for n in to_gone} == {FAILED}
            assert notify_pending(demo_url, hooks).delivered == 0 and gone.count() == 1
            assert store.outbox.enable_endpoint(gone.url)
            assert store.outbox.disabled_endpoints() == []
        finally:
            store.close()
    finally:
        gone.close()
        fine.close()


def test_the_chat_format_is_slack_blocks_with_the_link(demo_url: str, receiver: Receiver) -> None:
    notify_pending(demo_url, settings({"*": [{"url": receiver.url, "format": "slack"}]}))
    assert receiver.count() == 7
    for headers, body in receiver.received:
        doc = json.loads(body)
        assert "webhook-signature" not in headers  # no secret configured for it
        [button] = doc["blocks"][-1]["elements"]
        assert button["url"].startswith("https://inbox.example/items/itm_")
        assert doc["blocks"][0]["type"] == "header" and button["url"] in doc["text"]


class Inbox:
    def __init__(self) -> None:
        self.mails: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.mails.append((envelope.rcpt_tos, message_from_bytes(envelope.content)))
        return "250 OK"


def test_email_goes_through_a_real_smtp_server(demo_url: str) -> None:
    inbox = Inbox()
    server = Controller(inbox, hostname="127.0.0.1", port=free_port())
    server.start()
    try:
        smtp = SMTPSettings("127.0.0.1", server.port, "stopline@ops.example")
        hooks = settings({"support-triage": ["mailto:support@ops.example"]}, smtp=smtp)
        summary = notify_pending(demo_url, hooks)
        assert summary.delivered == summary.enqueued > 0
    finally:
        server.stop()
    assert len(inbox.mails) == summary.delivered
    for rcpt, mail in inbox.mails:
        assert rcpt == ["support@ops.example"] and mail["From"] == "stopline@ops.example"
        assert mail["Subject"].startswith("[stopline] support-triage/")
        assert "Open it: https://inbox.example/items/itm_" in mail.get_payload()


def _an_item(url: str, state: str) -> str:
    store = open_store(url)
    try:
        return next(i.id for i in store.list_items() if i.state.value == state)
    finally:
        store.close()


def _outbox(url: str, item_id: str) -> list[Any]:
    store = open_store(url)
    try:
        return [n for n in store.outbox.notifications() if n.item_id == item_id]
    finally:
        store.close()


def _forge(url: str, item_id: str, seq: int, to: str, msg_id: str) -> None:
    """An outbox row written by SQL alone (as someone who can write the database would)."""
    attacker = Attacker(url)
    try:
        attacker.sql(
            "INSERT INTO notifications (id, item_id, seq, url, type, payload, status, attempts,"
            " next_attempt_at, created_at) VALUES (:id, :item, :seq, :url, 'item.stopped',"
            " :payload, 'pending', 0, :at, :at)",
            {
                "id": msg_id,
                "item": item_id,
                "seq": seq,
                "url": to,
                "payload": json.dumps({"forged_marker": 999999}),
                "at": format_time(datetime.now(UTC)),
            },
        )
    finally:
        attacker.close()


def test_outbox_rows_no_notifier_made_are_never_sent(demo_url: str, receiver: Receiver) -> None:
    """A row naming an endpoint nobody configured is never claimed; a row for a configured
    endpoint about an event that is not a stop is refused before sending; whatever a row says,
    what is sent is built from the item's history; verify reports both rows."""
    item_id = _an_item(demo_url, "awaiting_approval")
    _forge(demo_url, item_id, 1, "http://127.0.0.1:9/forged", "ntf_elsewhere")
    _forge(demo_url, item_id, 1, receiver.url, "ntf_not_a_stop")
    notify_pending(demo_url, settings({"*": [receiver.url]}))
    bodies = [json.loads(b) for _, b in receiver.received]
    assert len(bodies) == 7 and all("forged_marker" not in json.dumps(b) for b in bodies)
    store = open_store(demo_url)
    try:
        rows = {n.id: n for n in store.outbox.notifications()}
        assert rows["ntf_elsewhere"].status == PENDING and rows["ntf_elsewhere"].attempts == 0
        assert rows["ntf_not_a_stop"].status == FAILED
        assert "not a stop" in (rows["ntf_not_a_stop"].last_error or "")
        found = {(f.ref, f.reason) for f in verify_store(store).findings}
    finally:
        store.close()
    assert found == {
        ("ntf_elsewhere", "notification_forged"),
        ("ntf_not_a_stop", "notification_forged"),
    }


def test_the_stop_of_an_item_that_does_not_verify_is_sent_to_nobody(
    demo_url: str, receiver: Receiver
) -> None:
    """An item's history rewritten by SQL (who discovered it): its stop is not sent, the
    message fails for good saying why; every other stop goes out."""
    item_id = _an_item(demo_url, "exception")
    attacker = Attacker(demo_url)
    try:
        attacker.sql(
            "UPDATE events SET actor = 'mallory' WHERE item_id = :id AND seq = 1", {"id": item_id}
        )
    finally:
        attacker.close()
    notify_pending(demo_url, settings({"*": [receiver.url]}))
    assert receiver.count() == 6 and item_id not in str(receiver.received)
    [row] = _outbox(demo_url, item_id)
    assert row.status == FAILED and "does not verify" in (row.last_error or "")


def test_the_stop_of_an_item_whose_proposal_was_edited_into_another_shape_is_sent_to_nobody(
    demo_url: str, receiver: Receiver
) -> None:
    """A waiting proposal's ``approvals`` made a number by SQL: the check before sending
    reports it (it used to raise, and the notifier stopped), the message fails for good saying
    why, and every other stop goes out."""
    item_id = _an_item(demo_url, "awaiting_approval")
    store = open_store(demo_url)
    try:
        item = store.get(item_id)
        assert item is not None
        ref = f"{item.automation}/{item.key}"
    finally:
        store.close()
    attacker = Attacker(demo_url)
    try:
        data = attacker.data(ref)
        data["proposal"]["approvals"] = 5
        attacker.put_data(ref, data)
    finally:
        attacker.close()
    notify_pending(demo_url, settings({"*": [receiver.url]}))
    assert receiver.count() == 6 and item_id not in str(receiver.received)
    [row] = _outbox(demo_url, item_id)
    assert row.status == FAILED and "does not verify" in (row.last_error or "")


CASES = {  # what a forged row names: (its event number, what the refusal says)
    "event-0": (0, "has no event"),
    "past-the-last": (99, "has no event"),
    "a-note-on-a-stop": (None, "not a stop"),
    "no-such-item": (1, "not in the store"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_row_that_names_no_stop_of_its_item_is_never_sent(
    demo_url: str, receiver: Receiver, case: str
) -> None:
    """Outbox rows written by SQL: an event number the item does not have (0, past its last),
    an event in a stop state that is no stop (a note on it), an item that is not there:
    refused before sending, failed for good; nothing more reaches the receiver."""
    seq, why = CASES[case]
    item_id = _an_item(demo_url, "exception")
    notify_pending(demo_url, settings({"*": [receiver.url]}))  # the real stops, sent
    sent = receiver.count()
    if seq is None:
        store = open_store(demo_url)
        try:
            Commands(store).note(item_id, actor="alice", body="looked at it")
            seq = len(store.history(item_id))
        finally:
            store.close()
    if case == "no-such-item":
        item_id = "itm_" + "0" * 20
    _forge(demo_url, item_id, seq, receiver.url, "ntf_forged")
    notify_pending(demo_url, settings({"*": [receiver.url]}))
    assert receiver.count() == sent
    [row] = [n for n in _outbox(demo_url, item_id) if n.id == "ntf_forged"]
    assert row.status == FAILED and why in (row.last_error or ""), row.last_error


def _stop_again(url: str, drafts: Path) -> str:
    """A report looked at again (reinspected) and worked by the demo once more: a new stop
    event of that item, whose id is returned."""
    item_id = _an_item(url, "ready_for_review")
    store = open_store(url)
    try:
        Commands(store).reinspect(item_id, actor="alice", reason="look again")
    finally:
        store.close()
    prepare_demo(url, drafts)
    store = open_store(url)
    try:
        assert store.history(item_id)[-1].to_state.value == "ready_for_review"
    finally:
        store.close()
    return item_id


def test_no_message_is_queued_for_a_disabled_endpoint(demo_url: str, tmp_path: Path) -> None:
    """After an endpoint answered 410, a new stop is queued for the other endpoints only."""
    gone, fine = Receiver(status=410), Receiver()
    try:
        hooks = settings({"*": [gone.url, fine.url]})
        notify_pending(demo_url, hooks)
        item_id = _stop_again(demo_url, tmp_path / "drafts")
        summary = notify_pending(demo_url, hooks)
        assert (summary.enqueued, summary.delivered, fine.count(), gone.count()) == (1, 1, 8, 1)
        assert [n.url for n in _outbox(demo_url, item_id)].count(gone.url) == 1  # the first
    finally:
        gone.close()
        fine.close()


def test_a_stop_that_commits_after_a_later_one_was_seen_is_still_sent(
    demo_url: str, receiver: Receiver, tmp_path: Path
) -> None:
    """The notifier reads again the stops within ten minutes before the newest one it has
    seen: a stop whose commit came after one timed five minutes later (another host's clock
    ahead, a long transaction) is still sent."""
    hooks = settings({"*": [receiver.url]})
    notify_pending(demo_url, hooks)
    item_id = _stop_again(demo_url, tmp_path / "drafts")
    store = open_store(demo_url)
    try:
        ahead = store.history(item_id)[-1].at + timedelta(minutes=5)
    finally:
        store.close()
    attacker = Attacker(demo_url)  # as if that later stop had been seen first
    try:
        marks = "UPDATE notify_cursor SET at = :at WHERE name = 'events'"
        assert attacker.sql(marks, {"at": format_time(ahead)}) == 1
    finally:
        attacker.close()
    notify_pending(demo_url, hooks)
    assert receiver.count() == 8 and item_id in str(receiver.received[-1])
