"""Leaner rows: the large documents of an item's data, stored once by digest.

On every write of an item row (insert, and each compare-and-set update, alone or in a group
commit), each top-level value of the item's ``data`` that is an object or an array whose stored
JSON is :data:`MIN_BYTES` or more (the proposal, the evidence, a review packet) goes to the table
``documents`` under the SHA-256 of that JSON (``INSERT .. ON CONFLICT DO NOTHING``, in the same
transaction), and the row holds ``{"$doc": "<sha256 hex>"}`` in its place. A document this
store already holds is not written again, so a transition writes only what it changed.

On read, the store puts every document back before it builds the core's :class:`Item`: the
core, the seals and ``verify`` see exactly the record they saw when documents were inline.
Bodies come from a bounded per-store cache (content-addressed, so never stale) or from one
query for all the references of the rows being read, and a body read from the database is
used only when its SHA-256 is its digest. A reference whose body is missing or altered is left
as it is: the record then fails its seal (``integrity_failed``, nothing acts on it), and
:meth:`SQLDocuments.document_findings` tells ``verify`` why (``document_missing``,
``document_altered``). Rows written before migration 7 keep their documents inline and read as
before (a value there that merely looks like a reference is stored as a document by the
migration, so it reads back as itself).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..core.decision import Decision
from ..core.frozen import FrozenDict, KeptByValue, deeply_frozen, load_frozen_deep, storage_json
from ..core.integrity import DOCUMENT_ALTERED, DOCUMENT_MISSING, Finding
from ..core.records import Item
from .rows import Row, SQLRows

DOC = "$doc"
MIN_BYTES = 256  # a top-level object or array of data this large (stored JSON) is a document
CACHE_BYTES = 16 * 2**20  # the bodies a store keeps in memory (characters, about bytes)

Documents = list[tuple[str, str]]  # (digest, body) to write


def is_reference(value: Any) -> bool:
    """``{"$doc": "<digest>"}``: the place of a document in a stored row."""
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get(DOC), str)


def body_digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def split_documents(data: Mapping[str, Any]) -> tuple[dict[str, Any], Documents]:
    """The row's lean ``data`` and the documents it references. A value that looks like a
    reference is always stored as a document, so that every reference in a row is one."""
    lean: dict[str, Any] = {}
    documents: Documents = []
    for key, value in data.items():
        if isinstance(value, Mapping | list | tuple):
            document = _document(value)
            if document is not None:
                lean[key] = {DOC: document[0]}
                documents.append(document)
                continue
        lean[key] = value
    return lean, documents


def _document(value: Any) -> tuple[str, str] | None:
    """``(digest, body)`` when ``value`` is stored as a document. Kept for a value frozen to
    the bottom (the evidence or proposal a record carries from step to step, the very object
    each time): it cannot change, so neither can its body. The memo holds the value itself, so
    its ``id`` is never another value's while the entry lives."""
    kept, known = _SPLIT.get(value)
    if kept:
        return known  # type: ignore[no-any-return]
    body = storage_json(value)
    encoded = body.encode("utf-8", "surrogatepass")
    found: tuple[str, str] | None = None
    if len(encoded) >= MIN_BYTES or is_reference(value):
        found = (hashlib.sha256(encoded).hexdigest(), body)
    if deeply_frozen(value):
        _SPLIT.keep(value, found, len(body) if found else 0)
    return found


# values whose document (or none) is kept, with the characters of the bodies kept
_SPLIT = KeptByValue(1024, 8 * 2**20)


def documents_of(params: Mapping[str, Any]) -> Documents:
    """The documents an applied decision's parameters write."""
    return list(params["documents"])


class DocumentCache:
    """Bodies by digest, least recently used first out, at most ``max_chars`` in all. Every
    body here is known to be stored (read back and checked, or written and committed)."""

    def __init__(self, max_chars: int = CACHE_BYTES) -> None:
        self.max_chars = max_chars
        self._bodies: OrderedDict[str, str] = OrderedDict()
        self._chars = 0
        self._guard = threading.Lock()

    def __contains__(self, digest: object) -> bool:
        return digest in self._bodies

    def get(self, digest: str) -> str | None:
        with self._guard:
            body = self._bodies.get(digest)
            if body is not None:
                self._bodies.move_to_end(digest)
            return body

    def put(self, digest: str, body: str) -> None:
        if len(body) > self.max_chars:
            return
        with self._guard:
            if digest in self._bodies:
                self._bodies.move_to_end(digest)
                return
            self._bodies[digest] = body
            self._chars += len(body)
            while self._chars > self.max_chars:
                _, dropped = self._bodies.popitem(last=False)
                self._chars -= len(dropped)

    def clear(self) -> None:
        with self._guard:
            self._bodies.clear()
            self._chars = 0


def has_reference(data: Any) -> bool:
    """Whether a top-level value of ``data`` is still a reference to a document."""
    return isinstance(data, Mapping) and any(is_reference(v) for v in data.values())


