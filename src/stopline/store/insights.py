"""The insights port: what presentation reads about the whole store, never one item's record.

Metrics, the inbox and listings ask here for aggregates (items by state, decisions by command,
refusals, attempts, notifications) and for the automation list, instead of reaching into the
tables. Every method is a read; the SQL is in ``sql/common/insights.sql`` (and, where a
dialect differs, ``sql/<dialect>/insights.sql``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from .heartbeats import WorkerBeat
from .outbox import DisabledEndpoint
from .queries import load

if TYPE_CHECKING:
    from .base import SQLStore


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
