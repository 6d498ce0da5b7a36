"""The notification outbox port: messages about items that stopped, and their delivery.

The outbox is filled from the event log: :meth:`Outbox.new_stops` reads the events past a
cursor that put an item into a stop state, and :meth:`Outbox.enqueue` adds one message per
(event, URL) and moves the cursor, in one transaction. A sender then takes one due message at a
time with :meth:`Outbox.claim_next`, which leases it (its next attempt time becomes the end of
the lease, so no other sender takes it meanwhile), and records the outcome with
:meth:`Outbox.record_attempt`, fenced by that lease: two senders never both hold one message.
The retry rule is :func:`after_attempt`, the same for every host.

Nothing here touches an item: the outbox tables (migration 0002) are apart from its history.
Outbox times are RFC 3339 UTC text on both databases. The SQL is in ``sql/common/outbox.sql``
and ``sql/<dialect>/outbox.sql``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from ..core.canonical import format_time, parse_time
from ..core.states import STOP_STATES
from .errors import StoreError
from .queries import load

if TYPE_CHECKING:
    from .base import SQLStore

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
STATUSES = (PENDING, DELIVERED, FAILED)
_STOPS = json.dumps(sorted(state.value for state in STOP_STATES))


@dataclass(frozen=True)
class StopEvent:
    """An event that put an item into a stop state it was not already in."""

    item_id: str
    automation: str
    key: str
    seq: int
    at: datetime
    command: str
    from_state: str | None
    to_state: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class StopBatch:
    """The stop events read past the cursor, and the cursor they move it to."""

    events: tuple[StopEvent, ...]
    start: datetime  # when notifications were first switched on (kept once written)
    cursor: datetime  # the newest event time seen so far


@dataclass(frozen=True)
class Message:
    """A notification to add: ``payload`` is the exact body every attempt sends."""

    id: str
    item_id: str
    seq: int
    url: str
    type: str
    payload: str


@dataclass(frozen=True)
class Notification(Message):
    """A message in the outbox, with where its delivery stands. While a sender holds it,
    ``next_attempt_at`` is the end of its lease."""

    status: str
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None


@dataclass(frozen=True)
class AttemptResult:
    """What one delivery attempt got: ``error`` is ``None`` exactly when it was accepted.
    ``final``: no attempt may follow (the message fails now); ``disable``: the endpoint said
    it is gone (``410``), so it is disabled and its waiting messages fail with it."""

    status_code: int | None
    error: str | None
    final: bool = False
    disable: bool = False

    @property
    def accepted(self) -> bool:
        return self.error is None


class RetryRule(Protocol):
    """How many attempts a message gets, and the wait after attempt number ``attempt``."""

    @property
    def max_attempts(self) -> int: ...

    def delay(self, attempt: int) -> timedelta: ...


@dataclass(frozen=True)
class DisabledEndpoint:
    """An endpoint that answered ``410 Gone``: nothing is sent to it until it is enabled."""

    url: str
    disabled_at: datetime
    reason: str


def message_id(item_id: str, seq: int, url: str) -> str:
    """The id of the message about event ``seq`` of ``item_id`` to ``url``: the same every
    time it is made, so a message made twice is one message (and ``verify`` can check it)."""
    return "msg_" + hashlib.sha256(f"{item_id}:{seq}:{url}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Attempt:
    """One recorded delivery attempt."""

    notification_id: str
    attempt: int
    at: datetime
    status_code: int | None
    error: str | None


def after_attempt(
    attempt: int, result: AttemptResult, now: datetime, retry: RetryRule
) -> tuple[str, datetime]:
    """The status and next attempt time after attempt number ``attempt`` (1-based): delivered
    when accepted, failed when the result is final or once ``retry.max_attempts`` attempts
    are spent, else pending again after ``retry.delay(attempt)``."""
    if result.accepted:
        return DELIVERED, now
    if result.final or result.disable or attempt >= retry.max_attempts:
        return FAILED, now
    return PENDING, now + retry.delay(attempt)


class Outbox(Protocol):
    """The notification outbox: enqueue from the event log, claim, record, list."""

    def new_stops(self, now: datetime, backfill: float, lookback: timedelta) -> StopBatch:
        """Stop events after the cursor (the first time: after ``now - backfill``). Events
        within ``lookback`` of the newest one seen are read again: an event whose commit came
        late is still found (:meth:`enqueue` adds each message once)."""
        ...

    def enqueue(self, batch: StopBatch, messages: Sequence[Message], now: datetime) -> int:
        """Add the messages not yet in the outbox and move the cursor to ``batch.cursor``, in
        one transaction; returns how many were added."""
        ...

    def claim_next(
        self, now: datetime, lease_seconds: float, urls: Sequence[str]
    ) -> Notification | None:
        """Lease the most overdue pending message to one of ``urls`` (the endpoints the
        sender has configured) until ``now + lease_seconds``."""
        ...

    def record_attempt(
        self, claimed: Notification, result: AttemptResult, now: datetime, retry: RetryRule
    ) -> Notification | None:
        """Record one attempt of a claimed message and its next status (:func:`after_attempt`);
        with ``result.disable`` also disable its endpoint. ``None``, with nothing written,
        when the lease was lost to another claim."""
        ...

    def disabled_endpoints(self) -> list[DisabledEndpoint]: ...

    def enable_endpoint(self, url: str) -> bool:
        """Send to ``url`` again; ``False`` when it was not disabled."""
        ...

    def notifications(self, *, status: str | None = None, limit: int = 1000) -> list[Notification]:
        """Messages, oldest first (only those in ``status`` when given)."""
        ...

    def attempts(self, notification_id: str) -> list[Attempt]: ...

    def count_by_status(self) -> dict[str, int]: ...


class SQLOutbox:
    """:class:`Outbox` on a SQL store's connections."""

    def __init__(self, store: SQLStore) -> None:
        self._store = store
        self._q = load(store.dialect, store.pyformat, "outbox")

    # --- filling ------------------------------------------------------------------------------

    def new_stops(self, now: datetime, backfill: float, lookback: timedelta) -> StopBatch:
        s = self._store
        with s._read() as cur:
            cur.execute(self._q["cursor_marks"], {})
            marks = {str(r["name"]): parse_time(str(r["at"])) for r in cur.fetchall()}
        start = marks.get("start") or now - timedelta(seconds=backfill)
        high = marks.get("events", start)
        since = max(start, high - lookback)
        with s._read() as cur:
            cur.execute(self._q["stop_events_since"], {"since": s._time(since), "stops": _STOPS})
            rows = cur.fetchall()
        events = tuple(self._stop_event(r) for r in rows)
        cursor = max([high, *(e.at for e in events)])
        return StopBatch(events, start, cursor)

    def _stop_event(self, row: Mapping[str, Any]) -> StopEvent:
        s = self._store
        at = s._from_time(row["at"])
        if at is None:
            raise StoreError(f"event {row['item_id']}#{row['seq']} has no time")
        return StopEvent(
            item_id=row["item_id"],
            automation=row["automation"],
            key=row["key"],
            seq=int(row["seq"]),
            at=at,
            command=row["command"],
            from_state=row["from_state"],
            to_state=row["to_state"],
            reasons=tuple(str(code) for code in s._from_json(row["reasons"]) or ()),
        )

    def enqueue(self, batch: StopBatch, messages: Sequence[Message], now: datetime) -> int:
        s = self._store
        added = 0
        with s._write() as cur:
            cur.execute(self._q["set_cursor_start"], {"at": format_time(batch.start)})
            for message in messages:
                cur.execute(
                    self._q["enqueue"],
                    {
                        "id": message.id,
                        "item_id": message.item_id,
                        "seq": message.seq,
                        "url": message.url,
                        "type": message.type,
                        "payload": message.payload,
                        "now": format_time(now),
                    },
                )
                added += max(s._rowcount(cur), 0)
            cur.execute(self._q["set_cursor_events"], {"at": format_time(batch.cursor)})
        return added

    # --- sending ------------------------------------------------------------------------------

    def claim_next(
        self, now: datetime, lease_seconds: float, urls: Sequence[str]
    ) -> Notification | None:
        if lease_seconds <= 0:
            raise ValueError("a lease lasts a positive number of seconds")
        lease = format_time(now + timedelta(seconds=lease_seconds))
        known = json.dumps(sorted(set(urls)))
        with self._store._write() as cur:
            cur.execute(
                self._q["claim_next"], {"now": format_time(now), "lease": lease, "urls": known}
            )
            row = cur.fetchone()
        return None if row is None else _notification(row)

    def record_attempt(
        self, claimed: Notification, result: AttemptResult, now: datetime, retry: RetryRule
    ) -> Notification | None:
        attempt = claimed.attempts + 1
        status, next_at = after_attempt(attempt, result, now, retry)
        delivered = now if status == DELIVERED else None
        s = self._store
        with s._write() as cur:
            cur.execute(
                self._q["record_result"],
                {
                    "id": claimed.id,
                    "status": status,
                    "attempts": attempt,
                    "next": format_time(next_at),
                    "error": result.error,
                    "delivered": None if delivered is None else format_time(delivered),
                    "seen_attempts": claimed.attempts,
                    "lease": format_time(claimed.next_attempt_at),
                },
            )
            if s._rowcount(cur) != 1:
                return None  # the lease ran out and another claim took the message
            cur.execute(
                self._q["insert_attempt"],
                {
                    "id": claimed.id,
                    "attempt": attempt,
                    "at": format_time(now),
                    "status_code": result.status_code,
                    "error": result.error,
                },
            )
            if result.disable:
                reason = f"disabled: {result.error}"
                at = format_time(now)
                cur.execute(
                    self._q["disable_endpoint"], {"url": claimed.url, "at": at, "reason": reason}
                )
                cur.execute(self._q["fail_pending_for"], {"url": claimed.url, "reason": reason})
        return replace(
            claimed,
            status=status,
            attempts=attempt,
            next_attempt_at=next_at,
            last_error=result.error,
            delivered_at=delivered,
        )

    # --- endpoints ----------------------------------------------------------------------------

    def disabled_endpoints(self) -> list[DisabledEndpoint]:
        with self._store._read() as cur:
            cur.execute(self._q["disabled_endpoints"], {})
            rows = cur.fetchall()
        return [
            DisabledEndpoint(str(r["url"]), parse_time(str(r["disabled_at"])), str(r["reason"]))
            for r in rows
        ]

    def enable_endpoint(self, url: str) -> bool:
        s = self._store
        with s._write() as cur:
            cur.execute(self._q["enable_endpoint"], {"url": url})
            return s._rowcount(cur) > 0

    # --- reading ------------------------------------------------------------------------------

    def notifications(self, *, status: str | None = None, limit: int = 1000) -> list[Notification]:
        with self._store._read() as cur:
            cur.execute(self._q["list_notifications"], {"status": status, "limit": limit})
            return [_notification(r) for r in cur.fetchall()]

    def attempts(self, notification_id: str) -> list[Attempt]:
        with self._store._read() as cur:
            cur.execute(self._q["list_attempts"], {"id": notification_id})
            rows = cur.fetchall()
        return [
            Attempt(
                notification_id=r["notification_id"],
                attempt=int(r["attempt"]),
                at=parse_time(r["at"]),
                status_code=None if r["status_code"] is None else int(r["status_code"]),
                error=r["error"],
            )
            for r in rows
        ]

    def count_by_status(self) -> dict[str, int]:
        with self._store._read() as cur:
            cur.execute(self._q["count_by_status"], {})
            return {str(r["status"]): int(r["n"]) for r in cur.fetchall()}


def _notification(row: Mapping[str, Any]) -> Notification:
    return Notification(
        id=row["id"],
        item_id=row["item_id"],
        seq=int(row["seq"]),
        url=row["url"],
        type=row["type"],
        payload=row["payload"],
        status=row["status"],
        attempts=int(row["attempts"]),
        next_attempt_at=parse_time(row["next_attempt_at"]),
        last_error=row["last_error"],
        created_at=parse_time(row["created_at"]),
        delivered_at=None if row["delivered_at"] is None else parse_time(row["delivered_at"]),
    )
