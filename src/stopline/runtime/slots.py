"""The steps a worker process runs at once (``--concurrency``, ``--batch``).

:class:`Slots` runs each claimed item's steps (``Worker.process``) on a thread of a pool of
``size`` threads: a plain hook waits on its step's thread, an ``async`` hook on the process's
event loop (``hooks.py``). It counts what is in flight, per automation too, so that the
worker claims only what it has room for: never more than ``size`` items, nor more of one
automation than its ``concurrency``. What a step thread raised (a database that went away,
say) is raised again in the worker's loop, where the reconnect rules apply.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..core.records import Item


class Slots:
    def __init__(
        self, size: int, limits: Mapping[str, int | None], run: Callable[..., None]
    ) -> None:
        self.size = size
        self.limits = dict(limits)
        self._run = run
        self._pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="stopline-step")
        self._cond = threading.Condition()
        self._flying: Counter[str] = Counter()
        self._errors: list[BaseException] = []

    @property
    def in_flight(self) -> int:
        with self._cond:
            return sum(self._flying.values())

    def room(self, automations: Sequence[str]) -> tuple[list[str], int]:
        """The automations that may take one more item now, and how many items may start."""
        with self._cond:
            free = self.size - sum(self._flying.values())
            names, room = [], free
            for name in automations:
                limit = self.limits.get(name)
                if limit is None:
                    names.append(name)
                elif self._flying[name] < limit:
                    names.append(name)
                    room = min(room, limit - self._flying[name])
            return names, max(0, room) if names else 0

    def start(self, item: Item, *args: Any) -> None:
        """Run ``run(item, *args)`` on a step thread."""
        with self._cond:
            self._flying[item.automation] += 1
        self._pool.submit(self._step, item, *args)

    def _step(self, item: Item, *args: Any) -> None:
        try:
            self._run(item, *args)
        except BaseException as error:  # raised again in the worker's loop
            with self._cond:
                self._errors.append(error)
        finally:
            with self._cond:
                self._flying[item.automation] -= 1
                self._cond.notify_all()

    def raise_failure(self) -> None:
        """Raise what a step thread raised since the last call (the first of them)."""
        with self._cond:
            errors, self._errors = self._errors, []
        if errors:
            raise errors[0]

    def wait(self, timeout: float) -> None:
        """Wait until a step ends (or ``timeout`` seconds), when any is in flight."""
        with self._cond:
            if sum(self._flying.values()):
                self._cond.wait(timeout)

    def drain(self) -> None:
        """Wait for every step in flight to end; the pool takes none after this."""
        self._pool.shutdown(wait=True)
