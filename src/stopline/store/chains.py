"""The store's two hash chains beside the event log: the ledger (an entry for every item's
creation and its people's events, in shards) and the registry of actors, tokens and policies;
and what ``stopline verify`` reads of them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..core.ledger import REGISTRY, REGISTRY_KIND, LedgerEntry, entry, shard_of
from ..core.records import Event
from ..core.registry import event_hash
from .documents import SQLDocuments


class SQLChains(SQLDocuments):
    """Appending to the ledger and the registry (inside a caller's write) and reading them."""

    def _append_ledger(
        self, cur: Any, kind: str, item_id: str, seq: int, event_hash: str, at: datetime
    ) -> None:
        """Append one ledger entry to the item's shard (the caller holds that shard's lock)."""
        shard = shard_of(item_id)
        cur.execute(self.q["last_ledger"], {"shard": shard})
        row = cur.fetchone()
        last = None if row is None else (row["n"], row["hash"])
        self._insert_entry(cur, shard, last, kind, item_id, seq, event_hash, at)

    def _insert_ledger_entry(
        self, cur: Any, kind: str, event: Event, shard: int, last: tuple[Any, Any] | None
    ) -> None:
        """Append the entry of ``event`` after ``last`` (the shard's last entry, read under
        the shard's lock, ``None`` for an empty shard)."""
        self._insert_entry(cur, shard, last, kind, event.item_id, event.seq, event.hash, event.at)

    def _insert_entry(
        self,
        cur: Any,
        shard: int,
        last: tuple[Any, Any] | None,
        kind: str,
        item_id: str,
        seq: int,
        event_hash: str,
        at: datetime,
    ) -> tuple[int, str]:
        """Append an entry after ``last``; the new last entry of the shard, ``(n, hash)``."""
        n = 1 if last is None else int(last[0]) + 1
        prev = "" if last is None else str(last[1])
        e = entry(shard, n, at, kind, item_id, seq, event_hash, prev)
        cur.execute(
            self.q["insert_ledger"],
            {
                "shard": e.shard,
                "n": e.n,
                "at": self._time(e.at),
                "kind": e.kind,
                "item_id": e.item_id,
                "seq": e.seq,
                "event_hash": e.event_hash,
                "prev_hash": e.prev_hash,
                "hash": e.hash,
            },
        )
        return e.n, e.hash

    def _ledger_event(self, cur: Any, kind: str, event: Event) -> None:
        self._append_ledger(cur, kind, event.item_id, event.seq, event.hash, event.at)

    def _append_registry(
        self, cur: Any, subject: str, change: str, detail: dict[str, Any], now: datetime
    ) -> None:
        """Append one registry event (the caller holds the registry lock)."""
        cur.execute(self.q["last_actor_event"], {})
        row = cur.fetchone()
        prev = "" if row is None else row["hash"]
        hashed = event_hash(now, subject, change, detail, prev)
        cur.execute(
            self.q["insert_actor_event"],
            {
                "at": self._time(now),
                "actor": subject,
                "change": change,
                "detail": self._json(detail),
                "prev_hash": prev,
                "hash": hashed,
            },
        )
        self._ledger_registry(cur, hashed, now)

    def _ledger_registry(self, cur: Any, event_hash_: str, at: datetime) -> None:
        """Record the registry event just appended (its position in the chain) in the ledger."""
        cur.execute(self.q["count_actor_events"], {})
        position = int(cur.fetchone()["n"])
        cur.execute(self.q["lock_ledger"], {"shard": shard_of(REGISTRY)})
        self._append_ledger(cur, REGISTRY_KIND, REGISTRY, position, event_hash_, at)

    def ledger(self) -> list[LedgerEntry]:
        with self._read() as cur:
            cur.execute(self.q["list_ledger"], {})
            return [self._ledger_entry(r) for r in cur.fetchall()]

    def item_ledger(self, item_id: str) -> list[tuple[LedgerEntry, str | None]]:
        """The item's ledger entries, each with the stored hash of the entry before it in its
        shard (``None`` for none)."""
        with self._read() as cur:
            cur.execute(self.q["item_ledger"], {"id": item_id})
            return [(self._ledger_entry(r), r["before_hash"]) for r in cur.fetchall()]

    def idempotency_records(self) -> list[dict[str, Any]]:
        with self._read() as cur:
            cur.execute(self.q["list_idempotency"], {})
            return [dict(r) for r in cur.fetchall()]

    def legacy_seals(self) -> dict[str, tuple[str, str]]:
        """item id -> (head event hash, seal) recorded by the upgrade to seals."""
        with self._read() as cur:
            cur.execute(self.q["list_legacy_seals"], {})
            return {r["item_id"]: (r["head"], r["seal"]) for r in cur.fetchall()}

    def item_classes(self) -> list[tuple[str, str, str]]:
        """(id, state, state class column) of every item, as stored."""
        with self._read() as cur:
            cur.execute(self.q["item_classes"], {})
            return [(r["id"], r["state"], r["state_class"]) for r in cur.fetchall()]

    def stop_keys(self) -> dict[str, tuple[datetime | None, int, str | None]]:
        """item id -> (state_since, severity_rank, search_text), the inbox keys of its row,
        as stored."""
        with self._read() as cur:
            cur.execute(self.q["stop_keys"], {})
            return {
                r["id"]: (
                    self._from_time(r["state_since"]),
                    int(r["severity_rank"]),
                    r["search_text"],
                )
                for r in cur.fetchall()
            }
