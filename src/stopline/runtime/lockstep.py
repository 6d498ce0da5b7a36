"""Lockstep: the items a worker runs at once, as greenlets on the worker's own thread.

With ``Worker(lockstep=True)`` (``stopline run --lockstep``) each claimed item's steps run the
same code as always (``Worker.process``), but in a greenlet of the worker's thread instead of
on a step thread of its own. An item's greenlet runs until it has to wait: for a hook or a
target call (run on a hook thread, or on the event loop for an ``async`` hook), or for the
write of a decision. It then hands control back to the driver (:class:`Lockstep`), which runs
the next item that can go on. Once none can, the driver sends the checks before acting of
every item waiting for one (``store.guard_reads_many``: one snapshot, on PostgreSQL one
statement) and the decisions waiting (``store.apply_many``: one transaction, each on its own
compare-and-set, a lost one refusing that item only) to a thread of their own, runs the other
items meanwhile, and hands each item its answer once its group is back. So a batch of items
is decided on one thread, with no thread switch between one item's decision and the next, and
a group holds every decision that was ready.

At most ``size`` hooks run at once, each in one of as many places; items ``ahead`` queue for
one, and a hook that ends starts the first one queued on its own thread (``hook_threads.py``).
Nothing else changes: the decisions, the checks before acting, the leases (renewed by the
worker's renewer thread), the crash points and the order of the durable writes are those of
the step code every mode runs. A hook past its ``hook_timeout`` (counted from its start) is
abandoned as one step at a time abandons it (its thread is left to finish alone; an ``async``
hook's task is cancelled), and the step records the timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from ..core.decision import Decision
from ..core.records import Item
from ..store import Store
from ..store.protocol import GuardReads
from .group_commit import read_checks
from .hook_threads import Call, HookThreads, Job, JobThread, Places, Waiting, future_answer
from .hooks import HookRunner, HookTimeout, event_loop, guarded, is_async, retire_if_held

try:  # an optional dependency: ``pip install 'stopline[lockstep]'``
    import greenlet
except ImportError:  # pragma: no cover - checked when a lockstep worker is made
    greenlet = None

T = TypeVar("T")
_COMMIT, _HOOK, _READ = "commit", "hook", "read"
WAIT_AT_MOST = 0.05  # seconds the driver waits for a hook before it returns to the loop


def available() -> bool:
    """Whether this Python can run a lockstep worker (the ``greenlet`` package)."""
    return greenlet is not None


class Lockstep:
    """The driver: at most ``size`` hooks running and ``size + ahead`` items in flight
    (``limits``: per automation), their decisions written in groups of at most ``limit``."""

    def __init__(
        self,
        store: Store,
        size: int,
        limit: int,
        limits: Mapping[str, int | None],
        wait_reads: bool = False,
        ahead: int = 0,
    ) -> None:
        if greenlet is None:
            raise RuntimeError(
                "a lockstep worker needs the greenlet package: pip install 'stopline[lockstep]'"
            )
        self.store = store
        self.size = size  # hooks running at once
        self.ahead = ahead  # items in flight beyond those, each queued for a hook at most
        self.limit = limit
        self.limits = dict(limits)
        self.wait_reads = wait_reads  # the store's reads wait on the network (see ``read``)
        # items run in one round: half of those in flight, so that the items a round ends
        # are replaced (and start waiting) while the rest are run
        self.chunk = max(1, size // 2)
        self.groups = 0  # transactions written
        self.largest = 0  # the most decisions one of them held
        self.read_groups = 0  # statements that read the checks of several items
        self.largest_read = 0  # the most items one of them read
        self._driver: Any = None
        self._ready: deque[tuple[Any, Any, bool]] = deque()  # (greenlet, value, throw it)
        self._commits: list[tuple[Any, Decision]] = []
        self._reads: list[tuple[Any, str]] = []  # (greenlet, item id) waiting for its check
        self._waiting: dict[int, Waiting] = {}
        self.places = Places(size)
        self._left = threading.Lock()
        self._ended: queue.SimpleQueue[int | Job] = queue.SimpleQueue()
        self._jobs = JobThread(self._ended)
        self._reading: Job | None = None  # the group read on the jobs' thread, if any
        self._writing: Job | None = None  # the group write on the jobs' thread, if any
        self._threads = HookThreads(self._ended)
        self._tickets = 0
        self._flying: Counter[str] = Counter()
        self._errors: list[BaseException] = []
        self.runner = _LockstepRunner(self)

    # --- what the worker's loop calls --------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return sum(self._flying.values())

    def room(self, automations: Sequence[str]) -> tuple[list[str], int]:
        """The automations that may take one more item now, and how many items may start."""
        free = self.size + self.ahead - self.in_flight
        names, room = [], free
        for name in automations:
            limit = self.limits.get(name)
            if limit is None:
                names.append(name)
            elif self._flying[name] < limit:
                names.append(name)
                room = min(room, limit - self._flying[name])
        return names, max(0, room) if names else 0

    def start(self, item: Item, run: Callable[[], object]) -> None:
        """Run ``run()`` (the item's steps) in a greenlet of its own, from the next pump on."""
        automation = item.automation

        def body(*_: object) -> None:
            try:
                run()
            except BaseException as error:  # raised again in the worker's loop
                self._errors.append(error)
            finally:
                self._flying[automation] -= 1

        self._flying[automation] += 1
        self._ready.append((greenlet.greenlet(body), None, False))

    def pump(self, wait: bool = True) -> None:
        """One round: run at most ``chunk`` of the items that can go on, write the decisions
        that wait, and take in the hooks that ended; with ``wait`` and nothing to run, wait a
        little for a hook to end (not when an item ended: the loop claims its successor
        first). The loop claims between rounds, so that the items a round ends are replaced
        while the others wait (a whole batch run at once would wait, and then be run, all
        together)."""
        self._driver = greenlet.getcurrent()
        flying = self.in_flight
        self._run_ready(self.chunk)
        if self._reads and self._reading is None:
            self._reading = self._submit(self._reads, partial(read_checks, self.store))
            self._reads = []
        if self._commits and self._writing is None:
            group, self._commits = self._commits[: self.limit], self._commits[self.limit :]
            self._writing = self._submit(group, self.store.apply_many)
        self._collect(block=False)
        ended = self.in_flight < flying  # room for the loop to claim: no waiting, then
        # (any group that could start was just sent: what is left to do is wait for one)
        groups = self._reading is not None or self._writing is not None
        if wait and not ended and not self._ready and (self._waiting or groups):
            self._collect(block=True)

    def raise_failure(self) -> None:
        """Raise what an item's steps raised since the last call (the first of them)."""
        errors, self._errors = self._errors, []
        if errors:
            raise errors[0]

    def drain(self) -> None:
        """Run every item in flight to its end."""
        while self.in_flight:
            self.pump()
        self._threads.close()
        self._jobs.close()

    # --- what an item's greenlet calls -------------------------------------------------------

    def in_item(self) -> bool:
        """Whether this is an item's greenlet (not the driver, nor another thread): one the
        driver started, so that switching to the driver hands this item's wait to it."""
        return self._driver is not None and greenlet.getcurrent().parent is self._driver

    def apply(self, decision: Decision) -> bool:
        """``store.apply`` through the next group: ``True`` written, ``False`` another write
        came first. Raises what the group's write raised."""
        if not self.in_item():
            return self.store.apply(decision)  # not in an item's greenlet: write it alone
        answer: bool = self._driver.switch((_COMMIT, decision))
        return answer

    # --- the driver's own work ---------------------------------------------------------------

    def _run_ready(self, most: int) -> None:
        for _ in range(min(most, len(self._ready))):
            glet, value, throw = self._ready.popleft()
            request = glet.throw(value) if throw else glet.switch(value)
            if glet.dead:
                continue
            kind, payload = request
            if kind == _COMMIT:
                self._commits.append((glet, payload))
            elif kind == _READ:
                self._reads.append((glet, payload))
            # else a hook, started and filed by ``_hook``: its answer resumes the greenlet

    def _submit(self, group: list[tuple[Any, Any]], run: Callable[[list[Any]], Any]) -> Job:
        """``run`` the group's values on the jobs' thread while the driver runs the others;
        once back (:meth:`_finished`) each greenlet goes on with its result, or its error."""
        job = Job(run, group)
        self._jobs.submit(job)
        return job

    def _finished(self, job: Job) -> None:
        if job is self._writing:
            self._writing = None
            self.groups += 1
            self.largest = max(self.largest, len(job.group))
        else:
            self._reading = None
            self.read_groups += 1
            self.largest_read = max(self.largest_read, len(job.group))
        if job.error is not None:
            for glet, _ in job.group:
                self._ready.append((glet, job.error, True))
        else:
            for (glet, _), result in zip(job.group, job.result, strict=True):
                self._ready.append((glet, result, False))

    def _collect(self, *, block: bool) -> bool:
        """Hand each ended hook's answer to its item, and a timeout to each item whose hook
        ran past its time. ``True`` when some item can go on."""
        now = time.monotonic()
        if block:
            nearest = min((w.deadline for w in self._waiting.values()), default=math.inf)
            timeout = max(0.0, min(WAIT_AT_MOST, nearest - now))
            with contextlib.suppress(queue.Empty):
                self._answer(self._ended.get(timeout=timeout))
        while True:
            try:
                self._answer(self._ended.get_nowait())
            except queue.Empty:
                break
        now = time.monotonic()
        for ticket, waiting in list(self._waiting.items()):
            if waiting.deadline <= now:
                del self._waiting[ticket]
                if waiting.future is not None:
                    waiting.future.cancel()
                self._time_out(waiting)
        return bool(self._ready)

    def _time_out(self, waiting: Waiting) -> None:
        """``waiting``'s hook ran past its time: :class:`HookTimeout`, and its place goes on."""
        self._ready.append((waiting.glet, HookTimeout(), True))
        self._leave(waiting)

    def _answer(self, ticket: int | Job) -> None:
        if isinstance(ticket, Job):
            self._finished(ticket)
            return
        if (waiting := self._waiting.pop(ticket, None)) is None:  # timed out already: dropped
            return
        ended_at = waiting.ended_at if waiting.call is None else waiting.call.ended_at
        if ended_at > waiting.deadline:  # it ended past its time while the driver was busy
            return self._time_out(waiting)
        answer: tuple[Any, BaseException | None]
        if waiting.failed is not None:
            answer = (None, waiting.failed)
        elif waiting.future is not None:
            answer = future_answer(waiting.future)
        else:
            assert waiting.call is not None
            answer = (waiting.call.result, waiting.call.error)
        self._ready.append((waiting.glet, answer, False))

    def _leave(self, waiting: Waiting) -> None:
        """``waiting``'s hook ended or ran out of time (on whichever thread saw it first):
        its place goes to the first hook queued."""
        if not waiting.placed:
            return
        with self._left:
            if waiting.left:
                return
            waiting.left = True
        self.places.leave()

    def _hook(
        self, function: Callable[..., Any], args: tuple[Any, ...], timeout: float, placed: bool
    ) -> Any:
        """Start ``function`` and wait for it in this item's greenlet: ``(result, error)``;
        :class:`HookTimeout` past ``timeout`` seconds from its start. A hook's call
        (``placed``) holds one of ``size`` places while it runs, and waits for one first: items
        claimed ``ahead`` wait there, and a hook that ends starts the next one queued at once,
        on its own thread."""
        self._tickets = ticket = self._tickets + 1
        waiting = Waiting(greenlet.getcurrent(), placed)
        if is_async(function):
            try:  # the coroutine is made here: what raises before it runs is the answer
                work = function(*args)
            except BaseException as error:
                return None, error
            start = partial(self._start_async, ticket, waiting, work, timeout)
        else:
            call = Call(function, args, ticket, partial(self._leave, waiting))
            start = partial(self._start_call, waiting, call, timeout)
        self._waiting[ticket] = waiting
        if placed:
            self.places.enter(start)
        else:
            start()
        try:
            return self._driver.switch((_HOOK, waiting))
        except HookTimeout:
            if waiting.loop is not None:
                retire_if_held(waiting.loop)
            raise

    def _start_call(self, waiting: Waiting, call: Call, timeout: float) -> None:
        waiting.deadline = time.monotonic() + timeout
        waiting.call = call
        try:
            self._threads.submit(call)
        except BaseException as error:  # no thread to run it: that is its answer
            call.error = error
            call.ended_at = time.monotonic()
            self._leave(waiting)
            self._ended.put(call.ticket)

    def _start_async(self, ticket: int, waiting: Waiting, work: Any, timeout: float) -> None:
        waiting.deadline = time.monotonic() + timeout

        def ended(_: object) -> None:
            waiting.ended_at = time.monotonic()  # on the loop's thread, not the driver's
            self._leave(waiting)
            self._ended.put(ticket)

        coroutine = guarded(work)
        try:
            loop = event_loop()
            future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        except BaseException as error:  # never ran: that is its answer
            coroutine.close()
            work.close()  # never to be awaited
            waiting.failed = error
            ended(None)
            return
        waiting.loop, waiting.future = loop, future
        future.add_done_callback(ended)

    def guard_reads(self, item_id: str, *, history: bool, registry: bool) -> GuardReads:
        """``store.guard_reads``. The check before acting (``history`` and ``registry``) of an
        item's greenlet is read with those of the other items of its round, in one snapshot
        (``store.guard_reads_many``: on PostgreSQL one statement); any other read as
        :meth:`read` reads it."""
        if not (history and registry and self.in_item()):
            return self.read(self.store.guard_reads, item_id, history=history, registry=registry)
        answer: GuardReads = self._driver.switch((_READ, item_id))
        return answer

    def read(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)``, a read of the store. With ``wait_reads`` (a store
        whose reads wait on the network), called in an item's greenlet, it runs on a hook
        thread while the driver runs the other items, so that one item's round trip does not
        hold them all; otherwise (SQLite's reads are CPU on this process) in place."""
        if not self.wait_reads or not self.in_item():
            return function(*args, **kwargs)
        result, error = self._hook(partial(function, *args, **kwargs), (), math.inf, False)
        if error is not None:
            raise error
        return result  # type: ignore[no-any-return]


class _LockstepRunner(HookRunner):
    """The hook runner of a lockstep worker's items: each call waits in the item's greenlet
    while the driver runs the others. Called outside an item's greenlet, it runs as a
    runner of one step at a time does."""

    def __init__(self, lockstep: Lockstep) -> None:
        super().__init__()
        self._lockstep = lockstep

    def run(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        timeout: float,
        on_timeout: Callable[[], None] | None = None,
    ) -> tuple[Any, BaseException | None]:
        if not self._lockstep.in_item():
            return super().run(function, args, timeout)
        try:
            answer: tuple[Any, BaseException | None] = self._lockstep._hook(
                function, args, timeout, True
            )
        except HookTimeout:
            self.abandoned += 1
            raise
        return answer
