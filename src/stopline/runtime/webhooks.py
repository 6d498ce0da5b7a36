"""Webhook messages in the Standard Webhooks form: who gets a stop, its body, its signature.

Pure functions; ``docs/webhooks.md`` is the receiver's side of the same rules. A message id is
derived from (item, event number, URL), so a message made twice (two hosts, a re-read of the
event log) is the same message, and every retry of it carries the same ``webhook-id``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from datetime import datetime

from ..core.canonical import format_time
from ..core.states import State
from ..store.outbox import Message, StopEvent

ITEM_STOPPED = "item.stopped"
ITEM_REVISION_FAILED = "item.revision_failed"
EVERY_AUTOMATION = "*"
SECRET_PREFIX = "whsec_"


class WebhookSecretError(ValueError):
    """A signing secret that cannot sign."""


def secret_key(secret: str) -> bytes:
    """The HMAC key: the base64 after ``whsec_``, else the secret's UTF-8 bytes."""
    if not secret:
        raise WebhookSecretError("the webhook secret is empty")
    if not secret.startswith(SECRET_PREFIX):
        return secret.encode("utf-8")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error as exc:
        raise WebhookSecretError(f"the part after {SECRET_PREFIX} is not base64: {exc}") from exc
    if not key:
        raise WebhookSecretError(f"the secret has no key after {SECRET_PREFIX}")
    return key


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value: ``v1,<base64 HMAC-SHA256>`` of
    ``{id}.{timestamp}.{body}``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    mac = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode("ascii")


def headers(secret: str, msg_id: str, now: datetime, body: bytes) -> dict[str, str]:
    """The headers of one attempt, signed at ``now``."""
    timestamp = int(now.timestamp())
    return {
        "content-type": "application/json",
        "user-agent": "stopline-webhooks",
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, msg_id, timestamp, body),
    }


def urls_for(webhooks: Mapping[str, Sequence[str]], automation: str) -> list[str]:
    """The URLs configured for ``automation``, then those for every automation, each once."""
    found = [*webhooks.get(automation, ()), *webhooks.get(EVERY_AUTOMATION, ())]
    return list(dict.fromkeys(found))


def message_id(item_id: str, seq: int, url: str) -> str:
    return "msg_" + hashlib.sha256(f"{item_id}:{seq}:{url}".encode()).hexdigest()[:32]


def payload(event: StopEvent, base_url: str) -> tuple[str, str]:
    """``(type, body)`` of the message about ``event``; the body is compact JSON, keys sorted."""
    kind = ITEM_REVISION_FAILED if event.to_state == State.REVISION_FAILED else ITEM_STOPPED
    at = format_time(event.at)
    data = {
        "item": event.item_id,
        "automation": event.automation,
        "key": event.key,
        "state": event.to_state,
        "from_state": event.from_state,
        "sequence": event.seq,
        "command": event.command,
        "reasons": list(event.reasons),
        "at": at,
        "url": f"{base_url.rstrip('/')}/items/{event.item_id}",
    }
    body = {"type": kind, "timestamp": at, "data": data}
    return kind, json.dumps(body, sort_keys=True, separators=(",", ":"))


def messages(
    event: StopEvent, webhooks: Mapping[str, Sequence[str]], base_url: str
) -> list[Message]:
    """One message per URL configured for the event's automation."""
    kind, body = payload(event, base_url)
    return [
        Message(
            message_id(event.item_id, event.seq, url), event.item_id, event.seq, url, kind, body
        )
        for url in urls_for(webhooks, event.automation)
    ]
