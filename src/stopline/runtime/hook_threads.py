"""What a lockstep worker (``lockstep.py``) runs off its driver's thread: plain hooks on threads
of their own, one call at a time each, within the places hooks hold; and the group reads and
writes of the store, one after the other on a thread of their own.

A call's ``ticket`` (a job itself) is put on the driver's queue when it ends; a thread whose
call was abandoned (past its ``hook_timeout``) is left to finish alone and no longer counts as
idle.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any


class Call:
    """One plain hook call on a hook thread; its ``ticket`` is put on the driver's queue when
    it ends."""

    __slots__ = ("args", "ended", "ended_at", "error", "function", "result", "ticket")

    def __init__(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        ticket: int,
        ended: Callable[[], None] | None = None,
    ) -> None:
        self.function, self.args, self.ticket = function, args, ticket
        self.ended = ended  # called on the hook's thread once the call returned
        self.ended_at = math.inf  # ``time.monotonic()`` when it returned, on its own thread
        self.result: Any = None
        self.error: BaseException | None = None


class HookThreads:
    """Threads that run plain hooks, one call at a time each; a thread whose call was
    abandoned is left to finish alone and no longer counts as idle."""

    def __init__(self, ended: queue.SimpleQueue[Any]) -> None:
        self._inbox: queue.SimpleQueue[Call | None] = queue.SimpleQueue()
        self._ended = ended
        self._lock = threading.Lock()
        self._idle = 0
        self.threads = 0

    def submit(self, call: Call) -> None:
        with self._lock:
            spawn = not self._idle
            if spawn:
                self.threads += 1
            else:
                self._idle -= 1
        self._inbox.put(call)
        if spawn:
            thread = threading.Thread(target=self._serve, daemon=True)
            thread.name = "stopline-hook"
            thread.start()

    def _serve(self) -> None:
        while (call := self._inbox.get()) is not None:
            try:
                call.result = call.function(*call.args)
            except BaseException as error:  # a hook's SystemExit is its failure, not ours
                call.error = error
            call.ended_at = time.monotonic()  # not when the driver sees it: it may be busy
            ticket, ended = call.ticket, call.ended
            del call  # an abandoned hook's answer is not kept alive by this thread
            with self._lock:
                self._idle += 1
            if ended is not None:  # (idle first: a call it starts may come back here)
                ended()
            self._ended.put(ticket)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, 0
            self.threads -= idle
        for _ in range(idle):
            self._inbox.put(None)


class Places:
    """``size`` places for hooks, shared by the driver and the threads hooks end on. A hook
    enters (or queues, first come first, while every place is held) and leaves once: its
    place passes straight to the first one queued, which starts on the thread that left,
    without waiting for the driver to run."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.held = 0
        self._queue: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()

    def enter(self, start: Callable[[], None]) -> None:
        """``start()`` now if a place is free (this call holds it), or once one is."""
        with self._lock:
            if self.held >= self.size:
                self._queue.append(start)
                return
            self.held += 1
        start()

    def leave(self) -> None:
        """A place let go: the first start queued takes it and runs, here."""
        with self._lock:
            if not self._queue:
                self.held -= 1
                return
            start = self._queue.popleft()
        start()

    @property
    def queued(self) -> int:
        return len(self._queue)


class Waiting:
    """An item's greenlet waiting for a hook: queued for a place first (a hook's call), then
    running until ``deadline`` (``time.monotonic``)."""

    __slots__ = (
        "call",
        "deadline",
        "ended_at",
        "failed",
        "future",
        "glet",
        "left",
        "loop",
        "placed",
    )

    def __init__(self, glet: Any, placed: bool) -> None:
        self.glet = glet
        self.deadline = math.inf  # its time runs from its start
        self.ended_at = math.inf  # an ``async`` hook's end, stamped by its event loop's thread
        self.placed = placed  # holds one of the places for hooks once it starts
        self.left = False  # its place let go (when it ended or ran out of time)
        self.call: Call | None = None
        self.future: Any = None  # an ``async`` hook's, on ``loop``
        self.loop: Any = None
        self.failed: BaseException | None = None  # what kept its coroutine from being sent


def future_answer(future: Any) -> tuple[Any, BaseException | None]:
    try:
        result: tuple[Any, BaseException | None] = future.result(0)
    except BaseException as error:  # cancelled from outside
        return None, error
    return result


class Job:
    """A group's call of the store (``run(values)``), run on a :class:`JobThread`: its
    ``result`` or its ``error`` once it is back on the driver's queue."""

    __slots__ = ("error", "group", "result", "run")

    def __init__(self, run: Callable[[list[Any]], Any], group: list[tuple[Any, Any]]) -> None:
        self.run, self.group = run, group
        self.result: Any = None
        self.error: BaseException | None = None


class JobThread:
    """One thread that runs jobs one after the other (started on the first), each put on
    ``ended`` when it is done, so that the driver runs items while the store is waited for."""

    def __init__(self, ended: queue.SimpleQueue[Any]) -> None:
        self._inbox: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._ended = ended
        self._thread: threading.Thread | None = None

    def submit(self, job: Job) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, daemon=True)
            self._thread.name = "stopline-groups"
            self._thread.start()
        self._inbox.put(job)

    def _serve(self) -> None:
        while (job := self._inbox.get()) is not None:
            try:
                job.result = job.run([value for _, value in job.group])
            except BaseException as error:  # the group's items get it, each in its step
                job.error = error
            self._ended.put(job)

    def close(self) -> None:
        if self._thread is not None:
            self._inbox.put(None)
            self._thread = None
