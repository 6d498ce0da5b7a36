"""The schema part of the SQL store: migrations, the data step of the upgrade to the ledger and
seals (a database from before them is recorded as found), and the schema check."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..core.integrity import item_seal
from ..core.ledger import REGISTRY, REGISTRY_KIND, ledger_kind
from ..core.registry import POLICY, TOKEN_ISSUE, TOKEN_REVOKE
from ..core.search import search_text
from .actors import SQLActors
from .errors import SchemaMismatch

INTEGRITY_MIGRATION = 4  # 0004_integrity: the ledger and seals (see _record_legacy)
DOCUMENTS_MIGRATION = 7  # 0007_documents: documents stored apart (see _store_lookalikes)
SEARCH_MIGRATION = 9  # 0009_search_text: the search line kept in the row (_fill_search_text)


class SQLSchema(SQLActors):
    """Migrations and the schema check (``self._migrations`` is set by the store)."""

    _migrations: list[tuple[int, str, str]]

    # --- schema -----------------------------------------------------------------------------

    @property
    def known_version(self) -> int:
        return self._migrations[-1][0]

    def migrate(self) -> list[int]:
        applied = []
        for version, name, sql in self._migrations:
            if self._apply_migration(version, name, sql):
                applied.append(version)
        return applied

    def _after_migration(self, version: int, cur: Any) -> None:
        """Data steps of a migration, run in its transaction (under its lock)."""
        if version == INTEGRITY_MIGRATION:
            self._record_legacy(cur)
        if version == DOCUMENTS_MIGRATION:
            self._store_lookalikes(cur)
        if version == SEARCH_MIGRATION:
            self._fill_search_text(cur)

    def _fill_search_text(self, cur: Any) -> None:
        """Migration 9: the search line of every stopped item written before it, made from its
        data (documents put back) by the function that writes it from now on."""
        after = ""
        while True:
            cur.execute(self.q["stopped_after"], {"after": after, "limit": 500})
            rows = cur.fetchall()
            if not rows:
                return
            for item in self._items(rows, cur):
                params = {"id": item.id, "search_text": search_text(item)}
                cur.execute(self.q["set_search_text"], params)
            after = rows[-1]["id"]

    def _record_legacy(self, cur: Any) -> None:
        """Upgrading a database from before the ledger and seals: record what is there now, as
        found, so that from here on every change to it is seen. Ledger entries are appended for
        every item's creation and its people's events (grouped by item), a seal for each item
        whose last event carries none, and a registry event for each token and policy."""
        now = datetime.now(UTC)
        cur.execute(self.q["list_actor_events"], {})
        for position, row in enumerate(cur.fetchall(), start=1):
            at = self._from_time(row["at"]) or now
            self._append_ledger(cur, REGISTRY_KIND, REGISTRY, position, row["hash"], at)
        cur.execute(self.q["all_items"], {})
        items = [self._item(r) for r in cur.fetchall()]
        for item in sorted(items, key=lambda i: (i.created_at, i.id)):
            cur.execute(self.q["history"], {"id": item.id})
            events = [self._event(r) for r in cur.fetchall()]
            for event in events:
                kind = ledger_kind(event)
                if kind is not None:
                    self._ledger_event(cur, kind, event)
            if events and "seal" not in events[-1].digests:
                cur.execute(
                    self.q["insert_legacy_seal"],
                    {
                        "item_id": item.id,
                        "head": events[-1].hash,
                        "seal": item_seal(item),
                        "at": self._time(now),
                    },
                )
        cur.execute(self.q["list_tokens"], {})
        for row in cur.fetchall():
            self._append_registry(
                cur, row["actor"], TOKEN_ISSUE, {"token": row["hash"], "upgrade": True}, now
            )
            if row["revoked_at"] is not None:
                detail = {"tokens": [row["hash"]], "upgrade": True}
                self._append_registry(cur, row["actor"], TOKEN_REVOKE, detail, now)
        cur.execute(self.q["list_automations"], {})
        for row in cur.fetchall():
            detail = {
                "version": row["version"],
                "policy": self._from_json(row["policy"]),
                "upgrade": True,
            }
            self._append_registry(cur, f"automation:{row['name']}", POLICY, detail, now)

    def check_schema(self) -> None:
        found = self.schema_version()
        if found != self.known_version:
            raise SchemaMismatch(
                f"database schema is version {found}, this stopline knows {self.known_version}"
                + (
                    "; run `stopline migrate`"
                    if found < self.known_version
                    else "; upgrade stopline"
                )
            )
