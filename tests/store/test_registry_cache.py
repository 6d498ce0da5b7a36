"""The registry is folded again only when a row it is folded from changed: every read still
reads every row, so an edit made behind the store's back is seen on the very next call."""

from __future__ import annotations

import sqlite3
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from helpers import T0, registry_outcome
from integrity.attacker import Attacker
from stopline.core.ledger import REGISTRY
from stopline.core.policy import Policy
from stopline.core.records import Actor
from stopline.store import Store, open_store

S = timedelta(seconds=1)


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


def _edit(path: Path, table: str, column: str) -> int:
    """Append ``x`` to ``column`` of the last row of ``table`` with nothing in the way: no
    foreign key or CHECK constraint checked, the append-only triggers dropped and put back."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        triggers = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
            (table,),
        ).fetchall()
        for name, _ in triggers:
            conn.execute(f"DROP TRIGGER {name}")
        last = f"WHERE rowid = (SELECT MAX(rowid) FROM {table})"
        try:
            edited = conn.execute(f"UPDATE {table} SET {column} = {column} || 'x' {last}").rowcount
        except sqlite3.IntegrityError:  # an INTEGER PRIMARY KEY holds integers only
            edited = conn.execute(f"UPDATE {table} SET {column} = {column} + 1000 {last}").rowcount
        for _, sql in triggers:
            conn.execute(sql)
        conn.commit()
        return edited
    finally:
        conn.close()


REGISTRY_TABLES = ("actor_events", "actors", "tokens", "automations", "ledger")


@pytest.mark.parametrize("table", REGISTRY_TABLES)
def test_an_edit_of_any_column_is_read_as_a_store_with_nothing_kept_reads_it(
    tmp_path: Path, table: str
) -> None:
    """SQLite's one-statement check (``registry_text``) lists the columns the fold reads: an
    edit of any column of any registry table gives the store that kept its last fold what a
    store that keeps nothing reads. (PostgreSQL's check reads whole rows: ``json_agg(r)``.)"""

    def seeded(name: str) -> Path:
        path = tmp_path / f"{name}.db"
        store = open_store(f"sqlite:///{path}")
        store.register_automation("auto", Policy(), T0)
        _seed(store)
        store.close()
        return path

    probe = Attacker(f"sqlite:///{seeded('probe')}")
    try:
        columns = list(probe.rows(f"SELECT * FROM {table} LIMIT 1")[0])
    finally:
        probe.close()
    for column in columns:
        path = seeded(column)
        sqlite_store_url = f"sqlite:///{path}"
        store = open_store(sqlite_store_url)
        try:
            assert store.registry().ok  # folded and kept
            assert _edit(path, table, column) == 1
            kept = registry_outcome(store)
            fresh_store = open_store(sqlite_store_url, migrate=False)
            try:
                assert kept == registry_outcome(fresh_store), f"{table}.{column}"
            finally:
                fresh_store.close()
        finally:
            store.close()
