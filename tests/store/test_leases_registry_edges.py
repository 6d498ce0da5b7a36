"""Edges of the claims and of the registry's writes and reads, on SQLite and PostgreSQL: a
batch claim hands over the most overdue first; the seal an upgrade recorded comes with every
read of a row and its head; a revocation records exactly the tokens it revokes, and nothing
when there are none; a signed token issue keeps its signed record in the chain; a registry
handed to a caller is the caller's own. On PostgreSQL: every registry change waits for the
registry's lock (the chain never forks), and a registry stamp trusted past its time is not
trusted by the check before acting either."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from helpers import T0, discover, dump, waiting_for_advisory_lock
from integrity.attacker import Attacker
from proc import wait_for
from stopline.core.policy import Policy
from stopline.core.records import Actor
from stopline.core.registry import CERTIFY, TOKEN_ISSUE, TOKEN_REVOKE, Registry
from stopline.store import Store, open_store
from stopline.store import actors as actors_module

S = timedelta(seconds=1)


def test_a_batch_claim_hands_over_the_most_overdue_first(store: Store) -> None:
    """``claim_checked`` and ``claim_batch`` give their items by due time, not by id."""
    for automation in ("one", "two"):
        for key, at in (("b", T0), ("c", T0 + 2 * S), ("a", T0 + S)):
            discover(store, key, at=at, automation=automation)
    found = store.claim_checked("w1", T0 + 5 * S, 30, ["one"], limit=5)
    assert [i.id for i, _ in found] == ["one-b", "one-a", "one-c"]
    items = store.claim_batch("w1", T0 + 5 * S, 30, ["two"], limit=5)
    assert [i.id for i in items] == ["two-b", "two-a", "two-c"]


def test_the_seal_an_upgrade_recorded_is_read_with_the_row(store: Store, store_url: str) -> None:
    """An item's last event from before seals has the seal the upgrade recorded for it: every
    read of the row with its head hands that seal over beside them (else the check before
    acting finds no seal for a sound item)."""
    item = discover(store, "k1")
    attacker = Attacker(store_url)
    try:
        seal = "INSERT INTO legacy_seals (item_id, head, seal, at) VALUES (:id, :head, 'old', :at)"
        params = {"id": item.id, "head": item.head, "at": "2026-03-01T12:00:00.000000Z"}
        assert attacker.sql(seal, params) == 1
    finally:
        attacker.close()
    head, legacy = store.head(item.id)
    assert head is not None and legacy == "old"
    assert store.current(item.id)[1:] == (head, "old")
    for history, registry in ((False, False), (True, False), (True, True)):
        reads = store.guard_reads(item.id, history=history, registry=registry)
        assert (reads.head, reads.legacy_seal) == (head, "old")
    [(claimed, reads)] = store.claim_checked("w1", T0, 30, limit=2)
    assert claimed.id == item.id and (reads.head, reads.legacy_seal) == (head, "old")


def _tokens(store: Store) -> None:
    store.set_actor(Actor("ann", frozenset({"operator"})), "add", {}, T0)
    store.add_token("ann", "hash-1", T0)
    store.add_token("ann", "hash-2", T0 + S)


def test_a_revocation_records_every_token_it_revokes(store: Store) -> None:
    _tokens(store)
    store.revoke_tokens("ann", T0 + 2 * S)
    last = store.actor_events()[-1]
    assert (last["change"], last["detail"]) == (TOKEN_REVOKE, {"tokens": ["hash-1", "hash-2"]})
    registry = store.registry()
    assert registry.findings == []
    assert {h: t.revoked for h, t in registry.tokens.items()} == {"hash-1": True, "hash-2": True}


def test_a_revocation_with_no_live_token_writes_nothing(store: Store) -> None:
    """Nothing to revoke (no token, or every one revoked already): no registry event."""
    _tokens(store)
    store.set_actor(Actor("bob", frozenset({"operator"})), "add", {}, T0)
    store.revoke_tokens("ann", T0 + 2 * S)
    before = dump(store)
    store.revoke_tokens("ann", T0 + 3 * S)
    store.revoke_tokens("bob", T0 + 3 * S)
    assert dump(store) == before
    assert store.registry().findings == []


def test_a_signed_token_issue_keeps_its_signed_record_in_the_chain(store: Store) -> None:
    """Signed mode reads an actor's signed record of each token from the chain alone."""
    store.set_actor(Actor("ann", frozenset({"operator"})), "add", {}, T0)
    signed = {"certificate": "c1", "signature": "s1"}
    store.add_token("ann", "hash-1", T0, signed=signed)
    detail = {"token": "hash-1", "signed": signed}
    last = store.actor_events()[-1]
    assert (last["change"], last["detail"]) == (TOKEN_ISSUE, detail)
    assert store.registry().signed[-1] == (TOKEN_ISSUE, detail)


