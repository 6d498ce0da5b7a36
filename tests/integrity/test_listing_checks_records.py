"""A listing (``stopline items``, ``GET /api/items``) checks each row against its last event,
as ``stopline show`` checks one (``listing.py``): a record edited in the database is listed
with what it fails and ``close`` alone as its next command, never ``approve``, which would be
refused ``integrity_failed``. Before, the listing read its hints off the row as it stood."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from helpers import T0, discover
from stopline.store import Store

from .attacker import Attacker
from .lab import Base, Vault


def edited(vault: Vault) -> None:
    """The waiting payment's proposal edited by SQL: it no longer needs an approval."""
    attacker = Attacker(vault.url)
    try:
        data = attacker.data("vault/pay-waiting")
        data["proposal"].update(required_approvals=0)
        attacker.put_data("vault/pay-waiting", data)
    finally:
        attacker.close()


def test_items_lists_an_edited_record_with_close_alone(
    vault_copy: Callable[[str], Vault],
) -> None:
    vault = vault_copy("listed")
    before = {r["key"]: r for r in vault.cli_json("items")["items"]}
    assert before["pay-waiting"]["next"][0].startswith("stopline approve ")
    assert all(r["integrity"] == {"ok": True, "findings": []} for r in before.values())
    edited(vault)
    after = {r["key"]: r for r in vault.cli_json("items")["items"]}
    row = after["pay-waiting"]
    assert [line.split()[1] for line in row["next"]] == ["close"], row
    assert row["integrity"]["ok"] is False and row["integrity"]["findings"], row
    first = row["integrity"]["findings"][0]
    assert row["why"].startswith(f"integrity_failed: {first['reason']} ({first['field']})"), row
    others = [r for key, r in after.items() if key != "pay-waiting"]
    assert others and all(r["integrity"]["ok"] for r in others)
    assert [r["next"] for r in others] == [before[r["key"]]["next"] for r in others]
    table = vault.cli("items", env={"COLUMNS": "400"}, ok=(0,)).stdout
    line = next(x for x in table.splitlines() if "vault/pay-waiting" in x)
    assert row["why"] in line, line


def test_the_api_lists_an_edited_record_with_close_alone(
    vault_copy: Callable[[str], Vault], vault_base: Base
) -> None:
    vault = vault_copy("api-listed")
    edited(vault)
    headers = {"Authorization": f"Bearer {vault_base.tokens['alice']}"}
    with vault.server() as url:
        listed = httpx.get(f"{url}/api/items", headers=headers, timeout=30)
    assert listed.status_code == 200, listed.text
    row = next(r for r in listed.json()["items"] if r["key"] == "pay-waiting")
    assert [line.split()[1] for line in row["next"]] == ["close"], row
    assert row["integrity"]["ok"] is False, row


def test_current_many_reads_each_stored_item_with_its_head(store: Store) -> None:
    a = discover(store, "a", at=T0)
    b = discover(store, "b", at=T0)
    found = {
        item.id: (item, head, legacy)
        for item, head, legacy in store.current_many([a.id, "nothing", b.id])
    }
    assert sorted(found) == sorted([a.id, b.id])
    for item_id, (item, head, legacy) in found.items():
        assert item == store.get(item_id)
        assert (head, legacy) == store.head(item_id)
    assert store.current_many([]) == []
