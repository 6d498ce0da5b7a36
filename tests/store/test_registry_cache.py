"""The registry is folded again only when a row it is folded from changed: every read still
reads every row, so an edit made behind the store's back is seen on the very next call."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from helpers import T0
from integrity.attacker import Attacker
from stopline.core.ledger import REGISTRY
from stopline.core.records import Actor
from stopline.store import Store, open_store
from stopline.store import actors as actors_module

S = timedelta(seconds=1)


@pytest.fixture
def folds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the chain was folded (one entry per fold)."""
    calls: list[int] = []
    real = actors_module.fold

    def counting(events: Any) -> Any:
        calls.append(len(events))
        return real(events)

    monkeypatch.setattr(actors_module, "fold", counting)
    return calls


def _seed(store: Store) -> None:
    store.set_actor(Actor("ann", frozenset({"operator"})), "add", {}, T0)
    store.set_actor(Actor("bob", frozenset({"approver"})), "add", {}, T0 + S)
    store.add_token("bob", "hash-bob", T0 + 2 * S)


def _kinds(store: Store) -> set[str]:
    return {f.reason for f in store.registry().findings}


def test_unchanged_rows_are_not_folded_again(store: Store, folds: list[int]) -> None:
    _seed(store)
    first = store.registry()
    assert first.ok and len(folds) == 1
    again = store.registry()
    assert len(folds) == 1, "the same rows were folded twice"
    assert again.actors == first.actors and again.tokens == first.tokens
    # what a caller does with its copy never reaches the next caller
    again.actors.clear()
    third = store.registry()
    assert third.ok and set(third.actors) == {"ann", "bob"}


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE actors SET active = NOT active WHERE name = 'bob'",
        "UPDATE actors SET roles = '[\"approver\", \"operator\"]' WHERE name = 'ann'",
        "DELETE FROM tokens WHERE hash = 'hash-bob'",
        "UPDATE tokens SET revoked_at = created_at WHERE hash = 'hash-bob'",
        "UPDATE actor_events SET change = 'revoke' WHERE actor = 'ann'",
        "DELETE FROM actor_events WHERE actor = 'bob'",
        "DELETE FROM ledger WHERE item_id = :registry",
    ],
)
def test_an_edit_behind_the_store_is_seen_on_the_next_call(
    store: Store, store_url: str, folds: list[int], edit: str
) -> None:
    _seed(store)
    assert store.registry().ok
    attacker = Attacker(store_url)
    try:
        assert attacker.sql(edit, {"registry": REGISTRY}) >= 1
    finally:
        attacker.close()
    assert _kinds(store), f"no finding after: {edit}"
    assert len(folds) == 2


def test_a_change_by_another_process_is_folded(store: Store, store_url: str) -> None:
    _seed(store)
    assert "carol" not in store.registry().actors
    other = open_store(store_url)
    try:
        other.set_actor(Actor("carol", frozenset({"approver"})), "add", {}, T0 + 3 * S)
    finally:
        other.close()
    registry = store.registry()
    assert registry.ok and "carol" in registry.actors


def test_a_read_during_legitimate_changes_sees_one_state_of_the_registry(store_url: str) -> None:
    """The registry's tables are read in one snapshot: a change committed while a read is under
    way (the chain, the actors and the ledger move together) is seen whole or not at all, never
    half, which would look like tampering and stop an innocent item. A reader loops while a
    writer makes one hundred legitimate changes; no read may report a finding."""
    writer, reader = open_store(store_url), open_store(store_url)
    done = threading.Event()
    seen: list[set[str]] = []

    def read() -> None:
        try:
            while not done.is_set():
                found = {f"{f.field}: {f.reason}" for f in reader.registry().findings}
                if found:
                    seen.append(found)
        finally:
            reader.close()

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for n in range(100):
            roles = frozenset({"approver"} if n % 2 else {"operator"})
            writer.set_actor(Actor(f"a{n % 7}", roles), "add", {}, T0 + n * S)
    finally:
        done.set()
        thread.join()
        writer.close()
    assert not seen, f"{len(seen)} reads saw half a change, first: {sorted(seen[0])}"
