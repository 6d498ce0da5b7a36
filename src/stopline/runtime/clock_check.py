"""A worker's clock against the database server's: a host whose clock is wrong does no work.

Every time a worker decides is its host's clock: when a lease ends, when a retry is due, how
old evidence is before an action. Workers on many hosts sharing one PostgreSQL database must
agree on it: a clock a year ahead sets leases and retries a year out (the item hidden from
every other worker), a clock behind takes stale evidence for fresh. So a worker reads the
server's clock every :data:`EVERY` seconds and, while its own differs by more than
``max_skew`` (beyond half the round trip), claims and sweeps nothing, and says so in its log
and its heartbeat (``stopline workers``).
SQLite has no clock of its own: every process on it reads its one host's.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import TYPE_CHECKING

from ..clock import Clock, utcnow
from ..store import Store

if TYPE_CHECKING:
    from .heartbeat import Heartbeat

log = logging.getLogger("stopline.worker")

MAX_SKEW = 30.0  # seconds a worker's clock may differ from the database server's
EVERY = 30.0  # seconds between two readings of the server's clock


class ClockCheck:
    """``ok()``: whether the worker's ``clock`` agrees with the server's within ``max_skew``
    (``None``: :data:`MAX_SKEW`, checked only when ``clock`` is the host's own; a clock a
    caller passes is its own simulation, unless it also sets ``max_skew``)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        max_skew: float | None = None,
        beat: Heartbeat | None = None,
    ) -> None:
        self.store, self.clock, self.beat = store, clock, beat
        self.active = max_skew is not None or clock is utcnow
        self.max_skew = MAX_SKEW if max_skew is None else float(max_skew)
        self.skew: float | None = None  # the last difference read, in seconds (+: ahead)
        self._ok = True
        self._read_at: float | None = None

    def ok(self) -> bool:
        if not self.active:
            return True
        now = time.monotonic()
        if self._read_at is not None and now - self._read_at < EVERY:
            return self._ok
        self._read_at = now
        before = self.clock()
        server = self.store.heartbeats.server_now()
        after = self.clock()
        if server is None:
            return True
        self._judge(before, server, after)
        return self._ok

    def _judge(self, before: datetime, server: datetime, after: datetime) -> None:
        trip = max((after - before).total_seconds(), 0.0)
        self.skew = (before - server).total_seconds() + trip / 2
        ok = abs(self.skew) <= self.max_skew + trip / 2
        if ok != self._ok:
            if ok:
                log.warning("this host's clock agrees with the database server's again")
            else:
                log.error(
                    "this host's clock is %+.1f s from the database server's (at most %g s): "
                    "claiming nothing until it agrees; set the host's time (NTP)",
                    self.skew,
                    self.max_skew,
                )
        self._ok = ok
        if self.beat is not None:  # shown by ``stopline workers``
            self.beat.clock_skew, self.beat.clock_off = self.skew, not ok
