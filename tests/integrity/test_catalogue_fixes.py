"""Gaps the tamper catalogue found and that are closed, each pinned on its own (fast) here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from stopline.core.frozen import freeze, thaw
from stopline.runtime.loader import load_app
from stopline.runtime.scheduler import Scheduler
from stopline.store import open_store

from .attacker import Attacker, forge_roles
from .lab import VAULT_APP, Vault


def test_a_deleted_row_does_not_bring_a_revoked_actor_back(
    vault_copy: Callable[[str], Vault],
) -> None:
    """The app declares rita, who was revoked; her table row deleted by SQL, registering the
    app again (as every ``stopline run`` does) does not seed her anew: the registry chain
    still records her revoked, and verify still reports the deleted row."""
    vault = vault_copy("reseed")
    attacker = Attacker(vault.url)
    try:
        attacker.sql("DELETE FROM tokens WHERE actor = 'rita'")
        attacker.sql("DELETE FROM actors WHERE name = 'rita'")
    finally:
        attacker.close()
    store = open_store(vault.url, migrate=False)
    try:
        events = len(store.actor_events())
        Scheduler(store, load_app(VAULT_APP)).register()
        assert len(store.actor_events()) == events, "a registry event was written"
        assert "rita" not in store.actors()
        assert store.registry().actors["rita"].active is False
    finally:
        store.close()
    findings = {(f["kind"], f["ref"], f["reason"]) for f in vault.verify()["findings"]}
    assert ("actor", "rita", "registry_mismatch") in findings


def test_a_hand_edited_state_class_is_never_due(vault_copy: Callable[[str], Vault]) -> None:
    """A stop item whose state class column says ``work`` is neither claimed nor due: the
    next due time stays empty and ``run --once`` ends (it used to wait for it forever)."""
    vault = vault_copy("state-class")
    vault.run_once()  # the approved payment runs; everything else is stopped or done
    store = open_store(vault.url, migrate=False)
    try:
        assert store.next_due(["vault"]) is None
        attacker = Attacker(vault.url)
        try:
            item = attacker.item("vault/pay-waiting")
            attacker.sql("UPDATE items SET state_class = 'work' WHERE id = :id", {"id": item.id})
        finally:
            attacker.close()
        assert store.next_due(["vault"]) is None
    finally:
        store.close()
    done = vault.cli_json("run", VAULT_APP, "--once", "--linger", "0.5", timeout=60)
    assert done["steps"] == 0
    assert vault.states()["pay-waiting"] == "awaiting_approval"


def test_a_legitimate_registry_change_does_not_carry_a_forged_role(
    vault_copy: Callable[[str], Vault],
) -> None:
    """A viewer given the approver role by SQL, then an operator adds her an unrelated role:
    the registry records the roles its chain held plus the new one, never the forged role,
    so she still may not approve (and the table agrees with the chain again)."""
    vault = vault_copy("launder")
    forge_roles(vault.url, "dana", ["approver", "viewer"])
    added = vault.cli_json("actors", "add", "dana", "--role", "reviewer")
    assert added["roles"] == ["reviewer", "viewer"]
    assert vault.verify()["ok"]
    digest = vault.digest("pay-waiting")
    answer = vault.cli_json(
        "approve", "vault/pay-waiting", "--actor", "dana", "--proposal", digest, ok=(3,)
    )
    assert "actor_not_authorized" in answer["reasons"]


def test_finalize_of_a_record_forged_complete_is_refused(
    vault_copy: Callable[[str], Vault],
) -> None:
    """``finalize`` names no actor, yet the record it answers about is checked like every
    other: an item set to ``completed`` by SQL is refused ``integrity_failed``, never answered
    ``already_completed`` (a caller polling for completion would take the forgery as done)."""
    vault = vault_copy("forged-complete")
    done = vault.cli_json("finalize", "vault/pay-done")
    assert (done["decision"], done["reasons"]) == ("zero_write", ["already_completed"])
    attacker = Attacker(vault.url)
    try:
        item = attacker.item("vault/pay-waiting")
        attacker.sql(
            "UPDATE items SET state = 'completed', state_class = 'terminal' WHERE id = :id",
            {"id": item.id},
        )
    finally:
        attacker.close()
    forged = vault.cli_json("finalize", "vault/pay-waiting", ok=(3,))
    assert (forged["decision"], forged["reasons"]) == ("refused", ["integrity_failed"])


@pytest.mark.parametrize("edit", ["event-edited", "chain-rewritten"])
def test_an_approval_on_an_item_whose_earlier_history_was_edited_is_refused(
    vault_copy: Callable[[str], Vault], edit: str
) -> None:
    """The first event of a waiting item is edited by SQL, its head event and seal left as they
    were: alone (the chain breaks there) or with every later hash and the seal made right
    again (only the ledger still holds the old hashes). A person's command reads the whole
    history and the item's ledger entries, not only the head: the approval is refused."""
    vault = vault_copy(edit)
    attacker = Attacker(vault.url)
    try:
        item = attacker.item("vault/pay-waiting")
        events = attacker.history(item.id)
        first = events[0]
        edited = replace(first, detail=freeze({**thaw(first.detail), "key": "pay-other"}))
        if edit == "event-edited":
            attacker.put_event(edited)
        else:
            rebuilt, chain = attacker.rehash_chain(item, [edited, *events[1:]], 1)
            for event in chain:
                attacker.put_event(event)
            attacker.put_item(rebuilt)
    finally:
        attacker.close()
    answer = vault.cli_json(
        "approve",
        "vault/pay-waiting",
        "--actor",
        "bob",
        "--proposal",
        vault.digest("pay-waiting"),
        ok=(3,),
    )
    assert (answer["decision"], answer["reasons"]) == ("refused", ["integrity_failed"])
    assert vault.states()["pay-waiting"] == "awaiting_approval"


def test_a_close_on_findings_needs_a_registry_that_holds(
    vault_copy: Callable[[str], Vault],
) -> None:
    """Closing is the way out of a record that fails its checks, but who may close comes from
    the registry: with a registry row forged as well, the close is refused."""
    vault = vault_copy("close-forged-registry")
    attacker = Attacker(vault.url)
    try:
        data = attacker.data("vault/pay-waiting")
        attacker.put_data("vault/pay-waiting", {**data, "input": {"amount": 10**6}})
    finally:
        attacker.close()
    forge_roles(vault.url, "bob", ["approver", "operator"])
    close = ("close", "vault/pay-waiting", "--actor", "alice", "--reason", "cannot trust it")
    answer = vault.cli_json(*close, ok=(3,))
    assert (answer["decision"], answer["reasons"]) == ("refused", ["integrity_failed"])
    assert vault.states()["pay-waiting"] == "awaiting_approval"


def test_a_command_on_an_item_whose_automation_row_was_deleted_is_refused(
    vault_copy: Callable[[str], Vault],
) -> None:
    """The policy a command is decided under comes from the automation's registered row; with
    that row deleted by SQL there is no policy to decide under, and the approval is refused
    ``unknown_automation`` (never decided under some default), writing nothing but its refusal."""
    vault = vault_copy("automation-deleted")
    digest = vault.digest("pay-waiting")
    attacker = Attacker(vault.url)
    try:
        attacker.sql("DELETE FROM automations WHERE name = 'vault'")
    finally:
        attacker.close()
    answer = vault.cli_json(
        "approve", "vault/pay-waiting", "--actor", "bob", "--proposal", digest, ok=(3,)
    )
    assert (answer["decision"], answer["reasons"]) == ("refused", ["unknown_automation"])
    assert vault.states()["pay-waiting"] == "awaiting_approval"
