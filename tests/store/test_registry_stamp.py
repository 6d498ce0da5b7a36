"""PostgreSQL tells whether the registry's rows changed by their stamp (``registry_stamp``:
a SHA-256 of every row version's xmin and ctid), not by their text: any write of any row,
whatever column it touches and whatever it writes, makes the store fold again, and a stamp
is trusted alone for ``STAMP_TRUST`` seconds at most."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

from helpers import T0, registry_outcome
from stopline.core.ledger import REGISTRY
from stopline.core.policy import Policy
from stopline.core.records import Actor
from stopline.store import Store, open_store
from stopline.store import actors as actors_module

pytestmark = pytest.mark.postgres

S = timedelta(seconds=1)
REGISTRY_TABLES = ("actor_events", "actors", "tokens", "automations", "ledger")


def _seed(store: Store) -> None:
    store.register_automation("auto", Policy(), T0)
    store.set_actor(Actor("ann", frozenset({"operator"})), "add", {}, T0)
    store.set_actor(Actor("bob", frozenset({"approver"})), "add", {}, T0 + S)
    store.add_token("bob", "hash-bob", T0 + 2 * S)


def _changed(column: str, kind: str) -> str:
    """An expression giving ``column`` (of SQL type ``kind``) a value it does not hold."""
    if kind in ("text", "character varying"):
        return f"coalesce({column}, '') || 'x'"
    if kind in ("integer", "bigint", "smallint"):
        return f"coalesce({column}, 0) + 1000"
    if kind == "boolean":
        return f"NOT coalesce({column}, false)"
    if kind.startswith("timestamp"):
        return f"coalesce({column}, now()) + interval '1 second'"
    if kind in ("json", "jsonb"):
        return f"{kind}_build_array({column})"
    raise AssertionError(f"no edit for type {kind}")


def _columns(url: str, table: str) -> list[tuple[str, str, bool]]:
    """Each column of ``table``: its name, its SQL type, whether it is an identity column."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT column_name, data_type, is_identity = 'YES' FROM information_schema.columns"
            " WHERE table_name = %s ORDER BY ordinal_position",
            (table,),
        ).fetchall()
    return [(str(name), str(kind), bool(identity)) for name, kind, identity in rows]


def _edit(url: str, table: str, statement: str) -> int:
    """``statement`` on the last row of ``table`` (by ctid) with nothing in the way: no
    trigger, append-only or foreign key, fires (``session_replication_role``) and the
    table's CHECK constraints are dropped."""
    with psycopg.connect(url) as conn:
        conn.execute("SET LOCAL session_replication_role = replica")
        checks = conn.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'c'",
            (table,),
        ).fetchall()
        for (check,) in checks:
            conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT {check}")
        last = f"ctid = (SELECT max(ctid) FROM {table})"
        return conn.execute(f"{statement} WHERE {last}").rowcount


@pytest.mark.parametrize("table", REGISTRY_TABLES)
def test_an_edit_of_any_column_is_read_as_a_fresh_store_reads_it(
    postgres_server: Any, folds: list[int], table: str
) -> None:
    """Each column of each registry table, edited behind the store's back: the store that
    kept its fold (trusting it on the stamp alone a moment before) gives what a store that
    keeps nothing gives. Most edits change that (else the test would prove nothing)."""
    probe = postgres_server.create()
    try:
        columns = _columns(postgres_server.url_for(probe), table)
    finally:
        postgres_server.drop(probe)
    assert columns
    mattered = []
    for column, kind, identity in columns:
        name = postgres_server.create()
        url = postgres_server.url_for(name)
        try:
            store = open_store(url)
            try:
                _seed(store)
                before = registry_outcome(store)
                count = len(folds)
                assert registry_outcome(store) == before and len(folds) == count  # the stamp alone
                value = "DEFAULT" if identity else _changed(column, kind)
                assert _edit(url, table, f"UPDATE {table} SET {column} = {value}") == 1
                kept = registry_outcome(store)
                fresh = open_store(url, migrate=False)
                try:
                    assert kept == registry_outcome(fresh), f"{table}.{column}"
                finally:
                    fresh.close()
                if kept != before:
                    mattered.append(column)
            finally:
                store.close()
        finally:
            postgres_server.drop(name)
    assert len(mattered) * 2 >= len(columns), f"{table}: only {mattered} changed what is read"


@pytest.mark.parametrize("table", REGISTRY_TABLES)
def test_a_row_written_again_unchanged_is_read_whole_again(
    postgres_url: str, folds: list[int], table: str
) -> None:
    """Writing a row's own values back (what an edit that is put back looks like) is seen:
    the rows are read whole again; being the same, they are not folded again."""
    store = open_store(postgres_url)
    try:
        _seed(store)
        first = store.registry()
        column = _columns(postgres_url, table)[-1][0]
        stamp_before = _stamp(postgres_url)
        assert _edit(postgres_url, table, f"UPDATE {table} SET {column} = {column}") == 1
        assert _stamp(postgres_url) != stamp_before
        again = store.registry()
        assert again.ok and again.actors == first.actors and len(folds) == 1
    finally:
        store.close()


def _stamp(url: str) -> str:
    """The registry's stamp as the store's own statement reads it."""
    store = open_store(url, migrate=False)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(store.q["registry_stamp"], {"registry": REGISTRY}).fetchone()
    finally:
        store.close()
    assert row is not None
    return str(row[0])


def test_a_stamp_is_trusted_alone_for_a_bounded_time(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the stamp ever blind to an edit (here it is made to be: a constant), the edit is
    still read once the fold has been trusted on its stamp for ``STAMP_TRUST`` seconds."""
    store = open_store(postgres_url)
    try:
        _seed(store)
        monkeypatch.setitem(store.q, "registry_stamp", "SELECT 'blind' AS registry_stamp")
        # trusted for as long as this test could take, however loaded the machine
        monkeypatch.setattr(actors_module, "STAMP_TRUST", 1e9)
        trusted = registry_outcome(store)
        assert _edit(postgres_url, "tokens", "UPDATE tokens SET revoked_at = now()") == 1
        assert registry_outcome(store) == trusted, "the blind stamp hid nothing: no test"
        monkeypatch.setattr(actors_module, "STAMP_TRUST", -1.0)
        seen = registry_outcome(store)
        assert seen != trusted and seen[0], "the edit was not read once the trust ran out"
    finally:
        store.close()
