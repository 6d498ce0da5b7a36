"""A worker's claim: up to ``limit`` due items, each with what the check of a fresh claim reads
when the claim can read it too (``Store.claim_checked``: the row, its last event and that
event's upgrade seal, in the claim's own transaction). In signed mode that check also reads the
registry, so the claim takes the items alone and the check reads the rest itself.

Running several items at once, :func:`start_what_fits` claims what the slots have room for and
starts each claim on them; an item claimed ahead (``Worker(ahead=...)``) waits there for a step
thread, its lease renewed from the claim on, and is run by this worker whatever happens next
(a stop drains it too), so that its attempt, counted at its claim, is one it makes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from ..core.records import Item
from ..store.protocol import GuardReads
from .lease import LeaseHolder

if TYPE_CHECKING:
    from .lockstep import Lockstep
    from .slots import Slots
    from .worker import Worker


def claim_due(
    worker: Worker, now: datetime, shortest: float, leases: Mapping[str, float], limit: int
) -> list[tuple[Item, GuardReads | None]]:
    """Claim for ``worker`` up to ``limit`` items of the automations ``leases`` names, each
    with the lease of its automation (``shortest`` for one it does not name)."""
    store, names = worker.store, list(leases)
    if worker.trust is None:
        found = store.claim_checked(worker.id, now, shortest, names, leases=leases, limit=limit)
        return [(item, reads) for item, reads in found]
    if limit == 1:
        one = store.claim(worker.id, now, shortest, names, leases=leases)
        return [] if one is None else [(one, None)]
    items = store.claim_batch(worker.id, now, shortest, names, leases=leases, limit=limit)
    return [(item, None) for item in items]


def claim_room(
    worker: Worker, now: datetime, room: tuple[list[str], int]
) -> list[tuple[Item, GuardReads | None]]:
    """Claim up to ``room`` items (at most a batch) of the automations it names, each with
    its automation's lease."""
    names, free = room
    if free <= 0:
        return []
    shortest = min(worker.leases[name] for name in names)
    leases = {name: worker.leases[name] for name in names}
    return claim_due(worker, now, shortest, leases, min(free, worker.batch))


def start_what_fits(worker: Worker, now: datetime, slots: Slots) -> bool:
    """Claim what ``slots`` have room for and start it. ``True`` when something was claimed,
    or steps are still in flight (after waiting a little for one of them to end)."""
    slots.raise_failure()
    claimed = claim_room(worker, now, slots.room(list(worker.leases)))
    for item, reads in claimed:
        worker.counted("claims")
        with _renewed_from_claim(worker, item) as holder:
            slots.start(item, reads, holder)
    if claimed:
        return True
    if slots.in_flight:
        slots.wait(0.05)  # a step that ends may have made its next step due at once
        return True
    return False


def start_in_lockstep(worker: Worker, now: datetime, lockstep: Lockstep) -> bool:
    """Claim what ``lockstep`` has room for, start it, and run what can go on (waiting a
    little for a hook when nothing was claimed). ``True`` when something was claimed, or
    items are still in flight."""
    lockstep.raise_failure()
    claimed = claim_room(worker, now, lockstep.room(list(worker.leases)))
    for item, reads in claimed:
        worker.counted("claims")
        with _renewed_from_claim(worker, item) as holder:
            lockstep.start(item, partial(worker.process, item, reads, holder))
    busy = bool(claimed) or lockstep.in_flight > 0  # (the pump may end every item in flight)
    lockstep.pump(wait=not claimed)
    return busy


@contextmanager
def _renewed_from_claim(worker: Worker, item: Item) -> Iterator[LeaseHolder]:
    """The claim's holder, its lease renewed from now on (the item may wait for a step thread,
    or for a driver busy with other items, before it first runs); let go if the block raises,
    else by the item's steps once they end."""
    holder = LeaseHolder(item)
    if worker.renew:
        worker.renewer.hold(holder, worker.leases[item.automation])
    try:
        yield holder
    except BaseException:
        worker.renewer.release(holder)
        raise
