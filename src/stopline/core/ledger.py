"""The store ledger: hash chains across every item and the registry.

An item's own event chain cannot tell that the item was deleted, nor that its history was cut
back or rewritten together with every event after it. The ledger can. It records, with the
hash each event had:

* every item's creation (``create``);
* every event of a person's command (``authority``: approve, reject, edit, resume, revise, ...);
* every milestone of acting (``milestone``: execution started, artifacts staged, delivered,
  completed), so an item set back to before an action (a restored backup, a deleted tail)
  no longer matches it and is never acted on again;
* every registry event (``registry``), so a registry cut back to before a revocation is seen.

It is ``SHARDS`` independent chains; an entry goes to the shard of its item (the registry has
its own), so appends to different shards never wait for each other. Each shard is a hash chain:
an entry removed or altered in the middle of one breaks it. :func:`ledger_findings` checks every
chain against the whole store; :func:`item_ledger_findings` checks one item, before anything
acts on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .fast_digest import fast_digest
from .integrity import Finding
from .records import Event
from .transitions import By, Cmd, lookup

SHARDS = 16
REGISTRY = "registry"  # the item id of registry entries (no item id has no prefix)

CREATE = "create"
AUTHORITY = "authority"
MILESTONE = "milestone"
REGISTRY_KIND = "registry"
KINDS = (CREATE, AUTHORITY, MILESTONE, REGISTRY_KIND)
PEOPLE = frozenset({By.OPERATOR, By.APPROVER, By.REVIEWER, By.PARTICIPANT})
# worker events after which undoing the record would act again or lose what was done
MILESTONES = frozenset({Cmd.EXECUTE, Cmd.STAGE, Cmd.DELIVERED, Cmd.READBACK, Cmd.NOTHING_TO_DO})

LEDGER_BROKEN = "ledger_broken"
ITEM_MISSING = "item_missing"
ITEM_UNRECORDED = "item_unrecorded"
EVENT_UNRECORDED = "event_unrecorded"
EVENT_REWRITTEN = "event_rewritten"
HISTORY_CUT = "history_cut"


def shard_of(item_id: str) -> int:
    return int(hashlib.sha256(item_id.encode("utf-8")).hexdigest()[:8], 16) % SHARDS


@dataclass(frozen=True)
class LedgerEntry:
    shard: int
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
            "shard": self.shard,
            "n": self.n,
            "at": self.at,
            "kind": self.kind,
            "item_id": self.item_id,
            "seq": self.seq,
            "event_hash": self.event_hash,
            "prev_hash": self.prev_hash,
        }

    def computed_hash(self) -> str:
        return fast_digest(self.body())

    def hash_ok(self) -> bool:
        """The entry's hash is the one computed over its body. An entry of plain fields (as
        the store reads them: integers, strings, a UTC time) equal to one found sound, or made
        here, is sound: equal such fields write the same canonical text."""
        plain = _plain(self)
        if plain and self in _SOUND:
            return True
        try:
            ok = self.computed_hash() == self.hash
        except (TypeError, ValueError):  # a field no canonical text holds (written by SQL)
            ok = False
        if ok and plain:
            _remember(self)
        return ok

    @property
    def ref(self) -> str:
        return f"{self.shard}:{self.n}"


def entry(
    shard: int,
    n: int,
    at: datetime,
    kind: str,
    item_id: str,
    seq: int,
    event_hash: str,
    prev_hash: str,
) -> LedgerEntry:
    unsealed = LedgerEntry(shard, n, at, kind, item_id, seq, event_hash, prev_hash)
    made = LedgerEntry(
        shard, n, at, kind, item_id, seq, event_hash, prev_hash, unsealed.computed_hash()
    )
    _keep_sound(made)
    return made


MEMO_ENTRIES = 4096  # entries known sound (the whole memo is dropped when full)
_SOUND: set[LedgerEntry] = set()


def _plain(e: LedgerEntry) -> bool:
    """Its fields are of the exact types the store reads back. Only such entries are kept or
    looked up: ``True`` equals ``1`` and a time in another zone equals its UTC time, yet
    their canonical text differs (or may)."""
    return (
        type(e.shard) is int
        and type(e.n) is int
        and type(e.seq) is int
        and type(e.at) is datetime
        and e.at.tzinfo is UTC
        and type(e.kind) is str
        and type(e.item_id) is str
        and type(e.event_hash) is str
        and type(e.prev_hash) is str
        and type(e.hash) is str
    )


def _keep_sound(e: LedgerEntry) -> None:
    if _plain(e):
        _remember(e)


def _remember(e: LedgerEntry) -> None:
    if len(_SOUND) >= MEMO_ENTRIES:
        _SOUND.clear()
    _SOUND.add(e)


def ledger_kind(event: Event) -> str | None:
    """Whether (and as what) an event goes into the ledger."""
    if event.from_state is None:
        return CREATE
    try:
        command = Cmd(event.command)
    except ValueError:
        return None
    row = lookup(event.from_state, command)
    if row is not None and row.by in PEOPLE:
        return AUTHORITY
    return MILESTONE if command in MILESTONES else None


def chain_findings(entries: Sequence[LedgerEntry]) -> list[Finding]:
    """Each shard's entries (in order) form an unbroken chain."""
    found: list[Finding] = []
    last: dict[int, LedgerEntry] = {}
    for e in entries:
        before = last.get(e.shard)
        expected_n = 1 if before is None else before.n + 1
        expected_prev = "" if before is None else before.hash
        if e.n != expected_n or e.prev_hash != expected_prev:
            found.append(Finding("ledger", e.ref, "prev_hash", LEDGER_BROKEN, "an entry is gone"))
        if not e.hash_ok():
            found.append(Finding("ledger", e.ref, "hash", LEDGER_BROKEN, "the entry was altered"))
        last[e.shard] = e
    return found


