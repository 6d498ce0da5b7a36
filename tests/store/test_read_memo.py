"""A store keeps the records it decoded (and wrote) by the exact text of their rows: reading
them again costs nothing, and what the core checked on them still holds. A row changed in
any column behind the store's back decodes, and is checked, afresh: the change is found on
the very next read, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest

from helpers import T0, decide_at, discover
from integrity.attacker import Attacker
from stopline.core.commands import Observe
from stopline.core.integrity import EVENT_ALTERED, SEAL_MISMATCH, head_findings
from stopline.core.records import Actor, Item
from stopline.core.verify import verify_item
from stopline.store import Store

S = timedelta(seconds=1)


def _observed(store: Store) -> Item:
    """An item discovered, claimed and observed (two events), as a worker leaves it."""
    discover(store, "k1")
    claimed = store.claim("w1", T0, 30)
    assert claimed is not None and claimed.lease_owner is not None
    decision = decide_at(
        claimed, Observe(claimed.lease_owner, claimed.lease_token, {"n": [1, 2]}, T0), T0 + S
    )
    assert decision.after is not None and store.apply(decision)
    return decision.after


def _reasons(store: Store, item_id: str) -> set[str]:
    item, head, legacy = store.current(item_id)
    assert item is not None
    found = verify_item(item, store.history(item_id)) + head_findings(item, head, legacy)
    return {f.reason for f in found}


def test_a_record_read_again_is_the_one_decoded_before(store: Store) -> None:
    item = _observed(store)
    first, again = store.history(item.id), store.history(item.id)
    assert [e.hash for e in first] == [e.hash for e in again]
    assert all(a is b for a, b in zip(first, again, strict=True))
    # what this store wrote reads back as the very records it wrote
    read, head, _ = store.current(item.id)
    assert read is not None and head is not None
    assert head is first[-1]
    assert read.data is store.current(item.id)[0].data  # type: ignore[union-attr]
    assert _reasons(store, item.id) == set()


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ("UPDATE events SET actor = 'mallory' WHERE seq = 1", EVENT_ALTERED),
        ("UPDATE events SET detail = '{}' WHERE seq = 2", EVENT_ALTERED),
        ("UPDATE events SET reasons = '[\"approved\"]' WHERE seq = 2", EVENT_ALTERED),
        ('UPDATE items SET data = \'{"input": {}, "tampered": true}\'', SEAL_MISMATCH),
        ("UPDATE items SET attempts = attempts + 5", SEAL_MISMATCH),
    ],
)
def test_a_row_changed_behind_the_store_is_checked_afresh(
    store: Store, store_url: str, edit: str, reason: str
) -> None:
    item = _observed(store)
    assert _reasons(store, item.id) == set()  # read, and kept, once
    attacker = Attacker(store_url)
    try:
        assert attacker.sql(edit, {}) >= 1
    finally:
        attacker.close()
    assert reason in _reasons(store, item.id)


def test_the_same_value_written_in_other_text_still_reads_as_that_value(
    store: Store, store_url: str
) -> None:
    """Other text, the same JSON value: decoded afresh, and sound (nothing was changed)."""
    item = _observed(store)
    before = store.history(item.id)[-1]
    attacker = Attacker(store_url)
    try:
        assert attacker.sql("UPDATE events SET reasons = '[ ]' WHERE seq = 2", {}) == 1
    finally:
        attacker.close()
    after = store.history(item.id)[-1]
    assert after is not before and after == before
    assert _reasons(store, item.id) == set()


def test_the_guard_reads_are_what_the_reads_one_by_one_give(store: Store) -> None:
    """``guard_reads``: one snapshot, the same records as each read alone."""
    item = _observed(store)
    store.set_actor(Actor("ann", frozenset({"operator"})), "add", {}, T0)
    store.registry()  # folded once: the next check is the one statement (PostgreSQL)
    reads = store.guard_reads(item.id, history=True, registry=True)
    head, legacy = store.head(item.id)
    assert reads.item == store.get(item.id) and reads.head == head
    assert reads.legacy_seal == legacy
    assert reads.history == store.history(item.id) and len(reads.history) == 2
    assert reads.ledger == store.item_ledger(item.id) and reads.ledger
    assert reads.registry is not None and set(reads.registry.actors) == {"ann"}
    lean = store.guard_reads(item.id, history=False, registry=False)
    assert lean.item == reads.item and lean.head == head
    assert lean.history == [] and lean.ledger == [] and lean.registry is None
    missing = store.guard_reads("no-such-item", history=True, registry=True)
    assert missing.item is None and missing.head is None


def test_a_registry_edited_behind_the_store_shows_in_the_guard_reads(
    store: Store, store_url: str
) -> None:
    item = _observed(store)
    store.set_actor(Actor("ann", frozenset({"operator"})), "add", {}, T0)
    assert store.guard_reads(item.id, history=True, registry=True).registry.ok  # type: ignore[union-attr]
    attacker = Attacker(store_url)
    try:
        assert attacker.sql("UPDATE actors SET active = NOT active WHERE name = 'ann'", {}) == 1
    finally:
        attacker.close()
    registry = store.guard_reads(item.id, history=False, registry=True).registry
    assert registry is not None and not registry.ok
