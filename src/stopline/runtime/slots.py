"""The steps a worker process runs at once (``--concurrency``, ``--batch``).

:class:`Slots` runs each claimed item's steps (``Worker.process``) on a step thread, at most
``size`` at once (each holds a place): a plain hook runs in place on its step's thread, timed
by the slots' watchdog (``watchdog.py``), an ``async`` hook on the process's event loop
(``hooks.py``). It counts what
is in flight, per automation too, so that the worker claims only what it has room for: never
more than ``size`` items running and ``ahead`` more claimed and waiting for a step thread (so
that a step thread that ends an item starts the next at once, without waiting for a claim),
nor more of one automation than its ``concurrency``. An item whose step calls nothing more
(its last decision is on its way to the database: :meth:`Slots.finishing`) gives its place to
the next item while its thread waits for that write; it stays in flight until the write
returns, so a stop (:meth:`Slots.drain`) waits for it. What a step
thread raised (a database that went away, say) is raised again in the worker's loop, where
the reconnect rules apply.

A step whose hook ran past its time is taken over by a new thread (:meth:`Slots.take_over`),
which then serves in place of the one its hook still holds: the item keeps its one place, and
the slots keep ``size`` places for steps.
"""

from __future__ import annotations

import queue
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.records import Item
from .watchdog import Abandoned, Watchdog

# an item, its step, and whether it must wait for a place to run (a step taken over does not:
# it goes on in the place its hook's thread held)
Task = tuple[Item, Callable[[], object], bool]


class Slots:
    def __init__(
        self,
        size: int,
        limits: Mapping[str, int | None],
        run: Callable[..., None],
        ahead: int = 0,
    ) -> None:
        self.size = size
        self.ahead = ahead  # claimed items that may wait for a step thread
        self.limits = dict(limits)
        self.watchdog = Watchdog()
        self._run = run
        self._inbox: queue.SimpleQueue[Task | None] = queue.SimpleQueue()
        self._threads = 0  # step threads (a thread held by a hook excluded)
        self._idle = 0  # step threads waiting for a task no start has reserved yet
        self._closed = False
        lock = threading.Lock()
        self._cond = threading.Condition(lock)  # a step ended or finished: the loop, a drain
        self._place = threading.Condition(lock)  # a place is free: one step waiting for it
        self._flying: Counter[str] = Counter()  # items from their start to their step's end
        self._finishing: Counter[str] = Counter()  # of those, items whose last write is on its way
        self._placed: set[str] = set()  # the items whose steps hold one of the ``size`` places
        self._errors: list[BaseException] = []

    @property
    def in_flight(self) -> int:
        with self._cond:
            return sum(self._flying.values())

    def room(self, automations: Sequence[str]) -> tuple[list[str], int]:
        """The automations that may take one more item now, and how many items may start (or
        wait, ``ahead`` of them at most, for a step thread). An item whose last decision is on
        its way to the database (:meth:`finishing`) no longer counts, up to ``size`` of them."""
        with self._cond:
            finishing = min(self.size, sum(self._finishing.values()))
            free = self.size + self.ahead + finishing - sum(self._flying.values())
            names, room = [], free
            for name in automations:
                limit = self.limits.get(name)
                held = self._flying[name] - self._finishing[name]
                if limit is None:
                    names.append(name)
                elif held < limit:
                    names.append(name)
                    room = min(room, limit - held)
            return names, max(0, room) if names else 0

    def start(self, item: Item, *args: Any) -> None:
        """Run ``run(item, *args)`` on a step thread, once one of the ``size`` places is free."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the slots take no more steps")
            self._flying[item.automation] += 1
            spawn = not self._idle
            if spawn:
                self._threads += 1
            else:
                self._idle -= 1  # reserved for this task
        self._inbox.put((item, lambda: self._run(item, *args), True))
        if spawn:
            self._spawn(None)

    def finishing(self, item: Item) -> None:
        """``item``'s step calls nothing more: what is left is writing its last decision. Its
        place goes to the next item now, not when the write returns (a step thread then waits
        for the database while another runs hooks). Called on the step's thread; once."""
        with self._cond:
            if item.id in self._placed:
                self._placed.discard(item.id)
                self._finishing[item.automation] += 1
                self._place.notify()
                self._cond.notify_all()

    def take_over(self, item: Item, work: Callable[[], object]) -> None:
        """Go on with ``item``'s step, already in flight, by ``work`` on a new step thread
        (its own thread is held by a hook past its time, and ends when that returns)."""
        with self._cond:
            self._threads += 1
        self._spawn((item, work, False))

    def _spawn(self, first: Task | None) -> None:
        thread = threading.Thread(target=self._serve, args=(first,), daemon=True)
        thread.name = "stopline-step"
        thread.start()

    def _serve(self, first: Task | None) -> None:
        task = first if first is not None else self._inbox.get()
        while task is not None and self._step(*task):
            task = self._inbox.get()

    def _step(self, item: Item, work: Callable[[], object], wait: bool) -> bool:
        """Run one step; ``False`` when its hook was abandoned (another thread took the step
        and its place over, and this thread ends)."""
        if wait:
            with self._cond:
                while len(self._placed) >= self.size:
                    self._place.wait()
                self._placed.add(item.id)
        try:
            work()
        except Abandoned:
            with self._cond:
                self._threads -= 1
            return False
        except BaseException as error:  # raised again in the worker's loop
            with self._cond:
                self._errors.append(error)
        with self._cond:
            if item.id in self._placed:
                self._placed.discard(item.id)
                self._place.notify()
            else:  # its place went on at its last decision (``finishing``)
                self._finishing[item.automation] -= 1
            self._flying[item.automation] -= 1
            self._idle += 1
            self._cond.notify_all()
        return True

    def raise_failure(self) -> None:
        """Raise what a step thread raised since the last call (the first of them)."""
        with self._cond:
            errors, self._errors = self._errors, []
        if errors:
            raise errors[0]

    def wait(self, timeout: float) -> None:
        """Wait until a step ends or finishes (or ``timeout`` seconds), when any is in flight."""
        with self._cond:
            if sum(self._flying.values()):
                self._cond.wait(timeout)

    def drain(self) -> None:
        """Wait for every step in flight to end (a step taken over from a hook past its time
        included, not the hook itself); the slots take none after this."""
        with self._cond:
            self._closed = True
            while sum(self._flying.values()):
                self._cond.wait()
            threads = self._threads
        for _ in range(threads):
            self._inbox.put(None)
