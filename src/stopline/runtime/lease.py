"""A worker's hold on its claimed item: the lease it renews while a step runs.

:class:`LeaseHolder` is the worker's view of the item it claimed, with the latest lease end it
renewed. A worker's one :class:`Renewer` thread keeps the lease of every item it holds alive
(every third of the lease) until the step ends or a renewal is refused; the renewal never
changes the item's version, so the holder's next commit does not lose its compare-and-set to
its own renewal.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from ..clock import Clock
from ..core.records import Item
from ..store import Store
from ..store.errors import connection_errors
from .idle import Idleness

log = logging.getLogger("stopline.worker")

RENEW_BEFORE_ACTING = 2 / 3  # share of a lease that must be left to act without renewing it
IDLE_AFTER = 5.0  # seconds a renewer holds nothing before its thread ends (a hold starts one)


class LeaseLost(Exception):
    """The worker's lease is gone; it must stop this step and write nothing more."""


class LeaseHolder:
    """The claimed item as this worker last wrote or read it, and how long its lease runs."""

    def __init__(self, item: Item) -> None:
        self.item = item
        self._lock = threading.Lock()
        self._expires: datetime | None = item.lease_expires_at
        # who held which roles when the last check before acting passed, and the version of
        # the record it passed on (the decision that follows it decides with the same view)
        self._checked: tuple[int, dict[str, Any]] | None = None

    def checked(self, version: int, actors: dict[str, Any]) -> None:
        self._checked = (version, actors)

    def checked_actors(self, version: int) -> dict[str, Any] | None:
        """The actors of the check that passed on this very version of the record, once."""
        found, self._checked = self._checked, None
        return found[1] if found is not None and found[0] == version else None

    def reset(self, item: Item) -> None:
        """A new claim of the item (the next step of a chain)."""
        with self._lock:
            self.item = item
            self._expires = item.lease_expires_at

    def handed_over(self) -> LeaseHolder:
        """A holder of the same claim for the thread that takes a step over (``watchdog.py``):
        the same item and the latest lease end renewed; no check before acting carried over."""
        with self._lock:
            taken = LeaseHolder(self.item)
            taken._expires = self._expires
        return taken

    def renewed(self, now: datetime, seconds: float) -> None:
        with self._lock:
            self._expires = now + timedelta(seconds=seconds)

    def current(self) -> Item:
        """The item with the latest lease end this worker renewed (what ``decide()`` checks)."""
        with self._lock:
            expires = self._expires
        item = self.item
        later = item.lease_expires_at is None or (
            expires is not None and expires > item.lease_expires_at
        )
        if item.lease_owner is not None and expires is not None and later:
            item = replace(item, lease_expires_at=expires)
        return item


class Renewer:
    """One thread that renews the lease of every item a worker has in flight: each lease every
    third of its length, until its step ends or a renewal is refused (the step then loses its
    claim at its next commit). A new hold wakes the thread only when its first renewal is due
    before the thread would wake anyway, so holding costs no thread switch. The thread ends
    when it has held nothing for :data:`IDLE_AFTER` seconds; the next hold starts another."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self._held: dict[int, tuple[LeaseHolder, float, float]] = {}  # id -> (holder, s, due)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._wake_at = 0.0  # when the thread wakes next, by itself (monotonic)
        self._thread: threading.Thread | None = None

    @contextmanager
    def holding(self, holder: LeaseHolder, lease_seconds: float) -> Iterator[None]:
        """Renew ``holder``'s lease while the block runs (held from before it, if it was)."""
        self.hold(holder, lease_seconds)
        try:
            yield
        finally:
            self.release(holder)

    def hold(self, holder: LeaseHolder, lease_seconds: float) -> None:
        """Renew ``holder``'s lease from now until :meth:`release`; a holder held already
        keeps its renewals as they were."""
        due = _monotonic() + lease_seconds / 3
        with self._lock:
            if id(holder) in self._held:
                return
            self._held[id(holder)] = (holder, lease_seconds, due)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, daemon=True, name="stopline-leases"
                )
                self._thread.start()
            sooner = due < self._wake_at
        if sooner:
            self._wake.set()

    def release(self, holder: LeaseHolder) -> None:
        with self._lock:
            self._held.pop(id(holder), None)

    def _loop(self) -> None:
        unavailable = connection_errors()
        idle = Idleness()
        while True:
            with self._lock:  # what is due, and when to wake, seen by every new hold
                now_m = _monotonic()
                held = list(self._held.values())
                if idle.long_enough(bool(held), now_m, IDLE_AFTER):
                    self._thread = None  # decided under the lock: a new hold starts another
                    return
                due = [(h, s) for h, s, at in held if at <= now_m]
                wait = min((at - now_m for _, _, at in held if at > now_m), default=IDLE_AFTER)
                wait = 0.0 if due else max(0.0, min(wait, 1.0))
                self._wake_at = now_m + wait
                self._wake.clear()
            for holder, seconds in due:
                item = holder.item
                again = float("inf")  # a refused renewal: no more tries for this claim
                if item.lease_owner is not None:
                    now = self.clock()
                    try:
                        if self.store.renew(item, now, seconds):
                            holder.renewed(now, seconds)
                            again = _monotonic() + seconds / 3
                    except unavailable as exc:  # the next round tries again
                        log.warning("could not renew the lease on %s: %s", item.id, exc)
                        again = _monotonic() + seconds / 3
                with self._lock:
                    if id(holder) in self._held:
                        self._held[id(holder)] = (holder, seconds, again)
            if not due:
                self._wake.wait(wait)


def _monotonic() -> float:
    return time.monotonic()


def renewal_due(item: Item, now: datetime, lease_seconds: float) -> bool:
    """Before an acting call: renew the lease first unless the row read just now says at
    least ``RENEW_BEFORE_ACTING`` of it is left (what a renewal every third of it leaves)."""
    ends = item.lease_expires_at
    return ends is None or (ends - now).total_seconds() < lease_seconds * RENEW_BEFORE_ACTING
