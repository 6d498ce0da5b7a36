"""The time limit of a plain hook called on its step's own thread.

A worker that runs several items at once calls a plain hook in place, on the step thread,
instead of handing it to a thread of its own and waiting: two thread switches fewer per hook.
The time limit still holds, kept by one :class:`Watchdog` thread per worker. When a hook runs
past its time, the watchdog decides, once and for good, that the call is abandoned, and hands
the rest of the step to a new thread (``on_timeout``): that thread records the timeout and
goes on with the item as a step that stopped waiting would.

The step thread stays in the hook until the hook returns, if it ever does. It then learns
that its call was abandoned (:meth:`Watchdog.finish` answers ``False``) and raises
:class:`Abandoned`: it writes nothing, and whatever the hook returned is dropped. Which of the
two comes first, the hook's return or its deadline, is settled under one lock, so exactly one
thread goes on with the step.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from .idle import Idleness

log = logging.getLogger("stopline.worker")

IDLE_AFTER = 5.0  # seconds a watchdog watches nothing before its thread ends (a call starts one)


class Abandoned(BaseException):
    """This thread's hook ran past its time; its step went on on another thread, and this
    one must write nothing more. A ``BaseException``, so that no ``except Exception`` on the
    way out takes it for a failure of the step."""


class Watched:
    """One hook call in progress: its deadline and what to do when it passes."""

    __slots__ = ("deadline", "on_timeout", "state")

    def __init__(self, deadline: float, on_timeout: Callable[[], None]) -> None:
        self.deadline = deadline
        self.on_timeout = on_timeout
        self.state = "running"  # then "done" (returned in time) or "abandoned"


class Watchdog:
    """Abandons the hook calls that run past their deadline (one thread, started on first
    use, waking only at the earliest deadline in progress, and ending when it has watched
    nothing for :data:`IDLE_AFTER` seconds)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running: set[Watched] = set()
        self._wake_at = float("inf")
        self._thread: threading.Thread | None = None
        self.abandoned = 0  # calls abandoned so far

    def watch(self, seconds: float, on_timeout: Callable[[], None]) -> Watched:
        """Start watching a call that may run ``seconds``; ``on_timeout`` runs on the
        watchdog's thread if it runs longer (it should only start the thread that goes on)."""
        watched = Watched(time.monotonic() + seconds, on_timeout)
        with self._cond:
            self._running.add(watched)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, daemon=True, name="stopline-hook-watch"
                )
                self._thread.start()
            if watched.deadline < self._wake_at:
                self._wake_at = watched.deadline
                self._cond.notify()
        return watched

    def finish(self, watched: Watched) -> bool:
        """The call returned: ``True`` when in time (its result stands), ``False`` when it
        was abandoned already (its result is dropped, and its thread must write nothing)."""
        with self._cond:
            if watched.state == "abandoned":
                return False
            watched.state = "done"
            self._running.discard(watched)
            return True

    def _loop(self) -> None:
        idle = Idleness()
        while True:
            with self._cond:
                now = time.monotonic()
                late = [w for w in self._running if w.deadline <= now]
                for watched in late:
                    watched.state = "abandoned"
                    self._running.discard(watched)
                self.abandoned += len(late)
                if not late:
                    if idle.long_enough(bool(self._running), now, IDLE_AFTER):
                        self._thread = None  # decided under the lock: the next call starts one
                        return
                    self._wake_at = min((w.deadline for w in self._running), default=float("inf"))
                    self._cond.wait(min(self._wake_at - now, IDLE_AFTER))
                    continue
            for watched in late:
                try:
                    watched.on_timeout()
                except BaseException:  # the watchdog goes on watching the others
                    log.exception("could not hand over a step whose hook ran past its time")
