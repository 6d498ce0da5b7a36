"""What runs a worker's items when it runs more than one at a time: step threads with a group
committer and a group reader (``slots.py``, ``group_commit.py``), or greenlets of its own
thread (``lockstep.py``); one step at a time, neither."""

from __future__ import annotations

from collections.abc import Callable

from ..store import Store
from .automation import App
from .group_commit import GroupCommitter, GroupReader
from .lockstep import Lockstep
from .slots import Slots

# the step threads, what writes the decisions in groups (the group committer, or the lockstep
# driver itself), the lockstep driver, and what reads the checks before acting
Drivers = tuple[
    Slots | None, GroupCommitter | Lockstep | None, Lockstep | None, GroupReader | Lockstep | Store
]


def drivers(
    store: Store,
    app: App,
    process: Callable[..., None],
    sizes: tuple[int, int, int],
    lockstep: bool,
) -> Drivers:
    """The drivers of a worker's items (see ``Worker``) for ``sizes``, its concurrency, batch
    and ahead; ``ValueError`` for settings that make none."""
    concurrency, batch, ahead = sizes
    for name, value in (("concurrency", concurrency), ("batch", batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1")
    if isinstance(ahead, bool) or not isinstance(ahead, int) or ahead < 0:
        raise ValueError("ahead must be a whole number of at least 0")
    size = max(concurrency, batch)
    limits = {a.name: a.concurrency for a in app.automations}
    if lockstep:
        # a PostgreSQL read waits on the network: it runs on a thread, not on the driver's
        wait_reads = store.dialect != "sqlite"
        lockstep_driver = Lockstep(store, size, batch, limits, wait_reads, ahead)
        return None, lockstep_driver, lockstep_driver, lockstep_driver
    if size > 1 or ahead:
        slots = Slots(size, limits, process, ahead)
        # reads in groups of one would only wait for each other
        reader = GroupReader(store, batch) if batch > 1 else store
        return slots, GroupCommitter(store, batch), None, reader
    return None, None, None, store
