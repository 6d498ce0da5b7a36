"""Webhook notifications: an item entered a stop state, or a revision failed.

An outbox of its own (``notifications``, ``notification_attempts``, ``notify_cursor``; created
in migration 0002) is filled from the event log and
delivered with a bounded retry budget. Nothing here touches an item: a notification that
cannot be delivered is recorded as failed, and the item is exactly as it was.

Signatures follow Standard Webhooks; ``docs/webhooks.md`` says how a receiver verifies them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from ..core.canonical import format_time
from ..core.states import STOP_STATES, State
from ..store import Store, open_store
from .sql import SQL

LOOKBACK = timedelta(minutes=10)  # events committed out of time order are still seen
_STOPS = ", ".join(f"'{s.value}'" for s in sorted(STOP_STATES))
_NEW_STOPS = (
    "SELECT e.item_id, e.seq, e.at, e.command, e.from_state, e.to_state, e.reasons,"
    " i.automation, i.key FROM events e JOIN items i ON i.id = e.item_id"
    f" WHERE e.at > :since AND e.to_state IN ({_STOPS})"
    " AND (e.from_state IS NULL OR e.from_state <> e.to_state)"
    " ORDER BY e.at, e.item_id, e.seq"
)
_ENQUEUE = (
    "INSERT INTO notifications (id, item_id, seq, url, type, payload, status, attempts,"
    " next_attempt_at, created_at) VALUES (:id, :item_id, :seq, :url, :type, :payload,"
    " 'pending', 0, :now, :now) ON CONFLICT DO NOTHING"
)
_CURSOR_GET = "SELECT name, at FROM notify_cursor"
_CURSOR_SET = (
    "INSERT INTO notify_cursor (name, at) VALUES (:name, :at)"
    " ON CONFLICT (name) DO UPDATE SET at = excluded.at"
)
_DUE = (
    "SELECT id, url, payload, attempts, next_attempt_at FROM notifications"
    " WHERE status = 'pending' AND next_attempt_at <= :now ORDER BY next_attempt_at LIMIT :limit"
)
_CLAIM = (
    "UPDATE notifications SET next_attempt_at = :lease WHERE id = :id AND status = 'pending'"
    " AND next_attempt_at = :seen"
)
_RESULT = (
    "UPDATE notifications SET status = :status, attempts = :attempts, next_attempt_at = :next,"
    " last_error = :error, delivered_at = :delivered WHERE id = :id"
)
_ATTEMPT = (
    "INSERT INTO notification_attempts (notification_id, attempt, at, status_code, error)"
    " VALUES (:id, :attempt, :at, :code, :error)"
)


def secret_key(secret: str) -> bytes:
    """The HMAC key: the base64 after ``whsec_``, else the secret's UTF-8 bytes."""
    if secret.startswith("whsec_"):
        return base64.b64decode(secret[len("whsec_") :])
    return secret.encode("utf-8")


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value: ``v1,<base64 HMAC-SHA256>``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    mac = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode("ascii")


@dataclass
class Summary:
    enqueued: int = 0
    delivered: int = 0
    retrying: int = 0
    failed: int = 0


def _urls(urls_by_automation: Mapping[str, Sequence[str]], automation: str) -> list[str]:
    return list(
        dict.fromkeys([*urls_by_automation.get(automation, ()), *urls_by_automation.get("*", ())])
    )


def _event_time(sql: SQL, value: Any) -> datetime:
    found = (
        value
        if isinstance(value, datetime)
        else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    )
    return found.astimezone(UTC)


def enqueue(
    sql: SQL,
    urls_by_automation: Mapping[str, Sequence[str]],
    base_url: str,
    now: datetime,
    backfill: float = 0.0,
) -> int:
    """Add one outbox row per (new stop event, URL); returns how many were added."""
    marks = {r["name"]: datetime.fromisoformat(r["at"]) for r in sql.rows(_CURSOR_GET)}
    start = marks.get("start") or now - timedelta(seconds=backfill)
    high = marks.get("events", start)
    since = max(start, high - LOOKBACK)
    events = sql.rows(_NEW_STOPS, {"since": sql.time(since)})
    statements: list[tuple[str, Mapping[str, Any]]] = []
    if "start" not in marks:
        statements.append((_CURSOR_SET, {"name": "start", "at": start.isoformat()}))
    latest = high
    for e in events:
        at = _event_time(sql, e["at"])
        latest = max(latest, at)
        kind = "item.revision_failed" if e["to_state"] == State.REVISION_FAILED else "item.stopped"
        data = {
            "item": e["item_id"],
            "automation": e["automation"],
            "key": e["key"],
            "state": e["to_state"],
            "from_state": e["from_state"],
            "sequence": int(e["seq"]),
            "command": e["command"],
            "reasons": list(sql.json(e["reasons"]) or []),
            "at": format_time(at),
            "url": f"{base_url.rstrip('/')}/items/{e['item_id']}",
        }
        for url in _urls(urls_by_automation, e["automation"]):
            msg_id = (
                "msg_"
                + hashlib.sha256(f"{e['item_id']}:{e['seq']}:{url}".encode()).hexdigest()[:32]
            )
            payload = {"type": kind, "timestamp": format_time(at), "data": data}
            statements.append(
                (
                    _ENQUEUE,
                    {
                        "id": msg_id,
                        "item_id": e["item_id"],
                        "seq": int(e["seq"]),
                        "url": url,
                        "type": kind,
                        "payload": json.dumps(payload, sort_keys=True, separators=(",", ":")),
                        "now": format_time(now),
                    },
                )
            )
    statements.append((_CURSOR_SET, {"name": "events", "at": latest.isoformat()}))
    counts = sql.write(statements)
    return sum(
        max(c, 0) for query, c in zip(statements, counts, strict=True) if query[0] == _ENQUEUE
    )


