"""SQLite writers of one process take turns through a lock per database file (``sqlite.py``):
every write of many threads, each with a store of its own on one file, lands."""

from __future__ import annotations

import threading
from pathlib import Path

from helpers import T0, decide_at
from stopline.core.commands import Discover
from stopline.store import open_store


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
