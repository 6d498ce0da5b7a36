"""Group commit: the decisions of several items a worker has in flight, in one transaction.

Each step thread hands its applied decision to :meth:`GroupCommitter.apply` and waits. The
first thread to arrive while no group is being written leads: it takes up to ``limit``
waiting decisions (its own first) and writes them with ``store.apply_many`` in one
transaction, each still guarded by its own version (a lost compare-and-set refuses that item
only). Decisions that arrive meanwhile wait; when the leader's group is written it hands the
lead to the oldest waiter, whose group is whatever queued up while the last one was written.
No thread ever waits for a group to fill: a lone decision is written at once, alone.

A failure of the write (the database went away mid-commit) reaches every decision of that
group, and each caller reads its own item back (``Worker._apply_reading_back``).
"""

from __future__ import annotations

import threading
from collections import deque

from ..core.decision import Decision
from ..store import Store


class _Pending:
    """One decision handed to the committer, and how its write went. ``done`` is a lock held
    from the start and released once (by the thread that wrote the group, or that hands this
    one the lead): a bare lock wakes its one waiter without a ``threading.Event``'s condition
    and the Python calls around it."""

    __slots__ = ("decision", "done", "error", "lead", "written")

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.done = threading.Lock()
        self.done.acquire()
        self.lead = False
        self.written = False
        self.error: BaseException | None = None


class GroupCommitter:
    """Writes the applied decisions of one worker process in groups of at most ``limit``."""

    def __init__(self, store: Store, limit: int) -> None:
        if limit < 1:
            raise ValueError("a group holds at least one decision")
        self.store = store
        self.limit = limit
        self._lock = threading.Lock()
        self._queue: deque[_Pending] = deque()
        self._writing = False
        self.groups = 0  # transactions written
        self.largest = 0  # the most decisions one of them held

    def apply(self, decision: Decision) -> bool:
        """``store.apply`` through a group: ``True`` written, ``False`` another write came
        first. Raises what the group's write raised."""
        pending = _Pending(decision)
        with self._lock:
            self._queue.append(pending)
            if not self._writing:
                self._writing = pending.lead = True
        if not pending.lead:
            pending.done.acquire()
        if pending.lead:
            self._write_groups(pending)
        if pending.error is not None:
            raise pending.error
        return pending.written

    def _write_groups(self, own: _Pending) -> None:
        """Write the group this thread leads, then hand the lead on (or give it up)."""
        with self._lock:
            group = [self._queue.popleft() for _ in range(min(self.limit, len(self._queue)))]
        try:
            written = self.store.apply_many([p.decision for p in group])
        except BaseException as error:
            for pending in group:
                pending.error = error
        else:
            for pending, ok in zip(group, written, strict=True):
                pending.written = ok
        with self._lock:
            self.groups += 1
            self.largest = max(self.largest, len(group))
            successor = self._queue[0] if self._queue else None
            if successor is None:
                self._writing = False
            else:
                successor.lead = True
        for pending in group:
            if pending is not own:
                pending.done.release()
        if successor is not None:
            successor.done.release()
