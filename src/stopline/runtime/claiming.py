"""A worker's claim: up to ``limit`` due items, each with what the check of a fresh claim reads
when the claim can read it too (``Store.claim_checked``: the row, its last event and that
event's upgrade seal, in the claim's own transaction). In signed mode that check also reads the
registry, so the claim takes the items alone and the check reads the rest itself."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from ..core.records import Item
from ..store.protocol import GuardReads

if TYPE_CHECKING:
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