def _post(
    client: httpx.Client, secret: str, row: Mapping[str, Any], now: datetime
) -> tuple[int | None, str | None]:
    body = str(row["payload"]).encode("utf-8")
    timestamp = int(now.timestamp())
    headers = {
        "content-type": "application/json",
        "user-agent": "stopline-webhooks",
        "webhook-id": row["id"],
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, row["id"], timestamp, body),
    }
    try:
        response = client.post(row["url"], content=body, headers=headers)
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"[:500]
    if 200 <= response.status_code < 300:
        return response.status_code, None
    return response.status_code, f"HTTP {response.status_code}"


def deliver(
    sql: SQL,
    secret: str,
    now: datetime,
    *,
    max_attempts: int,
    base_delay: float,
    timeout: float,
    transport: httpx.BaseTransport | None = None,
    limit: int = 100,
) -> Summary:
    summary = Summary()
    due = sql.rows(_DUE, {"now": format_time(now), "limit": limit})
    lease = format_time(now + timedelta(seconds=timeout * 2 + 30))
    with httpx.Client(timeout=timeout, transport=transport, follow_redirects=False) as client:
        for row in due:
            claimed = sql.write(
                [(_CLAIM, {"id": row["id"], "lease": lease, "seen": row["next_attempt_at"]})]
            )
            if claimed[0] != 1:
                continue  # another notifier took it
            code, problem = _post(client, secret, row, now)
            attempt = int(row["attempts"]) + 1
            if problem is None:
                status, nxt = "delivered", format_time(now)
                summary.delivered += 1
            elif attempt >= max_attempts:
                status, nxt = "failed", format_time(now)
                summary.failed += 1
            else:
                delay = min(base_delay * 2 ** (attempt - 1), 3600.0)
                status, nxt = "pending", format_time(now + timedelta(seconds=delay))
                summary.retrying += 1
            sql.write(
                [
                    (
                        _ATTEMPT,
                        {
                            "id": row["id"],
                            "attempt": attempt,
                            "at": format_time(now),
                            "code": code,
                            "error": problem,
                        },
                    ),
                    (
                        _RESULT,
                        {
                            "id": row["id"],
                            "status": status,
                            "attempts": attempt,
                            "next": nxt,
                            "error": problem,
                            "delivered": format_time(now) if status == "delivered" else None,
                        },
                    ),
                ]
            )
    return summary


def notify_pending(
    store_url: str,
    secret: str,
    urls_by_automation: Mapping[str, Sequence[str]],
    base_url: str,
    *,
    now: datetime | None = None,
    max_attempts: int = 5,
    base_delay: float = 10.0,
    timeout: float = 5.0,
    backfill: float = 0.0,
    transport: httpx.BaseTransport | None = None,
    store: Store | None = None,
) -> Summary:
    """Enqueue notifications for stop events after the stored cursor, then deliver what is
    due. The first run starts ``backfill`` seconds in the past. A delivery is tried at most
    ``max_attempts`` times, ``base_delay * 2**(n-1)`` seconds apart; every try is recorded."""
    opened = store is None
    target = open_store(store_url, migrate=False) if store is None else store
    try:
        sql = SQL(target)
        moment = now or datetime.now(UTC)
        added = enqueue(sql, urls_by_automation, base_url, moment, backfill)
        summary = deliver(
            sql,
            secret,
            moment,
            max_attempts=max_attempts,
            base_delay=base_delay,
            timeout=timeout,
            transport=transport,
        )
        summary.enqueued = added
        return summary
    finally:
        if opened:
            target.close()
