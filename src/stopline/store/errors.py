"""Store errors: infrastructure and broken invariants (refusals are decisions, not errors)."""

from __future__ import annotations


class StoreError(Exception):
    """The store cannot do what was asked."""


class UnsupportedURL(StoreError):
    """The database URL names no store stopline has."""


class SchemaMismatch(StoreError):
    """The database schema is newer than this stopline knows, or not migrated."""


class NoDatabase(StoreError):
    """No stopline database at the URL (and the caller asked not to create one)."""


class Unreachable(StoreError):
    """The database server could not be reached, or refused the connection."""


def connection_errors() -> tuple[type[BaseException], ...]:
    """Driver errors that mean "the database is unreachable or busy right now": a worker
    waits and tries again (nothing was committed by the failed call, or its commit is
    re-checked by the version guard)."""
    import sqlite3

    found: list[type[BaseException]] = [sqlite3.OperationalError]
    try:
        import psycopg
        import psycopg_pool

        found += [psycopg.OperationalError, psycopg_pool.PoolTimeout]
    except ImportError:  # pragma: no cover - without the postgres extra
        pass
    return tuple(found)
