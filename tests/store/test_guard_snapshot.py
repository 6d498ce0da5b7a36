"""The reads of the check before acting (``Store.guard_reads`` with the history and the
registry): PostgreSQL reads them in one statement (``guard_snapshot``, the history and the
ledger entries as JSON arrays); whatever the rows hold, sound or edited behind the store, that
gives exactly what the reads of the shared SQL store give, statement by statement."""

from __future__ import annotations

from typing import Any

import pytest

from helpers import T0, decide_at
from integrity.attacker import Attacker
from stopline.core.commands import Discover, NothingToDo, Observe
from stopline.core.ledger import REGISTRY
from stopline.core.records import Actor
from stopline.store import Store
from stopline.store.base import SQLStore
from stopline.store.protocol import GuardReads


def _item_with_history(store: Store) -> str:
    """An item with three events (one of them a ledger milestone) and a registry of two
    actors; returns its id."""
    store.set_actor(Actor("ann", frozenset({"operator"})), "add", {}, T0)
    assert store.insert(decide_at(None, Discover("g1", "auto", "k1", {}), T0))
    item = store.claim("w1", T0, 30)
    assert item is not None
    observed = decide_at(item, Observe("w1", item.lease_token, {"n": 1, "é": "ü"}, T0), T0)
    assert store.apply(observed)
    item = store.claim("w1", T0, 30)
    assert item is not None
    done = decide_at(item, NothingToDo("w1", item.lease_token, "nothing"), T0)
    assert done.applied and store.apply(done)
    return "g1"


def _plain(reads: GuardReads) -> dict[str, Any]:
    registry = reads.registry
    return {
        "item": reads.item,
        "head": reads.head,
        "legacy_seal": reads.legacy_seal,
        "history": reads.history,
        "ledger": reads.ledger,
        "registry": None
        if registry is None
        else (sorted(f.text() for f in registry.findings), sorted(registry.actors)),
    }


def _both(store: Store, item_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    assert isinstance(store, SQLStore)
    store.registry()  # folded: the registry comes by its text, as in a worker
    one = store.guard_reads(item_id, history=True, registry=True)
    shared = SQLStore.guard_reads(store, item_id, history=True, registry=True)
    return _plain(one), _plain(shared)


EDITS = [
    None,
    "UPDATE events SET detail = '{\"edited\": true}' WHERE item_id = 'g1' AND seq = 2",
    "UPDATE events SET at = :later WHERE item_id = 'g1' AND seq = 3",
    "DELETE FROM events WHERE item_id = 'g1' AND seq = 3",
    "DELETE FROM ledger WHERE item_id = 'g1' AND kind = 'milestone'",
    "UPDATE ledger SET hash = 'x' WHERE item_id = 'g1' AND kind = 'create'",
    "UPDATE actors SET roles = '[\"operator\", \"approver\"]' WHERE name = 'ann'",
    "DELETE FROM ledger WHERE item_id = :registry",
]


@pytest.mark.parametrize("edit", EDITS)
def test_one_statement_reads_what_the_statements_read(
    store: Store, store_url: str, edit: str | None
) -> None:
    item_id = _item_with_history(store)
    if edit is not None:
        attacker = Attacker(store_url)
        try:
            later = attacker.time(T0.replace(microsecond=0, second=7))
            assert attacker.sql(edit, {"later": later, "registry": REGISTRY}) >= 1
        finally:
            attacker.close()
    one, shared = _both(store, item_id)
    assert one == shared
    if edit is None:
        assert [e.seq for e in one["history"]] == [1, 2, 3]
        assert len(one["ledger"]) == 2 and one["registry"] == ([], ["ann"])


def test_no_such_item_reads_nothing(store: Store) -> None:
    _item_with_history(store)
    assert store.guard_reads("nobody", history=True, registry=True) == GuardReads(None, None, None)