class SQLDocuments(SQLRows):
    """Writing an item row with its documents apart, and reading it back whole."""

    documents: DocumentCache

    def _document_value(self, body: str) -> Any:
        """A body as the ``data`` column would have read it inline (``_data_value``)."""
        return load_frozen_deep(body)

    # --- writing ------------------------------------------------------------------------------

    def _item_row(self, item: Item) -> tuple[dict[str, Any], Documents]:
        """The row params of ``item`` with its documents apart, and the documents this store
        does not hold yet (sorted by digest)."""
        lean, documents = split_documents(item.data)
        new = {d: b for d, b in documents if d not in self.documents}
        return self._item_params(item, data=lean), sorted(new.items())

    def _insert_documents(self, cur: Any, documents: Documents) -> None:
        if documents:
            cur.executemany(
                self.q["insert_document"], [{"digest": d, "body": b} for d, b in documents]
            )

    def _written(self, params: Mapping[str, Any], decision: Decision) -> None:
        """After the commit that wrote ``decision`` (with ``params``): its new documents are
        stored, and its rows read back as its records (``_remember_written``)."""
        self._remember(documents_of(params))
        self._remember_written(params, decision.after, decision.event)

    def _remember(self, documents: Iterable[tuple[str, str]]) -> None:
        """After the commit that wrote them: these documents are stored."""
        for digest, body in documents:
            self.documents.put(digest, body)

    # --- reading ------------------------------------------------------------------------------

    def _items(self, rows: Sequence[Row], cur: Any) -> list[Item]:
        """The items of ``rows``, their documents put back (``cur`` fetches the bodies not in
        the cache, all in one query; ``None``: a read of their own)."""
        memo = self._data_memo
        known = [memo.get(row["data"]) if type(row["data"]) is str else None for row in rows]
        datas = [
            self._data_value(row["data"]) if data is None else data
            for row, data in zip(rows, known, strict=True)
        ]
        wanted = {
            value[DOC]
            for data in datas
            if isinstance(data, Mapping)
            for value in data.values()
            if is_reference(value)
        }
        if wanted:
            bodies = self._bodies(wanted, cur)
            datas = [self._resolve(data, bodies) for data in datas]
        for row, data, hit in zip(rows, datas, known, strict=True):
            if hit is None and isinstance(row["data"], str) and not has_reference(data):
                self._remember_data(row["data"], data)  # whole: every document was sound
        return [self._item(row, data=data) for row, data in zip(rows, datas, strict=True)]

    def _one(self, row: Row | None, cur: Any) -> Item | None:
        return None if row is None else self._items([row], cur)[0]

    def _resolve(self, data: Any, bodies: Mapping[str, str]) -> Any:
        if not has_reference(data):
            return data
        return FrozenDict(
            {
                key: self._document_value(bodies[value[DOC]])
                if is_reference(value) and value[DOC] in bodies
                else value  # missing or altered: left as it is, so the seal fails
                for key, value in data.items()
            }
        )

    def _bodies(self, digests: set[str], cur: Any) -> dict[str, str]:
        """The sound body of each digest that has one: from the cache, else read and checked."""
        found: dict[str, str] = {}
        missing = []
        for digest in digests:
            body = self.documents.get(digest)
            if body is None:
                missing.append(digest)
            else:
                found[digest] = body
        if missing and cur is None:  # a caller that read its rows already: one more read
            with self._read() as reading:
                return {**found, **self._bodies(set(missing), reading)}
        if missing:
            cur.execute(self.q["get_documents"], {"digests": self._text_list(sorted(missing))})
            for row in cur.fetchall():
                digest, body = row["digest"], row["body"]
                if isinstance(body, str) and body_digest(body) == digest:
                    found[digest] = body
                    self.documents.put(digest, body)
        return found

    def _text_list(self, values: Sequence[str]) -> Any:
        """A list of text as the dialect binds one (a JSON array on SQLite)."""
        return self._automations_param(values)

    # --- checking -----------------------------------------------------------------------------

    def document_findings(self) -> list[Finding]:
        """Every reference whose document is missing or no longer hashes to its digest, and
        every stored body that no longer does (read from the database, not the cache)."""
        with self._read() as cur:
            cur.execute(self.q["list_documents"], {})
            sound = {row["digest"]: body_digest(row["body"]) == row["digest"] for row in cur}
            cur.execute(self.q["referencing_items"], {})
            rows = cur.fetchall()
        found: list[Finding] = []
        referenced: set[str] = set()
        for row in rows:
            data = self._from_json(row["data"])
            for key, value in data.items() if isinstance(data, Mapping) else ():
                if not is_reference(value):
                    continue
                digest = value[DOC]
                referenced.add(digest)
                if digest not in sound:
                    why = f"its document {digest[:12]} is not in the store"
                    found.append(Finding("item", row["id"], f"data.{key}", DOCUMENT_MISSING, why))
                elif not sound[digest]:
                    why = f"its document {digest[:12]} no longer hashes to its digest"
                    found.append(Finding("item", row["id"], f"data.{key}", DOCUMENT_ALTERED, why))
        for digest, ok in sorted(sound.items()):
            if not ok and digest not in referenced:
                why = "the stored body no longer hashes to its digest"
                found.append(Finding("document", digest, "body", DOCUMENT_ALTERED, why))
        return found

    def _store_lookalikes(self, cur: Any) -> None:
        """Migration 7: before it no row held a reference, so a top-level value that reads as
        one (in an item's input, say) is stored as a document, to read back as itself."""
        cur.execute(self.q["referencing_items"], {})
        for row in cur.fetchall():
            data = self._from_json(row["data"])
            if not isinstance(data, Mapping) or not any(is_reference(v) for v in data.values()):
                continue
            lean = dict(data)
            documents: Documents = []
            for key, value in data.items():
                if is_reference(value):
                    body = storage_json(value)
                    lean[key] = {DOC: body_digest(body)}
                    documents.append((body_digest(body), body))
            self._insert_documents(cur, documents)
            cur.execute(self.q["set_item_data"], {"id": row["id"], "data": self._json(lean)})
