"""Whose turn it is to create an automation's items.

An automation's ``max_open_items`` is counted and filled by one discovery pass at a time, across
every scheduler on the database: two schedulers that both counted the room before either
created an item would each fill it. A pass takes its automation's turn before it counts and
gives it back after its last insert; a scheduler that does not get the turn within its wait
creates nothing new that pass (the keys are held back, as when the room is full).

* PostgreSQL: a session advisory lock, ``('stopline.discovery', automation)``, on a pooled
  connection kept for the pass. The server lets go of it when that connection ends, so a
  scheduler that dies mid-pass holds nobody off.
* SQLite (one host): ``flock`` on a file beside the database (``<database>-discovery``, never
  removed, like ``-wal`` and ``-shm``), one turn for all of the file's automations. The kernel
  lets go of it when the process ends. Where the file cannot be made (a read-only folder, no
  ``flock``), the threads of one process still take turns and processes do not.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from typing import Any, Protocol

fcntl: Any
try:
    import fcntl
except ImportError:  # no flock(): the process-local turn alone
    fcntl = None

POLL = 0.02  # seconds between two tries of a SQLite turn


class DiscoveryTurn(Protocol):
    def end(self) -> None:
        """Give the turn back (safe to call once the connection or process is gone)."""
        ...


class FileTurn:
    """The turn of a SQLite file's discovery, held."""

    def __init__(self, local: threading.Lock, fd: int | None) -> None:
        self._local: threading.Lock | None = local
        self._fd = fd

    def end(self) -> None:
        local, self._local = self._local, None
        if local is None:
            return  # ended before: the local lock may be another thread's by now
        try:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            local.release()


_LOCAL: dict[str, threading.Lock] = {}
_LOCAL_LOCK = threading.Lock()


def _forget_local_turns() -> None:
    # a child made by fork() starts with one thread: a turn another thread of its parent held
    # would stay held in it
    global _LOCAL_LOCK
    _LOCAL.clear()
    _LOCAL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_local_turns)


def take_file_turn(database: str, wait: float) -> FileTurn | None:
    """The discovery turn of SQLite file ``database`` within ``wait`` seconds, or ``None``."""
    with _LOCAL_LOCK:
        local = _LOCAL.setdefault(os.path.abspath(database), threading.Lock())
    deadline = time.monotonic() + wait
    if not local.acquire(timeout=max(wait, 0.0)):
        return None
    fd = _open(database)
    if fd is None:
        return FileTurn(local, None)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return FileTurn(local, fd)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                local.release()
                return None
            time.sleep(POLL)


def _open(database: str) -> int | None:
    """A descriptor of its own of ``<database>-discovery`` (``flock`` locks an open file, so
    two stores of one process contend too), or ``None`` where it cannot be had."""
    if fcntl is None:
        return None
    try:
        mode = stat.S_IMODE(os.stat(database).st_mode) & 0o666
        return os.open(f"{database}-discovery", os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, mode)
    except OSError:
        return None


class PoolTurn:
    """The turn of an automation's discovery on PostgreSQL, held by a pooled connection."""

    def __init__(self, pool: Any, conn: Any, queries: dict[str, str], automation: str) -> None:
        self._pool, self._conn, self._q, self._automation = pool, conn, queries, automation

    def end(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            with conn.cursor() as cur:
                cur.execute(self._q["end_discovery_turn"], {"automation": self._automation})
                let_go = bool(cur.fetchone()["ended"])
        except Exception:  # the connection is gone, and with it the server's lock
            let_go = False
        if not let_go:
            conn.close()  # never back in the pool still holding the turn
        self._pool.putconn(conn)


def take_pool_turn(
    pool: Any, queries: dict[str, str], automation: str, wait: float
) -> PoolTurn | None:
    """The discovery turn of ``automation`` within ``wait`` seconds, or ``None``."""
    import psycopg

    conn = pool.getconn()
    try:
        # the bound on the wait is local to this transaction; the lock it takes is the
        # session's, and outlives it
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(queries["discovery_turn_wait"], {"ms": f"{max(1, round(wait * 1000))}ms"})
            cur.execute(queries["take_discovery_turn"], {"automation": automation})
    except psycopg.errors.LockNotAvailable:
        pool.putconn(conn)
        return None
    except BaseException:
        conn.close()
        pool.putconn(conn)
        raise
    return PoolTurn(pool, conn, queries, automation)
