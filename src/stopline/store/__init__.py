"""Stores: where items, events and actors live. :func:`open_store` picks one from a URL."""

from __future__ import annotations

import os

from .errors import SchemaMismatch, StoreError, UnsupportedURL
from .insights import Insights
from .outbox import Outbox
from .protocol import Store

DEFAULT_URL = "sqlite:///stopline.db"
ENV_URL = "STOPLINE_DATABASE_URL"


def database_url(explicit: str | None = None) -> str:
    """``--db``, else ``STOPLINE_DATABASE_URL``, else ``sqlite:///stopline.db``."""
    return explicit or os.environ.get(ENV_URL) or DEFAULT_URL


def open_store(url: str | None = None, *, migrate: bool = True, check: bool = True) -> Store:
    """Open the store a URL names; apply pending migrations unless ``migrate=False``."""
    resolved = database_url(url)
    store: Store
    if resolved.startswith("sqlite:"):
        from .sqlite import SQLiteStore

        store = SQLiteStore(resolved)
    elif resolved.startswith(("postgresql:", "postgres:")):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise UnsupportedURL(
                "PostgreSQL needs the postgres extra: pip install 'stopline[postgres]'"
            ) from exc
        store = PostgresStore(resolved)
    else:
        raise UnsupportedURL(
            f"unsupported database URL {resolved!r}: use sqlite:/// or postgresql://"
        )
    try:
        if migrate:
            store.migrate()
        if check:
            store.check_schema()
    except BaseException:
        store.close()
        raise
    return store


__all__ = [
    "DEFAULT_URL",
    "ENV_URL",
    "Insights",
    "Outbox",
    "SchemaMismatch",
    "Store",
    "StoreError",
    "UnsupportedURL",
    "database_url",
    "open_store",
]
