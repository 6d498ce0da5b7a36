"""The sign-outs port (signed-out web sessions), on SQLite and on PostgreSQL, and the migration
that adds its table to a database written before it."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from helpers import T0, count
from stopline.core.canonical import format_time
from stopline.store import Store, open_store, raw

H = timedelta(hours=1)


def key(sid: str) -> str:
    return hashlib.sha256(sid.encode()).hexdigest()


def rows(store: Store) -> dict[str, str]:
    with raw.reading(store) as cur:
        cur.execute("SELECT session_hash, valid_until FROM ended_sessions")
        return {str(r["session_hash"]): str(r["valid_until"]) for r in cur.fetchall()}


def test_a_session_signed_out_is_ended_for_every_store_on_the_database(store_url: str) -> None:
    """A sign-out recorded through one store is read by another opened on the same database
    (another process, or the same after a restart); a session never signed out is not ended."""
    first = open_store(store_url)
    try:
        assert not first.signouts.ended(key("a"))
        first.signouts.end(key("a"), T0 + 13 * H, T0)
    finally:
        first.close()
    second = open_store(store_url)
    try:
        assert second.signouts.ended(key("a"))
        assert not second.signouts.ended(key("b"))
        assert list(rows(second)) == [key("a")]  # the hash, never the id
    finally:
        second.close()


def test_a_sign_out_drops_the_rows_past_their_time(store: Store) -> None:
    """A sign-out at ``now`` drops every row whose time is past (its cookie has expired) and
    keeps the others; signing a session out again keeps the later of its two times."""
    signouts = store.signouts
    signouts.end(key("old"), T0 + 13 * H, T0)
    signouts.end(key("kept"), T0 + 20 * H, T0 + 7 * H)
    signouts.end(key("kept"), T0 + 15 * H, T0 + 8 * H)  # an earlier time changes nothing
    assert count(store, "ended_sessions") == 2
    signouts.end(key("new"), T0 + 27 * H, T0 + 14 * H)
    assert not signouts.ended(key("old"))
    assert signouts.ended(key("kept")) and signouts.ended(key("new"))
    assert sorted(rows(store)) == sorted([key("kept"), key("new")])
    assert rows(store)[key("kept")] == format_time(T0 + 20 * H)
    signouts.end(key("new"), T0 + 30 * H, T0 + 14 * H)  # a later time is kept
    assert rows(store)[key("new")] == format_time(T0 + 30 * H)


def test_a_database_from_before_the_sign_outs_migrates(blank_store_url: str) -> None:
    """A database at schema 9 (before the table of signed-out sessions) gets it by migration
    10, and the store then records and reads sign-outs."""
    store = open_store(blank_store_url, migrate=False, check=False)
    try:
        raw.migrate_to(store, 9)
        assert store.schema_version() == 9
        assert store.migrate() == [10, 11]
        store.check_schema()
        store.signouts.end(key("a"), T0 + 13 * H, T0)
        assert store.signouts.ended(key("a"))
    finally:
        store.close()
