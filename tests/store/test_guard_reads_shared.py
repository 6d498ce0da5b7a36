"""``Store.guard_reads_many`` against the store's own readers, not against ``guard_reads``:
on PostgreSQL both read an item's history and ledger entries through the same SQL fragments
(``guard_history``, ``guard_ledger``), so comparing the two cannot see a fault in them. What
each item reads must be what ``history``, ``item_ledger`` and ``registry`` read, in their
order, whatever order the rows lie in on disk."""

from __future__ import annotations

import pytest

from integrity.attacker import Attacker
from stopline.core.verify import verify_item
from stopline.store import Store, open_store

from .test_guard_reads_many import completed_and_one_waiting


def assert_reads_as_the_store_reads(store: Store, ids: list[str]) -> None:
    many = store.guard_reads_many(ids)
    assert sorted(many) == sorted(ids)
    for item_id in ids:
        reads = many[item_id]
        assert reads.item == store.get(item_id), item_id
        assert reads.history == store.history(item_id), item_id
        assert reads.ledger == store.item_ledger(item_id), item_id
        assert reads.head == reads.history[-1], item_id
        assert reads.registry == store.registry(), item_id
        assert reads.item is not None and verify_item(reads.item, reads.history) == []


def test_each_items_history_and_ledger_read_as_the_store_reads_them(store: Store) -> None:
    """Every event in sequence and every ledger entry with the hash before it (none for the
    first entry of its shard), for items with several of each and for one with a single
    entry."""
    ids = completed_and_one_waiting(store)
    assert_reads_as_the_store_reads(store, ids)
    assert_reads_as_the_store_reads(store, ids[1:2])
    firsts = [i for i in ids for _, before in store.item_ledger(i) if before is None]
    assert firsts  # an entry with nothing before it in its shard is read too
    many = store.guard_reads_many(["missing", ids[2], "missing again"])
    assert list(many) == [ids[2]]


@pytest.mark.postgres
def test_rows_moved_on_disk_read_in_their_order(postgres_url: str) -> None:
    """An item's first event and first ledger entry rewritten in place by SQL (the same
    values: the row's new version lies after the others on disk), and the tables read by
    sequential scans: the history still reads in sequence and the entries in ledger order."""
    url = f"{postgres_url}?options=-c%20enable_indexscan%3Doff%20-c%20enable_bitmapscan%3Doff"
    store = open_store(url)
    try:
        ids = completed_and_one_waiting(store)
        attacker = Attacker(postgres_url)
        try:
            moved = attacker.sql(
                "UPDATE events SET actor = actor WHERE item_id = :id AND seq = 1", {"id": ids[0]}
            )
            moved += attacker.sql(
                "UPDATE ledger SET item_id = item_id WHERE item_id = :id"
                " AND n = (SELECT MIN(n) FROM ledger WHERE item_id = :id)",
                {"id": ids[0]},
            )
        finally:
            attacker.close()
        assert moved == 2
        assert [e.seq for e in store.history(ids[0])] == [1, 2, 3, 4, 5, 6]
        assert_reads_as_the_store_reads(store, ids)
    finally:
        store.close()
