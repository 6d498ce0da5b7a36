"""What a worker reads and holds, shared by both databases: the claim (one item, a batch, or a
batch with what the check of a fresh claim reads), leases, the row and its head read together
for a check, and when work is next due."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from ..core.canonical import format_time
from ..core.records import Event, Item
from .protocol import GuardReads
from .rows import EVENT_COLUMNS, Row
from .schema import SQLSchema


class SQLLeases(SQLSchema):
    # --- what a worker checks ----------------------------------------------------------

    def current(self, item_id: str) -> tuple[Item | None, Event | None, str | None]:
        """The item, its last event by sequence and that event's upgrade seal, read together."""
        with self._read() as cur:
            cur.execute(self.q["current_item"], {"id": item_id})
            row = cur.fetchone()
            if row is None:
                return None, None, None
            item = self._one(row, cur)
        return self._with_head(item, row)

    def current_many(self, ids: Sequence[str]) -> list[tuple[Item, Event | None, str | None]]:
        """:meth:`current` of each of ``ids`` that is stored, in one statement (one snapshot)."""
        if not ids:
            return []
        with self._read() as cur:
            cur.execute(self.q["current_items"], {"ids": self._text_list(list(ids))})
            rows = list(cur.fetchall())
            items = self._items(rows, cur)
        return [
            (item, *self._with_head(item, row)[1:]) for item, row in zip(items, rows, strict=True)
        ]

    def _with_head(
        self, item: Item | None, row: Row
    ) -> tuple[Item | None, Event | None, str | None]:
        if row["e_seq"] is None:
            return item, None, None
        head = self._event({name: row["e_" + name] for name in EVENT_COLUMNS})
        return item, head, row["legacy_seal"]

    def guard_reads(self, item_id: str, *, history: bool, registry: bool) -> GuardReads:
        by_id = {"id": item_id}
        statements = [(self.q["current_item"], by_id)]
        if history:
            statements += [(self.q["history"], by_id), (self.q["item_ledger"], by_id)]
        check = self._registry_check() if registry else None
        if check is not None:
            statements.append(check)
        found = self._read_all(statements)
        if not found[0]:
            return GuardReads(None, None, None)
        reads = self._guard_reads_of(found[0][0], found[1:3] if history else None)
        if registry:
            known = self._registry_if_unchanged(found[-1]) if check is not None else None
            reads = replace(reads, registry=self._read_registry() if known is None else known)
        return reads

    def guard_reads_many(self, item_ids: Sequence[str]) -> dict[str, GuardReads]:
        """Each item's row, history and ledger entries, and the registry's check once, in
        one read transaction (one snapshot)."""
        ids = list(dict.fromkeys(item_ids))
        statements = []
        for item_id in ids:
            by_id = {"id": item_id}
            statements += [
                (self.q[name], by_id) for name in ("current_item", "history", "item_ledger")
            ]
        check = self._registry_check()
        if check is not None:
            statements.append(check)
        found = self._read_all(statements) if ids else []
        rows = {item_id: found[3 * k : 3 * k + 3] for k, item_id in enumerate(ids)}
        rows = {item_id: each for item_id, each in rows.items() if each[0]}
        if not rows:
            return {}
        known = self._registry_if_unchanged(found[-1]) if check is not None else None
        registry = self._read_registry() if known is None else known
        return {
            item_id: replace(self._guard_reads_of(each[0][0], each[1:]), registry=registry.copy())
            for item_id, each in rows.items()
        }

    def _guard_reads_of(self, row: Row, history: list[list[Row]] | None) -> GuardReads:
        """The reads of an item from its row (``current_item``) and, with ``history``, the
        rows of ``history`` and ``item_ledger``."""
        item, head, legacy = self._with_head(self._one(row, None), row)
        reads = GuardReads(item, head, legacy)
        if history is not None:
            events = [self._event(r) for r in history[0]]
            ledger = [(self._ledger_entry(r), r["before_hash"]) for r in history[1]]
            reads = replace(reads, history=events, ledger=ledger)
        return reads

    # --- leases ----------------------------------------------------------------------------

    def claim(
        self,
        worker: str,
        now: datetime,
        lease_seconds: float,
        automations: Sequence[str] | None = None,
        *,
        leases: Mapping[str, float] | None = None,
    ) -> Item | None:
        params = self._claim_params(worker, now, lease_seconds, automations)
        params["leases"] = self._leases_param(now, leases)
        with self._claiming() as cur:
            cur.execute(self.q["claim"], params)
            return self._one(cur.fetchone(), cur)

    def claim_batch(
        self,
        worker: str,
        now: datetime,
        lease_seconds: float,
        automations: Sequence[str] | None = None,
        *,
        leases: Mapping[str, float] | None = None,
        limit: int = 1,
    ) -> list[Item]:
        """Up to ``limit`` claims in one statement, the most overdue first: each as
        :meth:`claim` would take it (its attempt counted, its own new fencing token)."""
        found = self.claim_checked(
            worker, now, lease_seconds, automations, leases=leases, limit=limit
        )
        return [item for item, _ in found]

    def claim_checked(
        self,
        worker: str,
        now: datetime,
        lease_seconds: float,
        automations: Sequence[str] | None = None,
        *,
        leases: Mapping[str, float] | None = None,
        limit: int = 1,
    ) -> list[tuple[Item, GuardReads]]:
        """:meth:`claim_batch`, each claimed item with what the check of a fresh claim reads
        (``Worker.guard``): the row as claimed, its last event and that event's upgrade seal,
        from the claim's own transaction, so that the check needs no read of its own."""
        params = self._claim_params(worker, now, lease_seconds, automations)
        params["leases"] = self._leases_param(now, leases)
        params["limit"] = max(1, int(limit))
        with self._claiming() as cur:
            rows = self._claimed_rows(cur, params)
            items = self._items(rows, cur)
        claimed = []
        for item, row in sorted(
            zip(items, rows, strict=True), key=lambda pair: (pair[0].next_eligible_at, pair[0].id)
        ):
            reads = GuardReads(*self._with_head(item, row))
            if (reads.head.hash if reads.head is not None else "") != item.head:
                # not the head the row names: a write that came between the snapshot the head
                # was read from and the row's lock (PostgreSQL), or a row or history edited by
                # hand. Read the two again, together: the check judges what is there now.
                reads = self.guard_reads(item.id, history=False, registry=False)
            claimed.append((item, reads))
        return claimed

    def _claimed_rows(self, cur: Any, params: Mapping[str, Any]) -> list[Row]:
        """The claimed rows with their heads (the ``current_item`` columns): the claim, then
        a read of those rows in the same transaction (a dialect may do both in one)."""
        cur.execute(self.q["claim_batch"], params)
        ids = [row["id"] for row in cur.fetchall()]
        if not ids:
            return []
        cur.execute(self.q["current_items"], {"ids": self._text_list(ids)})
        return list(cur.fetchall())

    def _leases_param(self, now: datetime, leases: Mapping[str, float] | None) -> str | None:
        if leases is None:
            return None
        # each automation's own lease, by the time it ends
        ends = {name: format_time(now + timedelta(seconds=s)) for name, s in leases.items()}
        return json.dumps(ends)

    def _claiming(self) -> AbstractContextManager[Any]:
        """Where the claim statement runs: a write transaction unless a dialect knows better."""
        return self._write()

    def _claim_params(
        self, worker: str, now: datetime, lease_seconds: float, automations: Sequence[str] | None
    ) -> dict[str, Any]:
        return {
            "worker": worker,
            "now": self._time(now),
            "expires_at": self._time(now + timedelta(seconds=lease_seconds)),
            "automations": self._automations_param(automations),
        }

    def renew(self, item: Item, now: datetime, lease_seconds: float) -> bool:
        params = {
            "id": item.id,
            "worker": item.lease_owner,
            "token": item.lease_token,
            "now": self._time(now),
            "expires_at": self._time(now + timedelta(seconds=lease_seconds)),
        }
        with self._write() as cur:
            cur.execute(self.q["renew"], params)
            return self._rowcount(cur) == 1

    def sweepable(self, now: datetime, limit: int = 100) -> list[Item]:
        with self._read() as cur:
            cur.execute(self.q["sweepable"], {"now": self._time(now), "limit": limit})
            return self._items(cur.fetchall(), cur)

    def next_due(self, automations: Sequence[str] | None = None) -> datetime | None:
        with self._read() as cur:
            cur.execute(self.q["next_due"], {"automations": self._automations_param(automations)})
            row = cur.fetchone()
        return None if row is None else self._from_time(row["at"])

    def wait_for_work(self, timeout: float) -> None:
        """Block until new work may be due or ``timeout`` seconds pass (polling by default)."""
        time.sleep(max(0.0, timeout))
