"""What runs a worker's items when it runs more than one at a time: step threads and a group
committer (``slots.py``, ``group_commit.py``), or greenlets of its own thread (``lockstep.py``);
one step at a time, neither."""

from __future__ import annotations

from collections.abc import Callable

from ..store import Store
from .automation import App
from .group_commit import GroupCommitter
from .lockstep import Lockstep
from .slots import Slots

Drivers = tuple[Slots | None, GroupCommitter | None, Lockstep | None]


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
        if ahead:
            raise ValueError("a lockstep worker claims no items ahead")
        return None, None, Lockstep(store, size, batch, limits)
    if size > 1 or ahead:
        return Slots(size, limits, process, ahead), GroupCommitter(store, batch), None
    return None, None, None
