"""The insights port: what presentation reads about the whole store, never one item's record.

Metrics, the inbox and listings ask here for aggregates (items by state, decisions by command,
refusals, attempts, notifications) and for the automation list, instead of reaching into the
tables. Every method is a read; the SQL is in ``sql/common/insights.sql`` (and, where a
dialect differs, ``sql/<dialect>/insights.sql``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..core import severity
from ..core.records import Item
from ..core.severity import SEVERITIES
from .heartbeats import WorkerBeat
from .outbox import DisabledEndpoint
from .queries import load

if TYPE_CHECKING:
    from .base import SQLStore

SORTS = ("oldest", "newest", "severity")
MAX_PAGE = 500  # the most rows one page query returns, whatever it asks for


@dataclass(frozen=True)
class StateCount:
    """How many items are in ``state``; ``oldest`` is the earliest last change among them."""

    state: str
    count: int
    oldest: datetime | None


@dataclass(frozen=True)
class TransitionCount:
    """How many applied decisions (events) had this command, move and reason codes."""

    command: str
    from_state: str | None
    to_state: str
    reasons: tuple[str, ...]
    count: int


@dataclass(frozen=True)
class RefusalCount:
    """How many refusals of ``command`` named exactly these reason codes."""

    command: str
    reasons: tuple[str, ...]
    count: int


@dataclass(frozen=True)
class PageKey:
    """Where a keyset page of stopped items starts: after the row with this key (the rows are
    ordered by it, so a page stays where it was while items arrive or leave)."""

    severity: int  # the rank in core.severity.SEVERITIES
    since: datetime
    id: str


@dataclass(frozen=True)
class StopQuery:
    """Which stopped items the inbox lists, in which order, from where."""

    state: str | None = None
    automation: str | None = None
    text: str | None = None  # matched in automation/key and the reason the item stopped
    stopped_before: datetime | None = None  # only items stopped before this time (overdue)
    sort: str = "oldest"  # oldest | newest | severity
    after: PageKey | None = None
    limit: int = 50


@dataclass(frozen=True)
class StopRow:
    """A stopped item, when it entered its current state, and its severity."""

    item: Item
    since: datetime
    severity: str

    @property
    def key(self) -> PageKey:
        return PageKey(SEVERITIES.index(self.severity), self.since, self.item.id)


@dataclass(frozen=True)
class AutomationStateCount:
    """How many items of ``automation`` are in ``state``; ``oldest``: the earliest last change."""

    automation: str
    state: str
    count: int
    oldest: datetime | None


@dataclass(frozen=True)
class StopSpan:
    """An item of ``automation`` stopped at ``stopped_at`` and was moved on at ``decided_at``."""

    automation: str
    stopped_at: datetime
    decided_at: datetime


class Insights(Protocol):
    """Read-only aggregates and listings for metrics, the inbox and the API."""

    def count_by_state(self) -> list[StateCount]:
        """Every state that holds at least one item, in state order."""
        ...

    def transition_counts(self) -> list[TransitionCount]: ...

    def refusal_counts(self) -> list[RefusalCount]: ...

    def attempt_outcomes(self) -> dict[str | None, int]:
        """Entries of every item's attempt log by outcome (``None``: an entry without one)."""
        ...

    def notification_counts(self) -> dict[str, int]:
        """Outbox messages by status (``pending``, ``delivered``, ``failed``)."""
        ...

    def automation_names(self) -> list[str]:
        """Every registered automation, by name."""
        ...

    def stop_page(self, query: StopQuery) -> list[StopRow]:
        """One keyset page of stopped items (at most ``query.limit``, at most MAX_PAGE)."""
        ...

    def stop_counts(self, query: StopQuery) -> list[StateCount]:
        """How many stopped items match ``query``'s filters, by state (``oldest``: the earliest
        time one of them entered the state)."""
        ...

    def stopped_since(self, item_id: str) -> datetime | None:
        """When the item entered its current state (``None``: no such item)."""
        ...

    def stuck_work(
        self, before: datetime, after: tuple[datetime, str] | None = None, limit: int = 50
    ) -> list[Item]:
        """Work-state items with no decision recorded since ``before``, longest unmoved first,
        keyset-paged after ``(updated_at, id)``."""
        ...

    def stuck_count(self, before: datetime) -> int: ...

    def automation_states(self) -> list[AutomationStateCount]: ...

    def stop_spans(self) -> list[StopSpan]:
        """Every stop that was later left: when the item stopped and when it moved on."""
        ...

    def workers(self) -> list[WorkerBeat]:
        """Every worker's last heartbeat."""
        ...

    def disabled_endpoints(self) -> list[DisabledEndpoint]: ...


