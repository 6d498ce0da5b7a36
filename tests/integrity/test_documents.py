"""Documents stored apart (``stopline.store.documents``) under an attacker with the database:
a document row deleted or altered by SQL is reported by ``verify`` with its reason, and the
item that references it is never acted on (real ``stopline`` processes, both stores)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from stopline.store import raw

from .attacker import Attacker
from .lab import Vault


def _reference(attacker: Attacker, item_id: str, key: str) -> str:
    """The digest the stored row names for ``data[key]`` (the row must hold a reference)."""
    (row,) = attacker.rows("SELECT data FROM items WHERE id = :id", {"id": item_id})
    data = json.loads(row["data"]) if isinstance(row["data"], str) else row["data"]
    assert set(data[key]) == {"$doc"}, data[key]
    return str(data[key]["$doc"])


def _findings(vault: Vault, ref: str) -> set[tuple[str, str, str]]:
    doc = vault.verify()
    assert doc["ok"] is False
    return {(f["kind"], f["field"], f["reason"]) for f in doc["findings"] if f["ref"] == ref}


def _executed(vault: Vault, key: str) -> list[dict[str, Any]]:
    return [e for e in vault.acting() if e["call"] == "execute" and e["key"] == key]


def _not_acted_on(vault: Vault, key: str) -> None:
    vault.run_once()
    assert _executed(vault, key) == []
    assert vault.states()[key] == "exception"
    (row,) = vault.query(
        "SELECT command, reasons FROM events WHERE item_id = ? ORDER BY seq DESC LIMIT 1",
        (vault.item(key).id,),
    )
    reasons = json.loads(row["reasons"]) if isinstance(row["reasons"], str) else row["reasons"]
    assert row["command"] == "integrity_failed" and "integrity_failed" in reasons


def test_a_deleted_proposal_document_stops_the_item(vault_copy: Callable[[str], Vault]) -> None:
    """The approved proposal's document deleted by SQL: verify says ``document_missing`` on
    ``data.proposal``, and the worker stops the item ``integrity_failed`` without executing."""
    vault = vault_copy("doc-deleted")
    item_id = vault.item("pay-approved").id
    attacker = Attacker(vault.url)
    try:
        digest = _reference(attacker, item_id, "proposal")
        assert attacker.sql("DELETE FROM documents WHERE digest = :d", {"d": digest}) == 1
    finally:
        attacker.close()
    found = _findings(vault, item_id)
    assert ("item", "data.proposal", "document_missing") in found
    assert ("item", "record", "seal_mismatch") in found
    _not_acted_on(vault, "pay-approved")


def test_an_altered_proposal_document_stops_the_item(vault_copy: Callable[[str], Vault]) -> None:
    """The approved proposal's document body rewritten under its digest (a larger amount):
    verify says ``document_altered``, the body is never used, and nothing is executed."""
    vault = vault_copy("doc-altered")
    item_id = vault.item("pay-approved").id
    attacker = Attacker(vault.url)
    try:
        digest = _reference(attacker, item_id, "proposal")
        (row,) = attacker.rows("SELECT body FROM documents WHERE digest = :d", {"d": digest})
        body = json.loads(row["body"])
        body["params"]["amount"] = 999999
        edited = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
        changed = attacker.sql(
            "UPDATE documents SET body = :b WHERE digest = :d", {"b": edited, "d": digest}
        )
        assert changed == 1
    finally:
        attacker.close()
    found = _findings(vault, item_id)
    assert ("item", "data.proposal", "document_altered") in found
    assert ("item", "record", "seal_mismatch") in found
    shown = vault.item("pay-approved")
    assert set(shown.data["proposal"]) == {"$doc"}  # never read from the altered body
    _not_acted_on(vault, "pay-approved")


def test_the_append_only_guard_holds_documents(vault_copy: Callable[[str], Vault]) -> None:
    """Without switching the trigger off, a document cannot be changed or removed."""
    vault = vault_copy("doc-guard")
    item_id = vault.item("pay-approved").id
    attacker = Attacker(vault.url)
    try:
        digest = _reference(attacker, item_id, "proposal")
        refused = 0
        for statement in (
            "DELETE FROM documents WHERE digest = :d",
            "UPDATE documents SET body = '{}' WHERE digest = :d",
        ):
            try:
                with raw.writing(attacker.store) as cur:
                    if attacker.dialect == "postgres":
                        statement = statement.replace(":d", "%(d)s")
                    cur.execute(statement, {"d": digest})
            except Exception as exc:  # the driver's error for the trigger
                assert "append-only" in str(exc)
                refused += 1
        assert refused == 2
    finally:
        attacker.close()
    assert vault.verify()["ok"] is True
