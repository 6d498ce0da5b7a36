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
    import sys

    found: list[type[BaseException]] = [sqlite3.OperationalError]
    # A driver's error is raised only once the driver is imported: importing psycopg here
    # (about 0.15 s) would make every process on a SQLite store pay for it.
    for module, name in (("psycopg", "OperationalError"), ("psycopg_pool", "PoolTimeout")):
        error = getattr(sys.modules.get(module), name, None)
        if isinstance(error, type) and issubclass(error, BaseException):
            found.append(error)
    return tuple(found)


# PostgreSQL error classes of the driver's OperationalError that the same call meets again on
# every try: 54 "program limit exceeded" (a statement too large or too complex).
_PERMANENT_SQLSTATE_CLASSES = frozenset({"54"})
# SQLite reports a busy or briefly unreadable file this way; any other OperationalError (no
# such table, a malformed statement) would fail the same way on every try.
_SQLITE_TRANSIENT = ("locked", "busy", "disk i/o error")


def is_transient(exc: BaseException) -> bool:
    """``True`` when ``exc`` means the database is unreachable or busy right now (a retry may
    get through), ``False`` for anything a retry would meet again."""
    import sqlite3

    if not isinstance(exc, connection_errors()):
        return False
    if isinstance(exc, sqlite3.OperationalError):
        message = str(exc).lower()
        return any(word in message for word in _SQLITE_TRANSIENT)
    sqlstate = getattr(exc, "sqlstate", None)
    return not (isinstance(sqlstate, str) and sqlstate[:2] in _PERMANENT_SQLSTATE_CLASSES)
