"""What a listing of items shows beside each record: whether it is what its history sealed.

``stopline items`` and ``GET /api/items`` list up to a thousand rows, each with the commands a
person would type next. A row edited in the database (a proposal that no longer needs an
approval, say) suggested ``approve``, which is refused ``integrity_failed``. Each listed item
is read again with its last event, all of them in one statement, and checked against it as
``stopline show`` checks one (``core/integrity.head_findings``): the listing shows the record
as read with its head, and a record that fails suggests ``close`` alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from .core.integrity import Finding, head_findings
from .core.records import Item
from .store import Store


def checked(store: Store, items: Sequence[Item]) -> list[tuple[Item, list[Finding]]]:
    """``items`` in their order, each as read again with its head event and what it fails
    against that head (an item gone since it was listed is left out)."""
    found = {
        item.id: (item, head, legacy)
        for item, head, legacy in store.current_many([i.id for i in items])
    }
    out = []
    for listed in items:
        if listed.id in found:
            item, head, legacy = found[listed.id]
            out.append((item, head_findings(item, head, legacy)))
    return out
