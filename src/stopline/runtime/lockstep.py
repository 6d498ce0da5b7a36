"""Lockstep: the items a worker runs at once, as greenlets on the worker's own thread.

With ``Worker(lockstep=True)`` (``stopline run --lockstep``) each claimed item's steps run the
same code as always (``Worker.process``), but in a greenlet of the worker's thread instead of
on a step thread of its own. An item's greenlet runs until it has to wait: for a hook or a
target call (run on a hook thread, or on the event loop for an ``async`` hook), or for the
write of a decision. It then hands control back to the driver (:class:`Lockstep`), which runs
the next item that can go on. Once none can, the driver reads the checks before acting of
every item waiting for one at once (``store.guard_reads_many``: one snapshot, on PostgreSQL
one statement), writes every decision waiting in one transaction (``store.apply_many``, each
on its own compare-and-set, a lost one refusing that item only), hands each item its answer,
and waits for the first hook to end (or its time to run out). So a batch of items is decided
and written on one thread, with no thread switch between one item's decision and the next:
what a thread per item cost (waking, the interpreter lock handed over at every statement) is
gone, and a group holds every decision that was ready.

Nothing else changes: the decisions, the checks before acting, the leases (renewed by the
worker's renewer thread), the crash points and the order of the durable writes are those of
the step code every mode runs. A hook past its ``hook_timeout`` is abandoned as one step at
a time abandons it (its thread is left to finish alone; an ``async`` hook's task is
cancelled), and the step records the timeout.
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


class _Call:
    """One plain hook call on a hook thread; its ``ticket`` is put on the driver's queue when
    it ends."""

    __slots__ = ("args", "error", "function", "result", "ticket")

    def __init__(self, function: Callable[..., Any], args: tuple[Any, ...], ticket: int) -> None:
        self.function, self.args, self.ticket = function, args, ticket
        self.result: Any = None
        self.error: BaseException | None = None


class _HookThreads:
    """Threads that run plain hooks, one call at a time each; a thread whose call was
    abandoned is left to finish alone and no longer counts as idle."""

    def __init__(self, ended: queue.SimpleQueue[int]) -> None:
        self._inbox: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._ended = ended
        self._lock = threading.Lock()
        self._idle = 0
        self.threads = 0

    def submit(self, call: _Call) -> None:
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
            ticket = call.ticket
            del call  # an abandoned hook's answer is not kept alive by this thread
            with self._lock:
                self._idle += 1
            self._ended.put(ticket)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, 0
            self.threads -= idle
        for _ in range(idle):
            self._inbox.put(None)


class _Waiting:
    """An item's greenlet waiting for a hook: until ``deadline`` (``time.monotonic``)."""

    __slots__ = ("call", "deadline", "future", "glet")

    def __init__(self, glet: Any, deadline: float, call: _Call | None, future: Any) -> None:
        self.glet, self.deadline, self.call, self.future = glet, deadline, call, future


class Lockstep:
    """The driver: at most ``size`` items in flight (``limits``: per automation), their
    decisions written in groups of at most ``limit``."""

    def __init__(
        self,
        store: Store,
        size: int,
        limit: int,
        limits: Mapping[str, int | None],
        wait_reads: bool = False,
    ) -> None:
        if greenlet is None:
            raise RuntimeError(
                "a lockstep worker needs the greenlet package: pip install 'stopline[lockstep]'"
            )
        self.store = store
        self.size = size
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
        self._waiting: dict[int, _Waiting] = {}
        self._ended: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._threads = _HookThreads(self._ended)
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
        free = self.size - self.in_flight
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
        if self._reads:
            self._read_group()
        if self._commits:
            self._write_group()
        self._collect(block=False)
        ended = self.in_flight < flying  # room for the loop to claim: no waiting, then
        if wait and not ended and not self._ready and not self._commits and self._waiting:
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

    def _write_group(self) -> None:
        group, self._commits = self._commits[: self.limit], self._commits[self.limit :]
        self._resume(group, self.store.apply_many)
        self.groups += 1
        self.largest = max(self.largest, len(group))

    def _read_group(self) -> None:
        group, self._reads = self._reads, []
        self._resume(group, partial(read_checks, self.store))
        self.read_groups += 1
        self.largest_read = max(self.largest_read, len(group))

    def _resume(self, group: list[tuple[Any, Any]], run: Callable[[list[Any]], Any]) -> None:
        """``run`` the group's values at once: each greenlet goes on with its result, or with
        what ``run`` raised."""
        try:
            results = run([value for _, value in group])
        except BaseException as error:
            for glet, _ in group:
                self._ready.append((glet, error, True))
        else:
            for (glet, _), result in zip(group, results, strict=True):
                self._ready.append((glet, result, False))

    def _collect(self, *, block: bool) -> bool:
        """Hand each ended hook's answer to its item, and a timeout to each item whose hook
        ran past its time. ``True`` when some item can go on."""
        now = time.monotonic()
        if block:
            nearest = min(w.deadline for w in self._waiting.values())
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
                self._ready.append((waiting.glet, HookTimeout(), True))
        return bool(self._ready)

    def _answer(self, ticket: int) -> None:
        waiting = self._waiting.pop(ticket, None)
        if waiting is None:  # timed out already: its answer is dropped
            return
        if waiting.future is not None:
            answer = _future_answer(waiting.future)
        else:
            assert waiting.call is not None
            answer = (waiting.call.result, waiting.call.error)
        self._ready.append((waiting.glet, answer, False))

    def _hook(self, function: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> Any:
        """Start ``function`` and wait for it in this item's greenlet: ``(result, error)``;
        :class:`HookTimeout` past ``timeout`` seconds."""
        self._tickets += 1
        ticket = self._tickets
        deadline = time.monotonic() + timeout
        if is_async(function):
            loop = event_loop()
            try:
                future = asyncio.run_coroutine_threadsafe(guarded(function(*args)), loop)
            except BaseException as error:  # raised before the coroutine ever ran
                return None, error
            waiting = _Waiting(greenlet.getcurrent(), deadline, None, future)
            self._waiting[ticket] = waiting
            future.add_done_callback(lambda _: self._ended.put(ticket))
            try:
                return self._driver.switch((_HOOK, waiting))
            except HookTimeout:
                retire_if_held(loop)
                raise
        call = _Call(function, args, ticket)
        waiting = _Waiting(greenlet.getcurrent(), deadline, call, None)
        self._waiting[ticket] = waiting
        self._threads.submit(call)
        return self._driver.switch((_HOOK, waiting))

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
        result, error = self._hook(partial(function, *args, **kwargs), (), math.inf)
        if error is not None:
            raise error
        return result  # type: ignore[no-any-return]


def _future_answer(future: Any) -> tuple[Any, BaseException | None]:
    try:
        result: tuple[Any, BaseException | None] = future.result(0)
    except BaseException as error:  # cancelled from outside
        return None, error
    return result


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
            answer: tuple[Any, BaseException | None] = self._lockstep._hook(function, args, timeout)
        except HookTimeout:
            self.abandoned += 1
            raise
        return answer
