"""Group commit: the decisions of several items a worker has in flight, in one transaction;
and group reads: their checks before acting, in one snapshot.

Each step thread hands its applied decision to :meth:`GroupCommitter.apply` (its check before
acting to :meth:`GroupReader.guard_reads`) and waits. The first thread to arrive while no
group is in flight leads: it takes up to ``limit`` waiting calls (its own first) and makes
them at once (``store.apply_many``, each decision still guarded by its own version, a lost
compare-and-set refusing that item only; ``store.guard_reads_many``). Calls that arrive
meanwhile wait; when the leader's group is done it hands the lead to the oldest waiter, whose
group is whatever queued up meanwhile. No thread ever waits for a group to fill: a lone call
is made at once, alone.

A failure (the database went away mid-commit) reaches every call of that group; after a
failed write each caller reads its own item back (``Worker._apply_reading_back``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Generic, TypeVar

from ..core.decision import Decision
from ..store import Store
from ..store.protocol import GuardReads

T = TypeVar("T")
R = TypeVar("R")


class _Pending:
    """One call handed to a group, and how it went. ``done`` is a lock held from the start
    and released once (by the thread that made the group, or that hands this one the lead):
    a bare lock wakes its one waiter without a ``threading.Event``'s condition and the
    Python calls around it."""

    __slots__ = ("done", "error", "lead", "result", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.done = threading.Lock()
        self.done.acquire()
        self.lead = False
        self.result: Any = None
        self.error: BaseException | None = None


class Groups(Generic[T, R]):
    """Makes the calls of one worker process's threads in groups of at most ``limit``:
    ``run_many`` takes a group's values and gives each its result, in order."""

    def __init__(self, run_many: Callable[[list[T]], Sequence[R]], limit: int) -> None:
        if limit < 1:
            raise ValueError("a group holds at least one call")
        self.run_many = run_many
        self.limit = limit
        self._lock = threading.Lock()
        self._queue: deque[_Pending] = deque()
        self._running = False
        self.groups = 0  # groups made
        self.largest = 0  # the most calls one of them held

    @property
    def waiting(self) -> int:
        """The calls queued for a group (not those of the group being made)."""
        with self._lock:
            return len(self._queue)

    def call(self, value: T) -> R:
        """``run_many([value])[0]``, made with whatever other calls wait. Raises what the
        group raised."""
        pending = _Pending(value)
        with self._lock:
            self._queue.append(pending)
            if not self._running:
                self._running = pending.lead = True
        if not pending.lead:
            pending.done.acquire()
        if pending.lead:
            self._run_groups(pending)
        if pending.error is not None:
            raise pending.error
        result: R = pending.result
        return result

    def _run_groups(self, own: _Pending) -> None:
        """Make the group this thread leads, then hand the lead on (or give it up)."""
        with self._lock:
            group = [self._queue.popleft() for _ in range(min(self.limit, len(self._queue)))]
        try:
            results = self.run_many([p.value for p in group])
        except BaseException as error:
            for pending in group:
                pending.error = error
        else:
            for pending, result in zip(group, results, strict=True):
                pending.result = result
        with self._lock:
            self.groups += 1
            self.largest = max(self.largest, len(group))
            successor = self._queue[0] if self._queue else None
            if successor is None:
                self._running = False
            else:
                successor.lead = True
        for pending in group:
            if pending is not own:
                pending.done.release()
        if successor is not None:
            successor.done.release()


class GroupCommitter(Groups[Decision, bool]):
    """Writes the applied decisions of one worker process in groups of at most ``limit``."""

    def __init__(self, store: Store, limit: int) -> None:
        super().__init__(store.apply_many, limit)

    def apply(self, decision: Decision) -> bool:
        """``store.apply`` through a group: ``True`` written, ``False`` another write came
        first. Raises what the group's write raised."""
        return self.call(decision)


class GroupReader(Groups[str, GuardReads]):
    """Reads the checks before acting of one worker process's items in groups of at most
    ``limit`` (``store.guard_reads_many``: one snapshot, on PostgreSQL one statement)."""

    def __init__(self, store: Store, limit: int) -> None:
        super().__init__(partial(read_checks, store), limit)
        self.store = store

    def guard_reads(self, item_id: str, *, history: bool, registry: bool) -> GuardReads:
        """``store.guard_reads``; a check before acting (``history`` and ``registry``) through
        a group."""
        if history and registry:
            return self.call(item_id)
        return self.store.guard_reads(item_id, history=history, registry=registry)


def read_checks(store: Store, item_ids: list[str]) -> list[GuardReads]:
    """The checks before acting of ``item_ids``, in their order, read at once
    (``store.guard_reads_many``); an id with no item reads as no row."""
    found = store.guard_reads_many(item_ids)
    missing = GuardReads(None, None, None)  # no such item: the check stops there
    return [found.get(item_id, missing) for item_id in item_ids]
