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
from ..store import Store, open_store

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
    """Redraw a progress line on ``stream`` (standard error) until the block ends."""
    stream = stream or sys.stderr
    stop = threading.Event()
    store = open_store(url, migrate=False, check=False)
    start = transitions(store)

    def draw() -> None:
        while not stop.wait(INTERVAL):
            try:
                line = f"{transitions(store) - start} transitions; items: {states_line(store)}"
            except Exception:  # the database is busy or away: the workers say so in the log
                continue
            stream.write("\r\x1b[2K" + line[:200])
            stream.flush()

    thread = threading.Thread(target=draw, name="stopline-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)
        stream.write("\r\x1b[2K")
        stream.flush()
        store.close()
