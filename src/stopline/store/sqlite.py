"""The embedded default store: one SQLite file, WAL, ``BEGIN IMMEDIATE``, foreign keys on.

``synchronous=FULL`` by default: a fail-closed controller does not lose a committed decision
to a power cut. ``?synchronous=normal`` in the URL trades that for speed (WAL stays
consistent; the last commits may be lost on power loss, never on a process crash).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from .base import SQLStore
from .discovery_turns import FileTurn, take_file_turn
from .errors import StoreError, UnsupportedURL
from .sqlite_turns import turn_key, writing_turn

SYNC_MODES = {"full": "FULL", "normal": "NORMAL", "extra": "EXTRA"}


def sqlite_path(url: str) -> tuple[str, dict[str, str]]:
    """``sqlite:///rel.db`` is relative to the current folder, ``sqlite:////abs.db`` absolute."""
    parsed = urlparse(url)
    if parsed.scheme != "sqlite":
        raise UnsupportedURL(f"not a sqlite URL: {url!r}")
    path = parsed.path[1:] if parsed.path.startswith("/") else parsed.path
    if not path:
        raise UnsupportedURL("a sqlite URL names a file: sqlite:///path/to/stopline.db")
    options = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    return path, options


class SQLiteStore(SQLStore):
    dialect = "sqlite"
    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, url: str, *, busy_timeout_ms: int = 30000) -> None:
        super().__init__(url)
        path, options = sqlite_path(url)
        sync = options.get("synchronous", "full").lower()
        if sync not in SYNC_MODES:
            raise UnsupportedURL(f"synchronous must be one of {sorted(SYNC_MODES)}")
        self.synchronous = SYNC_MODES[sync]
        self.path = path
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._busy_timeout_ms = busy_timeout_ms
        self._turn = turn_key(path)
        self._reads = threading.Lock()  # this store's threads read one snapshot at a time

    @property
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                timeout=self._busy_timeout_ms / 1000,
                check_same_thread=False,
            )
            conn.row_factory = sqlite3.Row
            try:
                self._enable_wal(conn)
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
                conn.execute("PRAGMA foreign_keys=ON")
                conn.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
            except BaseException:
                conn.close()  # a half-configured connection is never kept or reused
                raise
            self._local.conn = conn
        return conn

    def _enable_wal(self, conn: sqlite3.Connection) -> None:
        """Switch a fresh file to WAL, waiting out other processes doing the same.

        Two connections converting one file at once can deadlock on their shared locks, and
        SQLite then answers "database is locked" at once instead of calling the busy handler,
        so the switch is retried here within the same busy timeout.
        """
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        pause = 0.005
        while True:
            try:
                row = conn.execute("PRAGMA journal_mode=WAL").fetchone()
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
        if str(row[0]).lower() != "wal":
            raise StoreError(f"{self.path}: SQLite refused WAL mode (journal_mode is {row[0]})")

    def discovery_turn(self, automation: str, wait: float) -> FileTurn | None:
        return take_file_turn(self.path, wait)  # one turn for every automation of the file

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    @contextmanager
    def _write(self) -> Iterator[Any]:
        conn = self._conn
        # this writer's turn first (``sqlite_turns.py``): woken the moment the last one ends
        with writing_turn(self._turn, self._busy_timeout_ms / 1000):
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn.cursor()
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[Any]:
        yield self._conn.cursor()

    def _read_all(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[Any]]:
        """The statements in one read transaction, so one snapshot: a change committed
        meanwhile is seen whole or not at all (each connection is its thread's own). The
        threads of one store take turns: each statement lets the interpreter lock go, and
        fifty threads reading at once spent more on handing it over than on reading."""
        if len(statements) == 1:  # one statement reads one snapshot of its own
            return super()._read_all(statements)
        conn = self._conn
        if conn.in_transaction:  # inside a write: already one snapshot
            return super()._read_all(statements)
        with self._reads:
            conn.execute("BEGIN")
            try:
                return super()._read_all(statements)
            finally:
                conn.execute("ROLLBACK")  # nothing was written

    def schema_version(self) -> int:
        conn = self._conn
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
        if not exists:
            return 0
        row = conn.execute("SELECT MAX(version) AS v FROM schema_migrations").fetchone()
        return int(row["v"] or 0)

    def _apply_migration(self, version: int, name: str, sql: str) -> bool:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")  # the write lock serialises concurrent migrators
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = ?", (version,)
            ).fetchone()
            if done:
                conn.execute("COMMIT")
                return False
            for statement in _statements(sql):
                conn.execute(statement)
            self._after_migration(version, conn.cursor())
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (version, name, datetime.now(UTC).isoformat()),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return True


def _statements(script: str) -> list[str]:
    """Split a migration into statements (``sqlite3.complete_statement`` knows triggers)."""
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        if not buf and line.strip().startswith("--"):
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        raise StoreError(f"incomplete statement in migration: {buf[:80]!r}")
    return out
