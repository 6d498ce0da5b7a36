"""Leaner rows (``stopline.store.documents``), on SQLite and PostgreSQL: the large documents of
an item's data are written once, by digest, and read back into exactly the record the core
wrote; rows from before migration 7 read as before; a missing or altered document is found
and leaves the record unreadable (its seal fails), never a record put together from it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from helpers import T0, count, decide_at, discover, insert_old
from integrity.attacker import Attacker
from stopline.core.commands import Discover, Observe
from stopline.core.decision import Decision
from stopline.core.frozen import freeze, thaw
from stopline.core.integrity import head_findings
from stopline.core.records import Item
from stopline.store import Store, open_store, raw
from stopline.store.documents import MIN_BYTES, split_documents

BIG = {
    "text": "Grüße ✓ " * 40,
    "numbers": [1, 1.5, None, {"deep": [True, False]}],
    "nested": {"a": {"b": ["c", "d"]}, "e": 10**15},
}


def stored_data(store: Store, item_id: str) -> dict[str, Any]:
    """The item row's ``data`` column as stored (references and all)."""
    with raw.reading(store) as cur:
        cur.execute(store.q["get_item"], {"id": item_id})  # type: ignore[attr-defined]
        value = cur.fetchone()["data"]
    return json.loads(value) if isinstance(value, str) else dict(value)


def documents(store: Store) -> dict[str, str]:
    with raw.reading(store) as cur:
        cur.execute("SELECT digest, body FROM documents")
        return {r["digest"]: r["body"] for r in cur.fetchall()}


def insert_inline(store: Store, decision: Decision) -> None:
    """Write a discovery as a store before migration 7 did: the documents inline."""
    insert_old(store, decision)


def fresh(url: str) -> Store:
    """Another store on the same database (another process): nothing cached."""
    return open_store(url, migrate=False)


def sound(store: Store, item: Item) -> bool:
    head, legacy = store.head(item.id)
    return head_findings(item, head, legacy) == []


def observed(item: Item, data: dict[str, Any]) -> Decision:
    assert item.lease_owner is not None
    return decide_at(item, Observe(item.lease_owner, item.lease_token, data, T0), T0)


def test_a_large_document_is_stored_once_and_read_back_whole(store_url: str) -> None:
    """The input goes to ``documents`` under the SHA-256 of its JSON, the row holds a
    reference, and every store reads back exactly the record an inline row gives."""
    store = open_store(store_url)
    try:
        decision = decide_at(None, Discover("big", "auto", "k1", BIG), T0)
        assert decision.after is not None and store.insert(decision)
        row = stored_data(store, "big")
        digest = row["input"]["$doc"]
        assert row["input"] == {"$doc": digest}
        bodies = documents(store)
        assert list(bodies) == [digest]
        assert hashlib.sha256(bodies[digest].encode()).hexdigest() == digest
        assert len(bodies[digest].encode()) >= MIN_BYTES
        insert_inline(store, decide_at(None, Discover("inline", "auto", "k2", BIG), T0))
        assert "$doc" not in json.dumps(stored_data(store, "inline"))
        for reader in (store, fresh(store_url)):
            lean, inline = reader.get("big"), reader.get("inline")
            assert lean is not None and inline is not None
            assert repr(lean.data) == repr(inline.data)  # the same values, types and order
            assert thaw(lean.data["input"]) == thaw(decision.after.data["input"])
            assert sound(reader, lean) and sound(reader, inline)
            assert reader.document_findings() == []
            if reader is not store:
                reader.close()
    finally:
        store.close()


def test_small_values_stay_inline(store: Store) -> None:
    item = discover(store, "k1", data={"small": [1, 2, 3]})
    assert stored_data(store, item.id)["input"] == {"small": [1, 2, 3]}
    assert count(store, "documents") == 0


def test_an_unchanged_document_is_not_written_again(store_url: str) -> None:
    """A transition that leaves the input as it is writes none of it again, whether the store
    remembers writing it or not; a new large document is written once, in the same commit."""
    store = open_store(store_url)
    other = fresh(store_url)
    try:
        first = discover(store, "k1", data=BIG)
        assert count(store, "documents") == 1
        item = other.claim("w1", T0, 30)  # another process: it reads the document back
        assert item is not None and thaw(item.data["input"]) == thaw(first.data["input"])
        other.documents.clear()  # not even remembered: the insert finds it and writes nothing
        assert other.apply(observed(item, {"seen": 1}))
        assert count(store, "documents") == 1
        row = stored_data(store, item.id)
        assert set(row["input"]) == {"$doc"} and "$doc" not in json.dumps(row["evidence"])
        discover(store, "k2", automation="other")
        second = store.claim("w1", T0, 30, ["other"])
        assert second is not None and second.key == "k2"
        large = observed(second, {"report": BIG})
        assert store.apply(large) and large.after is not None
        assert count(store, "documents") == 2  # the evidence, once
        got = fresh(store_url)
        try:
            for written in (item, large.after):
                read = got.get(written.id)
                assert read is not None and sound(got, read)
            read = got.get(second.id)
            assert read is not None
            assert thaw(read.data["evidence"]) == thaw(large.after.data["evidence"])
        finally:
            got.close()
    finally:
        other.close()
        store.close()


