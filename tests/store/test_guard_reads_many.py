"""``Store.guard_reads_many``: the checks before acting of several items at once (a lockstep
worker reads its round's in one statement on PostgreSQL). What it gives for each item is what
``guard_reads(item, history=True, registry=True)`` gives, on both stores: the row, its head,
the whole history, the ledger entries and the registry, including what an edit behind the
store left there, so that the check before acting finds it."""

from __future__ import annotations

from helpers import T0, decide_at
from integrity.attacker import Attacker
from stopline import App, ApprovalPolicy, ApprovalRule, Automation, Deliver, Evidence, Proposal
from stopline.controller import Controller
from stopline.core.commands import Discover
from stopline.core.verify import verify_item
from stopline.runtime.worker import Worker
from stopline.store import Store

APP = App(
    [
        Automation(
            "auto",
            lambda ctx: [],
            lambda ctx: Evidence({"ok": True}),
            lambda ctx: Proposal("tidy", {}),
            execute=lambda ctx: Deliver(),
            approval=ApprovalPolicy(default=ApprovalRule(approvals=0)),
        )
    ]
)


def completed_and_one_waiting(store: Store) -> list[str]:
    """Three items run to completion (histories and ledger entries), one only discovered."""
    ids = [f"g{k}" for k in range(4)]
    for k, item_id in enumerate(ids[:3]):
        store.insert(decide_at(None, Discover(item_id, "auto", f"k{k}", {}), T0))
    worker = Worker(store, APP)
    while worker.tick():
        pass
    store.insert(decide_at(None, Discover(ids[3], "auto", "k3", {}), T0))
    return ids


def one_by_one(store: Store, ids: list[str]) -> dict[str, object]:
    return {i: store.guard_reads(i, history=True, registry=True) for i in ids}


def test_each_item_reads_as_it_would_alone(store: Store) -> None:
    ids = completed_and_one_waiting(store)
    assert [store.get(i).state for i in ids[:3]] == ["completed"] * 3  # type: ignore[union-attr]
    many = store.guard_reads_many([*ids, "missing", ids[0]])
    assert set(many) == set(ids)  # no row for an id with no item; an id asked twice once
    alone = one_by_one(store, ids)
    for item_id in ids:
        assert many[item_id] == alone[item_id], item_id
    assert len(many[ids[0]].history) == 6 and len(many[ids[0]].ledger) == 4
    assert len(many[ids[3]].history) == 1 and len(many[ids[3]].ledger) == 1  # its discovery
    assert store.guard_reads_many([]) == {}
    assert store.guard_reads_many(["missing"]) == {}


def test_each_item_has_a_registry_of_its_own(store: Store) -> None:
    """The registry is read once, but each item's is a copy its checker may change."""
    ids = completed_and_one_waiting(store)
    many = store.guard_reads_many(ids[:2])
    first, second = (many[i].registry for i in ids[:2])
    assert first is not None and second is not None and first == second
    assert first is not second and first.actors is not second.actors


def test_a_registry_changed_since_the_last_read_is_read_again(store: Store) -> None:
    ids = completed_and_one_waiting(store)
    before = store.guard_reads_many(ids[:2])
    assert "ed" not in before[ids[0]].registry.actors  # type: ignore[union-attr]
    Controller(store).add_actor("ed", ["approver"])
    after = store.guard_reads_many(ids[:2])
    for item_id in ids[:2]:
        registry = after[item_id].registry
        assert registry is not None and "ed" in registry.actors
        assert registry == store.guard_reads(item_id, history=True, registry=True).registry


def test_a_history_edited_behind_the_store_reads_as_edited(store: Store, store_url: str) -> None:
    """An event rewritten by SQL: the many-item read gives the rewritten event, as the
    one-item read does, so the check of the history finds the edit."""
    ids = completed_and_one_waiting(store)
    attacker = Attacker(store_url)
    try:
        touched = attacker.sql(
            "UPDATE events SET actor = :actor WHERE item_id = :id AND seq = 2",
            {"actor": "mallory", "id": ids[1]},
        )
    finally:
        attacker.close()
    assert touched == 1
    many = store.guard_reads_many(ids[:2])
    alone = one_by_one(store, ids[:2])
    assert many == alone
    edited, untouched = many[ids[1]], many[ids[0]]
    assert [e.actor for e in edited.history].count("mallory") == 1
    assert edited.item is not None and verify_item(edited.item, edited.history)
    assert untouched.item is not None and not verify_item(untouched.item, untouched.history)
