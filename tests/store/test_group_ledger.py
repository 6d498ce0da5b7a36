"""A group commit writes the ledger entries of its decisions in the same transaction
(``apply_many``): each entry chained on the last one of its shard, none for a decision whose
compare-and-set lost, and the shards' chains unbroken when several groups write at once."""

from __future__ import annotations

import threading
from collections import Counter

from helpers import T0, decide_at
from stopline.core.commands import Discover, NothingToDo, Observe
from stopline.core.decision import Decision
from stopline.core.ledger import CREATE, MILESTONE, SHARDS, shard_of
from stopline.core.records import Item
from stopline.store import Store, open_store, raw
from stopline.verification import verify_store


def _discovered(store: Store, ids: list[str]) -> None:
    for item_id in ids:
        assert store.insert(decide_at(None, Discover(item_id, "auto", item_id, {}), T0))


def _classified(store: Store, worker: str, limit: int) -> list[Item]:
    """Claim every item due (at most ``limit``), observe them as one group (no ledger entry:
    they wait, classified, for their next claim) and claim them again."""
    claimed = store.claim_batch(worker, T0, 30, limit=limit)
    observed = [
        decide_at(item, Observe(worker, item.lease_token, {"n": 1}, T0), T0) for item in claimed
    ]
    assert store.apply_many(observed) == [True] * len(observed)
    again = store.claim_batch(worker, T0, 30, limit=limit)
    assert sorted(i.id for i in again) == sorted(i.id for i in claimed)
    return again


def _done(item: Item, worker: str) -> Decision:
    """A decision whose event is a ledger milestone."""
    decision = decide_at(item, NothingToDo(worker, item.lease_token, "nothing"), T0)
    assert decision.applied, decision.reasons
    return decision


def test_each_entry_of_a_group_is_chained_on_the_last_of_its_shard(store: Store) -> None:
    ids = [f"g{k:03d}" for k in range(3 * SHARDS)]
    _discovered(store, ids)
    shared = Counter(shard_of(i) for i in ids)
    assert max(shared.values()) > 1  # some decisions of the group share a shard
    items = _classified(store, "w1", len(ids))
    lost = items[5]
    assert store.apply(_done(lost, "w1"))  # another write to this item comes first
    group = [_done(item, "w1") for item in items]
    written = store.apply_many(group)
    assert written == [item is not lost for item in items]
    for item, decision in zip(items, group, strict=True):
        entries = store.item_ledger(item.id)
        assert [e.kind for e, _ in entries] == [CREATE, MILESTONE]
        assert entries[-1][0].seq == 3
        if item is not lost:
            assert decision.event is not None and entries[-1][0].event_hash == decision.event.hash
    report = verify_store(store)
    assert report.ok, [f.text() for f in report.findings]
    if store.dialect == "postgres":  # one transaction, not one per decision written again
        with raw.reading(store) as cur:
            cur.execute(
                "SELECT COUNT(DISTINCT xmin::text) AS n FROM ledger"
                " WHERE kind = 'milestone' AND item_id <> %(lost)s",
                {"lost": lost.id},
            )
            assert cur.fetchone()["n"] == 1


def test_a_group_without_ledger_entries_takes_no_shard_lock_and_writes_none(store: Store) -> None:
    ids = [f"p{k:02d}" for k in range(6)]
    _discovered(store, ids)
    before = len(store.ledger())
    _classified(store, "w1", 6)  # observed, claimed again: no entry
    assert len(store.ledger()) == before
    assert verify_store(store).ok


def test_groups_written_at_once_keep_every_shard_chain_unbroken(store_url: str) -> None:
    """Four writers, each with its own store (connections), write groups of milestones to the
    same shards at the same time; every chain stays whole and every item has its entry."""
    writers = 4
    per_writer = 2 * SHARDS
    setup = open_store(store_url)
    try:
        ids = [f"c{k:03d}" for k in range(writers * per_writer)]
        held = []
        for n in range(writers):
            _discovered(setup, ids[n * per_writer : (n + 1) * per_writer])
            held.append(_classified(setup, f"w{n}", per_writer))
    finally:
        setup.close()
    start = threading.Barrier(writers)
    results: dict[int, list[bool]] = {}

    def write(n: int) -> None:
        own = open_store(store_url, migrate=False)
        try:
            groups = [held[n][k : k + 8] for k in range(0, per_writer, 8)]
            start.wait(timeout=60)
            out: list[bool] = []
            for group in groups:
                out += own.apply_many([_done(item, f"w{n}") for item in group])
            results[n] = out
        finally:
            own.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(results) == list(range(writers))
    assert all(all(out) for out in results.values())
    check = open_store(store_url, migrate=False)
    try:
        entries = check.ledger()
        milestones = [e for e in entries if e.kind == MILESTONE]
        assert sorted(e.item_id for e in milestones) == sorted(ids)
        report = verify_store(check)
        assert report.ok, [f.text() for f in report.findings]
    finally:
        check.close()
