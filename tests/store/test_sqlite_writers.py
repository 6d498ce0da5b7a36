"""Whose turn it is to write a SQLite file (``stopline.store.sqlite_turns``): the threads of one
process take turns through a lock, processes through ``flock`` on ``<database>-writer``. Every
write of many threads lands; a writer waits for another process and goes on when it is done,
or gives up after the busy timeout as SQLite would, without keeping the turn it was too late
for; without a turn file, SQLite's own lock orders the writers."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers import T0, decide_at
from stopline.core.commands import Discover
from stopline.store import open_store
from stopline.store.sqlite import SQLiteStore


def test_threads_of_one_process_each_write(tmp_path: Path) -> None:
    """Eight threads, each with its own store on the same file, 25 discoveries each."""
    url = f"sqlite:///{tmp_path / 'w.db'}"
    open_store(url).close()
    failures: list[BaseException] = []

    def write(n: int) -> None:
        store = open_store(url, migrate=False)
        try:
            for k in range(25):
                decision = decide_at(None, Discover(f"t{n}-{k}", "auto", f"{n}-{k}", {}), T0)
                assert store.insert(decision)
        except BaseException as error:
            failures.append(error)
        finally:
            store.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    store = open_store(url, migrate=False)
    try:
        assert len(store.list_items(limit=1000)) == 200
    finally:
        store.close()


HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("holding", flush=True)
sys.stdin.readline()  # until the test says so (or closes the pipe)
"""

TAKE = """
import fcntl, os, signal, sys
signal.alarm(30)  # a lock nobody lets go of ends this process, and the test fails
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
"""


def holder(turn_file: Path) -> subprocess.Popen[str]:
    """Another process holding the writers' turn of a database until told to stop."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(turn_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "holding\n"
    return process


def let_go(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(30) == 0


def test_a_writer_waits_for_another_process_and_gives_up_as_sqlite_would(
    tmp_path: Path,
) -> None:
    """Another process holds the turn: a write waits for it, and after the busy timeout fails
    as "database is locked", writing nothing. The lock this process's waiter gets afterwards
    is let go at once: a third process takes it, and this store writes again."""
    path = tmp_path / "t.db"
    store = SQLiteStore(f"sqlite:///{path}", busy_timeout_ms=300)
    store.migrate()
    other = holder(Path(f"{path}-writer"))
    try:
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            store.insert(decide_at(None, Discover("a", "auto", "a", {}), T0))
    finally:
        let_go(other)
    third = subprocess.run([sys.executable, "-c", TAKE, f"{path}-writer"], timeout=60)
    assert third.returncode == 0
    assert store.get("a") is None
    assert store.insert(decide_at(None, Discover("b", "auto", "b", {}), T0))
    store.close()


def test_a_writer_goes_on_when_the_other_process_is_done(tmp_path: Path) -> None:
    """Another process holds the turn while this store writes from a thread: the write
    waits, and goes through once the other process lets go."""
    path = tmp_path / "t.db"
    store = SQLiteStore(f"sqlite:///{path}")
    store.migrate()
    other = holder(Path(f"{path}-writer"))
    done: list[bool] = []
    thread = threading.Thread(
        target=lambda: done.append(
            store.insert(decide_at(None, Discover("a", "auto", "a", {}), T0))
        )
    )
    try:
        thread.start()
        assert store.get("a") is None  # (whether or not the thread has reached its write yet)
    finally:
        let_go(other)
    thread.join(60)
    assert done == [True] and store.get("a") is not None
    store.close()


def test_no_turn_file_leaves_it_to_sqlite(tmp_path: Path) -> None:
    """Where the turn file cannot be made (here a folder has its name), writes still go
    through, ordered by SQLite's own lock alone."""
    path = tmp_path / "t.db"
    Path(f"{path}-writer").mkdir()
    store = open_store(f"sqlite:///{path}")
    try:
        assert store.insert(decide_at(None, Discover("a", "auto", "a", {}), T0))
        assert store.get("a") is not None
    finally:
        store.close()
