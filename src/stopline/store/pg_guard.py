"""The checks before acting on PostgreSQL: each as ONE statement (one snapshot in autocommit,
one round trip), for one item (``guard_snapshot``) or for several at once
(``guard_snapshots``: a lockstep worker's round), the registry's stamp read in it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from ..core.registry import Registry
from .actors import REGISTRY_PARAMS
from .base import SQLStore
from .protocol import GuardReads
from .rows import Row


class PgGuardReads(SQLStore):
    """``guard_reads`` and ``guard_reads_many`` of :class:`~.postgres.PostgresStore`."""

    _single: Callable[[], AbstractContextManager[Any]]  # the store's: one autocommit statement

    def guard_reads(self, item_id: str, *, history: bool, registry: bool) -> GuardReads:
        """Before acting (the history and the registry): one statement, so one snapshot in
        autocommit and one round trip (``guard_snapshot``); a pipelined transaction of six
        statements cost about three times the worker's CPU. The history and the ledger
        entries come as JSON arrays of rows, read as the rows themselves would be."""
        if not (history and registry):
            return super().guard_reads(item_id, history=history, registry=registry)
        with self._single() as cur:
            cur.execute(self.q["guard_snapshot"], {**REGISTRY_PARAMS, "id": item_id})
            row = cur.fetchone()
        if row is None:
            return GuardReads(None, None, None)
        return self._guard_row(row, self._registry_of(row))

    def guard_reads_many(self, item_ids: Sequence[str]) -> dict[str, GuardReads]:
        """The checks before acting of several items in one statement (``guard_snapshots``):
        one snapshot, one round trip, the registry's stamp read once."""
        ids = list(dict.fromkeys(item_ids))
        if not ids:
            return {}
        with self._single() as cur:
            cur.execute(self.q["guard_snapshots"], {**REGISTRY_PARAMS, "ids": ids})
            rows = cur.fetchall()
        if not rows:
            return {}
        registry = self._registry_of(rows[0])  # one snapshot: the same stamp on every row
        return {row["id"]: self._guard_row(row, registry.copy()) for row in rows}

    def _registry_of(self, row: Row) -> Registry:
        known = self._registry_if_unchanged([row])
        return self._read_registry() if known is None else known

    def _guard_row(self, row: Row, registry: Registry) -> GuardReads:
        item, head, legacy = self._with_head(self._one(row, None), row)
        events = []
        for event in json.loads(row["history_json"] or "[]"):
            event["at"] = self._from_time(event["at"])  # as the column reads (the rows' key)
            events.append(self._event(event))
        ledger = [
            (self._ledger_entry(entry), entry["before_hash"])
            for entry in json.loads(row["ledger_json"] or "[]")
        ]
        return GuardReads(item, head, legacy, registry=registry, history=events, ledger=ledger)
