"""The edges of leaner rows (``stopline.store.documents``): what is a reference and what is a
document, to the byte; the digest of a body that holds a lone surrogate; the bounded cache of
bodies; and a store that finds a document put back after it was missing."""

from __future__ import annotations

import hashlib
import json

from helpers import T0, discover
from integrity.attacker import Attacker
from stopline.core.frozen import storage_json, thaw
from stopline.store import open_store
from stopline.store.documents import (
    MIN_BYTES,
    DocumentCache,
    body_digest,
    is_reference,
    split_documents,
)

from .test_documents import BIG, fresh, observed, sound, stored_data


def test_only_an_object_of_one_text_digest_is_a_reference() -> None:
    assert is_reference({"$doc": "ab" * 32})
    assert not is_reference({"$doc": "ab" * 32, "note": 1})
    assert not is_reference({"$doc": 5})
    assert not is_reference({"$doc": None})
    lean, documents = split_documents({"v": {"$doc": 5, "note": 1}})
    assert lean == {"v": {"$doc": 5, "note": 1}} and documents == []


def test_a_document_starts_at_its_size_to_the_byte() -> None:
    """An object or an array whose stored JSON is ``MIN_BYTES`` long is a document; one byte
    less stays in the row."""
    wrapper = len(storage_json({"t": ""}))
    at_bound = {"t": "a" * (MIN_BYTES - wrapper)}
    assert len(storage_json(at_bound).encode()) == MIN_BYTES
    lean, documents = split_documents({"v": at_bound, "w": {"t": "a" * (MIN_BYTES - wrapper - 1)}})
    assert [d for d, _ in documents] == [
        hashlib.sha256(storage_json(at_bound).encode()).hexdigest()
    ]
    assert is_reference(lean["v"]) and not is_reference(lean["w"])


def test_a_large_array_is_a_document_too() -> None:
    log = [{"line": "x" * 20, "n": n} for n in range(20)]
    lean, documents = split_documents({"log": log, "small": [1]})
    assert is_reference(lean["log"]) and lean["small"] == [1]
    assert [json.loads(body) for _, body in documents] == [log]


def test_a_body_with_a_lone_surrogate_has_the_digest_it_was_stored_under() -> None:
    """Whatever a body holds, reading it checks it against the digest it was written under."""
    ((digest, body),) = split_documents({"v": {"t": "\ud800" + "x" * MIN_BYTES}})[1]
    assert body_digest(body) == digest


def test_the_cache_of_bodies_keeps_the_recently_used_within_its_bound() -> None:
    cache = DocumentCache(max_chars=10)
    cache.put("a", "aaaa")
    cache.put("big", "x" * 11)  # larger than the whole bound: never kept, and drops nothing
    assert "big" not in cache and "a" in cache
    cache.put("b", "bbbb")
    assert cache.get("a") == "aaaa"  # a is now the most recently used
    cache.put("c", "cccc")  # 12 characters: the least recently used goes
    assert "b" not in cache and "a" in cache and "c" in cache
    cache.put("d", "dddd")
    assert "a" not in cache and "c" in cache and "d" in cache


def test_a_store_keeps_the_bodies_it_wrote_and_those_it_read_and_checked(store_url: str) -> None:
    store = open_store(store_url)
    try:
        item = discover(store, "k1", data=BIG)
        digest = stored_data(store, item.id)["input"]["$doc"]
        assert digest in store.documents  # inserted and committed
        claimed = store.claim("w1", T0, 30)
        assert claimed is not None and store.apply(observed(claimed, {"report": BIG}))
        evidence = stored_data(store, item.id)["evidence"]["$doc"]
        assert evidence in store.documents  # written by a transition and committed
        reader = fresh(store_url)
        try:
            assert digest not in reader.documents
            assert reader.get(item.id) is not None
            assert digest in reader.documents  # read back and checked
        finally:
            reader.close()
    finally:
        store.close()


def test_a_document_put_back_is_found_by_a_store_that_saw_it_missing(store_url: str) -> None:
    """A document deleted by SQL and then restored (from a backup, say): a store that read the
    record while it was missing reads it whole again, without a restart."""
    store = open_store(store_url)
    try:
        item = discover(store, "k1", data=BIG)
        digest = stored_data(store, item.id)["input"]["$doc"]
        body = store.documents.get(digest)
        assert body is not None
    finally:
        store.close()
    attacker = Attacker(store_url)
    reader = fresh(store_url)
    try:
        assert attacker.sql("DELETE FROM documents WHERE digest = :d", {"d": digest})
        missing = reader.get(item.id)
        assert missing is not None and missing.data["input"] == {"$doc": digest}
        assert not sound(reader, missing)
        assert attacker.sql(
            "INSERT INTO documents (digest, body) VALUES (:d, :b)", {"d": digest, "b": body}
        )
        whole = reader.get(item.id)
        assert whole is not None and sound(reader, whole)
        assert thaw(whole.data["input"]) == thaw(item.data["input"])
    finally:
        reader.close()
        attacker.close()
