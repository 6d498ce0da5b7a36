"""The SQL store shared by both databases: items and their events, idempotency, refusals and
schedules. It builds on the claims and leases (:mod:`.leases`), the schema and its migrations
(:mod:`.schema`), the registry (:mod:`.actors`), the ledger (:mod:`.chains`) and the row
codecs (:mod:`.rows`); a dialect (:mod:`.sqlite`, :mod:`.postgres`) supplies the connections."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..core.decision import Decision
from ..core.ledger import (
    CREATE,
    ledger_kind,
    shard_of,
)
from ..core.records import Event, Item
from .documents import DocumentCache, Documents, documents_of
from .errors import StoreError
from .heartbeats import SQLHeartbeats
from .insights import SQLInsights
from .leases import SQLLeases
from .outbox import SQLOutbox
from .queries import load, migrations
from .remote_holds import SQLRemoteHolds
from .signouts import SQLSignOuts


class SQLStore(SQLLeases):
    """Everything but the driver: queries come from ``sql/<dialect>/queries.sql``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.q = load(self.dialect, self.pyformat)
        self._migrations = migrations(self.dialect)
        self.insights = SQLInsights(self)  # the ports beside the items-and-events protocol
        self.outbox = SQLOutbox(self)
        self.heartbeats = SQLHeartbeats(self)
        self.signouts = SQLSignOuts(self)
        self.remote_holds = SQLRemoteHolds(self)
        self.documents = DocumentCache()
        self._event_memo = {}
        self._data_memo = {}

    # --- items ----------------------------------------------------------------------------------

    def get(self, item_id: str) -> Item | None:
        with self._read() as cur:
            cur.execute(self.q["get_item"], {"id": item_id})
            return self._one(cur.fetchone(), cur)

    def find(self, automation: str, key: str) -> Item | None:
        with self._read() as cur:
            cur.execute(self.q["find_item"], {"automation": automation, "key": key})
            return self._one(cur.fetchone(), cur)

    def list_items(
        self,
        *,
        state: str | None = None,
        automation: str | None = None,
        state_class: str | None = None,
        key: str | None = None,
        newest: bool = False,
        limit: int = 1000,
    ) -> list[Item]:
        params = {"state": state, "automation": automation, "state_class": state_class, "key": key}
        with self._read() as cur:
            cur.execute(
                self.q["list_items_newest" if newest else "list_items"], {**params, "limit": limit}
            )
            return self._items(cur.fetchall(), cur)

    def count_by_state(self) -> list[dict[str, Any]]:
        with self._read() as cur:
            cur.execute(self.q["count_by_state"], {})
            return [
                {"state": r["state"], "count": int(r["n"]), "oldest": self._from_time(r["oldest"])}
                for r in cur.fetchall()
            ]

    def history(self, item_id: str) -> list[Event]:
        with self._read() as cur:
            cur.execute(self.q["history"], {"id": item_id})
            return [self._event(r) for r in cur.fetchall()]

    def head(self, item_id: str) -> tuple[Event | None, str | None]:
        """The item's last event by sequence, and the seal an upgrade recorded for it."""
        with self._read() as cur:
            cur.execute(self.q["head_event"], {"id": item_id})
            row = cur.fetchone()
        if row is None:
            return None, None
        return self._event(row), row["legacy_seal"]

    def iter_items_with_events(self) -> Iterator[tuple[Item, list[Event]]]:
        with self._read() as cur:
            cur.execute(self.q["all_items"], {})
            items = self._items(cur.fetchall(), cur)
        for item in items:
            yield item, self.history(item.id)

    def insert(self, decision: Decision) -> bool:
        assert decision.after is not None and decision.event is not None
        params, documents = self._item_row(decision.after)
        with self._write() as cur:
            cur.execute(self.q["lock_ledger"], {"shard": shard_of(decision.after.id)})
            cur.execute(self.q["insert_item"], params)
            if self._rowcount(cur) != 1:
                return False
            self._insert_documents(cur, documents)
            cur.execute(self.q["insert_event"], self._event_params(decision.event))
            self._ledger_event(cur, CREATE, decision.event)
        self._remember(documents)
        return True

    def apply(
        self,
        decision: Decision,
        *,
        idempotency: tuple[str, str, str] | None = None,
    ) -> bool:
        # Everything is encoded before the transaction starts: the write lock is held only
        # for the statements themselves.
        params = self._apply_params(decision)
        assert decision.event is not None
        kind = ledger_kind(decision.event)
        try:
            with self._write() as cur:
                if kind is not None:
                    cur.execute(self.q["lock_ledger"], {"shard": shard_of(params["id"])})
                cur.execute(self.q["update_item"], params)
                if self._rowcount(cur) != 1:
                    raise _Stale()
                self._insert_documents(cur, documents_of(params))
                cur.execute(self.q["insert_event"], params)
                if idempotency is not None:
                    self._insert_idempotency(cur, idempotency, params["id"], params["at"])
                if kind is not None:
                    self._ledger_event(cur, kind, decision.event)
        except _Stale:
            return False
        except self.integrity_errors:
            return False  # a concurrent write took the same idempotency key first
        self._written(params, decision)
        return True

    def apply_many(self, decisions: Sequence[Decision]) -> list[bool]:
        """Write several applied decisions (of different items) in ONE transaction, each
        guarded by its own compare-and-set: ``True`` for each written, ``False`` for each whose
        item moved on first (that item only; the others still commit). The ledger entries of
        the decisions that append to it are made in the same transaction, after the locks of
        their shards (taken in shard order). A batch a statement fails in is written again one
        decision at a time."""
        rows: list[_Grouped] = []
        for decision in decisions:
            assert decision.event is not None
            rows.append(_Grouped(self._apply_params(decision), decision.event))
        try:
            written = self._apply_grouped(rows)
        except self.integrity_errors:  # rolled back whole: one at a time, each on its own
            return [self.apply(decision) for decision in decisions]
        for row, decision, ok in zip(rows, decisions, written, strict=True):
            if ok:
                self._written(row.params, decision)
        return written

    def _apply_grouped(self, rows: Sequence[_Grouped]) -> list[bool]:
        """One transaction: the shards' locks, then per row the compare-and-set update and,
        when it took, the event and its ledger entry."""
        written = []
        with self._write() as cur:
            for shard in _shards(rows):
                cur.execute(self.q["lock_ledger"], {"shard": shard})
            for row in rows:
                cur.execute(self.q["update_item"], row.params)
                if self._rowcount(cur) != 1:
                    written.append(False)
                    continue
                self._insert_documents(cur, documents_of(row.params))
                cur.execute(self.q["insert_event"], row.params)
                if row.kind is not None:
                    self._ledger_event(cur, row.kind, row.event)
                written.append(True)
        return written

    def _apply_params(self, decision: Decision) -> dict[str, Any]:
        """The parameters of an applied decision: the new item (its documents apart, those not
        stored yet in ``documents``, and bound in ``doc_digests`` and ``doc_bodies``), its
        event, the version guard."""
        before, after, event = decision.before, decision.after, decision.event
        if before is None or after is None or event is None:
            raise StoreError("only an applied decision about an existing item can be written")
        row, documents = self._item_row(after)
        return {
            **row,
            **self._event_params(event),
            "expected_version": before.version,
            "documents": documents,
            **self._documents_params(documents),
        }

    def _documents_params(self, documents: Documents) -> dict[str, Any]:
        """``doc_digests`` and ``doc_bodies``: the documents to write as two lists of text, as
        the dialect binds them."""
        return {"doc_digests": [d for d, _ in documents], "doc_bodies": [b for _, b in documents]}

    def _insert_idempotency(
        self, cur: Any, idempotency: tuple[str, str, str], item_id: str | None, at: Any
    ) -> None:
        """``at`` is already encoded for the driver."""
        key, command_digest, decision_json = idempotency
        cur.execute(
            self.q["insert_idempotency"],
            {
                "key": key,
                "command_digest": command_digest,
                "item_id": item_id,
                "decision": decision_json,
                "at": at,
            },
        )

    # --- idempotency, audit, schedules ------------------------------------------------------

    def idempotency(self, key: str) -> tuple[str, str] | None:
        with self._read() as cur:
            cur.execute(self.q["get_idempotency"], {"key": key})
            row = cur.fetchone()
        return None if row is None else (row["command_digest"], row["decision"])

    def record_refusal(
        self, decision: Decision, command: str, actor: str | None, now: datetime
    ) -> None:
        """Count the refusal in its row: one row per (item, command, actor, reason codes).

        A refusal about no stored item (``unknown_item``, a reused idempotency key naming
        nothing) keeps no item id: the reference is whatever the client sent, and keeping it
        would give every guess a row of its own."""
        item_id = decision.item_id if decision.before is not None else None
        reasons = list(decision.reasons)
        key = [item_id, command, actor, reasons]
        group_key = hashlib.sha256(
            json.dumps(key, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        ).hexdigest()
        with self._write() as cur:
            cur.execute(
                self.q["record_refusal"],
                {
                    "group_key": group_key,
                    "at": self._time(now),
                    "item_id": item_id,
                    "command": command,
                    "actor": actor,
                    "reasons": self._json(reasons),
                },
            )

    def last_discovery(self, automation: str) -> datetime | None:
        with self._read() as cur:
            cur.execute(self.q["get_schedule"], {"automation": automation})
            row = cur.fetchone()
        return None if row is None else self._from_time(row["last_run_at"])

    def open_items(self, automation: str, most: int) -> int:
        with self._read() as cur:
            cur.execute(self.q["open_items"], {"automation": automation, "most": most})
            return int(cur.fetchone()["n"])

    def set_last_discovery(self, automation: str, at: datetime) -> None:
        with self._write() as cur:
            cur.execute(self.q["set_schedule"], {"automation": automation, "at": self._time(at)})


@dataclass(frozen=True)
class _Grouped:
    """One decision of a group commit: its parameters, its event and whether (and as what)
    that event goes into the ledger."""

    params: dict[str, Any]
    event: Event
    kind: str | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ledger_kind(self.event))

    @property
    def shard(self) -> int:
        return shard_of(str(self.params["id"]))


def _shards(rows: Sequence[_Grouped]) -> list[int]:
    """The ledger shards a group appends to, in the one order every writer locks them in."""
    return sorted({row.shard for row in rows if row.kind is not None})


class _Stale(Exception):
    """Raised inside a write transaction to roll it back when a compare-and-set loses."""
