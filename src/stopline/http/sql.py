"""Plain SQL on a store's own connections, for what the store protocol does not cover yet
(metrics aggregates, the automation list, the webhook outbox).

Queries use ``:name`` parameters; they are rewritten to ``%(name)s`` for PostgreSQL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..store import Store

_PARAM = re.compile(r"(?<![:\w]):(\w+)")


class SQL:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.dialect = store.dialect
        self._raw: Any = store  # a SQLStore: its transactions and value codecs

    def _sql(self, query: str) -> str:
        if self.dialect == "postgres":
            return _PARAM.sub(r"%(\1)s", query.replace("%", "%%"))
        return query

    def time(self, value: datetime) -> Any:
        """A time as the store writes it (text on SQLite, timestamptz on PostgreSQL)."""
        return self._raw._time(value)

    def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        with self._raw._read() as cur:
            cur.execute(self._sql(query), dict(params or {}))
            return [dict(r) for r in cur.fetchall()]

    def write(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[int]:
        """Run ``statements`` in one transaction; returns their row counts."""
        counts = []
        with self._raw._write() as cur:
            for query, params in statements:
                cur.execute(self._sql(query), dict(params))
                counts.append(int(cur.rowcount))
        return counts

    def json(self, value: Any) -> Any:
        """A JSON column value as Python (text on SQLite, decoded jsonb on PostgreSQL)."""
        return self._raw._from_json(value)


def automation_names(store: Store) -> list[str]:
    """Every registered automation (the store protocol has no list of them)."""
    return [str(r["name"]) for r in SQL(store).rows("SELECT name FROM automations ORDER BY name")]
