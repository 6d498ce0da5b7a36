"""What a notification says: the facts of one stop (approvals given of those required, when
the oldest evidence goes stale, who may act, the item's link), then format by format the event
type by the state stopped in, the signed headers a receiver checks, a Slack body that no text
of a hook can turn into markup or make unbounded, and an email subject that stays one header
line. Pure functions (``runtime/webhooks.py``); ``docs/webhooks.md`` is the receiver's side."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from helpers import decide_at
from stopline.core.commands import Discover
from stopline.core.frozen import freeze
from stopline.core.records import Event, Item
from stopline.core.states import State
from stopline.runtime.notify_settings import Endpoint, secret_key
from stopline.runtime.webhooks import (
    ITEM_REVISION_FAILED,
    ITEM_STOPPED,
    email_text,
    facts,
    headers,
    messages,
    slack_body,
    standard_body,
)
from stopline.store.outbox import StopEvent
from webhook_receiver import SECRET

AT = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def data_of(**changes: Any) -> dict[str, Any]:
    """The ``data`` of a message (as ``webhooks.facts`` makes it) for a stop awaiting approval."""
    data: dict[str, Any] = {
        "item": "itm_1",
        "automation": "ops",
        "key": "billing-api",
        "state": "awaiting_approval",
        "from_state": "classified",
        "current_state": "awaiting_approval",
        "sequence": 4,
        "command": "propose",
        "reasons": [],
        "at": "2026-03-01T12:00:00.123456Z",
        "action": "restart",
        "target": "billing-api",
        "params": {"service": "billing-api"},
        "why": "p99 above 4 s for 10 minutes",
        "roles_needed": ["approver"],
        "approvals": {"given": 0, "required": 1, "text": "0 of 1"},
        "evidence_expires_at": "2026-03-01T12:30:00.000000Z",
        "url": "https://inbox.example/items/itm_1",
    }
    return {**data, **changes}


def stop(state: str) -> StopEvent:
    return StopEvent("itm_1", "ops", "billing-api", 4, AT, "fail", "revision_prepared", state, ())


@pytest.mark.parametrize(
    ("state", "kind"),
    [("revision_failed", ITEM_REVISION_FAILED), ("awaiting_approval", ITEM_STOPPED),
     ("exception", ITEM_STOPPED), ("exhausted", ITEM_STOPPED)],
)  # fmt: skip
def test_the_event_type_says_whether_a_revision_failed(state: str, kind: str) -> None:
    body = json.loads(standard_body(data_of(state=state, current_state=state)))
    assert body["type"] == kind
    [message] = messages(stop(state), [Endpoint("https://hooks.example/a")], "https://x")
    assert message.type == kind and json.loads(message.payload)["type"] == kind


def test_the_standard_body_is_compact_json_with_its_keys_sorted() -> None:
    """One byte string per message, the same however the facts were put together: the
    signature is over these bytes, so a receiver that stores and re-checks it needs them
    exactly."""
    data = data_of()
    shuffled = dict(reversed(list(data.items())))
    body = standard_body(shuffled)
    assert body == standard_body(data)
    expected = {"type": ITEM_STOPPED, "timestamp": data["at"], "data": data}
    assert body == json.dumps(expected, sort_keys=True, separators=(",", ":")).encode()


def test_the_headers_carry_the_timestamp_the_signature_covers() -> None:
    body = standard_body(data_of())
    sent = headers(SECRET, "msg_1", AT, body)
    assert sent["webhook-id"] == "msg_1"
    assert sent["webhook-timestamp"] == str(int(AT.timestamp()))
    signed = f"msg_1.{sent['webhook-timestamp']}.".encode() + body
    mac = hmac.new(secret_key(SECRET), signed, hashlib.sha256).digest()
    assert sent["webhook-signature"] == "v1," + base64.b64encode(mac).decode()
    assert "webhook-signature" not in headers(None, "msg_1", AT, body)


def test_slack_text_from_a_hook_cannot_become_markup_or_unbounded() -> None:
    """``why`` and the action come from hooks: Slack's control characters are escaped (a
    ``<url|text>`` link cannot be forged) and each field is bounded."""
    forged = "<https://evil.example|Approve here> & more"
    doc = json.loads(slack_body(data_of(why=forged * 200, action="<!channel>")))
    texts = [doc["text"]] + [
        t for block in doc["blocks"] for t in _texts(block) if isinstance(t, str)
    ]
    assert not any("<https://evil" in t or "<!channel>" in t for t in texts)
    [section] = [b for b in doc["blocks"] if b["type"] == "section" and "text" in b]
    assert section["text"]["text"].startswith("&lt;https://evil.example|Approve here&gt; &amp;")
    assert len(section["text"]["text"]) <= 2900
    header = doc["blocks"][0]["text"]["text"]
    assert len(header) <= 150 and "&lt;!channel&gt;" in header


def test_slack_fields_name_the_state_approvals_roles_and_freshness() -> None:
    doc = json.loads(slack_body(data_of()))
    [fields] = [b["fields"] for b in doc["blocks"] if "fields" in b]
    assert [f["text"] for f in fields] == [
        "*State*\nawaiting_approval",
        "*Approvals*\n0 of 1",
        "*Roles needed*\napprover",
        "*Evidence fresh until*\n2026-03-01T12:30:00.000000Z",
    ]
    [actions] = [b for b in doc["blocks"] if b["type"] == "actions"]
    assert actions["elements"][0]["url"] == "https://inbox.example/items/itm_1"


def test_an_email_subject_stays_one_header_line() -> None:
    """An action or key with a line break would add a header (``Bcc:``) to the message."""
    subject, body = email_text(data_of(action="restart\r\nBcc: mallory@example.com"))
    assert "\r" not in subject and "\n" not in subject
    assert subject.startswith("[stopline] ops/billing-api: restart  Bcc: mallory@example.com")
    assert len(email_text(data_of(why="x", action="a" * 500))[0]) <= 200
    assert "Open it: https://inbox.example/items/itm_1" in body


def _texts(value: Any) -> list[Any]:
    """Every string under ``value`` (a Slack block)."""
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return [value]


PROPOSAL = {
    "action": "restart",
    "target": "billing-api",
    "params": {"service": "billing-api"},
    "required_roles": ["approver", "sre"],
    "required_approvals": 2,
    "approvals": [{"actor": "alice"}],
    "max_evidence_age": 600,
    "evidence": [
        {"digest": "a" * 64, "observed_at": "2026-03-01T11:58:00.000000Z"},
        {"digest": "b" * 64, "observed_at": "2026-03-01T11:50:00.000000Z"},
    ],
}


def stopped(state: State, data: dict[str, Any]) -> tuple[Item, Event]:
    """An item stopped in ``state`` with ``data``, and the event that stopped it."""
    found = decide_at(None, Discover("itm_1", "ops", "billing-api", {}), AT).after
    assert found is not None
    item = replace(found, state=state, data=freeze(data), seq=4)
    event = Event.sealed(
        item_id=item.id, seq=4, at=AT, command="propose", actor="w1",
        from_state=State.CLASSIFIED, to_state=state, reasons=(), digests={}, detail={},
        prev_hash="",
    )  # fmt: skip
    return item, event


def test_the_facts_of_a_stop_awaiting_approval() -> None:
    """Approvals given of those required, the roles that may give them, and when the oldest
    evidence stops being fresh enough to approve (its observation plus the policy's age)."""
    item, event = stopped(State.AWAITING_APPROVAL, {"proposal": PROPOSAL})
    data = facts(item, event, "needs two approvals", "https://inbox.example/")
    assert data["approvals"] == {"given": 1, "required": 2, "text": "1 of 2"}
    assert data["roles_needed"] == ["approver", "sre"]
    assert data["evidence_expires_at"] == "2026-03-01T12:00:00.000000Z"
    assert (data["action"], data["target"]) == ("restart", "billing-api")
    assert data["url"] == f"https://inbox.example/items/{item.id}"
    no_age = facts(
        *stopped(State.AWAITING_APPROVAL, {"proposal": {**PROPOSAL, "max_evidence_age": None}}),
        "x",
        "https://inbox.example",
    )
    assert no_age["evidence_expires_at"] is None


def test_the_facts_of_another_stop_name_its_owner_and_no_proposal() -> None:
    """An item in ``exception`` with a proposal still in its data: the message is about the
    exception (its owner is the role to act), not about an approval it no longer waits for."""
    exception = {"owner": "operators", "why": "the API answered 500"}
    item, event = stopped(State.EXCEPTION, {"proposal": PROPOSAL, "exception": exception})
    data = facts(item, event, "the API answered 500", "https://inbox.example")
    assert data["roles_needed"] == ["operators"]
    assert (data["action"], data["approvals"], data["evidence_expires_at"]) == (None, None, None)
