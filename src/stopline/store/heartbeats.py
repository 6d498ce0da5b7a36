"""The heartbeats port: which worker processes are alive, and what they measured.

Each worker writes its row as it loops (:meth:`Heartbeats.beat`): where it runs, which
automations it serves, when it started and was last seen, and its own measurements (steps
run, a histogram of step durations by automation) as JSON. ``stopline workers``, the inbox and
``/metrics`` read the rows; a row not written for a while is a worker that stopped or hangs.
The SQL is in ``sql/common/heartbeats.sql``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ..core.canonical import format_time, parse_time
from .queries import load

if TYPE_CHECKING:
    from .base import SQLStore


@dataclass(frozen=True)
class WorkerBeat:
    """The last heartbeat of one worker."""

    worker: str
    host: str
    pid: int
    automations: tuple[str, ...]
    started_at: datetime
    seen_at: datetime
    stats: Mapping[str, Any]

    def age(self, now: datetime) -> float:
        return max((now - self.seen_at).total_seconds(), 0.0)

    def to_plain(self, now: datetime) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "host": self.host,
            "pid": self.pid,
            "automations": list(self.automations),
            "started_at": format_time(self.started_at),
            "seen_at": format_time(self.seen_at),
            "age_seconds": round(self.age(now), 3),
            "steps": int(self.stats.get("steps", 0)),
            "clock_skew_seconds": self.stats.get("clock_skew"),
            "clock_off": self.stats.get("clock_off") is True,
        }


class Heartbeats(Protocol):
    def beat(
        self,
        worker: str,
        host: str,
        pid: int,
        automations: Sequence[str],
        started_at: datetime,
        now: datetime,
        stats: Mapping[str, Any],
    ) -> None: ...

    def workers(self) -> list[WorkerBeat]:
        """Every worker's last heartbeat, the most recent first."""
        ...

    def forget(self, before: datetime) -> int:
        """Drop the rows of workers not seen since ``before``; how many were dropped."""
        ...

    def server_now(self) -> datetime | None:
        """The database server's clock, where it has one of its own (PostgreSQL); ``None`` on
        SQLite, whose processes all read their one host's clock."""
        ...


class SQLHeartbeats:
    """:class:`Heartbeats` on a SQL store's connections."""

    def __init__(self, store: SQLStore) -> None:
        self._store = store
        self._q = load(store.dialect, store.pyformat, "heartbeats")

    def beat(
        self,
        worker: str,
        host: str,
        pid: int,
        automations: Sequence[str],
        started_at: datetime,
        now: datetime,
        stats: Mapping[str, Any],
    ) -> None:
        with self._store._write() as cur:
            cur.execute(
                self._q["beat"],
                {
                    "worker": worker,
                    "host": host,
                    "pid": pid,
                    "automations": json.dumps(sorted(automations)),
                    "started_at": format_time(started_at),
                    "seen_at": format_time(now),
                    "stats": json.dumps(stats, sort_keys=True),
                },
            )

    def workers(self) -> list[WorkerBeat]:
        with self._store._read() as cur:
            cur.execute(self._q["heartbeats"], {})
            rows = cur.fetchall()
        return [
            WorkerBeat(
                worker=str(r["worker"]),
                host=str(r["host"]),
                pid=int(r["pid"]),
                automations=tuple(json.loads(r["automations"])),
                started_at=parse_time(str(r["started_at"])),
                seen_at=parse_time(str(r["seen_at"])),
                stats=json.loads(r["stats"]),
            )
            for r in rows
        ]

    def server_now(self) -> datetime | None:
        query = self._q.get("server_now")
        if query is None:
            return None
        with self._store._read() as cur:
            cur.execute(query, {})
            row = cur.fetchone()
        return row["now"] if row is not None and isinstance(row["now"], datetime) else None

    def forget(self, before: datetime) -> int:
        s = self._store
        with s._write() as cur:
            cur.execute(self._q["forget_heartbeats"], {"before": format_time(before)})
            return max(s._rowcount(cur), 0)
