"""The store ledger: one hash chain across every item, of creations and people's commands.

An item's own event chain cannot tell that the item was deleted, nor that one of its events was
rewritten together with every event after it. The ledger can: each item's creation and each
event of a person's command (approve, reject, edit, resume, revise, ...) is appended to one
store-wide chain, with the hash of that event. :func:`ledger_findings` checks that chain, that
every item it names exists and that every such event is in it with the same hash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .canonical import digest
from .integrity import Finding
from .records import Event
from .transitions import By, Cmd, lookup

CREATE = "create"
AUTHORITY = "authority"
PEOPLE = frozenset({By.OPERATOR, By.APPROVER, By.REVIEWER})

LEDGER_BROKEN = "ledger_broken"
ITEM_MISSING = "item_missing"
ITEM_UNRECORDED = "item_unrecorded"
EVENT_UNRECORDED = "event_unrecorded"
EVENT_REWRITTEN = "event_rewritten"


@dataclass(frozen=True)
class LedgerEntry:
    n: int
    at: datetime
    kind: str
    item_id: str
    seq: int
    event_hash: str
    prev_hash: str
    hash: str = ""

    def body(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "at": self.at,
            "kind": self.kind,
            "item_id": self.item_id,
            "seq": self.seq,
            "event_hash": self.event_hash,
            "prev_hash": self.prev_hash,
        }

    def computed_hash(self) -> str:
        return digest(self.body())


def entry(
    n: int, at: datetime, kind: str, item_id: str, seq: int, event_hash: str, prev_hash: str
) -> LedgerEntry:
    unsealed = LedgerEntry(n, at, kind, item_id, seq, event_hash, prev_hash)
    return LedgerEntry(n, at, kind, item_id, seq, event_hash, prev_hash, unsealed.computed_hash())


def ledger_kind(event: Event) -> str | None:
    """Whether (and as what) an event goes into the ledger."""
    if event.from_state is None:
        return CREATE
    try:
        row = lookup(event.from_state, Cmd(event.command))
    except ValueError:
        return None
    return AUTHORITY if row is not None and row.by in PEOPLE else None


def ledger_findings(
    entries: Sequence[LedgerEntry], histories: Mapping[str, Sequence[Event]]
) -> list[Finding]:
    """Check the chain, and hold it against every item's history (``histories``: item id ->
    its events, oldest first)."""
    found: list[Finding] = []
    prev = ""
    created: dict[str, LedgerEntry] = {}
    recorded: dict[tuple[str, int], LedgerEntry] = {}
    for n, e in enumerate(entries, start=1):
        ref = str(e.n)
        if e.n != n or e.prev_hash != prev:
            found.append(Finding("ledger", ref, "prev_hash", LEDGER_BROKEN, "an entry is gone"))
        if e.computed_hash() != e.hash:
            found.append(Finding("ledger", ref, "hash", LEDGER_BROKEN, "the entry was altered"))
        prev = e.hash
        if e.kind == CREATE:
            if e.item_id in created:
                found.append(Finding("ledger", ref, "item_id", LEDGER_BROKEN, "created twice"))
            created[e.item_id] = e
        recorded[(e.item_id, e.seq)] = e
    for item_id in sorted(set(created) - set(histories)):
        found.append(
            Finding("item", item_id, "row", ITEM_MISSING, "created, but no longer in the store")
        )
    for item_id, events in sorted(histories.items()):
        if item_id not in created:
            found.append(
                Finding(
                    "item", item_id, "row", ITEM_UNRECORDED, "its creation is not in the ledger"
                )
            )
        found += _history_against_ledger(item_id, events, recorded)
    return found


def _history_against_ledger(
    item_id: str, events: Iterable[Event], recorded: Mapping[tuple[str, int], LedgerEntry]
) -> list[Finding]:
    found = []
    for event in events:
        kind = ledger_kind(event)
        held = recorded.get((item_id, event.seq))
        if kind is None:
            continue
        ref = f"{item_id}#{event.seq}"
        if held is None:
            found.append(
                Finding(
                    "event",
                    ref,
                    "ledger",
                    EVENT_UNRECORDED,
                    f"{event.command} by {event.actor} is not in the ledger",
                )
            )
        elif held.event_hash != event.hash:
            found.append(
                Finding(
                    "event",
                    ref,
                    "hash",
                    EVENT_REWRITTEN,
                    f"{event.command} differs from the one the ledger recorded",
                )
            )
    return found
