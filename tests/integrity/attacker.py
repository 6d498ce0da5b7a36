"""An attacker with write access to the database, and nothing else: no key, no stopline process.

:class:`Attacker` edits a stopline database by SQL alone, on SQLite and PostgreSQL alike. It
switches off the append-only triggers for the length of its own transaction (as anyone who can
write the tables can) and puts them back, so what it leaves is what a careful intruder leaves.
It reads rows with the store's own decoders and writes them with the store's own encoders (the
code is public: an attacker knows the formats), but every write is a plain ``UPDATE``,
``INSERT`` or ``DELETE``: no compare-and-set, no ledger entry, no registry event, unless an edit
forges those too on purpose.

The helpers that recompute hashes (:meth:`rehash_chain`, :meth:`write_decision`) are what a
"consistent rewrite" costs: anyone can recompute a hash, so only the ledger and the registry
chain (store-wide) limit what such a rewrite hides, and a rewrite that appends to those as well
is the known limit of unsigned mode (see docs/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from stopline.core.decision import Decision
from stopline.core.frozen import freeze, thaw
from stopline.core.records import Event, Item
from stopline.store import open_store, raw

# ``stopline.core.integrity`` and ``.ledger`` are imported where they are used: the regression
# tests of issue 10 import this module on the code from before them, too.

_PARAM = re.compile(r"(?<![:\w]):(\w+)")
_SQLITE_GUARDS = {  # name -> the statement that puts it back
    "events_no_update": "CREATE TRIGGER events_no_update BEFORE UPDATE ON events"
    " BEGIN SELECT RAISE(ABORT, 'events are append-only'); END",
    "events_no_delete": "CREATE TRIGGER events_no_delete BEFORE DELETE ON events"
    " BEGIN SELECT RAISE(ABORT, 'events are append-only'); END",
    "ledger_no_update": "CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger"
    " BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
    "ledger_no_delete": "CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger"
    " BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END",
    "documents_no_update": "CREATE TRIGGER documents_no_update BEFORE UPDATE ON documents"
    " BEGIN SELECT RAISE(ABORT, 'documents are append-only'); END",
    "documents_no_delete": "CREATE TRIGGER documents_no_delete BEFORE DELETE ON documents"
    " BEGIN SELECT RAISE(ABORT, 'documents are append-only'); END",
}


class Attacker:
    """Direct SQL on one database (``url``)."""

    def __init__(self, url: str) -> None:
        self.store: Any = open_store(url, migrate=False)  # a SQLStore: its codecs are used
        self.dialect: str = self.store.dialect
        self.guarded = [t for t in ("events", "ledger", "documents") if self._has_table(t)]

    def _has_table(self, name: str) -> bool:
        query = (
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"
            if self.dialect == "sqlite"
            else "SELECT 1 FROM information_schema.tables WHERE table_name = :name"
            " AND table_schema = current_schema()"
        )
        return bool(self.rows(query, {"name": name}))

    def close(self) -> None:
        self.store.close()

    # --- raw SQL ------------------------------------------------------------------------------

    def _sql(self, statement: str) -> str:
        return _PARAM.sub(r"%(\1)s", statement) if self.dialect == "postgres" else statement

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One write transaction with the append-only triggers off (and back on at its end)."""
        guards = {n: c for n, c in _SQLITE_GUARDS.items() if n.split("_")[0] in self.guarded}
        with raw.writing(self.store) as cur:
            if self.dialect == "sqlite":
                for name in guards:
                    cur.execute(f"DROP TRIGGER IF EXISTS {name}")
            for table in self.guarded if self.dialect == "postgres" else ():
                cur.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
            yield cur
            if self.dialect == "sqlite":
                for create in guards.values():
                    cur.execute(create)
            for table in self.guarded if self.dialect == "postgres" else ():
                cur.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")

    def sql(self, statement: str, params: Mapping[str, Any] | None = None) -> int:
        """Run one statement (``:name`` parameters); returns the number of rows it touched."""
        with self.transaction() as cur:
            cur.execute(self._sql(statement), dict(params or {}))
            return int(cur.rowcount)

    def rows(self, statement: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with raw.reading(self.store) as cur:
            cur.execute(self._sql(statement), dict(params or {}))
            return [dict(r) for r in cur.fetchall()]

    def json(self, value: Any) -> Any:
        """A value for a JSON column."""
        return raw.json_value(self.store, value)

    def time(self, value: datetime) -> Any:
        return raw.time_value(self.store, value)

    # --- items and events -------------------------------------------------------------------

    def item(self, ref: str) -> Item:
        automation, _, key = ref.partition("/")
        found = self.store.find(automation, key)
        assert found is not None, f"no item {ref}"
        return found  # type: ignore[no-any-return]

    def data(self, ref: str) -> dict[str, Any]:
        """The item's documents as plain, editable values."""
        return thaw(self.item(ref).data)  # type: ignore[no-any-return]

    def put_data(self, ref: str, data: Mapping[str, Any]) -> None:
        """``UPDATE items SET data = ...`` and nothing else."""
        item = self.item(ref)
        self.sql(
            "UPDATE items SET data = :data WHERE id = :id", {"data": self.json(data), "id": item.id}
        )

    def put_item(self, item: Item) -> None:
        """Every column of the item row, as given (the version is left to the caller)."""
        params = raw.item_row(self.store, item)
        columns = [k for k in params if k != "id"]
        assignments = ", ".join(f"{c} = :{c}" for c in columns)
        self.sql(f"UPDATE items SET {assignments} WHERE id = :id", params)

    def history(self, item_id: str) -> list[Event]:
        return list(self.store.history(item_id))

    def put_event(self, event: Event) -> None:
        """Overwrite the stored event of the same item and sequence number."""
        params = raw.event_row(self.store, event)
        columns = [k for k in params if k not in ("item_id", "seq")]
        assignments = ", ".join(f"{c} = :{c}" for c in columns)
        self.sql(f"UPDATE events SET {assignments} WHERE item_id = :item_id AND seq = :seq", params)

    def insert_event(self, event: Event) -> None:
        self.sql(self.store.q["insert_event"], raw.event_row(self.store, event))

    def rehash_chain(self, item: Item, events: list[Event], start: int) -> tuple[Item, list[Event]]:
        """Recompute the hash of every event from sequence ``start`` on (each linked to the one
        before), and the head event's seal of ``item``: the item's own chain is consistent again.
        Returns the item (head, sequence) and the events to store; nothing is written."""
        from stopline.core.integrity import item_seal

        out: list[Event] = []
        prev = ""
        final = replace(item, seq=len(events), head="")
        for event in events:
            if event.seq < start:
                out.append(event)
                prev = event.hash
                continue
            digests = dict(event.digests)
            if event.seq == len(events):
                digests["seal"] = item_seal(final)
            fields = {name: getattr(event, name) for name in event.body()}
            fields.update(prev_hash=prev, digests=freeze(digests))
            rebuilt = Event.sealed(**fields)
            out.append(rebuilt)
            prev = rebuilt.hash
        return replace(final, head=prev), out

    def write_decision(self, decision: Decision, *, ledger: bool) -> None:
        """Write an applied decision the core made, as the store would, but by hand: the item
        row and the event; with ``ledger`` also its ledger entry (a rewrite made consistent)."""
        from stopline.core.ledger import ledger_kind

        assert decision.after is not None and decision.event is not None
        self.put_item(decision.after)
        event = decision.event
        if event.from_state != event.to_state:  # the inbox key, as the store keeps it
            self.sql(
                "UPDATE items SET state_since = :at WHERE id = :id",
                {"at": raw.time_value(self.store, event.at), "id": event.item_id},
            )
        self.insert_event(decision.event)
        kind = ledger_kind(decision.event)
        if ledger and kind is not None:
            with self.transaction() as cur:
                raw.append_ledger_event(self.store, cur, kind, decision.event)

    # --- the registry ------------------------------------------------------------------------

    def append_registry(
        self, subject: str, change: str, detail: Mapping[str, Any], at: datetime
    ) -> None:
        """A registry event appended at the end of the chain with a correct hash."""
        with self.transaction() as cur:
            raw.append_registry_event(self.store, cur, subject, change, detail, at)


def forge_roles(url: str, actor: str, roles: list[str]) -> None:
    """Write ``actor``'s roles into the actors table by hand: a registry row no event of
    its chain made."""
    attacker = Attacker(url)
    try:
        attacker.sql(
            "UPDATE actors SET roles = :roles WHERE name = :name",
            {"roles": attacker.json(roles), "name": actor},
        )
    finally:
        attacker.close()