def test_a_group_commit_writes_each_document_once(store_url: str) -> None:
    """``apply_many``: the documents of each decision written commit with it; the one that
    lost its compare-and-set writes none of its own."""
    store = open_store(store_url)
    try:
        for k in range(3):
            store.insert(decide_at(None, Discover(f"i{k}", "auto", f"k{k}", {}), T0))
        a, b, c = store.claim_batch("w1", T0, 30, limit=3)
        assert store.apply(observed(b, {"n": 0}))  # another write to b comes first
        group = [observed(x, {"who": x.id, **BIG}) for x in (a, b, c)]
        assert store.apply_many(group) == [True, False, True]
        bodies = documents(store)
        assert len(bodies) == 2
        other = fresh(store_url)
        try:
            for decision in (group[0], group[2]):
                assert decision.after is not None
                read = other.get(decision.after.id)
                assert read is not None and sound(other, read)
                digest = stored_data(store, read.id)["evidence"]["$doc"]
                assert digest in bodies
                assert thaw(read.data["evidence"]) == thaw(decision.after.data["evidence"])
            lost = other.get(b.id)
            assert lost is not None and sound(other, lost)
            assert "$doc" not in json.dumps(stored_data(store, b.id)["evidence"])
        finally:
            other.close()
    finally:
        store.close()


def test_values_that_look_like_references_read_as_themselves(blank_store_url: str) -> None:
    """An input that reads as a reference, written before migration 7, is stored as a
    document by the migration; one written after is always stored as one."""
    store = open_store(blank_store_url, migrate=False, check=False)
    try:
        raw.migrate_to(store, 6)
        lookalike = {"$doc": "0" * 64}
        old = decide_at(None, Discover("old", "auto", "k1", lookalike), T0)
        insert_inline(store, old)
        assert store.migrate() == [7, 8, 9, 10, 11]
        assert stored_data(store, "old")["input"] != lookalike  # now a reference to it
        new = decide_at(None, Discover("new", "auto", "k2", lookalike), T0)
        assert store.insert(new)
        assert count(store, "documents") == 1  # the same document, once
        for reader in (store, fresh(blank_store_url)):
            for item_id in ("old", "new"):
                item = reader.get(item_id)
                assert item is not None and thaw(item.data["input"]) == lookalike
                assert sound(reader, item)
            assert reader.document_findings() == []
            if reader is not store:
                reader.close()
    finally:
        store.close()


def test_a_missing_or_altered_document_leaves_the_record_unreadable(store_url: str) -> None:
    """A document deleted, or its body rewritten, by SQL: a store that reads it from the
    database leaves the reference in place, so the record fails its seal, and
    ``document_findings`` names the item and the reason. An altered body nothing references
    is reported too."""
    store = open_store(store_url)
    try:
        gone = discover(store, "gone", data={"which": "gone", **BIG})
        altered = discover(store, "altered", data={"which": "altered", **BIG})
        gone_digest = stored_data(store, gone.id)["input"]["$doc"]
        altered_digest = stored_data(store, altered.id)["input"]["$doc"]
        spare_digest = "f" * 64
        forged = json.dumps({"which": "forged", **BIG}, separators=(",", ":"))
        attacker = Attacker(store_url)
        try:
            assert attacker.sql("DELETE FROM documents WHERE digest = :d", {"d": gone_digest})
            assert attacker.sql(
                "UPDATE documents SET body = :b WHERE digest = :d",
                {"b": forged, "d": altered_digest},
            )
            assert attacker.sql(
                "INSERT INTO documents (digest, body) VALUES (:d, :b)",
                {"b": forged, "d": spare_digest},
            )
        finally:
            attacker.close()
        other = fresh(store_url)
        try:
            for item, digest in ((gone, gone_digest), (altered, altered_digest)):
                read = other.get(item.id)
                assert read is not None and read.data["input"] == {"$doc": digest}
                assert not sound(other, read)
            found = {(f.kind, f.ref, f.field, f.reason) for f in other.document_findings()}
            assert found == {
                ("item", gone.id, "data.input", "document_missing"),
                ("item", altered.id, "data.input", "document_altered"),
                ("document", spare_digest, "body", "document_altered"),
            }
            claimed = {i.id: i for i in other.claim_batch("w1", T0, 30, limit=5)}
            assert not sound(other, claimed[gone.id]) and not sound(other, claimed[altered.id])
        finally:
            other.close()
        # The store that wrote them holds the bodies it committed (content-addressed: what the
        # digest names), so it still reads the record whole; verify reads the database.
        kept = store.get(gone.id)
        assert kept is not None and kept.data["input"]["which"] == "gone"
        assert len(store.document_findings()) == 3
    finally:
        store.close()


def test_a_document_is_kept_for_a_frozen_value_and_worked_out_again_for_a_mutable_one() -> None:
    """The split keeps what it found for a value frozen to the bottom (the same object from
    step to step); a mutable value is split afresh each time, so a change to it is written."""
    frozen = freeze(BIG)
    first = split_documents({"evidence": frozen})
    assert split_documents({"evidence": frozen}) == first
    assert first[1][0][0] == hashlib.sha256(first[1][0][1].encode()).hexdigest()
    mutable = thaw(frozen)
    digest = split_documents({"evidence": mutable})[1][0][0]
    assert digest == first[1][0][0]
    mutable["text"] = "changed " * 40
    changed = split_documents({"evidence": mutable})[1][0]
    assert changed[0] != digest and "changed" in changed[1]
    small: dict[str, Any] = {"a": 1}
    assert split_documents({"small": small}) == ({"small": {"a": 1}}, [])
    small["a"] = "x" * MIN_BYTES
    assert split_documents({"small": small})[1]  # now large enough to be a document