class SQLInsights:
    """:class:`Insights` on a SQL store's connections."""

    def __init__(self, store: SQLStore) -> None:
        self._store = store
        self._q = load(store.dialect, store.pyformat, "insights")

    def count_by_state(self) -> list[StateCount]:
        s = self._store
        with s._read() as cur:
            cur.execute(s.q["count_by_state"], {})
            rows = cur.fetchall()
        return [StateCount(r["state"], int(r["n"]), s._from_time(r["oldest"])) for r in rows]

    def transition_counts(self) -> list[TransitionCount]:
        with self._store._read() as cur:
            cur.execute(self._q["transition_counts"], {})
            rows = cur.fetchall()
        return [
            TransitionCount(
                command=r["command"],
                from_state=r["from_state"],
                to_state=r["to_state"],
                reasons=self._codes(r["reasons"]),
                count=int(r["n"]),
            )
            for r in rows
        ]

    def refusal_counts(self) -> list[RefusalCount]:
        with self._store._read() as cur:
            cur.execute(self._q["refusal_counts"], {})
            rows = cur.fetchall()
        return [RefusalCount(r["command"], self._codes(r["reasons"]), int(r["n"])) for r in rows]

    def attempt_outcomes(self) -> dict[str | None, int]:
        with self._store._read() as cur:
            cur.execute(self._q["attempt_outcomes"], {})
            rows = cur.fetchall()
        return {r["outcome"]: int(r["n"]) for r in rows}

    def notification_counts(self) -> dict[str, int]:
        return self._store.outbox.count_by_status()

    def automation_names(self) -> list[str]:
        with self._store._read() as cur:
            cur.execute(self._q["automation_names"], {})
            return [str(r["name"]) for r in cur.fetchall()]

    def _stop_params(self, query: StopQuery) -> dict[str, Any]:
        if query.sort not in SORTS:
            raise ValueError(f"sort must be one of {', '.join(SORTS)}")
        s, after = self._store, query.after
        return {
            "state": query.state,
            "automation": query.automation,
            "text": query.text.lower() if query.text else None,
            "stopped_before": s._time(query.stopped_before),
            "after_sev": None if after is None else after.severity,
            "after_since": None if after is None else s._time(after.since),
            "after_id": None if after is None else after.id,
            "limit": max(1, min(query.limit, MAX_PAGE)),
        }

    def stop_page(self, query: StopQuery) -> list[StopRow]:
        s = self._store
        with s._read() as cur:
            cur.execute(self._q[f"stop_page_{query.sort}"], self._stop_params(query))
            rows = cur.fetchall()
            items = s._items(rows, cur)
        found = []
        for r, item in zip(rows, items, strict=True):
            # a row written around the store (no state_since) shows its creation time
            since = s._from_time(r["since"]) or item.created_at
            found.append(StopRow(item, since, severity.of(item.data.get("severity"))))
        return found

    def stop_counts(self, query: StopQuery) -> list[StateCount]:
        s = self._store
        params = self._stop_params(query)
        with s._read() as cur:
            cur.execute(self._q["stop_counts"], params)
            rows = cur.fetchall()
        return [StateCount(r["state"], int(r["n"]), s._from_time(r["oldest"])) for r in rows]

    def stopped_since(self, item_id: str) -> datetime | None:
        s = self._store
        with s._read() as cur:
            cur.execute(self._q["stopped_since"], {"id": item_id})
            row = cur.fetchone()
        return None if row is None else s._from_time(row["since"])

    def stuck_work(
        self, before: datetime, after: tuple[datetime, str] | None = None, limit: int = 50
    ) -> list[Item]:
        s = self._store
        params = {
            "before": s._time(before),
            "after_at": None if after is None else s._time(after[0]),
            "after_id": None if after is None else after[1],
            "limit": max(1, min(limit, MAX_PAGE)),
        }
        with s._read() as cur:
            cur.execute(self._q["stuck_work"], params)
            return s._items(cur.fetchall(), cur)

    def stuck_count(self, before: datetime) -> int:
        s = self._store
        with s._read() as cur:
            cur.execute(self._q["stuck_count"], {"before": s._time(before)})
            row = cur.fetchone()
        return 0 if row is None else int(row["n"])

    def automation_states(self) -> list[AutomationStateCount]:
        s = self._store
        with s._read() as cur:
            cur.execute(self._q["automation_states"], {})
            rows = cur.fetchall()
        return [
            AutomationStateCount(
                r["automation"], r["state"], int(r["n"]), s._from_time(r["oldest"])
            )
            for r in rows
        ]

    def stop_spans(self) -> list[StopSpan]:
        s = self._store
        with s._read() as cur:
            cur.execute(self._q["stop_spans"], {})
            rows = cur.fetchall()
        out = []
        for r in rows:
            stopped, decided = s._from_time(r["stopped_at"]), s._from_time(r["decided_at"])
            if stopped is not None and decided is not None:
                out.append(StopSpan(str(r["automation"]), stopped, decided))
        return out

    def workers(self) -> list[WorkerBeat]:
        return self._store.heartbeats.workers()

    def disabled_endpoints(self) -> list[DisabledEndpoint]:
        return self._store.outbox.disabled_endpoints()

    def _codes(self, value: object) -> tuple[str, ...]:
        return tuple(str(code) for code in self._store._from_json(value) or ())
