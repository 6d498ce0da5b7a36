"""A worker's heartbeat: its row in ``worker_heartbeats``, written every few seconds.

The row says the worker is alive (``stopline workers``, the inbox and ``/metrics`` read it) and
carries what only the worker can measure: how many steps it ran and how long they took, as a
histogram by automation (:data:`STEP_BUCKETS`), which ``/metrics`` sums over every worker. A
heartbeat that cannot be written (the database is away) is skipped, never fatal.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..store import Store
from ..store.errors import connection_errors

if TYPE_CHECKING:
    from .worker import Worker

log = logging.getLogger("stopline.worker")

BEAT_EVERY = 5.0  # seconds between two heartbeats of one worker
LIVE_AFTER = 3 * BEAT_EVERY  # a worker whose heartbeat is older is not counted live
STEP_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class Heartbeat:
    """The heartbeat and step measurements of one worker."""

    def __init__(self, store: Store, worker: str, automations: Sequence[str]) -> None:
        self.store = store
        self.worker = worker
        self.automations = tuple(automations)
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.started: datetime | None = None
        self.last: datetime | None = None
        self.steps = 0
        self.durations: dict[str, dict[str, Any]] = {}
        self.clock_skew: float | None = None  # seconds from the server's clock, when read
        self.clock_off = False  # the skew is past the limit: the worker claims nothing
        self._lock = threading.Lock()  # step threads of a concurrent worker count at once

    def observe(self, automation: str, seconds: float) -> None:
        """Count one step of ``automation`` that took ``seconds``."""
        with self._lock:
            self.steps += 1
            h = self.durations.setdefault(
                automation, {"buckets": [0] * len(STEP_BUCKETS), "count": 0, "sum": 0.0}
            )
            for i, bound in enumerate(STEP_BUCKETS):
                if seconds <= bound:
                    h["buckets"][i] += 1
            h["count"] += 1
            h["sum"] = round(h["sum"] + seconds, 6)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            copy: dict[str, Any] = json.loads(
                json.dumps({"steps": self.steps, "step_seconds": self.durations})
            )
        if self.clock_skew is not None:
            copy.update(clock_skew=round(self.clock_skew, 3), clock_off=self.clock_off)
        return copy

    def tick(self, now: datetime, *, force: bool = False) -> None:
        """Write the heartbeat when the last one is :data:`BEAT_EVERY` old (or ``force``)."""
        if self.started is None:
            self.started = now
        if not force and self.last is not None and (now - self.last).total_seconds() < BEAT_EVERY:
            return
        try:
            self.store.heartbeats.beat(
                self.worker,
                self.host,
                self.pid,
                self.automations,
                self.started,
                now,
                self.stats(),
            )
            self.last = now
        except connection_errors() as exc:
            log.warning("heartbeat of %s not written (%s)", self.worker, exc)


@contextmanager
def observe_step(worker: Worker, automation: str, state: str) -> Iterator[None]:
    """Measure the step in the block for the worker's heartbeat."""
    started = time.monotonic()
    try:
        yield
    finally:
        worker.beat.observe(automation, time.monotonic() - started)
