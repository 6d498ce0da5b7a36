"""Notification messages: who gets a stop, what each format says, and the signature.

Pure functions; ``docs/webhooks.md`` is the receiver's side of the same rules. A message id is
derived from (item, event number, URL), so a message made twice (two hosts, a re-read of the
event log) is the same message, and every retry of it carries the same ``webhook-id``.

What a message says is built when it is sent, from the item's sealed history (the notifier
checks the seal first): the outbox row only says which event goes to which endpoint. The
``data`` of every format carries the same facts (:func:`facts`): the action and its target,
why the item stopped, the roles that may act, approvals given of those required, when the
evidence stops being fresh, and the link to the item's page.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ..core.canonical import format_time, parse_time, to_plain
from ..core.records import Event, Item
from ..core.states import State
from ..store.outbox import Message, StopEvent, message_id
from .notify_settings import Endpoint, WebhookSecretError, secret_key

__all__ = [
    "ITEM_REVISION_FAILED",
    "ITEM_STOPPED",
    "WebhookSecretError",
    "email_text",
    "facts",
    "headers",
    "message_id",
    "messages",
    "sign",
    "slack_body",
    "standard_body",
]

ITEM_STOPPED = "item.stopped"
ITEM_REVISION_FAILED = "item.revision_failed"


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value: ``v1,<base64 HMAC-SHA256>`` of
    ``{id}.{timestamp}.{body}``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    mac = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode("ascii")


def headers(secret: str | None, msg_id: str, now: datetime, body: bytes) -> dict[str, str]:
    """The headers of one attempt, signed at ``now`` (unsigned without a secret)."""
    timestamp = int(now.timestamp())
    out = {
        "content-type": "application/json",
        "user-agent": "stopline-webhooks",
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
    }
    if secret:
        out["webhook-signature"] = sign(secret, msg_id, timestamp, body)
    return out


def kind_of(to_state: str) -> str:
    return ITEM_REVISION_FAILED if to_state == State.REVISION_FAILED else ITEM_STOPPED


def _event_payload(event: StopEvent, base_url: str) -> str:
    """What the outbox row records about the event (for people reading the table; a sender
    never sends it: it builds the message again from the sealed history)."""
    data = {
        "item": event.item_id,
        "automation": event.automation,
        "key": event.key,
        "state": event.to_state,
        "sequence": event.seq,
        "url": f"{base_url.rstrip('/')}/items/{event.item_id}",
    }
    body = {"type": kind_of(event.to_state), "timestamp": format_time(event.at), "data": data}
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def messages(event: StopEvent, endpoints: list[Endpoint], base_url: str) -> list[Message]:
    """One message per endpoint configured for the event's automation."""
    body = _event_payload(event, base_url)
    kind = kind_of(event.to_state)
    return [
        Message(
            message_id(event.item_id, event.seq, e.url), event.item_id, event.seq, e.url, kind, body
        )
        for e in endpoints
    ]


def _evidence_expiry(proposal: Mapping[str, Any] | None) -> str | None:
    """When the oldest evidence the proposal rests on stops being fresh enough to approve."""
    if not proposal or proposal.get("max_evidence_age") is None:
        return None
    observed = [ev.get("observed_at") for ev in proposal.get("evidence", ())]
    if not observed or any(o is None for o in observed):
        return None
    oldest = min(parse_time(str(o)) for o in observed)
    return format_time(oldest + timedelta(seconds=float(proposal["max_evidence_age"])))


def facts(item: Item, event: Event, why: str, base_url: str) -> dict[str, Any]:
    """The ``data`` of a message about ``event`` (a stop) of ``item``, as it stands now."""
    d = item.data
    proposal = d.get("proposal") if event.to_state is State.AWAITING_APPROVAL else None
    exception = d.get("exception") or {}
    roles: list[str] = []
    approvals = None
    if proposal:
        roles = sorted(proposal.get("required_roles", ()))
        given, required = len(proposal.get("approvals", ())), int(proposal["required_approvals"])
        approvals = {"given": given, "required": required, "text": f"{given} of {required}"}
    elif event.to_state is State.EXCEPTION and exception.get("owner"):
        roles = [str(exception["owner"])]
    return {
        "item": item.id,
        "automation": item.automation,
        "key": item.key,
        "state": event.to_state.value,
        "from_state": None if event.from_state is None else event.from_state.value,
        "current_state": item.state.value,
        "sequence": event.seq,
        "command": event.command,
        "reasons": list(event.reasons),
        "at": format_time(event.at),
        "action": None if not proposal else proposal.get("action"),
        "target": None if not proposal else proposal.get("target"),
        "params": None if not proposal else to_plain(proposal.get("params")),
        "why": why,
        "roles_needed": roles,
        "approvals": approvals,
        "evidence_expires_at": _evidence_expiry(proposal),
        "url": f"{base_url.rstrip('/')}/items/{item.id}",
    }


def _dump(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")


def standard_body(data: Mapping[str, Any]) -> bytes:
    """The Standard Webhooks body: ``{"type", "timestamp", "data"}``, compact, keys sorted."""
    return _dump({"type": kind_of(str(data["state"])), "timestamp": data["at"], "data": data})


def _headline(data: Mapping[str, Any]) -> str:
    what = f"{data['automation']}/{data['key']}"
    if data.get("action"):
        return f"{what}: {data['action']} on {data.get('target') or '-'} needs approval"
    return f"{what} stopped in {data['state']}"


def _slack_text(value: object, limit: int = 2900) -> str:
    """Text for a Slack mrkdwn field: its control characters escaped, bounded in length."""
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text[:limit]


def slack_body(data: Mapping[str, Any]) -> bytes:
    """A Slack-compatible incoming-webhook body: a fallback ``text`` and blocks with the facts
    and a button to the item's page."""
    fields = [f"*State*\n{data['state']}"]
    if data.get("approvals"):
        fields.append(f"*Approvals*\n{data['approvals']['text']}")
    if data.get("roles_needed"):
        fields.append(f"*Roles needed*\n{', '.join(data['roles_needed'])}")
    if data.get("evidence_expires_at"):
        fields.append(f"*Evidence fresh until*\n{data['evidence_expires_at']}")
    headline = _slack_text(_headline(data), 150)
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": headline}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _slack_text(data["why"] or "-")}},
        {
            "type": "section",
            "fields": [{"type": "mrkdwn", "text": _slack_text(f, 500)} for f in fields],
        },
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Open in stopline"},
                    "url": data["url"],
                }
            ],
        },
    ]
    return _dump({"text": f"{headline}: {data['url']}", "blocks": blocks})


def email_text(data: Mapping[str, Any]) -> tuple[str, str]:
    """``(subject, plain-text body)`` of the email about a stop."""
    lines = [
        _headline(data),
        "",
        f"Why: {data['why'] or '-'}",
        f"State: {data['state']} (now {data['current_state']})",
    ]
    if data.get("approvals"):
        lines.append(f"Approvals: {data['approvals']['text']}")
    if data.get("roles_needed"):
        lines.append(f"Roles needed: {', '.join(data['roles_needed'])}")
    if data.get("evidence_expires_at"):
        lines.append(f"Evidence fresh until: {data['evidence_expires_at']}")
    lines += ["", f"Open it: {data['url']}", ""]
    subject = "[stopline] " + _headline(data)
    # a header holds one line: every character that is not printable (a line break of any
    # kind, U+2028, a vertical tab, NEL, ...) is a space, or the email package raises
    return "".join(c if c.isprintable() else " " for c in subject)[:200], "\n".join(lines)