def ledger_findings(
    entries: Sequence[LedgerEntry],
    histories: Mapping[str, Sequence[Event]],
    registry_hashes: Sequence[str] | None = None,
) -> list[Finding]:
    """Check every chain, and hold it against every item's history (``histories``: item id ->
    its events, oldest first) and the registry chain (its event hashes, in order)."""
    found = chain_findings(entries)
    by_item: dict[str, list[LedgerEntry]] = {}
    for e in entries:
        by_item.setdefault(e.item_id, []).append(e)
    created = {i for i, es in by_item.items() if any(e.kind == CREATE for e in es)}
    for item_id in sorted(created - set(histories)):
        found.append(
            Finding("item", item_id, "row", ITEM_MISSING, "created, but no longer in the store")
        )
    for item_id, events in sorted(histories.items()):
        if item_id != REGISTRY:
            found += history_against(item_id, events, by_item.get(item_id, ()))
    if registry_hashes is not None:
        found += registry_against(registry_hashes, by_item.get(REGISTRY, ()))
    return found


def history_against(
    item_id: str, events: Sequence[Event], entries: Iterable[LedgerEntry]
) -> list[Finding]:
    """One item's history and its ledger entries agree: its creation is recorded, every event
    the ledger records is still in the history with the same hash, and every event that must be
    recorded is."""
    found: list[Finding] = []
    recorded = {e.seq: e for e in entries}
    if not any(e.kind == CREATE for e in recorded.values()):
        found.append(
            Finding("item", item_id, "row", ITEM_UNRECORDED, "its creation is not in the ledger")
        )
    by_seq = {event.seq: event for event in events}
    for seq, held in sorted(recorded.items()):
        event = by_seq.get(seq)
        ref = f"{item_id}#{seq}"
        if event is None:
            found.append(
                Finding(
                    "event",
                    ref,
                    "history",
                    HISTORY_CUT,
                    f"the ledger recorded a {held.kind} event the history no longer has",
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
    for event in events:
        if ledger_kind(event) is not None and event.seq not in recorded:
            found.append(
                Finding(
                    "event",
                    f"{item_id}#{event.seq}",
                    "ledger",
                    EVENT_UNRECORDED,
                    f"{event.command} by {event.actor} is not in the ledger",
                )
            )
    return found


def registry_against(hashes: Sequence[str], entries: Iterable[LedgerEntry]) -> list[Finding]:
    """Every registry event is recorded, and the registry still holds every one recorded."""
    found: list[Finding] = []
    recorded = {e.seq: e for e in entries}
    for n, event_hash in enumerate(hashes, start=1):
        held = recorded.pop(n, None)
        if held is None:
            found.append(
                Finding("registry", str(n), "ledger", EVENT_UNRECORDED, "not in the ledger")
            )
        elif held.event_hash != event_hash:
            found.append(
                Finding("registry", str(n), "hash", EVENT_REWRITTEN, "differs from the ledger's")
            )
    for n in sorted(recorded):
        found.append(
            Finding("registry", str(n), "history", HISTORY_CUT, "recorded, but no longer there")
        )
    return found


def item_ledger_findings(
    item_id: str,
    events: Sequence[Event],
    entries: Sequence[tuple[LedgerEntry, str | None]],
) -> list[Finding]:
    """What a worker checks before acting: the item's history against its ledger entries, each
    entry intact and linked to the one before it in its shard (``entries``: each with the hash
    of its predecessor as stored, ``None`` for a shard's first entry)."""
    found: list[Finding] = []
    for e, before in entries:
        if not e.hash_ok():
            found.append(Finding("ledger", e.ref, "hash", LEDGER_BROKEN, "the entry was altered"))
        if e.prev_hash != (before or "") or (e.n > 1 and before is None):
            found.append(Finding("ledger", e.ref, "prev_hash", LEDGER_BROKEN, "a link is broken"))
    return found + history_against(item_id, events, [e for e, _ in entries])
