"""Live progress of ``stopline run`` on a terminal, read from the database.

A thread with its own store reads, twice a second, how many transitions were written since the
run began and how many items each state holds, and redraws one line on standard error. It reads
the database rather than the workers, so the items every worker process moves are counted.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from ..core.states import State
from ..store import Store, StoreError, connection_errors, open_store

INTERVAL = 0.5


def transitions(store: Store) -> int:
    return sum(t.count for t in store.insights.transition_counts())


def states_line(store: Store) -> str:
    counts = {c.state: c.count for c in store.insights.count_by_state()}
    work = sum(n for s, n in counts.items() if State(s).is_work)
    stops = [f"{s} {n}" for s, n in counts.items() if State(s).is_stop]
    done = sum(n for s, n in counts.items() if State(s).is_terminal)
    parts = [f"{work} at work", *stops, f"{done} finished"]
    return ", ".join(parts)


@contextmanager
def live(url: str, stream: TextIO | None = None) -> Iterator[None]:
    """Redraw a progress line on ``stream`` (standard error) until the block ends. The
    database is read once it exists (``run`` creates it), on a connection of its own."""
    stream = stream or sys.stderr
    stop = threading.Event()
    unavailable: tuple[type[BaseException], ...] = (StoreError, *connection_errors())

    def draw() -> None:
        store: Store | None = None
        start: int | None = None
        try:
            while not stop.wait(INTERVAL):
                try:
                    if store is None:
                        store = open_store(url, migrate=False, check=True, create=False)
                    done = transitions(store)
                    start = done if start is None else start
                    line = f"{done - start} transitions; items: {states_line(store)}"
                except unavailable:  # not created yet, busy or away: the workers log it
                    continue
                stream.write("\r\x1b[2K" + line[:200])
                stream.flush()
        finally:
            if store is not None:
                store.close()

    thread = threading.Thread(target=draw, name="stopline-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)
        stream.write("\r\x1b[2K")
        stream.flush()