def test_a_registry_handed_out_is_the_callers_own(store: Store) -> None:
    """What one caller does with the registry it was given reaches no later read."""
    _tokens(store)
    store.append_registry("ann", CERTIFY, {"certificate": "c1"}, T0 + 2 * S)
    first = store.registry()
    expected = _contents(first)
    assert expected[0] and expected[1] and expected[2]
    first.actors.clear()
    first.tokens.clear()
    first.signed.clear()
    again = store.registry()  # the rows unchanged: the fold kept
    assert _contents(again) == expected
    again.actors.clear()
    assert _contents(store.registry()) == expected


def _contents(registry: Registry) -> tuple[Any, ...]:
    return dict(registry.actors), dict(registry.tokens), list(registry.signed), registry.ok


# --- PostgreSQL: the registry's lock, the stamp on the check before acting --------------


def _changes() -> dict[str, Callable[[Store], None]]:
    return {
        "set_actor": lambda s: s.set_actor(Actor("cat", frozenset({"operator"})), "add", {}, T0),
        "add_token": lambda s: s.add_token("ann", "hash-3", T0 + 2 * S),
        "revoke_tokens": lambda s: s.revoke_tokens("ann", T0 + 2 * S),
        "register_automation": lambda s: s.register_automation("other", Policy(), T0),
        "append_registry": lambda s: s.append_registry("ann", CERTIFY, {"c": 1}, T0),
    }


@pytest.mark.parametrize("change", sorted(_changes()))
def test_every_registry_change_waits_for_the_registrys_lock(
    postgres_url: str, postgres_server: Any, change: str
) -> None:
    """While another session holds the registry's lock, each kind of registry change waits
    for it (two changes never read the same last event, so the chain never forks), and
    writes once the lock is let go."""
    store = open_store(postgres_url)
    holder = psycopg.connect(postgres_url)  # a transaction open until rollback
    try:
        _tokens(store)
        holder.execute(store.q["lock_registry"])  # type: ignore[attr-defined]
        done = threading.Event()

        def write() -> None:
            _changes()[change](store)
            done.set()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()

        def waiting() -> bool:
            return waiting_for_advisory_lock(postgres_server.admin, postgres_url)

        wait_for(lambda: waiting() or done.is_set(), 120, f"{change} to wait for the lock")
        assert not done.is_set(), f"{change} wrote without the registry's lock"
        holder.rollback()
        writer.join(60)
        assert done.is_set()
        assert store.registry().findings == []
    finally:
        holder.close()
        store.close()


def test_a_stamp_past_its_trust_is_not_trusted_by_the_check_before_acting(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the registry's stamp blind to an edit (here it is made to be: a constant, in the
    one statement the check before acting reads too), the edit is read by that check once
    the fold has been trusted on its stamp for ``STAMP_TRUST`` seconds."""
    store = open_store(postgres_url)
    attacker = Attacker(postgres_url)
    try:
        _tokens(store)
        item = discover(store, "k1")
        q: dict[str, str] = store.q  # type: ignore[attr-defined]
        blind = "SELECT 'blind' AS registry_stamp"
        assert q["registry_stamp"] in q["guard_snapshot"]
        monkeypatch.setitem(
            q, "guard_snapshot", q["guard_snapshot"].replace(q["registry_stamp"], blind)
        )
        monkeypatch.setitem(q, "registry_stamp", blind)
        monkeypatch.setattr(actors_module, "STAMP_TRUST", 1e9)
        assert store.registry().findings == []  # folded, its stamp 'blind'
        assert attacker.sql("UPDATE tokens SET revoked_at = created_at", {}) == 2
        reads = store.guard_reads(item.id, history=True, registry=True)
        assert reads.registry is not None and reads.registry.findings == [], "no test: seen"
        monkeypatch.setattr(actors_module, "STAMP_TRUST", -1.0)
        reads = store.guard_reads(item.id, history=True, registry=True)
        assert reads.registry is not None and reads.registry.findings, "the edit was not read"
    finally:
        attacker.close()
        store.close()
