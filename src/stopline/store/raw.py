"""Direct access to a SQL store's tables, around its own methods: for tests that compare or
break whole databases, and for what a person with the database file could do.

Nothing in stopline outside ``store/`` imports this module (``tests/test_layers.py``): the
program reads and writes only through the store's ports. Every function takes a store opened
by :func:`stopline.store.open_store`.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from ..core.records import Event, Item
from .base import SQLStore
from .protocol import Store


def _sql(store: Store) -> SQLStore:
    if not isinstance(store, SQLStore):
        raise TypeError(f"{type(store).__name__} is not a SQL store")
    return store


def reading(store: Store) -> AbstractContextManager[Any]:
    """A cursor for reads (rows as mappings)."""
    return _sql(store)._read()


def writing(store: Store) -> AbstractContextManager[Any]:
    """A cursor inside one write transaction (committed on exit, rolled back on error)."""
    return _sql(store)._write()


def time_value(store: Store, at: datetime | None) -> Any:
    """A time as the store writes it into a column."""
    return _sql(store)._time(at)


def json_value(store: Store, value: Any) -> Any:
    """A JSON document as the store writes it into a column."""
    return _sql(store)._json(value)


def item_row(store: Store, item: Item) -> dict[str, Any]:
    """Every column of an item's row, its documents inline: as a row written before migration
    7 holds them (the store reads it exactly as the row it writes now, documents apart)."""
    return _sql(store)._item_params(item)


def event_row(store: Store, event: Event) -> dict[str, Any]:
    """Every column of an event's row, as the store writes it."""
    return _sql(store)._event_params(event)


def append_ledger_event(store: Store, cursor: Any, kind: str, event: Event) -> None:
    """The ledger entry of an event, linked to the ledger's head, inside ``cursor``'s write."""
    _sql(store)._ledger_event(cursor, kind, event)


def append_registry_event(
    store: Store,
    cursor: Any,
    subject: str,
    change: str,
    detail: Mapping[str, Any],
    at: datetime,
) -> None:
    """A registry event at the end of its chain with a correct hash, inside ``cursor``'s
    write."""
    _sql(store)._append_registry(cursor, subject, change, dict(detail), at)


def migrate_to(store: Store, version: int) -> list[int]:
    """Apply the migrations up to and including ``version`` only; returns those applied."""
    sql_store = _sql(store)
    return [
        number
        for number, name, sql in sql_store._migrations
        if number <= version and sql_store._apply_migration(number, name, sql)
    ]
