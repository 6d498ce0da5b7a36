"""The remote holds port: which item holds each remote object a target answered.

A target keeps one object per idempotency key, and an item binds each of its artifacts to one
object; nothing in one item's record keeps a target from answering two items with one object.
Before an item binds an object that a target created or found, the delivery driver takes it
here (:meth:`RemoteHolds.take`), keyed by the target's name and the object's remote id: the
first item to take an object holds it for good, and the answer names the holder, so any other
item is stopped before it binds. A hold found is final (none is ever moved); an object not
held yet is taken by one statement and read back in the same transaction, so two items racing
for one object see the same holder. The SQL is in ``sql/common/remote_holds.sql``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple, Protocol

from ..core.canonical import format_time
from .errors import StoreError
from .queries import load

if TYPE_CHECKING:
    from .base import SQLStore


class Holder(NamedTuple):
    """The item, and its artifact, that holds a remote object."""

    item_id: str
    artifact_key: str


class RemoteHolds(Protocol):
    def take(
        self, target: str, remote_id: str, item_id: str, artifact_key: str, now: datetime
    ) -> Holder:
        """Take ``remote_id`` of ``target`` for the artifact ``artifact_key`` of ``item_id``
        unless an item holds it already; the holder, as it now stands."""
        ...


class SQLRemoteHolds:
    """:class:`RemoteHolds` on a SQL store's connections."""

    def __init__(self, store: SQLStore) -> None:
        self._store = store
        self._q = load(store.dialect, store.pyformat, "remote_holds")

    def take(
        self, target: str, remote_id: str, item_id: str, artifact_key: str, now: datetime
    ) -> Holder:
        key = {"target": target, "remote_id": remote_id}
        with self._store._read() as cur:  # a hold never moves: one read is the answer, and an
            cur.execute(self._q["remote_holder"], key)  # update or read-back of an object the
            row = cur.fetchone()  # item holds (the common case) takes no writer's turn
        if row is not None:
            return Holder(str(row["item_id"]), str(row["artifact_key"]))
        with self._store._write() as cur:
            cur.execute(
                self._q["take_remote"],
                {**key, "item_id": item_id, "artifact_key": artifact_key, "at": format_time(now)},
            )
            cur.execute(self._q["remote_holder"], key)
            row = cur.fetchone()
        if row is None:  # only a database changed under stopline keeps the row from being
            raise StoreError(f"the hold of {remote_id!r} was not recorded")
        return Holder(str(row["item_id"]), str(row["artifact_key"]))
