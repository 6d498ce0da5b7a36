"""Stores: where items, events and actors live. :func:`open_store` picks one from a URL."""

from __future__ import annotations

import importlib
import os
import re
from typing import TYPE_CHECKING, Any

from .errors import (
    NoDatabase,
    SchemaMismatch,
    StoreError,
    Unreachable,
    UnsupportedURL,
    connection_errors,
)

if TYPE_CHECKING:  # imported on first use (``__getattr__``): the CLI's parser needs none of them
    from .insights import SORTS as PAGE_SORTS
    from .insights import Insights, PageKey, StateCount, StopQuery, StopRow
    from .outbox import STATUSES as NOTIFICATION_STATUSES
    from .outbox import Outbox
    from .protocol import Store
    from .sqlite import sqlite_path

# name -> (module, name there) of what ``__getattr__`` imports when it is first used
_LAZY = {
    "PAGE_SORTS": ("insights", "SORTS"),
    "Insights": ("insights", "Insights"),
    "PageKey": ("insights", "PageKey"),
    "StateCount": ("insights", "StateCount"),
    "StopQuery": ("insights", "StopQuery"),
    "StopRow": ("insights", "StopRow"),
    "NOTIFICATION_STATUSES": ("outbox", "STATUSES"),
    "Outbox": ("outbox", "Outbox"),
    "Store": ("protocol", "Store"),
    "sqlite_path": ("sqlite", "sqlite_path"),
}


def __getattr__(name: str) -> Any:
    """The store's heavier names, imported on first use (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(f".{module}", __name__), attribute)
    globals()[name] = value
    return value


DEFAULT_URL = "sqlite:///stopline.db"
ENV_URL = "STOPLINE_DATABASE_URL"


def database_url(explicit: str | None = None) -> str:
    """``--db``, else ``STOPLINE_DATABASE_URL``, else ``sqlite:///stopline.db``."""
    return explicit or os.environ.get(ENV_URL) or DEFAULT_URL


def redacted(url: str) -> str:
    """``url`` without its password, fit for a message."""
    return re.sub(r"^([a-z]+://[^:/@]*):[^@/]*@", r"\1:***@", url)


def _no_database(url: str, detail: str) -> NoDatabase:
    return NoDatabase(
        f"no stopline database at {redacted(url)} ({detail}); create one with"
        f" `stopline migrate --db {redacted(url)}`"
    )


def open_store(
    url: str | None = None,
    *,
    migrate: bool = True,
    check: bool = True,
    create: bool = True,
    connect_timeout: float | None = None,
) -> Store:
    """Open the store a URL names; apply pending migrations unless ``migrate=False``.

    ``create=False``: a URL that names no stopline database yet (a missing SQLite file, a
    database without the stopline schema) raises :class:`NoDatabase` and nothing is created,
    not even a folder. ``connect_timeout``: try one connection first and raise
    :class:`Unreachable` with one line when it fails within that many seconds (PostgreSQL)."""
    resolved = database_url(url)
    store: Store
    if resolved.startswith("sqlite:"):
        from pathlib import Path

        from .sqlite import SQLiteStore, sqlite_path

        path, _ = sqlite_path(resolved)
        if not create and not Path(path).is_file():
            raise _no_database(resolved, f"{path} does not exist")
        store = SQLiteStore(resolved)
    elif resolved.startswith(("postgresql:", "postgres:")):
        try:
            from .postgres import PostgresStore, probe
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise UnsupportedURL(
                "PostgreSQL needs the postgres extra: pip install 'stopline[postgres]'"
            ) from exc
        if connect_timeout is not None:
            problem = probe(resolved, connect_timeout)
            if problem:
                raise Unreachable(f"cannot connect to {redacted(resolved)}: {problem}")
        store = PostgresStore(resolved)
    else:
        raise UnsupportedURL(
            f"unsupported database URL {redacted(resolved)!r}: use sqlite:/// or postgresql://"
        )
    try:
        if not create and store.schema_version() == 0:
            raise _no_database(resolved, "it holds no stopline schema")
        if migrate:
            store.migrate()
        if check:
            store.check_schema()
    except BaseException as exc:
        import sqlite3

        store.close()
        if type(exc) is sqlite3.DatabaseError:  # e.g. "file is not a database"
            raise StoreError(f"{redacted(resolved)} is not a SQLite database: {exc}") from exc
        raise
    return store


__all__ = [
    "DEFAULT_URL",
    "ENV_URL",
    "NOTIFICATION_STATUSES",
    "PAGE_SORTS",
    "Insights",
    "NoDatabase",
    "Outbox",
    "PageKey",
    "SchemaMismatch",
    "StateCount",
    "StopQuery",
    "StopRow",
    "Store",
    "StoreError",
    "Unreachable",
    "UnsupportedURL",
    "connection_errors",
    "database_url",
    "open_store",
    "redacted",
    "sqlite_path",
]
