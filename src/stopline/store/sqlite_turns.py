"""Whose turn it is to write a SQLite file.

SQLite lets one connection write at a time. A writer that finds the file taken waits in
SQLite's busy handler, which sleeps (1, 2, 5, 10, 15, 20, 25 ms and more) between tries: a
write that ends a moment later leaves the next writer asleep for the rest of its nap. So a
writer of stopline first takes its turn here, where the wait ends the moment the last writer
is done, and only then begins its transaction:

* the threads of one process take turns through a lock per file;
* processes take turns through ``flock`` on a file beside the database (``<database>-writer``,
  never removed, like SQLite's ``-wal`` and ``-shm``). The kernel wakes the next waiter when
  the holder unlocks, and releases the lock of a process that dies. ``flock`` cannot time out,
  so one thread per process waits in it on behalf of the writer, which gives up after the busy
  timeout ("database is locked", as SQLite would say).

This only orders stopline's own writers: SQLite's locks still guard the file, and a writer
that cannot make or open the turn file (a read-only folder, a system without ``flock``) waits
in SQLite's busy handler as before.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

fcntl: Any
try:
    import fcntl
except ImportError:  # no flock() on this system: processes wait in SQLite's busy handler
    fcntl = None


class _FileTurn:
    """``flock`` on ``<database>-writer``, waited for on a thread of its own."""

    def __init__(self, database: str) -> None:
        self.path = f"{database}-writer"
        self.database = database
        self._fd: int | None = None
        self._opened = False
        self._cond = threading.Condition()
        self._wanted = False  # a writer waits for the lock
        self._held = False  # the lock is this process's, for that writer
        self._in_flock = False  # the waiter is inside flock()
        self._waiter: threading.Thread | None = None

    def _open(self) -> int | None:
        if not self._opened:
            self._opened = True
            if fcntl is None:
                return None
            try:
                mode = stat.S_IMODE(os.stat(self.database).st_mode) & 0o666
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, mode)
            except OSError:
                self._fd = None  # SQLite's busy handler alone, as before
        return self._fd

    def acquire(self, timeout: float) -> bool:
        """Take the file's turn within ``timeout`` seconds; ``True`` also when there is no
        turn file to take (then SQLite's own lock decides alone)."""
        fd = self._open()
        if fd is None:
            return True
        with self._cond:
            # Not while the waiter is inside flock(): the lock it may just have been given
            # belongs to the same open file, and a second flock() on it would succeed too.
            if not self._in_flock:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return True  # free: no hand-over between threads
                except BlockingIOError:
                    pass
            self._wanted = True
            if self._waiter is None or not self._waiter.is_alive():
                self._waiter = threading.Thread(
                    target=self._wait, args=(fd,), name="stopline-sqlite-turn", daemon=True
                )
                self._waiter.start()
            self._cond.notify_all()
            if self._cond.wait_for(lambda: self._held, timeout):
                self._held = False
                return True
            self._wanted = False  # the waiter lets go of the lock if it comes after this
            return False

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _wait(self, fd: int) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._wanted)
                self._in_flock = True
            fcntl.flock(fd, fcntl.LOCK_EX)  # the kernel wakes this when the holder unlocks
            with self._cond:
                self._in_flock = False
                if self._wanted:
                    self._wanted, self._held = False, True
                    self._cond.notify_all()
                else:
                    fcntl.flock(fd, fcntl.LOCK_UN)  # its writer gave up meanwhile


class _Turn:
    def __init__(self, database: str) -> None:
        self.threads = threading.Lock()
        self.processes = _FileTurn(database)


_TURNS: dict[str, _Turn] = {}
_TURNS_LOCK = threading.Lock()


def _forget_turns() -> None:
    # A child made by fork() starts with one thread: a lock another thread of its parent held
    # would stay held in it, and the parent's flock is shared through the inherited file.
    global _TURNS_LOCK
    _TURNS.clear()
    _TURNS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_turns)


def turn_key(database: str) -> str:
    """The name :func:`writing_turn` knows a database file by (its resolved path)."""
    return str(Path(database).resolve())


def _turn(key: str) -> _Turn:
    found = _TURNS.get(key)
    if found is not None:
        return found
    with _TURNS_LOCK:
        return _TURNS.setdefault(key, _Turn(key))


@contextmanager
def writing_turn(key: str, timeout: float) -> Iterator[None]:
    """Wait (at most ``timeout`` seconds) for this writer's turn on the database ``key``
    names (:func:`turn_key`); hold it for the ``with`` block. Raises
    ``sqlite3.OperationalError`` as SQLite's busy timeout would."""
    turn = _turn(key)
    if not turn.threads.acquire(timeout=timeout):
        raise sqlite3.OperationalError("database is locked")
    try:
        if not turn.processes.acquire(timeout):
            raise sqlite3.OperationalError("database is locked")
        try:
            yield
        finally:
            turn.processes.release()
    finally:
        turn.threads.release()
