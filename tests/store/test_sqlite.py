"""SQLite-only behaviour: many connections opening one fresh file at once."""

from __future__ import annotations

import threading
from pathlib import Path

from stopline.store import open_store


def test_connections_opening_a_fresh_file_at_once_all_succeed(tmp_path: Path) -> None:
    """Converting one new file to WAL from several connections can deadlock on SQLite's locks.

    SQLite then reports "database is locked" without waiting; before the open path retried,
    about one round in twenty-five failed, so a hundred rounds catch a regression.
    """
    for round_ in range(100):
        url = f"sqlite:///{tmp_path}/race-{round_}.db"
        start = threading.Barrier(6)
        errors: list[str] = []

        def opener(
            url: str = url, start: threading.Barrier = start, errors: list[str] = errors
        ) -> None:
            start.wait()
            try:
                store = open_store(url)
                store.close()
            except Exception as exc:  # collected and asserted below
                errors.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=opener) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, f"round {round_}: {errors}"
        store = open_store(url)
        assert store.schema_version() >= 1
        store.close()
